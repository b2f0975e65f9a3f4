//! Latency sensitivity and tolerance from repeated runs (the statistics of
//! `loggp sweep`), on plain numbers.
//!
//! Shen, Hoefler et al. (LLAMP, SC'24) define, per LogGP parameter, the
//! **sensitivity** (added run time per unit of the parameter, at the
//! baseline) and the **tolerance** (the added value at which the run time
//! has grown by 1 %, 2 %, 5 %). Here both are measured from runs:
//!
//! - the sensitivity is the slope from the baseline to the first measured
//!   value, `(stat(first) − stat(base)) / x₁`, with a percentile bootstrap
//!   interval ([`bootstrap_slope`]); with the median as statistic it
//!   shrugs off the wild runs of a shared machine, which the classical
//!   least-squares t-interval ([`slope_ci`], kept for comparison) does not;
//! - a tolerance is where the slowdown curve (one statistic per point,
//!   joined by straight lines) first reaches the level ([`crossing`]), with
//!   a percentile bootstrap interval that resamples the runs of each point
//!   ([`bootstrap_crossings`]);
//! - the resolution of a sweep is the smallest difference between two
//!   points that its repeats can tell from noise ([`bootstrap_resolution`];
//!   [`resolution`] is the normal-theory form for means).

/// `ln Γ(x)` for `x > 0`: Lanczos' approximation with `g = 7` and nine
/// coefficients (C. Lanczos, SIAM J. Numer. Anal. B 1, 1964; the
/// coefficient set of P. Godfrey), relative error below 1e-13, and the
/// reflection formula below 0.5.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) Γ(1-x) = π / sin(πx)
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function `I_x(a, b)`, by its continued
/// fraction evaluated with the modified Lentz method (Abramowitz & Stegun
/// 26.5.8; Lentz, Appl. Opt. 15, 1976), using the symmetry
/// `I_x(a, b) = 1 − I_{1−x}(b, a)` where the fraction converges slowly.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(b, a, 1.0 - x);
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp() / a;
    // f = 1 / (1 + d1 / (1 + d2 / (1 + ...))), d_{2m+1} and d_{2m} of A&S 26.5.8
    let tiny = 1e-300;
    // Lentz: f = b0 + a1/(b1 + a2/(b2 + ...)) with b0 = 0, a1 = 1, every
    // b_j = 1 and a_{j+1} = d_j; start from f0 = C0 = tiny, D0 = 0
    let mut f = tiny;
    let (mut c, mut d) = (tiny, 0.0f64);
    for i in 0..400 {
        let m = f64::from(i / 2);
        let num = if i == 0 {
            1.0
        } else if i % 2 == 0 {
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        } else {
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        };
        d = 1.0 + num * d;
        if d.abs() < tiny {
            d = tiny;
        }
        d = 1.0 / d;
        c = 1.0 + num / c;
        if c.abs() < tiny {
            c = tiny;
        }
        let step = c * d;
        f *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f
}

/// Student's t distribution function `P(T ≤ t)` with `df` degrees of
/// freedom: `1 − ½ I_{df/(df+t²)}(df/2, ½)` for `t ≥ 0`, by symmetry below.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`df > 0`,
/// `0 < p < 1`), by bisection on [`t_cdf`] to 1e-12.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0 && df > 0.0, "t_quantile({p}, {df})");
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
    }
    while hi - lo > 1e-12 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// A slope with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlopeCi {
    pub slope: f64,
    /// Intercept of the same fit (the mean at `x = 0` when the baseline is
    /// one of two groups).
    pub intercept: f64,
    /// Half the width of the interval: the slope ± this.
    pub half: f64,
    /// Points (runs) used.
    pub n: usize,
    /// Degrees of freedom, `n − 2`.
    pub df: usize,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

impl SlopeCi {
    pub fn lo(&self) -> f64 {
        self.slope - self.half
    }
    pub fn hi(&self) -> f64 {
        self.slope + self.half
    }
}

