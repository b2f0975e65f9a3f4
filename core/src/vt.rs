//! Virtual-time scheduling (DESIGN.md §1, "Virtual time, in one paragraph").
//!
//! Data moves natively; what is emulated is *when* each side may see it:
//!
//! * send: after `o_s`, a message gets a virtual departure
//!   `d = max(ready, link_free)`, where `ready` is "now", delayed only when
//!   `send_queue` messages already wait to depart. The link is then busy
//!   until `d + g_s + (s-1)·G` (LogGP's `g + (s-1)G`). A blocking send
//!   completes no earlier than the last byte's departure `d + (s-1)·G`.
//! * receive: the message virtually arrives at
//!   `a = max(d + L_native(s), seen) + L + (s-1)·max(0, G - G_native)` and
//!   is delivered at `r = max(native completion, a, previous delivery +
//!   g_r)`, after which the receiver spins `o_r`. `seen` is what the
//!   receiver observed of the native arrival ([`Seen`]): when the message
//!   was not there when the receiver began to wait for it, it came at the
//!   moment the wait ended, maybe natively late (contention, a protocol
//!   step), and the added `L` and `G` then count from then, not from when
//!   it would have come uncontended (DESIGN.md §1: added L is additive). A
//!   message that was already there when the receiver asked (it arrived
//!   while the receiver computed) has `seen = 0`: its `L` overlaps the
//!   computation.
//!
//! Every time here is nanoseconds on one monotonic clock, passed in.

use crate::config::{Config, Knobs};
use crate::units::round_ns;
use std::collections::VecDeque;

/// Most sizes at which the native transit is measured.
pub const TRANSIT_POINTS: usize = 10;

/// Native transit model `L_native(s)`, learned at start-up: piecewise
/// linear through half round trips measured at a few sizes, so that a
/// protocol change (eager to rendezvous, a staging copy) is followed
/// instead of averaged away by one straight line; beyond the largest size
/// it continues with the last segment's slope.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Transit {
    /// Latency of a tiny message (the first segment's intercept), ns.
    pub base_ns: f64,
    /// Native time per byte at the largest sizes (native G), ns/B.
    pub per_byte_ns: f64,
    /// Measured (bytes, ns), increasing in both; the first `n` are used.
    /// With `n < 2` the model is the line `base + s · per_byte`.
    pts: [(u64, f64); TRANSIT_POINTS],
    n: usize,
}

impl Transit {
    /// Native transit of an `s`-byte message, ns.
    pub fn of(&self, bytes: u64) -> f64 {
        let p = &self.pts[..self.n];
        if p.len() < 2 {
            return self.base_ns + self.per_byte_ns * bytes as f64;
        }
        if bytes <= p[0].0 {
            return p[0].1;
        }
        for w in p.windows(2) {
            let ((s0, t0), (s1, t1)) = (w[0], w[1]);
            if bytes <= s1 {
                return t0 + (t1 - t0) * (bytes - s0) as f64 / (s1 - s0) as f64;
            }
        }
        let (s, t) = p[p.len() - 1];
        t + self.per_byte_ns * (bytes - s) as f64
    }

    /// The model through measured `(bytes, ns)` points (any order; at most
    /// [`TRANSIT_POINTS`] are kept, the smallest sizes first). A time below
    /// a smaller size's (noise) is raised to it, so the model never falls
    /// with size; the slope beyond the last point is the last segment's.
    pub fn from_points(points: &[(u64, f64)]) -> Transit {
        let mut v: Vec<(u64, f64)> = points.to_vec();
        v.sort_by_key(|p| p.0);
        v.dedup_by_key(|p| p.0);
        v.truncate(TRANSIT_POINTS);
        for i in 1..v.len() {
            v[i].1 = v[i].1.max(v[i - 1].1);
        }
        let slope = |a: (u64, f64), b: (u64, f64)| {
            if b.0 > a.0 {
                ((b.1 - a.1) / (b.0 - a.0) as f64).max(0.0)
            } else {
                0.0
            }
        };
        let mut t = Transit::default();
        match v.len() {
            0 => {}
            1 => t.base_ns = v[0].1.max(0.0),
            k => {
                t.per_byte_ns = slope(v[k - 2], v[k - 1]);
                t.base_ns = (v[0].1 - slope(v[0], v[1]) * v[0].0 as f64).max(0.0);
                t.pts[..k].copy_from_slice(&v);
                t.n = k;
            }
        }
        t
    }

    /// Fits the model from two half round trips: one of a small and one of
    /// a large message (the line through them).
    pub fn from_two_points(small: (u64, f64), large: (u64, f64)) -> Transit {
        Transit::from_points(&[small, large])
    }

    /// Up to which size `of` is one value, and that value rounded to ns
    /// (`round_ns`): the model is flat up to its first point (a line
    /// through no points, at size 0 alone).
    pub fn flat_head(&self) -> (u64, u64) {
        match self.points().first() {
            Some(&(s, t)) if self.n >= 2 => (s, round_ns(t)),
            _ => (0, round_ns(self.of(0))),
        }
    }

    /// The measured points, e.g. for a log line.
    pub fn points(&self) -> &[(u64, f64)] {
        &self.pts[..self.n]
    }
}

/// `(s - 1)` for LogGP's byte terms, zero for empty messages.
fn bytes_after_first(bytes: u64) -> f64 {
    bytes.saturating_sub(1) as f64
}

/// What the sender must do for one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// Spin (CPU busy) until this time before posting the send: the send
    /// queue was full. Equal to the `now` passed in when it was not.
    pub ready: u64,
    /// Virtual departure `d`, carried to the receiver in the piggyback.
    pub d: u64,
    /// A blocking send (or Wait on the send request) returns no earlier.
    pub complete_at: u64,
}

