//! LogGP predictions for the collectives the shim runs (pure: no MPI).
//!
//! The shim's algorithms (`shim/src/coll/algo.rs`) are evaluated message by
//! message, over the very schedules the shim runs (`loggp_core::sched`: who
//! sends to whom in each step), on a LogGP machine with separate send and receive overheads, in
//! the order the shim issues the messages, rather than by the closed forms
//! of Pješivac-Grbović et al., Tables 1–4: the closed forms assume one `o`
//! for both ends, a power-of-two P, and that the gap never binds, and they
//! do not say which child of a binomial node is served first. The schedule
//! below needs none of that; where the closed forms' assumptions hold it
//! gives exactly them (with `2·o` read as `o_s + o_r`), which the tests
//! check ([`closed_form`]).
//!
//! The machine (DESIGN.md §1), per message of `m` bytes, with
//! `h = L + (m−1)·G`:
//! * a send spins the sender's CPU for `o_s`, then the message departs at
//!   `d = max(now, previous departure + g_s + (m_prev−1)·G)`; a blocking
//!   send (and Wait on a send) returns no earlier than `d + (m−1)·G`;
//! * it arrives at `a = d + h`;
//! * the receiver delivers it at `max(when it asks, a, previous delivery +
//!   g_r)` and then spins `o_r`;
//! * a local reduction of `m` bytes costs `γ·m` of CPU (measured by the
//!   kernel with `MPI_Reduce_local`).
//!
//! The prediction is the time from a common start (every rank enters the
//! collective at 0, nothing pending) until the last rank returns — what
//! `calibrate/collbench.c` measures.

use loggp_core::coll::{self as lcoll, Alg, Choice};
use loggp_core::sched::{self, Doubling, Halving};

/// LogGP parameters in ns (`big_g` and `gamma` in ns per byte).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    pub l: f64,
    pub o_s: f64,
    pub o_r: f64,
    pub g_s: f64,
    pub g_r: f64,
    pub big_g: f64,
    /// Local reduction cost per byte (MPI_Reduce_local, MPI_SUM of doubles).
    pub gamma: f64,
}

/// The knobs a check can raise, as the shim means them: L, o_s, o_r are
/// added to the native value; g_s, g_r, G are floors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    L,
    OS,
    OR,
    GS,
    GR,
    BigG,
}

impl Param {
    pub const ALL: [Param; 6] = [
        Param::L,
        Param::OS,
        Param::OR,
        Param::GS,
        Param::GR,
        Param::BigG,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Param::L => "L",
            Param::OS => "o_s",
            Param::OR => "o_r",
            Param::GS => "g_s",
            Param::GR => "g_r",
            Param::BigG => "G",
        }
    }

    pub fn parse(s: &str) -> Option<Param> {
        Param::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl Machine {
    /// The machine with one knob applied: `value` is added (L, o_s, o_r)
    /// or is a floor (g_s, g_r, G in ns/B).
    pub fn with(&self, p: Param, value: f64) -> Machine {
        let mut m = *self;
        match p {
            Param::L => m.l += value,
            Param::OS => m.o_s += value,
            Param::OR => m.o_r += value,
            Param::GS => m.g_s = m.g_s.max(value),
            Param::GR => m.g_r = m.g_r.max(value),
            Param::BigG => m.big_g = m.big_g.max(value),
        }
        m
    }
}

/// The five collectives checked, each with the algorithm the check forces
/// (`LOGGP_COLL_<OP>`) so that the prediction describes what ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Coll {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Alltoall,
}

impl Coll {
    pub const ALL: [Coll; 5] = [
        Coll::Barrier,
        Coll::Bcast,
        Coll::Reduce,
        Coll::Allreduce,
        Coll::Alltoall,
    ];

