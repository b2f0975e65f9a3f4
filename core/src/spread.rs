//! The shape of a varied knob (`LOGGP_L_DIST`, `LOGGP_O_S_DIST`,
//! `LOGGP_O_R_DIST`): what a sample of realised per-message delays shows
//! (mean, median, standard deviation, quartiles, 5th and 95th percentiles,
//! the empirical CDF), and what the requested distribution implies for the
//! same figures, truncated at zero as the shim truncates its draws
//! ([`crate::dist::Dist::draw`] draws again below zero).
//!
//! Quantiles of a sample are Hyndman and Fan's type 7 (linear interpolation
//! between order statistics, the default of R and NumPy). The implied
//! figures are exact for `fixed`, `uniform:W` and `exp`; for `normal:S`
//! they use the truncated normal's closed-form mean and variance and its
//! quantile `μ + σ Φ⁻¹(Φ(α) + p (1 − Φ(α)))`, `α = −μ/σ`, with Φ from the
//! complementary error function (Numerical Recipes' `erfcc`, fractional
//! error below 1.2·10⁻⁷) and Φ⁻¹ by bisection; for `empirical:FILE` they
//! are the figures of the file's shifted samples that are not below zero
//! (each equally likely, as the shim picks them).

use crate::dist::Dist;

/// The figures the report shows for one distribution, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub mean: f64,
    pub median: f64,
    /// Standard deviation (a sample's with Bessel's correction).
    pub sd: f64,
    pub p5: f64,
    pub p25: f64,
    pub p75: f64,
    pub p95: f64,
}

impl Shape {
    /// Interquartile range `p75 − p25`.
    pub fn iqr(&self) -> f64 {
        self.p75 - self.p25
    }

