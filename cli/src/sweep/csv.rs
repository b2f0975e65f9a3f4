//! CSV exporters: `runs.csv` (every run) and `points.csv` (every point).
//! Each opens with a commented line saying what the figure is; a missing
//! value is an empty field (`crate::csv`).

use super::report::figure_name;
use super::stats::Summary;
use super::{Point, PointStats, Report};
use std::fmt::Write as _;

use crate::csv::{field as csv_field, fixed as num};

pub fn runs_csv(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# loggp sweep: every run. command: {}\n# figure: {}; ok=1 when the run counts",
        // a comment is one line: a script's newlines are written as \n
        r.command
            .join(" ")
            .replace('\r', "\\r")
            .replace('\n', "\\n"),
        figure_name(r)
    );
    s.push_str("knob,value,x,unit,repeat,ok,exit_code,wall_s,metric,error\n");
    for run in &r.runs {
        let (knob, value, x, unit) = match run.point {
            Point::Native => ("native".to_string(), String::new(), 0.0, ""),
            Point::Baseline => ("baseline".to_string(), "0".to_string(), 0.0, ""),
            Point::Value(k, v) => {
                let kn = &r.curves[k].knob;
                (
                    kn.name.clone(),
                    kn.values[v].text.clone(),
                    kn.values[v].x,
                    kn.axis.unit(),
                )
            }
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            csv_field(&knob),
            csv_field(&value),
            num(x),
            unit,
            run.repeat,
            u8::from(run.error.is_none()),
            run.end.code(),
            num(run.wall),
            run.metric.map(num).unwrap_or_default(),
            csv_field(run.error.as_deref().unwrap_or(""))
        );
    }
    s
}

fn summary_cols(t: Option<Summary>) -> String {
    match t {
        Some(t) => format!(
            "{},{},{},{},{}",
            num(t.median),
            num(t.min),
            num(t.q1),
            num(t.q3),
            num(t.max)
        ),
        None => ",,,,".into(),
    }
}

pub fn points_csv(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# loggp sweep: one row per point. figure: {}; slowdown_pct = 100 (figure / baseline {} - 1); native: without the shim; baseline: virtual time on, every knob 0, armed (LOGGP_ARM, in every run with the shim): {}",
        figure_name(r),
        r.stat.name(),
        r.armed_text()
    );
    s.push_str("knob,value,x,unit,n,failed,median,min,q1,q3,max,slowdown_pct_median,slowdown_pct_min,slowdown_pct_q1,slowdown_pct_q3,slowdown_pct_max\n");
    let mut row = |knob: &str, unit: &str, p: &PointStats| {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            csv_field(knob),
            csv_field(&p.label),
            num(p.x),
            unit,
            p.time.map_or(0, |t| t.n),
            p.failed,
            summary_cols(p.time),
            summary_cols(p.slowdown)
        );
    };
    row("native", "", &r.native);
    row("baseline", "", &r.baseline);
    for c in &r.curves {
        for p in &c.points {
            row(&c.knob.name, c.knob.axis.unit(), p);
        }
    }
    s
}