    /// Name in `--ops` and in the kernel's rows.
    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast => "bcast",
            Coll::Reduce => "reduce",
            Coll::Allreduce => "allreduce",
            Coll::Alltoall => "alltoall",
        }
    }

    pub fn parse(s: &str) -> Option<Coll> {
        Coll::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The value the check sets [`Coll::var`] to, so that the prediction
    /// describes what ran whatever the user's environment says: the
    /// shim's defaults for unsegmented messages, and for Bcast and
    /// Allreduce `auto`, whose choice by size and ranks the model makes
    /// too ([`bcast_alg`], [`allreduce_alg`], from the same
    /// `loggp_core::coll::resolve`).
    pub fn alg(self) -> &'static str {
        match self {
            Coll::Barrier => "bruck",
            Coll::Reduce => "binomial",
            Coll::Bcast | Coll::Allreduce => "auto",
            Coll::Alltoall => "pairwise",
        }
    }

    /// The algorithm that runs this operation on `p` ranks with `size`
    /// bytes (the name in the report).
    pub fn alg_at(self, p: usize, size: u64) -> &'static str {
        match self {
            Coll::Bcast => bcast_alg(p, size).name(),
            Coll::Allreduce => allreduce_alg(p, size).name(),
            _ => self.alg(),
        }
    }

    pub fn var(self) -> &'static str {
        match self {
            Coll::Barrier => "LOGGP_COLL_BARRIER",
            Coll::Bcast => "LOGGP_COLL_BCAST",
            Coll::Reduce => "LOGGP_COLL_REDUCE",
            Coll::Allreduce => "LOGGP_COLL_ALLREDUCE",
            Coll::Alltoall => "LOGGP_COLL_ALLTOALL",
        }
    }

    /// True for the operations that apply a reduction (γ term).
    pub fn reduces(self) -> bool {
        matches!(self, Coll::Reduce | Coll::Allreduce)
    }
}

fn auto_choice(op: lcoll::Op, p: usize, size: u64) -> Choice {
    let auto = Choice {
        alg: Alg::Auto,
        seg: 0,
    };
    lcoll::resolve(op, auto, usize::try_from(size).unwrap_or(usize::MAX), p)
}

/// The tree of the shim's Bcast of `size` bytes on `p` ranks, its default
/// (`loggp_core::coll::resolve`): binary or binomial.
pub fn bcast_alg(p: usize, size: u64) -> Alg {
    auto_choice(lcoll::Op::Bcast, p, size).alg
}

/// True where the shim's default Bcast of `size` bytes is segmented (above
/// 1 MiB), which the model does not evaluate.
pub fn bcast_segmented(p: usize, size: u64) -> bool {
    auto_choice(lcoll::Op::Bcast, p, size).seg > 0
}

/// The shim's Allreduce of `size` bytes of doubles (the kernel's
/// MPI_DOUBLE) on `p` ranks: its default for that size
/// (`loggp_core::coll::resolve`), where Rabenseifner's falls back to
/// recursive doubling below one element per block (`sched::halvings_fit`).
pub fn allreduce_alg(p: usize, size: u64) -> Alg {
    match auto_choice(lcoll::Op::Allreduce, p, size).alg {
        Alg::Rabenseifner if sched::halvings_fit((size / 8) as usize, p) => Alg::Rabenseifner,
        _ => Alg::RecursiveDoubling,
    }
}

/// Per-rank state of the LogGP machine while an algorithm is evaluated.
struct Sim {
    m: Machine,
    /// CPU time of each rank (when it is free to do the next thing).
    t: Vec<f64>,
    /// Earliest next departure (g_s and the link).
    next_dep: Vec<f64>,
    /// When all of a rank's sends have left (for Wait on sends).
    sends_done: Vec<f64>,
    /// Last delivery (for g_r).
    last_del: Vec<f64>,
}

impl Sim {
    fn new(m: Machine, p: usize) -> Sim {
        Sim {
            m,
            t: vec![0.0; p],
            next_dep: vec![f64::NEG_INFINITY; p],
            sends_done: vec![0.0; p],
            last_del: vec![f64::NEG_INFINITY; p],
        }
    }

