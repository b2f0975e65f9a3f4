//! Clocks across hosts (DESIGN.md §1, "Clocks").
//!
//! On one host every rank reads the same CLOCK_MONOTONIC, and a departure
//! `d` stamped by the sender can be compared with the receiver's "now" as
//! is. Across hosts the clocks differ by an offset (µs to seconds) and
//! drift apart (tens of ppm). The method chosen here is to **synchronise at
//! start-up and re-check** (DESIGN.md's second way):
//!
//! * one *reference* clock per job (the clock of rank 0's host). Each host
//!   learns a [`ClockMap`] from its own clock to the reference by
//!   Cristian's method: timestamped ping-pongs with rank 0, of which the
//!   one with the shortest round trip decides ([`estimate_offset`]; its
//!   error is at most half that round trip, and exactly half the path's
//!   asymmetry). Every rank of a host uses the host's one map, so messages
//!   between ranks of one host see no synchronisation error at all;
//! * a sender writes its departure in the reference time base, tagged with
//!   its host ([`Stamp`]); the receiver turns it back into its own clock and
//!   picks the native transit of the pair's class (same host, other host);
//! * drift is taken off by each receiver, per sending host, from the
//!   messages it gets ([`DriftCorrection`], [`SkewTrack`]): the lower
//!   envelope of one-way times (receipt minus hand-off through the maps)
//!   is a line whose slope is the two clocks' relative drift; departures
//!   are moved by that slope times the time since the maps were measured.
//!   Nothing extra travels: the header says how long before the virtual
//!   departure the message was handed to MPI, so that the envelope is
//!   never pulled down by `g_s`, `G` or a full send queue. (A [`DriftFit`]
//!   of repeated synchronisations, the other way, is not used: it needs
//!   rank 0 to answer while the application runs.)
//!
//! Why not learn, per peer, the minimum of `local completion − d` (the
//! other way)? `d` is a *virtual* departure: under `g_s`, `G` or a full
//! send queue it lies later than the moment the data left, by an amount
//! only the sender knows, so those samples are biased low exactly when the
//! knobs are on, and a minimum follows the low outliers; it also needs a
//! message from every peer before the first delivery can be timed, and it
//! mixes clock offset and native transit into one number per peer (O(P)
//! state per rank, no separation of the two classes of transit).
//!
//! Everything here is pure: times are nanoseconds passed in.

use crate::units;
use crate::vt::Transit;

/// The reference time base starts at this value at the reference's
/// synchronisation instant, so that stamps of ranks whose clocks lag the
/// reference (by up to ~18 minutes) stay positive.
pub const REF_BASE: u64 = 1 << 40;

/// Bits of a stamp that hold the time; the bits above hold the sender's
/// host tag (host index + 1; 0 = one host, no translation). 2^52 ns is
/// ~52 days of job time after the reference base.
pub const STAMP_TIME_BITS: u32 = 52;
const TIME_MASK: u64 = (1 << STAMP_TIME_BITS) - 1;
/// Most host tags a stamp can carry (hosts beyond share the last tag's
/// class test: see [`Stamp::encode`]).
pub const MAX_HOST_TAG: u64 = (1 << (64 - STAMP_TIME_BITS)) - 1;

/// One timestamped ping-pong with the reference: sent and received on this
/// host's clock, `peer` read on the reference clock in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncSample {
    pub sent: u64,
    pub peer: u64,
    pub received: u64,
}

/// An offset `reference − local` at local time `at`, with its uncertainty
/// (half the round trip of the sample it came from).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffsetEstimate {
    pub at: u64,
    pub offset_ns: f64,
    pub uncertainty_ns: f64,
}

/// Cristian's estimate from ping-pongs: the sample with the shortest round
/// trip, assuming the reference read its clock half-way. Samples whose
/// reply came late (a busy peer, a first connection) have long round trips
/// and are passed over. `None` for no (valid) sample.
pub fn estimate_offset(samples: &[SyncSample]) -> Option<OffsetEstimate> {
    samples
        .iter()
        .filter(|s| s.received >= s.sent)
        .min_by_key(|s| s.received - s.sent)
        .map(|s| {
            let rtt = (s.received - s.sent) as f64;
            let mid = s.sent as f64 + rtt / 2.0;
            OffsetEstimate {
                at: s.sent + (s.received - s.sent) / 2,
                offset_ns: s.peer as f64 - mid,
                uncertainty_ns: rtt / 2.0,
            }
        })
}

/// A map from this host's clock to the reference: `ref(t) = t + offset +
/// rate·(t − epoch)`, shifted so that the reference time base starts at
/// [`REF_BASE`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockMap {
    /// Local time at which `offset_ns` holds.
    pub epoch: u64,
    /// `reference − local` at `epoch`, ns, including the base shift.
    pub offset_ns: f64,
    /// d(reference − local)/d(local), e.g. 50e-6 for 50 ppm.
    pub rate: f64,
}

impl ClockMap {
    /// The identity up to the base shift: the reference host itself, whose
    /// reference time base starts at `epoch`.
    pub fn reference(epoch: u64) -> ClockMap {
        ClockMap {
            epoch,
            offset_ns: REF_BASE as f64 - epoch as f64,
            rate: 0.0,
        }
    }

    /// From a measured offset `reference clock − local clock` and the
    /// reference's own epoch (its clock at its base).
    pub fn from_offset(est: &OffsetEstimate, ref_epoch: u64, rate: f64) -> ClockMap {
        ClockMap {
            epoch: est.at,
            offset_ns: est.offset_ns + REF_BASE as f64 - ref_epoch as f64,
            rate,
        }
    }

