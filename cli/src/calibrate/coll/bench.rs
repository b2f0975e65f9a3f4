//! The output of `calibrate/collbench.c` (rows `op size rep t_ns late_ns`)
//! and its statistics (pure: no MPI).

use crate::calibrate::kernel::header_line;
use loggp_core::stats;
use std::collections::BTreeMap;

/// A repetition in which some rank reached the common start more than
/// this late (ns) started skewed: left out (see [`Timing::of`]).
pub const LATE_NS: f64 = 1_000.0;

/// Parsed kernel output.
#[derive(Clone, Debug, Default)]
pub struct BenchRaw {
    pub library: String,
    pub meta: BTreeMap<String, String>,
    /// `(op, size)` → `(t_ns, late_ns)` per repetition.
    pub rows: BTreeMap<(String, u64), Vec<(f64, f64)>>,
    /// size → time of one local reduction (ns) per repetition.
    pub gamma: BTreeMap<u64, Vec<f64>>,
}

impl BenchRaw {
    pub fn parse(text: &str) -> Result<BenchRaw, String> {
        let mut raw = BenchRaw::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if header_line(line, &mut raw.meta, &mut raw.library) {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let bad = || format!("collbench output line {}: cannot parse {line:?}", i + 1);
            if f.len() != 5 {
                return Err(bad());
            }
            let size: u64 = f[1].parse().map_err(|_| bad())?;
            f[2].parse::<u64>().map_err(|_| bad())?;
            let t: f64 = f[3].parse().map_err(|_| bad())?;
            let late: f64 = f[4].parse().map_err(|_| bad())?;
            if !t.is_finite() || !late.is_finite() {
                return Err(bad());
            }
            if f[0] == "gamma" {
                raw.gamma.entry(size).or_default().push(t);
            } else {
                raw.rows
                    .entry((f[0].to_string(), size))
                    .or_default()
                    .push((t, late));
            }
        }
        if raw.rows.is_empty() {
            return Err("collbench printed no measurements".into());
        }
        Ok(raw)
    }

    /// The timing of `op` at `size` (Barrier: size 0).
    pub fn timing(&self, op: &str, size: u64) -> Option<Timing> {
        Timing::of(self.rows.get(&(op.to_string(), size))?)
    }

    /// How disturbed the run was by other processes: the largest ratio
    /// median / 10th percentile over its (op, size) cells (a quiet run
    /// gives about 1.0–1.5; a run that shared its cores for a stretch
    /// gives far more), as `Raw::disturbance` does for PRTT.
    pub fn disturbance(&self) -> f64 {
        self.rows
            .values()
            .filter_map(|v| {
                let t: Vec<(f64, f64)> = v.clone();
                let s = Timing::of(&t)?;
                (s.p10 > 0.0).then(|| s.median / s.p10)
            })
            .fold(1.0, f64::max)
    }

    /// γ in ns per byte at `size`: median time of one local reduction of
    /// `size` bytes, divided by `size`.
    pub fn gamma(&self, size: u64) -> Option<f64> {
        let v = self.gamma.get(&size)?;
        Some(stats::median(v)? / size.max(1) as f64)
    }
}

/// The timing of `op` at `size` over several runs of one setting: the one
/// with the smallest median (other processes only ever add time, so the
/// smallest median is the least disturbed run), with the run count in `runs`.
pub fn least_disturbed(runs: &[&BenchRaw], op: &str, size: u64) -> Option<Timing> {
    let all: Vec<Timing> = runs.iter().filter_map(|r| r.timing(op, size)).collect();
    let n = all.len();
    all.into_iter()
        .min_by(|a, b| a.median.total_cmp(&b.median))
        .map(|t| Timing { runs: n, ..t })
}

/// Statistics of one (op, size) in one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Repetitions used.
    pub n: usize,
    pub median: f64,
    /// Robust σ: 1.4826 · MAD.
    pub sigma: f64,
    pub p10: f64,
    pub p90: f64,
    /// Repetitions that started late (some rank after the common start by
    /// more than [`LATE_NS`]).
    pub late: usize,
    /// True when most repetitions started late, so all were used.
    pub mostly_late: bool,
    /// Runs this was chosen from (see [`least_disturbed`]).
    pub runs: usize,
}

impl Timing {
    /// Median and spread of the repetitions that started together; when
    /// fewer than half did (an oversubscribed run), of all of them, and
    /// `mostly_late` says so.
    pub fn of(rows: &[(f64, f64)]) -> Option<Timing> {
        let on_time: Vec<f64> = rows
            .iter()
            .filter(|r| r.1 <= LATE_NS)
            .map(|r| r.0)
            .collect();
        let late = rows.len() - on_time.len();
        let mostly_late = on_time.len() * 2 < rows.len();
        let v: Vec<f64> = if mostly_late {
            rows.iter().map(|r| r.0).collect()
        } else {
            on_time
        };
        let median = stats::median(&v)?;
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        // nearest-rank quantile at `pct` percent
        let q = |pct: usize| sorted[((sorted.len() - 1) * pct + 50) / 100];
        Some(Timing {
            n: v.len(),
            median,
            sigma: stats::mad(&v)? * stats::MAD_TO_SIGMA,
            p10: q(10),
            p90: q(90),
            late,
            mostly_late,
            runs: 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# loggp-collbench\n# library: Open MPI v4.1.4\n# meta np 2\n\
gamma 8 0 80 0\ngamma 8 1 40 0\ngamma 8 2 48 0\n\
bcast 8 0 1000 0\nbcast 8 1 1200 0\nbcast 8 2 9000 5000\nbcast 8 3 1100 0\n\
barrier 0 0 500 0\n";

    #[test]
    fn parses_rows_gamma_and_meta() {
        let r = BenchRaw::parse(TEXT).unwrap();
        assert_eq!(r.library, "Open MPI v4.1.4");
        assert_eq!(r.meta["np"], "2");
        assert_eq!(r.rows[&("bcast".to_string(), 8)].len(), 4);
        assert_eq!(r.gamma(8), Some(6.0)); // median 48 ns / 8 B
                                           // bcast: median 1100 / p10 1000; barrier 1
        assert!((r.disturbance() - 1.1).abs() < 1e-9);
        assert!(BenchRaw::parse("bcast 8 x 1 0\n").is_err());
        assert!(BenchRaw::parse("# only a header\n").is_err());
    }

    #[test]
    fn late_repetitions_are_left_out() {
        let r = BenchRaw::parse(TEXT).unwrap();
        let t = r.timing("bcast", 8).unwrap();
        assert_eq!(t.n, 3);
        assert_eq!(t.late, 1);
        assert!(!t.mostly_late);
        assert_eq!(t.median, 1100.0);
        assert_eq!(t.p10, 1000.0);
        assert_eq!(t.p90, 1200.0);
        assert!((t.sigma - 100.0 * stats::MAD_TO_SIGMA).abs() < 1e-9);
        assert!(r.timing("bcast", 16).is_none());
        // several runs: the smallest median wins
        let slow = BenchRaw::parse("bcast 8 0 5000 0\nbcast 8 1 5200 0\n").unwrap();
        let t = least_disturbed(&[&slow, &r], "bcast", 8).unwrap();
        assert_eq!((t.median, t.runs), (1100.0, 2));
        // mostly late: all kept, and said
        let t = Timing::of(&[(1.0, 5e3), (2.0, 5e3), (3.0, 0.0)]).unwrap();
        assert!(t.mostly_late);
        assert_eq!(t.n, 3);
        assert_eq!(t.median, 2.0);
    }
}