    fn bytes(&self, size: u64) -> f64 {
        size.saturating_sub(1) as f64 * self.m.big_g
    }

    /// Nonblocking send from `r`: spins o_s, departs, returns the arrival.
    fn isend(&mut self, r: usize, size: u64) -> f64 {
        let bt = self.bytes(size);
        self.t[r] += self.m.o_s;
        let d = self.t[r].max(self.next_dep[r]);
        self.next_dep[r] = d + self.m.g_s + bt;
        self.sends_done[r] = self.sends_done[r].max(d + bt);
        d + self.m.l + bt
    }

    /// Wait for every send of `r` to have left.
    fn wait_sends(&mut self, r: usize) {
        self.t[r] = self.t[r].max(self.sends_done[r]);
    }

    /// Blocking send.
    fn send(&mut self, r: usize, size: u64) -> f64 {
        let a = self.isend(r, size);
        self.wait_sends(r);
        a
    }

    /// Receive at `r` of a message arriving at `a`.
    fn recv(&mut self, r: usize, a: f64) {
        let del = self.t[r].max(a).max(self.last_del[r] + self.m.g_r);
        self.last_del[r] = del;
        self.t[r] = del + self.m.o_r;
    }

    fn reduce_local(&mut self, r: usize, size: u64) {
        self.t[r] += self.m.gamma * size as f64;
    }

    /// One round in which every rank in `who` sends to `to(r)` and
    /// receives from `from(r)` (MPI_Sendrecv: Irecv, Isend, Waitall).
    fn exchange(
        &mut self,
        who: &[usize],
        size: u64,
        to: impl Fn(usize) -> usize,
        from: impl Fn(usize) -> usize,
        reduce: bool,
    ) {
        let red = if reduce { size } else { 0 };
        self.exchange_sized(who, |r| (to(r), size), from, |_| red);
    }

    /// [`Sim::exchange`] with a size per sender (`to(r)` gives the partner
    /// and the bytes sent) and `reduced(r)` bytes reduced at `r` after its
    /// receive (0: none).
    fn exchange_sized(
        &mut self,
        who: &[usize],
        to: impl Fn(usize) -> (usize, u64),
        from: impl Fn(usize) -> usize,
        reduced: impl Fn(usize) -> u64,
    ) {
        let p = self.t.len();
        let mut arr = vec![f64::NAN; p];
        for &r in who {
            let (d, size) = to(r);
            arr[d] = self.isend(r, size);
        }
        for &r in who {
            self.recv(r, arr[r]);
            debug_assert!(from(r) < p);
            let red = reduced(r);
            if red > 0 {
                self.reduce_local(r, red);
            }
            self.wait_sends(r);
        }
    }

    fn finish(&self) -> f64 {
        self.t.iter().copied().fold(0.0, f64::max)
    }
}

/// Per step, every rank's (to, from): the transpose of per-rank schedules.
/// A rank with fewer steps (an extra of recursive doubling) reads (0, 0)
/// there, and must not be among the ranks of that step's exchange.
fn by_step(p: usize, per_rank: impl Fn(usize) -> Vec<(usize, usize)>) -> Vec<Vec<(usize, usize)>> {
    let ranks: Vec<Vec<(usize, usize)>> = (0..p).map(per_rank).collect();
    let n = ranks.iter().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            ranks
                .iter()
                .map(|s| s.get(k).copied().unwrap_or_default())
                .collect()
        })
        .collect()
}