/// Least-squares slope of `y` on `x` over individual observations, with
/// the classical t-interval (e.g. Montgomery & Runger, *Applied Statistics
/// and Probability for Engineers*, §11.5; Draper & Smith, *Applied
/// Regression Analysis*, §1.4):
///
/// ```text
/// b = Sxy / Sxx,   s² = Σ (y_i − a − b x_i)² / (n − 2),
/// b ± t_{(1+level)/2, n−2} · s / √Sxx
/// ```
///
/// It assumes independent errors of equal variance at every x. With two
/// groups (the baseline at 0 and one value x₁) it is the difference of the
/// group means over x₁, and the interval is the pooled two-sample t-interval
/// divided by x₁. `None` with fewer than three points or fewer than two
/// distinct x.
pub fn slope_ci(points: &[(f64, f64)], level: f64) -> Option<SlopeCi> {
    let line = crate::fit::fit_line(points)?;
    let n = points.len();
    if n < 3 {
        return None;
    }
    let xm = points.iter().map(|p| p.0).sum::<f64>() / n as f64;
    let sxx: f64 = points.iter().map(|p| (p.0 - xm) * (p.0 - xm)).sum();
    let df = n - 2;
    let s2 = line.rss / df as f64;
    let t = t_quantile(0.5 + level / 2.0, df as f64);
    Some(SlopeCi {
        slope: line.slope,
        intercept: line.intercept,
        half: t * (s2 / sxx).sqrt(),
        n,
        df,
        level,
    })
}

/// The smallest difference between the means of two points of `n` runs
/// each, both spreading like `sample`, that a two-sided two-sample t-test
/// at `level` calls significant, in % of the sample's mean:
///
/// ```text
/// 100 · t_{(1+level)/2, 2n−2} · s · √(2/n) / x̄
/// ```
///
/// (the half-width of the pooled two-sample t-interval; with `n` the size
/// of `sample`). `None` with fewer than two values or a mean of 0.
pub fn resolution(sample: &[f64], level: f64) -> Option<f64> {
    let n = sample.len();
    if n < 2 {
        return None;
    }
    let mean = crate::stats::mean(sample)?;
    let s = crate::stats::std_dev(sample)?;
    if mean == 0.0 {
        return None;
    }
    let t = t_quantile(0.5 + level / 2.0, (2 * n - 2) as f64);
    Some(100.0 * t * s * (2.0 / n as f64).sqrt() / mean.abs())
}

/// The first x at which the curve `pts` (sorted by x) reaches `level`,
/// interpolating linearly between the two points that straddle it; the
/// first x when the curve starts at or above it; `None` when it never does.
pub fn crossing(pts: &[(f64, f64)], level: f64) -> Option<f64> {
    let first = pts.first()?;
    if first.1 >= level {
        return Some(first.0);
    }
    pts.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        (y0 < level && y1 >= level).then(|| x0 + (level - y0) / (y1 - y0) * (x1 - x0))
    })
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a 64-bit state advanced by a fixed odd
/// constant and scrambled; ample for resampling, and reproducible.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-shift (the bias,
    /// below n / 2⁶⁴, is immaterial here).
    pub fn below(&mut self, n: usize) -> usize {
        let wide = u128::from(self.next_u64()) * n as u128;
        usize::try_from(wide >> 64).unwrap_or(0)
    }
}

/// A tolerance: where the slowdown reaches a level, with an interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// The slowdown level, in %.
    pub level_pct: f64,
    /// The crossing of the measured curve; `None`: not reached.
    pub value: Option<f64>,
    /// Lower end of the interval (`None` when fewer than the lower
    /// percentile of the resamples reach the level at all).
    pub lo: Option<f64>,
    /// Upper end; `None`: in more than the upper tail of the resamples the
    /// level is not reached within the sweep, so the interval is open.
    pub hi: Option<f64>,
}

/// One point of a sweep for the bootstrap: its x and the figures of its
/// successful runs.
pub struct Group<'a> {
    pub x: f64,
    pub runs: &'a [f64],
}

