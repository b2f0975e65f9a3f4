//! The summary printed at the end of a sweep, its Markdown twin
//! `summary.md`, and `write_all`, which writes every file (the CSV and JSON
//! exporters are in their own files).

use super::stats::Stat;
use super::{csv, json, svg, Curve, PointStats, Report, CONFIDENCE, TOLERANCE_PCT};
use loggp_core::tolerance::Tolerance;
use std::fmt::Write as _;
use std::path::Path;

/// What the figure is, for headers: seconds of wall time or the metric.
pub fn figure_name(r: &Report) -> String {
    match &r.metric {
        Some(m) => format!("metric /{m}/"),
        None => "wall time (s)".into(),
    }
}

/// `s` per unit, or the metric's own unit per unit.
fn slope_unit(r: &Report, c: &Curve) -> String {
    let per = c.knob.axis.unit();
    match r.metric {
        Some(_) => format!("metric/{per}"),
        None => format!("s/{per}"),
    }
}

/// Figures for humans: 3 significant-ish digits.
fn short(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        let t = format!("{v:.4}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.3e}")
    }
}

/// The sensitivity cell: `% per unit [lo, hi]`.
fn sensitivity_cell(c: &Curve) -> String {
    let u = c.knob.axis.unit();
    match c.sensitivity {
        Some(s) => {
            let (p, lo, hi) = s.pct();
            format!("{} %/{u} [{}, {}]", short(p), short(lo), short(hi))
        }
        None => "n/a".into(),
    }
}

/// A tolerance cell: `value [lo, hi]`, "not reached" where the sweep
/// stops short; `*` when the level is below the sweep's resolution.
fn tolerance_cell(r: &Report, c: &Curve, t: &Tolerance, resolution: Option<f64>) -> String {
    let u = c.knob.axis.unit();
    let end = |v: Option<f64>| v.map_or("not reached".to_string(), short);
    let interval = format!("[{}, {}]", end(t.lo), end(t.hi));
    let mark = if resolution.is_some_and(|res| t.level_pct < res) {
        " *"
    } else {
        ""
    };
    match t.value {
        Some(v) => format!("{}{u} {interval}{mark}", short(v)),
        None => {
            let max = c
                .points
                .iter()
                .filter_map(|p| p.slowdown.map(|s| (&p.label, r.stat.of(&s))))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let at = max.map_or(String::new(), |(label, m)| {
                format!(" (max {m:.1} % at {label})")
            });
            if t.lo.is_some() {
                format!("not reached{at} {interval}{mark}")
            } else {
                format!("not reached{at}{mark}")
            }
        }
    }
}

/// The tolerance rows: knob, then one cell per level.
fn tolerance_rows(r: &Report) -> Vec<Vec<String>> {
    let res = r.resolution_pct(r.metric.is_some());
    r.curves
        .iter()
        .map(|c| {
            std::iter::once(c.knob.name.clone())
                .chain(c.tolerance.iter().map(|t| tolerance_cell(r, c, t, res)))
                .collect()
        })
        .collect()
}

fn tolerance_head() -> Vec<String> {
    std::iter::once("knob".to_string())
        .chain(TOLERANCE_PCT.iter().map(|l| format!("+{l} % at")))
        .collect()
}

