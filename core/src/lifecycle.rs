//! The life cycle of a request under virtual time: posted, complete
//! natively (MPI says so), gated (its emulated time has not come), then
//! delivered; persistent requests turn active at Start and inactive at
//! completion; a cancelled receive completes without delivery.
//!
//! The shim keeps per MPI request what it must to finish it (buffers,
//! headers: the payload `P`); this table keeps what decides *when* the
//! request completes in the emulated machine, keyed by the request handle
//! `K`, and makes the decisions with the time passed in.
//!
//! One handle may stand for several sends at once: both Open MPI and MPICH
//! give small eager nonblocking sends one shared request that is complete
//! at creation. The newest send holds the entry; the completion times of
//! the earlier ones that are still ahead queue behind it, oldest first, and
//! each completion on the handle takes the oldest (`Table::track_send`).

use crate::handles::{HandleKey, HandleMap};
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// What a tracked request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Nonblocking send: complete in the emulated machine at its
    /// `complete_at`.
    Send,
    /// Nonblocking receive: complete when its message passes the gate.
    Recv,
    /// Persistent send: each Start sets its `complete_at`.
    PSend,
    /// Persistent buffered send: its buffered send is on its own, so it is
    /// complete as soon as MPI says so.
    PBsend,
    /// Persistent receive.
    PRecv,
    /// A nonblocking collective of the shim's: complete when its job is.
    Coll,
    /// A receive satisfied from the probe stash: complete when the stashed
    /// message passes the gate.
    FromStash,
}

impl Kind {
    pub fn persistent(self) -> bool {
        matches!(self, Kind::PSend | Kind::PBsend | Kind::PRecv)
    }

    /// A receive whose message passes the gate (none when cancelled or
    /// from MPI_PROC_NULL).
    pub fn receives(self) -> bool {
        matches!(self, Kind::Recv | Kind::PRecv | Kind::FromStash)
    }
}

/// Where a request stands, for the completion calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Not tracked: MPI alone decides.
    Untracked,
    /// A persistent request that was not started (or has completed since):
    /// it completes at once with an empty status.
    Inactive,
    NotReady,
    /// Complete natively and in the emulated machine.
    Ready,
}

impl Poll {
    /// Whether a wait may complete the request now; `native` is asked only
    /// of an untracked request (MPI decides alone).
    pub fn done(self, native: impl FnOnce() -> bool) -> bool {
        match self {
            Poll::Ready | Poll::Inactive => true,
            Poll::NotReady => false,
            Poll::Untracked => native(),
        }
    }
}

/// What MPI's status says of a natively complete receive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Native {
    /// MPI_Test_cancelled: the receive was cancelled.
    pub cancelled: bool,
    /// The message came from MPI_PROC_NULL: there is none.
    pub from_null: bool,
}

/// One tracked request: its kind, whether it is active, a send's emulated
/// completion, and the shim's payload. A queued shared send has no payload.
#[derive(Debug)]
pub struct Entry<P> {
    kind: Kind,
    active: bool,
    complete_at: u64,
    data: Option<P>,
}

impl<P> Entry<P> {
    fn new(kind: Kind, complete_at: u64, data: P) -> Entry<P> {
        Entry {
            kind,
            // A persistent request is created inactive.
            active: !kind.persistent(),
            complete_at,
            data: Some(data),
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }
    pub fn active(&self) -> bool {
        self.active
    }
    /// A send's emulated completion (0 for other kinds).
    pub fn complete_at(&self) -> u64 {
        self.complete_at
    }
    pub fn data(&self) -> Option<&P> {
        self.data.as_ref()
    }
    pub fn data_mut(&mut self) -> Option<&mut P> {
        self.data.as_mut()
    }
    pub fn into_data(self) -> Option<P> {
        self.data
    }

    /// When this natively complete request may complete in the emulated
    /// machine: a send at its `complete_at`; a receive when its message
    /// passes the gate (`delivery`, asked only then), at once when it was
    /// cancelled or had no message; a buffered persistent send or a
    /// collective at once (a collective's job decided already).
    pub fn ready_time(&self, native: Native, delivery: impl FnOnce(Kind, &P) -> u64) -> u64 {
        match self.kind {
            Kind::Send | Kind::PSend => self.complete_at,
            Kind::PBsend | Kind::Coll => 0,
            Kind::Recv | Kind::PRecv | Kind::FromStash => {
                if native.cancelled || native.from_null {
                    return 0;
                }
                match &self.data {
                    Some(p) => delivery(self.kind, p),
                    None => 0,
                }
            }
        }
    }
}

/// The first look of a completion call at a request, before asking MPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Untracked,
    Inactive,
    /// Tracked and active: ask MPI (or, for `Kind::Coll`, its job).
    Active(Kind),
}

/// A request of the light lane (`Table::track_light`): a one-shot
/// nonblocking send or receive, always active, whose whole state is kept by
/// the caller in a small value (a pointer to its own record of the
/// request), which says what the table needs to know of it and becomes
/// the table's general payload `P` for every use of the table but the
/// light lane's own (`Table::take_light`).
pub trait LightData<P>: Copy + Default {
    /// `Kind::Send` or `Kind::Recv`.
    fn kind(&self) -> Kind;
    /// A send's emulated completion (0 for a receive).
    fn complete_at(&self) -> u64;
    /// The general payload it stands for.
    fn promote(self) -> P;
}

/// A payload handed back by `Table::track_light`: the light one given, or
/// the general one of an earlier send on the same handle.
#[derive(Debug, PartialEq, Eq)]
pub enum Back<L, P> {
    Light(L),
    Full(P),
}

