//! The calibration report: Markdown (also printed to the terminal), CSV,
//! JSON, SVG plots and the raw kernel output, all in `--out`.

use super::kernel::{Params, PARAMS};
use super::{Calibration, KnobResult};
use crate::csv;
use crate::json::Pairs;
use crate::svg::{short, Svg};
use loggp_core::dist::Dist;
use loggp_core::fit::theil_sen_slope;
use loggp_core::spread::{ecdf, implied_cdf, Shape};
use loggp_core::stats;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// A parameter for humans: times in µs (3 decimals), G in ns/B.
fn cell(p: &str, v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if p == "G" {
        format!("{v:.4}")
    } else {
        format!("{:.3}", v / 1e3)
    }
}

/// What the native machine reads at the sweep's largest d (`Paced`), for
/// the parameters eq. 6's pacing moves (o_s, and L through it), against
/// the native runs around the sweep.
pub(super) fn paced_line(k: &super::KnobResult, b: &super::Baseline) -> Option<String> {
    let p = k.paced.as_ref()?;
    let parts: Vec<String> = ["o_s", "L"]
        .into_iter()
        .filter(|&q| q != k.knob.name)
        .map(|q| {
            let (at, around) = (p.params.get(q), b.center_at(q, k.knob.name));
            let d = at - around;
            format!(
                "{q} {} against {} ({}{})",
                cell(q, at),
                cell(q, around),
                if d > 0.0 { "+" } else { "" },
                cell(q, d)
            )
        })
        .collect();
    Some(format!(
        "Native at this sweep's largest d ({:.1} µs, `loggp-prtt --min-d`): {} µs around the sweep: what the kernel's pacing alone moves on the native machine, in one run, which a change of the machine's pace moves too (calibrate/README.md).",
        p.d_ns / 1e3,
        parts.join(", ")
    ))
}

fn unit(p: &str) -> &'static str {
    if p == "G" {
        "ns/B"
    } else {
        "µs"
    }
}

pub(super) fn table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i].saturating_sub(c.chars().count());
            let _ = write!(s, " {}{} |", " ".repeat(pad), c);
        }
        s
    };
    out.push_str(&line(head));
    out.push('\n');
    out.push('|');
    for x in &w {
        out.push_str(&format!("{}:|", "-".repeat(x + 1)));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out.push('\n');
}

fn avg_std(v: &[f64]) -> (f64, f64) {
    (
        stats::mean(v).unwrap_or(f64::NAN),
        stats::std_dev(v).unwrap_or(f64::NAN),
    )
}

fn knob_title(k: &KnobResult, size: u64) -> String {
    let kind = if k.knob.floor {
        "In⁼, a floor: realised = measured"
    } else {
        "In⁺, added: realised = measured − baseline"
    };
    format!("Varying {} ({kind}), messages of {size} B", k.knob.name)
}