/// Predicted time (ns) of `op` on `p` ranks with `size` bytes per message
/// (per pair for Alltoall; ignored for Barrier, whose messages are empty),
/// from a common start to the return of the last rank.
pub fn predict(op: Coll, p: usize, size: u64, m: &Machine) -> f64 {
    if p < 2 {
        return 0.0;
    }
    let mut s = Sim::new(*m, p);
    match op {
        // Dissemination: round k, r sends to r + 2^k, receives from r − 2^k.
        Coll::Barrier => {
            let all: Vec<usize> = (0..p).collect();
            for step in by_step(p, |r| sched::dissemination(r, p).collect()) {
                s.exchange(&all, 0, |r| step[r].0, |r| step[r].1, false);
            }
        }
        // Root 0; a node receives from its parent (blocking), then Isends
        // to its children in decreasing order (in the binomial tree the
        // largest subtree first), then waits for the sends. Binomial or
        // binary tree, as the shim picks; a parent's rank is below its
        // children's in both.
        Coll::Bcast => {
            let alg = bcast_alg(p, size);
            let mut arr = vec![f64::NAN; p];
            for v in 0..p {
                let node = sched::tree(alg, v, p);
                if node.parent.is_some() {
                    s.recv(v, arr[v]);
                }
                for &k in node.children.iter().rev() {
                    arr[k] = s.isend(v, size);
                }
                s.wait_sends(v);
            }
        }
        // Root 0: a node receives from each child in increasing order
        // (blocking) and reduces, then sends to its parent.
        Coll::Reduce => {
            let mut arr = vec![f64::NAN; p];
            for v in (0..p).rev() {
                let node = sched::tree(Alg::Binomial, v, p);
                for &k in &node.children {
                    s.recv(v, arr[k]);
                    s.reduce_local(v, size);
                }
                if node.parent.is_some() {
                    arr[v] = s.send(v, size);
                }
            }
        }
        // MPICH's fold: the first 2·rem ranks fold pairwise (even → odd),
        // the pof2 others exchange in log2(pof2) rounds, then the odd ones
        // send the result back. The exchange: recursive doubling, or
        // Rabenseifner's halving and doubling rounds.
        Coll::Allreduce => {
            let roles: Vec<Doubling> = (0..p).map(|r| sched::doubling_allreduce(r, p)).collect();
            for (r, role) in roles.iter().enumerate() {
                if let Doubling::Extra { partner } = *role {
                    let a = s.send(r, size);
                    s.recv(partner, a);
                    s.reduce_local(partner, size);
                }
            }
            // The ranks of the exchange (the extras sit it out).
            let who: Vec<usize> = (0..p)
                .filter(|&r| matches!(roles[r], Doubling::Core { .. }))
                .collect();
            if allreduce_alg(p, size) == Alg::Rabenseifner {
                rabenseifner(&mut s, &roles, &who, size);
            } else {
                let steps = by_step(p, |r| match &roles[r] {
                    Doubling::Core { peers, .. } => peers.into_iter().map(|d| (d, d)).collect(),
                    Doubling::Extra { .. } => Vec::new(),
                });
                for step in steps {
                    s.exchange(&who, size, |r| step[r].0, |r| step[r].1, true);
                }
            }
            for (r, role) in roles.iter().enumerate() {
                if let Doubling::Core { extra: Some(e), .. } = *role {
                    let a = s.send(r, size);
                    s.recv(e, a);
                }
            }
        }
        // Pairwise exchange: step i, send to r + i, receive from r − i.
        Coll::Alltoall => {
            let all: Vec<usize> = (0..p).collect();
            for step in by_step(p, |r| sched::pairwise(r, p).collect()) {
                s.exchange(&all, size, |r| step[r].0, |r| step[r].1, false);
            }
        }
    }
    s.finish()
}

