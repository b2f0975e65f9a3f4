//! Least-squares line fits and protocol-change detection.
//!
//! Hoefler, Lichei and Rehm, "Low-Overhead LogGP Parameter Assessment for
//! Modern Interconnection Networks", IPDPS 2007, §3.3 fit
//!
//! ```text
//! g + (s − 1)·G = (PRTT(n,0,s) − PRTT(1,0,s)) / (n − 1)        (eq. 7)
//! ```
//!
//! by linear least squares over many message sizes `s`, and §3.5 split the
//! sizes into ranges, one per transport protocol, with a look-ahead test on
//! the mean least-squares deviation (eq. 8). Both are here, on plain numbers.

/// A fitted line `y = intercept + slope · x`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
    /// Points used.
    pub n: usize,
    /// Residual sum of squares `Σ (intercept + slope·x_i − y_i)²`.
    pub rss: f64,
}

impl Line {
    /// The fitted value at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Ordinary least squares for `y = a + b·x` (the closed form of the normal
/// equations, e.g. Press et al., *Numerical Recipes*, §15.2):
///
/// ```text
/// b = Σ (x_i − x̄)(y_i − ȳ) / Σ (x_i − x̄)²,    a = ȳ − b·x̄
/// ```
///
/// Centring first keeps the sums accurate when `x` spans 1 B to 1 MiB.
/// `None` for fewer than two points or when all `x` are equal.
pub fn fit_line(points: &[(f64, f64)]) -> Option<Line> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let xm = points.iter().map(|p| p.0).sum::<f64>() / n;
    let ym = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - xm) * (p.0 - xm)).sum();
    if sxx <= 0.0 || !sxx.is_finite() {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - xm) * (p.1 - ym)).sum();
    let slope = sxy / sxx;
    let intercept = ym - slope * xm;
    let rss = points
        .iter()
        .map(|p| {
            let r = intercept + slope * p.0 - p.1;
            r * r
        })
        .sum();
    Some(Line {
        intercept,
        slope,
        n: points.len(),
        rss,
    })
}

/// Theil–Sen slope: the median of the slopes of all pairs of points with
/// distinct `x` (H. Theil, "A rank-invariant method of linear and
/// polynomial regression analysis", 1950; P. K. Sen, "Estimates of the
/// regression coefficient based on Kendall's tau", JASA 63, 1968). It
/// tolerates up to ~29 % of wild points, which least squares does not: on
/// a shared machine the largest messages of a range (whose leverage in
/// least squares is greatest) are also the ones most often disturbed.
/// `None` when no pair has distinct `x`.
pub fn theil_sen_slope(points: &[(f64, f64)]) -> Option<f64> {
    let mut slopes = Vec::new();
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if b.0 != a.0 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    crate::stats::median(&slopes)
}

/// Hoefler's mean least-squares deviation of points `k..=l` from their own
/// fitted line (eq. 8): `lsq(k, l) = Σ_{i=k..l} (G·size(i) + g − val(i))² / dof`.
///
/// The paper writes the denominator as `l − k − 2` to remove the two
/// degrees of freedom of the fit; with `l − k + 1` points that count is
/// `l − k − 1`, which is what is used here (the paper's form would divide by
/// zero at four points). `None` with fewer than three points.
pub fn lsq(points: &[(f64, f64)], k: usize, l: usize) -> Option<f64> {
    if l >= points.len() || l < k + 2 {
        return None;
    }
    let line = fit_line(&points[k..=l])?;
    Some(line.rss / (l - k - 1) as f64)
}

/// Parameters of the protocol-change detector (Hoefler §3.5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeDetector {
    /// Look-ahead `x`: a change is declared only if *all* of the next `x`
    /// points raise the deviation ("typically 3-5", to ignore single
    /// outliers).
    pub lookahead: usize,
    /// `pfact`: how many times the deviation must grow ("2.0 was a
    /// reasonable value for our experiments").
    pub pfact: f64,
    /// Points a range must have before it is tested (at least 3, so that
    /// `lsq` is defined).
    pub min_points: usize,
    /// Our addition. A single wild point stays inside every look-ahead
    /// window `[lastchange : current + j]`, so the paper's test alone cuts
    /// at any large outlier (see the test `strict_rule_cuts_at_an_outlier`).
    /// With the guard, each of the `x` look-ahead points must also lie off
    /// the current range's extrapolated line on its own:
    /// `residual² > 4 · pfact · lsq(lastchange, current)`.
    pub outlier_guard: bool,
}

