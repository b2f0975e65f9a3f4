//! `loggp sweep`: how much does a program care about each LogGP parameter?
//!
//! The program runs `--repeat` times natively (no shim), at a baseline (the
//! shim loaded with virtual time on and every knob at zero: the emulated
//! machine itself, its swept L, g_s, g_r, G armed, `LOGGP_ARM`) and at every value of every knob. Rounds are interleaved
//! (native, baseline, then each point, then the next round) so that a
//! drift of the machine spreads over every point instead of biasing the
//! last ones. Every slowdown is against the baseline, so it measures the
//! knob alone; the emulation's own cost (baseline against native) is
//! reported on a line of its own. For each point the median of the repeats
//! (or, with `--stat min`, the fastest run) is compared with the baseline's:
//! slowdown % = 100 (t/t₀ - 1).
//!
//! Per knob (the statistics are in `loggp_core::tolerance`):
//! - a least-squares line through (value, that time) gives the slope and
//!   R² over the whole range, and linear interpolation between measured
//!   points the value at which the slowdown first reaches 10 % (Martin et
//!   al., ISCA'97, plot the same curves);
//! - the **sensitivity** at the baseline (LLAMP's term, Shen, Hoefler et
//!   al., SC'24) is the slope from the baseline to the knob's first value
//!   by the point statistic, `(stat(first) − stat(base)) / x₁`, with a 95 %
//!   percentile bootstrap interval over both points' runs
//!   (`loggp_core::tolerance::bootstrap_slope`); the least-squares slope
//!   through the same runs with its t-interval `b ± t_{0.975, n−2} · s /
//!   √Sxx` (`slope_ci`) goes to the JSON for comparison: it uses means, so
//!   on a shared machine one wild run widens it a lot;
//! - the **tolerance** at 1, 2 and 5 % is where the slowdown curve first
//!   reaches that level, interpolated between measured points, with a 95 %
//!   percentile bootstrap interval over the runs of each point
//!   (`loggp_core::tolerance::bootstrap_crossings`).
//!
//! The **resolution** is the smallest slowdown the repeats can tell from
//! noise, from the baseline's runs: the 95th percentile of the difference
//! between the statistics of two bootstrap resamples of them
//! (`loggp_core::tolerance::bootstrap_resolution`).
//! With `--precision` the baseline and each knob's first value are repeated
//! in further rounds until every sensitivity's interval is narrow enough,
//! or `--max-runs` is reached.
//!
//! Files written to `--out`: `runs.csv` (every run), `points.csv` (every
//! point), `sweep.json` (everything), `summary.md` (the tables) and
//! `sweep.svg` (one panel per knob).

mod csv;
mod json;
mod metric;
mod opts;
mod report;
mod stats;
mod svg;

use crate::job::{self, End, Outcome};
use crate::knobs;
use crate::launch::{self, Mpi};
use loggp_core::tolerance::{Group, Interval, SlopeCi, Tolerance};
pub use opts::Args;
use opts::{Knob, Opts};
use stats::{Fit, Stat, Summary};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The slowdown whose crossing the summary reports, in %.
pub const THRESHOLD_PCT: f64 = 10.0;
/// The slowdowns at which the tolerance is reported, in %.
pub const TOLERANCE_PCT: [f64; 3] = [1.0, 2.0, 5.0];
/// Confidence of every interval the sweep reports.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap replicates for the tolerance intervals.
pub const RESAMPLES: usize = 2000;
/// Seed of the bootstrap, fixed so that a report can be reproduced from
/// its runs.
pub const SEED: u64 = 0x5eed_1066;

/// Which configuration a run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The program as it is: no shim, no `LOGGP_*` variable.
    Native,
    /// The shim with virtual time on, every knob at zero, the swept L,
    /// g_s, g_r, G armed (`LOGGP_ARM`).
    Baseline,
    /// Knob index, value index.
    Value(usize, usize),
}

/// One run as recorded.
#[derive(Clone, Debug)]
pub struct Run {
    pub point: Point,
    /// 1-based repeat number.
    pub repeat: usize,
    pub end: End,
    pub wall: f64,
    /// The figure taken from the output with `--metric`.
    pub metric: Option<f64>,
    /// Why this run does not count (failed, or no metric found).
    pub error: Option<String>,
}

impl Run {
    /// The measured figure: the metric when one was asked for, else the
    /// wall time; `None` for a run that does not count.
    pub fn figure(&self, with_metric: bool) -> Option<f64> {
        if self.error.is_some() {
            None
        } else if with_metric {
            self.metric
        } else {
            Some(self.wall)
        }
    }
}

/// One point of a curve.
#[derive(Clone, Debug)]
pub struct PointStats {
    pub label: String,
    pub x: f64,
    /// Summary of the figure (seconds, or the metric's unit).
    pub time: Option<Summary>,
    /// The same, as slowdown % against the baseline's statistic.
    pub slowdown: Option<Summary>,
    pub failed: usize,
}

