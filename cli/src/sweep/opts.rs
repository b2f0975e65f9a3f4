//! The command line of `loggp sweep`.

use super::metric::Metric;
use super::stats::Stat;
use crate::args;
use crate::knobs::knob_var;
use crate::launch::Mpi;
use loggp_core::units::{self, G_ACCEPTED, TIME_ACCEPTED};
use std::path::PathBuf;
use std::time::Duration;

/// Shown under `loggp sweep --help`.
const NOTES: &str = "\
Other LOGGP_* variables in the environment apply to every run with the shim,
baseline too; a swept knob set there is replaced by the swept values (absent
at the baseline); LOGGP_VT is on in every run with the shim, and LOGGP_ARM
arms the swept L, g_s, g_r and G in each (their machinery runs at zero too,
so that the step to a first value is the knob's alone; o_s and o_r absorb
the shim's own cost per call). A 0 in --values is the baseline, measured
once for all knobs.
Collectives are perturbed too: the shim runs them over its own point-to-point
algorithms (LOGGP_COLL_<OP> picks one), so their messages feel every knob.

Units: times ns us ms s; G a bandwidth (B/s KB/s MB/s GB/s, KiB/s MiB/s GiB/s)
or a time per byte (0.5ns); in a list a bare number takes the unit of the next
value that has one, so 0,2,5,10us is 0us,2us,5us,10us.";

/// Sweep knobs: how much does a program care about each LogGP parameter?
///
/// Runs the program once per repeat natively (no shim), at a baseline (the
/// shim loaded, virtual time on, every knob at zero) and at each value of
/// each knob, and reports per knob against the baseline: the slowdown
/// curve, the sensitivity at 0 (% per unit, 95 % interval), the tolerance
/// at 1, 2 and 5 % slowdown (95 % interval), the resolution of the repeats,
/// and the emulation's own cost (baseline against native): CSV, JSON, an
/// SVG plot and a summary table.
#[derive(clap::Args, Debug)]
#[command(after_help = NOTES)]
pub struct Args {
    /// Knobs to sweep, one curve each: L o_s o_r g_s g_r G, each
    /// optionally targeted as in LOGGP_L (L@inter, L@intra, L@ranks=0-3,
    /// o_s@from=1, o_r@to=0, G@pairs=0:1): the swept value applies to the
    /// selected pairs only, every other pair stays native
    #[arg(long, value_name = "K[@SEL][,K...]", value_delimiter = ',', value_parser = knob_name)]
    knob: Vec<String>,
    /// LOGGP_L_DIST for the runs of the L knobs (not the baseline): each
    /// swept value is the mean, the distribution gives the spread
    #[arg(long = "l-dist", value_name = "DIST", value_parser = args::knob("LOGGP_L_DIST"))]
    l_dist: Option<String>,
    /// LOGGP_O_S_DIST for the runs of the o_s knobs (as --l-dist)
    #[arg(long = "o-s-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_S_DIST"))]
    o_s_dist: Option<String>,
    /// LOGGP_O_R_DIST for the runs of the o_r knobs (as --l-dist)
    #[arg(long = "o-r-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_R_DIST"))]
    o_r_dist: Option<String>,
    /// LOGGP_SEED for the runs with a distribution
    #[arg(long = "seed", value_name = "N", value_parser = args::knob("LOGGP_SEED"))]
    seed: Option<String>,
    /// Comma-separated values for knob K (or for every knob without a list
    /// of its own); may be repeated, once per knob
    #[arg(long, value_name = "[K=]LIST", allow_hyphen_values = true)]
    values: Vec<String>,
    /// Runs per point
    #[arg(long, value_name = "N", default_value = "5", value_parser = args::whole(1, 1_000_000))]
    repeat: u32,
    /// The statistic of the repeats that stands for a point (min suits a
    /// busy machine, where interference only ever adds time)
    #[arg(long, value_name = "median|min", default_value = "median", value_parser = stat)]
    stat: Stat,
    /// Take the figure from the program's output instead of the wall
    /// time: group 1 (else the whole match) of the last matching line of
    /// stdout, then stderr; a number or a time like 1.5ms
    #[arg(long, value_name = "REGEX", value_parser = Metric::new)]
    metric: Option<Metric>,
    /// Which shim to preload (default: from the launcher)
    #[arg(long, value_name = "openmpi|mpich", value_parser = args::mpi)]
    mpi: Option<Mpi>,
    /// Where the results go
    #[arg(long, value_name = "DIR", default_value = "loggp-sweep")]
    out: PathBuf,
    /// Kill a run (its whole process group) after this long
    #[arg(long, value_name = "TIME", default_value = "600s", allow_hyphen_values = true, value_parser = args::duration)]
    timeout: Duration,
    /// Hold an exclusive lock on FILE during each run, so that other jobs
    /// using the same FILE do not run alongside
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// A failed run is reported and the sweep goes on (the default)
    #[arg(long, overrides_with = "stop_on_fail")]
    keep_going: bool,
    /// Stop at the first failed run (results so far are written)
    #[arg(long, overrides_with = "keep_going")]
    stop_on_fail: bool,
    /// After the --repeat rounds, repeat the baseline and each knob's first
    /// value until the 95 % interval of every knob's sensitivity is within
    /// ± P % of the baseline per unit (per us; per ns/B for G), from at
    /// least 10 runs of each
    #[arg(long, value_name = "P%", value_parser = precision)]
    precision: Option<f64>,
    /// With --precision: stop adding rounds before the sweep's runs (all of
    /// them, the first --repeat rounds included) would pass N [default: 200]
    #[arg(long, value_name = "N", value_parser = args::whole(1, 1_000_000))]
    max_runs: Option<u32>,
    /// The launcher and its arguments, passed on untouched
    #[arg(last = true, value_name = "LAUNCHER")]
    cmd: Vec<String>,
}

/// What `--knob` accepts.
const KNOB_ACCEPTED: &str = "expected L, o_s, o_r, g_s, g_r or G, optionally targeted as in loggp run: @inter, @intra, @ranks=0-3+8, @from=R, @to=R, @pairs=A:B (L@inter, G@pairs=0:1)";

/// A knob of `--knob`: `L`, `o-s` (as `o_s`), or one with its selection
/// (`L@inter`, `g_r@to=0`), which the shim's own parser must accept.
fn knob_name(s: &str) -> Result<String, String> {
    let s = s.trim();
    let (base, sel) = match s.split_once('@') {
        Some((b, sel)) => (b.trim().replace('-', "_"), Some(sel.trim())),
        None => (s.replace('-', "_"), None),
    };
    let var = knob_var(&base).ok_or_else(|| KNOB_ACCEPTED.to_string())?;
    let Some(sel) = sel else {
        return Ok(base);
    };
    let probe = if base == "G" { "1GB/s" } else { "1us" };
    loggp_core::Config::from_vars([(var, format!("{probe}@{sel}").as_str())])
        .map(|_| format!("{base}@{sel}"))
        .map_err(|e| format!("{KNOB_ACCEPTED}; the selection {sel:?}: {}", e.accepted))
}

/// The knob a possibly targeted name sweeps (`L@inter` → `L`).
pub fn base_name(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// `--precision`: a width in % (`0.5%` or `0.5`), above 0.
fn precision(s: &str) -> Result<f64, String> {
    let t = s.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > 0.0)
        .ok_or_else(|| {
            "expected a width in % of the baseline per unit above 0, like 1% or 0.2%".to_string()
        })
}

/// The cap on runs when `--precision` is given without `--max-runs`.
pub const DEFAULT_MAX_RUNS: usize = 200;

fn stat(s: &str) -> Result<Stat, String> {
    Stat::parse(s).ok_or_else(|| "expected median or min".to_string())
}

/// How a knob's values are placed on the x axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Times, plotted in microseconds.
    Micros,
    /// G, plotted as nanoseconds per byte.
    NsPerByte,
}

