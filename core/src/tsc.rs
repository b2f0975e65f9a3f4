//! A cheap clock: a fast counter (x86's time-stamp counter, ~10 ns a read)
//! extrapolated from readings of the reference clock (CLOCK_MONOTONIC,
//! ~23 ns a read through the vDSO on the machine this was measured on,
//! `bench/side_calls.c`).
//!
//! The rate is calibrated from two (counter, reference) stamps some
//! milliseconds apart; each thread keeps an [`Anchor`], one (counter,
//! reference) pair, and extrapolates from it for at most `anchor_ns`
//! before it must read the reference again. The error is the rate's error
//! over that span, so with a span of microseconds every process and thread
//! on a host still reads the same clock to within a nanosecond or so.
//! Integer arithmetic only (fixed point, 32 fractional bits): the shim runs
//! this in the application's threads, whose floating-point flags it must
//! not touch. The shim reads the counter and the reference; here time is
//! passed in.

/// Nanoseconds per counter tick in 32.32 fixed point, and the span of one
/// anchor in ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscRate {
    ns_per_tick_q32: u64,
    anchor_ticks: u64,
}

impl TscRate {
    /// The rate between two stamps `(ticks, ns)`, or None when they are
    /// less than 1 ms apart on the reference, go backwards, or give a
    /// counter slower than ~1 MHz or faster than ~1 THz (not a TSC).
    pub fn from_stamps(a: (u64, u64), b: (u64, u64), anchor_ns: u64) -> Option<TscRate> {
        if b.0 <= a.0 || b.1 < a.1 + 1_000_000 {
            return None;
        }
        let q = (u128::from(b.1 - a.1) << 32) / u128::from(b.0 - a.0);
        let q = u64::try_from(q).ok()?;
        if !(1 << 22..=1 << 42).contains(&q) {
            return None;
        }
        let anchor_ticks = u64::try_from((u128::from(anchor_ns) << 32) / u128::from(q)).ok()?;
        Some(TscRate {
            ns_per_tick_q32: q,
            anchor_ticks: anchor_ticks.max(1),
        })
    }

    /// Nanoseconds in `ticks` counter ticks (`ticks` at most a span),
    /// rounded.
    fn ns(&self, ticks: u64) -> u64 {
        // ticks <= anchor_ticks, so the product stays below anchor_ns·2^32.
        (ticks.wrapping_mul(self.ns_per_tick_q32) + (1 << 31)) >> 32
    }
}

/// One thread's extrapolation state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anchor {
    ticks: u64,
    ns: u64,
    /// The last time returned: the clock never goes back.
    last: u64,
    set: bool,
}

impl Anchor {
    /// An unset anchor (the first read asks for a reference reading).
    pub const fn new() -> Anchor {
        Anchor {
            ticks: 0,
            ns: 0,
            last: 0,
            set: false,
        }
    }

    /// The time at counter value `t`, or None when the anchor is unset,
    /// older than its span, or ahead of `t` (a counter from another
    /// processor that lags): then the caller reads the reference and calls
    /// [`Anchor::reset`].
    pub fn read(&mut self, rate: &TscRate, t: u64) -> Option<u64> {
        let dt = t.wrapping_sub(self.ticks);
        if !self.set || dt > rate.anchor_ticks {
            return None;
        }
        let v = (self.ns + rate.ns(dt)).max(self.last);
        self.last = v;
        Some(v)
    }

    /// Anchors at counter `t` and reference time `ns` (read back to back)
    /// and returns the time, never less than one returned before.
    pub fn reset(&mut self, t: u64, ns: u64) -> u64 {
        let v = ns.max(self.last);
        *self = Anchor {
            ticks: t,
            ns,
            last: v,
            set: true,
        };
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2.5 GHz counter: 0.4 ns per tick.
    fn rate() -> TscRate {
        TscRate::from_stamps((1_000, 5_000_000), (25_001_000, 15_000_000), 20_000).unwrap()
    }

    #[test]
    fn rate_from_stamps() {
        let r = rate();
        assert_eq!(r.anchor_ticks, 50_000); // 20 us at 2.5 ticks/ns
        assert_eq!(r.ns(2_500), 1_000);
        // Too close, backwards, or not a plausible counter.
        assert_eq!(TscRate::from_stamps((0, 0), (2_500, 999_999), 20_000), None);
        assert_eq!(TscRate::from_stamps((10, 0), (5, 5_000_000), 20_000), None);
        assert_eq!(TscRate::from_stamps((0, 0), (1, 5_000_000), 20_000), None);
        assert_eq!(
            TscRate::from_stamps((0, 0), (u64::MAX / 2, 5_000_000), 20_000),
            None
        );
    }

    #[test]
    fn extrapolates_within_a_span_and_reanchors_after() {
        let r = rate();
        let mut a = Anchor::default();
        assert_eq!(a.read(&r, 100), None, "unset anchor");
        assert_eq!(a.reset(100, 7_000_000), 7_000_000);
        assert_eq!(a.read(&r, 100 + 2_500), Some(7_001_000));
        assert_eq!(a.read(&r, 100 + 50_000), Some(7_020_000));
        assert_eq!(a.read(&r, 100 + 50_001), None, "span over");
    }

    #[test]
    fn never_goes_back() {
        let r = rate();
        let mut a = Anchor::default();
        a.reset(0, 1_000_000);
        assert_eq!(a.read(&r, 25_000), Some(1_010_000));
        // The reference, read again, is 3 ns behind the extrapolation.
        assert_eq!(a.reset(25_001, 1_009_997), 1_010_000);
        assert_eq!(a.read(&r, 25_001 + 5), Some(1_010_000));
        assert_eq!(a.read(&r, 25_001 + 25), Some(1_010_007));
        // A counter behind the anchor (another processor's) is not used.
        assert_eq!(a.read(&r, 20_000), None);
    }

    #[test]
    fn error_stays_below_a_nanosecond_with_a_ppm_rate_error() {
        // Calibrated 2 ppm fast: over one 20 us span the error is 0.04 ns;
        // re-anchoring keeps it from growing over an hour.
        let true_ns = |t: u64| t * 2 / 5; // exact 2.5 GHz
        let r = TscRate::from_stamps((0, 0), (25_000_000, 10_000_020), 20_000).unwrap();
        let mut a = Anchor::default();
        let mut worst = 0i64;
        let mut t = 0u64;
        while t < 3_600 * 2_500_000_000 {
            // Three reads close together, then a jump of ~3.1 s.
            for t in [t, t + 1, t + 40_000] {
                let v = match a.read(&r, t) {
                    Some(v) => v,
                    None => a.reset(t, true_ns(t)),
                };
                worst = worst.max((v as i64 - true_ns(t) as i64).abs());
            }
            t += 7_777_777_777;
        }
        assert!(worst <= 1, "worst error {worst} ns");
    }
}