/// The lines above the tables: native, baseline, emulation cost,
/// resolution, precision. Plain text (the Markdown adds nothing).
fn head_lines(r: &Report) -> Vec<String> {
    let mut v = Vec::new();
    let desc = |p: &PointStats| {
        p.time.map(|t| {
            format!(
                "median {} over {} runs (min {}, max {})",
                short(t.median),
                t.n,
                short(t.min),
                short(t.max)
            )
        })
    };
    match desc(&r.native) {
        Some(d) => v.push(format!("native (no shim): {d}")),
        None => v.push("native (no shim): no successful run".into()),
    }
    match desc(&r.baseline) {
        Some(d) => v.push(format!(
            "baseline (virtual time on, every knob 0, armed: {}): {d}; points compared by their {}",
            r.armed_text(),
            r.stat.name()
        )),
        None => v.push("baseline: no successful run, so no slowdown can be computed".into()),
    }
    if let Some(c) = r.emulation_cost() {
        v.push(format!(
            "emulation cost: the baseline takes {:+.1} % against native ({} {} vs {}); every slowdown below is against the baseline, so it leaves this out",
            c.pct(),
            r.stat.name(),
            short(c.baseline),
            short(c.native)
        ));
    }
    if let Some(res) = r.resolution_pct(r.metric.is_some()) {
        let n = r.baseline.time.map_or(0, |t| t.n);
        v.push(format!(
            "resolution: with {n} runs a point, two points whose {} differ by less than {res:.2} % cannot be told apart ({:.0} % confidence, from the baseline's spread; * marks a tolerance below it)",
            r.stat.name(),
            100.0 * CONFIDENCE
        ));
    }
    if let (Some(p), Some(max)) = (r.precision, r.max_runs) {
        let reached = r.precise().unwrap_or(false);
        v.push(format!(
            "precision: ±{p} % per unit asked for every sensitivity; {} after {} runs (at most {max})",
            if reached { "reached" } else { "NOT reached" },
            r.runs.len()
        ));
    }
    v
}

/// The summary rows: knob, slope, % per unit, R², threshold crossing.
fn summary_rows(r: &Report) -> Vec<[String; 7]> {
    let base = r.baseline.time.map(|t| r.stat.of(&t));
    r.curves
        .iter()
        .map(|c| {
            let u = c.knob.axis.unit();
            let (slope, pct, r2) = match (c.fit, base) {
                (Some(f), Some(b)) => (
                    format!("{} {}", short(f.slope), slope_unit(r, c)),
                    format!("{} %/{u}", short(100.0 * f.slope / b)),
                    short(f.r2),
                ),
                _ => ("n/a".into(), "n/a".into(), "n/a".into()),
            };
            let max = c
                .points
                .iter()
                .filter_map(|p| {
                    p.slowdown
                        .map(|s| (format!("{}={}", c.knob.name, p.label), r.stat.of(&s)))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let cross = match (c.crossing, &max) {
                (Some(x), _) => format!("{}{u}", short(x)),
                (None, Some((label, m))) => format!("not reached (max {m:.1} % at {label})"),
                (None, None) => "n/a".into(),
            };
            let n = c.points.len().to_string();
            [
                c.knob.name.clone(),
                n,
                slope,
                pct,
                r2,
                sensitivity_cell(c),
                cross,
            ]
        })
        .collect()
}

/// Above this spread of the baseline (IQR / median, in %), the summary
/// warns that small slowdowns cannot be told from noise.
pub const NOISY_IQR_PCT: f64 = 5.0;

/// An actionable warning when the baseline itself is noisy.
pub fn noise_warning(r: &Report) -> Option<String> {
    let t = r.baseline.time?;
    let iqr_pct = 100.0 * (t.q3 - t.q1) / t.median;
    (t.median > 0.0 && iqr_pct > NOISY_IQR_PCT).then(|| {
        format!(
            "warning: the baseline alone spreads by {iqr_pct:.0} % (interquartile range over median), so slowdowns \
             smaller than that are noise: the machine may be busy; use more --repeat{}{}",
            if r.stat == Stat::Median {
                ", --stat min"
            } else {
                ""
            },
            if r.metric.is_none() {
                ", or --metric to time the program's own loop instead of the launcher too"
            } else {
                ""
            }
        )
    })
}

const SUMMARY_HEAD: [&str; 7] = [
    "knob",
    "points",
    "slope",
    "slowdown",
    "R²",
    "sensitivity at 0 (95 %)",
    "+10 % at",
];

/// A table with aligned columns.
fn aligned(head: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            let pad = w.saturating_sub(c.chars().count());
            let _ = write!(l, "{c}{}  ", " ".repeat(pad));
        }
        l.trim_end().to_string() + "\n"
    };
    let mut s = line(head);
    for row in rows {
        s.push_str(&line(row));
    }
    s
}

