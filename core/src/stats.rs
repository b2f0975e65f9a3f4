//! Robust statistics for the calibration report.
//!
//! A micro-benchmark on a shared, noisy machine produces mostly tight
//! repetitions and a few wild ones (a context switch, a timer interrupt).
//! The estimate of a quantity is therefore its **median**, its spread the
//! **median absolute deviation** (MAD), and repetitions are flagged as
//! outliers with the **modified Z-score** of Iglewicz and Hoaglin:
//!
//! ```text
//! M_i = 0.6745 · (x_i − median) / MAD,     outlier when |M_i| > 3.5
//! ```
//!
//! B. Iglewicz and D. C. Hoaglin, *How to Detect and Handle Outliers*,
//! ASQC Basic References in Quality Control, vol. 16, 1993, §3.1 (the
//! constant 0.6745 is the 0.75 quantile of the standard normal, so that
//! `MAD / 0.6745` estimates σ for normal data; 3.5 is their recommended
//! cut-off). The same rule is used by hyperfine.
//!
//! Every function takes a slice and returns `None` (or an empty result) for
//! empty input instead of panicking; NaNs are not expected and sort last.

/// Iglewicz & Hoaglin's constant: the 0.75 quantile of N(0, 1).
pub const MODIFIED_Z_SCALE: f64 = 0.6745;
/// Iglewicz & Hoaglin's recommended cut-off for `|M_i|`.
pub const MODIFIED_Z_CUTOFF: f64 = 3.5;
/// `MAD · 1.4826` estimates σ for normal data (`1.4826 ≈ 1 / 0.6745`).
pub const MAD_TO_SIGMA: f64 = 1.4826;

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of a sample: the middle value, or the mean of the two middle
/// values for an even count.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let v = sorted(xs);
    let k = v.len();
    Some(if k % 2 == 1 {
        v[k / 2]
    } else {
        0.5 * (v[k / 2 - 1] + v[k / 2])
    })
}

/// Median absolute deviation, `MAD = median(|x_i − median(x)|)` (raw, not
/// scaled to σ; multiply by [`MAD_TO_SIGMA`] for that).
pub fn mad(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// Arithmetic mean, `Σ x_i / n`.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Sample standard deviation with Bessel's correction,
/// `sqrt(Σ (x_i − mean)² / (n − 1))`; `0` for a single value.
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if xs.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Modified Z-scores `M_i = 0.6745 (x_i − median) / MAD` (Iglewicz &
/// Hoaglin 1993). When more than half the values are equal the MAD is 0;
/// then, as in their note and IBM's SPSS documentation, the mean absolute
/// deviation is used instead: `M_i = (x_i − median) / (1.253314 · MeanAD)`
/// (`1.253314 ≈ sqrt(π/2)` makes MeanAD estimate σ). If both are 0 every
/// value equals the median and every score is 0.
pub fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let (Some(m), Some(d)) = (median(xs), mad(xs)) else {
        return Vec::new();
    };
    if d > 0.0 {
        return xs.iter().map(|x| MODIFIED_Z_SCALE * (x - m) / d).collect();
    }
    let mean_ad = xs.iter().map(|x| (x - m).abs()).sum::<f64>() / xs.len() as f64;
    if mean_ad > 0.0 {
        xs.iter().map(|x| (x - m) / (1.253_314 * mean_ad)).collect()
    } else {
        vec![0.0; xs.len()]
    }
}

/// Outlier flags: `|M_i| > 3.5` ([`MODIFIED_Z_CUTOFF`]).
pub fn outliers(xs: &[f64]) -> Vec<bool> {
    modified_z_scores(xs)
        .into_iter()
        .map(|z| z.abs() > MODIFIED_Z_CUTOFF)
        .collect()
}

/// What the report shows for one measured quantity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Repetitions.
    pub n: usize,
    /// The estimate.
    pub median: f64,
    /// Raw MAD.
    pub mad: f64,
    /// Mean of the repetitions that are not outliers.
    pub mean: f64,
    /// Sample std of the repetitions that are not outliers.
    pub std: f64,
    /// Repetitions flagged by the modified Z-score.
    pub outliers: usize,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// Summarises a sample; `None` when empty.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        let median = median(xs)?;
        let flags = outliers(xs);
        let kept: Vec<f64> = xs
            .iter()
            .zip(&flags)
            .filter(|(_, &o)| !o)
            .map(|(&x, _)| x)
            .collect();
        let v = sorted(xs);
        Some(Summary {
            n: xs.len(),
            median,
            mad: mad(xs)?,
            mean: mean(&kept).unwrap_or(median),
            std: std_dev(&kept).unwrap_or(0.0),
            outliers: flags.iter().filter(|&&o| o).count(),
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// León et al.'s percent error (their eq. 10): `|v_i − v_o| / v · 100`,
/// where `v` is the requested (In⁼) or added (In⁺) value. `None` when the
/// requested value is 0 (no error is defined; León leaves those rows blank).
pub fn percent_error(requested: f64, measured: f64) -> Option<f64> {
    (requested != 0.0).then(|| (requested - measured).abs() / requested.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn mad_by_hand() {
        // median 3; deviations 2,1,0,1,97 -> sorted 0,1,1,2,97 -> MAD 1
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some(1.0));
        assert_eq!(mad(&[5.0, 5.0, 5.0]), Some(0.0));
    }

    #[test]
    fn mean_and_std_by_hand() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(mean(&xs).unwrap(), 5.0));
        // Σ(x-5)² = 32, n-1 = 7
        assert!(close(std_dev(&xs).unwrap(), (32.0f64 / 7.0).sqrt()));
        assert_eq!(std_dev(&[1.0]), Some(0.0));
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn modified_z_matches_formula() {
        let xs = [1.0, 2.0, 3.0, 4.0, 100.0];
        let z = modified_z_scores(&xs);
        // median 3, MAD 1
        assert!(close(z[0], 0.6745 * -2.0));
        assert!(close(z[4], 0.6745 * 97.0));
        assert_eq!(outliers(&xs), vec![false, false, false, false, true]);
    }

    #[test]
    fn modified_z_with_zero_mad_uses_mean_absolute_deviation() {
        // More than half equal: MAD = 0. MeanAD = 10/5 = 2.
        let xs = [5.0, 5.0, 5.0, 5.0, 15.0];
        let z = modified_z_scores(&xs);
        assert!(close(z[4], 10.0 / (1.253_314 * 2.0)));
        assert!(outliers(&xs)[4]);
        assert_eq!(modified_z_scores(&[1.0, 1.0]), vec![0.0, 0.0]);
        assert!(modified_z_scores(&[]).is_empty());
    }

    #[test]
    fn no_outliers_in_a_tight_sample() {
        let xs: Vec<f64> = (0..50).map(|i| 100.0 + f64::from(i % 7)).collect();
        assert!(outliers(&xs).iter().all(|&o| !o));
    }

    #[test]
    fn summary_drops_outliers_from_mean_only() {
        let xs = [10.0, 11.0, 9.0, 10.0, 10.5, 9.5, 1000.0];
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.n, 7);
        assert_eq!(s.outliers, 1);
        assert!(close(s.median, 10.0));
        assert!(close(s.mean, 10.0));
        assert_eq!(s.max, 1000.0);
        assert!(s.std < 1.0);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn percent_error_is_leons_eq_10() {
        assert!(close(percent_error(10.0, 10.69).unwrap(), 6.9));
        assert!(close(percent_error(20.0, 19.0).unwrap(), 5.0));
        assert_eq!(percent_error(0.0, 1.0), None);
    }
}