/// Per-rank sender state: the link and the send queue.
#[derive(Clone, Debug)]
pub struct SendSide {
    g_s: u64,
    g_big: f64,
    queue_cap: usize,
    link_free: u64,
    /// Virtual departures that may lie in the future, oldest first.
    pending: VecDeque<u64>,
}

impl SendSide {
    pub fn new(cfg: &Config) -> SendSide {
        SendSide {
            g_s: cfg.g_s,
            g_big: cfg.g_big,
            queue_cap: cfg.send_queue.max(1) as usize,
            link_free: 0,
            pending: VecDeque::new(),
        }
    }

    /// Schedules one message of `bytes` bytes whose `o_s` has been spent by
    /// `now`.
    pub fn depart(&mut self, now: u64, bytes: u64) -> Departure {
        self.depart_with(now, bytes, self.g_s, self.g_big)
    }

    /// `depart` where no pair has a `g_s` or a `G` floor and no `o_s`
    /// (`Config::sender_stamps_only`): the link is never busy, nothing
    /// queues, and the departure is `now` (kept in order with the
    /// departures before it: another thread's clock may read behind).
    pub fn stamp(&mut self, now: u64) -> Departure {
        let d = now.max(self.link_free);
        self.link_free = d;
        Departure {
            ready: now,
            d,
            complete_at: d,
        }
    }

    /// `depart` for a message whose pair has its own `g_s` and `G`
    /// (targeting): the link is busy `g_s + (s-1)·G` of *this* message's
    /// pair after it departs, so the next departure, to anyone, waits that.
    pub fn depart_with(&mut self, now: u64, bytes: u64, g_s: u64, g_big: f64) -> Departure {
        while self.pending.front().is_some_and(|&d| d <= now) {
            self.pending.pop_front();
        }
        // A full queue holds the sender until its oldest message departs.
        let ready = if self.pending.len() >= self.queue_cap {
            let oldest = self.pending[self.pending.len() - self.queue_cap];
            oldest.max(now)
        } else {
            now
        };
        while self.pending.front().is_some_and(|&d| d <= ready) {
            self.pending.pop_front();
        }
        let d = ready.max(self.link_free);
        let wire = round_ns(bytes_after_first(bytes) * g_big);
        self.link_free = d + g_s + wire;
        if d > ready {
            self.pending.push_back(d);
        }
        Departure {
            ready,
            d,
            complete_at: d + wire,
        }
    }

    /// Number of messages whose departure lies after `now`.
    pub fn queued(&self, now: u64) -> usize {
        self.pending.iter().filter(|&&d| d > now).count()
    }
}

/// What the receiver saw of a message's native arrival, as `seen` for
/// [`RecvGate::reserve_seen`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// It was there when the receiver asked for it, or nothing is known
    /// (a poll found it complete): its `L` overlapped whatever the
    /// receiver did meanwhile.
    Unknown,
    /// It was not there when the receiver began a blocking wait for it
    /// (a look into MPI just before found nothing), and came when the
    /// wait ended, at this time.
    CameAt(u64),
}

impl Seen {
    /// The receiver's observation for one delivery at `now`: `waited`
    /// when the message was absent as the blocking wait began.
    pub fn of(waited: bool, now: u64) -> Seen {
        if waited {
            Seen::CameAt(now)
        } else {
            Seen::Unknown
        }
    }

    fn time(self) -> u64 {
        match self {
            Seen::Unknown => 0,
            Seen::CameAt(t) => t,
        }
    }
}

/// The native transit of a message's class of pairs at its size.
#[derive(Clone, Copy, Debug)]
struct Class {
    /// Transit at the message's size, ns.
    ns: u64,
    /// Native time per byte at the largest sizes (`Transit::per_byte_ns`).
    per_byte_ns: f64,
}

/// Per-rank receiver state: the delivery gate.
#[derive(Clone, Debug)]
pub struct RecvGate {
    /// The knobs of a message that names none (every pair's, untargeted).
    knobs: Knobs,
    /// Some pair has an added `L` or a `G` floor (`uses_seen`).
    any_l_or_g: bool,
    transit: Transit,
    /// `transit.flat_head()`: the transit of this rank's own class of
    /// pairs at small sizes without the float model (`class_of`).
    flat: (u64, u64),
    last_delivery: Option<u64>,
    /// Smallest `now - d` seen by `reserve` since the last
    /// `take_min_one_way`: the one-way time from the sender's departure
    /// stamp to this gate, as start-up learns the native transit.
    min_one_way: u64,
    /// Across hosts: stamps to this rank's clock, and the other-host
    /// transit (`crate::clocks`). `None` on one host.
    hosts: Option<crate::clocks::Hosts>,
    /// Across hosts: the drift of each host's clock since start-up, learned
    /// from the messages that come (`crate::clocks::DriftCorrection`).
    drift: Option<crate::clocks::DriftCorrection>,
    /// Per source (MPI_COMM_WORLD rank): how much sooner than the native
    /// transit of its class its messages have been seen at this gate, at
    /// most (see `reserve_for`).
    ahead: Vec<u64>,
}

/// No source known: the transit of the class applies as learned.
pub const NO_SRC: u32 = u32::MAX;

/// Sources beyond this rank are not tracked in `RecvGate::ahead`.
const MAX_TRACKED_SRC: u32 = 1 << 20;

impl RecvGate {
    pub fn new(cfg: &Config, transit: Transit) -> RecvGate {
        RecvGate {
            knobs: cfg.plain_knobs(),
            any_l_or_g: cfg.any_l() || cfg.any_g_big(),
            transit,
            flat: transit.flat_head(),
            last_delivery: None,
            min_one_way: u64::MAX,
            hosts: None,
            drift: None,
            ahead: Vec::new(),
        }
    }

