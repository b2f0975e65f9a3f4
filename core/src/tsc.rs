//! A cheap clock: a fast counter (x86's time-stamp counter, ~10 ns a read)
//! extrapolated from readings of the reference clock (CLOCK_MONOTONIC,
//! ~21 ns a read through the vDSO on the machine this was measured on,
//! `bench/side_calls.c`).
//!
//! Each thread keeps an [`Anchor`]: one (counter, reference) [`Pair`] and a
//! rate, from which it extrapolates for at most a span before it reads the
//! reference again. The rate starts from two pairs some milliseconds apart
//! at start-up ([`TscRate`]) and is refined at every re-anchoring, from
//! the start-up pair to the new one: the pairs' reading error (tens of ns)
//! spread over the whole run. The span grows with that run (a 16th of it,
//! from 20 µs to 10 ms), so the error the rate can add over one span stays
//! at a 16th of two pairs' error, a few ns, while a timed call after a
//! pause of the application's rarely pays the reference read (a pause of
//! 20 µs or more paid it every time with a fixed 20 µs span; session 17).
//! Only narrow pairs count ([`TscRate::narrow`]): the reference is read
//! somewhere between the two counter reads, and a pair disturbed in
//! between is off by up to its width.
//!
//! The reference may be slewed (NTP): its rate against the counter then
//! moves, and a rate averaged over the run no longer extrapolates it. At a
//! regular re-anchoring the anchor compares its extrapolation with the
//! reference; an error beyond [`SLEW_NS`] starts the refinement again from
//! the new pair, with 20 µs spans.
//!
//! Integer arithmetic only (fixed point, 32 fractional bits): the shim runs
//! this in the application's threads, whose floating-point flags it must
//! not touch. The shim reads the counter and the reference; here time is
//! passed in.

/// Shortest span of an anchor, ns (and the only one until the rate has a
/// millisecond of run behind it).
pub const MIN_SPAN_NS: u64 = 20_000;
/// Longest span, ns: a rate 0.3 ppm off (a slew below the guard's
/// threshold) adds 3 ns over it.
pub const MAX_SPAN_NS: u64 = 10_000_000;
/// The span is this fraction (1/16) of the run the rate was refined over:
/// two pairs' errors (±10-20 ns each with the reference's 10 ns steps)
/// over the run give at most a 16th of them, ~2-5 ns, over a span.
const SPAN_SHIFT: u32 = 4;
/// Extrapolation error at a regular re-anchoring beyond which the rate is
/// taken for stale (the reference slewed), ns, plus the two pairs' widths.
pub const SLEW_NS: u64 = 40;
/// A pair wider than this (ns), or than twice the start-up pairs where
/// they were wider (an instrumented run: callgrind), was disturbed
/// between the counter read and the reference's own (warm pairs are 20-50
/// ns wide here, and a pair 170 ns wide was seen 130 ns off): it anchors,
/// with the shortest span, but neither refines the rate nor judges it,
/// nor is judged by it.
pub const WIDE_NS: u64 = 60;

/// A reading of the reference between two counter reads: the counter, the
/// reference, and the width in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pair {
    pub ticks: u64,
    pub ns: u64,
    pub width: u64,
}

impl Pair {
    /// The pair from counter `t0`, reference `ns`, counter `t1`, read in
    /// that order.
    ///
    /// The pair stands at `t0`, as an unbracketed pair read counter first
    /// would: the reference samples its own counter a few instructions
    /// after the call starts, a near-constant offset that every process
    /// shares (and every rate cancels), where the time from there to `t1`
    /// varies more. The width only tells an interrupted pair.
    pub fn bracketed(t0: u64, ns: u64, t1: u64) -> Pair {
        Pair {
            ticks: t0,
            ns,
            width: t1.saturating_sub(t0),
        }
    }
}

/// `ticks · q / 2^32`, rounded, without overflow.
fn mul_q(ticks: u64, q: u64) -> u64 {
    u64::try_from((u128::from(ticks) * u128::from(q) + (1 << 31)) >> 32).unwrap_or(u64::MAX)
}

/// `ns · 2^32 / q`: ticks in `ns` at rate `q`.
fn div_q(ns: u64, q: u64) -> u64 {
    u64::try_from((u128::from(ns) << 32) / u128::from(q.max(1))).unwrap_or(u64::MAX)
}

/// The rate in 32.32 fixed point (ns per tick) between two pairs, or None
/// when they go backwards or give a counter slower than ~1 MHz or faster
/// than ~1 THz (not a TSC).
fn rate_between(a: Pair, b: Pair) -> Option<u64> {
    if b.ticks <= a.ticks || b.ns <= a.ns {
        return None;
    }
    let q = (u128::from(b.ns - a.ns) << 32) / u128::from(b.ticks - a.ticks);
    let q = u64::try_from(q).ok()?;
    (1 << 22..=1 << 42).contains(&q).then_some(q)
}