/// The request table.
///
/// Besides its general entries it has a *light lane*: one-shot
/// nonblocking sends and receives whose state is small (`L`), kept in a
/// `HandleMap` and taken by the shim's fast completion paths with one
/// probe (`take_light`). Every other use of the table first *promotes* a
/// light entry to a general one (`LightData::promote`), so that the decisions below
/// are the same for both: a light entry is a general entry stored
/// compactly, never a different life cycle.
pub struct Table<K, P, S, L> {
    live: HashMap<K, Entry<P>, S>,
    /// The light lane. Its values are meant to be small (a pointer to the
    /// shim's own record of the request): the map moves them when it
    /// removes.
    light: HandleMap<K, L>,
    /// Per shared send handle, the completion times of the earlier sends
    /// still ahead, oldest first.
    shared: HashMap<K, VecDeque<u64>, S>,
    /// Handles MPI was seen to give a send while an earlier send still
    /// held them (`track_send`): requests MPI hands out complete at
    /// creation (Open MPI's `ompi_request_empty`, MPICH's lightweight
    /// complete requests), the newest few.
    born_done: [Option<K>; BORN_DONE],
    born_next: usize,
}

/// How many handles complete at creation `Table` remembers (Open MPI has
/// one, MPICH one per kind of request).
const BORN_DONE: usize = 4;

impl<K: HandleKey, P, S: Default, L: Copy + Default> Default for Table<K, P, S, L> {
    fn default() -> Self {
        Table {
            live: HashMap::default(),
            light: HandleMap::new(),
            shared: HashMap::default(),
            born_done: [None; BORN_DONE],
            born_next: 0,
        }
    }
}