impl Axis {
    pub fn unit(self) -> &'static str {
        match self {
            Axis::Micros => "us",
            Axis::NsPerByte => "ns/B",
        }
    }
}

/// One value of a knob: the text passed to the shim and its x coordinate.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub text: String,
    pub x: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    /// As given: `L`, or with its selection `L@inter`.
    pub name: String,
    pub var: &'static str,
    /// The selection after `@` (`inter`, `pairs=0:1`), if targeted.
    pub target: Option<String>,
    /// Further variables of this knob's runs (its distribution, the seed).
    pub extra: Vec<(String, String)>,
    pub axis: Axis,
    pub values: Vec<Value>,
}

impl Knob {
    /// What the knob's variable is set to for `value`: the value, with
    /// the knob's selection when targeted (`20us@inter`).
    pub fn setting(&self, value: &Value) -> String {
        match &self.target {
            Some(sel) => format!("{}@{sel}", value.text),
            None => value.text.clone(),
        }
    }
}

#[derive(Debug)]
pub struct Opts {
    pub knobs: Vec<Knob>,
    pub repeat: usize,
    pub stat: Stat,
    pub mpi: Option<Mpi>,
    pub out: PathBuf,
    pub metric: Option<Metric>,
    pub keep_going: bool,
    pub timeout: Duration,
    pub lock: Option<PathBuf>,
    /// `--precision`, in % of the baseline per unit.
    pub precision: Option<f64>,
    /// Cap on all runs with `--precision`.
    pub max_runs: Option<usize>,
    /// Knobs whose list held 0 (the baseline, measured once for all).
    pub zeros: Vec<String>,
    pub cmd: Vec<String>,
}