/// Tolerances at each of `levels` (slowdown %, ascending or not), with a
/// percentile bootstrap interval at confidence `conf` (Efron & Tibshirani,
/// *An Introduction to the Bootstrap*, 1993, ch. 13), stratified by point.
///
/// `base` is the baseline's runs (x = 0), `points` the other points sorted
/// by x, `stat` the statistic that stands for a point (median, min). The
/// curve is `(0, 0)` then `(x_i, 100 (stat(point_i) / stat(base) − 1))`,
/// and the estimate is its [`crossing`]. Each of `resamples` replicates
/// draws every point's runs with replacement (the baseline's too) and takes
/// the crossing again, `+∞` when not reached; the interval is the
/// `(1−conf)/2` and `(1+conf)/2` order statistics of the replicates.
/// Points without runs are left out of the curve. The draws come from a
/// [`SplitMix64`] seeded with `seed`, so the result is reproducible.
pub fn bootstrap_crossings(
    base: &[f64],
    points: &[Group<'_>],
    stat: fn(&[f64]) -> f64,
    levels: &[f64],
    conf: f64,
    resamples: usize,
    seed: u64,
) -> Vec<Tolerance> {
    let curve = |base: &[f64], pts: &mut dyn Iterator<Item = (f64, Vec<f64>)>| {
        let b = stat(base);
        let mut c = vec![(0.0, 0.0)];
        for (x, runs) in pts {
            if !runs.is_empty() && b != 0.0 {
                c.push((x, 100.0 * (stat(&runs) / b - 1.0)));
            }
        }
        c
    };
    if base.is_empty() {
        return levels
            .iter()
            .map(|&l| Tolerance {
                level_pct: l,
                value: None,
                lo: None,
                hi: None,
            })
            .collect();
    }
    let measured = curve(base, &mut points.iter().map(|g| (g.x, g.runs.to_vec())));
    let mut rng = SplitMix64::new(seed);
    let draw = |rng: &mut SplitMix64, runs: &[f64]| -> Vec<f64> {
        (0..runs.len())
            .map(|_| runs[rng.below(runs.len())])
            .collect()
    };
    let mut reps: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); levels.len()];
    for _ in 0..resamples {
        let b = draw(&mut rng, base);
        let drawn: Vec<(f64, Vec<f64>)> = points
            .iter()
            .map(|g| (g.x, draw(&mut rng, g.runs)))
            .collect();
        let c = curve(&b, &mut drawn.into_iter());
        for (rep, &l) in reps.iter_mut().zip(levels) {
            rep.push(crossing(&c, l).unwrap_or(f64::INFINITY));
        }
    }
    levels
        .iter()
        .zip(reps)
        .map(|(&l, mut rep)| {
            rep.sort_by(f64::total_cmp);
            let (lo, hi) = if rep.is_empty() {
                (None, None)
            } else {
                let k = rep.len() as f64;
                #[allow(clippy::cast_possible_truncation)] // 0 <= q·k <= k: exact
                let at = |q: f64| {
                    let i = ((q * k).ceil() as usize).clamp(1, rep.len()) - 1;
                    Some(rep[i]).filter(|v| v.is_finite())
                };
                (at((1.0 - conf) / 2.0), at((1.0 + conf) / 2.0))
            };
            Tolerance {
                level_pct: l,
                value: crossing(&measured, l),
                lo,
                hi,
            }
        })
        .collect()
}

/// An estimate with a confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Half the width, `(hi − lo) / 2`.
    pub fn half(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }
}

/// Draws `runs.len()` values from `runs` with replacement.
fn resample(rng: &mut SplitMix64, runs: &[f64]) -> Vec<f64> {
    (0..runs.len())
        .map(|_| runs[rng.below(runs.len())])
        .collect()
}