    /// How much sooner than its class's transit `src`'s messages came.
    fn ahead_of(&self, src: u32) -> u64 {
        self.ahead.get(src as usize).copied().unwrap_or(0)
    }

    /// Ranks on several hosts: departures arrive as stamps in the job's
    /// reference time base ([`crate::clocks::Hosts`]).
    pub fn set_hosts(&mut self, hosts: crate::clocks::Hosts) {
        self.hosts = Some(hosts);
    }

    /// Across hosts: corrects departures for the drift of the clocks since
    /// start-up, as [`observe`](Self::observe) learns it.
    pub fn set_drift(&mut self, drift: crate::clocks::DriftCorrection) {
        self.drift = Some(drift);
    }

    /// The drift rate in use for the host whose tag is `tag`.
    pub fn drift_rate(&self, tag: u64) -> f64 {
        self.drift.as_ref().map_or(0.0, |d| d.rate(tag))
    }

    /// Across hosts, a message from another host seen at `at` (on this
    /// clock; no earlier than it natively arrived): departure stamp `d`,
    /// handed to MPI `lag` ns before `d` (a virtual departure lies later
    /// than the hand-off under g_s, G or a full send queue; `u32::MAX`:
    /// unknown, no sample). Feeds the drift correction.
    pub fn observe(&mut self, at: u64, d: u64, lag: u32, bytes: u64) {
        let (Some(h), Some(drift)) = (&self.hosts, self.drift.as_mut()) else {
            return;
        };
        let (tag, _) = crate::clocks::Stamp::decode(d);
        if tag == h.tag || tag == 0 || lag == u32::MAX {
            return;
        }
        let (local, transit) = h.departure(d);
        let transit = transit.unwrap_or(&self.transit).of(bytes);
        let sent = local.saturating_sub(u64::from(lag));
        drift.observe(tag, at, sent, transit, bytes);
    }

    /// Virtual arrival `a` of a message that departed at `d`.
    pub fn arrival(&self, d: u64, bytes: u64) -> u64 {
        self.arrival_seen(d, bytes, Seen::Unknown)
    }

    /// The departure in this rank's clock and the native transit of the
    /// pair's class: across hosts `d` is a stamp (`crate::clocks`).
    fn local(&self, d: u64) -> (u64, &Transit) {
        match &self.hosts {
            Some(h) => {
                let (local, other) = h.departure(d);
                let local = match &self.drift {
                    Some(drift) => drift.correct(crate::clocks::Stamp::decode(d).0, local),
                    None => local,
                };
                (local, other.unwrap_or(&self.transit))
            }
            None => (d, &self.transit),
        }
    }

    /// `local` and the native transit of the message's class at its size:
    /// on one host, a small message's from `flat` (a tenth of the gate's
    /// instructions per message, a float model and its rounding, were
    /// spent on a constant: `scripts/bench-instr-pingpong.sh openmpi
    /// LOGGP_ARM=L`).
    #[inline(always)]
    fn class_of(&self, d: u64, bytes: u64) -> (u64, Class) {
        if self.hosts.is_none() && bytes <= self.flat.0 {
            let class = Class {
                ns: self.flat.1,
                per_byte_ns: self.transit.per_byte_ns,
            };
            return (d, class);
        }
        self.class_modelled(d, bytes)
    }

    /// `class_of` through `local` and the float model.
    #[inline(never)]
    fn class_modelled(&self, d: u64, bytes: u64) -> (u64, Class) {
        let (local, transit) = self.local(d);
        let class = Class {
            ns: round_ns(transit.of(bytes)),
            per_byte_ns: transit.per_byte_ns,
        };
        (local, class)
    }

    /// Virtual arrival of a message that departed at `d`, as the receiver
    /// `seen` it arrive natively.
    pub fn arrival_seen(&self, d: u64, bytes: u64, seen: Seen) -> u64 {
        self.arrival_for(NO_SRC, d, bytes, seen, None)
    }

    /// `arrival_seen` of a message from `src` (its MPI_COMM_WORLD rank, or
    /// [`NO_SRC`]) with its pair's knobs `k` (`L`, `G`; `None`: every
    /// pair's). The native arrival is `d` plus the transit of the pair's
    /// class, less how much sooner `src`'s messages have come
    /// (`reserve_for`).
    pub fn arrival_for(&self, src: u32, d: u64, bytes: u64, seen: Seen, k: Option<&Knobs>) -> u64 {
        let k = k.unwrap_or(&self.knobs);
        if k.l == 0 && k.g_big == 0.0 {
            return 0;
        }
        let (d, class) = self.class_of(d, bytes);
        self.arrival_of(src, d, class, bytes, seen, k)
    }

    /// `arrival_for` of a departure `d` already on this rank's clock, whose
    /// pair's class has native transit `class` for its size.
    fn arrival_of(&self, src: u32, d: u64, class: Class, bytes: u64, seen: Seen, k: &Knobs) -> u64 {
        if k.l == 0 && k.g_big == 0.0 {
            return 0;
        }
        let floor = class.ns.saturating_sub(self.ahead_of(src));
        let native = (d + floor).max(seen.time());
        if k.g_big == 0.0 {
            // No G floor: the added L alone, without the float arithmetic.
            return native + k.l;
        }
        let extra_g = (k.g_big - class.per_byte_ns).max(0.0);
        native + round_ns(k.l as f64 + bytes_after_first(bytes) * extra_g)
    }

    /// `ready_at_for` of a message whose virtual arrival is `a`.
    fn ready_after(&self, a: u64, k: &Knobs) -> u64 {
        match self.last_delivery {
            Some(last) if k.g_r > 0 => a.max(last + k.g_r),
            _ => a,
        }
    }

