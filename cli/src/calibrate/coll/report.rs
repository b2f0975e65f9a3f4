//! The collective check's outputs: Markdown (also printed), CSV, JSON, an
//! SVG of measured vs predicted change, and the raw kernel output.

use super::super::report::table;
use super::{put, Check, Row};
use crate::csv;
use crate::svg::{label, ticks, Svg};
use serde::Serialize;
use std::fmt::Write as _;

fn us(v: f64) -> String {
    if v.is_finite() {
        format!("{:.2}", v / 1e3)
    } else {
        "n/a".into()
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |p| format!("{p:+.1}"))
}

/// The distinct notes of `rows`, numbered from 1 in order of appearance.
fn legend(rows: &[&Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        for n in &r.notes {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// Mean |% difference| over the rows that have one: (mean, n, max).
pub fn abs_mean(rows: &[&Row]) -> (f64, usize, f64) {
    let v: Vec<f64> = rows.iter().filter_map(|r| r.pct).map(f64::abs).collect();
    let mean = loggp_core::stats::mean(&v).unwrap_or(f64::NAN);
    (mean, v.len(), v.iter().copied().fold(f64::NAN, f64::max))
}

pub fn command(c: &Check) -> String {
    let mut a: Vec<String> = c
        .opts
        .args
        .iter()
        .filter(|a| *a != "--collectives")
        .cloned()
        .collect();
    a.insert(0, "--collectives".into());
    format!("target/release/loggp calibrate {}", a.join(" "))
}

pub fn markdown(c: &Check) -> String {
    let o = &c.opts;
    let mut s = String::new();
    let _ = writeln!(s, "# loggp collective model check\n");
    let _ = writeln!(
        s,
        "{} ({}), P = {}, {} cores; {} timed repetitions after {} warm-up; the time of a repetition is the last rank's return after a common start (median over repetitions).\n",
        o.mpi.name(),
        c.library,
        o.nps.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        c.cores,
        o.reps,
        o.warmup
    );
    let _ = writeln!(s, "Reproduce: `{}`\n", command(c));
    let _ = writeln!(s, "## LogGP parameters of the zero-knob machine\n");
    let b = &c.base;
    table(
        &mut s,
        &["L µs", "o_s µs", "o_r µs", "g_s µs", "g_r µs", "G ns/B"].map(String::from),
        &[vec![
            us(b.m.l),
            us(b.m.o_s),
            us(b.m.o_r),
            us(b.m.g_s),
            us(b.m.g_r),
            format!("{:.4}", b.m.big_g),
        ]],
    );
    let _ = writeln!(
        s,
        "From: {}. γ (local reduction, ns/B) measured by the kernel at each size.\n",
        b.source
    );
    for k in &o.knobs {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.knob == *k).collect();
        if rows.is_empty() {
            continue;
        }
        let notes = legend(&rows);
        let _ = writeln!(s, "## {} (one knob raised; Δ = knob − zero)\n", k.label());
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let n: Vec<String> = r
                    .notes
                    .iter()
                    .filter_map(|x| notes.iter().position(|y| y == x))
                    .map(|i| format!("[{}]", i + 1))
                    .collect();
                vec![
                    r.p.to_string(),
                    r.op.name().into(),
                    r.op.alg_at(r.p as usize, r.size).into(),
                    r.size.to_string(),
                    us(r.base.median),
                    us(r.pred_base),
                    us(r.raised.median),
                    us(r.pred_raised),
                    format!("{} ±{}", us(r.meas_delta), us(r.delta_se)),
                    us(r.pred_delta),
                    r.closed_delta.map_or("—".into(), us),
                    pct(r.pct),
                    if r.applies { "yes".into() } else { "no".into() },
                    n.join(""),
                ]
            })
            .collect();
        table(
            &mut s,
            &[
                "P",
                "op",
                "algorithm",
                "bytes",
                "T0 meas µs",
                "T0 pred µs",
                "T meas µs",
                "T pred µs",
                "Δ meas µs",
                "Δ pred µs",
                "Δ table µs",
                "% diff",
                "model applies",
                "notes",
            ]
            .map(String::from),
            &cells,
        );
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(s, "[{}] {n}  ", i + 1);
        }
        if !notes.is_empty() {
            s.push('\n');
        }
    }
    let _ = writeln!(s, "## Runs\n");
    let cells: Vec<Vec<String>> = c
        .runs
        .iter()
        .map(|(l, d, a)| vec![l.clone(), format!("{d:.2}"), a.to_string()])
        .collect();
    table(
        &mut s,
        &[
            "run",
            "disturbance (median/p10, max over cells)",
            "attempts",
        ]
        .map(String::from),
        &cells,
    );
    for (l, e) in &c.failed {
        let _ = writeln!(s, "**{l} failed** (its rows are missing): {e}  ");
    }
    if !c.failed.is_empty() {
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "A run above {} was repeated (up to {} more times; oversubscribed runs are not) and the least disturbed attempt kept; the others are in raw/*-disturbed-K.txt.\n",
        super::super::DISTURBED,
        super::super::RETRIES
    );
    let _ = writeln!(s, "## Summary: |measured Δ − predicted Δ| / predicted Δ\n");
    let mut cells = Vec::new();
    for k in &o.knobs {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.knob == *k).collect();
        let ok: Vec<&Row> = rows.iter().copied().filter(|r| r.applies).collect();
        let (m1, n1, x1) = abs_mean(&ok);
        let (m2, n2, x2) = abs_mean(&rows);
        let within = ok
            .iter()
            .filter(|r| r.pct.is_some_and(|p| p.abs() <= 10.0))
            .count();
        cells.push(vec![
            k.label(),
            format!("{m1:.1} % (n = {n1}, max {x1:.1} %)"),
            format!("{within}/{n1}"),
            format!("{m2:.1} % (n = {n2}, max {x2:.1} %)"),
        ]);
    }
    table(
        &mut s,
        &[
            "knob",
            "where the model applies: mean",
            "within 10 %",
            "all rows: mean",
        ]
        .map(String::from),
        &cells,
    );
    let _ = writeln!(
        s,
        "Predictions: the shim's algorithm evaluated message by message on a LogGP machine with separate o_s and o_r (calibrate/README.md, \"Collectives\"). Total {:.1} s.",
        c.seconds
    );
    s
}

