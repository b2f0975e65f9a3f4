//! JSON exporter: `sweep.json`, everything a sweep produced. serde_json
//! writes non-finite numbers as `null`.

use super::stats::Summary;
use super::{
    Point, PointStats, Report, Sensitivity, CONFIDENCE, RESAMPLES, SEED, THRESHOLD_PCT,
    TOLERANCE_PCT,
};
use crate::json::Pairs;
use loggp_core::tolerance::Tolerance;
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
    /// The levels of the tolerance, in %.
    tolerance_pct: [f64; 3],
    /// Confidence of every interval.
    confidence: f64,
    /// How the intervals are made.
    methods: Methods,
    /// `--precision` (± % of the baseline per unit) and `--max-runs`.
    precision_pct: Option<f64>,
    max_runs: Option<usize>,
    /// Whether every sensitivity reached `--precision`.
    precision_reached: Option<bool>,
    /// The smallest slowdown (%) two points of the baseline's spread can
    /// be told apart by, with the baseline's runs.
    resolution_pct: Option<f64>,
    /// Without the shim.
    native: JsonPoint<'a>,
    /// Virtual time on, every knob 0, the knobs of `armed` armed.
    baseline: JsonPoint<'a>,
    /// `LOGGP_ARM` of every run with the shim, the baseline's included
    /// (null: nothing armed).
    armed: Option<&'a str>,
    /// Baseline against native.
    emulation_cost: Option<JsonCost>,
    knobs: Vec<JsonKnob<'a>>,
    runs: Vec<JsonRun<'a>>,
}

#[derive(Serialize)]
struct Methods {
    sensitivity: &'static str,
    tolerance: &'static str,
    resolution: &'static str,
    bootstrap_resamples: usize,
    bootstrap_seed: u64,
}

#[derive(Serialize)]
struct JsonCost {
    /// The statistic of the native runs and of the baseline.
    native: f64,
    baseline: f64,
    /// `100 (baseline / native - 1)`.
    cost_pct: f64,
}

#[derive(Serialize)]
struct JsonSensitivity {
    /// Figure per unit, by the point statistic, with the interval.
    slope_per_unit: f64,
    lo: f64,
    hi: f64,
    /// The same in % of the baseline per unit.
    pct_per_unit: f64,
    pct_lo: f64,
    pct_hi: f64,
    /// Runs of the baseline and of the first value.
    n_baseline: usize,
    n_first: usize,
    /// The first value: the slope is measured from 0 to it.
    to_x: f64,
    /// Least squares through the same runs with the t-interval.
    ols: Option<JsonOls>,
}

#[derive(Serialize)]
struct JsonOls {
    slope_per_unit: f64,
    lo: f64,
    hi: f64,
    df: usize,
}

impl From<&Sensitivity> for JsonSensitivity {
    fn from(s: &Sensitivity) -> Self {
        let (p, plo, phi) = s.pct();
        JsonSensitivity {
            slope_per_unit: s.slope.value,
            lo: s.slope.lo,
            hi: s.slope.hi,
            pct_per_unit: p,
            pct_lo: plo,
            pct_hi: phi,
            n_baseline: s.n.0,
            n_first: s.n.1,
            to_x: s.x1,
            ols: s.ols.map(|c| JsonOls {
                slope_per_unit: c.slope,
                lo: c.lo(),
                hi: c.hi(),
                df: c.df,
            }),
        }
    }
}

#[derive(Serialize)]
struct JsonTolerance {
    slowdown_pct: f64,
    /// `null`: not reached within the sweep.
    value: Option<f64>,
    /// `null`: the interval is open at that end (`hi`: in more than 2.5 %
    /// of the resamples the level is not reached within the sweep).
    lo: Option<f64>,
    hi: Option<f64>,
}

impl From<&Tolerance> for JsonTolerance {
    fn from(t: &Tolerance) -> Self {
        JsonTolerance {
            slowdown_pct: t.level_pct,
            value: t.value,
            lo: t.lo,
            hi: t.hi,
        }
    }
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
    /// The selection of a targeted knob (`inter`, `pairs=0:1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
    /// Further variables of the knob's runs (a distribution, the seed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    with: Vec<String>,
    unit: &'static str,
    slope_per_unit: Option<f64>,
    slowdown_pct_per_unit: Option<f64>,
    r2: Option<f64>,
    crossing: Option<f64>,
    sensitivity: Option<JsonSensitivity>,
    tolerance: Vec<JsonTolerance>,
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
            target: c.knob.target.as_deref(),
            with: c
                .knob
                .extra
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            unit: c.knob.axis.unit(),
            slope_per_unit: c.fit.map(|f| f.slope),
            slowdown_pct_per_unit: c.fit.zip(base).map(|(f, b)| 100.0 * f.slope / b),
            r2: c.fit.map(|f| f.r2),
            crossing: c.crossing,
            sensitivity: c.sensitivity.as_ref().map(JsonSensitivity::from),
            tolerance: c.tolerance.iter().map(JsonTolerance::from).collect(),
            points: c.points.iter().map(JsonPoint::from).collect(),
        })
        .collect();
    let runs = r
        .runs
        .iter()
        .map(|run| {
            let (knob, value) = match run.point {
                Point::Native => ("native", ""),
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
        tolerance_pct: TOLERANCE_PCT,
        confidence: CONFIDENCE,
        methods: Methods {
            sensitivity: "(stat(first value) - stat(baseline)) / x1, percentile bootstrap over both points' runs; ols: least squares through the same runs, t-interval b ± t(0.975, n-2) s/sqrt(Sxx)",
            tolerance: "first crossing of the slowdown curve (statistic per point, linear between points); percentile bootstrap over each point's runs",
            resolution: "95th percentile of 100 |stat(A) - stat(B)| / stat(baseline) over pairs of bootstrap resamples A, B of the baseline's runs",
            bootstrap_resamples: RESAMPLES,
            bootstrap_seed: SEED,
        },
        precision_pct: r.precision,
        max_runs: r.max_runs,
        precision_reached: r.precise(),
        resolution_pct: r.resolution_pct(r.metric.is_some()),
        native: JsonPoint::from(&r.native),
        baseline: JsonPoint::from(&r.baseline),
        armed: r.armed.as_deref(),
        emulation_cost: r.emulation_cost().map(|c| JsonCost {
            native: c.native,
            baseline: c.baseline,
            cost_pct: c.pct(),
        }),
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