impl<K: HandleKey + Hash, P, S: BuildHasher, L: LightData<P>> Table<K, P, S, L> {
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.light.is_empty()
    }
    pub fn contains(&self, k: K) -> bool {
        self.light.contains(k) || self.live.contains_key(&k)
    }
    /// Whether `k` has a general entry.
    #[inline]
    pub fn is_general(&self, k: K) -> bool {
        !self.live.is_empty() && self.live.contains_key(&k)
    }
    /// Whether any light entry is held.
    #[inline]
    pub fn has_light(&self) -> bool {
        !self.light.is_empty()
    }
    /// Whether `k` is held by a light entry alone.
    pub fn is_light(&self, k: K) -> bool {
        self.light.contains(k)
    }
    pub fn kind(&self, k: K) -> Option<Kind> {
        if let Some(l) = self.light.get(k) {
            return Some(l.kind());
        }
        self.live.get(&k).map(|e| e.kind)
    }
    pub fn get(&mut self, k: K) -> Option<&P> {
        self.promote(k);
        self.live.get(&k).and_then(|e| e.data.as_ref())
    }
    pub fn get_mut(&mut self, k: K) -> Option<&mut P> {
        self.promote(k);
        self.live.get_mut(&k).and_then(|e| e.data.as_mut())
    }

    /// Turns `k`'s light entry, if it has one, into a general one.
    #[inline]
    pub fn promote(&mut self, k: K) {
        if self.light.is_empty() {
            return;
        }
        if let Some(l) = self.light.remove(k) {
            self.live
                .insert(k, Entry::new(l.kind(), l.complete_at(), l.promote()));
        }
    }

    /// Enters a one-shot nonblocking send or receive (`data`, which says
    /// which, and a send's emulated completion), departed at `t`, in the
    /// light lane. What the table decides is that of `track_send` and
    /// `track`: a handle that some entry holds already is handled by them
    /// (the light entry promoted first), and a send on a handle MPI hands
    /// out complete at creation whose completion has passed is not
    /// entered: its payload comes back (`Back::Light`), as does an
    /// earlier send's that the new one displaces (`Back::Full`).
    #[inline(always)]
    pub fn track_light(&mut self, k: K, data: L, t: u64) -> Option<Back<L, P>> {
        let kind = data.kind();
        debug_assert!(matches!(kind, Kind::Send | Kind::Recv));
        if kind == Kind::Send && data.complete_at() <= t && self.born_done(k) {
            return Some(Back::Light(data));
        }
        let held = (!self.live.is_empty() && self.live.contains_key(&k))
            || (!self.shared.is_empty() && self.shared.contains_key(&k));
        // Where a light entry holds the handle already (or the handle
        // cannot be a key of the lane), the general path.
        if !held && self.light.insert_new(k, data).is_ok() {
            return None;
        }
        self.track_light_held(k, data, t)
    }

    /// `track_light` of a handle some entry holds: the general path.
    #[cold]
    #[inline(never)]
    fn track_light_held(&mut self, k: K, data: L, t: u64) -> Option<Back<L, P>> {
        let kind = data.kind();
        self.promote(k);
        let complete_at = data.complete_at();
        let p = data.promote();
        if kind == Kind::Send {
            return self.track_send(k, complete_at, p, t).map(Back::Full);
        }
        self.track(k, kind, p);
        None
    }

    /// Takes `k`'s light entry for completion, if it has one: the fast
    /// path of a one-shot request, whose `take` it is.
    #[inline(always)]
    pub fn take_light(&mut self, k: K) -> Option<L> {
        if self.light.is_empty() {
            return None;
        }
        self.light.remove(k)
    }

    /// Enters a request that is not a nonblocking send (those go through
    /// `track_send`). Persistent ones start inactive. An entry the handle
    /// had is stale (MPI completed it behind the table's back) and goes.
    pub fn track(&mut self, k: K, kind: Kind, data: P) {
        if !self.light.is_empty() {
            self.light.remove(k);
        }
        self.live.insert(k, Entry::new(kind, 0, data));
    }

    /// Enters a nonblocking send that completes at `complete_at`, at time
    /// `t` (its departure). A handle that an earlier send still holds is
    /// one MPI completed at creation and hands out again (it gives no
    /// handle to two active requests): the new send takes the entry, the
    /// earlier one's completion queues when it is still ahead of `t` and
    /// is forgotten when it has passed (completing it natively is then the
    /// same). Returns the earlier send's payload, done with (its buffers
    /// are free); a stale entry of another kind is dropped.
    ///
    /// Such a handle is remembered as one MPI hands out complete at
    /// creation. MPI gives a handle to a new request only once the
    /// application has completed or freed the one before, and every
    /// completion and free of a tracked request passes through this table,
    /// so a handle found still held can only be an object MPI keeps for
    /// requests complete at creation (it never stands for an active one).
    /// A later send on it whose emulated completion has passed at its
    /// departure (`complete_at <= t`: every send at zero sender knobs) is
    /// then not entered at all and its payload comes straight back: MPI is
    /// done with its buffers, and a wait on the handle has nothing to hold
    /// it for.
    pub fn track_send(&mut self, k: K, complete_at: u64, data: P, t: u64) -> Option<P> {
        if complete_at <= t && self.born_done(k) {
            return Some(data);
        }
        self.promote(k);
        match self.live.entry(k) {
            MapEntry::Vacant(e) => {
                e.insert(Entry::new(Kind::Send, complete_at, data));
                None
            }
            MapEntry::Occupied(mut e) => {
                let old = e.insert(Entry::new(Kind::Send, complete_at, data));
                if old.kind != Kind::Send {
                    return None;
                }
                if !self.born_done(k) {
                    self.born_done[self.born_next] = Some(k);
                    self.born_next = (self.born_next + 1) % BORN_DONE;
                }
                if old.complete_at > t {
                    self.shared.entry(k).or_default().push_back(old.complete_at);
                }
                old.data
            }
        }
    }

    /// Whether `k` was seen to be a handle MPI hands out complete at
    /// creation (`track_send`).
    fn born_done(&self, k: K) -> bool {
        self.born_done.contains(&Some(k))
    }

    /// Whether no shared send handle has earlier sends queued: then a
    /// handle taken once has nothing left to take in the same pass
    /// (`take` again gives `None`).
    pub fn queues_none(&self) -> bool {
        self.shared.is_empty()
    }

    /// The completion a Wait/Test on a shared send handle judges first:
    /// the oldest queued one, if any.
    pub fn queued_send(&self, k: K) -> Option<u64> {
        if self.shared.is_empty() {
            return None;
        }
        self.shared.get(&k).and_then(|q| q.front().copied())
    }

    /// Takes the entry of a request out of the table (completion or
    /// MPI_Request_free); for a shared send handle, first the oldest queued
    /// send, as an entry without payload.
    pub fn untrack(&mut self, k: K) -> Option<Entry<P>> {
        self.promote(k);
        if !self.shared.is_empty() {
            if let Some(q) = self.shared.get_mut(&k) {
                if let Some(complete_at) = q.pop_front() {
                    if q.is_empty() {
                        self.shared.remove(&k);
                    }
                    return Some(Entry {
                        kind: Kind::Send,
                        active: true,
                        complete_at,
                        data: None,
                    });
                }
            }
        }
        self.live.remove(&k)
    }

    /// MPI_Start of a tracked persistent request: it turns active. The
    /// payload comes back for the shim's part of the start (a header, a
    /// buffered send); `None` for a request that is not a tracked
    /// persistent one.
    pub fn start(&mut self, k: K) -> Option<(Kind, &mut P)> {
        let e = self.live.get_mut(&k)?;
        if !e.kind.persistent() {
            return None;
        }
        e.active = true;
        Some((e.kind, e.data.as_mut()?))
    }

    /// A started persistent send's emulated completion.
    pub fn set_complete_at(&mut self, k: K, complete_at: u64) {
        if let Some(e) = self.live.get_mut(&k) {
            if e.kind == Kind::PSend {
                e.complete_at = complete_at;
            }
        }
    }

    /// The first look of a completion call at `k`.
    pub fn look(&self, k: K) -> Look {
        if let Some(l) = self.light.get(k) {
            return Look::Active(l.kind());
        }
        match self.live.get(&k) {
            None => Look::Untracked,
            Some(e) if !e.active => Look::Inactive,
            Some(e) => Look::Active(e.kind),
        }
    }

    /// The entry of `k`, to look at before judging it (`judge_entry`)
    /// without a second lookup.
    /// `k`'s light entry, if any, must be promoted first (`promote`).
    pub fn entry(&self, k: K) -> Option<&Entry<P>> {
        debug_assert!(!self.light.contains(k), "entry of a light request");
        self.live.get(&k)
    }

    /// Where `k` stands at time `t` once MPI says it is complete natively
    /// (`native`: what its status says; `delivery`: when a message passes
    /// the gate). A shared send handle is judged by its oldest queued send.
    pub fn judge(
        &mut self,
        k: K,
        t: u64,
        native: Native,
        delivery: impl FnOnce(Kind, &P) -> u64,
    ) -> Poll {
        self.promote(k);
        match self.live.get(&k) {
            None => Poll::Untracked,
            Some(e) => self.judge_entry(k, e, t, native, delivery),
        }
    }

    /// `judge` of `k`'s entry `e` (from `entry`).
    pub fn judge_entry(
        &self,
        k: K,
        e: &Entry<P>,
        t: u64,
        native: Native,
        delivery: impl FnOnce(Kind, &P) -> u64,
    ) -> Poll {
        if !e.active {
            return Poll::Inactive;
        }
        let ready = match self.queued_send(k) {
            Some(c) => c,
            None => e.ready_time(native, delivery),
        };
        if t >= ready {
            Poll::Ready
        } else {
            Poll::NotReady
        }
    }

    /// Takes `k` for completion. A one-shot request leaves the table (see
    /// `untrack`); an active persistent one stays, now inactive, and a
    /// working copy of it comes back (`copy` of its payload, which may
    /// move what belongs to this completion alone out of the live one); an
    /// inactive one completes at once with an empty status, nothing of the
    /// table's to do (`None`), as does an untracked one.
    pub fn take(&mut self, k: K, copy: impl FnOnce(&mut P) -> P) -> Option<Entry<P>> {
        self.promote(k);
        if self.shared.is_empty() {
            // One lookup for a one-shot request, the common case (and for
            // a handle not in the table); a persistent one goes back.
            // (Keeping the re-insert's reference instead of the lookup
            // below changed the shim's code generation: +21 and +23
            // instructions per received message, `scripts/bench-instr.sh`.)
            match self.live.remove(&k) {
                None => return None,
                Some(e) if !e.kind.persistent() => return Some(e),
                Some(e) => {
                    self.live.insert(k, e);
                }
            }
        }
        let e = self.live.get_mut(&k)?;
        if !e.kind.persistent() {
            return self.untrack(k);
        }
        if !e.active {
            return None;
        }
        e.active = false;
        Some(Entry {
            kind: e.kind,
            active: false,
            complete_at: e.complete_at,
            data: e.data.as_mut().map(copy),
        })
    }
}