/// The sensitivity of the figure to a knob at the baseline.
#[derive(Clone, Copy, Debug)]
pub struct Sensitivity {
    /// `(stat(first value) − stat(baseline)) / x₁` (figure per unit), with
    /// its bootstrap interval.
    pub slope: Interval,
    /// The value the slope is measured to (the knob's first value).
    pub x1: f64,
    /// The baseline's statistic, for the slope in % per unit.
    pub base: f64,
    /// Runs of the baseline and of the first value.
    pub n: (usize, usize),
    /// Least squares through the same runs, with the t-interval: the
    /// classical figure, for comparison (means, so wild runs move it).
    pub ols: Option<SlopeCi>,
}

impl Sensitivity {
    /// `(slope, lo, hi)` in % of the baseline per unit.
    pub fn pct(&self) -> (f64, f64, f64) {
        let f = |v: f64| 100.0 * v / self.base;
        (f(self.slope.value), f(self.slope.lo), f(self.slope.hi))
    }

    /// Half the interval, in % of the baseline per unit.
    pub fn half_pct(&self) -> f64 {
        100.0 * self.slope.half() / self.base
    }
}

#[derive(Clone, Debug)]
pub struct Curve {
    pub knob: Knob,
    pub points: Vec<PointStats>,
    /// Least squares of median figure against x, baseline included at x=0.
    pub fit: Option<Fit>,
    /// First x where the slowdown reaches THRESHOLD_PCT.
    pub crossing: Option<f64>,
    /// At the baseline, from the runs of the baseline and the first value.
    pub sensitivity: Option<Sensitivity>,
    /// At each of TOLERANCE_PCT.
    pub tolerance: Vec<Tolerance>,
}

/// The emulation's own cost: the baseline (virtual time at zero) against
/// the program without the shim.
#[derive(Clone, Copy, Debug)]
pub struct EmulationCost {
    /// The native runs' statistic.
    pub native: f64,
    /// The baseline's statistic.
    pub baseline: f64,
}

impl EmulationCost {
    /// `100 (baseline / native - 1)`.
    pub fn pct(&self) -> f64 {
        100.0 * (self.baseline / self.native - 1.0)
    }
}

/// Everything a sweep produced.
#[derive(Clone, Debug)]
pub struct Report {
    pub command: Vec<String>,
    pub mpi: &'static str,
    pub metric: Option<String>,
    pub repeat: usize,
    /// The statistic that stands for a point.
    pub stat: Stat,
    pub background: Vec<(String, String)>,
    pub native: PointStats,
    pub baseline: PointStats,
    pub curves: Vec<Curve>,
    pub runs: Vec<Run>,
    /// False when the sweep stopped before its last run.
    pub complete: bool,
    /// `--precision` (% per unit) and `--max-runs`, when asked for.
    pub precision: Option<f64>,
    pub max_runs: Option<usize>,
    /// `LOGGP_ARM` of every run with the shim, the baseline's included
    /// (`armed_knobs`; `None`: nothing armed).
    pub armed: Option<String>,
}

impl Report {
    /// The armed knobs as the summary says them.
    pub fn armed_text(&self) -> &str {
        self.armed.as_deref().unwrap_or("none")
    }
}

impl Report {
    pub fn failed_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.error.is_some()).count()
    }

    /// Baseline against native, when both have runs.
    pub fn emulation_cost(&self) -> Option<EmulationCost> {
        let n = self.native.time.map(|t| self.stat.of(&t))?;
        let b = self.baseline.time.map(|t| self.stat.of(&t))?;
        (n > 0.0).then_some(EmulationCost {
            native: n,
            baseline: b,
        })
    }

    /// The smallest slowdown (%) a difference between two points of this
    /// many runs can show, from the baseline's spread (95 %).
    pub fn resolution_pct(&self, with_metric: bool) -> Option<f64> {
        let figs = figures(&self.runs, Point::Baseline, with_metric);
        loggp_core::tolerance::bootstrap_resolution(
            &figs,
            stat_fn(self.stat),
            CONFIDENCE,
            RESAMPLES,
            SEED,
        )
    }

    /// True when every knob's sensitivity is within `--precision`.
    pub fn precise(&self) -> Option<bool> {
        let p = self.precision?;
        Some(self.curves.iter().all(|c| curve_precise(c, p)))
    }
}

/// Runs the baseline and a knob's first value need before `--precision`
/// trusts the sensitivity's interval: a percentile bootstrap from a few
/// runs is too narrow (from two runs it cannot be wider than their range),
/// a known weakness of the method for small samples (Efron & Tibshirani
/// 1993, §13.3 and ch. 14).
pub const PRECISION_MIN_RUNS: usize = 10;

/// Whether a knob's sensitivity is known to ± `p` % per unit.
fn curve_precise(c: &Curve, p: f64) -> bool {
    c.sensitivity.is_some_and(|s| {
        s.n.0 >= PRECISION_MIN_RUNS && s.n.1 >= PRECISION_MIN_RUNS && s.half_pct() <= p
    })
}

/// The statistic as a function of the runs, for the bootstrap.
fn stat_fn(stat: Stat) -> fn(&[f64]) -> f64 {
    match stat {
        Stat::Median => loggp_core::tolerance::median_of,
        Stat::Min => loggp_core::tolerance::min_of,
    }
}

/// The figures of the successful runs of a point.
fn figures(runs: &[Run], p: Point, with_metric: bool) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.point == p)
        .filter_map(|r| r.figure(with_metric))
        .collect()
}

