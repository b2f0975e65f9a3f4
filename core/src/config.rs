//! The shim's configuration: one struct, one table of variable names
//! (DESIGN.md §1 and §4). Bad input is never replaced by a default: it is an
//! error naming the variable, the value and what is accepted.

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

/// Resolved configuration. Times are nanoseconds; `g_big` is nanoseconds per
/// byte (0 = not set).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `L`, added to every message's latency (León's In⁺).
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
    /// piggyback by copying through a staging buffer; larger ones use a
    /// zero-copy struct datatype.
    pub inline_max: u64,
    /// The shim's clock reads the time-stamp counter where the kernel's
    /// clocksource is `tsc` (`LOGGP_CLOCK=auto`), or always
    /// CLOCK_MONOTONIC (`monotonic`).
    pub tsc_clock: bool,
    /// `LOGGP_TEST_CLOCK`: a testing aid that shifts and drifts the clock
    /// this rank's shim sees (not part of the fingerprint: it is meant to
    /// differ between hosts).
    pub test_clock: crate::clocks::TestClock,
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
            tsc_clock: true,
            test_clock: crate::clocks::TestClock::default(),
        }
    }
}

/// Default staging threshold for the inline piggyback.
pub const DEFAULT_INLINE_MAX: u64 = 16 * 1024;

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
    ("LOGGP_SEND_QUEUE", "messages that may wait to depart", "64"),
    ("LOGGP_VT", "virtual time: auto, on, off", "auto"),
    ("LOGGP_LOG", "log to stderr: off, info, debug", "off"),
    ("LOGGP_REPORT", "path of a per-rank JSON summary", "none"),
    (
        "LOGGP_INLINE_MAX",
        "bytes below which the piggyback is staged",
        "16384",
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
                "LOGGP_L" => c.l = added(k, v)?,
                "LOGGP_O_S" => c.o_s = added(k, v)?,
                "LOGGP_O_R" => c.o_r = added(k, v)?,
                "LOGGP_G_S" => c.g_s = floor(k, v)?,
                "LOGGP_G_R" => c.g_r = floor(k, v)?,
                "LOGGP_G" => {
                    if v.trim().starts_with('+') {
                        return Err(err(
                            k,
                            v,
                            &format!("{G_ACCEPTED}; G is a floor (a target value), not a +delta"),
                        ));
                    }
                    c.g_big = units::parse_g_ns_per_byte(v).ok_or_else(|| err(k, v, G_ACCEPTED))?
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
                "auto or on while a knob is set (off contradicts the knobs)",
            ));
        }
        Ok(c)
    }

    /// True when some knob asks for a perturbation.
    pub fn perturbs(&self) -> bool {
        self.l > 0
            || self.o_s > 0
            || self.o_r > 0
            || self.g_s > 0
            || self.g_r > 0
            || self.g_big > 0.0
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
        h
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use units::{fmt_g, fmt_ns};
        write!(
            f,
            "L=+{} o_s=+{} o_r=+{} g_s={} g_r={} G={} send_queue={} vt={}",
            fmt_ns(self.l as f64),
            fmt_ns(self.o_s as f64),
            fmt_ns(self.o_r as f64),
            fmt_ns(self.g_s as f64),
            fmt_ns(self.g_r as f64),
            fmt_g(self.g_big),
            self.send_queue,
            if self.vt_active() { "on" } else { "off" }
        )
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
    fn fingerprint_tracks_knobs() {
        let a = cfg(&[("LOGGP_L", "5us")]).unwrap();
        let b = cfg(&[("LOGGP_L", "6us")]).unwrap();
        let c = cfg(&[("LOGGP_L", "5us"), ("LOGGP_LOG", "info")]).unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint(), c.fingerprint());
    }
}