/// Waitall's order of delivering the requests MPI completed together:
/// by emulated readiness, ties in the order of the array (`(ready, index,
/// entry)`).
pub fn delivery_order<T>(mine: &mut [(u64, usize, T)]) {
    mine.sort_by_key(|m| (m.0, m.1));
}

/// What a pass of Waitany/Testany does with one request, judged in array
/// order at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyStep {
    /// Complete this one: the first ready request ends the pass.
    Complete,
    /// Hide it from MPI's Testany (tracked, not ready, or inactive).
    Mask,
    /// Leave it to MPI's Testany over the untracked ones.
    Native,
}

/// How a pass of Waitany/Testany ends when none of its tracked requests
/// was ready.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnyPass {
    active: bool,
    untracked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnyEnd {
    /// Some request is still active: nothing completed yet.
    NotYet,
    /// No request is active: MPI_UNDEFINED.
    NoneActive,
}

impl AnyPass {
    /// Judges one request; the pass stops at the first `Complete`. Judged
    /// all at one instant: judged each at its own time, a later message of
    /// a channel could be found ready after an earlier one was found not
    /// yet, though the earlier arrives no later, and overtake it.
    pub fn see(&mut self, p: Poll) -> AnyStep {
        match p {
            Poll::Ready => AnyStep::Complete,
            Poll::NotReady => {
                self.active = true;
                AnyStep::Mask
            }
            Poll::Inactive => AnyStep::Mask,
            Poll::Untracked => {
                self.untracked = true;
                AnyStep::Native
            }
        }
    }
    /// Some request was left to MPI: ask its Testany over them.
    pub fn ask_native(&self) -> bool {
        self.untracked
    }
    /// After MPI's Testany completed none: `native_active` when it said
    /// one of its requests is still active (flag 0).
    pub fn end(&self, native_active: bool) -> AnyEnd {
        if self.active || native_active {
            AnyEnd::NotYet
        } else {
            AnyEnd::NoneActive
        }
    }
}

/// What a pass of Waitsome/Testsome does with one request (all judged at
/// one instant, every ready one completed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SomeStep {
    Complete,
    Skip,
    /// Ask MPI about this one alone.
    Native,
}

/// Counts of a pass of Waitsome/Testsome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SomePass {
    active: bool,
    out: usize,
}

impl SomePass {
    pub fn see(&mut self, p: Poll) -> SomeStep {
        match p {
            Poll::Ready => SomeStep::Complete,
            Poll::Inactive => SomeStep::Skip,
            Poll::NotReady => {
                self.active = true;
                SomeStep::Skip
            }
            Poll::Untracked => SomeStep::Native,
        }
    }
    /// What MPI said of an untracked one: `Some(true)` completed,
    /// `Some(false)` still active, `None` inactive.
    pub fn native(&mut self, completed: Option<bool>) {
        match completed {
            Some(true) => self.out += 1,
            Some(false) => self.active = true,
            None => {}
        }
    }
    /// One request completed (the index in the output lists is `out()`
    /// before this).
    pub fn completed(&mut self) {
        self.out += 1;
    }
    pub fn out(&self) -> usize {
        self.out
    }
    /// The outcount: `None` for MPI_UNDEFINED (nothing completed, nothing
    /// active).
    pub fn outcount(&self) -> Option<usize> {
        if self.out == 0 && !self.active {
            None
        } else {
            Some(self.out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::RandomState;

    /// A light request of the tests: a send (completing at `at`) or a
    /// receive, standing for the general payload `name`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct Tl {
        recv: bool,
        at: u64,
        name: &'static str,
    }

    impl LightData<&'static str> for Tl {
        fn kind(&self) -> Kind {
            if self.recv {
                Kind::Recv
            } else {
                Kind::Send
            }
        }
        fn complete_at(&self) -> u64 {
            self.at
        }
        fn promote(self) -> &'static str {
            self.name
        }
    }

    fn ls(at: u64, name: &'static str) -> Tl {
        Tl {
            recv: false,
            at,
            name,
        }
    }

    fn lr(name: &'static str) -> Tl {
        Tl {
            recv: true,
            at: 0,
            name,
        }
    }

    type T = Table<u64, &'static str, RandomState, Tl>;

    /// A gate that delivers every message at 100.
    fn gate(_: Kind, _: &&str) -> u64 {
        100
    }

    fn done() -> Native {
        Native::default()
    }

    #[test]
    fn untracked_handles() {
        let mut t = T::default();
        assert!(t.is_empty());
        assert_eq!(t.look(7), Look::Untracked);
        assert_eq!(t.judge(7, 1_000, done(), gate), Poll::Untracked);
        assert!(t.take(7, |p| *p).is_none());
        assert!(t.untrack(7).is_none());
        assert!(t.start(7).is_none());
        assert_eq!(t.queued_send(7), None);
        assert!(Poll::Untracked.done(|| true));
        assert!(!Poll::Untracked.done(|| false));
    }