/// Builds the statistics from the runs recorded so far: native, baseline
/// and the curves.
pub fn analyse(
    opts_knobs: &[Knob],
    runs: &[Run],
    with_metric: bool,
    stat: Stat,
) -> (PointStats, PointStats, Vec<Curve>) {
    let stats_of = |p: Point, label: String, x: f64, base: Option<f64>| {
        let n = runs.iter().filter(|r| r.point == p).count();
        let figs = figures(runs, p, with_metric);
        let time = Summary::of(&figs);
        let slowdown = match (time, base) {
            (Some(t), Some(b)) if b > 0.0 => Some(t.slowdown_pct(b)),
            _ => None,
        };
        PointStats {
            label,
            x,
            time,
            slowdown,
            failed: n - figs.len(),
        }
    };
    let baseline = stats_of(Point::Baseline, "baseline".into(), 0.0, None);
    let base = baseline.time.map(|t| stat.of(&t));
    let baseline = stats_of(Point::Baseline, "baseline".into(), 0.0, base);
    let native = stats_of(Point::Native, "native".into(), 0.0, base);
    let base_figs = figures(runs, Point::Baseline, with_metric);
    let stat_fn = stat_fn(stat);
    let curves = opts_knobs
        .iter()
        .enumerate()
        .map(|(k, knob)| {
            let points: Vec<PointStats> = knob
                .values
                .iter()
                .enumerate()
                .map(|(v, val)| stats_of(Point::Value(k, v), val.text.clone(), val.x, base))
                .collect();
            let mut xy: Vec<(f64, f64)> = base.map(|b| (0.0, b)).into_iter().collect();
            xy.extend(
                points
                    .iter()
                    .filter_map(|p| p.time.map(|t| (p.x, stat.of(&t)))),
            );
            let fit = stats::linear_fit(&xy);
            let mut curve: Vec<(f64, f64)> = baseline
                .slowdown
                .map(|s| (0.0, stat.of(&s)))
                .into_iter()
                .collect();
            curve.extend(
                points
                    .iter()
                    .filter_map(|p| p.slowdown.map(|s| (p.x, stat.of(&s)))),
            );
            let crossing = loggp_core::tolerance::crossing(&curve, THRESHOLD_PCT);
            // sensitivity: every run of the baseline and of the first
            // value (the smallest x with a successful run)
            let first = (0..knob.values.len())
                .map(|v| {
                    (
                        knob.values[v].x,
                        figures(runs, Point::Value(k, v), with_metric),
                    )
                })
                .find(|(x, f)| *x > 0.0 && !f.is_empty());
            let sensitivity = match (first, base) {
                (Some((x1, f1)), Some(b)) if b > 0.0 => {
                    let pts: Vec<(f64, f64)> = base_figs
                        .iter()
                        .map(|&t| (0.0, t))
                        .chain(f1.iter().map(|&t| (x1, t)))
                        .collect();
                    let g = Group { x: x1, runs: &f1 };
                    loggp_core::tolerance::bootstrap_slope(
                        &base_figs, &g, stat_fn, CONFIDENCE, RESAMPLES, SEED,
                    )
                    .map(|slope| Sensitivity {
                        slope,
                        x1,
                        base: b,
                        n: (base_figs.len(), f1.len()),
                        ols: loggp_core::tolerance::slope_ci(&pts, CONFIDENCE),
                    })
                }
                _ => None,
            };
            let value_figs: Vec<Vec<f64>> = (0..knob.values.len())
                .map(|v| figures(runs, Point::Value(k, v), with_metric))
                .collect();
            let groups: Vec<Group<'_>> = knob
                .values
                .iter()
                .zip(&value_figs)
                .map(|(val, f)| Group {
                    x: val.x,
                    runs: f.as_slice(),
                })
                .collect();
            let tolerance = loggp_core::tolerance::bootstrap_crossings(
                &base_figs,
                &groups,
                stat_fn,
                &TOLERANCE_PCT,
                CONFIDENCE,
                RESAMPLES,
                SEED,
            );
            Curve {
                knob: knob.clone(),
                points,
                fit,
                crossing,
                sensitivity,
                tolerance,
            }
        })
        .collect();
    (native, baseline, curves)
}