    /// Local time → reference time base.
    pub fn to_ref(&self, local: u64) -> u64 {
        let dt = local as f64 - self.epoch as f64;
        let shift = self.offset_ns + self.rate * dt;
        add_signed(local, shift)
    }

    /// Reference time base → local time (the inverse of [`to_ref`](Self::to_ref)).
    pub fn to_local(&self, reference: u64) -> u64 {
        // ref = t + off + rate (t − e)  ⇒  t = (ref − off + rate·e) / (1 + rate)
        let e = self.epoch as f64;
        let r = reference as f64 - self.offset_ns;
        // Solve around the epoch to keep the numbers small.
        let dt = (r - e) / (1.0 + self.rate);
        add_signed(self.epoch, dt)
    }
}

fn add_signed(t: u64, delta: f64) -> u64 {
    let d = units::round_ns(delta.abs());
    if delta >= 0.0 {
        t.saturating_add(d)
    } else {
        t.saturating_sub(d)
    }
}

/// Fits offset and rate to the offsets found by successive checks:
/// weighted least squares (weight 1/uncertainty²) of offset over local
/// time. With one check the rate is zero.
#[derive(Clone, Debug, Default)]
pub struct DriftFit {
    checks: Vec<OffsetEstimate>,
}

impl DriftFit {
    pub fn new() -> DriftFit {
        DriftFit::default()
    }

    pub fn add(&mut self, e: OffsetEstimate) {
        self.checks.push(e);
    }

    pub fn len(&self) -> usize {
        self.checks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// The map from local time to the reference (before the base shift:
    /// `offset_ns` is `reference − local` at `epoch`).
    pub fn fit(&self) -> Option<ClockMap> {
        let last = self.checks.last()?;
        let w = |e: &OffsetEstimate| 1.0 / e.uncertainty_ns.max(1.0).powi(2);
        let t0 = last.at as f64;
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for e in &self.checks {
            let (wi, x, y) = (w(e), e.at as f64 - t0, e.offset_ns);
            sw += wi;
            sx += wi * x;
            sy += wi * y;
            sxx += wi * x * x;
            sxy += wi * x * y;
        }
        let den = sw * sxx - sx * sx;
        let (rate, off) = if self.checks.len() >= 2 && den.abs() > 0.0 {
            let rate = (sw * sxy - sx * sy) / den;
            (rate, (sy - rate * sx) / sw)
        } else {
            (0.0, sy / sw)
        };
        Some(ClockMap {
            epoch: last.at,
            offset_ns: off,
            rate,
        })
    }
}

/// Window of the first minima of a [`SkewTrack`], ns.
pub const FIRST_WINDOW_NS: u64 = 10_000_000;
/// Window minima a track keeps; beyond, neighbours merge and the window
/// doubles, so that a track spans the whole run in bounded memory.
const WINDOWS: usize = 32;
/// Fewest window minima a fit is made from.
const MIN_WINDOWS: usize = 4;
/// Larger rates are not clocks' (real ones drift by tens of ppm; the test
/// aid by at most 1000 ppm): such a fit is left unused.
pub const MAX_RATE: f64 = 2e-3;
/// Message size classes with a track of their own (powers of four).
const SIZE_CLASSES: usize = 12;

/// The lower envelope of one-way delays from one sending host over the
/// receiver's time, and its slope: the drift of the sender's clock map
/// against the receiver's.
///
/// A sample is `y = arrival − departure`, both on the receiver's clock
/// (the departure through the start-up map): the native transit, plus
/// whatever queueing and lateness of the receiver added (never less), plus
/// the maps' error, which drift makes grow linearly. The samples' lower
/// envelope is therefore a line whose slope is the drift: samples that
/// came late (a busy receiver, a first connection) lie above it and do not
/// move it. The line is the one of Moon, Skelly and Towsley ("Estimation
/// and removal of clock skew from network delay measurements", INFOCOM
/// 1999): below every point, as close to them as possible on the whole
/// (minimum of Σ (yᵢ − a − b·xᵢ)), which is the edge of the points' lower
/// convex hull above their mean x. The points are the lowest samples of
/// windows of the receiver's time (10 ms at first, doubling to keep 32;
/// lowest against the current slope), so that the cost per sample is a
/// comparison and memory stays bounded.
#[derive(Clone, Debug, Default)]
pub struct SkewTrack {
    /// Receiver time of the first sample; windows are aligned to it.
    origin: Option<u64>,
    width: u64,
    /// The open window: its index and its minimum `(x, y)` (x from origin).
    open: Option<(u64, f64, f64)>,
    /// Closed windows' minima, in order of x.
    closed: Vec<(f64, f64)>,
    fit: Option<SkewFit>,
}

/// A track's line: slope, the typical height of window minima above it
/// (its noise), and the time the fitted minima span, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkewFit {
    pub rate: f64,
    pub noise_ns: f64,
    pub span_ns: f64,
}

impl SkewTrack {
    pub fn new() -> SkewTrack {
        SkewTrack {
            width: FIRST_WINDOW_NS,
            ..SkewTrack::default()
        }
    }