    #[test]
    fn send_gated_until_complete_at() {
        let mut t = T::default();
        assert!(t.track_send(1, 50, "s", 10).is_none());
        assert_eq!(t.look(1), Look::Active(Kind::Send));
        assert_eq!(t.judge(1, 49, done(), gate), Poll::NotReady);
        assert_eq!(t.judge(1, 50, done(), gate), Poll::Ready);
        let e = t.take(1, |p| *p).unwrap();
        assert_eq!(
            (e.kind(), e.complete_at(), e.data()),
            (Kind::Send, 50, Some(&"s"))
        );
        assert!(t.is_empty());
        assert_eq!(t.look(1), Look::Untracked);
    }

    #[test]
    fn recv_gated_until_delivery() {
        let mut t = T::default();
        t.track(2, Kind::Recv, "r");
        assert_eq!(t.judge(2, 99, done(), gate), Poll::NotReady);
        assert_eq!(t.judge(2, 100, done(), gate), Poll::Ready);
        // The gate is asked with the payload and the kind.
        let mut asked = None;
        t.judge(2, 0, done(), |k, p| {
            asked = Some((k, *p));
            0
        });
        assert_eq!(asked, Some((Kind::Recv, "r")));
    }

    #[test]
    fn cancelled_or_null_receive_completes_without_delivery() {
        let mut t = T::default();
        t.track(3, Kind::Recv, "r");
        let cancelled = Native {
            cancelled: true,
            from_null: false,
        };
        let null = Native {
            cancelled: false,
            from_null: true,
        };
        let never = |_: Kind, _: &&str| -> u64 { panic!("no delivery") };
        assert_eq!(t.judge(3, 0, cancelled, never), Poll::Ready);
        assert_eq!(t.judge(3, 0, null, never), Poll::Ready);
        let e = t.take(3, |p| *p).unwrap();
        assert_eq!(e.ready_time(cancelled, never), 0);
        assert_eq!(e.ready_time(done(), gate), 100);
        // A send is unaffected by the receive's flags.
        t.track_send(4, 30, "s", 0);
        assert_eq!(t.judge(4, 29, cancelled, never), Poll::NotReady);
    }

    #[test]
    fn stash_and_collective_kinds() {
        let mut t = T::default();
        t.track(5, Kind::FromStash, "m");
        t.track(6, Kind::Coll, "c");
        assert_eq!(t.judge(5, 99, done(), gate), Poll::NotReady);
        assert_eq!(t.judge(5, 100, done(), gate), Poll::Ready);
        assert_eq!(t.look(6), Look::Active(Kind::Coll));
        assert_eq!(t.judge(6, 0, done(), gate), Poll::Ready);
        assert!(t.take(6, |p| *p).is_some());
        assert!(!t.contains(6));
    }

    /// What Waitall's skip of a repeated handle rests on
    /// (`queues_none`): with no sends queued, a second `take` of a handle
    /// in one pass finds nothing, whatever the handle was; with sends
    /// queued it does, and the skip must not happen.
    #[test]
    fn second_take_finds_nothing_while_no_queues() {
        let mut t = T::default();
        assert!(t.queues_none());
        // A shared handle whose earlier send is complete: not queued.
        t.track_send(9, 40, "a", 50);
        assert_eq!(t.track_send(9, 40, "b", 60), Some("a"));
        t.track(5, Kind::PSend, "p");
        assert!(t.start(5).is_some());
        t.track(6, Kind::Recv, "r");
        assert!(t.queues_none());
        for k in [9, 5, 6, 7] {
            let first = t.take(k, |p| *p).is_some();
            assert_eq!(first, k != 7, "handle {k}");
            assert!(t.take(k, |p| *p).is_none(), "handle {k} taken twice");
        }
        // Earlier sends still ahead: queued, and a second take finds one.
        t.track_send(9, 80, "c", 10);
        t.track_send(9, 90, "d", 20);
        assert!(!t.queues_none());
        assert!(t.take(9, |p| *p).is_some());
        assert!(t.take(9, |p| *p).is_some());
        assert!(t.queues_none());
    }

    #[test]
    fn shared_send_handle_fifo() {
        let mut t = T::default();
        // Three eager sends get one handle; the first two are still ahead.
        assert_eq!(t.track_send(9, 40, "a", 10), None);
        assert_eq!(t.track_send(9, 60, "b", 20), Some("a"));
        assert_eq!(t.track_send(9, 80, "c", 30), Some("b"));
        assert_eq!(t.queued_send(9), Some(40));
        // Judged by the oldest, through the entry too.
        assert_eq!(t.judge(9, 39, done(), gate), Poll::NotReady);
        assert_eq!(t.judge(9, 40, done(), gate), Poll::Ready);
        let e = t.entry(9).unwrap();
        assert_eq!(e.complete_at(), 80);
        assert_eq!(t.judge_entry(9, e, 39, done(), gate), Poll::NotReady);
        assert_eq!(t.judge_entry(9, e, 40, done(), gate), Poll::Ready);
        let e = t.take(9, |p| *p).unwrap();
        assert_eq!((e.complete_at(), e.data()), (40, None));
        assert_eq!(t.queued_send(9), Some(60));
        let e = t.untrack(9).unwrap();
        assert_eq!(e.complete_at(), 60);
        assert_eq!(t.queued_send(9), None);
        // Then the newest, which holds the payload.
        assert_eq!(t.judge(9, 79, done(), gate), Poll::NotReady);
        let e = t.take(9, |p| *p).unwrap();
        assert_eq!((e.complete_at(), e.data()), (80, Some(&"c")));
        assert!(t.is_empty());
        assert_eq!(t.look(9), Look::Untracked);
    }