impl Opts {
    /// Checks what clap cannot: lists against knobs, and a program.
    pub fn from_args(a: Args) -> Result<Opts, String> {
        if a.cmd.is_empty() {
            return Err("no program given: put it after --, as in loggp sweep --knob L --values 0,10us -- mpirun -np 2 ./app".into());
        }
        let mut knob_names: Vec<String> = Vec::new();
        for k in a.knob {
            if knob_names.contains(&k) {
                return Err(format!("--knob {k} is given twice"));
            }
            knob_names.push(k);
        }
        let lists: Vec<(Option<String>, String)> = a
            .values
            .iter()
            // the list holds no '=', a selection may (L@ranks=0-3=5,10us)
            .map(|v| match v.rsplit_once('=') {
                Some((k, list)) => knob_name(k)
                    .map(|k| (Some(k), list.to_string()))
                    .map_err(|e| format!("--values {v:?} is not accepted: {e} before the =")),
                None => Ok((None, v.clone())),
            })
            .collect::<Result<_, _>>()?;
        if knob_names.is_empty() {
            // --values L=... alone names its knob
            for (k, _) in &lists {
                if let Some(k) = k {
                    if !knob_names.contains(k) {
                        knob_names.push(k.clone());
                    }
                }
            }
        }
        if knob_names.is_empty() {
            return Err("no knob given: say --knob L (or o_s, o_r, g_s, g_r, G)".into());
        }
        for (k, _) in &lists {
            if let Some(k) = k {
                if !knob_names.contains(k) {
                    return Err(format!(
                        "--values {k}=... is for a knob not in --knob {}",
                        knob_names.join(",")
                    ));
                }
            }
        }
        let mut knobs = Vec::new();
        let mut zeros = Vec::new();
        for name in &knob_names {
            let base = base_name(name);
            let var = knob_var(base).ok_or_else(|| {
                format!("--values {name:?} is not accepted: {KNOB_ACCEPTED} before the =")
            })?;
            let axis = if base == "G" {
                Axis::NsPerByte
            } else {
                Axis::Micros
            };
            let own = lists
                .iter()
                .rev()
                .find(|(k, _)| k.as_deref() == Some(name.as_str()));
            let shared = lists.iter().rev().find(|(k, _)| k.is_none());
            let Some((_, list)) = own.or(shared) else {
                return Err(format!(
                    "knob {name} has no values: say --values {name}=0,5,10us"
                ));
            };
            let mut values = parse_values(name, axis, list)?;
            values.sort_by(|a, b| a.x.total_cmp(&b.x));
            // 0 is the baseline (virtual time on, every knob 0): measured
            // once for all knobs, not again as a point of this one
            if values.iter().any(|v| v.x == 0.0) {
                values.retain(|v| v.x != 0.0);
                zeros.push(name.clone());
                if values.is_empty() {
                    return Err(format!(
                        "--values {name}: only 0 is given, and 0 is the baseline: give values above 0, like {name}=0,5,10us"
                    ));
                }
            }
            knobs.push(Knob {
                name: name.clone(),
                var,
                target: name.split_once('@').map(|(_, sel)| sel.to_string()),
                extra: Vec::new(),
                axis,
                values,
            });
        }
        for (base, var, flag, given) in [
            ("L", "LOGGP_L_DIST", "--l-dist", &a.l_dist),
            ("o_s", "LOGGP_O_S_DIST", "--o-s-dist", &a.o_s_dist),
            ("o_r", "LOGGP_O_R_DIST", "--o-r-dist", &a.o_r_dist),
        ] {
            let Some(d) = given else { continue };
            let mut found = false;
            for k in knobs.iter_mut().filter(|k| base_name(&k.name) == base) {
                k.extra.push((var.to_string(), d.clone()));
                if let Some(seed) = &a.seed {
                    k.extra.push(("LOGGP_SEED".to_string(), seed.clone()));
                }
                found = true;
            }
            if !found {
                return Err(format!(
                    "{flag} \"{d}\" is not accepted: no {base} knob is swept (add --knob {base})"
                ));
            }
        }
        if let Some(seed) = &a.seed {
            if knobs.iter().all(|k| k.extra.is_empty()) {
                return Err(format!(
                    "--seed \"{seed}\" is not accepted: no knob is varied (give --l-dist, --o-s-dist or --o-r-dist)"
                ));
            }
        }
        let repeat = a.repeat as usize;
        let max_runs = match (a.precision, a.max_runs) {
            (None, Some(n)) => {
                return Err(format!(
                    "--max-runs {n} is not accepted without --precision: it caps the rounds that --precision adds"
                ))
            }
            (Some(_), n) => Some(n.map_or(DEFAULT_MAX_RUNS, |n| n as usize)),
            (None, None) => None,
        };
        // native, baseline, every value: one round
        let round: usize = 2 + knobs.iter().map(|k| k.values.len()).sum::<usize>();
        if let Some(n) = max_runs {
            if n < round * repeat {
                return Err(format!(
                    "--max-runs {n} is not accepted: the {repeat} rounds of --repeat alone take {} runs (native, baseline and {} values each)",
                    round * repeat,
                    round - 2
                ));
            }
        }
        Ok(Opts {
            knobs,
            precision: a.precision,
            max_runs,
            zeros,
            repeat,
            stat: a.stat,
            mpi: a.mpi,
            out: a.out,
            metric: a.metric,
            keep_going: !a.stop_on_fail,
            timeout: a.timeout,
            lock: a.lock,
            cmd: a.cmd,
        })
    }
}

