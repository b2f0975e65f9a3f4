//! `loggp sweep`: how much does a program care about each LogGP parameter?
//!
//! The program runs `--repeat` times at a baseline (the shim loaded with
//! every knob at zero, a pass-through) and at every value of every knob.
//! Rounds are interleaved (baseline, then each point, then the next round)
//! so that a drift of the machine spreads over every point instead of
//! biasing the last ones. For each point the median of the repeats (or,
//! with `--stat min`, the fastest run) is compared with the baseline's:
//! slowdown % = 100 (t/t₀ - 1).
//! Per knob, a least-squares line through (value, that time) gives the
//! slope and R², and linear interpolation between measured points gives the
//! value at which the slowdown first reaches 10 % (Martin et al., ISCA'97,
//! plot the same curves).
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
pub use opts::Args;
use opts::{Knob, Opts};
use stats::{Fit, Stat, Summary};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The slowdown whose crossing the summary reports, in %.
pub const THRESHOLD_PCT: f64 = 10.0;

/// Which configuration a run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
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
    /// The same, as slowdown % against the baseline median.
    pub slowdown: Option<Summary>,
    pub failed: usize,
}

#[derive(Clone, Debug)]
pub struct Curve {
    pub knob: Knob,
    pub points: Vec<PointStats>,
    /// Least squares of median figure against x, baseline included at x=0.
    pub fit: Option<Fit>,
    /// First x where the median slowdown reaches THRESHOLD_PCT.
    pub crossing: Option<f64>,
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
    pub baseline: PointStats,
    pub curves: Vec<Curve>,
    pub runs: Vec<Run>,
    /// False when the sweep stopped before its last run.
    pub complete: bool,
}

impl Report {
    pub fn failed_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.error.is_some()).count()
    }
}