pub fn summary_text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "loggp sweep: {} ({}), figure: {}",
        r.command.join(" "),
        r.mpi,
        figure_name(r)
    );
    for l in head_lines(r) {
        let _ = writeln!(s, "{l}");
    }
    if let Some(w) = noise_warning(r) {
        let _ = writeln!(s, "{w}");
    }
    let head: Vec<String> = SUMMARY_HEAD.iter().map(|h| h.to_string()).collect();
    let rows: Vec<Vec<String>> = summary_rows(r).into_iter().map(Vec::from).collect();
    s.push_str(&aligned(&head, &rows));
    let _ = writeln!(
        s,
        "tolerance: the value at which the slowdown reaches each level [{:.0} % interval]",
        100.0 * CONFIDENCE
    );
    s.push_str(&aligned(&tolerance_head(), &tolerance_rows(r)));
    let failed = r.failed_runs();
    if failed > 0 || !r.complete {
        let _ = writeln!(
            s,
            "{failed} of {} runs failed{}; the statistics use the runs that succeeded",
            r.runs.len(),
            if r.complete {
                ""
            } else {
                " and the sweep stopped early"
            }
        );
    }
    s
}

pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Command: `{}` ({}); figure: {}; {} runs per point.\n",
        r.command.join(" ").replace('\n', " "),
        r.mpi,
        figure_name(r),
        r.repeat
    );
    for l in head_lines(r) {
        let _ = writeln!(s, "{l}  ");
    }
    if let Some(w) = noise_warning(r) {
        let _ = writeln!(s, "{w}  ");
    }
    s.push('\n');
    let _ = writeln!(s, "| {} |", SUMMARY_HEAD.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(SUMMARY_HEAD.len()));
    for row in summary_rows(r) {
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "Tolerance: the value at which the slowdown reaches each level [{:.0} % bootstrap interval].\n",
        100.0 * CONFIDENCE
    );
    let th = tolerance_head();
    let _ = writeln!(s, "| {} |", th.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(th.len()));
    for row in tolerance_rows(r) {
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "| point | n | median | min | max | slowdown % ({}) | slowdown % (min–max) |\n|---|---|---|---|---|---|---|",
        r.stat.name()
    );
    let mut row = |name: String, p: &PointStats| {
        let (n, med, min, max) = p.time.map_or(
            ("0".into(), "–".into(), "–".into(), "–".into()),
            |t| (t.n.to_string(), short(t.median), short(t.min), short(t.max)),
        );
        let (sm, sr) = p.slowdown.map_or(("–".into(), "–".into()), |d| {
            (
                format!("{:.1}", r.stat.of(&d)),
                format!("{:.1} – {:.1}", d.min, d.max),
            )
        });
        let failed = if p.failed > 0 {
            format!(" ({} failed)", p.failed)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {name} | {n}{failed} | {med} | {min} | {max} | {sm} | {sr} |"
        );
    };
    row("native (no shim)".into(), &r.native);
    row("baseline".into(), &r.baseline);
    for c in &r.curves {
        for p in &c.points {
            row(format!("{}={}", c.knob.name, p.label), p);
        }
    }
    s
}

/// Writes every file into `dir`; returns their paths.
pub fn write_all(r: &Report, dir: &Path) -> Result<Vec<String>, String> {
    let files = [
        ("runs.csv", csv::runs_csv(r)),
        ("points.csv", csv::points_csv(r)),
        ("sweep.json", json::json(r)),
        ("summary.md", markdown(r)),
        ("sweep.svg", svg::plot(r)),
    ];
    let mut written = Vec::new();
    for (name, body) in files {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        written.push(p.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1.23456), "1.2346");
        assert_eq!(short(1.0), "1");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(0.000123), "1.230e-4");
        assert_eq!(short(f64::NAN), "n/a");
    }
}