impl Default for ChangeDetector {
    fn default() -> Self {
        ChangeDetector {
            lookahead: 3,
            pfact: 2.0,
            min_points: 4,
            outlier_guard: true,
        }
    }
}

/// One protocol range: points `start..=end` and their fitted line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub start: usize,
    pub end: usize,
    pub line: Line,
}

impl ChangeDetector {
    /// Splits `points` (sorted by `x`) into protocol ranges.
    ///
    /// Hoefler §3.5: with `lastchange` the first point of the current
    /// protocol and `current` the point under test, a change is declared
    /// after `current` when `lsq(lastchange, current + j) > pfact ·
    /// lsq(lastchange, current)` for every `1 ≤ j ≤ x`. The next range then
    /// starts at `current + 1`. A tiny floor on the base deviation (relative
    /// to the data's scale) keeps a perfectly straight prefix from turning
    /// rounding noise into a change.
    pub fn ranges(&self, points: &[(f64, f64)]) -> Vec<Range> {
        let min_points = self.min_points.max(3);
        let scale = points.iter().map(|p| p.1 * p.1).fold(0.0, f64::max);
        let floor = scale * 1e-18;
        let mut cuts = Vec::new();
        let mut last = 0usize;
        let mut current = last + min_points - 1;
        while current + self.lookahead < points.len() {
            let base = lsq(points, last, current).unwrap_or(0.0).max(floor);
            let changed = (1..=self.lookahead)
                .all(|j| lsq(points, last, current + j).is_some_and(|v| v > self.pfact * base))
                && (!self.outlier_guard
                    || fit_line(&points[last..=current]).is_some_and(|line| {
                        (1..=self.lookahead).all(|j| {
                            let (x, y) = points[current + j];
                            let r = line.at(x) - y;
                            r * r > 4.0 * self.pfact * base
                        })
                    }));
            if changed {
                cuts.push((last, current));
                last = current + 1;
                current = last + min_points - 1;
            } else {
                current += 1;
            }
        }
        if last < points.len() {
            cuts.push((last, points.len() - 1));
        }
        cuts.into_iter()
            .filter_map(|(start, end)| {
                fit_line(&points[start..=end]).map(|line| Range { start, end, line })
            })
            .collect()
    }
}