/// The exchange of Rabenseifner's Allreduce of `size` bytes of doubles
/// among the ranks `who` of the fold `roles` (`sched::halvings`):
/// log2(pof2) rounds of halving, each sending the blocks given and
/// reducing the blocks kept, then the same rounds backwards sending the
/// blocks kept.
fn rabenseifner(s: &mut Sim, roles: &[Doubling], who: &[usize], size: u64) {
    let p = roles.len();
    let (q, n) = (sched::pof2(p), (size / 8) as usize);
    let bytes = |(a, b): (usize, usize)| {
        8 * (sched::block_start(b, n, q) - sched::block_start(a, n, q)) as u64
    };
    let steps: Vec<Vec<Halving>> = roles
        .iter()
        .enumerate()
        .map(|(r, role)| match role {
            Doubling::Core { peers, .. } => sched::halvings(r, q, *peers),
            Doubling::Extra { .. } => Vec::new(),
        })
        .collect();
    let rounds = q.trailing_zeros() as usize;
    let step = |r: usize, k: usize| steps[r][k];
    for k in 0..rounds {
        let h = |r: usize| step(r, k);
        s.exchange_sized(
            who,
            |r| (h(r).peer, bytes(h(r).give)),
            |r| h(r).peer,
            |r| bytes(h(r).keep),
        );
    }
    for k in (0..rounds).rev() {
        let h = |r: usize| step(r, k);
        s.exchange_sized(who, |r| (h(r).peer, bytes(h(r).keep)), |r| h(r).peer, |_| 0);
    }
}

/// The closed form of the paper's LogGP row for the shim's algorithm,
/// with `2·o` read as `o_s + o_r` and `g` dropped (see the module doc):
/// defined where its assumptions hold — P a power of two (Barrier and
/// Alltoall: any P), and no gap binds (`o_s ≥ g_s + (m−1)G`,
/// `o_r ≥ g_r`). `None` otherwise.
pub fn closed_form(op: Coll, p: usize, size: u64, m: &Machine) -> Option<f64> {
    if p < 2 {
        return Some(0.0);
    }
    let size = if op == Coll::Barrier { 0 } else { size };
    let bt = size.saturating_sub(1) as f64 * m.big_g;
    if m.o_s < m.g_s + bt || m.o_r < m.g_r {
        return None;
    }
    let round = m.o_s + m.l + bt + m.o_r;
    let red = if op.reduces() {
        m.gamma * size as f64
    } else {
        0.0
    };
    let k = f64::from(sched::ceil_log2(p));
    match op {
        // Table 1, Bruck: ⌈log2 P⌉ (L + o + g).
        Coll::Barrier => Some(k * round),
        // Table 2 binomial (n_s = 1): ⌈log2 P⌉ (L + 2o + (m−1)G).
        // Table 3 binomial (n_s = 1): ⌈log2 P⌉ (o + L + (m−1)G + max{g, o + γm}).
        // Allreduce (not in the tables): log2 P rounds like Reduce's.
        // Rabenseifner's Allreduce: in no table; the binary Bcast: its
        // row does not take the shim's order of sends.
        Coll::Allreduce if allreduce_alg(p, size) == Alg::Rabenseifner => None,
        Coll::Bcast if bcast_alg(p, size) == Alg::Binary => None,
        Coll::Bcast | Coll::Reduce | Coll::Allreduce if p.is_power_of_two() => {
            Some(k * (round + red))
        }
        Coll::Bcast | Coll::Reduce | Coll::Allreduce => None,
        // Table 4, pairwise: (P − 1)(L + o + (m−1)G + g).
        Coll::Alltoall => Some((p - 1) as f64 * round),
    }
}