    /// True when no knob moves an arrival (`L` and `G` zero for every pair;
    /// `arrival_for` asks the same of one pair's knobs): a message then
    /// arrives when it natively does, and `arrival` is 0 (no earlier
    /// than its native completion). The native transit measured at
    /// start-up could only hold messages that came faster than it was
    /// measured, and where ranks outnumber processors a measurement taken
    /// while a rank waited for its turn on one is far too long (47 us
    /// instead of 0.13 us at 8 B, MPICH, 10 ranks on 2 cores): every
    /// delivery would wait for it.
    pub fn native_arrivals(&self) -> bool {
        !self.any_l_or_g
    }

    /// True when what the receiver saw of native arrivals can change a
    /// delivery (an added `L` or `G`); the receiver need not look
    /// otherwise (an MPI call saved per blocking receive).
    pub fn uses_seen(&self) -> bool {
        self.any_l_or_g
    }

    /// Earliest time at which the message may be delivered: `max(a, previous
    /// delivery + g_r)`. Native completion is the caller's `now`.
    pub fn ready_at(&self, d: u64, bytes: u64) -> u64 {
        self.ready_at_seen(d, bytes, Seen::Unknown)
    }

    /// `ready_at` with what the receiver saw of the native arrival.
    pub fn ready_at_seen(&self, d: u64, bytes: u64, seen: Seen) -> u64 {
        self.ready_at_for(NO_SRC, d, bytes, seen, None)
    }

    /// `ready_at_seen` of a message from `src` with the pair's knobs `k`
    /// (as in `arrival_for`): the delivery waits `g_r` of *this* message's
    /// pair after the previous delivery, from anyone.
    pub fn ready_at_for(&self, src: u32, d: u64, bytes: u64, seen: Seen, k: Option<&Knobs>) -> u64 {
        let a = self.arrival_for(src, d, bytes, seen, k);
        self.ready_after(a, k.unwrap_or(&self.knobs))
    }

    /// Reserves the delivery of a message natively complete at `now`: its
    /// delivery time `r = max(now, ready_at)` is decided and recorded in
    /// one step, so the caller may wait for `r` after releasing whatever
    /// lock guards the gate. Deciding, waiting and only then recording let
    /// two threads (MPI_THREAD_MULTIPLE) both read the same last delivery
    /// and deliver less than `g_r` apart; reservations never do.
    pub fn reserve(&mut self, now: u64, d: u64, bytes: u64) -> u64 {
        self.reserve_seen(now, d, bytes, Seen::Unknown)
    }

    /// `reserve` with what the receiver saw of the native arrival.
    pub fn reserve_seen(&mut self, now: u64, d: u64, bytes: u64, seen: Seen) -> u64 {
        self.reserve_for(NO_SRC, now, d, 0, bytes, seen, None)
    }