/// The `(1−conf)/2` and `(1+conf)/2` order statistics of sorted replicates
/// (the percentile interval; `⌈q·B⌉`-th of `B`).
fn percentile_ends(sorted: &[f64], conf: f64) -> (f64, f64) {
    let k = sorted.len() as f64;
    #[allow(clippy::cast_possible_truncation)] // 0 <= q·k <= k: exact
    let at = |q: f64| sorted[((q * k).ceil() as usize).clamp(1, sorted.len()) - 1];
    (at((1.0 - conf) / 2.0), at((1.0 + conf) / 2.0))
}

/// The slope from the baseline to one value, by the statistic that stands
/// for a point: `b = (stat(first) − stat(base)) / x₁`, with a percentile
/// bootstrap interval at confidence `conf` (Efron & Tibshirani, *An
/// Introduction to the Bootstrap*, 1993, ch. 13): each of `resamples`
/// replicates draws both groups' runs with replacement and takes `b`
/// again; the interval is the `(1−conf)/2` and `(1+conf)/2` order
/// statistics of the replicates. `None` when a group is empty or `x₁ ≤ 0`.
pub fn bootstrap_slope(
    base: &[f64],
    first: &Group<'_>,
    stat: fn(&[f64]) -> f64,
    conf: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if base.is_empty() || first.runs.is_empty() || first.x <= 0.0 || resamples == 0 {
        return None;
    }
    let slope = |b: &[f64], f: &[f64]| (stat(f) - stat(b)) / first.x;
    let mut rng = SplitMix64::new(seed);
    let mut reps: Vec<f64> = (0..resamples)
        .map(|_| {
            let b = resample(&mut rng, base);
            let f = resample(&mut rng, first.runs);
            slope(&b, &f)
        })
        .collect();
    reps.sort_by(f64::total_cmp);
    let (lo, hi) = percentile_ends(&reps, conf);
    Some(Interval {
        value: slope(base, first.runs),
        lo,
        hi,
    })
}

/// The smallest slowdown (% of `stat(sample)`) that two points of
/// `sample.len()` runs each, both spreading like `sample`, show by noise
/// alone less often than `1 − conf`: the `conf` quantile of
/// `100 |stat(A) − stat(B)| / stat(sample)` over `resamples` pairs of
/// independent bootstrap resamples `A`, `B` of `sample`. Unlike
/// [`resolution`] it needs no normal errors and follows the statistic (a
/// median ignores a few wild runs). `None` with fewer than two values or a
/// statistic of 0.
pub fn bootstrap_resolution(
    sample: &[f64],
    stat: fn(&[f64]) -> f64,
    conf: f64,
    resamples: usize,
    seed: u64,
) -> Option<f64> {
    let s0 = stat(sample);
    if sample.len() < 2 || s0 == 0.0 || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut reps: Vec<f64> = (0..resamples)
        .map(|_| {
            let a = resample(&mut rng, sample);
            let b = resample(&mut rng, sample);
            100.0 * (stat(&a) - stat(&b)).abs() / s0.abs()
        })
        .collect();
    reps.sort_by(f64::total_cmp);
    Some(percentile_ends(&reps, 2.0 * conf - 1.0).1)
}

/// The median of a non-empty slice (for [`bootstrap_crossings`]).
pub fn median_of(xs: &[f64]) -> f64 {
    crate::stats::median(xs).unwrap_or(f64::NAN)
}

