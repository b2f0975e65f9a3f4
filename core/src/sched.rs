//! Who talks to whom, and in which order, in each step of the collective
//! algorithms the shim runs (pure: no MPI, unit-tested below).
//!
//! One text for two readers: the shim's collectives (`shim/src/coll/algo.rs`)
//! issue their messages from these schedules, and the calibration's model
//! check (`cli/src/calibrate/coll/model.rs`) evaluates the same schedules on
//! a LogGP machine, so a prediction describes what the shim ran.
//!
//! Ranks here are *virtual* where a root matters (the root is virtual rank
//! 0: [`to_virtual`], [`to_real`]), else the ranks of the communicator.

use crate::coll::Alg;

/// The lowest set bit of `v` (0 for 0).
pub fn lowbit(v: usize) -> usize {
    v & v.wrapping_neg()
}

/// Largest power of two not above `p` (`p ≥ 1`).
pub fn pof2(p: usize) -> usize {
    1usize << (usize::BITS - 1 - p.max(1).leading_zeros())
}

/// ⌈log2 p⌉ (0 for `p ≤ 1`).
pub fn ceil_log2(p: usize) -> u32 {
    p.next_power_of_two().trailing_zeros()
}

/// Virtual rank of `r` in a tree rooted at `root` over `p` ranks (`r`,
/// `root` < `p`).
#[inline]
pub fn to_virtual(r: usize, root: usize, p: usize) -> usize {
    below(r + p - root, p)
}

/// Real rank of virtual rank `v` in a tree rooted at `root` (`v`, `root` <
/// `p`).
#[inline]
pub fn to_real(v: usize, root: usize, p: usize) -> usize {
    below(v + root, p)
}

/// `x % p` for `x < 2p`, without a division (tens of cycles, twice per
/// step of every rooted collective, of the Barrier's dissemination and of
/// a pairwise exchange).
#[inline]
fn below(x: usize, p: usize) -> usize {
    debug_assert!(x < 2 * p);
    if x >= p {
        x - p
    } else {
        x
    }
}

/// A node of a virtual topology over virtual ranks `0..p` (0 is the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub parent: Option<usize>,
    /// In increasing order; for the binomial, chain and flat trees the
    /// subtree of child i is `[child_i, child_i+1)`, contiguous after the
    /// node itself (what rank-ordered reductions need).
    pub children: Kids,
}

/// A node's children: up to `Kids::INLINE` in place (a binomial tree up to
/// 256 ranks, a binary tree or a chain: no allocation per collective, which
/// cost an 8-byte Bcast's root ~250 instructions in malloc and free,
/// `OP=b scripts/bench-instr-coll.sh`), more (a flat tree's root) on the
/// heap. Reads as a slice.
#[derive(Clone, Debug)]
pub enum Kids {
    Few { d: [usize; Kids::INLINE], n: usize },
    Many(Vec<usize>),
}

impl Kids {
    pub const INLINE: usize = 8;

    #[inline]
    pub fn new() -> Kids {
        Kids::Few {
            d: [0; Kids::INLINE],
            n: 0,
        }
    }

    #[inline]
    pub fn push(&mut self, k: usize) {
        match self {
            Kids::Few { d, n } if *n < Kids::INLINE => {
                d[*n] = k;
                *n += 1;
            }
            Kids::Few { d, n } => {
                let mut v = d[..*n].to_vec();
                v.push(k);
                *self = Kids::Many(v);
            }
            Kids::Many(v) => v.push(k),
        }
    }
}

impl Default for Kids {
    fn default() -> Kids {
        Kids::new()
    }
}

impl std::ops::Deref for Kids {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        match self {
            Kids::Few { d, n } => &d[..*n],
            Kids::Many(v) => v,
        }
    }
}

impl PartialEq for Kids {
    fn eq(&self, other: &Kids) -> bool {
        **self == **other
    }
}

impl Eq for Kids {}

impl FromIterator<usize> for Kids {
    fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Kids {
        let mut k = Kids::new();
        for x in it {
            k.push(x);
        }
        k
    }
}