/// The start-up rate: ns per counter tick in 32.32 fixed point, and the
/// pair it counts from (where every anchor's refinement starts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscRate {
    ns_per_tick_q32: u64,
    base: Pair,
    /// The widest narrow pair, ticks (`WIDE_NS`).
    narrow_ticks: u64,
}

impl TscRate {
    /// The rate between two pairs, or None when they are less than 1 ms
    /// apart on the reference, go backwards, or give no plausible counter.
    pub fn from_pairs(a: Pair, b: Pair) -> Option<TscRate> {
        if b.ns < a.ns + 1_000_000 {
            return None;
        }
        let q = rate_between(a, b)?;
        Some(TscRate {
            ns_per_tick_q32: q,
            base: a,
            narrow_ticks: div_q(WIDE_NS, q).max(2 * a.width.max(b.width)),
        })
    }

    /// Whether `p` is narrow enough to judge and refine a rate with.
    pub fn narrow(&self, p: Pair) -> bool {
        p.width <= self.narrow_ticks
    }

    /// Nanoseconds in `ticks` at the start-up rate (pairs' widths).
    pub fn ticks_ns(&self, ticks: u64) -> u64 {
        mul_q(ticks, self.ns_per_tick_q32)
    }
}

/// One thread's extrapolation state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anchor {
    ticks: u64,
    ns: u64,
    /// The last time returned: the clock never goes back.
    last: u64,
    /// The refined rate (32.32 ns per tick) and the span in ticks.
    q: u64,
    span: u64,
    /// Where the refinement counts from.
    base: Pair,
    set: bool,
    /// The anchor's pair's width, ticks.
    width: u64,
}

impl Anchor {
    /// An unset anchor (the first read asks for a reference reading).
    pub const fn new() -> Anchor {
        Anchor {
            ticks: 0,
            ns: 0,
            last: 0,
            q: 0,
            span: 0,
            base: Pair {
                ticks: 0,
                ns: 0,
                width: 0,
            },
            set: false,
            width: 0,
        }
    }

    /// The time at counter value `t`, or None when the anchor is unset,
    /// older than its span, or ahead of `t` (a counter from another
    /// processor that lags): then the caller reads a pair and calls
    /// [`Anchor::reset`].
    #[inline]
    pub fn read(&mut self, t: u64) -> Option<u64> {
        let dt = t.wrapping_sub(self.ticks);
        if !self.set || dt > self.span {
            return None;
        }
        // dt <= span <= MAX_SPAN_NS in ticks, so the product stays below
        // MAX_SPAN_NS·2^32.
        let v = (self.ns + ((dt.wrapping_mul(self.q) + (1 << 31)) >> 32)).max(self.last);
        self.last = v;
        Some(v)
    }

    /// The span in ns (for tests and logs).
    pub fn span_ns(&self) -> u64 {
        mul_q(self.span, self.q)
    }