    /// One sample: one-way time `y` (ns, any sign) observed at receiver time
    /// `at`. True when the fit was renewed (a window closed).
    pub fn add(&mut self, at: u64, y: f64) -> bool {
        let origin = *self.origin.get_or_insert(at);
        if self.width == 0 {
            self.width = FIRST_WINDOW_NS;
        }
        let dx = at.saturating_sub(origin);
        let k = dx / self.width;
        let x = dx as f64;
        match self.open {
            Some((w, mx, my)) if w == k => {
                if y - self.tilt() * x < my - self.tilt() * mx {
                    self.open = Some((w, x, y));
                }
                false
            }
            Some((_, ox, oy)) => {
                self.closed.push((ox, oy));
                self.open = Some((k, x, y));
                if self.closed.len() > WINDOWS {
                    self.merge();
                    let kk = dx / self.width;
                    if let Some(o) = self.open.as_mut() {
                        o.0 = kk;
                    }
                }
                self.fit = lower_envelope(&self.closed);
                true
            }
            None => {
                self.open = Some((k, x, y));
                false
            }
        }
    }

    /// Doubles the window: of the minima that now share one, the lowest.
    fn merge(&mut self) {
        self.width *= 2;
        let w = self.width as f64;
        let tilt = self.tilt();
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(WINDOWS);
        for &(x, y) in &self.closed {
            match out.last_mut() {
                Some(last) if (last.0 / w).floor() == (x / w).floor() => {
                    if y - tilt * x < last.1 - tilt * last.0 {
                        *last = (x, y);
                    }
                }
                _ => out.push((x, y)),
            }
        }
        self.closed = out;
    }

    /// The slope a window's lowest sample is judged by: the current
    /// fit's. Where the drift over a window exceeds the jitter, the
    /// plainly lowest sample sits at the window's edge and is as noisy as
    /// one sample; the lowest above the tilted line is the best of all.
    fn tilt(&self) -> f64 {
        self.fit.map_or(0.0, |f| f.rate)
    }

    /// The current line, once at least four windows have closed.
    pub fn fit(&self) -> Option<SkewFit> {
        self.fit
    }
}

/// Moon et al.'s line under `points` (sorted by x): the lower hull's edge
/// over the mean x. `None` for fewer than [`MIN_WINDOWS`] points or no
/// spread in x.
fn lower_envelope(points: &[(f64, f64)]) -> Option<SkewFit> {
    if points.len() < MIN_WINDOWS {
        return None;
    }
    // Andrew's monotone chain, lower half.
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &p in points {
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    let span = points[points.len() - 1].0 - points[0].0;
    if hull.len() < 2 || span <= 0.0 {
        return None;
    }
    let mean = points.iter().map(|p| p.0).sum::<f64>() / points.len() as f64;
    let i = hull
        .windows(2)
        .position(|e| e[1].0 >= mean)
        .unwrap_or(hull.len() - 2);
    let (a, b) = (hull[i], hull[i + 1]);
    if b.0 <= a.0 {
        return None;
    }
    let rate = (b.1 - a.1) / (b.0 - a.0);
    let mut res: Vec<f64> = points
        .iter()
        .map(|p| p.1 - (a.1 + rate * (p.0 - a.0)))
        .collect();
    res.sort_by(f64::total_cmp);
    Some(SkewFit {
        rate,
        noise_ns: res[res.len() / 2].max(0.0),
        span_ns: span,
    })
}

/// Drift correction on the receiving side, per sending host: each host's
/// departures, read through the start-up maps, are moved by `rate · (t −
/// t₀)`, where the rate is its [`SkewTrack`]s' (one per class of message
/// size, so that a change of sizes does not read as drift; the track
/// spanning the longest time decides) and `t₀` the instant at which the
/// maps of the two hosts were measured, so that the start-up offset is
/// kept and only what the clocks drifted since is taken off. Nothing is
/// exchanged: each receiver learns from the messages it gets.
///
/// A rate is first used once the drift it implies over its span stands
/// out of the minima's noise (twice over), so that a short or noisy start
/// does not tilt the clocks of an undrifting pair; from then on every new
/// fit is used, each spanning more time than the last.
#[derive(Clone, Debug, Default)]
pub struct DriftCorrection {
    own: u64,
    peers: Vec<PeerDrift>,
}

#[derive(Clone, Debug, Default)]
struct PeerDrift {
    t0: u64,
    tracks: Vec<SkewTrack>,
    rate: f64,
    used: bool,
}

impl DriftCorrection {
    /// `own`: this rank's host tag; `epochs[tag − 1]`: when host `tag`'s
    /// map was measured, on this rank's clock (the reference host's: when
    /// its base was set).
    pub fn new(own: u64, epochs: &[u64]) -> DriftCorrection {
        let mine = own
            .checked_sub(1)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| epochs.get(i))
            .copied()
            .unwrap_or(0);
        let peers = epochs
            .iter()
            .enumerate()
            .map(|(i, &e)| {
                let tag = i as u64 + 1;
                // The reference's map has no error: a pair with it drifts
                // from the other host's measurement; two other hosts from
                // between theirs.
                let t0 = if tag == 1 {
                    mine
                } else if own == 1 {
                    e
                } else {
                    mine / 2 + e / 2 + (mine % 2 + e % 2) / 2
                };
                PeerDrift {
                    t0,
                    ..PeerDrift::default()
                }
            })
            .collect();
        DriftCorrection { own, peers }
    }

    fn peer(&self, tag: u64) -> Option<&PeerDrift> {
        if tag == self.own || tag == 0 {
            return None;
        }
        self.peers.get(usize::try_from(tag - 1).ok()?)
    }

    /// A message of `bytes` bytes from host `tag`, handed to MPI at `sent`
    /// (through the start-up map, on this clock), seen here at `at`;
    /// `transit` is the native transit expected for its size (it only
    /// flattens the sizes within one class).
    pub fn observe(&mut self, tag: u64, at: u64, sent: u64, transit: f64, bytes: u64) {
        if tag == self.own || tag == 0 {
            return;
        }
        let Some(p) = usize::try_from(tag - 1)
            .ok()
            .and_then(|i| self.peers.get_mut(i))
        else {
            return;
        };
        let class = ((63 - bytes.max(1).leading_zeros()) / 2) as usize;
        let class = class.min(SIZE_CLASSES - 1);
        if p.tracks.len() <= class {
            p.tracks.resize_with(class + 1, SkewTrack::new);
        }
        let y = at as f64 - sent as f64 - transit;
        if !p.tracks[class].add(at, y) {
            return;
        }
        let best = p
            .tracks
            .iter()
            .filter_map(|t| t.fit())
            .filter(|f| f.rate.abs() <= MAX_RATE)
            .max_by(|a, b| a.span_ns.total_cmp(&b.span_ns));
        if let Some(f) = best {
            if p.used || f.rate.abs() * f.span_ns >= 2.0 * f.noise_ns.max(1.0) {
                p.used = true;
                p.rate = f.rate;
            }
        }
    }

    /// The drift rate in use for host `tag` (0 until known).
    pub fn rate(&self, tag: u64) -> f64 {
        self.peer(tag).map_or(0.0, |p| p.rate)
    }

    /// A departure of host `tag` read through the start-up maps →
    /// corrected for the drift since.
    pub fn correct(&self, tag: u64, local: u64) -> u64 {
        match self.peer(tag) {
            // The rate is per ns of this clock, and the true departure on
            // it, `local + c`, is where it applies: c = rate·(local + c −
            // t₀) (100 ppm evaluated at `local` alone errs by 10 µs an hour).
            Some(p) if p.rate != 0.0 => add_signed(
                local,
                p.rate * (local as f64 - p.t0 as f64) / (1.0 - p.rate),
            ),
            _ => local,
        }
    }
}