impl<'a> IntoIterator for &'a Kids {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The node `vr` of the tree of `alg` over `p` ranks: `Linear` a flat tree,
/// `Pipeline` a chain, `Binary` a binary heap, any other algorithm the
/// binomial tree (the parent clears the lowest set bit; the subtree of `vr`
/// is `[vr, vr + lowbit(vr))`, see [`subtree_end`]).
pub fn tree(alg: Alg, vr: usize, p: usize) -> Tree {
    match alg {
        Alg::Linear => Tree {
            parent: (vr != 0).then_some(0),
            children: if vr == 0 {
                Kids::Many((1..p).collect())
            } else {
                Kids::new()
            },
        },
        Alg::Pipeline => Tree {
            parent: vr.checked_sub(1),
            children: (vr + 1 < p).then_some(vr + 1).into_iter().collect(),
        },
        Alg::Binary => Tree {
            parent: (vr != 0).then(|| (vr - 1) / 2),
            children: [2 * vr + 1, 2 * vr + 2]
                .into_iter()
                .filter(|&c| c < p)
                .collect(),
        },
        _ => {
            let lim = if vr == 0 { p } else { lowbit(vr) };
            let mut children = Kids::new();
            let mut m = 1;
            while m < lim && vr + m < p {
                children.push(vr + m);
                m <<= 1;
            }
            Tree {
                parent: binomial_parent(vr),
                children,
            }
        }
    }
}

/// Parent of `vr` in the binomial tree (`None` for the root).
pub fn binomial_parent(vr: usize) -> Option<usize> {
    (vr != 0).then(|| vr & (vr - 1))
}

/// End (exclusive) of the binomial subtree of `vr` over `p` ranks.
pub fn subtree_end(vr: usize, p: usize) -> usize {
    if vr == 0 {
        p
    } else {
        (vr + lowbit(vr)).min(p)
    }
}

/// Elements per segment: `seg` bytes of elements of `size` bytes, at least
/// one element; `n` (the whole message, at least 1) when unsegmented.
pub fn seg_elems(seg: u64, size: usize, n: usize) -> usize {
    if seg == 0 || size == 0 {
        return n.max(1);
    }
    (usize::try_from(seg).unwrap_or(usize::MAX) / size).max(1)
}

/// The segments of `n` elements, `es` at a time: (first element, count).
pub fn segments(n: usize, es: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(es.max(1)).map(move |s| (s, es.min(n - s)))
}

/// Bruck's dissemination: round k, `r` sends to `r + 2^k` and receives
/// from `r − 2^k` (mod p); ⌈log2 p⌉ rounds of (to, from).
pub fn dissemination(r: usize, p: usize) -> impl Iterator<Item = (usize, usize)> {
    std::iter::successors(Some(1usize), |d| d.checked_mul(2))
        .take_while(move |&d| d < p)
        .map(move |d| (below(r + d, p), below(r + p - d, p)))
}

/// Hypercube steps below `n`: step k pairs `r` with `r ^ 2^k`, as
/// (2^k, peer). The peer may be `n` or more where `r < n` is not a power of
/// two's worth of ranks (Scan skips those).
pub fn hypercube(r: usize, n: usize) -> impl Iterator<Item = (usize, usize)> {
    std::iter::successors(Some(1usize), |m| m.checked_mul(2))
        .take_while(move |&m| m < n)
        .map(move |m| (m, r ^ m))
}

/// Pairwise exchange: step i (1..p), `r` sends to `r + i` and receives
/// from `r − i` (mod p), as (to, from).
pub fn pairwise(r: usize, p: usize) -> impl Iterator<Item = (usize, usize)> {
    (1..p).map(move |i| (below(r + i, p), below(r + p - i, p)))
}

/// Ring neighbours of `r`: (left, right) = (r − 1, r + 1) mod p.
pub fn ring(r: usize, p: usize) -> (usize, usize) {
    (below(r + p - 1, p), below(r + 1, p))
}

/// Ring Allgather, step k (0..p−1): the blocks `r` sends to its right and
/// receives from its left, as (sent, received).
pub fn ring_blocks(r: usize, p: usize, k: usize) -> (usize, usize) {
    ((r + p - k) % p, (r + 2 * p - k - 1) % p)
}

/// The partners of a rank's recursive-doubling steps, in order: step k
/// pairs the new rank `me` with `me ^ 2^k` (k < log2 `q`), whose real rank
/// is `2·nd + 1` below `rem` and `nd + rem` from there (the fold of
/// [`doubling_allreduce`]; `rem` 0 for no fold). Worked out per step, not
/// kept: a kept list (32 words) was zeroed and copied twice per call, ~90
/// of the shim's ~1,100 instructions per 8-byte Allreduce at two ranks
/// (`scripts/bench-instr-coll.sh`), and every Allreduce and Barrier asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peers {
    me: usize,
    q: usize,
    rem: usize,
}