pub fn main(args: Args) -> Result<ExitCode, String> {
    let o = Opts::from_args(args)?;
    let mpi = match o.mpi {
        Some(m) => m,
        None => launch::pick(&o.cmd)?.0,
    };
    let shim = launch::shim_path(mpi)?;
    // Validate every configuration now, as the shim will, so that a bad
    // value stops the sweep before the first run rather than in the middle.
    // A swept knob set in the environment is replaced by the swept values,
    // and is absent (zero) at the baseline; LOGGP_VT is on in every run
    // with the shim, the baseline included.
    let all = knobs::resolve(&[])?;
    let background: Vec<(String, String)> = all
        .iter()
        .filter(|(k, _)| {
            !o.knobs.iter().any(|kn| kn.var == k) && k != "LOGGP_VT" && k != "LOGGP_ARM"
        })
        .cloned()
        .collect();
    // Every run with the shim arms the swept knobs (LOGGP_ARM, those of
    // `knobs::ARMED_WHEN_SWEPT`), the baseline too: their machinery runs at zero
    // as at any value, so the step from the baseline to a knob's first
    // value is the knob's alone.
    // Unarmed, a knob at zero takes the shim's idle lanes and its first
    // value the timed paths, whose own cost (an 8-byte message rate 0.60x
    // at L=1ns against L=0, README) would be read as the knob's.
    let arm = armed_knobs(
        o.knobs.iter().map(|kn| kn.name.as_str()),
        all.iter()
            .find(|(k, _)| k == "LOGGP_ARM")
            .map(|(_, v)| v.as_str()),
    )?;
    let with_vt = |mut vars: Vec<(String, String)>| {
        vars.push(("LOGGP_VT".to_string(), "on".to_string()));
        if let Some(a) = &arm {
            vars.push(("LOGGP_ARM".to_string(), a.clone()));
        }
        vars
    };
    let mut configs: Vec<Config> = vec![
        (Point::Native, None),
        (Point::Baseline, Some(with_vt(background.clone()))),
    ];
    for (k, knob) in o.knobs.iter().enumerate() {
        for (v, val) in knob.values.iter().enumerate() {
            let mut vars = background.clone();
            // the knob's own distribution replaces one from the environment
            vars.retain(|(k, _)| !knob.extra.iter().any(|(e, _)| e == k));
            vars.push((knob.var.to_string(), knob.setting(val)));
            vars.extend(knob.extra.iter().cloned());
            let vars = with_vt(vars);
            loggp_core::Config::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| e.to_string())?;
            configs.push((Point::Value(k, v), Some(vars)));
        }
    }
    job::ensure_writable(&o.out)?;
    job::install_signal_forwarding();
    let report = sweep(&o, mpi, &shim, &configs, &background, arm);
    let files = report::write_all(&report, &o.out)?;
    print!("{}", report::summary_text(&report));
    println!("written: {}", files.join(", "));
    Ok(if report.failed_runs() == 0 && report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `LOGGP_ARM` of the sweep's runs with the shim: the environment's
/// (`env`), and the swept knobs (by name, a targeted one's selection left
/// out: its machinery runs for every pair) that `knobs::ARMED_WHEN_SWEPT`
/// holds; `None` where that is nothing. Parsed and printed by the shim's
/// own code (`loggp_core::config::armed`, `arm_text`).
fn armed_knobs<'a>(
    swept: impl IntoIterator<Item = &'a str>,
    env: Option<&str>,
) -> Result<Option<String>, String> {
    use loggp_core::config::{arm_text, armed, ARM_ALL};
    let mut bits = match env {
        Some(v) => armed("LOGGP_ARM", v).map_err(|e| e.to_string())?,
        None => 0,
    };
    for name in swept {
        bits |= crate::knobs::armed_when_swept(name.split('@').next().unwrap_or_default());
    }
    Ok(match bits {
        0 => None,
        ARM_ALL => Some("all".to_string()),
        b => Some(arm_text(b)),
    })
}

/// One configuration: its point and the variables of its runs with the
/// shim (`None`: a native run, without the shim).
type Config = (Point, Option<Vec<(String, String)>>);

/// The label of a point in progress lines and messages.
fn point_label(o: &Opts, p: Point) -> String {
    match p {
        Point::Native => "native".to_string(),
        Point::Baseline => "baseline".to_string(),
        Point::Value(k, v) => format!("{}={}", o.knobs[k].name, o.knobs[k].values[v].text),
    }
}

/// Whether to go on after a run.
enum Next {
    Go,
    Stop,
}