    /// The figures of a sample; `None` when it is empty or not finite.
    pub fn of_sample(xs: &[f64]) -> Option<Shape> {
        if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let sd = if v.len() < 2 {
            0.0
        } else {
            (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        let q = |p| quantile_sorted(&v, p);
        Some(Shape {
            mean,
            median: q(0.5),
            sd,
            p5: q(0.05),
            p25: q(0.25),
            p75: q(0.75),
            p95: q(0.95),
        })
    }

    /// What `dist` around `value` ns implies, truncated at zero.
    pub fn implied(dist: &Dist, value: f64) -> Shape {
        let value = value.max(0.0);
        match dist {
            Dist::Fixed => Shape::point(value),
            Dist::Uniform(w) if *w > 0.0 => {
                let (a, b) = ((value - w).max(0.0), value + w);
                Shape::from_quantile(|p| a + p * (b - a), (a + b) / 2.0, (b - a) / 12f64.sqrt())
            }
            Dist::Normal(s) if *s > 0.0 => {
                let alpha = -value / s;
                let z = 1.0 - phi(alpha);
                let lambda = pdf(alpha) / z;
                let mean = value + s * lambda;
                let var = s * s * (1.0 + alpha * lambda - lambda * lambda);
                let base = phi(alpha);
                Shape::from_quantile(
                    |p| value + s * inv_phi(base + p * z),
                    mean,
                    var.max(0.0).sqrt(),
                )
            }
            Dist::Exp if value > 0.0 => {
                Shape::from_quantile(|p| -value * (1.0 - p).ln(), value, value)
            }
            Dist::Empirical(dev, _) => {
                let kept: Vec<f64> = dev
                    .iter()
                    .map(|d| value + d)
                    .filter(|x| *x >= 0.0)
                    .collect();
                let mut s = Shape::of_sample(&kept).unwrap_or(Shape::point(0.0));
                // the shim picks among the samples: their population spread
                let k = kept.len() as f64;
                if k > 1.0 {
                    s.sd *= ((k - 1.0) / k).sqrt();
                }
                s
            }
            _ => Shape::point(value),
        }
    }

    fn point(v: f64) -> Shape {
        Shape {
            mean: v,
            median: v,
            sd: 0.0,
            p5: v,
            p25: v,
            p75: v,
            p95: v,
        }
    }

    fn from_quantile(q: impl Fn(f64) -> f64, mean: f64, sd: f64) -> Shape {
        Shape {
            mean,
            median: q(0.5),
            sd,
            p5: q(0.05),
            p25: q(0.25),
            p75: q(0.75),
            p95: q(0.95),
        }
    }
}

/// The type-7 quantile of a sorted, non-empty sample.
pub fn quantile_sorted(v: &[f64], p: f64) -> f64 {
    let h = (v.len() - 1) as f64 * p.clamp(0.0, 1.0);
    // the largest order statistic at or below h (h ≥ 0, < len)
    let lo = (0..v.len()).rev().find(|&i| i as f64 <= h).unwrap_or(0);
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// The empirical CDF of a sample as steps `(x, fraction ≤ x)`, sorted;
/// at most `max_points` points (every k-th order statistic, the last kept).
pub fn ecdf(xs: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 || max_points == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(max_points).max(1);
    let mut out: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (v[i], (i + 1) as f64 / n as f64))
        .collect();
    if out.last().map(|p| p.1) != Some(1.0) {
        out.push((v[n - 1], 1.0));
    }
    out
}

/// The CDF that `dist` around `value` implies, at `points` values of x
/// between `lo` and `hi` (truncated at zero): `(x, P(X ≤ x))`.
pub fn implied_cdf(dist: &Dist, value: f64, lo: f64, hi: f64, points: usize) -> Vec<(f64, f64)> {
    let value = value.max(0.0);
    let cdf = |x: f64| -> f64 {
        if x < 0.0 {
            return 0.0;
        }
        match dist {
            Dist::Uniform(w) if *w > 0.0 => {
                let (a, b) = ((value - w).max(0.0), value + w);
                ((x - a) / (b - a)).clamp(0.0, 1.0)
            }
            Dist::Normal(s) if *s > 0.0 => {
                let base = phi(-value / s);
                ((phi((x - value) / s) - base) / (1.0 - base)).clamp(0.0, 1.0)
            }
            Dist::Exp if value > 0.0 => 1.0 - (-x / value).exp(),
            Dist::Empirical(dev, _) => {
                let kept: Vec<f64> = dev
                    .iter()
                    .map(|d| value + d)
                    .filter(|v| *v >= 0.0)
                    .collect();
                if kept.is_empty() {
                    1.0
                } else {
                    kept.iter().filter(|v| **v <= x).count() as f64 / kept.len() as f64
                }
            }
            _ => {
                if x >= value {
                    1.0
                } else {
                    0.0
                }
            }
        }
    };
    let points = points.max(2);
    (0..points)
        .map(|i| {
            let x = lo + (hi - lo) * i as f64 / (points - 1) as f64;
            (x, cdf(x))
        })
        .collect()
}

/// Standard normal density.
fn pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Complementary error function (Numerical Recipes, `erfcc`: a Chebyshev
/// fit, fractional error below 1.2·10⁻⁷ everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Standard normal CDF Φ.
pub fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Φ⁻¹ by bisection on [−40, 40] (Φ is monotone; 100 halvings).
pub fn inv_phi(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if phi(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn normal_cdf_and_inverse() {
        assert!(close(phi(0.0), 0.5, 1e-7));
        assert!(close(phi(1.0), 0.841_344_746, 1e-7));
        assert!(close(phi(-1.96), 0.024_997_9, 1e-7));
        assert!(close(inv_phi(0.75), 0.674_489_75, 1e-6));
        assert!(close(inv_phi(0.05), -1.644_853_6, 1e-6));
    }

    #[test]
    fn sample_figures() {
        let s = Shape::of_sample(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        assert!(close(s.sd, 2.5f64.sqrt(), 1e-12));
        assert_eq!((s.p25, s.p75, s.iqr()), (2.0, 4.0, 2.0));
        assert!(close(s.p5, 1.2, 1e-12));
        assert!(close(s.p95, 4.8, 1e-12));
        assert!(Shape::of_sample(&[]).is_none());
        assert!(Shape::of_sample(&[1.0, f64::NAN]).is_none());
        assert_eq!(Shape::of_sample(&[7.0]).unwrap().sd, 0.0);
    }

    #[test]
    fn implied_by_each_distribution() {
        let f = Shape::implied(&Dist::Fixed, 20_000.0);
        assert_eq!((f.mean, f.sd, f.iqr()), (20_000.0, 0.0, 0.0));
        // uniform:5us around 20us: [15, 25] us
        let u = Shape::implied(&Dist::Uniform(5_000.0), 20_000.0);
        assert!(close(u.iqr(), 5_000.0, 1e-9) && close(u.p5, 15_500.0, 1e-9));
        assert!(close(u.sd, 10_000.0 / 12f64.sqrt(), 1e-9));
        // uniform truncated: [0, 8] us when 3us ± 5us
        let ut = Shape::implied(&Dist::Uniform(5_000.0), 3_000.0);
        assert!(close(ut.mean, 4_000.0, 1e-9) && close(ut.median, 4_000.0, 1e-9));
        // normal:5us far from zero: IQR 2·0.6745·5 us, sd 5 us
        let n = Shape::implied(&Dist::Normal(5_000.0), 20_000.0);
        assert!(close(n.iqr(), 6_744.9, 1.0), "{n:?}");
        assert!(close(n.sd, 5_000.0, 2.0) && close(n.mean, 20_000.0, 2.0));
        assert!(close(n.p95, 20_000.0 + 1.644_854 * 5_000.0, 1.0));
        // normal:5us at 0: the half-normal, mean σ√(2/π), sd σ√(1 − 2/π)
        let h = Shape::implied(&Dist::Normal(5_000.0), 0.0);
        assert!(close(
            h.mean,
            5_000.0 * (2.0 / std::f64::consts::PI).sqrt(),
            1.0
        ));
        assert!(close(
            h.sd,
            5_000.0 * (1.0 - 2.0 / std::f64::consts::PI).sqrt(),
            1.0
        ));
        assert!(close(h.median, 5_000.0 * 0.674_49, 1.0), "{h:?}");
        // exp: mean = sd = L, median L ln 2, IQR L ln 3
        let e = Shape::implied(&Dist::Exp, 20_000.0);
        assert!(close(e.mean, 20_000.0, 1e-9) && close(e.sd, 20_000.0, 1e-9));
        assert!(close(e.median, 20_000.0 * 2f64.ln(), 1e-6));
        assert!(close(e.iqr(), 20_000.0 * 3f64.ln(), 1e-6));
        // empirical 10 and 30 us around 20 us: two equal halves
        let em = Shape::implied(
            &Dist::Empirical(vec![-10_000.0, 10_000.0], "f".into()),
            20_000.0,
        );
        assert!(close(em.mean, 20_000.0, 1e-9) && close(em.sd, 10_000.0, 1e-9));
        // ... around 5 us: 15 us only (−5 is drawn again)
        let em = Shape::implied(
            &Dist::Empirical(vec![-10_000.0, 10_000.0], "f".into()),
            5_000.0,
        );
        assert_eq!((em.mean, em.sd), (15_000.0, 0.0));
    }

    #[test]
    fn implied_matches_the_shims_own_draws() {
        // the figures agree with 200 000 draws of the shim's generator
        for (d, v) in [
            (Dist::Normal(5_000.0), 20_000u64),
            (Dist::Normal(5_000.0), 2_000),
            (Dist::Uniform(5_000.0), 3_000),
            (Dist::Exp, 20_000),
        ] {
            let mut rng = crate::dist::Rng::new(1, 0, 7);
            let xs: Vec<f64> = (0..200_000).map(|_| d.draw(v, &mut rng) as f64).collect();
            let s = Shape::of_sample(&xs).unwrap();
            let i = Shape::implied(&d, v as f64);
            let tol = 0.02 * i.sd.max(1.0) + 2.0;
            for (a, b, what) in [
                (s.mean, i.mean, "mean"),
                (s.median, i.median, "median"),
                (s.sd, i.sd, "sd"),
                (s.p5, i.p5, "p5"),
                (s.iqr(), i.iqr(), "iqr"),
                (s.p95, i.p95, "p95"),
            ] {
                assert!(
                    close(a, b, tol),
                    "{d:?} at {v}: {what} drawn {a} implied {b}"
                );
            }
        }
    }

    #[test]
    fn ecdf_and_implied_cdf() {
        let e = ecdf(&[3.0, 1.0, 2.0, 4.0], 10);
        assert_eq!(e, vec![(1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]);
        let e = ecdf(&(0..1000).map(f64::from).collect::<Vec<_>>(), 100);
        assert!(e.len() <= 101 && e.last() == Some(&(999.0, 1.0)));
        assert!(ecdf(&[], 10).is_empty());
        let c = implied_cdf(&Dist::Normal(5_000.0), 20_000.0, 0.0, 40_000.0, 5);
        assert!(close(c[2].1, 0.5, 1e-4) && c[0].1 == 0.0 && close(c[4].1, 1.0, 1e-4));
        let c = implied_cdf(&Dist::Fixed, 20_000.0, 0.0, 40_000.0, 3);
        assert_eq!(c, vec![(0.0, 0.0), (20_000.0, 1.0), (40_000.0, 1.0)]);
    }
}