impl Peers {
    /// `me < q`, `q` a power of two.
    fn new(me: usize, q: usize, rem: usize) -> Peers {
        debug_assert!(q.is_power_of_two() && me < q);
        Peers { me, q, rem }
    }
    fn real(&self, nd: usize) -> usize {
        if nd < self.rem {
            nd * 2 + 1
        } else {
            nd + self.rem
        }
    }
    pub fn len(&self) -> usize {
        self.q.trailing_zeros() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn get(&self, k: usize) -> Option<usize> {
        (k < self.len()).then(|| self.real(self.me ^ (1 << k)))
    }
    pub fn iter(&self) -> PeersIter {
        PeersIter { p: *self, k: 0 }
    }
}

/// [`Peers`] in step order.
pub struct PeersIter {
    p: Peers,
    k: usize,
}

impl Iterator for PeersIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let d = self.p.get(self.k)?;
        self.k += 1;
        Some(d)
    }
}

impl IntoIterator for Peers {
    type Item = usize;
    type IntoIter = PeersIter;
    fn into_iter(self) -> PeersIter {
        self.iter()
    }
}

/// A rank's part in a recursive doubling over a `p` that need not be a
/// power of two: some ranks fold into a partner first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Doubling {
    /// Sends its contribution to `partner`, takes no part in the exchange,
    /// and receives the result from `partner` at the end.
    Extra { partner: usize },
    /// Takes part in the exchange: first receives from `extra` (if any),
    /// exchanges with `peers` in order, then sends to `extra`.
    Core { extra: Option<usize>, peers: Peers },
}

/// Recursive doubling Barrier: the ranks from `pof2(p)` on are extras of
/// `r − pof2`; the others exchange with `r ^ 2^k`.
pub fn doubling_barrier(r: usize, p: usize) -> Doubling {
    let q = pof2(p);
    if r >= q {
        return Doubling::Extra { partner: r - q };
    }
    Doubling::Core {
        extra: (r < p - q).then_some(r + q),
        peers: Peers::new(r, q, 0),
    }
}

/// MPICH's recursive doubling Allreduce (rank order kept for any op): of
/// the first `2·rem` ranks the even ones are extras of the odd one above;
/// the `pof2(p)` remaining ranks (new rank `r/2` or `r − rem`) exchange
/// with the rank whose new rank is theirs `^ 2^k`.
pub fn doubling_allreduce(r: usize, p: usize) -> Doubling {
    let q = pof2(p);
    let rem = p - q;
    let nr = if r < 2 * rem {
        if r.is_multiple_of(2) {
            return Doubling::Extra { partner: r + 1 };
        }
        r / 2
    } else {
        r - rem
    };
    Doubling::Core {
        extra: (r < 2 * rem).then(|| r - 1),
        peers: Peers::new(nr, q, rem),
    }
}

/// One step of Rabenseifner's reduce-scatter by recursive halving (the
/// Allreduce of Thakur, Rabenseifner and Gropp 2005, §4.4; MPICH's
/// `reduce_scatter_allgather`): the message is cut into `pof2(p)` blocks
/// (see [`block_start`]); a rank sends the blocks `give` to `peer`,
/// receives the blocks `keep` from it and reduces them into its own. The
/// Allgather that follows runs the steps backwards: it sends `keep` (by
/// then the final result there) and receives `give`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Halving {
    /// The partner, a rank of the communicator.
    pub peer: usize,
    /// Blocks `[a, b)` this rank receives and reduces into its own.
    pub keep: (usize, usize),
    /// Blocks `[a, b)` it sends (the partner's `keep`).
    pub give: (usize, usize),
    /// True when this rank's partial result comes first in rank order
    /// (`mine op theirs`); false for `theirs op mine`.
    pub mine_first: bool,
}