/// Signed percent difference of a measured from a predicted value,
/// `(measured − predicted) / predicted · 100`; `None` when the prediction
/// is 0 or either is not finite.
pub fn percent_diff(measured: f64, predicted: f64) -> Option<f64> {
    (predicted != 0.0 && measured.is_finite() && predicted.is_finite())
        .then(|| (measured - predicted) / predicted.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared-memory-like machine: overheads dominate the gaps.
    fn mach() -> Machine {
        Machine {
            l: 200.0,
            o_s: 150.0,
            o_r: 120.0,
            g_s: 90.0,
            g_r: 80.0,
            big_g: 0.01,
            gamma: 0.05,
        }
    }

    /// Predicted change of `op`'s time when `param` is raised by `value`
    /// (added) or to `value` (floor): prediction with it minus without.
    fn predicted_delta(
        op: Coll,
        p: usize,
        size: u64,
        m: &Machine,
        param: Param,
        value: f64,
    ) -> f64 {
        predict(op, p, size, &m.with(param, value)) - predict(op, p, size, m)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn schedule_equals_closed_form_where_it_applies() {
        let m = mach();
        for op in Coll::ALL {
            for p in 2..=16 {
                for size in [8u64, 1024, 16384] {
                    if let Some(cf) = closed_form(op, p, size, &m) {
                        let pr = predict(op, p, size, &m);
                        assert!(close(pr, cf), "{op:?} p={p} m={size}: {pr} vs {cf}");
                    }
                }
            }
        }
        // and it applies to every op at P = 8, 8 bytes
        for op in Coll::ALL {
            assert!(closed_form(op, 8, 8, &m).is_some(), "{op:?}");
        }
    }

    #[test]
    fn bcast_and_allreduce_follow_the_shims_default() {
        assert_eq!(Coll::Allreduce.alg_at(16, 16384), "rabenseifner");
        assert_eq!(Coll::Allreduce.alg_at(4, 16384), "recursive_doubling");
        assert_eq!(Coll::Allreduce.alg_at(2, 65536), "rabenseifner");
        assert_eq!(Coll::Allreduce.alg_at(16, 8), "recursive_doubling");
        assert_eq!(Coll::Bcast.alg_at(16, 1 << 20), "binomial");
        assert_eq!(Coll::Bcast.alg_at(16, 8), "binary");
        assert_eq!(Coll::Bcast.alg_at(4, 8), "binomial");
        assert!(bcast_segmented(16, (1 << 20) + 8) && !bcast_segmented(16, 1 << 20));
        // The binary Bcast, P = 16, 8 B: rank 15 is the only child of 7,
        // the left child of 3, of 1, of 0, and a node sends to its right
        // child first: three hops of 2 o_s + L + 7G + o_r, one of o_s + L
        // + 7G + o_r.
        assert!(close(
            predict(Coll::Bcast, 16, 8, &mach()),
            3.0 * (2.0 * 150.0 + 200.0 + 0.07 + 120.0) + 470.07
        ));
        // Rabenseifner's, P = 2, 64 KiB of doubles: one halving round (32
        // KiB each way, 32 KiB reduced), one doubling round (32 KiB).
        let m = mach();
        let h = 470.0 + 32767.0 * 0.01;
        assert!(close(
            predict(Coll::Allreduce, 2, 65536, &m),
            2.0 * h + 32768.0 * 0.05
        ));
        // It moves less than recursive doubling where bandwidth dominates:
        // at P = 16, 1 MiB, 2·15/16 of the message against 4 times it.
        let slow = Machine { big_g: 1.0, ..m };
        let rab = predict(Coll::Allreduce, 16, 1 << 20, &slow);
        assert!(
            rab < 2.0 * (1u64 << 20) as f64 && rab > 1.8 * (1u64 << 20) as f64,
            "{rab}"
        );
    }

    #[test]
    fn by_hand() {
        let m = mach();
        // Barrier, P = 5: 3 rounds of o_s + L + o_r = 470 ns
        assert!(close(predict(Coll::Barrier, 5, 8, &m), 3.0 * 470.0));
        // Bcast, P = 2, 8 B: o_s + L + 7G + o_r
        assert!(close(predict(Coll::Bcast, 2, 8, &m), 470.0 + 0.07));
        // Alltoall, P = 3, 1 KiB: 2 rounds of o_s + L + 1023 G + o_r
        assert!(close(
            predict(Coll::Alltoall, 3, 1024, &m),
            2.0 * (470.0 + 10.23)
        ));
        // Reduce, P = 4, 8 B: 2 (o_s + L + 7G + o_r + 8γ)
        assert!(close(
            predict(Coll::Reduce, 4, 8, &m),
            2.0 * (470.0 + 0.07 + 0.4)
        ));
    }

    #[test]
    fn binomial_root_serves_children_one_after_another() {
        // o_s large: the root's 3rd child (vr 1) gets its message after
        // 3 o_s; the deepest leaf (vr 7) after 3 (o_s + h + o_r). With
        // o_s = 10 µs both paths are 3 o_s + ...: the total is the deep
        // path, as the closed form says.
        let m = mach().with(Param::OS, 10_000.0);
        let t = predict(Coll::Bcast, 8, 8, &m);
        assert!(close(t, 3.0 * (10_150.0 + 200.0 + 0.07 + 120.0)));
        // A gap larger than o_s binds: the root's sends are g_s apart, the
        // closed form no longer applies, and the time grows.
        let g = mach().with(Param::GS, 5_000.0);
        assert!(closed_form(Coll::Bcast, 8, 8, &g).is_none());
        assert!(predict(Coll::Bcast, 8, 8, &g) > predict(Coll::Bcast, 8, 8, &mach()) + 9_000.0);
    }

    #[test]
    fn deltas_of_one_knob() {
        let m = mach();
        let us20 = 20_000.0;
        // L: one per level / round
        for (op, p, rounds) in [
            (Coll::Barrier, 8, 3.0),
            (Coll::Bcast, 8, 3.0),
            (Coll::Bcast, 2, 1.0),
            (Coll::Reduce, 4, 2.0),
            (Coll::Allreduce, 8, 3.0),
            (Coll::Alltoall, 4, 3.0),
            (Coll::Barrier, 6, 3.0),
        ] {
            let d = predicted_delta(op, p, 8, &m, Param::L, us20);
            assert!(close(d, rounds * us20), "{op:?} p={p}: {d}");
            let d = predicted_delta(op, p, 8, &m, Param::OS, us20);
            assert!(close(d, rounds * us20), "{op:?} p={p}: {d}");
        }
        // Allreduce on 6 ranks: MPICH's ⌊log2 P⌋ + 2 steps at most, but
        // in the exchange rounds the late (folded) ranks find some
        // messages already there: between ⌊log2 P⌋ and ⌊log2 P⌋ + 2 L.
        let d = predicted_delta(Coll::Allreduce, 6, 8, &m, Param::L, us20);
        assert!(d >= 2.0 * us20 - 1.0 && d <= 4.0 * us20 + 1.0, "{d}");
        // floor knobs below the native value change nothing
        assert_eq!(predicted_delta(Coll::Bcast, 8, 8, &m, Param::GS, 10.0), 0.0);
    }

    #[test]
    fn allreduce_non_power_of_two_by_hand() {
        // Only L (1 µs). P = 3: rank 0 folds into rank 1 (arrives at 1 µs);
        // in the exchange rank 2's message, sent at 0, is already at rank 1
        // when it asks; rank 1's reaches rank 2 at 2 µs; rank 1 sends the
        // result back to rank 0, arriving at 2 µs. Not the 3 L of counting
        // MPICH's steps: the folded rank's lateness overlaps the exchange.
        // P = 5: the lateness propagates one round further: 3 µs.
        let m = Machine {
            l: 1000.0,
            o_s: 0.0,
            o_r: 0.0,
            g_s: 0.0,
            g_r: 0.0,
            big_g: 0.0,
            gamma: 0.0,
        };
        assert!(close(predict(Coll::Allreduce, 3, 8, &m), 2000.0));
        assert!(close(predict(Coll::Allreduce, 4, 8, &m), 2000.0));
        assert!(close(predict(Coll::Allreduce, 5, 8, &m), 3000.0));
    }

    #[test]
    fn helpers() {
        assert_eq!(percent_diff(110.0, 100.0), Some(10.0));
        assert_eq!(percent_diff(1.0, 0.0), None);
        assert_eq!(Coll::parse("bcast"), Some(Coll::Bcast));
        assert_eq!(Param::parse("o_s"), Some(Param::OS));
        assert!(Param::parse("x").is_none());
    }
}
