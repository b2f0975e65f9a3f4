//! The shim's configuration: one struct, one table of variable names
//! (DESIGN.md §1 and §4). Bad input is never replaced by a default: it is an
//! error naming the variable, the value and what is accepted.

use crate::dist::{Dist, DIST_ACCEPTED};
use crate::target::{parse_items, Pair, Rules, SEL_ACCEPTED};
use crate::units::{self, G_ACCEPTED, SIZE_ACCEPTED, TIME_ACCEPTED};
use std::fmt;

/// Whether the virtual-time machinery (piggyback, gates) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VtMode {
    /// On exactly when some knob is non-zero (the default).
    Auto,
    /// On even with every knob at zero (to measure its own cost).
    On,
    /// Off: a pure pass-through; contradicts any non-zero knob.
    Off,
}

/// How much the shim logs to standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    Info,
    Debug,
}

/// The items of the knobs' variables that select a subset of the pairs
/// (`LOGGP_L=20us@inter`, `crate::target`); the knob fields of [`Config`]
/// hold the value for every other pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Targets {
    pub l: Rules<u64>,
    pub o_s: Rules<u64>,
    pub o_r: Rules<u64>,
    pub g_s: Rules<u64>,
    pub g_r: Rules<u64>,
    pub g_big: Rules<f64>,
}

/// The knobs of one pair of ranks (source, destination), after targeting.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Knobs {
    pub l: u64,
    pub o_s: u64,
    pub o_r: u64,
    pub g_s: u64,
    pub g_r: u64,
    pub g_big: f64,
}

/// Resolved configuration. Times are nanoseconds; `g_big` is nanoseconds per
/// byte (0 = not set).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `L`, added to every message's latency (León's In⁺); with targeting,
    /// the value of the pairs no selection names (likewise the other knobs).
    pub l: u64,
    /// `o_s`, added CPU time per send initiation.
    pub o_s: u64,
    /// `o_r`, added CPU time per delivery.
    pub o_r: u64,
    /// `g_s`, floor on the time between consecutive departures.
    pub g_s: u64,
    /// `g_r`, floor on the time between consecutive deliveries.
    pub g_r: u64,
    /// `G`, floor on the time per byte on the sender's link.
    pub g_big: f64,
    /// Messages whose virtual departure lies in the future, at most.
    pub send_queue: u32,
    /// Virtual-time mode.
    pub vt: VtMode,
    /// Logging to standard error.
    pub log: LogLevel,
    /// Path of the run's JSON summary, written by rank 0 with every rank's
    /// counters; a path containing `%r` gives one file per rank instead
    /// (`%r` replaced by the rank).
    pub report: Option<String>,
    /// Receives whose capacity is at most this many bytes carry the
    /// piggyback by copying through a staging buffer (from `direct_min`
    /// up, a struct datatype as larger ones); sends up to it are staged
    /// in one message, larger ones split (`split`).
    pub inline_max: u64,
    /// `LOGGP_DIRECT_MIN`: receives of one contiguous block whose capacity
    /// is at least this many bytes (and at most `inline_max`) land in the
    /// application's buffer through a struct datatype `{header, buffer}`
    /// instead of a staging copy, and sends of at least this many bytes
    /// (and at most `inline_max`) go from theirs so; `None`: the MPI's own
    /// default (`direct_min_default`), `Some(u64::MAX)`: never (`off`).
    pub direct_min: Option<u64>,
    /// Sends above `inline_max` bytes of one contiguous block travel as two
    /// messages: the header on the application's envelope, the payload
    /// as it is on the shim's private communicator (`LOGGP_SPLIT=on`, the
    /// default); `off` sends them as one struct datatype.
    pub split: bool,
    /// The shim's clock reads the time-stamp counter where the kernel's
    /// clocksource is `tsc` (`LOGGP_CLOCK=auto`), or always
    /// CLOCK_MONOTONIC (`monotonic`).
    pub tsc_clock: bool,
    /// `LOGGP_TEST_CLOCK`: a testing aid that shifts and drifts the clock
    /// this rank's shim sees (not part of the fingerprint: it is meant to
    /// differ between hosts).
    pub test_clock: crate::clocks::TestClock,
    /// The knobs' items with a selection (`@inter`, `@pairs=0:1`, ...).
    pub targets: Targets,
    /// Variation (`crate::dist`): the distributions of L, o_s and o_r per
    /// message around the pair's value, and the seed of the draws.
    pub l_dist: Dist,
    pub o_s_dist: Dist,
    pub o_r_dist: Dist,
    pub seed: u64,
    /// `LOGGP_ARM`: knobs (`ARM_L` ... `ARM_G`, or-ed) whose machinery
    /// runs even at zero, as it runs at any value above zero: the
    /// `any_*` predicates hold for them. A sweep's baseline and points
    /// arm the swept knobs, so that the step from the baseline to a
    /// knob's first value is the knob's alone, not the cost of the shim's
    /// timed paths that every value above zero takes (the idle lanes
    /// serve only knobs at zero).
    pub armed: u8,
}