/// Builds the statistics from the runs recorded so far.
pub fn analyse(
    opts_knobs: &[Knob],
    runs: &[Run],
    with_metric: bool,
    stat: Stat,
) -> (PointStats, Vec<Curve>) {
    let stats_of = |p: Point, label: String, x: f64, base: Option<f64>| {
        let rs: Vec<&Run> = runs.iter().filter(|r| r.point == p).collect();
        let figs: Vec<f64> = rs.iter().filter_map(|r| r.figure(with_metric)).collect();
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
            failed: rs.len() - figs.len(),
        }
    };
    let baseline = stats_of(Point::Baseline, "baseline".into(), 0.0, None);
    let base = baseline.time.map(|t| stat.of(&t));
    let baseline = stats_of(Point::Baseline, "baseline".into(), 0.0, base);
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
            let crossing = stats::crossing(&curve, THRESHOLD_PCT);
            Curve {
                knob: knob.clone(),
                points,
                fit,
                crossing,
            }
        })
        .collect();
    (baseline, curves)
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
    // and is absent (zero) at the baseline.
    let background: Vec<(String, String)> = knobs::resolve(&[])?
        .into_iter()
        .filter(|(k, _)| !o.knobs.iter().any(|kn| kn.var == k))
        .collect();
    let mut configs: Vec<(Point, Vec<(String, String)>)> =
        vec![(Point::Baseline, background.clone())];
    for (k, knob) in o.knobs.iter().enumerate() {
        for (v, val) in knob.values.iter().enumerate() {
            let mut vars = background.clone();
            vars.push((knob.var.to_string(), val.text.clone()));
            loggp_core::Config::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| e.to_string())?;
            configs.push((Point::Value(k, v), vars));
        }
    }
    std::fs::create_dir_all(&o.out)
        .map_err(|e| format!("cannot create {}: {e}", o.out.display()))?;
    job::install_signal_forwarding();
    let report = sweep(&o, mpi, &shim, &configs, &background);
    let files = report::write_all(&report, &o.out)?;
    print!("{}", report::summary_text(&report));
    println!("written: {}", files.join(", "));
    Ok(if report.failed_runs() == 0 && report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn sweep(
    o: &Opts,
    mpi: Mpi,
    shim: &std::path::Path,
    configs: &[(Point, Vec<(String, String)>)],
    background: &[(String, String)],
) -> Report {
    let mut report = Report {
        command: o.cmd.clone(),
        mpi: mpi.name(),
        metric: o.metric.as_ref().map(|r| r.as_str().to_string()),
        repeat: o.repeat,
        stat: o.stat,
        background: background.to_vec(),
        baseline: PointStats {
            label: "baseline".into(),
            x: 0.0,
            time: None,
            slowdown: None,
            failed: 0,
        },
        curves: Vec::new(),
        runs: Vec::new(),
        complete: true,
    };
    for kn in &o.knobs {
        if let Ok(v) = std::env::var(kn.var) {
            eprintln!(
                "loggp sweep: note: the environment sets {}={v}; the sweep replaces it, and the baseline runs without it",
                kn.var
            );
        }
    }
    for (k, v) in background {
        eprintln!(
            "loggp sweep: note: the environment sets {k}={v}; it applies to every run, the baseline too"
        );
    }
    let total = configs.len() * o.repeat;
    let mut progress = Progress::new(total);
    'rounds: for repeat in 1..=o.repeat {
        for (point, vars) in configs {
            let mut cmd = launch::command(mpi, shim, vars, &o.cmd);
            // Each run gets exactly `vars`: a launcher passes them to the
            // ranks with its own flags, so its environment must not carry
            // other values; a singleton has them in its environment.
            let singleton = !launch::is_launcher(&o.cmd[0]);
            for (name, _, _) in loggp_core::config::VARIABLES {
                match vars.iter().find(|(k, _)| k == name) {
                    Some((_, v)) if singleton => cmd.env(name, v),
                    _ => cmd.env_remove(name),
                };
            }
            let label = match *point {
                Point::Baseline => "baseline".to_string(),
                Point::Value(k, v) => format!("{}={}", o.knobs[k].name, o.knobs[k].values[v].text),
            };
            let out = job::run(cmd, o.timeout, o.lock.as_deref());
            let run = record(*point, repeat, &out, o);
            progress.step(&label, repeat, o.repeat, &run);
            if let Some(err) = &run.error {
                progress.clear();
                eprintln!(
                    "loggp sweep: run {} of {total} ({label}, repeat {repeat}) failed: {err}",
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
            let first_baseline_failed =
                run.error.is_some() && *point == Point::Baseline && repeat == 1;
            let failed = run.error.is_some();
            report.runs.push(run);
            if failed && (!o.keep_going || first_baseline_failed) {
                if first_baseline_failed && o.keep_going {
                    eprintln!("loggp sweep: stopping: the program fails even at the baseline (no knob set)");
                } else {
                    eprintln!("loggp sweep: stopping (--stop-on-fail)");
                }
                report.complete = false;
                break 'rounds;
            }
        }
    }
    progress.clear();
    let (baseline, curves) = analyse(&o.knobs, &report.runs, o.metric.is_some(), o.stat);
    report.baseline = baseline;
    report.curves = curves;
    report
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

    fn step(&mut self, label: &str, repeat: usize, repeats: usize, run: &Run) {
        self.done += 1;
        let elapsed = self.start.elapsed();
        let per = elapsed.as_secs_f64() / self.done as f64;
        let left = Duration::from_secs_f64(per * (self.total - self.done) as f64);
        let width = 20;
        let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
        let bar: String = "#".repeat(filled) + &"-".repeat(width - filled);
        let what = match run.error {
            Some(_) => "FAILED".to_string(),
            None => match run.metric {
                Some(m) => format!("{m:.6} (metric), {:.3} s", run.wall),
                None => format!("{:.3} s", run.wall),
            },
        };
        let line = format!(
            "[{bar}] {}/{} {label} #{repeat}/{repeats}: {what}  elapsed {}  left ~{}",
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

    fn knob(values: &[(&str, f64)]) -> Knob {
        Knob {
            name: "L".into(),
            var: "LOGGP_L",
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
        let (base, curves) = analyse(&[k], &runs, false, Stat::Median);
        assert_eq!(base.time.unwrap().median, 1.0);
        let c = &curves[0];
        let fit = c.fit.unwrap();
        assert!((fit.slope - 0.01).abs() < 1e-9, "{fit:?}");
        assert!((fit.r2 - 1.0).abs() < 1e-9);
        assert!((c.crossing.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(c.points[1].failed, 1);
        assert_eq!(c.points[1].time.unwrap().n, 3);
        assert!((c.points[1].slowdown.unwrap().median - 20.0).abs() < 1e-9);
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
        let (_, by_min) = analyse(std::slice::from_ref(&k), &runs, false, Stat::Min);
        assert!((by_min[0].fit.unwrap().slope - 0.01).abs() < 1e-9);
        assert!((by_min[0].crossing.unwrap() - 10.0).abs() < 1e-9);
        let (_, by_median) = analyse(&[k], &runs, false, Stat::Median);
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
        let (base, curves) = analyse(&[k], &runs, false, Stat::Median);
        assert!(base.time.is_none());
        assert!(curves[0].points[0].slowdown.is_none());
        assert!(curves[0].crossing.is_none());
    }

    /// A report from made-up runs: two knobs, an outlier, a failure.
    fn synthetic() -> Report {
        let k0 = knob(&[("0", 0.0), ("5us", 5.0), ("20us", 20.0)]);
        let mut k1 = knob(&[("1us", 1.0), ("2us", 2.0)]);
        k1.name = "o_s".into();
        k1.var = "LOGGP_O_S";
        let mut runs = vec![];
        for (i, (p, t)) in [
            (Point::Baseline, 1.0),
            (Point::Value(0, 0), 1.0),
            (Point::Value(0, 1), 1.05),
            (Point::Value(0, 2), 1.2),
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
        runs.push(run(Point::Value(0, 2), 40.0, true));
        runs.push(run(Point::Value(1, 1), 1.0, false));
        let knobs = [k0, k1];
        let (baseline, curves) = analyse(&knobs, &runs, false, Stat::Median);
        Report {
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
        assert_eq!(v["knobs"][0]["points"].as_array().unwrap().len(), 3);
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
        let md = read("summary.md");
        assert!(md.contains("| o_s=2us | 3 (1 failed) |"), "{md}");
        let text = report::summary_text(&r);
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