    #[test]
    fn shared_send_already_complete_is_forgotten() {
        let mut t = T::default();
        t.track_send(9, 40, "a", 10);
        // The earlier send completed (40) before the next departs (50).
        assert_eq!(t.track_send(9, 70, "b", 50), Some("a"));
        assert_eq!(t.queued_send(9), None);
        // Exactly at its completion: passed too.
        t.track_send(9, 90, "c", 70);
        assert_eq!(t.queued_send(9), None);
        assert_eq!(t.take(9, |p| *p).unwrap().complete_at(), 90);
    }

    /// A handle found still held by an earlier send is one MPI hands out
    /// complete at creation: later sends on it that are complete in the
    /// emulated machine at departure are not entered; those still ahead
    /// are, as before.
    #[test]
    fn born_done_handle_passes_sends_complete_at_departure() {
        let mut t = T::default();
        assert_eq!(t.track_send(9, 0, "a", 10), None);
        assert!(!t.born_done(9));
        assert_eq!(t.track_send(9, 0, "b", 20), Some("a"));
        assert!(t.born_done(9));
        // Complete at departure (and exactly at it): back at once, the
        // entry stays the one before.
        assert_eq!(t.track_send(9, 0, "c", 30), Some("c"));
        assert_eq!(t.track_send(9, 35, "c2", 35), Some("c2"));
        assert_eq!(t.get(9), Some(&"b"));
        // Still ahead at departure: entered and judged as before.
        assert_eq!(t.track_send(9, 50, "d", 40), Some("b"));
        assert_eq!(t.queued_send(9), None);
        assert_eq!(t.judge(9, 49, done(), gate), Poll::NotReady);
        assert_eq!(t.take(9, |p| *p).unwrap().data(), Some(&"d"));
        assert!(t.take(9, |p| *p).is_none());
        // Untracked while held by nothing: a send on it passes too.
        assert_eq!(t.track_send(9, 0, "e", 60), Some("e"));
        assert!(t.is_empty());
        // Another handle is not learned from this one, nor a handle that
        // replaced a stale entry of another kind.
        assert_eq!(t.track_send(5, 0, "x", 0), None);
        t.track(6, Kind::Recv, "r");
        assert_eq!(t.track_send(6, 0, "y", 0), None);
        assert!(!t.born_done(5) && !t.born_done(6));
        assert_eq!(t.get(5), Some(&"x"));
    }

    /// The handles remembered are the newest few.
    #[test]
    fn born_done_keeps_the_newest_handles() {
        let mut t = T::default();
        let n = super::BORN_DONE as u64;
        for k in 1..=n + 1 {
            t.track_send(k, 0, "a", 0);
            t.track_send(k, 0, "b", 0);
            assert!(t.born_done(k));
        }
        assert!(!t.born_done(1));
        assert!((2..=n + 1).all(|k| t.born_done(k)));
        // Relearned when seen again.
        t.track_send(1, 0, "c", 0);
        assert!(t.born_done(1));
        assert!(!t.born_done(2));
    }

    #[test]
    fn send_replaces_stale_entry_of_another_kind() {
        let mut t = T::default();
        t.track(4, Kind::Recv, "stale");
        assert_eq!(t.track_send(4, 500, "s", 0), None);
        assert_eq!(t.queued_send(4), None);
        assert_eq!(t.kind(4), Some(Kind::Send));
        assert_eq!(t.get(4), Some(&"s"));
    }

    #[test]
    fn shared_queues_are_per_handle() {
        let mut t = T::default();
        t.track_send(1, 40, "a", 0);
        t.track_send(1, 50, "b", 0);
        t.track_send(2, 45, "x", 0);
        t.track_send(2, 55, "y", 0);
        assert_eq!(t.untrack(2).unwrap().complete_at(), 45);
        assert_eq!(t.queued_send(1), Some(40));
        assert_eq!(t.untrack(1).unwrap().complete_at(), 40);
        assert_eq!(t.untrack(1).unwrap().data(), Some(&"b"));
        assert_eq!(t.untrack(2).unwrap().data(), Some(&"y"));
        assert!(t.is_empty());
    }

    #[test]
    fn persistent_send_start_complete_cycles() {
        let mut t = T::default();
        t.track(3, Kind::PSend, "ps");
        // Created inactive.
        assert_eq!(t.look(3), Look::Inactive);
        assert_eq!(t.judge(3, 0, done(), gate), Poll::Inactive);
        let e = t.entry(3).unwrap();
        assert_eq!(t.judge_entry(3, e, 0, done(), gate), Poll::Inactive);
        assert!(Poll::Inactive.done(|| false));
        assert!(t.take(3, |p| *p).is_none());
        for (round, (start, c)) in [(10u64, 70u64), (100, 130), (200, 200)]
            .into_iter()
            .enumerate()
        {
            let (k, p) = t.start(3).unwrap();
            assert_eq!((k, *p), (Kind::PSend, "ps"));
            t.set_complete_at(3, c);
            assert_eq!(t.look(3), Look::Active(Kind::PSend), "round {round}");
            if c > start {
                assert_eq!(t.judge(3, c - 1, done(), gate), Poll::NotReady);
            }
            assert_eq!(t.judge(3, c, done(), gate), Poll::Ready);
            let e = t.take(3, |p| *p).unwrap();
            assert_eq!(
                (e.kind(), e.active(), e.complete_at()),
                (Kind::PSend, false, c)
            );
            // Stays in the table, inactive.
            assert!(t.contains(3));
            assert_eq!(t.look(3), Look::Inactive);
            assert!(t.take(3, |p| *p).is_none());
        }
        // Freed: gone.
        assert!(t.untrack(3).is_some());
        assert_eq!(t.look(3), Look::Untracked);
    }