fn csv(c: &Check) -> String {
    let mut s = String::from(
        "mpi,p,op,algorithm,bytes,knob,knob_value,t0_median_ns,t0_sigma_ns,t0_p10_ns,t0_p90_ns,t0_n,t0_late,t_median_ns,t_sigma_ns,t_p10_ns,t_p90_ns,t_n,t_late,gamma_ns_per_byte,t0_pred_ns,t_pred_ns,delta_meas_ns,delta_se_ns,delta_pred_ns,delta_closed_form_ns,pct_diff,model_applies,notes\n",
    );
    for r in &c.rows {
        let (a, b) = (&r.base, &r.raised);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            c.opts.mpi.name(),
            r.p,
            r.op.name(),
            r.op.alg_at(r.p as usize, r.size),
            r.size,
            r.knob.param.name(),
            csv::field(&r.knob.text),
            csv::num(a.median),
            csv::num(a.sigma),
            csv::num(a.p10),
            csv::num(a.p90),
            a.n,
            a.late,
            csv::num(b.median),
            csv::num(b.sigma),
            csv::num(b.p10),
            csv::num(b.p90),
            b.n,
            b.late,
            csv::num(r.gamma),
            csv::num(r.pred_base),
            csv::num(r.pred_raised),
            csv::num(r.meas_delta),
            csv::num(r.delta_se),
            csv::num(r.pred_delta),
            csv::opt(r.closed_delta),
            csv::opt(r.pct),
            r.applies,
            csv::field(&r.notes.join("; "))
        );
    }
    s
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    mpi: &'a str,
    library: &'a str,
    cores: usize,
    reps: u32,
    warmup: u32,
    seconds: f64,
    command: String,
    params: JsonParams<'a>,
    rows: Vec<JsonRow<'a>>,
}

/// Read back by `calibrate --collectives --params`.
#[derive(Serialize)]
struct JsonParams<'a> {
    #[serde(rename = "L")]
    l: f64,
    o_s: f64,
    o_r: f64,
    g_s: f64,
    g_r: f64,
    #[serde(rename = "G")]
    big_g: f64,
    source: &'a str,
}

#[derive(Serialize)]
struct JsonTiming {
    median: f64,
    sigma: f64,
    p10: f64,
    p90: f64,
    n: usize,
    late: usize,
    mostly_late: bool,
}

impl From<&super::Timing> for JsonTiming {
    fn from(x: &super::Timing) -> Self {
        JsonTiming {
            median: x.median,
            sigma: x.sigma,
            p10: x.p10,
            p90: x.p90,
            n: x.n,
            late: x.late,
            mostly_late: x.mostly_late,
        }
    }
}

#[derive(Serialize)]
struct JsonRow<'a> {
    p: u32,
    op: &'a str,
    algorithm: &'a str,
    bytes: u64,
    knob: &'a str,
    knob_value: &'a str,
    knob_value_ns: f64,
    zero: JsonTiming,
    raised: JsonTiming,
    gamma_ns_per_byte: f64,
    pred_zero_ns: f64,
    pred_raised_ns: f64,
    delta_meas_ns: f64,
    delta_se_ns: f64,
    delta_pred_ns: f64,
    delta_closed_form_ns: Option<f64>,
    pct_diff: Option<f64>,
    model_applies: bool,
    notes: &'a [String],
}