/// `LOGGP_ARM`'s knobs, with their names (those of `loggp sweep`).
pub const ARM_L: u8 = 1;
pub const ARM_O_S: u8 = 2;
pub const ARM_O_R: u8 = 4;
pub const ARM_G_S: u8 = 8;
pub const ARM_G_R: u8 = 16;
pub const ARM_G: u8 = 32;
/// Every knob (`LOGGP_ARM=all`).
pub const ARM_ALL: u8 = 63;
pub const ARM_NAMES: [(&str, u8); 6] = [
    ("L", ARM_L),
    ("o_s", ARM_O_S),
    ("o_r", ARM_O_R),
    ("g_s", ARM_G_S),
    ("g_r", ARM_G_R),
    ("G", ARM_G),
];
const ARM_ACCEPTED: &str =
    "a comma-separated list of the knobs L, o_s, o_r, g_s, g_r, G (as loggp sweep names them), all, or none";

/// `LOGGP_ARM`'s value (in variable `var`): the knobs' bits.
pub fn armed(var: &str, value: &str) -> Result<u8, ConfigError> {
    match value.trim() {
        "" | "none" => return Ok(0),
        "all" => return Ok(ARM_ALL),
        _ => {}
    }
    let mut bits = 0;
    for item in value.split(',') {
        let (_, b) = ARM_NAMES
            .iter()
            .find(|(n, _)| *n == item.trim())
            .ok_or_else(|| err(var, value, ARM_ACCEPTED))?;
        bits |= b;
    }
    Ok(bits)
}

/// The names of the knobs in `bits` (`LOGGP_ARM`), comma-separated.
pub fn arm_text(bits: u8) -> String {
    let names: Vec<&str> = ARM_NAMES
        .iter()
        .filter(|(_, b)| bits & b != 0)
        .map(|(n, _)| *n)
        .collect();
    names.join(",")
}

impl Default for Config {
    fn default() -> Self {
        Config {
            l: 0,
            o_s: 0,
            o_r: 0,
            g_s: 0,
            g_r: 0,
            g_big: 0.0,
            send_queue: 64,
            vt: VtMode::Auto,
            log: LogLevel::Off,
            report: None,
            inline_max: DEFAULT_INLINE_MAX,
            direct_min: None,
            split: true,
            tsc_clock: true,
            test_clock: crate::clocks::TestClock::default(),
            targets: Targets::default(),
            l_dist: Dist::Fixed,
            o_s_dist: Dist::Fixed,
            o_r_dist: Dist::Fixed,
            seed: 1,
            armed: 0,
        }
    }
}

/// Default staging threshold for the inline piggyback.
pub const DEFAULT_INLINE_MAX: u64 = 16 * 1024;

/// `LOGGP_DIRECT_MIN`'s default for an MPI of the Open MPI family (`true`)
/// or of MPICH's. A struct datatype costs a receive its type's creation
/// and, where the message goes by the MPI's eager protocol, a
/// non-contiguous unpack; it saves the copy out of the staging buffer.
/// Measured on a 2-core machine (session 30, 64-message windows and
/// ping-pong, np = 2, `README.md`): Open MPI 4.1 gains from 4 KiB up (its
/// shared-memory eager limit is 4 KiB; at 1 KiB it loses), MPICH 4.0
/// loses 2-4 us per message at 1-8 KiB and gains at 16 KiB (receiving;
/// sending too, session 54: its 16 KiB stream 1.15x the staged one).
pub const fn direct_min_default(open_mpi: bool) -> u64 {
    if open_mpi {
        4 * 1024
    } else {
        16 * 1024
    }
}

/// One clear line: variable, value, what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub var: String,
    pub value: String,
    pub accepted: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not accepted: expected {}",
            self.var, self.value, self.accepted
        )
    }
}

impl std::error::Error for ConfigError {}

/// Every variable the shim reads, with what it accepts and its default.
/// The README's table is written from this one.
pub const VARIABLES: &[(&str, &str, &str)] = &[
    ("LOGGP_L", "added latency per message (+ optional)", "0"),
    ("LOGGP_O_S", "added send overhead, CPU busy", "0"),
    ("LOGGP_O_R", "added receive overhead, CPU busy", "0"),
    ("LOGGP_G_S", "floor on the gap between departures", "0"),
    ("LOGGP_G_R", "floor on the gap between deliveries", "0"),
    ("LOGGP_G", "floor on time per byte (or a bandwidth)", "0"),
    (
        "LOGGP_L_DIST",
        "distribution of L per message: fixed, uniform:W, normal:S, exp, empirical:FILE",
        "fixed",
    ),
    (
        "LOGGP_O_S_DIST",
        "distribution of o_s per message (as LOGGP_L_DIST)",
        "fixed",
    ),
    (
        "LOGGP_O_R_DIST",
        "distribution of o_r per message (as LOGGP_L_DIST)",
        "fixed",
    ),
    (
        "LOGGP_SEED",
        "seed of the draws (each rank its own stream)",
        "1",
    ),
    ("LOGGP_SEND_QUEUE", "messages that may wait to depart", "64"),
    ("LOGGP_VT", "virtual time: auto, on, off", "auto"),
    (
        "LOGGP_ARM",
        "knobs whose machinery runs even at zero, as at any value above it (a sweep's baseline, to measure a knob alone): L, o_s, o_r, g_s, g_r, G, all, none",
        "none",
    ),
    ("LOGGP_LOG", "log to stderr: off, info, debug", "off"),
    ("LOGGP_REPORT", "path of a per-rank JSON summary", "none"),
    (
        "LOGGP_INLINE_MAX",
        "bytes below which the piggyback is staged",
        "16384",
    ),
    (
        "LOGGP_DIRECT_MIN",
        "receives of at least this many bytes (up to LOGGP_INLINE_MAX) land in the application's buffer without a copy; off: never",
        "4096 (Open MPI), 16384 (MPICH)",
    ),
    (
        "LOGGP_SPLIT",
        "larger sends: header and contiguous payload as two messages (on), or one struct message (off)",
        "on",
    ),
    (
        "LOGGP_CLOCK",
        "the shim's clock: auto (TSC where the kernel uses it), monotonic",
        "auto",
    ),
    (
        "LOGGP_TEST_CLOCK",
        "testing aid: shift and drift this rank's clock",
        "0,0",
    ),
];