/// Parses one knob's list ([`units::split_list_with_units`]: a bare
/// number takes the unit of the next value that carries one).
pub fn parse_values(knob: &str, axis: Axis, list: &str) -> Result<Vec<Value>, String> {
    let accepted = match axis {
        Axis::Micros => TIME_ACCEPTED,
        Axis::NsPerByte => G_ACCEPTED,
    };
    let texts = units::split_list_with_units(list).map_err(|e| {
        format!("--values {knob}: {e}: expected comma-separated values, each {accepted}")
    })?;
    let mut out = Vec::new();
    for (tok, text) in list.split(',').map(str::trim).zip(texts) {
        let body = text.strip_prefix('+').unwrap_or(&text);
        let x = match axis {
            Axis::Micros => units::parse_time_ns(body).map(|ns| ns as f64 / 1e3),
            Axis::NsPerByte => units::parse_g_ns_per_byte(body),
        };
        let Some(x) = x else {
            return Err(format!(
                "--values {knob}: {tok:?} is not accepted: expected {accepted}"
            ));
        };
        out.push(Value { text, x });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    /// The command line as `loggp sweep` reads it, mistakes as one line.
    fn parse(line: &str) -> Result<Opts, String> {
        use clap::Parser;
        let argv = std::iter::once("sweep").chain(line.split_whitespace());
        let cli = Cli::try_parse_from(argv).map_err(|e| args::one_line(&e, "loggp sweep"))?;
        Opts::from_args(cli.a)
    }

    #[test]
    fn trailing_unit_applies_to_bare_numbers() {
        let v = parse_values("L", Axis::Micros, "0,2,5,10,500ns,1,2ms").unwrap();
        let texts: Vec<&str> = v.iter().map(|v| v.text.as_str()).collect();
        assert_eq!(texts, ["0", "2ns", "5ns", "10ns", "500ns", "1ms", "2ms"]);
        assert_eq!(v[4].x, 0.5);
        assert_eq!(v[6].x, 2000.0);
    }

    #[test]
    fn bandwidths_for_g() {
        let v = parse_values("G", Axis::NsPerByte, "1000,100MB/s,0.5ns").unwrap();
        assert_eq!(v[0].text, "1000MB/s");
        assert!((v[0].x - 1.0).abs() < 1e-12);
        assert!((v[1].x - 10.0).abs() < 1e-12);
        assert_eq!(v[2].x, 0.5);
    }

    #[test]
    fn bad_value_names_itself_and_what_is_accepted() {
        let e = parse_values("L", Axis::Micros, "0,5parsecs").unwrap_err();
        assert!(
            e.contains("\"5parsecs\"") && e.contains("units ns, us, ms, s"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        let e = parse_values("L", Axis::Micros, "1,2").unwrap_err();
        assert!(e.contains("\"1\""), "{e}");
        let e = parse_values("L", Axis::Micros, "1,,2us").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = parse_values("G", Axis::NsPerByte, "5 bogons/s").unwrap_err();
        assert!(e.contains("bandwidth"), "{e}");
    }

    #[test]
    fn several_knobs_each_with_a_list() {
        let o = parse(
            "--knob L,o_s --values L=0,5,10us --values o_s=2,1us --repeat 3 -- mpirun -np 2 ./a",
        )
        .unwrap();
        assert_eq!(o.knobs.len(), 2);
        assert_eq!(o.knobs[0].var, "LOGGP_L");
        assert_eq!(
            o.knobs[1].values.iter().map(|v| v.x).collect::<Vec<_>>(),
            [1.0, 2.0]
        );
        assert_eq!(o.repeat, 3);
        assert_eq!(o.stat, Stat::Median);
        assert_eq!(o.cmd, ["mpirun", "-np", "2", "./a"]);
    }

    #[test]
    fn zero_is_the_baseline_not_a_point() {
        let o = parse("--knob L,o_s --values L=0,5,10us --values o_s=1,2us -- ./a").unwrap();
        assert_eq!(
            o.knobs[0].values.iter().map(|v| v.x).collect::<Vec<_>>(),
            [5.0, 10.0]
        );
        assert_eq!(o.zeros, ["L"]);
        let o = parse("--knob L --values 1,2us --precision 0.5% --repeat 3 -- ./a").unwrap();
        assert_eq!(o.precision, Some(0.5));
        assert_eq!(o.max_runs, Some(DEFAULT_MAX_RUNS));
        let o = parse("--knob L --values 1us --precision 2 --max-runs 40 -- ./a").unwrap();
        assert_eq!((o.precision, o.max_runs), (Some(2.0), Some(40)));
    }

    #[test]
    fn targeted_and_varied_knobs() {
        let o = parse(
            "--knob L@inter,L,G@pairs=0:1 --values 0,5,20us --values G@pairs=0:1=100MB/s \
             --l-dist normal:5us --seed 7 -- ./a",
        )
        .unwrap();
        let names: Vec<&str> = o.knobs.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["L@inter", "L", "G@pairs=0:1"]);
        let l = &o.knobs[0];
        assert_eq!((l.var, l.target.as_deref()), ("LOGGP_L", Some("inter")));
        assert_eq!(l.setting(&l.values[1]), "20us@inter");
        assert_eq!(o.knobs[1].setting(&o.knobs[1].values[0]), "5us");
        // the distribution goes with every L knob, not with G
        for k in &o.knobs[..2] {
            assert_eq!(
                k.extra,
                [
                    ("LOGGP_L_DIST".to_string(), "normal:5us".to_string()),
                    ("LOGGP_SEED".to_string(), "7".to_string())
                ]
            );
        }
        let g = &o.knobs[2];
        assert!(g.extra.is_empty() && g.axis == Axis::NsPerByte);
        assert_eq!(g.setting(&g.values[0]), "100MB/s@pairs=0:1");
        assert_eq!(o.zeros, ["L@inter", "L"]);
        // o-s is o_s, targeted or not; a selection with '=' in --values
        let o = parse("--knob o-s@from=1 --values o_s@from=1=2,5us -- ./a").unwrap();
        assert_eq!(o.knobs[0].name, "o_s@from=1");
        assert_eq!(o.knobs[0].values.len(), 2);
        let o = parse("--values L@ranks=0-1+3=5us -- ./a").unwrap();
        assert_eq!(o.knobs[0].target.as_deref(), Some("ranks=0-1+3"));
        for (line, needle) in [
            (
                "--knob L@bogus --values 1us -- ./a",
                "--knob \"L@bogus\" is not accepted: expected L, o_s, o_r, g_s, g_r or G, optionally targeted",
            ),
            ("--knob L@pairs=0:0 --values 1us -- ./a", "the selection \"pairs=0:0\""),
            ("--knob X@inter --values 1us -- ./a", "--knob \"X@inter\" is not accepted"),
            (
                "--knob L@inter --values L@intra=1us -- ./a",
                "--values L@intra=... is for a knob not in --knob L@inter",
            ),
            (
                "--values Q@inter=1us -- ./a",
                "--values \"Q@inter=1us\" is not accepted: expected L",
            ),
            (
                "--knob o_s --values 1us --l-dist normal:5us -- ./a",
                "--l-dist \"normal:5us\" is not accepted: no L knob is swept (add --knob L)",
            ),
            (
                "--knob L --values 1us --l-dist normal -- ./a",
                "--l-dist \"normal\" is not accepted",
            ),
            (
                "--knob L --values 1us --seed 3 -- ./a",
                "--seed \"3\" is not accepted: no knob is varied",
            ),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: {e:?}");
        }
    }

    #[test]
    fn shared_list_and_knob_from_values() {
        let o = parse("--knob o_s,o_r --values 0,1,2us -- ./a").unwrap();
        assert_eq!(o.knobs[1].values.len(), 2, "0 is the baseline");
        assert_eq!(o.zeros, ["o_s", "o_r"]);
        let o = parse("--values=L=0,1us --stop-on-fail --stat min -- ./a").unwrap();
        assert_eq!(o.knobs[0].name, "L");
        assert!(!o.keep_going);
        assert_eq!(o.stat, Stat::Min);
    }

    #[test]
    fn mistakes_are_refused() {
        for (line, needle) in [
            (
                "--knob X --values 1us -- ./a",
                "--knob \"X\" is not accepted: expected L, o_s",
            ),
            ("--knob L -- ./a", "has no values"),
            ("--knob L --values 1us", "no program"),
            ("--knob L --values 1us --repeat 0 -- ./a", "--repeat"),
            (
                "--knob L --values 1us --bogus -- ./a",
                "unknown argument \"--bogus\"",
            ),
            ("--knob L --values o_s=1us -- ./a", "not in --knob"),
            (
                "--knob L --values 1us --metric ( -- ./a",
                "--metric \"(\" is not accepted: unclosed group",
            ),
            (
                "--knob L --values 1us --timeout 0 -- ./a",
                "--timeout \"0\" is not accepted: expected a time above 0",
            ),
            (
                "--knob L --values 1us --timeout 300 -- ./a",
                "--timeout \"300\" is not accepted",
            ),
            ("--knob L,L --values 1us -- ./a", "--knob L is given twice"),
            (
                "--knob L --values 1us --stat mean -- ./a",
                "expected median or min",
            ),
            (
                "--knob L --values 1us --precision 0% -- ./a",
                "--precision \"0%\" is not accepted: expected a width in %",
            ),
            (
                "--knob L --values 1us --precision lots -- ./a",
                "--precision \"lots\" is not accepted",
            ),
            (
                "--knob L --values 1us --max-runs 50 -- ./a",
                "--max-runs 50 is not accepted without --precision",
            ),
            (
                "--knob L --values 1,2us --repeat 5 --precision 1% --max-runs 10 -- ./a",
                "--max-runs 10 is not accepted: the 5 rounds of --repeat alone take 20 runs",
            ),
            (
                "--knob L --values 0 -- ./a",
                "only 0 is given, and 0 is the baseline",
            ),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: {e:?}");
        }
        let o = parse("--knob L --values 1us --timeout 1.5s -- ./a").unwrap();
        assert_eq!((o.precision, o.max_runs), (None, None));
        assert_eq!(o.timeout, Duration::from_millis(1500));
        assert_eq!(o.repeat, 5);
        assert!(o.keep_going);
    }
}