    #[test]
    fn take_is_the_same_with_and_without_queued_shared_sends() {
        // `take` has a one-lookup path while no shared send is queued;
        // both paths must give the same answers.
        for queued in [false, true] {
            let mut t = T::default();
            if queued {
                t.track_send(8, 40, "a", 0);
                t.track_send(8, 50, "b", 0);
            }
            t.track(3, Kind::PSend, "ps");
            t.track(4, Kind::Recv, "r");
            assert!(t.take(3, |p| *p).is_none(), "inactive, queued={queued}");
            t.start(3).unwrap();
            let e = t.take(3, |p| *p).unwrap();
            assert_eq!((e.kind(), e.active()), (Kind::PSend, false));
            assert!(t.contains(3), "persistent stays, queued={queued}");
            assert_eq!(t.look(3), Look::Inactive);
            assert_eq!(t.take(4, |p| *p).unwrap().data(), Some(&"r"));
            assert!(!t.contains(4), "one-shot leaves, queued={queued}");
            assert!(t.take(5, |p| *p).is_none(), "untracked");
        }
    }

    #[test]
    fn persistent_recv_and_bsend() {
        let mut t = T::default();
        t.track(4, Kind::PRecv, "pr");
        t.track(5, Kind::PBsend, "pb");
        assert!(t.start(4).is_some());
        assert!(t.start(5).is_some());
        assert_eq!(t.judge(4, 99, done(), gate), Poll::NotReady);
        assert_eq!(t.judge(4, 100, done(), gate), Poll::Ready);
        let null = Native {
            cancelled: false,
            from_null: true,
        };
        assert_eq!(t.judge(4, 0, null, gate), Poll::Ready);
        // A buffered persistent send is ready once MPI says so.
        assert_eq!(t.judge(5, 0, done(), gate), Poll::Ready);
        // The working copy is the shim's.
        let e = t
            .take(4, |p| if *p == "pr" { "copy" } else { "?" })
            .unwrap();
        assert_eq!(e.into_data(), Some("copy"));
        assert_eq!(t.get(4), Some(&"pr"));
        // set_complete_at touches persistent sends only.
        t.set_complete_at(4, 999);
        t.start(4);
        assert_eq!(t.judge(4, 100, done(), gate), Poll::Ready);
    }

    #[test]
    fn start_ignores_one_shot_requests() {
        let mut t = T::default();
        t.track_send(1, 10, "s", 0);
        t.track(2, Kind::Recv, "r");
        assert!(t.start(1).is_none());
        assert!(t.start(2).is_none());
        assert_eq!(t.look(1), Look::Active(Kind::Send));
    }

    #[test]
    fn get_mut_reaches_the_payload() {
        let mut t = T::default();
        t.track(1, Kind::Recv, "a");
        *t.get_mut(1).unwrap() = "b";
        assert_eq!(t.get(1), Some(&"b"));
        assert_eq!(t.kind(1), Some(Kind::Recv));
        assert!(t.get_mut(2).is_none());
    }

    /// A light receive is a general one stored compactly: seen by every
    /// look, taken by the fast path, promoted by any other use.
    #[test]
    fn light_receive_is_the_general_one_stored_compactly() {
        let mut t = T::default();
        assert_eq!(t.track_light(3, lr("r"), 0), None);
        assert!(!t.is_empty() && t.contains(3));
        assert!(!t.is_general(3), "light, not general");
        assert_eq!(t.kind(3), Some(Kind::Recv));
        assert_eq!(t.look(3), Look::Active(Kind::Recv));
        assert_eq!(t.take_light(4), None);
        assert_eq!(t.take_light(3), Some(lr("r")));
        assert!(t.is_empty());
        assert_eq!(t.take_light(3), None);
        // Any other use promotes it first: judged as a receive (the gate
        // asked with the general payload), taken as one.
        assert_eq!(t.track_light(3, lr("r2"), 0), None);
        let mut asked = None;
        assert_eq!(
            t.judge(3, 99, done(), |k, p| {
                asked = Some((k, *p));
                100
            }),
            Poll::NotReady
        );
        assert_eq!(asked, Some((Kind::Recv, "r2")));
        assert!(t.is_general(3) && !t.is_general(4));
        assert_eq!(t.take_light(3), None, "promoted: no longer light");
        let e = t.take(3, |p| *p).unwrap();
        assert_eq!((e.kind(), e.data()), (Kind::Recv, Some(&"r2")));
        assert!(t.is_empty());
        // A general entry made for the handle drops a stale light one.
        assert_eq!(t.track_light(5, lr("stale"), 0), None);
        t.track(5, Kind::PRecv, "p");
        assert_eq!(t.kind(5), Some(Kind::PRecv));
        assert_eq!(t.take_light(5), None);
    }

    /// Light sends follow `track_send`'s rules for handles MPI hands out
    /// complete at creation: the second send on a held handle displaces
    /// the first (its payload back, the handle learned), and later ones
    /// complete at departure are not entered at all.
    #[test]
    fn light_sends_learn_handles_complete_at_creation() {
        let mut t = T::default();
        assert_eq!(t.track_light(9, ls(0, "a"), 10), None);
        assert_eq!(t.look(9), Look::Active(Kind::Send));
        assert_eq!(t.track_light(9, ls(0, "b"), 20), Some(Back::Full("a")));
        assert!(t.born_done(9));
        assert_eq!(
            t.track_light(9, ls(30, "c"), 30),
            Some(Back::Light(ls(30, "c")))
        );
        // Still ahead at departure: the general path, which queues the
        // completion of the send it displaces when that is ahead too.
        assert_eq!(t.track_light(9, ls(50, "d"), 40), Some(Back::Full("b")));
        assert_eq!(t.track_light(9, ls(60, "e"), 45), Some(Back::Full("d")));
        assert_eq!(t.queued_send(9), Some(50));
        assert_eq!(t.judge(9, 55, done(), gate), Poll::Ready);
        assert_eq!(t.take(9, |p| *p).unwrap().complete_at(), 50);
        assert_eq!(t.judge(9, 55, done(), gate), Poll::NotReady);
        assert_eq!(t.take(9, |p| *p).unwrap().data(), Some(&"e"));
        assert!(t.is_empty());
        // A handle held by a general entry: the light send goes general.
        t.track(7, Kind::Recv, "stale");
        assert_eq!(t.track_light(7, ls(0, "s"), 0), None);
        assert_eq!(t.take_light(7), None);
        assert_eq!(t.get(7), Some(&"s"));
    }

