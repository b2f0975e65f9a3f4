//! The few statistics a sweep reports, each with its formula.

/// Quantile `q` in [0, 1] of sorted data, by linear interpolation between
/// order statistics: `h = (n-1)q`, `x[⌊h⌋] + (h-⌊h⌋)(x[⌊h⌋+1]-x[⌊h⌋])`
/// (Hyndman & Fan 1996, definition 7; R's and NumPy's default).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of no data");
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor();
    #[allow(clippy::cast_possible_truncation)] // 0 <= lo <= n-1: exact
    let i = lo as usize;
    match sorted.get(i + 1) {
        Some(&next) => sorted[i] + (h - lo) * (next - sorted[i]),
        None => sorted[i],
    }
}

/// Five-number summary of one point's repeats.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

impl Summary {
    /// `None` for no data.
    pub fn of(data: &[f64]) -> Option<Summary> {
        if data.is_empty() {
            return None;
        }
        let mut s = data.to_vec();
        s.sort_by(f64::total_cmp);
        Some(Summary {
            n: s.len(),
            min: s[0],
            q1: quantile(&s, 0.25),
            median: quantile(&s, 0.5),
            q3: quantile(&s, 0.75),
            max: s[s.len() - 1],
        })
    }

    /// Every figure divided by `base` and turned into a slowdown in %:
    /// `100 (t/base - 1)`.
    pub fn slowdown_pct(&self, base: f64) -> Summary {
        let f = |t: f64| 100.0 * (t / base - 1.0);
        Summary {
            n: self.n,
            min: f(self.min),
            q1: f(self.q1),
            median: f(self.median),
            q3: f(self.q3),
            max: f(self.max),
        }
    }
}

/// Which order statistic of the repeats stands for a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// The median: robust to a wild run either way (the default).
    Median,
    /// The fastest run: on a busy machine interference only adds time, so
    /// the minimum is the least disturbed estimate (hyperfine's advice).
    Min,
}

impl Stat {
    pub fn parse(s: &str) -> Option<Stat> {
        match s {
            "median" => Some(Stat::Median),
            "min" => Some(Stat::Min),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stat::Median => "median",
            Stat::Min => "min",
        }
    }

    pub fn of(self, s: &Summary) -> f64 {
        match self {
            Stat::Median => s.median,
            Stat::Min => s.min,
        }
    }
}

/// Ordinary least squares `y = a + b x`:
/// `b = Σ(x-x̄)(y-ȳ) / Σ(x-x̄)²`, `a = ȳ - b x̄`, and
/// `R² = 1 - Σ(y - a - b x)² / Σ(y-ȳ)²` (NaN when every y is equal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
}

/// `None` with fewer than two distinct x. The line is the core's least
/// squares (`loggp_core::fit::fit_line`); this adds R².
pub fn linear_fit(pts: &[(f64, f64)]) -> Option<Fit> {
    let line = loggp_core::fit::fit_line(pts)?;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    let r2 = if syy > 0.0 {
        1.0 - line.rss / syy
    } else {
        f64::NAN
    };
    Some(Fit {
        intercept: line.intercept,
        slope: line.slope,
        r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_type_7() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert_eq!(quantile(&s, 0.25), 1.75);
        assert_eq!(quantile(&s, 0.75), 3.25);
        assert_eq!(quantile(&s, 0.0), 1.0);
        assert_eq!(quantile(&s, 1.0), 4.0);
        assert_eq!(quantile(&[7.0], 0.5), 7.0);
    }

    #[test]
    fn summary_sorts_and_scales() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max), (3, 1.0, 2.0, 3.0));
        let d = s.slowdown_pct(2.0);
        assert_eq!((d.min, d.median, d.max), (-50.0, 0.0, 50.0));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn exact_line_fits_perfectly() {
        let f = linear_fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-12 && (f.intercept - 1.0).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn noisy_fit_has_lower_r2() {
        let f = linear_fit(&[(0.0, 0.0), (1.0, 2.0), (2.0, 1.0), (3.0, 3.0)]).unwrap();
        // by hand: x̄=1.5, ȳ=1.5, Sxy=4, Sxx=5, b=0.8, a=0.3, SSres=1.8, SSyy=5
        assert!((f.slope - 0.8).abs() < 1e-12);
        assert!((f.r2 - (1.0 - 1.8 / 5.0)).abs() < 1e-12);
        assert!(linear_fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
        assert!(linear_fit(&[(0.0, 1.0), (1.0, 1.0)]).unwrap().r2.is_nan());
    }
}