/// Joins neighbouring ranges that are one line cut apart: the absolute
/// deviation test of §3.5 grows with the values, so on a shared machine,
/// where the noise is a fraction of each value, a single protocol's range
/// of large sizes (gaps of 10–130 µs, each a few percent off) is cut into
/// pieces of 4 that each fit the same line (seen: 96 KiB–256 KiB and
/// 384 KiB–1 MiB with Theil–Sen slopes 0.1225 and 0.1221 ns/B). Two
/// neighbours are joined when their Theil–Sen slopes differ by at most
/// `tol` of the larger and the later one's line, taken back to the
/// earlier one's last point, lies within `tol` of the earlier one's line
/// there: a protocol change moves the slope, or the level (a rendezvous
/// hand-shake adds a constant), and both stay cuts. Ranges are refitted.
pub fn join_agreeing(points: &[(f64, f64)], ranges: &[Range], tol: f64) -> Vec<Range> {
    let line = |a: usize, b: usize| {
        let p = &points[a..=b];
        let slope = theil_sen_slope(p)?;
        let offs: Vec<f64> = p.iter().map(|q| q.1 - slope * q.0).collect();
        Some((crate::stats::median(&offs)?, slope))
    };
    let mut out: Vec<Range> = Vec::new();
    for r in ranges {
        let join = out.last().is_some_and(|prev| {
            let (Some((a0, b0)), Some((a1, b1))) =
                (line(prev.start, prev.end), line(r.start, r.end))
            else {
                return false;
            };
            let x = points[prev.end].0;
            let (y0, y1) = (a0 + b0 * x, a1 + b1 * x);
            (b0 - b1).abs() <= tol * b0.abs().max(b1.abs())
                && (y0 - y1).abs() <= tol * y0.abs().max(y1.abs())
        });
        match out.last_mut() {
            Some(prev) if join => {
                if let Some(l) = fit_line(&points[prev.start..=r.end]) {
                    *prev = Range {
                        start: prev.start,
                        end: r.end,
                        line: l,
                    };
                }
            }
            _ => out.push(*r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-noise in [-1, 1] (a small LCG), so tests are
    /// reproducible without a dependency.
    fn noise(i: usize) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        f64::from(u32::try_from(x >> 40).unwrap()) / f64::from(1u32 << 24) * 2.0 - 1.0
    }

    #[test]
    fn exact_line_is_recovered() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), 3.0 + 0.5 * f64::from(i)))
            .collect();
        let l = fit_line(&pts).unwrap();
        assert!((l.intercept - 3.0).abs() < 1e-12);
        assert!((l.slope - 0.5).abs() < 1e-12);
        assert!(l.rss < 1e-20);
        assert!((l.at(4.0) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn by_hand_least_squares() {
        // (0,1),(1,3),(2,2): x̄=1, ȳ=2, Sxy = (-1)(-1)+0+(1)(0) = 1, Sxx = 2
        let l = fit_line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)]).unwrap();
        assert!((l.slope - 0.5).abs() < 1e-12);
        assert!((l.intercept - 1.5).abs() < 1e-12);
        // residuals: 1.5-1=0.5, 2-3=-1, 2.5-2=0.5 -> rss 1.5
        assert!((l.rss - 1.5).abs() < 1e-12);
        assert_eq!(lsq(&[(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)], 0, 2), Some(1.5));
    }

    #[test]
    fn theil_sen_ignores_wild_points_least_squares_does_not() {
        let mut pts: Vec<(f64, f64)> = (1..=12)
            .map(|k| {
                let x = f64::from(1u32 << k);
                (x, 100.0 + 4.0 * x)
            })
            .collect();
        // the two largest sizes disturbed, as on a busy machine
        let n = pts.len();
        pts[n - 1].1 *= 2.5;
        pts[n - 2].1 *= 2.0;
        let ts = theil_sen_slope(&pts).unwrap();
        assert!((ts - 4.0).abs() < 1e-9, "{ts}");
        let ls = fit_line(&pts).unwrap().slope;
        assert!(ls > 6.0, "{ls}");
        assert_eq!(theil_sen_slope(&[(1.0, 2.0), (3.0, 8.0)]), Some(3.0));
        assert_eq!(theil_sen_slope(&[(1.0, 2.0), (1.0, 8.0)]), None);
    }

    #[test]
    fn degenerate_fits() {
        assert!(fit_line(&[(1.0, 1.0)]).is_none());
        assert!(fit_line(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
        assert!(lsq(&[(0.0, 0.0), (1.0, 1.0)], 0, 1).is_none());
    }

    #[test]
    fn large_x_is_accurate() {
        // g = 100 ns, G = 0.125 ns/B over 1 B .. 1 MiB
        let pts: Vec<(f64, f64)> = (0..=20)
            .map(|k| {
                let s = f64::from(1u32 << k);
                (s - 1.0, 100.0 + 0.125 * (s - 1.0))
            })
            .collect();
        let l = fit_line(&pts).unwrap();
        assert!((l.intercept - 100.0).abs() < 1e-6);
        assert!((l.slope - 0.125).abs() < 1e-12);
    }

    #[test]
    fn detector_finds_a_known_break() {
        // Protocol A for points 0..=19, protocol B (different g and G) from 20.
        let pts: Vec<(f64, f64)> = (0..40)
            .map(|i| {
                let x = f64::from(u32::try_from(i).unwrap()) * 100.0;
                let y = if i < 20 {
                    50.0 + 0.2 * x
                } else {
                    900.0 + 0.5 * x
                };
                (x, y + noise(i))
            })
            .collect();
        let r = ChangeDetector::default().ranges(&pts);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].start, r[0].end), (0, 19));
        assert_eq!((r[1].start, r[1].end), (20, 39));
        assert!((r[0].line.slope - 0.2).abs() < 0.01);
        assert!((r[1].line.slope - 0.5).abs() < 0.01);
        assert!((r[1].line.intercept - 900.0).abs() < 5.0);
    }

    #[test]
    fn detector_ignores_a_single_outlier_and_noise() {
        let mut pts: Vec<(f64, f64)> = (0..30)
            .map(|i| {
                let x = f64::from(u32::try_from(i).unwrap());
                (x, 10.0 + 2.0 * x + 0.5 * noise(i))
            })
            .collect();
        pts[15].1 += 40.0; // one wild point: the look-ahead must not cut here
        let r = ChangeDetector::default().ranges(&pts);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].start, r[0].end), (0, 29));
    }

    #[test]
    fn strict_rule_cuts_at_an_outlier() {
        let mut pts: Vec<(f64, f64)> = (0..30)
            .map(|i| {
                let x = f64::from(u32::try_from(i).unwrap());
                (x, 10.0 + 2.0 * x + 0.5 * noise(i))
            })
            .collect();
        pts[15].1 += 40.0;
        let strict = ChangeDetector {
            outlier_guard: false,
            ..ChangeDetector::default()
        };
        let r = strict.ranges(&pts);
        assert_eq!(r[0].end, 14, "{r:?}");
    }

    /// The gaps (ns) of a G-floor run at 8 GB/s (0.1221 ns/B requested),
    /// 24 KiB to 1 MiB, from a disturbed full calibration on the 2-core
    /// machine: the detector cut the linear tail into three ranges of 4.
    fn tail_of_a_g_run() -> Vec<(f64, f64)> {
        [
            (24576.0, 4449.3),
            (32768.0, 4991.5),
            (49152.0, 6165.9),
            (65536.0, 8059.3),
            (98304.0, 11993.9),
            (131072.0, 16043.9),
            (196608.0, 24065.3),
            (262144.0, 32066.5),
            (393216.0, 48225.3),
            (524288.0, 64052.9),
            (786432.0, 96085.3),
            (1048576.0, 128226.7),
        ]
        .iter()
        .map(|&(s, g)| (s - 1.0, g))
        .collect()
    }

    #[test]
    fn joins_pieces_of_one_line_and_keeps_real_changes() {
        let pts = tail_of_a_g_run();
        let r = ChangeDetector::default().ranges(&pts);
        assert_eq!(
            r.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
            [(0, 3), (4, 7), (8, 11)],
            "the detector's cuts this was written for"
        );
        let j = join_agreeing(&pts, &r, 0.1);
        assert_eq!(
            j.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(),
            [(0, 3), (4, 11)],
            "24-64 KiB has slope 0.087: kept apart"
        );
        assert!((j[1].line.slope - 0.1222).abs() < 0.0005, "{:?}", j[1]);
        // a jump in level at one slope (a hand-shake's constant) stays cut
        let step: Vec<(f64, f64)> = (0..16)
            .map(|i| {
                let x = 1000.0 * f64::from(i);
                (x, 100.0 + 0.5 * x + if i >= 8 { 2000.0 } else { 0.0 })
            })
            .collect();
        let r = ChangeDetector::default().ranges(&step);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(join_agreeing(&step, &r, 0.1).len(), 2);
        // a change of slope stays cut
        let bend: Vec<(f64, f64)> = (0..16)
            .map(|i| {
                let x = 1000.0 * f64::from(i);
                (
                    x,
                    if i < 8 {
                        100.0 + 0.5 * x
                    } else {
                        100.0 + 3500.0 + 0.8 * (x - 7000.0)
                    },
                )
            })
            .collect();
        let r = ChangeDetector::default().ranges(&bend);
        assert!(r.len() >= 2, "{r:?}");
        assert_eq!(join_agreeing(&bend, &r, 0.1).len(), r.len());
        assert!(join_agreeing(&bend, &[], 0.1).is_empty());
    }

    #[test]
    fn too_few_points_is_one_range() {
        let pts = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.5)];
        let r = ChangeDetector::default().ranges(&pts);
        assert_eq!(r.len(), 1);
        assert!(ChangeDetector::default().ranges(&[]).is_empty());
    }
}