fn sweep(
    o: &Opts,
    mpi: Mpi,
    shim: &std::path::Path,
    configs: &[Config],
    background: &[(String, String)],
    armed: Option<String>,
) -> Report {
    let empty = |label: &str| PointStats {
        label: label.into(),
        x: 0.0,
        time: None,
        slowdown: None,
        failed: 0,
    };
    let mut report = Report {
        command: o.cmd.clone(),
        mpi: mpi.name(),
        metric: o.metric.as_ref().map(|r| r.as_str().to_string()),
        repeat: o.repeat,
        stat: o.stat,
        background: background.to_vec(),
        native: empty("native"),
        baseline: empty("baseline"),
        curves: Vec::new(),
        runs: Vec::new(),
        complete: true,
        precision: o.precision,
        max_runs: o.max_runs,
        armed,
    };
    for kn in &o.knobs {
        if let Ok(v) = std::env::var(kn.var) {
            eprintln!(
                "loggp sweep: note: the environment sets {}={v}; the sweep replaces it, and the baseline runs without it",
                kn.var
            );
        }
    }
    if let Ok(v) = std::env::var("LOGGP_VT") {
        eprintln!(
            "loggp sweep: note: the environment sets LOGGP_VT={v}; the sweep runs every run with the shim at LOGGP_VT=on"
        );
    }
    for (k, v) in background {
        eprintln!(
            "loggp sweep: note: the environment sets {k}={v}; it applies to every run with the shim, the baseline too"
        );
    }
    for k in &o.zeros {
        eprintln!(
            "loggp sweep: note: {k}=0 is the baseline (virtual time on, every knob 0), measured once for all knobs"
        );
    }
    let with_metric = o.metric.is_some();
    let singleton = !launch::is_launcher(&o.cmd[0]);
    let mut progress = Progress::new(configs.len() * o.repeat);
    let one = |report: &mut Report,
               progress: &mut Progress,
               point: Point,
               vars: &Option<Vec<(String, String)>>,
               repeat: usize,
               of: String|
     -> Next {
        let mut cmd = match vars {
            Some(vars) => launch::command(mpi, shim, vars, &o.cmd),
            None => launch::native_command(mpi, &o.cmd),
        };
        // Each run gets exactly `vars`: a launcher passes them to the
        // ranks with its own flags, so its environment must not carry
        // other values; a singleton has them in its environment. A
        // native run has none.
        for (name, _, _) in loggp_core::config::VARIABLES {
            match vars.iter().flatten().find(|(k, _)| k == name) {
                Some((_, v)) if singleton => cmd.env(name, v),
                _ => cmd.env_remove(name),
            };
        }
        let label = point_label(o, point);
        let out = job::run(cmd, o.timeout, o.lock.as_deref());
        let run = record(point, repeat, &out, o);
        progress.step(&label, repeat, &of, &run);
        if let Some(err) = &run.error {
            progress.clear();
            eprintln!(
                "loggp sweep: run {} ({label}, repeat {repeat}) failed: {err}",
                progress.done
            );
            let lines = job::tail(&out, 10);
            if lines.is_empty() {
                eprintln!("  (it printed nothing)");
            } else {
                eprintln!("  last lines of its output:");
                for l in lines {
                    eprintln!("  | {l}");
                }
            }
        }
        let first_baseline_failed = run.error.is_some() && point == Point::Baseline && repeat == 1;
        let failed = run.error.is_some();
        report.runs.push(run);
        if failed && (!o.keep_going || first_baseline_failed) {
            if first_baseline_failed && o.keep_going {
                eprintln!(
                    "loggp sweep: stopping: the program fails even at the baseline (no knob set)"
                );
            } else {
                eprintln!("loggp sweep: stopping (--stop-on-fail)");
            }
            report.complete = false;
            return Next::Stop;
        }
        Next::Go
    };
    'rounds: for repeat in 1..=o.repeat {
        for (point, vars) in configs {
            if let Next::Stop = one(
                &mut report,
                &mut progress,
                *point,
                vars,
                repeat,
                format!("/{}", o.repeat),
            ) {
                break 'rounds;
            }
        }
    }
    let update = |report: &mut Report| {
        let (native, baseline, curves) = analyse(&o.knobs, &report.runs, with_metric, o.stat);
        report.native = native;
        report.baseline = baseline;
        report.curves = curves;
    };
    update(&mut report);
    if let (Some(p), Some(max), true) = (o.precision, o.max_runs, report.complete) {
        let mut repeat = o.repeat;
        loop {
            // the baseline and the first value of each knob not yet precise
            let wanted: Vec<&Config> = configs
                .iter()
                .filter(|(pt, _)| match *pt {
                    Point::Native => false,
                    Point::Baseline => true,
                    Point::Value(k, v) => v == 0 && !curve_precise(&report.curves[k], p),
                })
                .collect();
            progress.clear();
            let state = precision_state(&report, p);
            if wanted.len() < 2 {
                eprintln!(
                    "loggp sweep: precision reached after {} runs: {state}",
                    report.runs.len()
                );
                break;
            }
            if report.runs.len() + wanted.len() > max {
                eprintln!(
                    "loggp sweep: --max-runs {max} reached ({} runs) before the asked precision ±{p} %: {state}",
                    report.runs.len()
                );
                break;
            }
            repeat += 1;
            eprintln!(
                "loggp sweep: round {repeat} for precision ±{p} % ({} runs of at most {max}): {state}",
                report.runs.len()
            );
            progress.total += wanted.len();
            let mut stop = false;
            for (point, vars) in wanted {
                if let Next::Stop = one(
                    &mut report,
                    &mut progress,
                    *point,
                    vars,
                    repeat,
                    String::new(),
                ) {
                    stop = true;
                    break;
                }
            }
            update(&mut report);
            if stop {
                break;
            }
        }
    }
    progress.clear();
    report
}