/// Variables with the `LOGGP_` prefix that belong to other parts of the
/// tool (the `loggp` command, tests) and are ignored by the shim.
pub const FOREIGN_VARIABLES: &[&str] = &["LOGGP_MPI", "LOGGP_SHIM_DIR", "LOGGP_BIN_DIR"];

fn err(var: &str, value: &str, accepted: &str) -> ConfigError {
    ConfigError {
        var: var.to_string(),
        value: value.to_string(),
        accepted: accepted.to_string(),
    }
}

/// An added knob: `5us` and `+5us` both add 5 µs.
fn added(var: &str, value: &str) -> Result<u64, ConfigError> {
    let v = value.trim();
    let v = v.strip_prefix('+').unwrap_or(v);
    units::parse_time_ns(v).ok_or_else(|| {
        err(
            var,
            value,
            &format!("{TIME_ACCEPTED}, optionally with a leading +"),
        )
    })
}

/// A floor knob: the target value, which cannot be a delta.
fn floor(var: &str, value: &str) -> Result<u64, ConfigError> {
    if value.trim().starts_with('+') {
        return Err(err(
            var,
            value,
            &format!("{TIME_ACCEPTED}; this knob is a floor (a target value), not a +delta"),
        ));
    }
    units::parse_time_ns(value).ok_or_else(|| err(var, value, TIME_ACCEPTED))
}

/// A knob's variable: `value[@selection][,value@selection...]`, each value
/// read by `one` (which gives the error line of a bad value).
fn knob<T: Copy + PartialEq + Default>(
    var: &str,
    value: &str,
    one: impl Fn(&str, &str) -> Result<T, ConfigError>,
) -> Result<(T, Rules<T>), ConfigError> {
    if !value.contains(['@', ',']) {
        return Ok((one(var, value)?, Rules::default()));
    }
    match parse_items(value, |v| one(var, v).ok()) {
        Ok((d, rules)) => Ok((d.unwrap_or_default(), rules)),
        Err(why) => {
            // A bad value: the value's own line (what a value accepts).
            for item in value.split(',') {
                let v = item.split('@').next().unwrap_or_default();
                if let Err(e) = one(var, v) {
                    return Err(err(var, value, &e.accepted));
                }
            }
            Err(err(var, value, &format!("{SEL_ACCEPTED} ({why})")))
        }
    }
}

fn g_value(var: &str, v: &str) -> Result<f64, ConfigError> {
    if v.trim().starts_with('+') {
        return Err(err(
            var,
            v,
            &format!("{G_ACCEPTED}; G is a floor (a target value), not a +delta"),
        ));
    }
    units::parse_g_ns_per_byte(v).ok_or_else(|| err(var, v, G_ACCEPTED))
}

