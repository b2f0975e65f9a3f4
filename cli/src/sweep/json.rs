//! JSON exporter: `sweep.json`, everything a sweep produced. serde_json
//! writes non-finite numbers as `null`.

use super::stats::Summary;
use super::{Point, PointStats, Report, THRESHOLD_PCT};
use crate::json::Pairs;
use serde::Serialize;

#[derive(Serialize)]
struct SweepFile<'a> {
    command: &'a [String],
    mpi: &'a str,
    /// `metric` or `wall_s`.
    figure: &'static str,
    metric_regex: Option<&'a str>,
    repeat: usize,
    statistic: &'static str,
    complete: bool,
    /// The background `LOGGP_*` variables, in their order.
    environment: Pairs<&'a str, &'a str>,
    threshold_pct: f64,
    baseline: JsonPoint<'a>,
    knobs: Vec<JsonKnob<'a>>,
    runs: Vec<JsonRun<'a>>,
}

#[derive(Serialize)]
struct JsonPoint<'a> {
    value: &'a str,
    x: f64,
    failed: usize,
    figure: Option<Summary>,
    slowdown_pct: Option<Summary>,
}

impl<'a> From<&'a PointStats> for JsonPoint<'a> {
    fn from(p: &'a PointStats) -> Self {
        JsonPoint {
            value: &p.label,
            x: p.x,
            failed: p.failed,
            figure: p.time,
            slowdown_pct: p.slowdown,
        }
    }
}

#[derive(Serialize)]
struct JsonKnob<'a> {
    knob: &'a str,
    variable: &'a str,
    unit: &'static str,
    slope_per_unit: Option<f64>,
    slowdown_pct_per_unit: Option<f64>,
    r2: Option<f64>,
    crossing: Option<f64>,
    points: Vec<JsonPoint<'a>>,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    knob: &'a str,
    value: &'a str,
    repeat: usize,
    exit_code: i32,
    wall_s: f64,
    metric: Option<f64>,
    error: Option<&'a str>,
}

pub fn json(r: &Report) -> String {
    let base = r.baseline.time.map(|t| r.stat.of(&t));
    let knobs = r
        .curves
        .iter()
        .map(|c| JsonKnob {
            knob: &c.knob.name,
            variable: c.knob.var,
            unit: c.knob.axis.unit(),
            slope_per_unit: c.fit.map(|f| f.slope),
            slowdown_pct_per_unit: c.fit.zip(base).map(|(f, b)| 100.0 * f.slope / b),
            r2: c.fit.map(|f| f.r2),
            crossing: c.crossing,
            points: c.points.iter().map(JsonPoint::from).collect(),
        })
        .collect();
    let runs = r
        .runs
        .iter()
        .map(|run| {
            let (knob, value) = match run.point {
                Point::Baseline => ("baseline", "0"),
                Point::Value(k, v) => (
                    r.curves[k].knob.name.as_str(),
                    r.curves[k].knob.values[v].text.as_str(),
                ),
            };
            JsonRun {
                knob,
                value,
                repeat: run.repeat,
                exit_code: run.end.code(),
                wall_s: run.wall,
                metric: run.metric,
                error: run.error.as_deref(),
            }
        })
        .collect();
    let file = SweepFile {
        command: &r.command,
        mpi: r.mpi,
        figure: if r.metric.is_some() {
            "metric"
        } else {
            "wall_s"
        },
        metric_regex: r.metric.as_deref(),
        repeat: r.repeat,
        statistic: r.stat.name(),
        complete: r.complete,
        environment: Pairs(
            r.background
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        ),
        threshold_pct: THRESHOLD_PCT,
        baseline: JsonPoint::from(&r.baseline),
        knobs,
        runs,
    };
    crate::json::pretty(&file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_are_null() {
        let v = serde_json::to_value(JsonRun {
            knob: "a\"b\\c\nd\u{1}",
            value: "0",
            repeat: 1,
            exit_code: 0,
            wall_s: f64::NAN,
            metric: Some(f64::INFINITY),
            error: None,
        })
        .unwrap();
        assert_eq!(v["wall_s"], serde_json::Value::Null);
        assert_eq!(v["metric"], serde_json::Value::Null);
        assert_eq!(v["knob"], "a\"b\\c\nd\u{1}");
    }
}