fn json(c: &Check) -> String {
    let b = &c.base;
    let file = JsonCheck {
        mpi: c.opts.mpi.name(),
        library: &c.library,
        cores: c.cores,
        reps: c.opts.reps,
        warmup: c.opts.warmup,
        seconds: c.seconds,
        command: command(c),
        params: JsonParams {
            l: b.m.l,
            o_s: b.m.o_s,
            o_r: b.m.o_r,
            g_s: b.m.g_s,
            g_r: b.m.g_r,
            big_g: b.m.big_g,
            source: &b.source,
        },
        rows: c
            .rows
            .iter()
            .map(|r| JsonRow {
                p: r.p,
                op: r.op.name(),
                algorithm: r.op.alg_at(r.p as usize, r.size),
                bytes: r.size,
                knob: r.knob.param.name(),
                knob_value: &r.knob.text,
                knob_value_ns: r.knob.value,
                zero: JsonTiming::from(&r.base),
                raised: JsonTiming::from(&r.raised),
                gamma_ns_per_byte: r.gamma,
                pred_zero_ns: r.pred_base,
                pred_raised_ns: r.pred_raised,
                delta_meas_ns: r.meas_delta,
                delta_se_ns: r.delta_se,
                delta_pred_ns: r.pred_delta,
                delta_closed_form_ns: r.closed_delta,
                pct_diff: r.pct,
                model_applies: r.applies,
                notes: &r.notes,
            })
            .collect(),
    };
    crate::json::pretty(&file)
}

/// Measured vs predicted Δ (µs), one point per row, with the ideal line;
/// hollow points where the model does not apply.
fn svg(c: &Check) -> String {
    let (w, h, m) = (560.0, 460.0, 60.0);
    let pts: Vec<(f64, f64, usize, bool)> = c
        .rows
        .iter()
        .filter(|r| r.pred_delta.is_finite() && r.meas_delta.is_finite())
        .map(|r| {
            let k = c.opts.knobs.iter().position(|k| *k == r.knob).unwrap_or(0);
            (r.pred_delta / 1e3, r.meas_delta / 1e3, k, r.applies)
        })
        .collect();
    let hi = pts.iter().flat_map(|p| [p.0, p.1]).fold(1.0f64, f64::max) * 1.05;
    let lo = pts.iter().flat_map(|p| [p.0, p.1]).fold(0.0f64, f64::min);
    let x = |v: f64| m + (v - lo) / (hi - lo) * (w - 2.0 * m);
    let y = |v: f64| h - m - (v - lo) / (hi - lo) * (h - 2.0 * m);
    let colors = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    ];
    let mut d = Svg::new(w, h);
    d.text(
        w / 2.0,
        20.0,
        r#"text-anchor="middle""#,
        &format!(
            "{}: measured vs LogGP-predicted change (µs)",
            c.opts.mpi.name()
        ),
    );
    d.line((m, h - m), (w - m, h - m), r#"stroke="black""#);
    d.line((m, m), (m, h - m), r#"stroke="black""#);
    d.line(
        (x(lo), y(lo)),
        (x(hi), y(hi)),
        r#"stroke="gray" stroke-dasharray="4 3""#,
    );
    for t in ticks(lo, hi, 6) {
        d.text(x(t), h - m + 16.0, r#"text-anchor="middle""#, &label(t));
        d.text(m - 6.0, y(t) + 4.0, r#"text-anchor="end""#, &label(t));
    }
    d.text(
        w / 2.0,
        h - 18.0,
        r#"text-anchor="middle""#,
        "predicted Δ (µs)",
    );
    d.vtext(16.0, h / 2.0, "", "measured Δ (µs)");
    for (px, py, k, ok) in &pts {
        let col = colors[k % colors.len()];
        let fill = if *ok { col } else { "none" };
        d.circle(
            x(*px),
            y(*py),
            4.0,
            &format!(r#"fill="{fill}" stroke="{col}""#),
        );
    }
    for (i, k) in c.opts.knobs.iter().enumerate() {
        let col = colors[i % colors.len()];
        let row = 16.0 * i as f64;
        d.circle(m + 12.0, m + 8.0 + row, 4.0, &format!(r#"fill="{col}""#));
        d.text(m + 22.0, m + 12.0 + row, "", &k.label());
    }
    d.text(
        m + 12.0,
        m + 12.0 + 16.0 * c.opts.knobs.len() as f64,
        "",
        "hollow: model does not apply",
    );
    d.finish()
}

pub fn write_all(c: &Check, text: &str) -> Result<(), String> {
    let dir = &c.opts.out;
    let raw = dir.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| format!("cannot create {}: {e}", raw.display()))?;
    put(&dir.join("report.md"), text)?;
    put(&dir.join("coll.csv"), &csv(c))?;
    put(&dir.join("coll.json"), &json(c))?;
    put(&dir.join("coll.svg"), &svg(c))?;
    for (label, t) in &c.raw {
        put(&raw.join(format!("{label}.txt")), t)?;
    }
    Ok(())
}