impl Config {
    /// Builds the configuration from `(name, value)` pairs, typically the
    /// process environment. Variables not starting with `LOGGP_` are
    /// ignored; an unknown `LOGGP_` variable is an error (a typo must not
    /// silently leave a knob at zero).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut c = Config::default();
        let mut pairs: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, _)| k.as_ref().starts_with("LOGGP_"))
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        pairs.sort();
        for (k, v) in &pairs {
            match k.as_str() {
                "LOGGP_L" => (c.l, c.targets.l) = knob(k, v, added)?,
                "LOGGP_O_S" => (c.o_s, c.targets.o_s) = knob(k, v, added)?,
                "LOGGP_O_R" => (c.o_r, c.targets.o_r) = knob(k, v, added)?,
                "LOGGP_G_S" => (c.g_s, c.targets.g_s) = knob(k, v, floor)?,
                "LOGGP_G_R" => (c.g_r, c.targets.g_r) = knob(k, v, floor)?,
                "LOGGP_G" => (c.g_big, c.targets.g_big) = knob(k, v, g_value)?,
                "LOGGP_L_DIST" | "LOGGP_O_S_DIST" | "LOGGP_O_R_DIST" => {
                    let d = Dist::parse(v, |p| {
                        std::fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"))
                    })
                    .map_err(|why| err(k, v, &format!("{DIST_ACCEPTED} ({why})")))?;
                    match k.as_str() {
                        "LOGGP_L_DIST" => c.l_dist = d,
                        "LOGGP_O_S_DIST" => c.o_s_dist = d,
                        _ => c.o_r_dist = d,
                    }
                }
                "LOGGP_SEED" => {
                    c.seed = v
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| err(k, v, "a whole number from 0 to 2^64-1"))?
                }
                "LOGGP_SEND_QUEUE" => {
                    c.send_queue = v
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| err(k, v, "a whole number of messages, at least 1"))?
                }
                "LOGGP_TEST_CLOCK" => {
                    c.test_clock = crate::clocks::TestClock::parse(v)
                        .ok_or_else(|| err(k, v, crate::clocks::TEST_CLOCK_ACCEPTED))?
                }
                "LOGGP_VT" => {
                    c.vt = match v.trim() {
                        "auto" => VtMode::Auto,
                        "on" | "1" => VtMode::On,
                        "off" | "0" => VtMode::Off,
                        _ => return Err(err(k, v, "auto, on or off")),
                    }
                }
                "LOGGP_ARM" => c.armed = armed(k, v)?,
                "LOGGP_LOG" => {
                    c.log = match v.trim() {
                        "" | "0" | "off" => LogLevel::Off,
                        "1" | "on" | "info" => LogLevel::Info,
                        "2" | "debug" => LogLevel::Debug,
                        _ => return Err(err(k, v, "off, info or debug (or 0, 1, 2)")),
                    }
                }
                "LOGGP_REPORT" => {
                    if v.trim().is_empty() {
                        return Err(err(k, v, "a file path"));
                    }
                    c.report = Some(v.clone())
                }
                "LOGGP_INLINE_MAX" => {
                    c.inline_max = units::parse_bytes(v)
                        .filter(|&n| n <= 1 << 30)
                        .ok_or_else(|| err(k, v, &format!("{SIZE_ACCEPTED}, at most 1GiB")))?
                }
                "LOGGP_DIRECT_MIN" => {
                    c.direct_min = Some(if v.trim() == "off" {
                        u64::MAX
                    } else {
                        units::parse_bytes(v)
                            .filter(|&n| n <= 1 << 30)
                            .ok_or_else(|| {
                                err(k, v, &format!("{SIZE_ACCEPTED}, at most 1GiB, or off"))
                            })?
                    })
                }
                "LOGGP_SPLIT" => {
                    c.split = match v.trim() {
                        "on" | "1" => true,
                        "off" | "0" => false,
                        _ => return Err(err(k, v, "on or off (or 1, 0)")),
                    }
                }
                "LOGGP_CLOCK" => {
                    c.tsc_clock = match v.trim() {
                        "auto" => true,
                        "monotonic" => false,
                        _ => return Err(err(k, v, "auto or monotonic")),
                    }
                }
                other if FOREIGN_VARIABLES.contains(&other) || other.starts_with("LOGGP_TEST_") => {
                }
                // Algorithm choices for the collectives; the shim's
                // collectives module validates names and values itself.
                other if other.starts_with("LOGGP_COLL_") => {}
                other => {
                    let names: Vec<&str> = VARIABLES.iter().map(|v| v.0).collect();
                    return Err(err(
                        other,
                        v,
                        &format!("no such variable; known: {}", names.join(", ")),
                    ));
                }
            }
        }
        if c.vt == VtMode::Off && c.perturbs() {
            return Err(err(
                "LOGGP_VT",
                "off",
                "auto or on while a knob is set or armed (off contradicts the knobs)",
            ));
        }
        Ok(c)
    }

    /// True when some knob asks for a perturbation (of some pair), or for
    /// its machinery (`armed`).
    pub fn perturbs(&self) -> bool {
        self.varied()
            || self.any_l()
            || self.any_o_s()
            || self.any_o_r()
            || self.any_g_s()
            || self.any_g_r()
            || self.any_g_big()
    }

    /// Some knob varies per message (`LOGGP_*_DIST` other than fixed).
    pub fn varied(&self) -> bool {
        !(self.l_dist.is_fixed() && self.o_s_dist.is_fixed() && self.o_r_dist.is_fixed())
    }

    /// The sender only stamps its departures (`SendSide::stamp`): no pair
    /// has an `o_s`, a `g_s` or a `G` floor, and no knob is drawn (a
    /// varied `L` is drawn by the sender).
    pub fn sender_stamps_only(&self) -> bool {
        !(self.any_o_s() || self.any_g_s() || self.any_g_big() || self.varied())
    }

    /// `L` is above zero for some pair, or armed (`LOGGP_ARM`): its
    /// machinery runs. Likewise the other knobs.
    pub fn any_l(&self) -> bool {
        self.l > 0 || self.targets.l.values().any(|v| v > 0) || self.armed & ARM_L != 0
    }
    pub fn any_o_s(&self) -> bool {
        self.o_s > 0 || self.targets.o_s.values().any(|v| v > 0) || self.armed & ARM_O_S != 0
    }
    pub fn any_o_r(&self) -> bool {
        self.o_r > 0 || self.targets.o_r.values().any(|v| v > 0) || self.armed & ARM_O_R != 0
    }
    pub fn any_g_s(&self) -> bool {
        self.g_s > 0 || self.targets.g_s.values().any(|v| v > 0) || self.armed & ARM_G_S != 0
    }
    pub fn any_g_r(&self) -> bool {
        self.g_r > 0 || self.targets.g_r.values().any(|v| v > 0) || self.armed & ARM_G_R != 0
    }
    pub fn any_g_big(&self) -> bool {
        self.g_big > 0.0 || self.targets.g_big.values().any(|v| v > 0.0) || self.armed & ARM_G != 0
    }

    /// The knobs whose machinery the job runs (set above zero for some
    /// pair, or armed), as `LOGGP_ARM`'s bits: what the start-up probes
    /// arm, so that they take the job's paths.
    pub fn running_knobs(&self) -> u8 {
        [
            (self.any_l(), ARM_L),
            (self.any_o_s(), ARM_O_S),
            (self.any_o_r(), ARM_O_R),
            (self.any_g_s(), ARM_G_S),
            (self.any_g_r(), ARM_G_R),
            (self.any_g_big(), ARM_G),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |a, (_, b)| a | b)
    }

    /// True when some knob has items with a selection: the knobs then
    /// depend on the pair ([`Config::knobs`]).
    pub fn targeted(&self) -> bool {
        let t = &self.targets;
        !(t.l.is_empty()
            && t.o_s.is_empty()
            && t.o_r.is_empty()
            && t.g_s.is_empty()
            && t.g_r.is_empty()
            && t.g_big.is_empty())
    }

    /// True when a knob the sender applies (`o_s`, `g_s`, `G`, and `L`,
    /// which the sender decides for each message) depends on the pair:
    /// the sender must then know its destination's rank.
    pub fn targeted_at_sender(&self) -> bool {
        let t = &self.targets;
        !(t.l.is_empty() && t.o_s.is_empty() && t.g_s.is_empty() && t.g_big.is_empty())
    }

    /// The knobs of one pair: for each knob its most specific item that
    /// selects the pair, else its plain value (`crate::target`).
    pub fn knobs(&self, p: Pair) -> Knobs {
        let t = &self.targets;
        Knobs {
            l: t.l.value(p, self.l),
            o_s: t.o_s.value(p, self.o_s),
            o_r: t.o_r.value(p, self.o_r),
            g_s: t.g_s.value(p, self.g_s),
            g_r: t.g_r.value(p, self.g_r),
            g_big: t.g_big.value(p, self.g_big),
        }
    }

    /// The knobs every pair gets when nothing is targeted.
    pub fn plain_knobs(&self) -> Knobs {
        Knobs {
            l: self.l,
            o_s: self.o_s,
            o_r: self.o_r,
            g_s: self.g_s,
            g_r: self.g_r,
            g_big: self.g_big,
        }
    }

    /// Once MPI_Init knows the job (`size` ranks, `host_of[r]` the host
    /// index of rank `r`): refuses a selection that names a rank the job
    /// does not have or selects none of its pairs, naming the variable.
    pub fn check_job(&self, size: u32, host_of: &[usize]) -> Result<(), ConfigError> {
        let t = &self.targets;
        let checks = [
            ("LOGGP_L", t.l.check_job(size, host_of)),
            ("LOGGP_O_S", t.o_s.check_job(size, host_of)),
            ("LOGGP_O_R", t.o_r.check_job(size, host_of)),
            ("LOGGP_G_S", t.g_s.check_job(size, host_of)),
            ("LOGGP_G_R", t.g_r.check_job(size, host_of)),
            ("LOGGP_G", t.g_big.check_job(size, host_of)),
        ];
        for (var, r) in checks {
            if let Err(why) = r {
                return Err(ConfigError {
                    var: var.to_string(),
                    value: self.knob_text(var),
                    accepted: format!("selections of this job's ranks and pairs: {why}"),
                });
            }
        }
        Ok(())
    }

    /// A knob's setting as its variable would spell it.
    pub fn knob_text(&self, var: &str) -> String {
        use units::{fmt_g, fmt_ns};
        fn items<T: Copy>(first: String, r: &Rules<T>, f: impl Fn(T) -> String) -> String {
            let mut s = first;
            for (sel, v) in &r.items {
                s.push_str(&format!(",{}@{sel}", f(*v)));
            }
            s
        }
        let t = &self.targets;
        let ns = |v: u64| fmt_ns(v as f64);
        let plus = |v: u64| format!("+{}", fmt_ns(v as f64));
        match var {
            "LOGGP_L" => items(plus(self.l), &t.l, plus),
            "LOGGP_O_S" => items(plus(self.o_s), &t.o_s, plus),
            "LOGGP_O_R" => items(plus(self.o_r), &t.o_r, plus),
            "LOGGP_G_S" => items(ns(self.g_s), &t.g_s, ns),
            "LOGGP_G_R" => items(ns(self.g_r), &t.g_r, ns),
            "LOGGP_G" => items(fmt_g(self.g_big), &t.g_big, fmt_g),
            _ => String::new(),
        }
    }

    /// True when the virtual-time machinery must run.
    pub fn vt_active(&self) -> bool {
        match self.vt {
            VtMode::On => true,
            VtMode::Off => false,
            VtMode::Auto => self.perturbs(),
        }
    }

    /// A fingerprint that every rank must share: ranks that disagree on the
    /// knobs would misread each other's messages.
    pub fn fingerprint(&self) -> u64 {
        // FNV-1a over the fields that change the wire format or timing.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |x: u64| {
            for b in x.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        };
        feed(self.l);
        feed(self.o_s);
        feed(self.o_r);
        feed(self.g_s);
        feed(self.g_r);
        feed(self.g_big.to_bits());
        feed(u64::from(self.send_queue));
        feed(u64::from(self.vt_active()));
        if self.varied() {
            self.l_dist.hash_into(&mut feed);
            self.o_s_dist.hash_into(&mut feed);
            self.o_r_dist.hash_into(&mut feed);
            feed(self.seed);
        }
        if self.armed != 0 {
            feed(u64::from(self.armed));
        }
        if self.targeted() {
            for var in [
                "LOGGP_L",
                "LOGGP_O_S",
                "LOGGP_O_R",
                "LOGGP_G_S",
                "LOGGP_G_R",
                "LOGGP_G",
            ] {
                for b in self.knob_text(var).bytes() {
                    feed(u64::from(b));
                }
            }
        }
        h
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L={} o_s={} o_r={} g_s={} g_r={} G={} send_queue={} vt={}",
            self.knob_text("LOGGP_L"),
            self.knob_text("LOGGP_O_S"),
            self.knob_text("LOGGP_O_R"),
            self.knob_text("LOGGP_G_S"),
            self.knob_text("LOGGP_G_R"),
            self.knob_text("LOGGP_G"),
            self.send_queue,
            if self.vt_active() { "on" } else { "off" }
        )?;
        if self.armed != 0 {
            write!(f, " armed={}", arm_text(self.armed))?;
        }
        if self.varied() {
            write!(
                f,
                " L_dist={} o_s_dist={} o_r_dist={} seed={}",
                self.l_dist.text(),
                self.o_s_dist.text(),
                self.o_r_dist.text(),
                self.seed
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(pairs.iter().copied())
    }

    #[test]
    fn defaults_are_pass_through() {
        let c = cfg(&[("PATH", "/bin")]).unwrap();
        assert_eq!(c, Config::default());
        assert!(!c.perturbs());
        assert!(!c.vt_active());
    }

    #[test]
    fn added_knobs_take_plus() {
        let c = cfg(&[
            ("LOGGP_L", "+5us"),
            ("LOGGP_O_S", "2us"),
            ("LOGGP_O_R", "+250ns"),
        ])
        .unwrap();
        assert_eq!((c.l, c.o_s, c.o_r), (5000, 2000, 250));
        assert!(c.vt_active());
    }

    #[test]
    fn split_is_on_or_off() {
        assert!(cfg(&[]).unwrap().split);
        assert!(!cfg(&[("LOGGP_SPLIT", "off")]).unwrap().split);
        assert!(cfg(&[("LOGGP_SPLIT", "1")]).unwrap().split);
        let e = cfg(&[("LOGGP_SPLIT", "yes")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_SPLIT");
        assert!(e.to_string().contains("on or off"), "{e}");
    }

    #[test]
    fn direct_min_is_a_size_or_off() {
        assert_eq!(cfg(&[]).unwrap().direct_min, None);
        assert_eq!(
            cfg(&[("LOGGP_DIRECT_MIN", "8KiB")]).unwrap().direct_min,
            Some(8192)
        );
        assert_eq!(
            cfg(&[("LOGGP_DIRECT_MIN", "off")]).unwrap().direct_min,
            Some(u64::MAX)
        );
        for bad in ["8K", "2GiB", "never"] {
            let e = cfg(&[("LOGGP_DIRECT_MIN", bad)]).unwrap_err();
            assert_eq!(e.var, "LOGGP_DIRECT_MIN");
            assert!(e.to_string().contains("or off"), "{bad}: {e}");
        }
    }

    #[test]
    fn inline_max_is_a_size() {
        assert_eq!(
            cfg(&[("LOGGP_INLINE_MAX", "4096")]).unwrap().inline_max,
            4096
        );
        assert_eq!(
            cfg(&[("LOGGP_INLINE_MAX", "64KiB")]).unwrap().inline_max,
            65536
        );
        for bad in ["8K", "2GiB", "-1"] {
            let e = cfg(&[("LOGGP_INLINE_MAX", bad)]).unwrap_err();
            assert!(e.to_string().contains("KiB"), "{bad}: {e}");
        }
    }

    #[test]
    fn floor_knobs_refuse_plus() {
        let e = cfg(&[("LOGGP_G_S", "+20us")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_G_S");
        assert!(e.to_string().contains("floor"), "{e}");
        assert_eq!(cfg(&[("LOGGP_G_R", "20us")]).unwrap().g_r, 20_000);
    }

    #[test]
    fn bandwidth_knob() {
        assert_eq!(cfg(&[("LOGGP_G", "100MB/s")]).unwrap().g_big, 10.0);
        assert!(cfg(&[("LOGGP_G", "fast")]).is_err());
    }

    #[test]
    fn errors_name_variable_value_and_accepted() {
        let e = cfg(&[("LOGGP_L", "-5us")]).unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with("LOGGP_L=\"-5us\" is not accepted: expected a time"),
            "{line}"
        );
        assert!(!line.contains('\n'));
        let e = cfg(&[("LOGGP_LL", "5us")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_LL");
        assert!(e.to_string().contains("LOGGP_L,"), "{e}");
        assert_eq!(
            cfg(&[("LOGGP_SEND_QUEUE", "0")]).unwrap_err().var,
            "LOGGP_SEND_QUEUE"
        );
        assert_eq!(cfg(&[("LOGGP_VT", "maybe")]).unwrap_err().var, "LOGGP_VT");
    }

    #[test]
    fn contradiction_is_refused() {
        let e = cfg(&[("LOGGP_VT", "off"), ("LOGGP_L", "1us")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_VT");
        assert!(cfg(&[("LOGGP_VT", "on")]).unwrap().vt_active());
    }

    /// `LOGGP_ARM` runs a knob's machinery at zero: its `any_*` holds,
    /// the others' do not, nothing is perturbed by value, virtual time
    /// turns on under `auto`, and `off` is refused with it.
    #[test]
    fn armed_knobs_run_their_machinery_at_zero() {
        let c = cfg(&[("LOGGP_ARM", "L,g_r")]).unwrap();
        assert_eq!(c.armed, ARM_L | ARM_G_R);
        assert!(c.any_l() && c.any_g_r());
        assert!(!(c.any_o_s() || c.any_o_r() || c.any_g_s() || c.any_g_big()));
        assert_eq!((c.l, c.g_r), (0, 0));
        assert!(c.vt_active());
        assert!(c.sender_stamps_only());
        assert!(c.to_string().ends_with(" armed=L,g_r"), "{c}");
        assert_ne!(
            c.fingerprint(),
            cfg(&[("LOGGP_VT", "on")]).unwrap().fingerprint()
        );
        let all = cfg(&[("LOGGP_ARM", "all")]).unwrap();
        assert_eq!(all.armed, ARM_NAMES.iter().fold(0, |a, &(_, b)| a | b));
        assert!(all.any_l() && all.any_o_s() && all.any_o_r());
        assert!(all.any_g_s() && all.any_g_r() && all.any_g_big());
        assert!(!all.sender_stamps_only());
        for (name, bit) in ARM_NAMES {
            assert_eq!(cfg(&[("LOGGP_ARM", name)]).unwrap().armed, bit, "{name}");
        }
        assert_eq!(cfg(&[("LOGGP_ARM", "none")]).unwrap(), Config::default());
        assert_eq!(
            cfg(&[("LOGGP_ARM", " L , G ")]).unwrap().armed,
            ARM_L | ARM_G
        );
        assert_eq!(cfg(&[("LOGGP_VT", "on")]).unwrap().running_knobs(), 0);
        assert_eq!(cfg(&[("LOGGP_L", "1ns")]).unwrap().running_knobs(), ARM_L);
        assert_eq!(
            cfg(&[("LOGGP_O_S", "5us@from=1")]).unwrap().running_knobs(),
            ARM_O_S
        );
        assert_eq!(
            cfg(&[("LOGGP_O_R", "1us"), ("LOGGP_ARM", "G")])
                .unwrap()
                .running_knobs(),
            ARM_O_R | ARM_G
        );
        assert_eq!(all.running_knobs(), ARM_ALL);
        for bad in ["l", "L,x", "L;o_s", "1us"] {
            let e = cfg(&[("LOGGP_ARM", bad)]).unwrap_err();
            assert_eq!((e.var.as_str(), e.value.as_str()), ("LOGGP_ARM", bad));
            assert!(e.accepted.contains("L, o_s, o_r, g_s, g_r, G"), "{e}");
        }
        let e = cfg(&[("LOGGP_ARM", "L"), ("LOGGP_VT", "off")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_VT");
        assert_eq!(arm_text(ARM_O_S | ARM_G), "o_s,G");
    }

    #[test]
    fn foreign_variables_are_ignored() {
        assert!(cfg(&[("LOGGP_MPI", "mpich"), ("LOGGP_TEST_X", "1")]).is_ok());
        assert!(cfg(&[("LOGGP_CLOCK", "monotonic")]).is_ok_and(|c| !c.tsc_clock));
        assert!(cfg(&[("LOGGP_CLOCK", "auto")]).is_ok_and(|c| c.tsc_clock));
        let e = cfg(&[("LOGGP_CLOCK", "rdtsc")]).unwrap_err();
        assert_eq!(
            (e.var.as_str(), e.accepted.as_str()),
            ("LOGGP_CLOCK", "auto or monotonic")
        );
        assert!(cfg(&[("LOGGP_COLL_BCAST", "binomial")]).is_ok());
    }

    #[test]
    fn targeted_items_resolve_per_pair() {
        let c = cfg(&[
            ("LOGGP_L", "1us,20us@inter"),
            ("LOGGP_O_S", "5us@from=1"),
            ("LOGGP_G", "1GB/s@pairs=0:1"),
        ])
        .unwrap();
        assert!(c.targeted() && c.targeted_at_sender() && c.perturbs());
        let p = |src, dst, same_host| Pair {
            src,
            dst,
            same_host,
        };
        let k = c.knobs(p(1, 0, false));
        assert_eq!((k.l, k.o_s, k.g_big), (20_000, 5_000, 1.0));
        let k = c.knobs(p(0, 2, true));
        assert_eq!((k.l, k.o_s, k.g_big), (1_000, 0, 0.0));
        assert_eq!(c.to_string().split(' ').next(), Some("L=+1us,+20us@inter"));
        // Only a selected non-zero value still perturbs.
        let c = cfg(&[("LOGGP_G_R", "0,5us@intra")]).unwrap();
        assert!(c.perturbs() && c.vt_active() && c.targeted() && !c.targeted_at_sender());
        assert!(!cfg(&[("LOGGP_L", "0@inter")]).unwrap().perturbs());
    }

    #[test]
    fn targeting_errors_name_the_variable() {
        let e = cfg(&[("LOGGP_O_R", "1us@ranks=0-3,2us@ranks=8")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_O_R");
        assert!(e.accepted.contains("common pairs"), "{e}");
        assert!(!e.to_string().contains('\n'));
        let e = cfg(&[("LOGGP_G_S", "+2us@inter")]).unwrap_err();
        assert!(e.accepted.contains("floor"), "{e}");
        let e = cfg(&[("LOGGP_L", "2us@node=1")]).unwrap_err();
        assert!(e.accepted.contains("@pairs=0:1"), "{e}");
        let e = cfg(&[("LOGGP_G", "fast@inter")]).unwrap_err();
        assert!(e.accepted.contains("bandwidth"), "{e}");
        let c = cfg(&[("LOGGP_G_R", "5us@pairs=0:5")]).unwrap();
        let e = c.check_job(4, &[0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.var, "LOGGP_G_R");
        assert!(e.to_string().contains("rank 5"), "{e}");
        assert!(c.check_job(6, &[0; 6]).is_ok());
    }

    #[test]
    fn distributions_and_seed() {
        let c = cfg(&[("LOGGP_L", "20us"), ("LOGGP_L_DIST", "normal:5us")]).unwrap();
        assert_eq!(c.l_dist, Dist::Normal(5_000.0));
        assert!(c.varied() && c.perturbs());
        assert!(
            c.to_string()
                .ends_with("L_dist=normal:5us o_s_dist=fixed o_r_dist=fixed seed=1"),
            "{c}"
        );
        // A distribution around 0 still perturbs (draws are truncated at 0).
        assert!(cfg(&[("LOGGP_O_R_DIST", "exp")]).unwrap().perturbs());
        let e = cfg(&[("LOGGP_O_S_DIST", "gauss:5us")]).unwrap_err();
        assert_eq!(e.var, "LOGGP_O_S_DIST");
        assert!(e.accepted.contains("normal:S"), "{e}");
        let e = cfg(&[("LOGGP_L_DIST", "empirical:/no/such/file")]).unwrap_err();
        assert!(e.accepted.contains("cannot read /no/such/file"), "{e}");
        assert_eq!(cfg(&[("LOGGP_SEED", "-1")]).unwrap_err().var, "LOGGP_SEED");
        let a = cfg(&[("LOGGP_L_DIST", "normal:5us"), ("LOGGP_SEED", "1")]).unwrap();
        let b = cfg(&[("LOGGP_L_DIST", "normal:5us"), ("LOGGP_SEED", "2")]).unwrap();
        let n = cfg(&[("LOGGP_L_DIST", "normal:6us"), ("LOGGP_SEED", "1")]).unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), n.fingerprint());
    }

    #[test]
    fn fingerprint_tracks_knobs() {
        let a = cfg(&[("LOGGP_L", "5us")]).unwrap();
        let b = cfg(&[("LOGGP_L", "6us")]).unwrap();
        let c = cfg(&[("LOGGP_L", "5us"), ("LOGGP_LOG", "info")]).unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint(), c.fingerprint());
        let t1 = cfg(&[("LOGGP_L", "5us,1us@inter")]).unwrap();
        let t2 = cfg(&[("LOGGP_L", "5us,1us@intra")]).unwrap();
        let t3 = cfg(&[("LOGGP_L", "5us,1us@pairs=0:1")]).unwrap();
        assert_ne!(t1.fingerprint(), a.fingerprint());
        assert_ne!(t1.fingerprint(), t2.fingerprint());
        assert_ne!(t2.fingerprint(), t3.fingerprint());
    }
}