/// Each knob's sensitivity interval as it stands, for progress lines.
fn precision_state(r: &Report, p: f64) -> String {
    r.curves
        .iter()
        .map(|c| {
            let u = c.knob.axis.unit();
            match c.sensitivity {
                Some(s) => format!(
                    "{} ±{:.3} %/{u} from {}+{} runs{}",
                    c.knob.name,
                    s.half_pct(),
                    s.n.0,
                    s.n.1,
                    if curve_precise(c, p) { " (done)" } else { "" }
                ),
                None => format!("{} no interval yet", c.knob.name),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn record(point: Point, repeat: usize, out: &Outcome, o: &Opts) -> Run {
    let mut run = Run {
        point,
        repeat,
        end: out.end.clone(),
        wall: out.wall,
        metric: None,
        error: None,
    };
    if !out.end.ok() {
        run.error = Some(format!(
            "{} after {:.2} s",
            out.end.describe(o.timeout),
            out.wall
        ));
        return run;
    }
    if let Some(re) = &o.metric {
        let found = re
            .last_capture(&out.stdout)
            .or_else(|| re.last_capture(&out.stderr));
        match found {
            None => {
                run.error = Some(format!(
                    "no line of its output matches --metric {:?}",
                    re.as_str()
                ))
            }
            Some(text) => match parse_figure(&text) {
                Some(v) => run.metric = Some(v),
                None => {
                    run.error = Some(format!(
                    "--metric captured {text:?}, which is neither a number nor a time like 1.5ms"
                ))
                }
            },
        }
    }
    run
}

/// A captured figure: a plain number (`1.25`, `3e-2`), or a time with a
/// unit, returned in seconds.
fn parse_figure(s: &str) -> Option<f64> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    loggp_core::units::parse_time_ns(s).map(|ns| ns as f64 / 1e9)
}

/// Progress on stderr: a bar with the estimated time left. On a terminal
/// the line is redrawn; otherwise one line per run.
struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn step(&mut self, label: &str, repeat: usize, of: &str, run: &Run) {
        self.done += 1;
        let elapsed = self.start.elapsed();
        let per = elapsed.as_secs_f64() / self.done as f64;
        let left = Duration::from_secs_f64(per * self.total.saturating_sub(self.done) as f64);
        let width = 20;
        let filled = (self.done * width)
            .checked_div(self.total)
            .unwrap_or(width)
            .min(width);
        let bar: String = "#".repeat(filled) + &"-".repeat(width - filled);
        let what = match run.error {
            Some(_) => "FAILED".to_string(),
            None => match run.metric {
                Some(m) => format!("{m:.6} (metric), {:.3} s", run.wall),
                None => format!("{:.3} s", run.wall),
            },
        };
        let line = format!(
            "[{bar}] {}/{} {label} #{repeat}{of}: {what}  elapsed {}  left ~{}",
            self.done,
            self.total,
            clock(elapsed),
            clock(left)
        );
        let mut e = std::io::stderr().lock();
        if self.tty {
            let _ = write!(e, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(e, "{line}");
        }
        let _ = e.flush();
    }

    fn clear(&self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opts::{Axis, Value};

    #[test]
    fn a_sweep_arms_the_knobs_whose_machinery_no_value_absorbs() {
        let arm = |swept: &[&str], env| armed_knobs(swept.iter().copied(), env).unwrap();
        assert_eq!(arm(&["L"], None).as_deref(), Some("L"));
        // in LOGGP_ARM's order (the shim's `arm_text`)
        assert_eq!(
            arm(
                &["L@inter", "o_s", "G", "g_r@pairs=0:1", "o_r", "g_s"],
                None
            )
            .as_deref(),
            Some("L,g_s,g_r,G")
        );
        // o_s and o_r: their values are over the native call already
        assert_eq!(arm(&["o_s", "o_r"], None), None);
        // the environment's LOGGP_ARM is kept, each knob once
        assert_eq!(arm(&["L"], Some("o_s,L")).as_deref(), Some("L,o_s"));
        assert_eq!(arm(&["o_r"], Some(" o_r ")).as_deref(), Some("o_r"));
        assert_eq!(arm(&["L"], Some("none")).as_deref(), Some("L"));
        assert_eq!(arm(&["o_s"], Some("all")).as_deref(), Some("all"));
        assert_eq!(
            arm(&["o_s"], Some("L,o_s,o_r,g_s,g_r,G")).as_deref(),
            Some("all")
        );
        // a bad one is the shim's error, naming the variable
        let e = armed_knobs(["L"], Some("l")).unwrap_err();
        assert!(e.contains("LOGGP_ARM") && e.contains("o_s"), "{e}");
    }

    fn knob(values: &[(&str, f64)]) -> Knob {
        Knob {
            name: "L".into(),
            var: "LOGGP_L",
            target: None,
            extra: Vec::new(),
            axis: Axis::Micros,
            values: values
                .iter()
                .map(|(t, x)| Value {
                    text: t.to_string(),
                    x: *x,
                })
                .collect(),
        }
    }

    fn run(point: Point, wall: f64, ok: bool) -> Run {
        Run {
            point,
            repeat: 1,
            end: if ok { End::Exit(0) } else { End::Exit(1) },
            wall,
            metric: None,
            error: (!ok).then(|| "exit code 1".to_string()),
        }
    }

    #[test]
    fn analysis_of_a_linear_program() {
        // t = 1 s + 0.01 s per us of L: 1 % per us, 10 % at 10 us
        let k = knob(&[("5us", 5.0), ("20us", 20.0)]);
        let mut runs = vec![];
        for (p, t) in [
            (Point::Baseline, 1.0),
            (Point::Value(0, 0), 1.05),
            (Point::Value(0, 1), 1.2),
        ] {
            runs.push(run(p, t * 0.99, true));
            runs.push(run(p, t, true));
            runs.push(run(p, t * 1.01, true));
        }
        runs.push(run(Point::Value(0, 1), 99.0, false));
        let (_, base, curves) = analyse(&[k], &runs, false, Stat::Median);
        assert_eq!(base.time.unwrap().median, 1.0);
        let c = &curves[0];
        let fit = c.fit.unwrap();
        assert!((fit.slope - 0.01).abs() < 1e-9, "{fit:?}");
        assert!((fit.r2 - 1.0).abs() < 1e-9);
        assert!((c.crossing.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(c.points[1].failed, 1);
        assert_eq!(c.points[1].time.unwrap().n, 3);
        assert!((c.points[1].slowdown.unwrap().median - 20.0).abs() < 1e-9);
        // sensitivity from the baseline and 5us: means 1.0 and 1.05, so
        // 0.01 s/us = 1 %/us; residuals ±0.01 and ±0.0105, RSS 4.205e-4,
        // s² = RSS/4, Sxx = 6 · 2.5², t(0.975, 4) = 2.7764
        let sv = c.sensitivity.unwrap();
        assert!((sv.slope.value - 0.01).abs() < 1e-12, "{sv:?}");
        assert!(sv.slope.lo <= 0.01 && 0.01 <= sv.slope.hi, "{sv:?}");
        assert_eq!((sv.n, sv.x1), ((3, 3), 5.0));
        assert!((sv.pct().0 - 1.0).abs() < 1e-9);
        let ols = sv.ols.unwrap();
        assert!((ols.slope - 0.01).abs() < 1e-12, "{ols:?}");
        assert_eq!((ols.n, ols.df), (6, 4));
        let half = 2.776_445 * (4.205e-4 / 4.0 / 37.5f64).sqrt();
        assert!((ols.half - half).abs() < 1e-6, "{ols:?}");
        // tolerance: 1, 2, 5 % at 1, 2, 5 us on the line through the medians
        for (t, want) in c.tolerance.iter().zip([1.0, 2.0, 5.0]) {
            let v = t.value.unwrap();
            assert!((v - want).abs() < 1e-9, "{t:?}");
            assert!(t.lo.unwrap() <= v && v <= t.hi.unwrap(), "{t:?}");
        }
    }

    #[test]
    fn native_runs_give_the_emulation_cost_and_stay_out_of_the_curves() {
        let k = knob(&[("5us", 5.0)]);
        let mut runs = vec![];
        for (p, t) in [
            (Point::Native, 0.5),
            (Point::Baseline, 1.0),
            (Point::Value(0, 0), 1.1),
        ] {
            runs.push(run(p, t, true));
            runs.push(run(p, t * 1.02, true));
        }
        let (native, base, curves) = analyse(&[k], &runs, false, Stat::Min);
        assert_eq!(native.time.unwrap().n, 2);
        assert!((native.slowdown.unwrap().min + 50.0).abs() < 1e-9);
        assert_eq!(base.time.unwrap().n, 2);
        // 10 % in 5 us: the native runs' 0.5 s is not in the slope
        assert!((curves[0].sensitivity.unwrap().pct().0 - 2.0 * 1.01).abs() < 0.05);
        assert!((curves[0].fit.unwrap().slope - 0.02).abs() < 1e-9);
    }

    #[test]
    fn min_statistic_ignores_slow_interference() {
        // the fastest runs say +10 % at 10 us; a busy neighbour slowed
        // two of three baseline runs
        let k = knob(&[("10us", 10.0)]);
        let runs = vec![
            run(Point::Baseline, 1.0, true),
            run(Point::Baseline, 3.0, true),
            run(Point::Baseline, 3.1, true),
            run(Point::Value(0, 0), 1.1, true),
            run(Point::Value(0, 0), 1.2, true),
            run(Point::Value(0, 0), 3.3, true),
        ];
        let (_, _, by_min) = analyse(std::slice::from_ref(&k), &runs, false, Stat::Min);
        assert!((by_min[0].fit.unwrap().slope - 0.01).abs() < 1e-9);
        assert!((by_min[0].crossing.unwrap() - 10.0).abs() < 1e-9);
        let (_, _, by_median) = analyse(&[k], &runs, false, Stat::Median);
        assert!(
            by_median[0].fit.unwrap().slope < 0.0,
            "the median is fooled here"
        );
    }

    #[test]
    fn no_baseline_means_no_slowdown() {
        let k = knob(&[("5us", 5.0)]);
        let runs = vec![
            run(Point::Baseline, 1.0, false),
            run(Point::Value(0, 0), 1.0, true),
        ];
        let (_, base, curves) = analyse(&[k], &runs, false, Stat::Median);
        assert!(base.time.is_none());
        assert!(curves[0].points[0].slowdown.is_none());
        assert!(curves[0].crossing.is_none());
    }

    /// A report from made-up runs: two knobs, an outlier, a failure.
    fn synthetic() -> Report {
        let k0 = knob(&[("5us", 5.0), ("20us", 20.0)]);
        let mut k1 = knob(&[("1us", 1.0), ("2us", 2.0)]);
        k1.name = "o_s".into();
        k1.var = "LOGGP_O_S";
        let mut runs = vec![];
        for (i, (p, t)) in [
            (Point::Native, 0.8),
            (Point::Baseline, 1.0),
            (Point::Value(0, 0), 1.05),
            (Point::Value(0, 1), 1.2),
            (Point::Value(1, 0), 1.1),
            (Point::Value(1, 1), 1.2),
        ]
        .into_iter()
        .enumerate()
        {
            for (j, f) in [0.98, 1.0, 1.03].into_iter().enumerate() {
                runs.push(run(p, t * f + 0.001 * (i + j) as f64, true));
            }
        }
        runs.push(run(Point::Value(0, 1), 40.0, true));
        runs.push(run(Point::Value(1, 1), 1.0, false));
        let knobs = [k0, k1];
        let (native, baseline, curves) = analyse(&knobs, &runs, false, Stat::Median);
        Report {
            native,
            precision: None,
            max_runs: None,
            armed: Some("L".into()),
            command: vec![
                "mpirun".into(),
                "-np".into(),
                "2".into(),
                "./a, \"b\" <c>".into(),
            ],
            mpi: "openmpi",
            metric: None,
            repeat: 3,
            stat: Stat::Median,
            background: vec![],
            baseline,
            curves,
            runs,
            complete: true,
        }
    }

    #[test]
    fn every_file_is_written_and_says_what_it_holds() {
        let r = synthetic();
        let dir = std::env::temp_dir().join(format!("loggp-sweep-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = report::write_all(&r, &dir).unwrap();
        assert_eq!(files.len(), 5);
        let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
        let runs = read("runs.csv");
        // header comment, column names, 20 runs
        assert_eq!(runs.lines().filter(|l| !l.starts_with('#')).count(), 21);
        assert!(runs.contains("o_s,2us,2.000000,us,1,0,1,"), "{runs}");
        let points = read("points.csv");
        assert!(
            points
                .lines()
                .any(|l| l.starts_with("L,20us,20.000000,us,4,0,")),
            "{points}"
        );
        let json = read("sweep.json");
        assert!(
            json.contains("\"knob\": \"o_s\"") && json.contains("\"./a, \\\"b\\\" <c>\""),
            "{json}"
        );
        assert_eq!(json.matches('{').count(), json.matches('}').count());
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["command"][3], "./a, \"b\" <c>");
        assert_eq!(v["knobs"][1]["knob"], "o_s");
        assert_eq!(v["knobs"][0]["points"].as_array().unwrap().len(), 2);
        assert_eq!(v["runs"][0]["knob"], "native");
        assert_eq!(v["native"]["figure"]["n"], 3);
        let cost = v["emulation_cost"]["cost_pct"].as_f64().unwrap();
        assert!((cost - r.emulation_cost().unwrap().pct()).abs() < 1e-9 && cost > 20.0);
        let sens = &v["knobs"][0]["sensitivity"];
        assert!(sens["pct_lo"].as_f64().unwrap() < sens["pct_per_unit"].as_f64().unwrap());
        assert_eq!(sens["to_x"], 5.0);
        let tol = v["knobs"][0]["tolerance"].as_array().unwrap();
        assert_eq!(tol.len(), 3);
        assert_eq!(tol[2]["slowdown_pct"], 5.0);
        assert!(tol[0]["value"].as_f64().unwrap() > 0.0);
        assert!(v["resolution_pct"].as_f64().unwrap() > 0.0);
        assert!(
            points
                .lines()
                .any(|l| l.starts_with("native,native,0.000000,,3,0,")),
            "{points}"
        );
        assert_eq!(v["runs"].as_array().unwrap().len(), 20);
        assert_eq!(v["runs"][19]["error"], "exit code 1");
        assert_eq!(v["baseline"]["figure"]["n"], 3);
        let slope = v["knobs"][0]["slope_per_unit"].as_f64().unwrap();
        assert!((slope - r.curves[0].fit.unwrap().slope).abs() < 1e-12);
        let svg = read("sweep.svg");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("&lt;c&gt;") && !svg.contains("<c>"));
        assert!(
            svg.contains("whisker cut"),
            "the 40 s outlier must be cut, not scale the plot"
        );
        assert!(svg.contains("+5 % at"), "tolerance marks: {svg}");
        let md = read("summary.md");
        assert!(md.contains("| o_s=2us | 3 (1 failed) |"), "{md}");
        assert!(md.contains("| native (no shim) | 3 |"), "{md}");
        assert!(
            md.contains("| knob | +1 % at | +2 % at | +5 % at |"),
            "{md}"
        );
        assert!(md.contains("emulation cost: the baseline takes +"), "{md}");
        // what the baseline armed, in every form
        assert!(md.contains("every knob 0, armed: L)"), "{md}");
        assert_eq!(v["armed"], "L");
        assert!(
            points.starts_with("# loggp sweep")
                && points
                    .lines()
                    .next()
                    .unwrap()
                    .ends_with("with the shim): L"),
            "{points}"
        );
        let text = report::summary_text(&r);
        assert!(
            text.contains("sensitivity at 0 (95 %)") && text.contains("%/us ["),
            "{text}"
        );
        assert!(text.contains("resolution: with 3 runs a point"), "{text}");
        assert!(text.contains("1 of 20 runs failed"), "{text}");
        assert!(
            !text.contains("warning"),
            "a 2 % spread is not noisy: {text}"
        );
        let mut noisy = r.clone();
        noisy.baseline.time = Summary::of(&[1.0, 1.5, 2.0, 2.5]);
        let w = report::noise_warning(&noisy).expect("a 43 % spread is noisy");
        assert!(
            w.contains("spreads by 43 %") && w.contains("--metric"),
            "{w}"
        );
        if std::env::var_os("LOGGP_KEEP_TEST_OUTPUT").is_none() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn figures() {
        assert_eq!(parse_figure(" 1.5 "), Some(1.5));
        assert_eq!(parse_figure("2e-3"), Some(0.002));
        assert_eq!(parse_figure("1.5ms"), Some(0.0015));
        assert_eq!(parse_figure("fast"), None);
        assert_eq!(parse_figure("nan"), None);
    }
}
