//! JSON exporter: `sweep.json`, everything a sweep produced. Written by
//! hand (no serde in this crate); non-finite numbers become `null`.

use super::stats::Summary;
use super::{Point, PointStats, Report, THRESHOLD_PCT};
use std::fmt::Write as _;

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn json_summary(t: Option<Summary>) -> String {
    match t {
        None => "null".into(),
        Some(t) => format!(
            "{{\"n\": {}, \"median\": {}, \"min\": {}, \"q1\": {}, \"q3\": {}, \"max\": {}}}",
            t.n,
            json_num(t.median),
            json_num(t.min),
            json_num(t.q1),
            json_num(t.q3),
            json_num(t.max)
        ),
    }
}

fn json_point(p: &PointStats) -> String {
    format!(
        "{{\"value\": {}, \"x\": {}, \"failed\": {}, \"figure\": {}, \"slowdown_pct\": {}}}",
        json_str(&p.label),
        json_num(p.x),
        p.failed,
        json_summary(p.time),
        json_summary(p.slowdown)
    )
}

pub fn json(r: &Report) -> String {
    let mut s = String::from("{\n");
    let cmd: Vec<String> = r.command.iter().map(|a| json_str(a)).collect();
    let _ = writeln!(s, "  \"command\": [{}],", cmd.join(", "));
    let _ = writeln!(s, "  \"mpi\": {},", json_str(r.mpi));
    let _ = writeln!(
        s,
        "  \"figure\": {},",
        json_str(if r.metric.is_some() {
            "metric"
        } else {
            "wall_s"
        })
    );
    let _ = writeln!(
        s,
        "  \"metric_regex\": {},",
        r.metric.as_deref().map_or("null".into(), json_str)
    );
    let _ = writeln!(s, "  \"repeat\": {},", r.repeat);
    let _ = writeln!(s, "  \"statistic\": {},", json_str(r.stat.name()));
    let _ = writeln!(s, "  \"complete\": {},", r.complete);
    let bg: Vec<String> = r
        .background
        .iter()
        .map(|(k, v)| format!("{}: {}", json_str(k), json_str(v)))
        .collect();
    let _ = writeln!(s, "  \"environment\": {{{}}},", bg.join(", "));
    let _ = writeln!(s, "  \"threshold_pct\": {},", json_num(THRESHOLD_PCT));
    let _ = writeln!(s, "  \"baseline\": {},", json_point(&r.baseline));
    s.push_str("  \"knobs\": [\n");
    for (i, c) in r.curves.iter().enumerate() {
        let base = r.baseline.time.map(|t| r.stat.of(&t));
        let (slope, r2, pct) = match (c.fit, base) {
            (Some(f), Some(b)) => (
                json_num(f.slope),
                json_num(f.r2),
                json_num(100.0 * f.slope / b),
            ),
            (Some(f), None) => (json_num(f.slope), json_num(f.r2), "null".into()),
            _ => ("null".into(), "null".into(), "null".into()),
        };
        let pts: Vec<String> = c
            .points
            .iter()
            .map(|p| format!("      {}", json_point(p)))
            .collect();
        let _ = write!(
            s,
            "    {{\"knob\": {}, \"variable\": {}, \"unit\": {}, \"slope_per_unit\": {slope}, \"slowdown_pct_per_unit\": {pct}, \"r2\": {r2}, \"crossing\": {},\n     \"points\": [\n{}\n    ]}}{}\n",
            json_str(&c.knob.name),
            json_str(c.knob.var),
            json_str(c.knob.axis.unit()),
            c.crossing.map_or("null".into(), json_num),
            pts.join(",\n"),
            if i + 1 < r.curves.len() { "," } else { "" }
        );
    }
    s.push_str("  ],\n  \"runs\": [\n");
    let runs: Vec<String> = r
        .runs
        .iter()
        .map(|run| {
            let (knob, value) = match run.point {
                Point::Baseline => ("baseline".to_string(), "0".to_string()),
                Point::Value(k, v) => (
                    r.curves[k].knob.name.clone(),
                    r.curves[k].knob.values[v].text.clone(),
                ),
            };
            format!(
                "    {{\"knob\": {}, \"value\": {}, \"repeat\": {}, \"exit_code\": {}, \"wall_s\": {}, \"metric\": {}, \"error\": {}}}",
                json_str(&knob),
                json_str(&value),
                run.repeat,
                run.end.code(),
                json_num(run.wall),
                run.metric.map_or("null".into(), json_num),
                run.error.as_deref().map_or("null".into(), json_str)
            )
        })
        .collect();
    s.push_str(&runs.join(",\n"));
    s.push_str("\n  ]\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        assert_eq!(json_num(f64::NAN), "null");
        assert_eq!(json_num(2.5), "2.5");
    }
}