/// A departure as it travels in the header: the sender's host tag in the
/// top bits, the time in the reference time base below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp;

impl Stamp {
    /// `tag` is the sender's host index + 1 (capped at [`MAX_HOST_TAG`]).
    pub fn encode(tag: u64, reference: u64) -> u64 {
        (tag.min(MAX_HOST_TAG) << STAMP_TIME_BITS) | (reference & TIME_MASK)
    }

    /// `(tag, time)`.
    pub fn decode(stamp: u64) -> (u64, u64) {
        (stamp >> STAMP_TIME_BITS, stamp & TIME_MASK)
    }
}

/// What a rank knows about the hosts of its job: its own host's map to the
/// reference, and the native transit of each class of pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hosts {
    /// This rank's host tag (host index + 1); 0 when the job has one host.
    pub tag: u64,
    pub map: ClockMap,
    /// Native transit between two ranks of different hosts, when measured.
    pub other_host: Option<Transit>,
}

impl Hosts {
    /// Departure `d` on this rank's clock → what the header carries.
    pub fn stamp(&self, d: u64) -> u64 {
        if self.tag == 0 {
            return d;
        }
        Stamp::encode(self.tag, self.map.to_ref(d))
    }

    /// What a header carried → `(departure on this rank's clock, the native
    /// transit of this pair's class when it is another host's)`.
    pub fn departure(&self, stamp: u64) -> (u64, Option<&Transit>) {
        let (tag, t) = Stamp::decode(stamp);
        if tag == 0 || self.tag == 0 {
            return (stamp, None);
        }
        let local = self.map.to_local(t);
        if tag == self.tag {
            (local, None)
        } else {
            (local, self.other_host.as_ref())
        }
    }
}

/// `LOGGP_TEST_CLOCK=<offset>,<drift>`: a testing aid that shifts and
/// drifts the clock this rank's shim sees: `shown(t) = t + offset +
/// drift·(t − start)`.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TestClock {
    pub offset_ns: i64,
    /// Parts per million (positive: this clock runs fast).
    pub drift_ppm: f64,
}

pub const TEST_CLOCK_ACCEPTED: &str = "<offset>,<drift>: a signed time with its unit and a drift \
     in ppm, e.g. +3ms,50ppm or -1s,-100ppm (|drift| at most 1000ppm)";