/// The steps of Rabenseifner's Allreduce for rank `r` of the
/// [`doubling_allreduce`] exchange (its `peers`, in order), over
/// `q = pof2(p)` blocks: the ranks fold as there, and step k pairs the same
/// partners; of the blocks both hold, the lower rank keeps the lower half.
/// After the last step a rank holds one block reduced over every rank, in
/// rank order: each partial result covers a contiguous run of ranks, the
/// lower run first (the fold's new ranks keep the order of the real ones).
pub fn halvings(r: usize, q: usize, peers: Peers) -> Vec<Halving> {
    let (mut lo, mut hi) = (0, q);
    peers
        .into_iter()
        .map(|peer| {
            let mid = lo + (hi - lo) / 2;
            let lower = r < peer;
            let (keep, give) = if lower {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            (lo, hi) = keep;
            Halving {
                peer,
                keep,
                give,
                mine_first: lower,
            }
        })
        .collect()
}

/// True when `n` elements give every one of the `pof2(p)` blocks of
/// [`halvings`] an element; fewer run the recursive doubling instead (in
/// the shim, and so in the model).
pub fn halvings_fit(n: usize, p: usize) -> bool {
    n >= pof2(p)
}

/// First element of block `b` of `n` elements cut into `q` blocks, the
/// first `n % q` one element longer (`b = q` gives `n`).
pub fn block_start(b: usize, n: usize, q: usize) -> usize {
    b * (n / q) + b.min(n % q)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [Alg; 4] = [Alg::Linear, Alg::Pipeline, Alg::Binary, Alg::Binomial];

    #[test]
    fn every_tree_covers_every_rank_once_with_consistent_parents() {
        for alg in SHAPES {
            for p in 1..=17 {
                let mut seen = vec![0; p];
                seen[0] += 1;
                for v in 0..p {
                    let t = tree(alg, v, p);
                    assert_eq!(t.parent.is_none(), v == 0, "{alg:?} p={p} v={v}");
                    if let Some(par) = t.parent {
                        assert!(tree(alg, par, p).children.contains(&v));
                    }
                    assert!(t.children.windows(2).all(|w| w[0] < w[1]));
                    for &k in &t.children {
                        assert!(k > v && k < p);
                        seen[k] += 1;
                        assert_eq!(tree(alg, k, p).parent, Some(v), "{alg:?} p={p}");
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{alg:?} p={p}: {seen:?}");
            }
        }
    }

    #[test]
    fn binomial_children_tile_the_subtree() {
        for p in 1..40 {
            for v in 0..p {
                let mut next = v + 1;
                for &k in &tree(Alg::Binomial, v, p).children {
                    assert_eq!(k, next);
                    assert_eq!(binomial_parent(k), Some(v));
                    next = subtree_end(k, p);
                }
                assert_eq!(next, subtree_end(v, p), "p={p} v={v}");
            }
        }
        // Algorithms that are not trees get the binomial one.
        assert_eq!(tree(Alg::Auto, 3, 8), tree(Alg::Binomial, 3, 8));
        assert_eq!(tree(Alg::Binomial, 0, 8).children[..], [1, 2, 4]);
        assert_eq!(tree(Alg::Binomial, 4, 8).children[..], [5, 6]);
        assert_eq!(tree(Alg::Binomial, 4, 6).children[..], [5]);
        // Past the inline capacity: the root of 512 ranks has 9 children.
        let root = tree(Alg::Binomial, 0, 512);
        assert!(matches!(root.children, Kids::Many(_)));
        assert_eq!(root.children[..], [1, 2, 4, 8, 16, 32, 64, 128, 256]);
        assert!(matches!(
            tree(Alg::Binomial, 0, 256).children,
            Kids::Few { n: 8, .. }
        ));
        assert!(tree(Alg::Binomial, 3, 8).children.is_empty());
    }

    #[test]
    fn virtual_ranks_round_trip() {
        for p in 1..=17 {
            for root in 0..p {
                assert_eq!(to_virtual(root, root, p), 0);
                for r in 0..p {
                    assert_eq!(to_real(to_virtual(r, root, p), root, p), r);
                    // The rotation the division defines.
                    assert_eq!(to_virtual(r, root, p), (r + p - root) % p);
                    assert_eq!(to_real(r, root, p), (r + root) % p);
                }
            }
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(
            (pof2(1), pof2(2), pof2(7), pof2(8), pof2(17)),
            (1, 2, 4, 8, 16)
        );
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(5), 3);
        assert_eq!(ceil_log2(8), 3);
        assert_eq!(lowbit(12), 4);
    }

    #[test]
    fn segments_split_exactly() {
        let v: Vec<_> = segments(10, 4).collect();
        assert_eq!(v, vec![(0, 4), (4, 4), (8, 2)]);
        assert_eq!(segments(3, 10).count(), 1);
        assert_eq!(segments(0, 4).count(), 0);
        assert_eq!(seg_elems(0, 8, 10), 10);
        assert_eq!(seg_elems(0, 8, 0), 1);
        assert_eq!(seg_elems(32, 8, 10), 4);
        assert_eq!(seg_elems(4, 8, 10), 1);
    }

    /// Step by step, `to` of each rank receives from it in the same step.
    fn pairs_up(p: usize, steps: impl Fn(usize) -> Vec<(usize, usize)>) {
        let all: Vec<_> = (0..p).map(&steps).collect();
        for (r, s) in all.iter().enumerate() {
            assert_eq!(s.len(), all[0].len(), "p={p}");
            for (k, &(to, from)) in s.iter().enumerate() {
                assert_eq!(all[to][k].1, r, "p={p} r={r} step {k}");
                assert_eq!(all[from][k].0, r, "p={p} r={r} step {k}");
            }
        }
    }

    #[test]
    fn dissemination_and_pairwise_pair_up() {
        for p in 1..=17 {
            pairs_up(p, |r| dissemination(r, p).collect());
            // The rotations without a division agree with `%`.
            for r in 0..p {
                let mut d = 1;
                for (to, from) in dissemination(r, p) {
                    assert_eq!((to, from), ((r + d) % p, (r + p - d) % p));
                    d *= 2;
                }
                for (i, s) in pairwise(r, p).enumerate() {
                    assert_eq!(s, ((r + i + 1) % p, (r + p - i - 1) % p));
                }
                assert_eq!(ring(r, p), ((r + p - 1) % p, (r + 1) % p));
            }
            assert_eq!(dissemination(0, p).count(), ceil_log2(p) as usize);
            pairs_up(p, |r| pairwise(r, p).collect());
            // Pairwise reaches every other rank once.
            for r in 0..p {
                let mut to: Vec<_> = pairwise(r, p).map(|s| s.0).collect();
                to.sort_unstable();
                let others: Vec<_> = (0..p).filter(|&i| i != r).collect();
                assert_eq!(to, others);
            }
            pairs_up(p, |r| {
                let (l, rt) = ring(r, p);
                vec![(rt, l)]
            });
        }
    }

    #[test]
    fn ring_allgather_delivers_every_block_once() {
        for p in 1..=17 {
            for r in 0..p {
                let (left, _) = ring(r, p);
                let mut have = vec![false; p];
                have[r] = true;
                for k in 0..p.saturating_sub(1) {
                    let (sent, got) = ring_blocks(r, p, k);
                    assert!(have[sent], "p={p} r={r} k={k}: sends a block it lacks");
                    // What arrives is what the left neighbour sent.
                    assert_eq!(ring_blocks(left, p, k).0, got);
                    assert!(!have[got]);
                    have[got] = true;
                }
                assert!(have.iter().all(|&h| h), "p={p} r={r}");
            }
        }
    }

    #[test]
    fn hypercube_peers_are_symmetric() {
        for p in 1..=17 {
            for r in 0..p {
                for (m, d) in hypercube(r, p) {
                    assert!(m < p);
                    if d < p {
                        assert!(hypercube(d, p).any(|s| s == (m, r)));
                    }
                }
            }
        }
    }

    fn check_doubling(p: usize, f: impl Fn(usize) -> Doubling) {
        let q = pof2(p);
        let roles: Vec<_> = (0..p).map(&f).collect();
        let mut cores = 0;
        for (r, role) in roles.iter().enumerate() {
            match role {
                Doubling::Extra { partner } => {
                    let Doubling::Core { extra, .. } = &roles[*partner] else {
                        panic!("p={p}: extra {r} folds into an extra");
                    };
                    assert_eq!(*extra, Some(r), "p={p}");
                }
                Doubling::Core { extra, peers } => {
                    cores += 1;
                    assert_eq!(peers.len(), q.trailing_zeros() as usize, "p={p}");
                    if let Some(e) = extra {
                        assert_eq!(roles[*e], Doubling::Extra { partner: r });
                    }
                    for (k, d) in peers.iter().enumerate() {
                        let Doubling::Core { peers: theirs, .. } = &roles[d] else {
                            panic!("p={p}: {r} exchanges with extra {d}");
                        };
                        assert_eq!(theirs.get(k), Some(r), "p={p} r={r} step {k}");
                    }
                }
            }
        }
        assert_eq!(cores, q, "p={p}");
    }

    #[test]
    fn doubling_folds_extras_and_pairs_up() {
        for p in 1..=17 {
            check_doubling(p, |r| doubling_barrier(r, p));
            check_doubling(p, |r| doubling_allreduce(r, p));
        }
        assert_eq!(doubling_allreduce(0, 6), Doubling::Extra { partner: 1 });
        let Doubling::Core { extra, peers } = doubling_allreduce(1, 6) else {
            panic!("rank 1 of 6 is an extra");
        };
        assert_eq!(extra, Some(0));
        assert_eq!(peers.iter().collect::<Vec<_>>(), [3, 4]);
        assert_eq!(
            (peers.len(), peers.get(1), peers.get(2)),
            (2, Some(4), None)
        );
        assert_eq!(doubling_barrier(5, 6), Doubling::Extra { partner: 1 });
    }

    /// Each rank's steps of Rabenseifner's Allreduce (`None` for an extra).
    fn halving_roles(p: usize) -> Vec<Option<Vec<Halving>>> {
        (0..p)
            .map(|r| match doubling_allreduce(r, p) {
                Doubling::Extra { .. } => None,
                Doubling::Core { peers, .. } => Some(halvings(r, pof2(p), peers)),
            })
            .collect()
    }

    #[test]
    fn rabenseifner_partners_agree_and_every_block_ends_somewhere() {
        for p in 1..=17 {
            let q = pof2(p);
            let roles = halving_roles(p);
            let mut owned = vec![0; q];
            for (r, steps) in roles.iter().enumerate() {
                let Some(steps) = steps else { continue };
                assert_eq!(steps.len(), q.trailing_zeros() as usize);
                for (k, s) in steps.iter().enumerate() {
                    let Some(theirs) = &roles[s.peer] else {
                        panic!("p={p}: {r} exchanges with an extra");
                    };
                    let t = theirs[k];
                    assert_eq!((t.peer, t.keep, t.give), (r, s.give, s.keep));
                    assert_eq!(t.mine_first, !s.mine_first);
                    assert_eq!(s.mine_first, r < s.peer, "rank order p={p}");
                }
                let last = steps.last().map_or((0, 1), |s| s.keep);
                assert_eq!(last.1 - last.0, 1);
                owned[last.0] += 1;
            }
            assert!(owned.iter().all(|&o| o == 1), "p={p}: {owned:?}");
        }
    }

    /// The whole Allreduce on strings, with concatenation as the operation
    /// (not commutative): every rank ends with every block equal to the
    /// ranks' inputs in rank order.
    #[test]
    fn rabenseifner_reduces_in_rank_order() {
        for p in 1..=17 {
            let q = pof2(p);
            for n in [q, q + 1, 2 * q + 3] {
                let mut data: Vec<Vec<String>> = (0..p)
                    .map(|r| (0..n).map(|_| format!("{r},")).collect())
                    .collect();
                let folds: Vec<_> = (0..p).map(|r| doubling_allreduce(r, p)).collect();
                let roles = halving_roles(p);
                let el = |b: (usize, usize)| block_start(b.0, n, q)..block_start(b.1, n, q);
                for (r, fold) in folds.iter().enumerate() {
                    if let Doubling::Core { extra: Some(e), .. } = fold {
                        let theirs = data[*e].clone();
                        for (x, t) in data[r].iter_mut().zip(theirs) {
                            *x = t + x;
                        }
                    }
                }
                let k_max = q.trailing_zeros() as usize;
                for k in 0..k_max {
                    let before = data.clone();
                    for (r, steps) in roles.iter().enumerate() {
                        let Some(steps) = steps else { continue };
                        let s = steps[k];
                        for i in el(s.keep) {
                            let t = &before[s.peer][i];
                            data[r][i] = if s.mine_first {
                                before[r][i].clone() + t
                            } else {
                                t.clone() + &before[r][i]
                            };
                        }
                    }
                }
                for k in (0..k_max).rev() {
                    let before = data.clone();
                    for (r, steps) in roles.iter().enumerate() {
                        let Some(steps) = steps else { continue };
                        let s = steps[k];
                        for i in el(s.give) {
                            data[r][i] = before[s.peer][i].clone();
                        }
                    }
                }
                for (r, fold) in folds.iter().enumerate() {
                    if let Doubling::Extra { partner } = fold {
                        data[r] = data[*partner].clone();
                    }
                }
                let want: String = (0..p).map(|r| format!("{r},")).collect();
                for (r, d) in data.iter().enumerate() {
                    assert!(d.iter().all(|x| *x == want), "p={p} n={n} rank {r}: {d:?}");
                }
            }
        }
    }

    #[test]
    fn blocks_cover_the_message() {
        assert_eq!(block_start(0, 10, 4), 0);
        assert_eq!(block_start(1, 10, 4), 3);
        assert_eq!(block_start(2, 10, 4), 6);
        assert_eq!(block_start(3, 10, 4), 8);
        assert_eq!(block_start(4, 10, 4), 10);
    }
}