    /// A Waitany pass over `polls` at one instant: the index it completes,
    /// or how it ends, with MPI's Testany over the untracked ones saying
    /// `native` (`Some(i)` completed, `None` with `native_active`).
    fn any_pass(
        polls: &[Poll],
        native: Option<usize>,
        native_active: bool,
    ) -> Result<usize, AnyEnd> {
        let mut pass = AnyPass::default();
        let mut masked = Vec::new();
        for (i, p) in polls.iter().enumerate() {
            match pass.see(*p) {
                AnyStep::Complete => return Ok(i),
                AnyStep::Mask => masked.push(None),
                AnyStep::Native => masked.push(Some(i)),
            }
        }
        if pass.ask_native() {
            if let Some(i) = native {
                assert_eq!(masked[i], Some(i), "MPI completes only untracked ones");
                return Ok(i);
            }
        }
        Err(pass.end(pass.ask_native() && native_active))
    }

    #[test]
    fn waitany_choice_at_one_instant() {
        // Two receives on one channel: the earlier delivers at 100, the
        // later at 100 too (its L raised not to overtake). Judged at one
        // instant both are ready and the first in the array wins; judged at
        // two instants (99, then 100) the later one would have won.
        let mut t = T::default();
        t.track(1, Kind::Recv, "early");
        t.track(2, Kind::Recv, "late");
        let at = |t: &mut T, now: u64| -> Vec<Poll> {
            [1, 2]
                .iter()
                .map(|&k| t.judge(k, now, done(), gate))
                .collect()
        };
        assert_eq!(any_pass(&at(&mut t, 100), None, false), Ok(0));
        let split = [t.judge(1, 99, done(), gate), t.judge(2, 100, done(), gate)];
        assert_eq!(any_pass(&split, None, false), Ok(1));
        // Nothing ready yet at one instant: not yet.
        assert_eq!(any_pass(&at(&mut t, 99), None, false), Err(AnyEnd::NotYet));
    }

    #[test]
    fn waitany_ends() {
        use Poll::*;
        // A ready tracked one beats an untracked one before it.
        assert_eq!(any_pass(&[Untracked, Ready], Some(0), false), Ok(1));
        // Only MPI's own: it decides.
        assert_eq!(any_pass(&[Inactive, Untracked], Some(1), false), Ok(1));
        assert_eq!(
            any_pass(&[Inactive, Untracked], None, true),
            Err(AnyEnd::NotYet)
        );
        assert_eq!(
            any_pass(&[Inactive, Untracked], None, false),
            Err(AnyEnd::NoneActive)
        );
        // Inactive ones only: MPI_UNDEFINED.
        assert_eq!(
            any_pass(&[Inactive, Inactive], None, false),
            Err(AnyEnd::NoneActive)
        );
        assert_eq!(any_pass(&[], None, false), Err(AnyEnd::NoneActive));
        assert_eq!(
            any_pass(&[NotReady, Inactive], None, false),
            Err(AnyEnd::NotYet)
        );
    }

    #[test]
    fn some_pass_counts() {
        use Poll::*;
        let run = |polls: &[Poll], natives: &[Option<bool>]| -> (Vec<usize>, Option<usize>) {
            let mut pass = SomePass::default();
            let mut n = natives.iter();
            let mut idx = Vec::new();
            for (i, p) in polls.iter().enumerate() {
                match pass.see(*p) {
                    SomeStep::Complete => {
                        assert_eq!(pass.out(), idx.len());
                        idx.push(i);
                        pass.completed();
                    }
                    SomeStep::Skip => {}
                    SomeStep::Native => {
                        let c = *n.next().unwrap();
                        if c == Some(true) {
                            idx.push(i);
                        }
                        pass.native(c);
                    }
                }
            }
            (idx, pass.outcount())
        };
        assert_eq!(run(&[Ready, NotReady, Ready], &[]), (vec![0, 2], Some(2)));
        assert_eq!(run(&[NotReady, Inactive], &[]), (vec![], Some(0)));
        assert_eq!(run(&[Inactive, Inactive], &[]), (vec![], None));
        assert_eq!(
            run(&[Untracked, Ready], &[Some(true)]),
            (vec![0, 1], Some(2))
        );
        assert_eq!(run(&[Untracked], &[Some(false)]), (vec![], Some(0)));
        assert_eq!(run(&[Untracked], &[None]), (vec![], None));
    }

    #[test]
    fn waitall_delivers_by_readiness_then_index() {
        let mut t = T::default();
        t.track(1, Kind::Recv, "a");
        t.track_send(2, 50, "b", 0);
        t.track(3, Kind::Recv, "c");
        let when = |k: Kind, p: &&str| -> u64 {
            assert_eq!(k, Kind::Recv);
            if *p == "a" {
                120
            } else {
                50
            }
        };
        let mut mine: Vec<(u64, usize, Entry<&str>)> = [1, 2, 3]
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let e = t.take(k, |p| *p).unwrap();
                (e.ready_time(done(), when), i, e)
            })
            .collect();
        delivery_order(&mut mine);
        let order: Vec<usize> = mine.iter().map(|m| m.1).collect();
        assert_eq!(order, vec![1, 2, 0]);
    }
}