impl TestClock {
    pub fn parse(s: &str) -> Option<TestClock> {
        let (off, drift) = s.split_once(',')?;
        let off = off.trim();
        let (neg, mag) = match off.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, off.strip_prefix('+').unwrap_or(off)),
        };
        let mag = i64::try_from(units::parse_time_ns(mag)?).ok()?;
        let drift = drift.trim();
        let ppm = if drift == "0" {
            0.0
        } else {
            drift.strip_suffix("ppm")?.trim().parse::<f64>().ok()?
        };
        if !ppm.is_finite() || ppm.abs() > 1000.0 {
            return None;
        }
        Some(TestClock {
            offset_ns: if neg { -mag } else { mag },
            drift_ppm: ppm,
        })
    }

    pub fn is_identity(&self) -> bool {
        self.offset_ns == 0 && self.drift_ppm == 0.0
    }

    /// The clock as shown, from the true clock `t` and the true clock at
    /// start `start`.
    pub fn shown(&self, t: u64, start: u64) -> u64 {
        let drift = (t as f64 - start as f64) * self.drift_ppm * 1e-6;
        add_signed(t, self.offset_ns as f64 + drift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated host clock: `local(true) = true + offset + drift·true`.
    #[derive(Clone, Copy)]
    struct Clock {
        offset: f64,
        ppm: f64,
    }
    impl Clock {
        fn read(&self, t: f64) -> u64 {
            units::round_ns(t + 5e12 + self.offset + self.ppm * 1e-6 * t)
        }
    }

    /// A tiny deterministic generator for path delays.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// `n` ping-pongs at true time `t`: the local host sends, the
    /// reference answers. `out`/`back`: minimum one-way delays (ns), plus
    /// jitter up to `jitter`; `late` first samples wait 2 ms at the peer.
    #[allow(clippy::too_many_arguments)]
    fn pingpongs(
        local: Clock,
        reference: Clock,
        t: f64,
        n: usize,
        out: f64,
        back: f64,
        jitter: f64,
        late: usize,
        rng: &mut Lcg,
    ) -> Vec<SyncSample> {
        let mut v = Vec::new();
        let mut now = t;
        for i in 0..n {
            let sent = local.read(now);
            now += out + jitter * rng.next();
            if i < late {
                now += 2e6;
            }
            let peer = reference.read(now);
            now += back + jitter * rng.next();
            v.push(SyncSample {
                sent,
                peer,
                received: local.read(now),
            });
            now += 1_000.0;
        }
        v
    }

    /// Error (ns) of mapping a departure at true time `t` on host `a` to
    /// host `b`'s clock, against the truth.
    fn transfer_error(a: (&Clock, &ClockMap), b: (&Clock, &ClockMap), t: f64) -> f64 {
        let d = a.0.read(t);
        let got = b.1.to_local(a.1.to_ref(d));
        got as f64 - b.0.read(t) as f64
    }

    fn sync(
        local: Clock,
        reference: Clock,
        ref_epoch: u64,
        out: f64,
        back: f64,
        late: usize,
    ) -> ClockMap {
        let mut rng = Lcg(7);
        let s = pingpongs(
            local, reference, 1e6, 40, out, back, 3_000.0, late, &mut rng,
        );
        ClockMap::from_offset(&estimate_offset(&s).unwrap(), ref_epoch, 0.0)
    }

    #[test]
    fn offsets_of_one_second_either_way_cancel() {
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let rmap = ClockMap::reference(ref_epoch);
        for off in [1e9, -1e9, 3e6, -7.5e3] {
            let local = Clock {
                offset: off,
                ppm: 0.0,
            };
            let m = sync(local, reference, ref_epoch, 10_000.0, 10_000.0, 0);
            for t in [2e6, 1e9, 3.6e12] {
                // Symmetric paths with 3 µs of jitter each way: what is left
                // of the offset is the best sample's jitter asymmetry.
                let e1 = transfer_error((&local, &m), (&reference, &rmap), t);
                let e2 = transfer_error((&reference, &rmap), (&local, &m), t);
                assert!(e1.abs() <= 1_500.0, "off {off}: {e1}");
                assert!((e1 + e2).abs() <= 2.0, "off {off}: {e1} {e2}");
            }
        }
    }

    #[test]
    fn same_host_is_exact() {
        let c = Clock {
            offset: -1e9,
            ppm: 80.0,
        };
        let m = ClockMap {
            epoch: 12345,
            offset_ns: 9.87e8,
            rate: 3e-5,
        };
        for t in [0.0, 1e9, 3.6e12] {
            assert!(transfer_error((&c, &m), (&c, &m), t).abs() <= 1.0);
        }
    }

    #[test]
    fn asymmetric_paths_err_by_half_the_asymmetry_within_the_bound() {
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let local = Clock {
            offset: 4e8,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let rmap = ClockMap::reference(ref_epoch);
        let (out, back) = (30_000.0, 10_000.0);
        let mut rng = Lcg(3);
        let s = pingpongs(local, reference, 1e6, 40, out, back, 3_000.0, 0, &mut rng);
        let est = estimate_offset(&s).unwrap();
        let m = ClockMap::from_offset(&est, ref_epoch, 0.0);
        let e = transfer_error((&local, &m), (&reference, &rmap), 5e8);
        // Cristian's method cannot see asymmetry: the estimate is off by
        // (out − back)/2, never by more than the reported uncertainty.
        assert!((e - (out - back) / 2.0).abs() < 3_000.0, "error {e}");
        assert!(e.abs() <= est.uncertainty_ns + 1.0);
    }

    #[test]
    fn late_first_replies_are_passed_over() {
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let local = Clock {
            offset: -2.5e8,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let rmap = ClockMap::reference(ref_epoch);
        // The first 10 of 40 replies are held 2 ms at the peer (start-up,
        // connection set-up): their round trips are long and they lose.
        let m = sync(local, reference, ref_epoch, 10_000.0, 10_000.0, 10);
        let e = transfer_error((&local, &m), (&reference, &rmap), 1e9);
        assert!(e.abs() < 3_000.0, "error {e}");
        // Only late samples: the estimate is poor and says so.
        let mut rng = Lcg(5);
        let s = pingpongs(
            local, reference, 1e6, 5, 10_000.0, 10_000.0, 0.0, 5, &mut rng,
        );
        let est = estimate_offset(&s).unwrap();
        assert!(est.uncertainty_ns > 1e6);
    }

    #[test]
    fn drift_of_100_ppm_over_an_hour_does_not_accumulate() {
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let rmap = ClockMap::reference(ref_epoch);
        for (off, ppm) in [(1e9, 100.0), (-1e9, -100.0), (3e6, 50.0), (0.0, -20.0)] {
            let local = Clock { offset: off, ppm };
            let mut fit = DriftFit::new();
            let mut rng = Lcg(11);
            let mut worst: f64 = 0.0;
            let mut unfit_err: f64 = 0.0;
            // A check every 10 s of a simulated hour; between checks the
            // map of the last fit is used.
            let mut map: Option<ClockMap> = None;
            let mut first: Option<ClockMap> = None;
            for k in 0..=360 {
                let t = 10e9 * k as f64;
                if let Some(m) = map {
                    for dt in [1e9, 5e9, 9.9e9] {
                        if t >= dt {
                            let at = t - 10e9 + dt;
                            let e = transfer_error((&local, &m), (&reference, &rmap), at);
                            if k > 2 {
                                worst = worst.max(e.abs());
                            }
                        }
                    }
                }
                let s = pingpongs(
                    local, reference, t, 20, 10_000.0, 10_000.0, 3_000.0, 0, &mut rng,
                );
                fit.add(estimate_offset(&s).unwrap());
                let f = fit.fit().unwrap();
                let m = ClockMap {
                    offset_ns: f.offset_ns + REF_BASE as f64 - ref_epoch as f64,
                    ..f
                };
                first.get_or_insert(m);
                map = Some(m);
            }
            // One start-up synchronisation alone: the error after an hour
            // is the drift (ppm · 3600 s), which the checks remove.
            let e0 = transfer_error((&local, &first.unwrap()), (&reference, &rmap), 3.6e12);
            unfit_err = unfit_err.max(e0.abs());
            assert!(unfit_err > ppm.abs() * 3.6e12 * 1e-6 * 0.9, "{unfit_err}");
            assert!(worst < 5_000.0, "off {off} ppm {ppm}: worst {worst} ns");
            let r = map.unwrap().rate;
            // rate of reference − local = −ppm/(1+ppm) per local ns
            assert!((r + ppm * 1e-6).abs() < 1e-7, "rate {r} for {ppm} ppm");
        }
    }

    /// A simulated hour of traffic between the reference host and a host
    /// of clock `local`, synchronised at start-up: a ping-pong every
    /// 20 ms, paths `out` (local → reference) and `back` with up to 3 µs of
    /// jitter, one sample in three seen up to 50 µs late (a busy receiver),
    /// and, with `late_first`, every message of the first 2 s 2 ms late.
    /// Returns, per direction, the largest change of the departure-mapping
    /// error after the first 10 s against the error left by start-up (ns),
    /// with correction and without, and the rate each side learned.
    fn hour(local: Clock, out: f64, back: f64, late_first: bool) -> ([f64; 2], [f64; 2], [f64; 2]) {
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let rmap = ClockMap::reference(ref_epoch);
        let mut rng = Lcg(17);
        let s = pingpongs(local, reference, 1e6, 40, out, back, 3_000.0, 0, &mut rng);
        let est = estimate_offset(&s).unwrap();
        let lmap = ClockMap::from_offset(&est, ref_epoch, 0.0);
        // Each side's view of when each host's map was measured.
        let ep_local_in_ref = rmap.to_local(lmap.to_ref(est.at));
        let mut at_ref = DriftCorrection::new(1, &[ref_epoch, ep_local_in_ref]);
        let mut at_local = DriftCorrection::new(2, &[lmap.to_local(REF_BASE), est.at]);
        // Error left by start-up, each direction (what correction keeps).
        let t_sync = 1e6;
        let e0 = [
            transfer_error((&local, &lmap), (&reference, &rmap), t_sync),
            transfer_error((&reference, &rmap), (&local, &lmap), t_sync),
        ];
        let (mut worst, mut unfixed) = ([0f64; 2], [0f64; 2]);
        let mut t = 2e8; // traffic begins after 0.2 s of start-up
        while t < 3.6e12 {
            for dir in 0..2 {
                let (sc, sm, rc, rm, path) = if dir == 0 {
                    (&local, &lmap, &reference, &rmap, out)
                } else {
                    (&reference, &rmap, &local, &lmap, back)
                };
                let mut delay = path + 3_000.0 * rng.next();
                if late_first && t < 2e9 {
                    delay += 2e6;
                }
                if rng.next() < 1.0 / 3.0 {
                    delay += 50_000.0 * rng.next();
                }
                let sent = sc.read(t);
                let mapped = rm.to_local(sm.to_ref(sent));
                let at = rc.read(t + delay);
                let (corr, tag) = if dir == 0 {
                    (&mut at_ref, 2)
                } else {
                    (&mut at_local, 1)
                };
                corr.observe(tag, at, mapped, 0.0, 8);
                let fixed = corr.correct(tag, mapped) as f64 - rc.read(t) as f64;
                let raw = mapped as f64 - rc.read(t) as f64;
                if t > 1e10 {
                    worst[dir] = worst[dir].max((fixed - e0[dir]).abs());
                    unfixed[dir] = unfixed[dir].max((raw - e0[dir]).abs());
                }
            }
            t += 2e7;
        }
        (worst, unfixed, [at_ref.rate(2), at_local.rate(1)])
    }

    #[test]
    fn drift_of_100_ppm_is_learned_from_messages_over_an_hour() {
        for (off, ppm) in [(1e9, 100.0), (-1e9, -100.0), (1e9, -100.0), (-1e9, 50.0)] {
            let local = Clock { offset: off, ppm };
            let (worst, unfixed, rate) = hour(local, 10_000.0, 10_000.0, false);
            for dir in 0..2 {
                // Uncorrected, an hour of drift: ppm · 3600 s.
                assert!(unfixed[dir] > ppm.abs() * 3.6e6 * 0.9, "{unfixed:?}");
                // Within a third of the paths' jitter (3 µs).
                assert!(worst[dir] < 1_000.0, "off {off} ppm {ppm}: {worst:?} ns");
            }
            // A fast local clock: its departures read late at the reference
            // (one-way times shrink, rate −ppm), the reference's read early
            // on it (+ppm, per local ns).
            assert!((rate[0] + ppm * 1e-6).abs() < 3e-8, "{rate:?}");
            assert!((rate[1] - ppm * 1e-6).abs() < 3e-8, "{rate:?}");
        }
    }

    #[test]
    fn asymmetric_paths_keep_the_start_up_error_and_no_more() {
        // 30 µs out, 10 µs back: start-up is off by 10 µs (half the
        // asymmetry, as Cristian's method must be); drift adds nothing.
        let local = Clock {
            offset: -1e9,
            ppm: 100.0,
        };
        let (worst, _, _) = hour(local, 30_000.0, 10_000.0, false);
        assert!(worst.iter().all(|&w| w < 1_000.0), "{worst:?}");
    }

    #[test]
    fn a_peer_whose_first_messages_come_late() {
        let local = Clock {
            offset: 1e9,
            ppm: -100.0,
        };
        let (worst, _, rate) = hour(local, 10_000.0, 10_000.0, true);
        assert!(worst.iter().all(|&w| w < 1_000.0), "{worst:?}");
        assert!((rate[0] - 1e-4).abs() < 3e-8, "{rate:?}");
    }

    #[test]
    fn clocks_that_do_not_drift_are_left_alone() {
        let local = Clock {
            offset: 1e9,
            ppm: 0.0,
        };
        let (worst, _, rate) = hour(local, 10_000.0, 10_000.0, true);
        assert!(worst.iter().all(|&w| w < 1_000.0), "{worst:?}");
        assert!(rate.iter().all(|r| r.abs() < 1e-8), "{rate:?}");
    }

    #[test]
    fn a_change_of_message_sizes_is_not_drift() {
        // Host 2's messages: 8 B for 10 s, then 1 MiB (transit 300 µs more,
        // unknown to the caller: transit passed as 0): no drift.
        let mut c = DriftCorrection::new(1, &[0, 0]);
        let mut t = 1_000_000u64;
        while t < 60_000_000_000 {
            let (bytes, y) = if t < 10_000_000_000 {
                (8, 10_000)
            } else {
                (1 << 20, 310_000)
            };
            c.observe(2, t + y, t, 0.0, bytes);
            t += 5_000_000;
        }
        assert!(c.rate(2).abs() < 1e-9, "{}", c.rate(2));
        assert_eq!(c.correct(2, 5_000_000_000), 5_000_000_000);
        // Its own host and unknown hosts: never corrected.
        assert_eq!(c.rate(1), 0.0);
        c.observe(9, 10, 5, 0.0, 8);
        assert_eq!(c.correct(9, 77), 77);
    }

    #[test]
    fn the_gate_learns_drift_from_hand_off_times_not_virtual_departures() {
        use crate::config::Config;
        use crate::vt::RecvGate;
        // Host 2 drifts 100 ppm fast against host 1 (the reference, this
        // gate's), maps measured at 0; its virtual departures lie up to
        // 200 µs after the hand-off (a send queue under g_s) and say so.
        let near = Transit::from_points(&[(8, 1_000.0), (1 << 20, 100_000.0)]);
        let far = Transit::from_points(&[(8, 20_000.0), (1 << 20, 900_000.0)]);
        let there = Clock {
            offset: 0.0,
            ppm: 100.0,
        };
        let h2 = Hosts {
            tag: 2,
            map: ClockMap::from_offset(
                &OffsetEstimate {
                    at: there.read(0.0),
                    offset_ns: -(there.read(0.0) as f64 - 5e12),
                    uncertainty_ns: 0.0,
                },
                5_000_000_000_000,
                0.0,
            ),
            other_host: Some(far),
        };
        let here = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let h1 = Hosts {
            tag: 1,
            map: ClockMap::reference(here.read(0.0)),
            other_host: Some(far),
        };
        // L = 1 ns: at zero L and G a message arrives when it natively does
        // (`RecvGate::native_arrivals`) and `arrival` shows no mapping.
        let one_ns = Config {
            l: 1,
            ..Config::default()
        };
        let mut gate = RecvGate::new(&one_ns, near);
        gate.set_hosts(h1);
        gate.set_drift(DriftCorrection::new(1, &[here.read(0.0), here.read(0.0)]));
        let mut rng = Lcg(9);
        let mut t = 1e8;
        let mut last_err = f64::NAN;
        while t < 60e9 {
            let lag = u32::try_from(units::round_ns(200_000.0 * rng.next())).unwrap();
            let d = there.read(t) + u64::from(lag);
            let at = here.read(t + 20_000.0 + 2_000.0 * rng.next());
            gate.observe(at, h2.stamp(d), lag, 8);
            // What the gate makes of a departure at t: on this clock, t.
            last_err =
                gate.arrival(h2.stamp(there.read(t)), 8) as f64 - 20_001.0 - here.read(t) as f64;
            t += 1e7;
        }
        assert!(
            (gate.drift_rate(2) + 1e-4).abs() < 1e-7,
            "{}",
            gate.drift_rate(2)
        );
        assert!(last_err.abs() < 1_000.0, "{last_err}");
        // Without correction the error would be 100 ppm of a minute: 6 ms.
        let mut plain = RecvGate::new(&one_ns, near);
        plain.set_hosts(h1);
        let raw = plain.arrival(h2.stamp(there.read(t)), 8) as f64 - 20_001.0 - here.read(t) as f64;
        assert!(raw.abs() > 5e6, "{raw}");
    }

    #[test]
    fn stamps_carry_tag_and_time() {
        let s = Stamp::encode(3, REF_BASE + 12_345);
        assert_eq!(Stamp::decode(s), (3, REF_BASE + 12_345));
        assert_eq!(Stamp::decode(Stamp::encode(1 << 20, 5)).0, MAX_HOST_TAG);
    }

    #[test]
    fn hosts_translate_and_pick_the_class() {
        let here = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let there = Clock {
            offset: 7e8,
            ppm: 0.0,
        };
        let ref_epoch = here.read(0.0);
        let far = Transit::from_points(&[(8, 20_000.0), (1 << 20, 900_000.0)]);
        let h0 = Hosts {
            tag: 1,
            map: ClockMap::reference(ref_epoch),
            other_host: Some(far),
        };
        let h1 = Hosts {
            tag: 2,
            map: sync(there, here, ref_epoch, 10_000.0, 10_000.0, 0),
            other_host: Some(far),
        };
        let t = 2e9;
        let (d, tr) = h0.departure(h1.stamp(there.read(t)));
        assert!((d as f64 - here.read(t) as f64).abs() <= 1_500.0);
        assert_eq!(tr, Some(&far));
        let (d, tr) = h0.departure(h0.stamp(here.read(t)));
        assert!((d as f64 - here.read(t) as f64).abs() <= 1.0);
        assert_eq!(tr, None);
        // One host: stamps are the departure itself.
        let one = Hosts {
            tag: 0,
            map: ClockMap::reference(0),
            other_host: None,
        };
        assert_eq!(one.stamp(42), 42);
        assert_eq!(one.departure(42), (42, None));
    }

    #[test]
    fn the_gate_reads_stamps_in_its_own_clock() {
        use crate::config::Config;
        use crate::vt::RecvGate;
        // Host 1's clock is 1 s ahead of host 0's (the reference); a message
        // leaves host 1 at true time 5 s; the gate on host 0 must place its
        // arrival at 5 s + other-host transit + L on host 0's clock.
        let reference = Clock {
            offset: 0.0,
            ppm: 0.0,
        };
        let there = Clock {
            offset: 1e9,
            ppm: 0.0,
        };
        let ref_epoch = reference.read(0.0);
        let near = Transit::from_points(&[(8, 1_000.0), (1 << 20, 100_000.0)]);
        let far = Transit::from_points(&[(8, 20_000.0), (1 << 20, 900_000.0)]);
        let h1 = Hosts {
            tag: 2,
            map: sync(there, reference, ref_epoch, 10_000.0, 10_000.0, 0),
            other_host: Some(far),
        };
        let h0 = Hosts {
            tag: 1,
            map: ClockMap::reference(ref_epoch),
            other_host: Some(far),
        };
        let cfg = Config {
            l: 20_000,
            ..Config::default()
        };
        let mut gate = RecvGate::new(&cfg, near);
        gate.set_hosts(h0);
        let a = gate.arrival(h1.stamp(there.read(5e9)), 8) as f64;
        let want = reference.read(5e9) as f64 + 20_000.0 + 20_000.0;
        assert!((a - want).abs() < 1_500.0, "arrival {a}, expected {want}");
        // A message of host 0 itself: the same-host transit, exactly.
        let a = gate.arrival(h0.stamp(reference.read(5e9)), 8) as f64;
        let want = reference.read(5e9) as f64 + 1_000.0 + 20_000.0;
        assert!((a - want).abs() <= 1.0, "arrival {a}, expected {want}");
        // Without the hosts the raw stamp would be read as a time: the test
        // fails if the gate ignored them.
        let plain = RecvGate::new(&cfg, near);
        let raw = plain.arrival(h1.stamp(there.read(5e9)), 8) as f64;
        assert!((raw - want).abs() > 1e6);
    }

    #[test]
    fn test_clock_parses_and_refuses() {
        assert_eq!(
            TestClock::parse("+3ms,50ppm"),
            Some(TestClock {
                offset_ns: 3_000_000,
                drift_ppm: 50.0
            })
        );
        assert_eq!(
            TestClock::parse("-1s,-100ppm"),
            Some(TestClock {
                offset_ns: -1_000_000_000,
                drift_ppm: -100.0
            })
        );
        assert!(TestClock::parse("0,0").unwrap().is_identity());
        for bad in ["3ms", "3,50ppm", "+3ms,50", "+3ms,5000ppm", "x,1ppm", ""] {
            assert_eq!(TestClock::parse(bad), None, "{bad}");
        }
        let c = TestClock::parse("+3ms,50ppm").unwrap();
        assert_eq!(
            c.shown(1_000_000_000 + 7, 7),
            1_000_000_007 + 3_000_000 + 50_000
        );
    }
}