    /// `reserve_seen` of a message from `src` with the pair's knobs `k`
    /// (as in `arrival_for`).
    ///
    /// The transit of a class of pairs is learned at start-up from one
    /// pair. Another pair of the class may be faster (a pair whose ranks
    /// have processors of their own, where the measured pair shared one:
    /// 5.5 against 12 us between two hosts of the test bed), and holding
    /// its messages to the class's transit would add the difference to
    /// every added L. A message natively here at `now` shows that its
    /// pair's transit is at most `now - d`: the gate remembers, per
    /// source, the most by which it beat the class's transit, and floors
    /// that source's messages that much earlier. A receiver that takes a
    /// message late only ever sees it later than it came, so nothing
    /// moves a floor up. The transit runs from the message's hand-off to
    /// MPI, `lag` ns before its departure `d` (`g_s`, `G` or a full send
    /// queue put `d` later; `u32::MAX`: that long or longer, which tells
    /// nothing): measured from `d`, a stream of messages
    /// under a `G` floor seemed to beat the transit by their queueing,
    /// and the floors of their source's later messages lost it.
    ///
    /// In line: the shim calls it once per delivery under L, and a call
    /// of its own cost ~22 instructions of its ~70 (`scripts/
    /// bench-instr-pingpong.sh openmpi LOGGP_ARM=L`; a plain `inline`
    /// was not taken).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn reserve_for(
        &mut self,
        src: u32,
        now: u64,
        d: u64,
        lag: u32,
        bytes: u64,
        seen: Seen,
        k: Option<&Knobs>,
    ) -> u64 {
        let (local, class) = self.class_of(d, bytes);
        let class_ns = class.ns;
        let one_way = now.saturating_sub(local);
        self.min_one_way = self.min_one_way.min(one_way);
        if self.any_l_or_g && src < MAX_TRACKED_SRC {
            // From the hand-off: `one_way + lag` (where `d` lies past `now`,
            // longer than it was: a floor learns less, never too much).
            let sooner = class_ns.saturating_sub(one_way.saturating_add(u64::from(lag)));
            if sooner > self.ahead_of(src) {
                let i = src as usize;
                if self.ahead.len() <= i {
                    self.ahead.resize(i + 1, 0);
                }
                self.ahead[i] = sooner;
            }
        }
        // `ready_at_for`, with the departure and transit found above.
        let k = k.unwrap_or(&self.knobs);
        let a = self.arrival_of(src, local, class, bytes, seen, k);
        let r = now.max(self.ready_after(a, k));
        self.last_delivery = Some(self.last_delivery.map_or(r, |l| l.max(r)));
        r
    }

    /// The smallest `now - d` over the reservations since the last call
    /// (None when there were none), and starts afresh. Start-up takes the
    /// native transit `L_native(s)` from it: the minimum one-way time from
    /// the sender's departure stamp to the receiver's gate, shim's own
    /// work between the two included, so that with every knob at zero the
    /// gate holds no message (it would, by the shim's own costs before the
    /// stamp and after the gate, if the transit were a half round trip).
    pub fn take_min_one_way(&mut self) -> Option<u64> {
        let m = std::mem::replace(&mut self.min_one_way, u64::MAX);
        (m != u64::MAX).then_some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(f: impl FnOnce(&mut Config)) -> Config {
        let mut c = Config::default();
        f(&mut c);
        c
    }

    #[test]
    fn no_knobs_departs_now() {
        let mut s = SendSide::new(&Config::default());
        assert_eq!(
            s.depart(100, 8),
            Departure {
                ready: 100,
                d: 100,
                complete_at: 100
            }
        );
        assert_eq!(s.depart(101, 8).d, 101);
    }

    #[test]
    fn a_stamp_is_the_departure_when_the_sender_decides_nothing() {
        // Only L set: the sender stamps (Config::sender_stamps_only), and a
        // stamp is what `depart` decides, in any order of the clock reads.
        let c = cfg(|c| c.l = 5_000);
        assert!(c.sender_stamps_only());
        let (mut full, mut stamped) = (SendSide::new(&c), SendSide::new(&c));
        for (now, bytes) in [(100, 8), (90, 1 << 20), (100, 0), (250, 64), (240, 8)] {
            assert_eq!(stamped.stamp(now), full.depart(now, bytes), "at {now}");
        }
        for f in [
            |c: &mut Config| c.o_s = 1,
            |c: &mut Config| c.g_s = 1,
            |c: &mut Config| c.g_big = 0.5,
            |c: &mut Config| c.l_dist = crate::dist::Dist::Exp,
        ] {
            assert!(!cfg(f).sender_stamps_only());
        }
    }

    #[test]
    fn g_s_spaces_departures() {
        let mut s = SendSide::new(&cfg(|c| c.g_s = 20_000));
        let ds: Vec<u64> = (0..4).map(|i| s.depart(1_000 + i, 8).d).collect();
        assert_eq!(ds, vec![1_000, 21_000, 41_000, 61_000]);
        // A later message after an idle period departs at once.
        assert_eq!(s.depart(200_000, 8).d, 200_000);
    }

    #[test]
    fn g_and_g_s_add_as_in_loggp() {
        // g + (s-1)G: 1001 bytes at 10 ns/B occupy the link 10 us, then g_s.
        let mut s = SendSide::new(&cfg(|c| {
            c.g_s = 5_000;
            c.g_big = 10.0
        }));
        let first = s.depart(0, 1001);
        assert_eq!(first.d, 0);
        assert_eq!(first.complete_at, 10_000);
        assert_eq!(s.depart(0, 1).d, 15_000);
    }

    #[test]
    fn full_send_queue_holds_the_sender() {
        let mut s = SendSide::new(&cfg(|c| {
            c.g_s = 10_000;
            c.send_queue = 2
        }));
        // d = 0 (departs now, not queued), 10us, 20us (two queued).
        assert_eq!(s.depart(0, 8).ready, 0);
        assert_eq!(s.depart(0, 8).d, 10_000);
        assert_eq!(s.depart(0, 8).d, 20_000);
        assert_eq!(s.queued(0), 2);
        // Queue full: wait for the oldest future departure (10us).
        let dep = s.depart(0, 8);
        assert_eq!(dep.ready, 10_000);
        assert_eq!(dep.d, 30_000);
    }

    #[test]
    fn arrival_adds_l_and_extra_g() {
        let t = Transit {
            base_ns: 200.0,
            per_byte_ns: 0.125,
            ..Transit::default()
        };
        let g = RecvGate::new(
            &cfg(|c| {
                c.l = 5_000;
                c.g_big = 10.0
            }),
            t,
        );
        // 8 B: 200 + 1 + 5000 + 7 * 9.875 = 5270.125 -> 5270
        assert_eq!(g.arrival(1_000, 8), 1_000 + 5_270);
        // G below native adds nothing.
        let g2 = RecvGate::new(&cfg(|c| c.g_big = 0.1), t);
        assert_eq!(g2.arrival(0, 1000), 325);
    }

    /// The delivery rule under contention (DESIGN.md §1, "Added L is
    /// additive"): transit 1 us uncontended, L = +20 us.
    fn contention_gate() -> RecvGate {
        RecvGate::new(
            &cfg(|c| c.l = 20_000),
            Transit::from_points(&[(8, 1_000.0), (16_384, 1_000.0)]),
        )
    }

    #[test]
    fn uncontended_message_arrives_l_after_its_transit() {
        let mut g = contention_gate();
        // Sent at 10 us; the receiver waited for it and saw it come at
        // 11 us, its uncontended arrival: delivered L later, at 31 us.
        assert_eq!(
            g.reserve_seen(11_000, 10_000, 8, Seen::of(true, 11_000)),
            31_000
        );
        // Nothing seen: the same, from the transit.
        assert_eq!(g.reserve_seen(11_000, 10_000, 8, Seen::Unknown), 31_000);
    }

    #[test]
    fn contended_message_still_arrives_l_later_than_natively() {
        let mut g = contention_gate();
        // Sent at 10 us; natively 6 us late (it came at 17 us, not 11 us)
        // while the receiver waited. A LogGP machine with L raised
        // delivers it L after it came: 37 us, not max(17, 31) = 31.
        assert_eq!(
            g.reserve_seen(17_000, 10_000, 8, Seen::of(true, 17_000)),
            37_000
        );
        // The old rule let the 6 us of contention absorb 6 us of L.
        assert_eq!(contention_gate().reserve(17_000, 10_000, 8), 31_000);
    }

    #[test]
    fn messages_that_came_together_are_delivered_together() {
        // A Waitall saw two messages come at 17 us: both are delivered at
        // 37 us. The second is reserved after the wait for the first, at
        // 37 us; it still came at 17 us, not at 37 us.
        let mut g = contention_gate();
        assert_eq!(
            g.reserve_seen(17_000, 10_000, 8, Seen::CameAt(17_000)),
            37_000
        );
        assert_eq!(
            g.reserve_seen(37_000, 10_500, 8, Seen::CameAt(17_000)),
            37_000
        );
    }

    #[test]
    fn message_that_arrived_during_computation_overlaps_l() {
        // Sent at 10 us; the receiver computed until 25 us and found it
        // there (a look before the wait saw it): L overlapped the
        // computation, delivery at 31 us.
        let mut g = contention_gate();
        assert_eq!(
            g.reserve_seen(25_100, 10_000, 8, Seen::of(false, 25_100)),
            31_000
        );
        // Had it computed until 40 us, it would wait for nothing.
        let mut g = contention_gate();
        assert_eq!(
            g.reserve_seen(40_100, 10_000, 8, Seen::of(false, 40_100)),
            40_100
        );
    }

    #[test]
    fn probe_that_waited_sees_the_message_come_late() {
        // A blocking probe that found nothing at first and saw the message
        // come at 17 us is a receiver that waited: visible at 37 us.
        let g = contention_gate();
        assert_eq!(g.ready_at_seen(10_000, 8, Seen::of(true, 17_000)), 37_000);
        // A probe that finds it at once learns nothing: 31 us.
        assert_eq!(g.ready_at_seen(10_000, 8, Seen::of(false, 17_050)), 31_000);
    }

    #[test]
    fn seen_matters_only_with_added_l_or_g() {
        let t = Transit::from_points(&[(8, 1_000.0), (1 << 20, 100_000.0)]);
        assert!(!RecvGate::new(&Config::default(), t).uses_seen());
        assert!(!RecvGate::new(&cfg(|c| c.g_r = 5_000), t).uses_seen());
        assert!(RecvGate::new(&cfg(|c| c.l = 1), t).uses_seen());
        // Any G floor: the look is cheap beside a bandwidth limit.
        assert!(RecvGate::new(&cfg(|c| c.g_big = 1.0), t).uses_seen());
        // At zero knobs a seen arrival changes nothing: it is never later
        // than the receiver's own now.
        let mut g = RecvGate::new(&Config::default(), t);
        assert_eq!(
            g.reserve_seen(17_000, 10_000, 8, Seen::CameAt(17_000)),
            17_000
        );
    }

    #[test]
    fn overlap_hides_latency() {
        // Message departed at 0 with L=50us; receiver asks at 200us: no delay.
        let mut g = RecvGate::new(&cfg(|c| c.l = 50_000), Transit::default());
        assert_eq!(g.reserve(200_000, 0, 8), 200_000);
        // With L=500us it is not there yet at 200us: delivered at 500us.
        let mut g = RecvGate::new(&cfg(|c| c.l = 500_000), Transit::default());
        assert_eq!(g.reserve(200_000, 0, 8), 500_000);
    }

    #[test]
    fn min_one_way_is_learned_and_restarted() {
        let mut g = RecvGate::new(&Config::default(), Transit::default());
        assert_eq!(g.take_min_one_way(), None);
        g.reserve(1_300, 1_000, 8);
        g.reserve(2_250, 2_000, 8);
        g.reserve(3_400, 3_000, 8);
        assert_eq!(g.take_min_one_way(), Some(250));
        // A stamp from a clock ahead of ours counts as zero, never wraps.
        g.reserve(5_000, 5_100, 8);
        assert_eq!(g.take_min_one_way(), Some(0));
        assert_eq!(g.take_min_one_way(), None);
    }

    #[test]
    fn a_source_faster_than_its_class_is_floored_at_its_own_transit() {
        // The class's transit was learned from a slow pair: 12 us at 8 B.
        let t = Transit::from_points(&[(8, 12_000.0), (1 << 20, 100_000.0)]);
        let mut g = RecvGate::new(&cfg(|c| c.l = 20_000), t);
        // Before source 3 has sent anything, the class's transit holds.
        assert_eq!(g.ready_at_for(3, 0, 8, Seen::Unknown, None), 32_000);
        // Its first message came 5.5 us after departure: that is its
        // transit at most, and it is floored there already: + L = 25.5 us.
        assert_eq!(
            g.reserve_for(3, 5_500, 0, 0, 8, Seen::Unknown, None),
            25_500
        );
        // Its next message is floored at 5.5 us: + L = 25.5 us.
        assert_eq!(
            g.reserve_for(3, 105_500, 100_000, 0, 8, Seen::Unknown, None),
            125_500
        );
        // And at the other sizes by as much (the class's curve less 6.5).
        assert_eq!(
            g.ready_at_for(3, 200_000, 1 << 20, Seen::Unknown, None),
            200_000 + 100_000 - 6_500 + 20_000
        );
        // Another source keeps the class's transit.
        assert_eq!(g.ready_at_for(2, 300_000, 8, Seen::Unknown, None), 332_000);
        // Taken late (the receiver was busy), a message says nothing new:
        // source 3 stays 6.5 us ahead.
        assert_eq!(
            g.reserve_for(3, 450_000, 400_000, 0, 8, Seen::Unknown, None),
            450_000
        );
        assert_eq!(g.ready_at_for(3, 500_000, 8, Seen::Unknown, None), 525_500);
        // A source that beat the class by more moves only its own floor.
        g.reserve_for(7, 601_000, 600_000, 0, 8, Seen::Unknown, None);
        assert_eq!(g.ready_at_for(7, 700_000, 8, Seen::Unknown, None), 721_000);
        assert_eq!(g.ready_at_for(3, 700_000, 8, Seen::Unknown, None), 725_500);
        // No source named (NO_SRC), or ranks beyond the tracked ones: the
        // class's transit.
        assert_eq!(
            g.ready_at_for(NO_SRC, 800_000, 8, Seen::Unknown, None),
            832_000
        );
        g.reserve_for(MAX_TRACKED_SRC, 901_000, 900_000, 0, 8, Seen::Unknown, None);
        assert_eq!(
            g.ready_at_for(MAX_TRACKED_SRC, 1_000_000, 8, Seen::Unknown, None),
            1_032_000
        );
    }

    /// A stream under a `G` floor: the sender hands each message to MPI
    /// at its native pace (every 5 us) while the floor departs them every
    /// 10 us, `lag` apart. Measured from the departure, each later
    /// message seemed to beat the transit by its queueing, and the
    /// source's floor lost the transit (deliveries 5 us apart, the
    /// native pace). From the hand-off they stay the floor's 10 us
    /// apart; a message whose lag is unknown teaches nothing.
    #[test]
    fn a_floors_queueing_is_not_a_faster_transit() {
        let bytes = 100_000;
        let t = Transit::from_points(&[(8, 1_000.0), (1 << 20, 1_000.0 + 0.05 * (1 << 20) as f64)]);
        let c = cfg(|c| c.g_big = 0.1);
        let (mut send, mut g) = (SendSide::new(&c), RecvGate::new(&c, t));
        let transit = round_ns(t.of(bytes));
        let mut last: Option<(u64, u64)> = None;
        for k in 0..8u64 {
            let handed = 5_000 * k;
            let dep = send.depart(handed, bytes);
            let lag = u32::try_from(dep.d - dep.ready).unwrap();
            let now = (handed + transit).max(last.map_or(0, |l| l.1));
            let r = g.reserve_for(3, now, dep.d, lag, bytes, Seen::Unknown, None);
            assert!(
                r >= dep.d + transit,
                "message {k}: delivered before its floor"
            );
            if let Some((d0, r0)) = last {
                assert_eq!(r - r0, dep.d - d0, "message {k}");
            }
            last = Some((dep.d, r));
        }
        let mut g = RecvGate::new(&c, t);
        g.reserve_for(3, 50_000, 60_000, u32::MAX, bytes, Seen::Unknown, None);
        assert!(g.ahead.is_empty());
    }

    #[test]
    fn without_l_or_g_nothing_is_learned_per_source() {
        let t = Transit::from_points(&[(8, 12_000.0), (1 << 20, 100_000.0)]);
        let mut g = RecvGate::new(&cfg(|c| c.g_r = 1_000), t);
        g.reserve_for(3, 5_500, 0, 0, 8, Seen::Unknown, None);
        assert!(g.ahead.is_empty());
    }

    #[test]
    fn zero_l_and_g_never_hold_whatever_the_transit() {
        // A transit measured on an oversubscribed host (47 us at 8 B).
        let t = Transit::from_points(&[(8, 47_000.0), (1 << 20, 268_000.0)]);
        let mut g = RecvGate::new(&Config::default(), t);
        assert!(g.native_arrivals());
        assert_eq!(g.arrival(1_000, 8), 0);
        assert_eq!(g.ready_at(1_000, 8), 0);
        // Delivered when natively complete, even 0.1 us after departure.
        assert_eq!(g.reserve(1_100, 1_000, 8), 1_100);
        // The one-way time is still learned.
        assert_eq!(g.take_min_one_way(), Some(100));
        // g_r alone spaces deliveries from their native completion.
        let mut g = RecvGate::new(&cfg(|c| c.g_r = 5_000), t);
        assert_eq!(g.reserve(1_100, 1_000, 8), 1_100);
        assert_eq!(g.reserve(1_200, 1_150, 8), 6_100);
        // Any L or G: the transit counts again.
        let g = RecvGate::new(&cfg(|c| c.l = 1), t);
        assert!(!g.native_arrivals());
        assert_eq!(g.arrival(1_000, 8), 48_001);
    }

    #[test]
    fn g_r_spaces_deliveries() {
        let mut g = RecvGate::new(&cfg(|c| c.g_r = 20_000), Transit::default());
        assert_eq!(g.reserve(0, 0, 8), 0);
        assert_eq!(g.reserve(1_000, 0, 8), 20_000);
        assert_eq!(g.ready_at(0, 8), 40_000);
        assert_eq!(g.reserve(50_000, 0, 8), 50_000);
    }

    /// Two threads gate at once: whatever the interleaving of their
    /// reservations, the deliveries are `g_r` apart. (The engine used to
    /// compute `ready_at`, drop the lock, wait, and record afterwards:
    /// both threads then read the same last delivery and could deliver
    /// together.)
    #[test]
    fn concurrent_reservations_stay_g_r_apart() {
        let g_r = 20_000;
        // L = 1 ns: departures in the future of the gate's clock stand for
        // messages that arrive later (at zero L and G arrivals are native).
        for order in [[0usize, 1], [1, 0]] {
            let mut g = RecvGate::new(
                &cfg(|c| {
                    c.g_r = g_r;
                    c.l = 1
                }),
                Transit::default(),
            );
            // Thread 0's message is ready at 100us, thread 1's at 50us;
            // both reach the gate at 10us.
            let d = [100_000, 50_000];
            let mut r = [0u64; 2];
            for &k in &order {
                r[k] = g.reserve(10_000, d[k], 0);
            }
            assert!(r[0].abs_diff(r[1]) >= g_r, "order {order:?}: {r:?}");
            assert!(r[0] >= 100_000 && r[1] >= 50_000, "order {order:?}: {r:?}");
        }
        // Real threads through a mutex, as in the engine.
        let gate = std::sync::Mutex::new(RecvGate::new(
            &cfg(|c| {
                c.g_r = g_r;
                c.l = 1
            }),
            Transit::default(),
        ));
        let all: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4u64)
                .map(|t| {
                    let gate = &gate;
                    s.spawn(move || {
                        (0..250u64)
                            .map(|i| {
                                gate.lock()
                                    .unwrap()
                                    .reserve(i * 1_000, t * 7 + i * 3_000, 8)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = all.clone();
        sorted.sort_unstable();
        for w in sorted.windows(2) {
            assert!(
                w[1] - w[0] >= g_r,
                "two deliveries {} and {} ns",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn targeted_knobs_apply_per_message() {
        // L=+20us between ranks 0 and 1 only, g_r 10us from rank 2 only.
        let c = Config::from_vars([
            ("LOGGP_L", "20us@pairs=0:1"),
            ("LOGGP_G_R", "10us@from=2"),
            ("LOGGP_G_S", "5us@to=1"),
        ])
        .unwrap();
        let pair = |src, dst| crate::target::Pair {
            src,
            dst,
            same_host: true,
        };
        let mut g = RecvGate::new(&c, Transit::from_points(&[(8, 1_000.0)]));
        assert!(g.uses_seen());
        // At rank 0: from 1 the message waits L; from 2 it does not.
        let k1 = c.knobs(pair(1, 0));
        let k2 = c.knobs(pair(2, 0));
        assert_eq!(
            g.reserve_for(NO_SRC, 1_000, 0, 0, 8, Seen::Unknown, Some(&k1)),
            21_000
        );
        // From 2: no L, but 10 us after the previous delivery (from 1).
        assert_eq!(
            g.reserve_for(NO_SRC, 21_000, 20_500, 0, 8, Seen::Unknown, Some(&k2)),
            31_000
        );
        assert_eq!(
            g.reserve_for(NO_SRC, 42_000, 41_000, 0, 8, Seen::Unknown, Some(&k2)),
            42_000
        );
        // From 1: L, and no gap.
        assert_eq!(
            g.ready_at_for(NO_SRC, 32_000, 8, Seen::Unknown, Some(&k1)),
            53_000
        );
        assert_eq!(
            g.ready_at_for(NO_SRC, 1_000, 8, Seen::Unknown, Some(&k1)),
            22_000
        );
        // The sender: the gap after a message to 1, none after one to 2.
        let mut s = SendSide::new(&c);
        let to1 = c.knobs(pair(0, 1));
        let to2 = c.knobs(pair(0, 2));
        assert_eq!(s.depart_with(0, 8, to1.g_s, to1.g_big).d, 0);
        assert_eq!(s.depart_with(0, 8, to2.g_s, to2.g_big).d, 5_000);
        assert_eq!(s.depart_with(5_000, 8, to2.g_s, to2.g_big).d, 5_000);
    }

    #[test]
    fn transit_fit() {
        let t = Transit::from_two_points((8, 201.0), (1_048_584, 131_273.0));
        assert!((t.per_byte_ns - 0.125).abs() < 1e-3, "{t:?}");
        assert!((t.base_ns - 200.0).abs() < 1.0, "{t:?}");
        let flat = Transit::from_two_points((8, 300.0), (1024, 250.0));
        assert_eq!(flat.per_byte_ns, 0.0);
    }

    #[test]
    fn transit_follows_a_protocol_change() {
        // Eager up to 4 KiB, then a rendezvous step: one line through the
        // ends would put 16 KiB at ~2.3 us; the points say 6 us.
        let t = Transit::from_points(&[
            (1_048_576, 70_000.0),
            (8, 400.0),
            (4096, 1_000.0),
            (16_384, 6_000.0),
            (262_144, 20_000.0),
        ]);
        assert_eq!(t.of(8), 400.0);
        assert_eq!(t.of(0), 400.0);
        assert!((t.of(16_384) - 6_000.0).abs() < 1e-9);
        assert!((t.of(10_240) - 3_500.0).abs() < 1e-6, "{}", t.of(10_240));
        // Beyond the last point: the last segment's slope.
        let slope = 50_000.0 / (1_048_576.0 - 262_144.0);
        assert!((t.per_byte_ns - slope).abs() < 1e-12);
        assert!((t.of(2_097_152) - (70_000.0 + slope * 1_048_576.0)).abs() < 1e-6);
        assert_eq!(t.points().len(), 5);
    }

    /// `flat_head` is what `of` gives, rounded, at every size up to it,
    /// and `of` differs just beyond it (where the model rises there), for
    /// models through no, one, two and several points.
    #[test]
    fn the_flat_head_is_the_model_at_small_sizes() {
        let models = [
            Transit::default(),
            Transit::from_points(&[(8, 240.4)]),
            Transit::from_two_points((8, 240.6), (1 << 20, 60_000.0)),
            Transit::from_points(&[(1, 200.0), (64, 210.0), (4096, 900.0), (1 << 20, 60_000.0)]),
            Transit::from_two_points((16, 300.0), (1024, 250.0)),
        ];
        for t in models {
            let (upto, ns) = t.flat_head();
            for b in 0..=upto {
                assert_eq!(round_ns(t.of(b)), ns, "{t:?} at {b} B");
            }
            if t.of(upto + 1) > t.of(upto) + 0.5 {
                assert_ne!(round_ns(t.of(upto + 1)), ns, "{t:?} beyond {upto} B");
            }
        }
        let t = Transit::from_points(&[(1, 200.0), (64, 210.0), (4096, 900.0)]);
        assert_eq!(t.flat_head(), (1, 200));
        assert_eq!(Transit::from_points(&[(8, 240.4)]).flat_head(), (0, 240));
    }

    #[test]
    fn transit_never_falls_with_size() {
        // Noise: 1 KiB measured faster than 8 B.
        let t = Transit::from_points(&[(8, 500.0), (1024, 450.0), (4096, 900.0)]);
        assert_eq!(t.of(1024), 500.0);
        assert!(t.of(512) >= 500.0);
        let one = Transit::from_points(&[(8, 300.0)]);
        assert_eq!(one.of(1 << 20), 300.0);
    }
}