    /// Anchors at pair `p` and returns the time, never less than one
    /// returned before. Refines the rate from the refinement's first pair
    /// to `p`, and first judges the old rate by its extrapolation to `p`
    /// (see the module's text).
    pub fn reset(&mut self, rate: &TscRate, p: Pair) -> u64 {
        let v = p.ns.max(self.last);
        let narrow = rate.narrow(p);
        if !self.set {
            self.base = rate.base;
            self.q = rate.ns_per_tick_q32;
        } else if narrow && self.width <= rate.narrow_ticks {
            let dt = p.ticks.wrapping_sub(self.ticks);
            if dt <= self.span.saturating_mul(2) {
                let guess = self.ns + mul_q(dt, self.q);
                if guess.abs_diff(p.ns) > SLEW_NS + rate.ticks_ns(p.width + self.width) {
                    self.base = p;
                }
            }
        }
        let run = p.ns.saturating_sub(self.base.ns);
        let mut span_ns = MIN_SPAN_NS;
        if narrow && run >= 1_000_000 {
            if let Some(q) = rate_between(self.base, p) {
                // Within 1000 ppm of the start-up rate: else a counter
                // fault, and the start-up rate stays.
                if q.abs_diff(rate.ns_per_tick_q32) <= rate.ns_per_tick_q32 >> 10 {
                    self.q = q;
                    span_ns = (run >> SPAN_SHIFT).clamp(MIN_SPAN_NS, MAX_SPAN_NS);
                }
            }
        }
        *self = Anchor {
            ticks: p.ticks,
            ns: p.ns,
            last: v,
            q: self.q,
            span: div_q(span_ns, self.q).max(1),
            base: self.base,
            set: true,
            width: p.width,
        };
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2.5 GHz counter: 0.4 ns per tick; the reference reads as
    /// `ns(t)`, in steps of 10 ns (as on the machine this was built on).
    struct Host {
        /// (ticks, ns, ppm) pieces: from `ticks` on, the reference runs
        /// `ppm` fast against 0.4 ns per tick, from `ns`.
        pieces: Vec<(u64, f64, f64)>,
    }

    impl Host {
        fn steady(ppm: f64) -> Host {
            Host {
                pieces: vec![(0, 1e9, ppm)],
            }
        }
        /// From `at` ticks on, the reference's rate moves to `ppm`.
        fn slew_at(mut self, at: u64, ppm: f64) -> Host {
            let ns = self.exact(at);
            self.pieces.push((at, ns, ppm));
            self
        }
        fn exact(&self, t: u64) -> f64 {
            let &(t0, ns0, ppm) = self.pieces.iter().rev().find(|p| p.0 <= t).unwrap();
            ns0 + (t - t0) as f64 * 0.4 * (1.0 + ppm * 1e-6)
        }
        /// A pair read at counter `t`: the reference samples the counter
        /// 12 ticks later (~5 ns), 50 ticks wide.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // ns > 0, < 2^53
        fn pair(&self, t: u64) -> Pair {
            let ns = (self.exact(t + 12) / 10.0).floor() as u64 * 10;
            Pair::bracketed(t, ns, t + 50)
        }
        /// Start-up: pairs 10 ms apart.
        fn rate(&self, t: u64) -> TscRate {
            TscRate::from_pairs(self.pair(t), self.pair(t + 25_000_000)).unwrap()
        }
        /// Start-up where the second pair's reference came `late` ns
        /// late (a cold first call: such pairs were seen 350 ns wide).
        fn rate_late(&self, t: u64, late: u64) -> TscRate {
            let mut b = self.pair(t + 25_000_000);
            b.ns += late;
            TscRate::from_pairs(self.pair(t), b).unwrap()
        }
        /// A read at `t` as the shim does it; returns its error, ns.
        fn read(&self, a: &mut Anchor, r: &TscRate, t: u64) -> f64 {
            let v = match a.read(t) {
                Some(v) => v,
                None => a.reset(r, self.pair(t)),
            };
            v as f64 - self.exact(t + 12)
        }
    }

    #[test]
    fn rate_from_pairs() {
        let p = |t, ns| Pair::bracketed(t, ns, t + 50);
        let r = TscRate::from_pairs(p(1_000, 5_000_000), p(25_001_000, 15_000_000)).unwrap();
        assert_eq!(r.ns_per_tick_q32, 1_717_986_918); // 0.4 · 2^32
                                                      // Too close, backwards, or not a plausible counter.
        assert_eq!(TscRate::from_pairs(p(0, 0), p(2_500, 999_999)), None);
        assert_eq!(TscRate::from_pairs(p(10, 0), p(5, 5_000_000)), None);
        assert_eq!(TscRate::from_pairs(p(0, 0), p(1, 5_000_000)), None);
        assert_eq!(
            TscRate::from_pairs(p(0, 0), p(u64::MAX / 2, 5_000_000)),
            None
        );
        assert_eq!(r.ticks_ns(p(0, 0).width), 20);
    }

    #[test]
    fn extrapolates_within_a_span_and_reanchors_after() {
        let h = Host::steady(0.0);
        let r = h.rate(0);
        let mut a = Anchor::new();
        assert_eq!(a.read(100), None, "unset anchor");
        // 10 ms after the start-up pair: a span of 10/16 ms.
        let t = 25_000_000;
        assert_eq!(a.reset(&r, h.pair(t)), 1_010_000_000);
        assert_eq!(a.span_ns(), 625_000);
        assert_eq!(a.read(t + 2_500), Some(1_010_001_000));
        let end = t + 1_562_500; // 625 us in ticks
        assert_eq!(a.read(end), Some(1_010_625_000));
        assert_eq!(a.read(end + 1), None, "span over");
        // A counter behind the anchor (another processor's) is not used.
        assert_eq!(a.read(t - 10), None);
    }

    #[test]
    fn never_goes_back() {
        let h = Host::steady(0.0);
        let r = h.rate(0);
        let mut a = Anchor::new();
        a.reset(&r, h.pair(25_000_000));
        assert_eq!(a.read(25_025_000), Some(1_010_010_000));
        // The reference, read again, is 3 ns behind the extrapolation.
        let behind = Pair::bracketed(25_025_001, 1_010_009_997, 25_025_051);
        assert_eq!(a.reset(&r, behind), 1_010_010_000);
        assert_eq!(a.read(25_025_006), Some(1_010_010_000));
        assert_eq!(a.read(25_025_026), Some(1_010_010_007));
    }

    #[test]
    fn the_span_grows_with_the_run_to_its_cap_and_reanchorings_stay_few() {
        let h = Host::steady(2.0);
        let r = h.rate(0);
        let mut a = Anchor::new();
        let (mut t, mut resets, mut worst) = (25_000_000u64, 0, 0f64);
        // Two seconds of reads 1 us apart (2.5 million).
        while t < 25_000_000 + 5_000_000_000 {
            let before = (a.ticks, a.set);
            worst = worst.max(h.read(&mut a, &r, t).abs());
            resets += usize::from((a.ticks, a.set) != before);
            t += 2_500;
        }
        assert_eq!(a.span_ns(), MAX_SPAN_NS);
        // 16·ln(160 ms / 10 ms) ≈ 44 to reach the cap, then 1.84 s at
        // 10 ms; a fixed 20 us span re-anchored 100 000 times.
        assert!((200..260).contains(&resets), "{resets} re-anchorings");
        // The reference's 10 ns steps plus the rate's error.
        assert!(worst < 14.0, "worst error {worst} ns");
    }

    #[test]
    fn error_stays_small_over_an_hour_of_sparse_and_dense_reads() {
        // The start-up rate comes out 4 ppm off (40 ns over 10 ms: 40 ns
        // over a 10 ms span); refinement takes it to the run's.
        let h = Host::steady(-3.0);
        let r = h.rate_late(0, 40);
        let mut a = Anchor::new();
        let (mut worst, mut t) = (0f64, 25_000_000u64);
        while t < 3_600 * 2_500_000_000 {
            // A burst of reads 1 us apart over 30 ms, then a pause.
            for k in 0..30_000 {
                worst = worst.max(h.read(&mut a, &r, t + k * 2_500).abs());
            }
            t += 7_777_777_777;
        }
        assert!(worst < 14.0, "worst error {worst} ns");
    }

    #[test]
    fn a_slewed_reference_is_noticed_and_the_refinement_starts_again() {
        // After 2 s the reference slews at +50 ppm (NTP correcting an
        // offset): the rate averaged over the run is 50 ppm off.
        let at = 5_000_000_000;
        let h = Host::steady(0.0).slew_at(at, 50.0);
        let r = h.rate(0);
        let mut a = Anchor::new();
        let (mut t, mut worst_after) = (25_000_000u64, 0f64);
        while t < at + 2_500_000_000 {
            let e = h.read(&mut a, &r, t).abs();
            if t > at + 25_000_000 {
                // Once the slew has been seen: 20 us spans again, growing.
                worst_after = worst_after.max(e);
            }
            if t == at + 2_500 {
                assert_eq!(a.span_ns(), MAX_SPAN_NS, "before the slew is seen");
            }
            t += 2_500;
        }
        assert!(a.base.ticks > at, "the refinement started again");
        assert!(worst_after < 14.0, "worst error {worst_after} ns");
        // A slew within the guard's threshold over one span (2 ppm: 20 ns
        // over 10 ms) is followed by the refinement alone.
        let h = Host::steady(0.0).slew_at(at, 2.0);
        let mut a = Anchor::new();
        let (mut t, mut worst) = (25_000_000u64, 0f64);
        while t < at + 2_500_000_000 {
            worst = worst.max(h.read(&mut a, &r, t).abs());
            t += 2_500;
        }
        assert!(a.base.ticks < at);
        assert!(worst < 14.0 + 20.0, "worst error {worst} ns");
    }

    #[test]
    fn wide_pairs_anchor_but_neither_refine_nor_judge() {
        let h = Host::steady(0.0);
        let r = h.rate(0);
        let mut a = Anchor::new();
        let t = 2_500_000_000; // 1 s into the run
        let mut p = h.pair(t);
        p.width = 2_500; // 1 us: interrupted
        a.reset(&r, p);
        assert_eq!(a.span_ns(), MIN_SPAN_NS);
        assert_eq!(a.base, r.base);
        a.reset(&r, h.pair(t + 1_000));
        assert_eq!(a.span_ns(), MAX_SPAN_NS); // 1 s / 16, capped
                                              // Where every pair is wide (a run under callgrind: 2 us), so were
                                              // the start-up pairs, and pairs as wide as those count as narrow.
        let wide = |t: u64| Pair {
            width: 5_000,
            ..h.pair(t)
        };
        let r = TscRate::from_pairs(wide(0), wide(25_000_000)).unwrap();
        assert!(
            r.narrow(wide(t))
                && !r.narrow(Pair {
                    width: 10_001,
                    ..h.pair(t)
                })
        );
        let mut a = Anchor::new();
        a.reset(&r, wide(t));
        assert_eq!(a.span_ns(), MAX_SPAN_NS);
        // Narrow start-up pairs: WIDE_NS.
        let r = h.rate(0);
        assert!(r.narrow(Pair {
            width: 150,
            ..h.pair(t)
        }));
        assert!(!r.narrow(Pair {
            width: 151,
            ..h.pair(t)
        }));
    }
}