/// The minimum of a non-empty slice (for [`bootstrap_crossings`]).
pub fn min_of(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ln_gamma_at_known_points() {
        // Γ(1) = Γ(2) = 1, Γ(5) = 24, Γ(½) = √π
        assert!(close(ln_gamma(1.0), 0.0, 1e-12));
        assert!(close(ln_gamma(2.0), 0.0, 1e-12));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
    }

    #[test]
    fn incomplete_beta_known_values() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_½(a, a) = ½
        assert!(close(incomplete_beta(1.0, 1.0, 0.3), 0.3, 1e-12));
        assert!(close(incomplete_beta(3.0, 1.0, 0.6), 0.216, 1e-12));
        assert!(close(incomplete_beta(4.5, 4.5, 0.5), 0.5, 1e-12));
        assert_eq!(incomplete_beta(2.0, 3.0, 0.0), 0.0);
        assert_eq!(incomplete_beta(2.0, 3.0, 1.0), 1.0);
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // two-sided 95 % critical values (any table of Student's t)
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (8.0, 2.306),
            (10.0, 2.228),
            (30.0, 2.042),
            (1000.0, 1.962),
        ] {
            let q = t_quantile(0.975, df);
            assert!(close(q, t, 5e-4), "df {df}: {q} vs {t}");
        }
        // 99 %, df 5: 4.032; the lower tail is the mirror image
        assert!(close(t_quantile(0.995, 5.0), 4.032, 5e-4));
        assert!(close(t_quantile(0.025, 10.0), -2.228, 5e-4));
        assert!(close(t_cdf(0.0, 3.0), 0.5, 1e-12));
        // df 1 is the Cauchy distribution: P(T ≤ 1) = 3/4
        assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-10));
    }

    #[test]
    fn slope_interval_by_hand() {
        // baseline 1.0, 1.2, 1.1 at x=0; 2.0, 2.2, 2.1 at x=10:
        // b = 0.1; residuals ±0.1, 0 in each group: RSS 0.04, s² = 0.01;
        // Sxx = 6 · 25 = 150; t(0.975, 4) = 2.7764; half = 2.7764 · 0.1/√150
        let pts = [
            (0.0, 1.0),
            (0.0, 1.2),
            (0.0, 1.1),
            (10.0, 2.0),
            (10.0, 2.2),
            (10.0, 2.1),
        ];
        let c = slope_ci(&pts, 0.95).unwrap();
        assert!(close(c.slope, 0.1, 1e-12));
        assert!(close(c.intercept, 1.1, 1e-12));
        assert_eq!((c.n, c.df), (6, 4));
        let half = 2.776_445 * 0.1 / 150f64.sqrt();
        assert!(close(c.half, half, 1e-6), "{}", c.half);
        assert!(close(c.lo(), 0.1 - half, 1e-6) && close(c.hi(), 0.1 + half, 1e-6));
        assert!(slope_ci(&pts[..2], 0.95).is_none());
        assert!(slope_ci(&[(0.0, 1.0), (0.0, 2.0), (0.0, 3.0)], 0.95).is_none());
    }

    #[test]
    fn slope_interval_covers_the_truth_about_95_percent_of_the_time() {
        // y = 2 + 0.3 x + noise, noise uniform in ±1 (σ = 1/√3); 5 runs at
        // x = 0 and at x = 4: the 95 % interval must cover 0.3 in about
        // 95 % of 2000 experiments (the t-interval is close to exact here)
        let mut rng = SplitMix64::new(7);
        let mut u = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let mut covered = 0;
        for _ in 0..2000 {
            let pts: Vec<(f64, f64)> = (0..10)
                .map(|i| {
                    let x = if i < 5 { 0.0 } else { 4.0 };
                    (x, 2.0 + 0.3 * x + u())
                })
                .collect();
            let c = slope_ci(&pts, 0.95).unwrap();
            if c.lo() <= 0.3 && 0.3 <= c.hi() {
                covered += 1;
            }
        }
        assert!((1860..=1940).contains(&covered), "{covered} of 2000");
    }

    #[test]
    fn resolution_by_hand() {
        // mean 10, s = 1 (values 9, 10, 11), n = 3: t(0.975, 4) = 2.7764;
        // 100 · 2.7764 · 1 · √(2/3) / 10
        let r = resolution(&[9.0, 10.0, 11.0], 0.95).unwrap();
        assert!(close(
            r,
            100.0 * 2.776_445 * (2.0f64 / 3.0).sqrt() / 10.0,
            1e-4
        ));
        assert!(resolution(&[1.0], 0.95).is_none());
        // more runs of the same spread resolve finer
        let wide: Vec<f64> = (0..12).map(|i| [9.0, 10.0, 11.0][i % 3]).collect();
        assert!(resolution(&wide, 0.95).unwrap() < r / 2.0);
    }

    #[test]
    fn bootstrap_slope_of_exact_data_is_a_point() {
        let base = [2.0, 2.0, 2.0];
        let first = [2.2, 2.2];
        let g = Group {
            x: 10.0,
            runs: &first,
        };
        let i = bootstrap_slope(&base, &g, median_of, 0.95, 500, 1).unwrap();
        assert!(
            close(i.value, 0.02, 1e-12) && close(i.lo, 0.02, 1e-12) && close(i.hi, 0.02, 1e-12)
        );
        assert!(close(i.half(), 0.0, 1e-12));
        assert!(bootstrap_slope(&[], &g, median_of, 0.95, 500, 1).is_none());
        let at0 = Group {
            x: 0.0,
            runs: &first,
        };
        assert!(bootstrap_slope(&base, &at0, median_of, 0.95, 500, 1).is_none());
    }

    #[test]
    fn median_slope_ignores_wild_runs_that_least_squares_does_not() {
        // 1.0 s and 1.1 s at 10 us (1 % per us) with ±1 % jitter, and one
        // run in twelve of each ten times slower: a busy machine
        let jitter = [
            0.99, 1.0, 1.01, 0.995, 1.005, 0.998, 1.002, 0.992, 1.008, 0.996, 1.004, 10.0,
        ];
        let base: Vec<f64> = jitter.iter().map(|j| 1.0 * j).collect();
        let first: Vec<f64> = jitter.iter().rev().map(|j| 1.1 * j).collect();
        let g = Group {
            x: 10.0,
            runs: &first,
        };
        let med = bootstrap_slope(&base, &g, median_of, 0.95, 2000, 5).unwrap();
        assert!(close(med.value, 0.01, 1e-3), "{med:?}");
        assert!(med.lo > 0.0 && med.hi < 0.1, "{med:?}");
        let pts: Vec<(f64, f64)> = base
            .iter()
            .map(|&t| (0.0, t))
            .chain(first.iter().map(|&t| (10.0, t)))
            .collect();
        let ols = slope_ci(&pts, 0.95).unwrap();
        assert!(
            ols.lo() < 0.0 && ols.half > 10.0 * med.half(),
            "{ols:?} {med:?}"
        );
    }

    #[test]
    fn bootstrap_resolution_follows_the_spread_and_the_runs() {
        assert_eq!(
            bootstrap_resolution(&[1.0, 1.0, 1.0], median_of, 0.95, 500, 1),
            Some(0.0)
        );
        assert!(bootstrap_resolution(&[1.0], median_of, 0.95, 500, 1).is_none());
        // ±5 % spread, 5 runs: a few %, less than the full spread
        let five = [0.95, 0.975, 1.0, 1.025, 1.05];
        let r5 = bootstrap_resolution(&five, median_of, 0.95, 4000, 2).unwrap();
        assert!(r5 > 1.0 && r5 <= 10.0, "{r5}");
        // the same spread over 40 runs resolves finer
        let forty: Vec<f64> = (0..40).map(|i| five[i % 5]).collect();
        let r40 = bootstrap_resolution(&forty, median_of, 0.95, 4000, 2).unwrap();
        assert!(r40 < r5 / 2.0, "{r40} vs {r5}");
        // a wild run in ten moves the median's resolution little, the
        // mean-based one a lot
        let mut wild = forty.clone();
        for i in (0..40).step_by(10) {
            wild[i] = 10.0;
        }
        let rw = bootstrap_resolution(&wild, median_of, 0.95, 4000, 2).unwrap();
        assert!(rw < 2.0 * r40 + 1.0, "{rw} vs {r40}");
        assert!(resolution(&wild, 0.95).unwrap() > 50.0);
    }

    #[test]
    fn crossing_interpolates() {
        let c = [(0.0, 0.0), (10.0, 5.0), (20.0, 15.0)];
        assert_eq!(crossing(&c, 10.0), Some(15.0));
        assert_eq!(crossing(&c, 2.0), Some(4.0));
        assert_eq!(crossing(&c, 20.0), None);
        assert_eq!(crossing(&[(0.0, 12.0)], 10.0), Some(0.0));
        assert_eq!(crossing(&[], 10.0), None);
    }

    #[test]
    fn splitmix_is_reproducible_and_uniform_enough() {
        let mut a = SplitMix64::new(1);
        let mut b = SplitMix64::new(1);
        assert_eq!(a.next_u64(), b.next_u64());
        // the first output for seed 0, from the authors' reference code
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
        let mut counts = [0usize; 4];
        for _ in 0..40_000 {
            counts[a.below(4)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn tolerance_of_a_noiseless_line_has_a_point_interval() {
        // 1 s + 1 % per us: 1 % at 1 us, 2 % at 2, 5 % at 5; not 20 % by 10
        let base = [1.0, 1.0, 1.0];
        let r10 = [1.1, 1.1, 1.1];
        let r4 = [1.04, 1.04, 1.04];
        let pts = [
            Group { x: 4.0, runs: &r4 },
            Group {
                x: 10.0,
                runs: &r10,
            },
        ];
        let t = bootstrap_crossings(&base, &pts, median_of, &[1.0, 2.0, 5.0, 20.0], 0.95, 200, 1);
        for (tol, want) in t.iter().zip([1.0, 2.0, 5.0]) {
            let v = tol.value.unwrap();
            assert!(close(v, want, 1e-9), "{tol:?}");
            assert!(close(tol.lo.unwrap(), v, 1e-9) && close(tol.hi.unwrap(), v, 1e-9));
        }
        assert_eq!(t[3].value, None);
        assert_eq!((t[3].lo, t[3].hi), (None, None));
    }

    #[test]
    fn tolerance_interval_widens_with_noise_and_opens_when_unreached() {
        // the 5 % level sits between x = 4 (+4 %) and x = 10 (+10 %);
        // noisy runs give an interval around 5 that holds the estimate
        let base = [0.97, 1.0, 1.03, 0.99, 1.01];
        let r4 = [1.01, 1.04, 1.07, 1.03, 1.05];
        let r10 = [1.07, 1.1, 1.13, 1.09, 1.11];
        let pts = [
            Group { x: 4.0, runs: &r4 },
            Group {
                x: 10.0,
                runs: &r10,
            },
        ];
        let t = bootstrap_crossings(&base, &pts, median_of, &[5.0, 10.0], 0.95, 2000, 3);
        let (v, lo, hi) = (t[0].value.unwrap(), t[0].lo.unwrap(), t[0].hi.unwrap());
        assert!(close(v, 5.0, 1e-9), "{:?}", t[0]);
        assert!(lo < v && v < hi && hi - lo > 1.0, "{:?}", t[0]);
        // +10 % is reached only at the last point, and in many resamples
        // not at all: the upper end is open
        assert!(close(t[1].value.unwrap(), 10.0, 1e-9), "{:?}", t[1]);
        assert_eq!(t[1].hi, None, "{:?}", t[1]);
        // the same seed gives the same interval
        let again = bootstrap_crossings(&base, &pts, median_of, &[5.0, 10.0], 0.95, 2000, 3);
        assert_eq!(t, again);
        // the min statistic: the fastest runs, 0.97 → 1.01 (+4.1 %) at 4
        let m = bootstrap_crossings(&base, &pts, min_of, &[5.0], 0.95, 10, 3);
        let want = 4.0 + (5.0 - 100.0 * (1.01 / 0.97 - 1.0)) / (100.0 * (1.07 - 1.01) / 0.97) * 6.0;
        assert!(close(m[0].value.unwrap(), want, 1e-9), "{:?}", m[0]);
        assert!(
            bootstrap_crossings(&[], &pts, median_of, &[1.0], 0.95, 10, 3)[0]
                .value
                .is_none()
        );
    }
}