/// The whole report as Markdown.
pub fn markdown(cal: &Calibration) -> String {
    let o = &cal.opts;
    let mut s = String::new();
    let _ = writeln!(s, "# loggp calibration report\n");
    let _ =
        writeln!(
        s,
        "- MPI: {} ({}), {} ranks, message size {} B, {} repetitions ({} per size for the g/G fit)",
        o.mpi.name(),
        if cal.library.is_empty() { "?" } else { &cal.library },
        o.np,
        o.size,
        o.reps,
        o.fit_reps
    );
    if let Some((h0, h1)) = &cal.pair {
        let _ = writeln!(
            s,
            "- Measured pair: rank 0 on {h0}, rank 1 on {h1} ({})",
            if h0 == h1 {
                "one host: shared memory, not the network; --hosts A,B measures across it"
            } else {
                "two hosts: across the network"
            }
        );
    }
    let method = cal.baseline.runs.first().map_or("", |r| r.gap_method);
    let _ = writeln!(
        s,
        "- Method: Hoefler et al. PRTT(n,d,s), n = 16; o_s by eq. 6, o_r = MPI_Recv of an arrived message, L = PRTT(1,0,s)/2 − o_s − o_r (León eq. 2), g by eq. 7 at s, G = slope of eq. 7 over sizes in the last protocol range (§3.5); g_s/g_r: {method}"
    );
    let _ = writeln!(
        s,
        "- Statistics: median of repetitions; outliers flagged by the modified Z-score |M| > 3.5 (Iglewicz & Hoaglin 1993); %err = |requested − realised| / requested · 100 (León eq. 10)"
    );
    let mut times = format!("baseline {:.1}s", cal.baseline.seconds);
    for k in &cal.knobs {
        let _ = write!(times, ", {} {:.1}s", k.knob.name, k.seconds);
    }
    if cal.reanalysed {
        let _ = writeln!(
            s,
            "- Re-analysed from saved raw kernel output (no new measurement; run times not known)\n"
        );
    } else {
        let _ = writeln!(s, "- Time: {:.1}s in all ({times})\n", cal.seconds);
    }
    let _ = writeln!(s, "Times in µs, G in ns/B.\n");

    // Baseline
    let b = &cal.baseline;
    let _ = writeln!(
        s,
        "## Baseline: native machine, no shim ({} runs)\n",
        b.runs.len()
    );
    let mut head: Vec<String> = vec!["run".into()];
    head.extend(PARAMS.iter().map(|p| p.to_string()));
    head.extend(["o_s (in call)".into(), "outliers".into()]);
    let mut rows = Vec::new();
    for (i, r) in b.runs.iter().enumerate() {
        let mut row = vec![format!("{}", i + 1)];
        row.extend(PARAMS.iter().map(|p| cell(p, r.get(p))));
        row.push(cell("o_s", r.o_s_call));
        row.push(format!("{}/{}", r.outliers, r.repetitions));
        rows.push(row);
    }
    for (name, f) in [
        ("median", &(|p: &str| b.center(p)) as &dyn Fn(&str) -> f64),
        ("σ (1.4826·MAD)", &|p: &str| b.spread(p)),
        ("tolerance", &|p: &str| b.tolerance(p)),
    ] {
        let mut row = vec![name.to_string()];
        row.extend(PARAMS.iter().map(|p| cell(p, f(p))));
        row.extend([String::new(), String::new()]);
        rows.push(row);
    }
    table(&mut s, &head, &rows);
    let _ = writeln!(
        s,
        "Baseline = median over the runs; σ = 1.4826·MAD over the runs (robust to one disturbed run). tolerance = max(3σ, 5 % of the baseline, 0.010 µs or 0.001 ns/B): an untouched parameter that moves further is flagged.\n"
    );
    if !b.between.is_empty() {
        let mut rows = Vec::new();
        for (k, r) in &b.between {
            let mut row = vec![format!("after {k}")];
            row.extend(PARAMS.iter().map(|p| cell(p, r.get(p))));
            row.extend([
                cell("o_s", r.o_s_call),
                format!("{}/{}", r.outliers, r.repetitions),
            ]);
            rows.push(row);
        }
        let _ = writeln!(s, "Native runs after each sweep:\n");
        table(&mut s, &head, &rows);
        let _ = writeln!(
            s,
            "Each knob's rows (realised values and drift) are measured against the native machine around its sweep: the median of the native runs nearest it (the one before and the one after the sweep, and one further out on each side; the baseline's median stands for the runs before the first sweep; of those, the ones whose round trip lies within 1.5× the sweep's own row at zero, where it has one and any does), so that the machine's own change of pace over the calibration is not read as drift and one native run in a slow stretch does not move it. The tolerance keeps the baseline's σ, with 5 % of that local value.\n"
        );
    }
    for (run, dist) in &b.repeated {
        let _ = writeln!(
            s,
            "Baseline run {run}: an attempt was disturbed by other processes ({dist}) and was repeated; its raw output is kept in raw/.\n"
        );
    }
    if let Some(r) = b.runs.first() {
        fit_table(&mut s, r);
    }

    // Knob tables
    for k in &cal.knobs {
        let _ = writeln!(s, "## {}\n", knob_title(k, o.size));
        let others: Vec<&str> = PARAMS
            .iter()
            .copied()
            .filter(|p| *p != k.knob.name)
            .collect();
        let mut head: Vec<String> =
            vec!["%err".into(), "In".into(), format!("Out {}", k.knob.name)];
        if k.knob.name == "G" {
            head.push("Out BW MB/s".into());
            head.push("G from sizes (B)".into());
        }
        head.extend(others.iter().map(|p| p.to_string()));
        head.push("runs".into());
        head.push("drift".into());
        let mut rows = Vec::new();
        for r in &k.rows {
            let err = match (r.err, r.below_native) {
                (_, true) => "≤native".to_string(),
                (Some(e), _) => format!("{e:.2}"),
                (None, _) => String::new(),
            };
            let req = if k.knob.name == "G" {
                format!("{} ({:.4})", r.requested.text, r.requested.value)
            } else {
                cell("L", r.requested.value)
            };
            let mut row = vec![err, req, cell(k.knob.name, r.realised)];
            if k.knob.name == "G" {
                row.push(format!("{:.0}", 1e3 / r.realised));
                row.push(format!(
                    "{}–{}{}",
                    r.params.g_range.0,
                    r.params.g_range.1,
                    if r.params.g_method == "eq. 7" {
                        ""
                    } else {
                        " (ping-pong)"
                    }
                ));
            }
            row.extend(others.iter().map(|p| cell(p, r.params.get(p))));
            row.push(format!(
                "{}{}",
                1 + r.disturbed.len(),
                if r.disturbance.disturbed() {
                    " (disturbed)"
                } else {
                    ""
                }
            ));
            row.push(
                r.drift
                    .iter()
                    .map(|(p, d)| format!("{p} {}{}", if *d > 0.0 { "+" } else { "" }, cell(p, *d)))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            rows.push(row);
        }
        let errs = k.errors();
        let (ea, es) = avg_std(&errs);
        for (name, i) in [("avg", 0), ("std", 1)] {
            let mut row = vec![
                if errs.is_empty() {
                    String::new()
                } else {
                    format!("{:.2}", if i == 0 { ea } else { es })
                },
                name.to_string(),
                String::new(),
            ];
            if k.knob.name == "G" {
                row.push(String::new());
                row.push(String::new());
            }
            for p in &others {
                let v: Vec<f64> = k.rows.iter().map(|r| r.params.get(p)).collect();
                let (a, sd) = avg_std(&v);
                row.push(if k.knob.coupled.contains(p) {
                    String::new()
                } else {
                    cell(p, if i == 0 { a } else { sd })
                });
            }
            row.push(String::new());
            row.push(String::new());
            rows.push(row);
        }
        table(&mut s, &head, &rows);
        let took = if k.seconds.is_finite() {
            format!(" Sweep took {:.1}s.", k.seconds)
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "Coupled by LogGP (not flagged, no avg): {}.{took}\n",
            k.knob.coupled.join(", ")
        );
        if let Some(line) = paced_line(k, b) {
            let _ = writeln!(s, "{line}\n");
        }
        spread_table(&mut s, k);
    }

    // Summary
    if !cal.knobs.is_empty() {
        let _ = writeln!(s, "## Summary against León et al. (Tables 1–6)\n");
        let head: Vec<String> = [
            "knob",
            "kind",
            "rows with %err",
            "avg %err",
            "std %err",
            "León avg %err",
            "drift flags",
            "beyond 3×",
            "of those at 0",
            "beyond 3× from 0",
            "largest drift",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let mut rows = Vec::new();
        for k in &cal.knobs {
            let errs = k.errors();
            let (a, sd) = avg_std(&errs);
            let flags: usize = k.rows.iter().map(|r| r.drift.len()).sum();
            let d = super::drift_summary(k, b);
            let worst = d
                .worst
                .map(|w| {
                    format!(
                        "{} {}{} {} at {}={} ({:.1}× tolerance{})",
                        w.param,
                        if w.delta > 0.0 { "+" } else { "" },
                        cell(w.param, w.delta),
                        unit(w.param),
                        k.knob.name,
                        w.at,
                        w.times,
                        if w.disturbed {
                            ", a run kept disturbed"
                        } else {
                            ""
                        }
                    )
                })
                .unwrap_or_else(|| "none".into());
            rows.push(vec![
                k.knob.name.to_string(),
                if k.knob.floor { "floor" } else { "added" }.to_string(),
                format!("{}/{}", errs.len(), k.rows.len()),
                if errs.is_empty() {
                    "n/a".into()
                } else {
                    format!("{a:.2}")
                },
                if errs.is_empty() {
                    "n/a".into()
                } else {
                    format!("{sd:.2}")
                },
                format!("{:.2}", k.knob.leon),
                flags.to_string(),
                d.beyond_3x.to_string(),
                d.at_zero.map_or("n/a".into(), |n| n.to_string()),
                d.from_zero.map_or("n/a".into(), |n| n.to_string()),
                worst,
            ]);
        }
        table(&mut s, &head, &rows);
        let _ = writeln!(
            s,
            "drift flags: untouched parameters beyond their tolerance, over the sweep's rows; beyond 3×: those beyond 3× tolerance. largest drift: in tolerances around the sweep's own native value, from a run kept disturbed only where no other row drifts.\n"
        );
        let _ = writeln!(
            s,
            "The row at 0 runs through the shim with virtual time on and every knob at zero (LOGGP_VT=on; L, g_s and g_r armed in their own sweeps, LOGGP_ARM, so that it runs the paths their other rows run), the emulated machine that `loggp sweep` measures from: of those at 0, its flags beyond 3× are the machinery's own cost, which every other row carries too. beyond 3× from 0: the other rows' untouched parameters beyond 3× tolerance against that row instead of the native machine, what raising the knob moves beyond the machinery (n/a: no row at 0); a row against one run, not against a median of native runs, so a noisier count.\n"
        );
    }
    s
}

/// The realised distribution of a varied knob, per requested value:
/// measured / implied.
fn spread_table(s: &mut String, k: &KnobResult) {
    let Some(first) = k.rows.iter().find_map(|r| r.spread.as_ref()) else {
        return;
    };
    let _ = writeln!(
        s,
        "### Realised distribution of {} per message ({} = {})\n",
        k.knob.name,
        super::VARIED
            .iter()
            .find(|v| v.0 == k.knob.name)
            .map_or("", |v| v.1),
        first.dist
    );
    let head: Vec<String> = ["In", "n", "mean", "median", "sd", "IQR", "p5", "p95"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let mut rows = Vec::new();
    for r in &k.rows {
        let Some(sp) = &r.spread else { continue };
        let (m, i) = (&sp.measured, &sp.implied);
        let pair = |a: f64, b: f64| format!("{:.2} / {:.2}", a / 1e3, b / 1e3);
        rows.push(vec![
            cell("L", r.requested.value),
            sp.samples.len().to_string(),
            pair(m.mean, i.mean),
            pair(m.median, i.median),
            pair(m.sd, i.sd),
            pair(m.iqr(), i.iqr()),
            pair(m.p5, i.p5),
            pair(m.p95, i.p95),
        ]);
    }
    table(s, &head, &rows);
    let _ = writeln!(
        s,
        "Each cell: measured / implied, µs. Measured, per message: the {}, less {} (native), so the shim's own cost is in it; implied: {} around the requested value, truncated at zero (a draw below zero is drawn again). Plot: dist-{}.svg.\n",
        first.quantity, first.zero, first.dist, k.knob.name
    );
}

fn fit_table(s: &mut String, r: &Params) {
    let _ = writeln!(
        s,
        "### g + (s−1)·G over message size (baseline run 1), protocol ranges by Hoefler §3.5 (look-ahead 3, pfact 2)\n"
    );
    let head: Vec<String> = [
        "range",
        "sizes (B)",
        "points",
        "g at s=1 (µs)",
        "G least squares (ns/B)",
        "G Theil–Sen (ns/B)",
        "BW (MB/s, Theil–Sen)",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let rows: Vec<Vec<String>> = r
        .ranges
        .iter()
        .enumerate()
        .map(|(i, rg)| {
            let pts: Vec<(f64, f64)> = r.fit[rg.start..=rg.end]
                .iter()
                .map(|p| ((p.size - 1) as f64, p.gap))
                .collect();
            let ts = theil_sen_slope(&pts).unwrap_or(f64::NAN);
            vec![
                format!("{}", i + 1),
                format!("{}–{}", r.fit[rg.start].size, r.fit[rg.end].size),
                format!("{}", rg.end - rg.start + 1),
                cell("g", rg.line.intercept),
                format!("{:.4}", rg.line.slope),
                format!("{ts:.4}"),
                if ts > 0.0 {
                    format!("{:.0}", 1e3 / ts)
                } else {
                    "n/a".into()
                },
            ]
        })
        .collect();
    table(s, &head, &rows);
}

fn csv(cal: &Calibration) -> String {
    let o = &cal.opts;
    let mut s = String::from(
        "mpi,np,size,knob,run,requested,requested_value,L_ns,o_s_ns,o_r_ns,g_ns,g_s_ns,g_r_ns,G_ns_per_B,RTT_ns,o_s_call_ns,G_lsq_ns_per_B,realised,err_pct,below_native,drift,seconds,vt\n",
    );
    #[allow(clippy::too_many_arguments)] // one CSV row: every column is an argument
    let mut line = |knob: &str,
                    run: &str,
                    req: &str,
                    reqv: f64,
                    p: &Params,
                    realised: f64,
                    err: Option<f64>,
                    below: bool,
                    drift: &str,
                    secs: f64,
                    vt: bool| {
        let _ = write!(
            s,
            "{},{},{},{knob},{run},{},{}",
            o.mpi.name(),
            o.np,
            o.size,
            csv::field(req),
            csv::num(reqv)
        );
        for q in PARAMS {
            let _ = write!(s, ",{}", csv::num(p.get(q)));
        }
        let _ = writeln!(
            s,
            ",{},{},{},{},{below},{},{},{vt}",
            csv::num(p.o_s_call),
            csv::num(p.big_g_lsq),
            csv::num(realised),
            csv::opt(err),
            csv::field(drift),
            csv::num(secs)
        );
    };
    for (i, r) in cal.baseline.runs.iter().enumerate() {
        line(
            "baseline",
            &(i + 1).to_string(),
            "",
            0.0,
            r,
            f64::NAN,
            None,
            false,
            "",
            f64::NAN,
            false,
        );
    }
    for k in &cal.knobs {
        for (i, r) in k.rows.iter().enumerate() {
            let drift: Vec<String> = r.drift.iter().map(|(p, d)| format!("{p}:{d}")).collect();
            line(
                k.knob.name,
                &(i + 1).to_string(),
                &r.requested.text,
                r.requested.value,
                &r.params,
                r.realised,
                r.err,
                r.below_native,
                &drift.join(" "),
                r.seconds,
                r.vt,
            );
        }
    }
    s
}

fn fit_csv(cal: &Calibration) -> String {
    let mut s = String::from("run,size,gap_ns,range\n");
    for (i, r) in cal.baseline.runs.iter().enumerate() {
        for (j, p) in r.fit.iter().enumerate() {
            let range = r
                .ranges
                .iter()
                .position(|g| g.start <= j && j <= g.end)
                .map_or(0, |x| x + 1);
            let _ = writeln!(
                s,
                "baseline-{},{},{},{range}",
                i + 1,
                p.size,
                csv::num(p.gap)
            );
        }
    }
    s
}

/// One run's parameters as `calibration.json` holds them.
#[derive(Serialize)]
struct JsonParams<'a> {
    /// `L_ns`, `o_s_ns`, ... `G_ns_per_B`, `RTT_ns`, in report order.
    #[serde(flatten)]
    values: Pairs<String, f64>,
    o_s_call_ns: f64,
    #[serde(rename = "G_lsq_ns_per_B")]
    g_lsq_ns_per_b: f64,
    #[serde(rename = "G_sizes")]
    g_sizes: [u64; 2],
    #[serde(rename = "G_method")]
    g_method: &'a str,
    gap_method: &'a str,
    outliers: usize,
    preempted: usize,
    repetitions: usize,
    ranges: Vec<JsonRange>,
}

#[derive(Serialize)]
struct JsonRange {
    from_bytes: u64,
    to_bytes: u64,
    g_ns: f64,
    #[serde(rename = "G_ns_per_B")]
    g_ns_per_b: f64,
}

impl<'a> From<&'a Params> for JsonParams<'a> {
    fn from(p: &'a Params) -> Self {
        let values = PARAMS
            .iter()
            .map(|q| {
                let key = if *q == "G" {
                    "G_ns_per_B".to_string()
                } else {
                    format!("{q}_ns")
                };
                (key, p.get(q))
            })
            .collect();
        JsonParams {
            values: Pairs(values),
            o_s_call_ns: p.o_s_call,
            g_lsq_ns_per_b: p.big_g_lsq,
            g_sizes: [p.g_range.0, p.g_range.1],
            g_method: p.g_method,
            gap_method: p.gap_method,
            outliers: p.outliers,
            preempted: p.preempted,
            repetitions: p.repetitions,
            ranges: p
                .ranges
                .iter()
                .map(|r| JsonRange {
                    from_bytes: p.fit[r.start].size,
                    to_bytes: p.fit[r.end].size,
                    g_ns: r.line.intercept,
                    g_ns_per_b: r.line.slope,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct JsonCalibration<'a> {
    mpi: &'a str,
    library: &'a str,
    /// Hosts of ranks 0 and 1, the measured pair (null: not recorded).
    pair_hosts: Option<[&'a str; 2]>,
    np: u32,
    size: u64,
    reps: u32,
    fit_reps: u32,
    seconds: f64,
    baseline: JsonBaseline<'a>,
    knobs: Vec<JsonKnob<'a>>,
}

/// Read back by `calibrate --collectives --params` (its `median`).
#[derive(Serialize)]
struct JsonBaseline<'a> {
    runs: Vec<JsonParams<'a>>,
    median: Pairs<&'a str, f64>,
    sigma: Pairs<&'a str, f64>,
    seconds: f64,
    /// The native run after each knob's sweep, in the order run.
    after_sweep: Vec<JsonAfter<'a>>,
}

#[derive(Serialize)]
struct JsonAfter<'a> {
    knob: &'a str,
    params: JsonParams<'a>,
}

#[derive(Serialize)]
struct JsonKnob<'a> {
    knob: &'a str,
    floor: bool,
    avg_err_pct: Option<f64>,
    std_err_pct: Option<f64>,
    leon_avg_err_pct: f64,
    /// Drift flags of the sweep, and those beyond 3× tolerance.
    drift_flags: usize,
    drift_beyond_3x: usize,
    /// Of those, the row at zero's (virtual time on, every knob zero: the
    /// machinery alone); null without such a row.
    drift_beyond_3x_at_zero: Option<usize>,
    /// The other rows' untouched parameters beyond 3× tolerance against
    /// the row at zero; null without one.
    drift_beyond_3x_from_zero: Option<usize>,
    /// The native machine at the sweep's largest d (`loggp-prtt
    /// --min-d`); null in a raw directory from before.
    native_at_largest_d: Option<JsonPaced<'a>>,
    seconds: f64,
    rows: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonPaced<'a> {
    d_ns: f64,
    params: JsonParams<'a>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    requested: &'a str,
    requested_value: f64,
    realised: f64,
    err_pct: Option<f64>,
    below_native: bool,
    /// Measured with virtual time on (a row at zero without it ran the
    /// pass-through: a report from before rows at zero were the emulated
    /// machine).
    vt: bool,
    drift: Pairs<&'a str, f64>,
    seconds: f64,
    repeated_disturbance: &'a [super::Disturbance],
    disturbance: super::Disturbance,
    params: JsonParams<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    distribution: Option<JsonSpread<'a>>,
}

#[derive(Serialize)]
struct JsonShape {
    mean: f64,
    median: f64,
    sd: f64,
    iqr: f64,
    p5: f64,
    p25: f64,
    p75: f64,
    p95: f64,
}

impl From<&Shape> for JsonShape {
    fn from(s: &Shape) -> Self {
        JsonShape {
            mean: s.mean,
            median: s.median,
            sd: s.sd,
            iqr: s.iqr(),
            p5: s.p5,
            p25: s.p25,
            p75: s.p75,
            p95: s.p95,
        }
    }
}

/// A varied knob's realised per-message delay (ns) against the request.
#[derive(Serialize)]
struct JsonSpread<'a> {
    dist: &'a str,
    quantity: &'a str,
    n: usize,
    measured_ns: JsonShape,
    implied_ns: JsonShape,
    samples_ns: &'a [f64],
}

fn json(cal: &Calibration) -> String {
    let o = &cal.opts;
    let b = &cal.baseline;
    let file = JsonCalibration {
        mpi: o.mpi.name(),
        library: &cal.library,
        pair_hosts: cal.pair.as_ref().map(|(a, b)| [a.as_str(), b.as_str()]),
        np: o.np,
        size: o.size,
        reps: o.reps,
        fit_reps: o.fit_reps,
        seconds: cal.seconds,
        baseline: JsonBaseline {
            runs: b.runs.iter().map(JsonParams::from).collect(),
            median: Pairs(PARAMS.iter().map(|p| (*p, b.center(p))).collect()),
            sigma: Pairs(PARAMS.iter().map(|p| (*p, b.spread(p))).collect()),
            seconds: b.seconds,
            after_sweep: b
                .between
                .iter()
                .map(|(k, p)| JsonAfter {
                    knob: k,
                    params: JsonParams::from(p),
                })
                .collect(),
        },
        knobs: cal
            .knobs
            .iter()
            .map(|k| {
                let errs = k.errors();
                let (a, sd) = avg_std(&errs);
                let summary = super::drift_summary(k, &cal.baseline);
                JsonKnob {
                    knob: k.knob.name,
                    floor: k.knob.floor,
                    avg_err_pct: (!errs.is_empty()).then_some(a),
                    std_err_pct: (!errs.is_empty()).then_some(sd),
                    leon_avg_err_pct: k.knob.leon,
                    drift_flags: k.rows.iter().map(|r| r.drift.len()).sum(),
                    drift_beyond_3x: summary.beyond_3x,
                    drift_beyond_3x_at_zero: summary.at_zero,
                    drift_beyond_3x_from_zero: summary.from_zero,
                    native_at_largest_d: k.paced.as_ref().map(|p| JsonPaced {
                        d_ns: p.d_ns,
                        params: JsonParams::from(&p.params),
                    }),
                    seconds: k.seconds,
                    rows: k
                        .rows
                        .iter()
                        .map(|r| JsonRow {
                            requested: &r.requested.text,
                            requested_value: r.requested.value,
                            realised: r.realised,
                            err_pct: r.err,
                            below_native: r.below_native,
                            vt: r.vt,
                            drift: Pairs(r.drift.clone()),
                            seconds: r.seconds,
                            repeated_disturbance: &r.disturbed,
                            disturbance: r.disturbance,
                            params: JsonParams::from(&r.params),
                            distribution: r.spread.as_ref().map(|sp| JsonSpread {
                                dist: &sp.dist,
                                quantity: sp.quantity,
                                n: sp.samples.len(),
                                measured_ns: JsonShape::from(&sp.measured),
                                implied_ns: JsonShape::from(&sp.implied),
                                samples_ns: &sp.samples,
                            }),
                        })
                        .collect(),
                }
            })
            .collect(),
    };
    crate::json::pretty(&file)
}

/// One series: label, colour, points, and whether they are joined by a
/// (dashed) line rather than drawn as dots.
type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>, bool);

/// A plain SVG scatter plot with axes; `series` are (label, colour, points,
/// joined by a line).
struct Plot<'a> {
    title: String,
    xlabel: String,
    ylabel: String,
    log: bool,
    series: Vec<Series<'a>>,
    bands: Vec<(f64, f64)>,
}

impl Plot<'_> {
    /// Finite, and positive on a log plot.
    fn drawable(&self, p: &(f64, f64)) -> bool {
        p.0.is_finite() && p.1.is_finite() && (!self.log || (p.0 > 0.0 && p.1 > 0.0))
    }

    fn svg(&self) -> String {
        let (w, h, ml, mr, mt, mb) = (640.0, 440.0, 70.0, 20.0, 40.0, 50.0);
        let tx = |v: f64| if self.log { v.max(1e-12).log10() } else { v };
        let all: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.2.iter().copied())
            .filter(|p| self.drawable(p))
            .map(|(x, y)| (tx(x), tx(y)))
            .collect();
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in &all {
            x0 = x0.min(*x);
            x1 = x1.max(*x);
            y0 = y0.min(*y);
            y1 = y1.max(*y);
        }
        if all.is_empty() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        if !self.log {
            y0 = y0.min(0.0);
            x0 = x0.min(0.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
        let px = |x: f64| ml + (tx(x) - x0) / (x1 - x0) * (w - ml - mr);
        let py = |y: f64| h - mb - (tx(y) - y0) / (y1 - y0) * (h - mt - mb);
        let mut d = Svg::new(w, h);
        for (a, bnd) in &self.bands {
            d.rect(
                px(*a),
                mt,
                (px(*bnd) - px(*a)).max(1.0),
                h - mt - mb,
                r##"fill="#eef" stroke="#99c""##,
            );
        }
        d.line((ml, h - mb), (w - mr, h - mb), r#"stroke="black""#);
        d.line((ml, mt), (ml, h - mb), r#"stroke="black""#);
        for i in 0..=4 {
            let f = f64::from(i) / 4.0;
            let xv = x0 + f * (x1 - x0);
            let yv = y0 + f * (y1 - y0);
            let (xl, yl) = if self.log {
                (10f64.powf(xv), 10f64.powf(yv))
            } else {
                (xv, yv)
            };
            let xp = ml + f * (w - ml - mr);
            let yp = h - mb - f * (h - mt - mb);
            d.text(xp, h - mb + 16.0, r#"text-anchor="middle""#, &short(xl));
            d.text(ml - 4.0, yp + 4.0, r#"text-anchor="end""#, &short(yl));
        }
        d.text(
            w / 2.0,
            22.0,
            r#"text-anchor="middle" font-size="14""#,
            &self.title,
        );
        d.text(
            (w + ml) / 2.0,
            h - 12.0,
            r#"text-anchor="middle""#,
            &self.xlabel,
        );
        d.vtext(14.0, h / 2.0, "", &self.ylabel);
        for (i, (label, colour, pts, joined)) in self.series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| self.drawable(p))
                .map(|(x, y)| (px(*x), py(*y)))
                .collect();
            if *joined {
                d.polyline(
                    &pts,
                    &format!(r#"fill="none" stroke="{colour}" stroke-dasharray="5,3""#),
                );
            } else {
                for (x, y) in &pts {
                    d.circle(*x, *y, 3.5, &format!(r#"fill="{colour}""#));
                }
            }
            if label.is_empty() {
                continue;
            }
            let ly = mt + 14.0 + 16.0 * i as f64;
            d.rect(
                ml + 10.0,
                ly - 9.0,
                10.0,
                10.0,
                &format!(r#"fill="{colour}""#),
            );
            d.text(ml + 24.0, ly, "", label);
        }
        d.finish()
    }
}

fn knob_plot(k: &KnobResult, mpi: &str) -> String {
    let g = k.knob.name == "G";
    let scale = |v: f64| if g { v } else { v / 1e3 };
    let pts: Vec<(f64, f64)> = k
        .rows
        .iter()
        .map(|r| (scale(r.requested.value), scale(r.realised)))
        .collect();
    let lo = pts.iter().map(|p| p.0).fold(f64::MAX, f64::min).min(0.0);
    let hi = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let u = if g { "ns/B" } else { "µs" };
    Plot {
        title: format!("{mpi}: requested vs realised {}", k.knob.name),
        xlabel: format!("requested {} ({u})", k.knob.name),
        ylabel: format!("realised {} ({u})", k.knob.name),
        log: false,
        series: vec![
            (
                "ideal (realised = requested)",
                "#888",
                vec![(lo, lo), (hi, hi)],
                true,
            ),
            ("measured", "#c33", pts, false),
        ],
        bands: Vec::new(),
    }
    .svg()
}

/// The realised distribution of a varied knob: each requested value's
/// empirical CDF (dots) and the CDF its distribution implies (dashed).
fn spread_plot(k: &KnobResult, mpi: &str) -> Option<String> {
    const COLOURS: &[&str] = &["#c33", "#36c", "#393", "#c6c", "#c93", "#399", "#666"];
    let spreads: Vec<(&super::Row, &super::Spread)> = k
        .rows
        .iter()
        .filter_map(|r| r.spread.as_ref().map(|s| (r, s)))
        .collect();
    let first = spreads.first()?.1;
    let hi = spreads
        .iter()
        .map(|(_, s)| s.measured.p95.max(s.implied.p95) * 1.3)
        .fold(1.0, f64::max);
    let d = Dist::parse(&first.dist, |p| {
        std::fs::read_to_string(p).map_err(|e| e.to_string())
    })
    .ok()?;
    let labels: Vec<(String, String)> = spreads
        .iter()
        .map(|(r, _)| {
            (
                format!("{} = {} measured", k.knob.name, r.requested.text),
                format!("{} = {} implied", k.knob.name, r.requested.text),
            )
        })
        .collect();
    let mut series = Vec::new();
    for (i, ((r, sp), (lm, li))) in spreads.iter().zip(&labels).enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let us = |v: Vec<(f64, f64)>| v.into_iter().map(|(x, y)| (x / 1e3, y)).collect();
        // a preempted message (milliseconds) would squeeze the rest
        let shown: Vec<(f64, f64)> = ecdf(&sp.samples, 200)
            .into_iter()
            .filter(|p| p.0 <= hi)
            .collect();
        series.push((lm.as_str(), c, us(shown), false));
        series.push((
            li.as_str(),
            c,
            us(implied_cdf(&d, r.requested.value, 0.0, hi, 200)),
            true,
        ));
    }
    Some(
        Plot {
            title: format!(
                "{mpi}: realised {} per message, {} (CDF)",
                k.knob.name, first.dist
            ),
            xlabel: format!("added {} per message (µs), {}", k.knob.name, first.quantity),
            ylabel: "fraction of messages ≤ x".into(),
            log: false,
            series,
            bands: Vec::new(),
        }
        .svg(),
    )
}

fn fit_plot(r: &Params, mpi: &str) -> String {
    // a log axis shows positive gaps only (noise can make a tiny one negative)
    let pts: Vec<(f64, f64)> = r
        .fit
        .iter()
        .filter(|p| p.gap > 0.0)
        .map(|p| (p.size as f64, p.gap))
        .collect();
    let bands: Vec<(f64, f64)> = r
        .ranges
        .iter()
        .map(|rg| (r.fit[rg.start].size as f64, r.fit[rg.end].size as f64))
        .collect();
    let mut series = vec![("(PRTT(n,0,s) − PRTT(1,0,s))/(n−1), ns", "#c33", pts, false)];
    for (i, rg) in r.ranges.iter().enumerate() {
        let seg: Vec<(f64, f64)> = (rg.start..=rg.end)
            .map(|j| {
                let s = r.fit[j].size as f64;
                (s, rg.line.at(s - 1.0))
            })
            .collect();
        series.push((
            if i == 0 {
                "fit g + (s−1)G per protocol range"
            } else {
                ""
            },
            "#36c",
            seg,
            true,
        ));
    }
    Plot {
        title: format!("{mpi}: g + (s−1)·G over message size (baseline), ranges shaded"),
        xlabel: "message size s (bytes, log)".into(),
        ylabel: "time per message (ns, log)".into(),
        log: true,
        series,
        bands,
    }
    .svg()
}

/// Writes every output file into `--out`.
pub fn write_all(cal: &Calibration, text: &str) -> Result<(), String> {
    let dir = &cal.opts.out;
    let raw_dir = dir.join("raw");
    std::fs::create_dir_all(&raw_dir)
        .map_err(|e| format!("cannot create {}: {e}", raw_dir.display()))?;
    let put = |p: &Path, s: &str| {
        std::fs::write(p, s).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    put(&dir.join("report.md"), text)?;
    put(&dir.join("report.txt"), text)?;
    put(&dir.join("calibration.csv"), &csv(cal))?;
    put(&dir.join("fit.csv"), &fit_csv(cal))?;
    put(&dir.join("calibration.json"), &json(cal))?;
    let mpi = cal.opts.mpi.name();
    if let Some(r) = cal.baseline.runs.first() {
        put(&dir.join("fit.svg"), &fit_plot(r, mpi))?;
    }
    for k in &cal.knobs {
        put(
            &dir.join(format!("plot-{}.svg", k.knob.name)),
            &knob_plot(k, mpi),
        )?;
        if let Some(svg) = spread_plot(k, mpi) {
            put(&dir.join(format!("dist-{}.svg", k.knob.name)), &svg)?;
        }
    }
    for (name, t) in &cal.raw {
        put(&raw_dir.join(format!("{name}.txt")), t)?;
    }
    Ok(())
}
