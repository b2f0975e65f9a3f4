//! The engine: turns intercepted MPI point-to-point calls into native calls
//! plus the virtual-time rules of `loggp_core::vt`.
//!
//! # Wire format (only while virtual time is on)
//! Every application message carries a 32-byte header *inside the same
//! message*, before the payload: `[magic u32][src u32][d u64][l u64][lag
//! u32][seq u32]`, where `d` is the sender's virtual departure (across
//! hosts a stamp, in the job's reference time base), `src` its rank in
//! MPI_COMM_WORLD (for the knobs of the pair, `loggp_core::target`), `l`
//! the message's drawn L (`LOGGP_L_DIST`, `loggp_core::dist`) and `lag` how
//! long before `d` the message was handed to MPI (what the receiver learns
//! the clocks' drift from), `seq` the sender's count of messages (send
//! order, for the probe stash). A payload of at most 16 bytes whose header
//! has no `l` (nor across hosts a `lag`) travels behind a 16-byte *compact* header
//! instead (`wire::COMPACT`: `["-P"][src, 24 bits][seq, low 24 bits][d
//! u64]`): such a message is at most 32 bytes, so it lands whole in the
//! header's room of any receive, which moves its payload to the
//! application's buffer and raises a truncation MPI could not see
//! (`Engine::finish_compact`). Travelling in the same message makes
//! the header's association with its data immune to matching order,
//! wildcards and completion order. Two equivalent encodings produce the same
//! bytes on the wire, and the receiver chooses independently of the sender:
//! * *staged* (capacity ≤ `LOGGP_INLINE_MAX`): header and `MPI_Pack`ed
//!   payload in one buffer, sent or received as `MPI_PACKED`; a receive is
//!   staged only when its datatype is one contiguous block (a copy);
//! * *struct*: a struct datatype `{16 × MPI_BYTE at &header, count × dt at
//!   buf}` on `MPI_BOTTOM`, zero-copy, for large messages and for every
//!   receive into a non-contiguous datatype, which MPI itself then fills
//!   (partial elements included, and the datatype may be freed meanwhile).
//!   Where the payload is one contiguous block, the header's memory and
//!   the datatype are kept for the next message with that buffer and
//!   length (`wire::Kept`): building one per message cost MPICH 1-2 us.
//!
//! A send above `LOGGP_INLINE_MAX` (`LOGGP_SPLIT=on`, the default) is
//! *split* instead: the header alone (magic `MAGIC_SPLIT`) on the
//! application's envelope, and the payload exactly as the application
//! gave it on `Engine::payload_comm` (a duplicate of MPI_COMM_WORLD) to
//! the destination's world rank, tagged from the header's `seq` (a
//! persistent send: by a persistent synchronous send with a tag of the
//! request's own, which its header carries, `request::PSplit`). MPI then
//! moves the payload by its native large-message path, where the struct
//! datatype took its non-contiguous one (which on this machine streamed
//! 1 MiB messages at 0.65× to 2.7× native bandwidth, by MPI and phase). The association
//! stays immune to matching order: the receive that matched the header
//! asks for exactly that payload. Any receive accepts either form. The
//! payload's receive is posted when the header is seen: at once by a
//! blocking receive, by `poll` for a nonblocking one, and meanwhile every
//! blocking call polls instead of blocking in MPI (`jobs::must_poll`),
//! since a sender may be waiting for that payload.
//!
//! Counts seen by the application exclude the header (statuses are rewritten
//! with `MPI_Status_set_elements_x`); truncation happens exactly where it
//! would natively, since the receive capacity is the user's plus 24.
//!
//! # Rooms
//! `wire` (header, encodings), `send`, `recv` (posting, the gate),
//! `probe` (the probe stash), `complete` (Wait/Test forms), `request` (the
//! request table, Request_free), `composite` (Sendrecv forms). The
//! decisions of *when* live in `loggp_core` (`vt`, `stash`).
#![allow(clippy::too_many_arguments)]

mod complete;
mod composite;
pub mod jobs;
mod probe;
mod recv;
mod request;
mod send;
mod slots;
mod wire;

use probe::*;
pub use request::start_grequest;
use request::*;
use slots::*;
pub use wire::HDR;
use wire::*;

use crate::abi::{self, key, Comm, Consts, Datatype, Message, Request, Status};
use crate::clock::{now, pass_until, Patience};
use crate::log;
use crate::real::*;
use loggp_core::config::Knobs;
use loggp_core::lifecycle::{
    self, AnyEnd, AnyPass, AnyStep, Kind, Look, Native, Poll, SomePass, SomeStep,
};
use loggp_core::oncemap::OnceMap;
use loggp_core::target::Pair;
use loggp_core::{Config, Envelope, Pattern, RecvGate, Seen, SendSide, Stash, Transit};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Send modes (MPI-3.1 §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Standard,
    Buffered,
    Synchronous,
    Ready,
}

/// A table keyed by MPI handles (request and message handles as integers).
/// Keys are addresses or small integers chosen by the MPI library, not by
/// an adversary, so a multiplicative hash serves: the default SipHash cost
/// ~20 ns per lookup, three lookups per nonblocking message.
pub(crate) type HandleMap<V> = HashMap<usize, V, BuildHasherDefault<HandleHasher>>;

/// `len` copies of a value, on the stack up to `N` of them, else on the
/// heap: the per-request arrays of a completion call. A Sendrecv (and so
/// every step of the shim's collectives) completes two requests, and a
/// malloc/free pair per array cost more than the rest of the call's
/// bookkeeping (~900 instructions per 8-byte Allreduce, np = 2).
pub(crate) enum Small<T: Copy, const N: usize> {
    Stack([T; N], usize),
    Heap(Vec<T>),
}

impl<T: Copy, const N: usize> Small<T, N> {
    pub(crate) fn new(v: T, len: usize) -> Self {
        if len <= N {
            Small::Stack([v; N], len)
        } else {
            Small::Heap(vec![v; len])
        }
    }
    /// A copy of `xs` (`fill` the unused rest of the stack array).
    pub(crate) fn from_slice(xs: &[T], fill: T) -> Self {
        if xs.len() <= N {
            let mut a = [fill; N];
            a[..xs.len()].copy_from_slice(xs);
            Small::Stack(a, xs.len())
        } else {
            Small::Heap(xs.to_vec())
        }
    }
}

impl<T: Copy, const N: usize> std::ops::Deref for Small<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Small::Stack(a, n) => &a[..*n],
            Small::Heap(v) => v,
        }
    }
}

impl<T: Copy, const N: usize> std::ops::DerefMut for Small<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Small::Stack(a, n) => &mut a[..*n],
            Small::Heap(v) => v,
        }
    }
}

/// Fibonacci hashing of one `usize` (Knuth, TAOCP vol. 3, §6.4). The
/// product's high half is well mixed, its low bits are not for aligned
/// pointers (their trailing zeros stay): the halves are swapped, since the
/// table takes its bucket from the low bits.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0.rotate_left(32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(super) struct State {
    send: SendSide,
    gate: RecvGate,
    /// The request table: the life cycle of each tracked request
    /// (`loggp_core::lifecycle`, which also keeps the sends that share one
    /// request handle: MPI hands out one handle more than once at a time
    /// for requests it completed at creation, Open MPI's
    /// `ompi_request_empty`, MPICH's lightweight request) and the shim's
    /// `Pending` data.
    reqs: lifecycle::Table<usize, Pending, BuildHasherDefault<HandleHasher>, SlotRef>,
    /// Staging slots of the light lane's requests (`slots`).
    slots: Slots,
    /// Probed messages in the order they were taken off the network, kept
    /// unboxed (a receive that takes one allocates nothing for it).
    stash: Stash<Stashed>,
    /// Probed messages handed to the application as MPI_Message handles,
    /// boxed: on Open MPI a handle is its box's address.
    messages: HandleMap<Box<Stashed>>,
    #[cfg_attr(ompi, allow(dead_code))]
    next_message: usize,
    /// Buffered sends in flight (our own buffering; see `bsend`).
    bsends: Vec<(Request, Vec<u8>)>,
    /// Staged receives the application freed while active
    /// (MPI_Request_free): the shim keeps their requests and places the
    /// data when they complete (`reap_freed`).
    freed: Vec<(Request, Wire)>,
    /// Staging buffers of completed nonblocking messages, for the next
    /// ones (`Engine::stage_buf`): a malloc and a free less per message.
    pool: Vec<Vec<u8>>,
    /// Headers of struct datatypes with a contiguous buffer, and their
    /// datatypes, kept for the next message with that buffer
    /// (`Engine::kept_struct`).
    kept: Kept<Datatype>,
    /// Nonblocking receives that may get a header alone, whose payload's
    /// receive is not posted yet (`Engine::watch_split`); its length is
    /// `jobs::WATCHED`.
    watch: Vec<Request>,
    /// Targeting and split sends: the MPI_COMM_WORLD rank of each rank of a
    /// communicator (of its remote group for an intercommunicator), learned
    /// at its first send while a sender-side knob is targeted or a large
    /// send goes split (`split_to`); forgotten when the
    /// communicator is freed (`Engine::forget_comm`).
    world_of: HandleMap<Vec<u32>>,
    /// Variation (`loggp_core::dist`): this rank's streams of draws for L
    /// (sender), o_s (sender) and o_r (receiver), and the latest arrival
    /// per channel (non-overtaking of varied L).
    rng_l: loggp_core::dist::Rng,
    rng_o_s: loggp_core::dist::Rng,
    rng_o_r: loggp_core::dist::Rng,
    channels: loggp_core::dist::Channels,
    /// Counters for the report, kept under the lock the hot path already
    /// takes (no extra atomics per message).
    sends: u64,
    recvs: u64,
    bytes_sent: u64,
    bytes_recv: u64,
    /// Time the gate held deliveries for virtual arrival / g_r, ns, and
    /// how many it held (at zero knobs: none).
    gate_wait_ns: u64,
    gate_holds: u64,
    /// Deliveries whose message the blocking wait that completed it found
    /// absent (`Seen::CameAt`: L counts from when it came), for the debug
    /// line.
    came_during_wait: u64,
    /// This process's count of messages sent (`Header::seq`), counted
    /// under the lock each departure takes anyway: an atomic addition
    /// (a locked instruction) per message cost more.
    seq: u32,
    /// This process's count of messages taken off the network into the
    /// stash (`Stashed::seq` in a job of tiny headers, where `pull` takes
    /// each source's messages in the order they were sent).
    pulled: u32,
    /// Payload tags of persistent split sends (`PTags`).
    ptags: PTags,
}

// SAFETY: request handles are plain values MPI lets any thread use; the
// state is only touched under its lock.
unsafe impl Send for State {}

impl State {
    /// The `Header::seq` of the next message sent.
    fn next_seq(&mut self) -> u32 {
        let s = self.seq;
        self.seq = s.wrapping_add(1);
        s
    }

    /// A request's staging buffer back to its pool or free list.
    fn put_back_stage(&mut self, s: Stage) {
        match s {
            Stage::Heap(v) => self.put_back(v),
            Stage::Slot(s) => self.slots.give(s),
            // The persistent receive's, kept by its request.
            Stage::Fixed { .. } => {}
        }
    }

    /// A staging buffer back to the pool (small ones, and not too many).
    fn put_back(&mut self, v: Vec<u8>) {
        const MOST: usize = 256;
        if v.capacity() <= POOLED_MAX && self.pool.len() < MOST {
            self.pool.push(v);
        }
    }

    /// Enters a nonblocking send under its request handle, at its
    /// departure `t` (`lifecycle::Table::track_send`). An earlier send that
    /// held the handle is complete: its staging buffer goes back to the
    /// pool.
    fn track_send(&mut self, k: usize, p: Pending, complete_at: u64, t: u64) {
        if let Some(p) = self.reqs.track_send(k, complete_at, p, t) {
            self.sent(p);
        }
    }

    /// Enters a staged nonblocking send (its slot `s`) in the light lane,
    /// as `track_send` does a general one.
    #[inline(always)]
    fn track_light_send(&mut self, k: usize, s: SlotRef, t: u64) {
        match self.reqs.track_light(k, s, t) {
            Some(lifecycle::Back::Light(s)) => self.slots.give(s),
            Some(lifecycle::Back::Full(p)) => self.sent(p),
            None => {}
        }
    }

    /// A send that MPI completed at creation, done with.
    fn sent(&mut self, p: Pending) {
        match p {
            // A split send's payload that MPI completed at creation: its
            // header's request may still be reading the buffer.
            Pending::Send {
                _keep: Some(Stage::Heap(v)),
                header: Some(h),
                ..
            } => self.bsends.push((h, v)),
            Pending::Send { _keep: Some(v), .. } => self.put_back_stage(v),
            _ => {}
        }
    }
}

/// The engine's state behind a lock that costs nothing unless threads may
/// call MPI at the same time. Below MPI_THREAD_MULTIPLE the application
/// guarantees that its MPI calls never overlap (MPI-4.0 §11.6.2: SINGLE,
/// FUNNELED, SERIALIZED) and orders them itself, and the shim touches its
/// state only inside MPI calls on the calling thread, so no two threads
/// can hold the state at once; under MPI_THREAD_MULTIPLE it is a mutex.
/// The mutex's lock and unlock cost ~13 ns, two of them per message.
/// Which of the two: `clock::one_thread` (a mutex until MPI_Init has told
/// the thread level, the safe choice).
struct StateLock {
    mutex: Mutex<()>,
    cell: UnsafeCell<State>,
}

// SAFETY: access to `cell` is serialised by `mutex` under
// MPI_THREAD_MULTIPLE and by the application's MPI thread level otherwise.
unsafe impl Sync for StateLock {}

/// Access to the state; the mutex's guard, if any, is held as long.
struct StateGuard<'a> {
    _held: Option<MutexGuard<'a, ()>>,
    state: &'a mut State,
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.state
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.state
    }
}

/// Counters for the report (rare events; per-message counts live in
/// `State`).
#[derive(Default)]
pub struct Counters {
    /// Time spent waiting for departure (queue full, blocking completion), ns.
    pub send_wait_ns: AtomicU64,
    pub probed: AtomicU64,
    /// Sends above `LOGGP_INLINE_MAX` that went split (`MAGIC_SPLIT`),
    /// persistent ones' Starts included.
    pub split: AtomicU64,
}

pub struct Engine {
    pub cfg: Config,
    pub c: Consts,
    pub rank: c_int,
    pub size: c_int,
    pub transit: Transit,
    state: StateLock,
    stash_len: AtomicUsize,
    /// `Stash::tag_bits` of `State::stash` (a superset of its tags), set
    /// under the lock as a message joins it: a receive for a tag without
    /// its bit here skips the stash, unlocked.
    stash_tags: AtomicU64,
    /// Length of `State::freed`: its whole cost while it is empty.
    freed_len: AtomicUsize,
    pub counters: Counters,
    /// The largest message of the light lane (`slots`, `slot_max`).
    slot_max: usize,
    /// Receives of one contiguous block with at least this capacity (up
    /// to `LOGGP_INLINE_MAX`) land in the application's buffer through a
    /// struct datatype instead of a staging copy, and sends of at least
    /// this many bytes go from it so (`Engine::stages`;
    /// `LOGGP_DIRECT_MIN`, or the MPI's default).
    direct_min: usize,
    /// Spin per send and per delivery: o_s and o_r less the shim's own cost
    /// in those calls, learned at start-up (`init::measure_native`).
    o_s_spin: u64,
    o_r_spin: u64,
    /// `RecvGate::uses_seen` of this configuration.
    uses_seen: bool,
    /// Ranks on several hosts: deliveries feed the drift correction.
    hosts: bool,
    /// Every header carries its lag (`Header::compact`): across hosts (the
    /// gate learns the clocks' drift from it) and where `g_s` or `G` may
    /// put a departure after its hand-off to MPI (the gate's per-source
    /// floors run from the hand-off, `RecvGate::reserve_for`).
    keep_lag: bool,
    /// The gate decides nothing: no L, G, g_r or o_r for any pair, nothing
    /// varied, one host. Every delivery is then due when it is asked for,
    /// and the gate reads no clock (`Engine::gate`).
    idle_gate: bool,
    /// The sender decides nothing either: no o_s, g_s, G or L for any pair,
    /// nothing varied, one host. A departure is then `now` and nobody reads
    /// it (the receivers' gates are idle), so `depart` reads no clock.
    idle_send: bool,
    /// Every rank's sender and gate idle (`idle_send` and `idle_gate`
    /// from the configuration every rank agrees on, one host): an idle
    /// sender's messages of up to `TINY_MAX` bytes go behind the tiny
    /// header (`wire::TINY`), which no receiver needs more of.
    tiny: bool,
    /// This rank's compact headers carry its MPI_COMM_WORLD rank
    /// (`Header::compact`), and their first word without the sequence
    /// number (`wire::compact_head`).
    compact_src: bool,
    compact_head: u64,
    /// The sender only stamps its departures (`Config::sender_stamps_only`;
    /// not `idle_send`): `Engine::depart_stamp`.
    stamp_send: bool,
    /// `stamp_send` on one host, with compact headers
    /// (`compact_src`): a small message's header is written from the
    /// rank, the sequence number and the stamp (`Engine::slot_stamped`).
    stamp_compact: bool,
    /// The gate holds by L and G alone (some pair's), nothing else on the
    /// receiver's side (no g_r, no o_r, nothing drawn): with every pair
    /// alike and one host (`Engine::gate_is_plain`) a delivery is reserved
    /// and made in one borrow of the state (`deliver_plain`), and a
    /// Waitall's light requests in one pass (`waitall_timed`).
    plain_gate: bool,
    /// The shim's own cost per send and per receive (`set_own_costs`).
    own_send_ns: u64,
    own_recv_ns: u64,
    /// Targeting (`loggp_core::target`): the knobs of each pair this rank
    /// is part of, by the other rank's MPI_COMM_WORLD rank: `to[d]` for
    /// its messages to `d` (o_s, g_s, G), `from[s]` for those from `s`
    /// (L, G, g_r, o_r). Empty when no knob is targeted.
    to: Vec<Knobs>,
    from: Vec<Knobs>,
    /// Some sender-side knob (o_s, g_s, G) depends on the destination.
    send_targeted: bool,
    /// A private duplicate of MPI_COMM_SELF: a stashed message is placed
    /// into a derived receive type by sending it to ourselves on it
    /// (`place_stashed`). Set at MPI_Init.
    pub self_comm: abi::SharedHandle,
    /// The shim's private duplicate of MPI_COMM_WORLD (start-up and report
    /// traffic only), probed to drive the library's progress engine while
    /// the shim passes emulated time (`pass_time`). Set at MPI_Init.
    pub progress_comm: abi::SharedHandle,
    /// The shim's private duplicate of MPI_COMM_WORLD that carries the
    /// payloads of split messages (`Header::payload_tag`); returns its
    /// errors (a truncation is raised on the application's communicator).
    /// Null when sends are not split. Set at MPI_Init.
    pub payload_comm: abi::SharedHandle,
    /// Tags of payloads: 1 ..= this (its MPI_TAG_UB).
    pub payload_tags: u32,
    /// MPI_TAG_UB (of MPI_COMM_WORLD, as of every communicator). Set at
    /// MPI_Init.
    pub tag_ub: u32,
}

/// The MPI_COMM_WORLD rank of each rank of `comm` (of its remote group for
/// an intercommunicator); `u32::MAX` where MPI says MPI_UNDEFINED.
unsafe fn world_ranks(c: &Consts, comm: Comm) -> Vec<u32> {
    unsafe {
        let mut inter: c_int = 0;
        PMPI_Comm_test_inter(comm, &mut inter);
        let mut g = c.comm_null;
        let rc = if inter != 0 {
            PMPI_Comm_remote_group(comm, &mut g)
        } else {
            PMPI_Comm_group(comm, &mut g)
        };
        let mut wg = c.comm_null;
        if !ok(rc) || !ok(PMPI_Comm_group(c.comm_world, &mut wg)) {
            return Vec::new();
        }
        let mut n: c_int = 0;
        if inter != 0 {
            PMPI_Comm_remote_size(comm, &mut n);
        } else {
            PMPI_Comm_size(comm, &mut n);
        }
        let ranks: Vec<c_int> = (0..n).collect();
        let mut out: Vec<c_int> = vec![-1; ranks.len()];
        PMPI_Group_translate_ranks(g, n, ranks.as_ptr(), wg, out.as_mut_ptr());
        PMPI_Group_free(&mut g);
        PMPI_Group_free(&mut wg);
        out.into_iter()
            .map(|w| u32::try_from(w).unwrap_or(u32::MAX))
            .collect()
    }
}

/// How often the native library's progress engine is driven while the
/// shim passes emulated time (`Engine::pass_time`).
const PROGRESS_EVERY_NS: u64 = 1_000;

/// The largest buffer the staging pool keeps (`State::put_back`).
const POOLED_MAX: usize = 64 << 10;

/// `WAITED`: the message was there when the receiver asked (or nothing
/// is known).
pub(super) const NOT_WAITED: u64 = 0;
/// `WAITED`: the receiver waited for it, and it came just now.
pub(super) const CAME_NOW: u64 = u64::MAX;

thread_local! {
    /// What this thread saw of the message it is about to deliver: it
    /// was there when the blocking native call (Recv, Wait, Waitall) that
    /// completed it began (`NOT_WAITED`), or it was not, a look into MPI
    /// just before found nothing, and it came when the call ended: at
    /// that time, or `CAME_NOW`. The gate then counts the added L from
    /// then (`loggp_core::Seen`). Set only when that can matter
    /// (`RecvGate::uses_seen`).
    static WAITED: std::cell::Cell<u64> = const { std::cell::Cell::new(NOT_WAITED) };
}

/// `WAITED` while one thread calls MPI at a time (`clock::OneThread`).
static WAITED_ONE: crate::clock::OneThread<u64> = crate::clock::OneThread::new(NOT_WAITED);

/// The delivery that follows comes from a blocking wait: `NOT_WAITED`,
/// `CAME_NOW`, or the time the message came.
pub(super) fn set_waited(w: u64) {
    if crate::clock::one_thread() {
        // SAFETY: one thread calls MPI at a time and this is inside one.
        unsafe { *WAITED_ONE.get() = w };
    } else {
        set_waited_tls(w);
    }
}

// The thread-local accesses stay out of line: inlined, the compiler
// computes the variable's address (a `__tls_get_addr` call) before the
// test of `one_thread`, on both paths.
#[inline(never)]
fn set_waited_tls(w: u64) {
    WAITED.with(|c| c.set(w));
}

#[inline(never)]
fn waited_tls() -> u64 {
    WAITED.with(|c| c.get())
}

/// What `set_waited` said last on this thread.
#[inline]
pub(super) fn waited() -> u64 {
    if crate::clock::one_thread() {
        // SAFETY: as in `set_waited`.
        unsafe { *WAITED_ONE.get() }
    } else {
        waited_tls()
    }
}

static ENGINE: OnceLock<Engine> = OnceLock::new();
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// True when virtual time is on (after MPI_Init). One relaxed load: this is
/// the whole cost of the shim in pass-through mode.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// The engine; only called when `active()`.
#[inline]
pub fn get() -> &'static Engine {
    ENGINE.get().expect("engine used before MPI_Init")
}

pub fn get_opt() -> Option<&'static Engine> {
    ENGINE.get()
}

/// Installs the engine (once, at MPI_Init) and switches virtual time on if
/// the configuration asks for it.
pub fn install(e: Engine) {
    let on = e.cfg.vt_active();
    if ENGINE.set(e).is_ok() && on {
        ACTIVE.store(true, Ordering::Release);
    }
}

/// Switches virtual time off (at MPI_Finalize).
pub fn deactivate() {
    ACTIVE.store(false, Ordering::Release);
}

/// Whether MPI is sure to refuse a buffer of `count` elements of `dt`:
/// a negative count (MPI_ERR_COUNT) or MPI_DATATYPE_NULL (MPI_ERR_TYPE).
/// The entry points hand such a call to MPI unchanged, so that it fails
/// as it would natively and posts nothing: through the engine it would
/// travel as a header alone, and a Sendrecv's receive half would wait for
/// a message that never comes. Only while virtual time is on. A derived
/// datatype MPI refuses (uncommitted) is `Engine::refuses_derived`'s,
/// off the light lane (the calls of the light lane take predefined
/// types), or `refuses`' for the entry points that have no light lane.
#[inline(always)]
pub fn refuses_plain(count: i64, dt: Datatype) -> bool {
    count < 0 || dt == get().c.datatype_null
}

/// `refuses_plain`, and a derived datatype MPI refuses to send from `buf`
/// (`Engine::refuses_derived`).
#[inline(always)]
pub unsafe fn refuses(buf: *const c_void, count: i64, dt: Datatype) -> bool {
    // SAFETY: `dt` is the application's datatype of this call.
    refuses_plain(count, dt) || unsafe { get().refuses_derived(buf, count, dt, false) }
}

/// `refuses` for a receive into `buf`.
#[inline(always)]
pub unsafe fn refuses_recv(buf: *mut c_void, count: i64, dt: Datatype) -> bool {
    // SAFETY: as for `refuses`.
    refuses_plain(count, dt) || unsafe { get().refuses_derived(buf, count, dt, true) }
}

pub(super) fn status_ignore() -> *mut Status {
    std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE)
}

pub(super) fn ok(rc: c_int) -> bool {
    rc == abi::SUCCESS
}

/// What each datatype handle is, asked of MPI once per handle: a
/// predefined type's size and layout never change, and a handle that named
/// a derived type once never names a predefined one (those are never freed,
/// so their handles are never reused). Three type queries per message side
/// cost 5 ns (Open MPI) to 10 ns (MPICH) here (`bench/side_calls.c`).
static TYPES: OnceMap<256> = OnceMap::new();
/// Set for a predefined type; its size is in the low 32 bits.
const NAMED: u64 = 1 << 63;
/// Set for a predefined type that is one block of `size` bytes at offset 0.
const CONTIG: u64 = 1 << 62;

/// `TYPES`' word for `dt` (0 for a derived type), asking MPI on a miss.
/// Inline: the hit is a few instructions, and every message asks.
#[inline]
pub(super) unsafe fn type_facts(dt: Datatype) -> u64 {
    let k = abi::key(dt) as u64;
    match TYPES.get(k) {
        Some(v) => v,
        // SAFETY: as the caller's: `dt` is the application's datatype.
        None => unsafe { type_facts_asked(dt, k) },
    }
}

/// The bytes of `count` elements of a predefined contiguous type `dt`
/// when they are at most `max`: a message of the light lane. `None` for
/// any other (derived types included, which `contiguous_bytes` asks MPI
/// about).
#[inline(always)]
pub(super) unsafe fn small_contiguous(dt: Datatype, count: c_int, max: usize) -> Option<usize> {
    // SAFETY: as the caller's.
    let v = unsafe { type_facts(dt) };
    if v & (NAMED | CONTIG) != NAMED | CONTIG {
        return None;
    }
    let n = (v & 0xffff_ffff).checked_mul(u64::try_from(count).ok()?)?;
    usize::try_from(n).ok().filter(|&n| n <= max)
}

/// `type_facts` on a miss: asks MPI, remembers the answer under `k`.
#[cold]
#[inline(never)]
unsafe fn type_facts_asked(dt: Datatype, k: u64) -> u64 {
    unsafe {
        let (mut ni, mut na, mut nd, mut combiner) = (0, 0, 0, 0);
        if !ok(PMPI_Type_get_envelope(
            dt,
            &mut ni,
            &mut na,
            &mut nd,
            &mut combiner,
        )) {
            return 0;
        }
        let v = if combiner == abi::COMBINER_NAMED {
            let mut s: c_int = 0;
            PMPI_Type_size(dt, &mut s);
            let size = u64::try_from(s).unwrap_or(0);
            let contig = wire::contiguous_bytes_asked(dt, 1, size).is_some();
            NAMED | if contig { CONTIG } else { 0 } | (size & 0xffff_ffff)
        } else {
            0
        };
        TYPES.insert(k, v);
        v
    }
}

/// The size of `dt` when it is a predefined datatype of one block of that
/// many bytes at offset 0 (its extent and true extent are its size, both
/// lower bounds 0), from `TYPES`; `None` for any other type, whose
/// geometry the caller asks MPI for.
#[inline]
pub(crate) unsafe fn named_contiguous_size(dt: Datatype) -> Option<usize> {
    // SAFETY: as the caller's: `dt` is the application's datatype.
    let v = unsafe { type_facts(dt) };
    (v & NAMED != 0 && v & CONTIG != 0).then_some((v & 0xffff_ffff) as usize)
}

#[inline]
pub(super) unsafe fn type_size(dt: Datatype) -> u64 {
    unsafe {
        let v = type_facts(dt);
        if v & NAMED != 0 {
            return v & 0xffff_ffff;
        }
        // The _x form: a derived type may exceed 2^31-1 bytes (`mpi4`'s
        // large counts).
        let mut s: abi::Count = 0;
        PMPI_Type_size_x(dt, &mut s);
        u64::try_from(s).unwrap_or(0)
    }
}

/// True when `rc` is an error of class MPI_ERR_TRUNCATE (MPICH returns
/// codes that carry the class in their low bits).
pub(super) unsafe fn is_truncation(rc: c_int) -> bool {
    unsafe {
        if rc == abi::SUCCESS {
            return false;
        }
        let mut class: c_int = rc;
        PMPI_Error_class(rc, &mut class);
        class == abi::ERR_TRUNCATE
    }
}

pub(super) fn as_int(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Whether MPI_Cancel has been called (by the application, or by the shim
/// withdrawing a receive of its own): until it has, no
/// receive can have been cancelled, and completion need not ask.
static CANCELS: AtomicBool = AtomicBool::new(false);

pub fn note_cancel() {
    CANCELS.store(true, Ordering::Relaxed);
}

pub(super) fn cancels_seen() -> bool {
    CANCELS.load(Ordering::Relaxed)
}

impl Engine {
    /// Whether `dt` is a derived datatype MPI refuses for `count`
    /// elements at `buf` (sent, or received when `recv`; `derived_refused`).
    /// An uncommitted one would reach calls that do not check it (Open MPI
    /// 4.1's MPI_Pack_size crashed on one), or have a message taken for it
    /// and then not unpacked (lost). The caller hands the call to MPI.
    #[inline]
    pub unsafe fn refuses_derived(
        &self,
        buf: *const c_void,
        count: i64,
        dt: Datatype,
        recv: bool,
    ) -> bool {
        // SAFETY: `dt` is the application's datatype of this call.
        unsafe { type_facts(dt) & NAMED == 0 && self.derived_refused(buf, count, dt, recv) }
    }

    /// Whether MPI refuses `count` elements of the derived datatype `dt`
    /// at `buf` (sent, or received when `recv`), asked of MPI by the same
    /// call to MPI_PROC_NULL on the shim's communicator that returns
    /// errors: MPI checks the datatype (committed) and buffer as for any
    /// destination, and moves nothing. One element for any positive count
    /// (MPICH checks no datatype at count 0, and so neither does this).
    /// ~6 ns natively on either MPI here (Open MPI 4.1, MPICH 4.0).
    #[inline(never)]
    unsafe fn derived_refused(
        &self,
        buf: *const c_void,
        count: i64,
        dt: Datatype,
        recv: bool,
    ) -> bool {
        let comm = self.payload_comm.0;
        if comm == self.c.comm_null {
            return false;
        }
        let n = c_int::from(count > 0);
        // SAFETY: MPI_PROC_NULL: nothing is read from or written to `buf`.
        let rc = unsafe {
            if recv {
                PMPI_Recv(
                    buf.cast_mut(),
                    n,
                    dt,
                    abi::PROC_NULL,
                    0,
                    comm,
                    status_ignore(),
                )
            } else {
                PMPI_Send(buf, n, dt, abi::PROC_NULL, 0, comm)
            }
        };
        !ok(rc)
    }
}

/// Bytes a completed receive's status reports, at any size: MPI_Get_count
/// says MPI_UNDEFINED above 2^31 - 1 (MPI-4.0 §3.2.5), the _x form does not.
#[inline(always)]
pub(super) unsafe fn status_bytes(st: &Status, byte: Datatype) -> usize {
    unsafe {
        if let Some(c) = abi::count_at() {
            return usize::try_from(st.count_at_place(c)).unwrap_or(0);
        }
        let mut n: abi::Count = 0;
        PMPI_Get_elements_x(st, byte, &mut n);
        usize::try_from(n).unwrap_or(0)
    }
}

/// Sets the count of bytes a status reports (MPI_Status_set_elements_x
/// with MPI_BYTE), in place where start-up learned how.
#[inline(always)]
pub(super) unsafe fn set_status_bytes(st: &mut Status, byte: Datatype, n: u64) {
    unsafe {
        if let Some(c) = abi::count_at() {
            st.set_count_at_place(c, n);
            return;
        }
        PMPI_Status_set_elements_x(st, byte, n as abi::Count);
    }
}

/// Learns where MPI keeps a status's count of bytes (`abi::CountAt`): the
/// place MPI_Status_set_elements_x writes a large value, then checked both
/// ways against MPI (its writes read in place, our writes read by
/// MPI_Get_elements_x) for counts from 0 to above 2^40, with the cancelled
/// flag set and clear. No place that passes every check: the calls stay.
pub unsafe fn learn_status_count(byte: Datatype) {
    unsafe {
        const PROBE: u64 = 0x1_2345_6789;
        const VALUES: [u64; 7] = [0, 1, 40, 0x7fff_ffff, 0xffff_ffff, PROBE, (1 << 41) + 3];
        let mut st = Status::zeroed();
        if PMPI_Status_set_elements_x(&mut st, byte, PROBE as abi::Count) != abi::SUCCESS {
            return;
        }
        let size = std::mem::size_of::<Status>();
        let mut candidates = Vec::new();
        for o in (0..size.saturating_sub(7)).step_by(4) {
            candidates.push(abi::CountAt::Wide(o));
        }
        for lo in (0..size.saturating_sub(3)).step_by(4) {
            for hi in (0..size.saturating_sub(3)).step_by(4) {
                candidates.push(abi::CountAt::Split(lo, hi));
            }
        }
        let agrees = |c: abi::CountAt| -> bool {
            for cancelled in [0, 1] {
                for v in VALUES {
                    // MPI writes, we read.
                    let mut a = Status::zeroed();
                    PMPI_Status_set_cancelled(&mut a, cancelled);
                    PMPI_Status_set_elements_x(&mut a, byte, v as abi::Count);
                    if a.count_in(c) != Some(v) {
                        return false;
                    }
                    // We write, MPI reads; the flag stays.
                    let mut b = Status::zeroed();
                    PMPI_Status_set_cancelled(&mut b, cancelled);
                    if !b.set_count_in(c, v) {
                        return false;
                    }
                    let mut n: abi::Count = -1;
                    let mut f: c_int = -1;
                    PMPI_Get_elements_x(&b, byte, &mut n);
                    PMPI_Test_cancelled(&b, &mut f);
                    if n != v as abi::Count || f != cancelled {
                        return false;
                    }
                }
            }
            true
        };
        if let Some(c) = candidates
            .into_iter()
            .filter(|&c| st.count_in(c) == Some(PROBE))
            .find(|&c| agrees(c))
        {
            abi::set_count_at(c);
        }
    }
}

impl Engine {
    pub fn new(cfg: Config, c: Consts, rank: c_int, size: c_int, transit: Transit) -> Engine {
        let direct_min = usize::try_from(
            cfg.direct_min
                .unwrap_or(loggp_core::config::direct_min_default(cfg!(ompi))),
        )
        .unwrap_or(usize::MAX);
        let idle_gate =
            !(cfg.any_l() || cfg.any_g_big() || cfg.any_g_r() || cfg.any_o_r() || cfg.varied());
        let idle_send =
            !(cfg.any_l() || cfg.any_g_big() || cfg.any_g_s() || cfg.any_o_s() || cfg.varied());
        Engine {
            state: StateLock {
                mutex: Mutex::new(()),
                cell: UnsafeCell::new(State {
                    send: SendSide::new(&cfg),
                    gate: RecvGate::new(&cfg, transit),
                    reqs: lifecycle::Table::default(),
                    stash: Stash::default(),
                    messages: HandleMap::default(),
                    next_message: 1,
                    bsends: Vec::new(),
                    freed: Vec::new(),
                    pool: Vec::new(),
                    kept: Kept::new(),
                    slots: Slots::default(),
                    watch: Vec::new(),
                    world_of: HandleMap::default(),
                    rng_l: loggp_core::dist::Rng::new(
                        cfg.seed,
                        u32::try_from(rank).unwrap_or(0),
                        1,
                    ),
                    rng_o_s: loggp_core::dist::Rng::new(
                        cfg.seed,
                        u32::try_from(rank).unwrap_or(0),
                        2,
                    ),
                    rng_o_r: loggp_core::dist::Rng::new(
                        cfg.seed,
                        u32::try_from(rank).unwrap_or(0),
                        3,
                    ),
                    channels: loggp_core::dist::Channels::default(),
                    sends: 0,
                    recvs: 0,
                    bytes_sent: 0,
                    bytes_recv: 0,
                    gate_wait_ns: 0,
                    gate_holds: 0,
                    came_during_wait: 0,
                    ptags: PTags::default(),
                    seq: 0,
                    pulled: 0,
                }),
            },
            stash_len: AtomicUsize::new(0),
            stash_tags: AtomicU64::new(0),
            freed_len: AtomicUsize::new(0),
            slot_max: slot_max(cfg.inline_max, direct_min),
            direct_min,
            o_s_spin: cfg.o_s,
            o_r_spin: cfg.o_r,
            uses_seen: RecvGate::new(&cfg, transit).uses_seen(),
            hosts: false,
            keep_lag: cfg.any_g_s() || cfg.any_g_big(),
            idle_gate,
            idle_send,
            tiny: idle_gate && idle_send,
            stamp_send: cfg.sender_stamps_only(),
            plain_gate: (cfg.any_l() || cfg.any_g_big())
                && !(cfg.any_g_r() || cfg.any_o_r() || cfg.varied()),
            stamp_compact: cfg.sender_stamps_only()
                && u32::try_from(rank).is_ok_and(|r| r <= COMPACT_MASK),
            compact_src: u32::try_from(rank).is_ok_and(|r| r <= COMPACT_MASK),
            compact_head: compact_head(u32::try_from(rank).unwrap_or(0)),
            own_send_ns: 0,
            own_recv_ns: 0,
            to: Vec::new(),
            from: Vec::new(),
            send_targeted: false,
            self_comm: abi::SharedHandle(c.comm_null),
            progress_comm: abi::SharedHandle(c.comm_null),
            payload_comm: abi::SharedHandle(c.comm_null),
            payload_tags: 32767,
            tag_ub: 32767,
            cfg,
            c,
            rank,
            size,
            transit,
            counters: Counters::default(),
        }
    }

    /// Ranks on several hosts: the gate reads departures as stamps.
    pub fn set_hosts(&mut self, h: loggp_core::clocks::Hosts) {
        self.state.cell.get_mut().gate.set_hosts(h);
    }

    /// Ranks on several hosts: departures of other hosts are corrected for
    /// the drift of the clocks since start-up, learned from deliveries.
    pub fn set_drift(&mut self, d: loggp_core::clocks::DriftCorrection) {
        self.state.cell.get_mut().gate.set_drift(d);
        self.hosts = true;
        self.keep_lag = true;
        self.idle_gate = false;
        self.idle_send = false;
        self.tiny = false;
        self.stamp_compact = false;
    }

    /// Whether the sender's and the gate's idle lanes serve this rank
    /// (`idle_send`, `idle_gate`): every knob of that side at zero and
    /// not armed (`LOGGP_ARM`), one host. For the report.
    pub fn idle_lanes(&self) -> (bool, bool) {
        (self.idle_send, self.idle_gate)
    }

    /// Whether this rank sends small messages behind the tiny header
    /// (`tiny`). For the report.
    pub fn tiny_headers(&self) -> bool {
        self.tiny
    }

    /// The drift rate in use for departures of host `tag` (ppm · 1e-6).
    pub fn drift_rate(&self, tag: u64) -> f64 {
        self.lock().gate.drift_rate(tag)
    }

    /// Subtracts the shim's own per-call costs from the o_s and o_r spins.
    pub fn set_own_costs(&mut self, send_ns: u64, recv_ns: u64) {
        self.o_s_spin = self.cfg.o_s.saturating_sub(send_ns);
        self.o_r_spin = self.cfg.o_r.saturating_sub(recv_ns);
        self.own_send_ns = send_ns;
        self.own_recv_ns = recv_ns;
    }

    /// Targeting: the knobs of every pair this rank is part of, from the
    /// host index of every rank (`host_of`, by MPI_COMM_WORLD rank).
    pub fn set_pairs(&mut self, host_of: &[usize]) {
        if !self.cfg.targeted() {
            return;
        }
        let me = u32::try_from(self.rank).unwrap_or(0);
        let host = |r: usize| host_of.get(r).copied().unwrap_or(0);
        let mine = host(me as usize);
        let n = u32::try_from(self.size).unwrap_or(0);
        let pair = |src: u32, dst: u32, other: u32| Pair {
            src,
            dst,
            same_host: host(other as usize) == mine,
        };
        self.to = (0..n).map(|d| self.cfg.knobs(pair(me, d, d))).collect();
        self.from = (0..n).map(|s| self.cfg.knobs(pair(s, me, s))).collect();
        let t = &self.cfg.targets;
        // The sender needs the pair for o_s, g_s, G, and for L when it draws
        // L (a varied L is decided by the sender).
        self.send_targeted = !(t.o_s.is_empty()
            && t.g_s.is_empty()
            && t.g_big.is_empty()
            && (t.l.is_empty() || self.cfg.l_dist.is_fixed()));
    }

    /// The knobs of messages from `src` (MPI_COMM_WORLD rank, from the
    /// header) to this rank.
    pub(super) fn knobs_from(&self, src: u32) -> Knobs {
        self.from
            .get(src as usize)
            .copied()
            .unwrap_or_else(|| self.cfg.plain_knobs())
    }

    /// The receiver's knobs of a message (`src`, `l` from its header):
    /// `None` when every pair has the plain ones and L is fixed.
    pub(super) fn recv_knobs(&self, src: u32, l: u64) -> Option<Knobs> {
        let varied = !self.cfg.l_dist.is_fixed();
        if self.from.is_empty() && !varied {
            return None;
        }
        let mut k = self.knobs_from(src);
        if varied {
            k.l = l;
        }
        Some(k)
    }

    /// The o_r spin of a message whose pair has knobs `k` (a draw when
    /// `LOGGP_O_R_DIST` varies it).
    pub(super) fn o_r_spin_from(&self, k: &Knobs) -> u64 {
        let o_r = if self.cfg.o_r_dist.is_fixed() {
            k.o_r
        } else {
            let mut st = self.lock();
            self.cfg.o_r_dist.draw(k.o_r, &mut st.rng_o_r)
        };
        o_r.saturating_sub(self.own_recv_ns)
    }

    /// The MPI_COMM_WORLD rank of rank `r` of `comm` (of its remote group
    /// when `comm` is an intercommunicator); `None` for MPI_PROC_NULL and
    /// a process outside MPI_COMM_WORLD.
    pub(super) unsafe fn world_rank(&self, st: &mut State, comm: Comm, r: c_int) -> Option<u32> {
        unsafe {
            let r = usize::try_from(r).ok()?;
            if comm == self.c.comm_world {
                return u32::try_from(r).ok();
            }
            let w = *self.world_ranks_of(st, comm).get(r)?;
            (w < u32::try_from(self.size).unwrap_or(0)).then_some(w)
        }
    }

    /// The MPI_COMM_WORLD ranks of `comm`'s ranks (of its remote group
    /// for an intercommunicator), learned once and kept in `st.world_of`
    /// until `forget_comm`; empty where they cannot be learned.
    pub(super) unsafe fn world_ranks_of<'s>(&self, st: &'s mut State, comm: Comm) -> &'s [u32] {
        unsafe {
            st.world_of
                .entry(key(comm))
                .or_insert_with(|| world_ranks(&self.c, comm))
        }
    }

    /// Forgets what was learned of a communicator that is being freed (its
    /// handle may name another one next).
    pub fn forget_comm(&self, comm: Comm) {
        // Targeting, split sends (`split_to`) and a Sendrecv's check of
        // its send half (`send_half_fails`) learn world ranks.
        self.lock().world_of.remove(&key(comm));
    }

    /// Passes emulated time until `t`: CPU time (o_s, o_r: `busy`) or a
    /// wait (the gate, a send-queue slot, a send's completion). Either way
    /// the native library keeps moving what is already in flight, as a NIC
    /// would (DESIGN.md §1): about every microsecond a probe drives its
    /// progress engine. Without it the rendezvous of a message sent just
    /// before an o_s spin would wait for the spin to end. The probe is on
    /// the shim's private duplicate of MPI_COMM_WORLD, where no application
    /// message travels and nothing is received (MPICH does not progress the
    /// network for a probe on a communicator of one rank). Returns the
    /// time it ended (`pass_until`).
    pub(super) fn pass_time(&self, t: u64, busy: bool) -> u64 {
        let comm = self.progress_comm.0;
        if comm == self.c.comm_null {
            return pass_until(t, busy, u64::MAX / 4, || {});
        }
        pass_until(t, busy, PROGRESS_EVERY_NS, || {
            let mut flag: c_int = 0;
            // SAFETY: a probe on our own communicator; nothing is received.
            unsafe {
                PMPI_Iprobe(
                    abi::ANY_SOURCE,
                    abi::ANY_TAG,
                    comm,
                    &mut flag,
                    status_ignore(),
                );
            }
        })
    }

    /// Whether the probe stash may hold a match for a receive of `tag`
    /// (or a message that a wildcard tag must be settled against).
    #[inline(always)]
    fn stash_may_match(&self, tag: c_int) -> bool {
        self.stash_len.load(Ordering::Relaxed) > 0
            && (tag == abi::ANY_TAG
                || self.stash_tags.load(Ordering::Relaxed) & loggp_core::stash::tag_bit(tag) != 0)
    }

    /// No stashed message or freed receive that a new receive must be
    /// matched against first (Testall's light lane).
    #[inline(always)]
    fn nothing_to_match_first(&self) -> bool {
        self.stash_len.load(Ordering::Relaxed) | self.freed_len.load(Ordering::Relaxed) == 0
    }

    /// No freed receive to reap, nor a stashed message that a new receive
    /// of `tag` may match (`stash_may_match`): its light lane may be taken
    /// (Recv, Irecv, Sendrecv). A message a probe took off the network
    /// under another tag cannot match it, and MPI's order binds only
    /// messages that one receive could match.
    #[inline(always)]
    fn nothing_to_match_first_for(&self, tag: c_int) -> bool {
        self.freed_len.load(Ordering::Relaxed) == 0 && !self.stash_may_match(tag)
    }

    #[inline(always)]
    fn lock(&self) -> StateGuard<'_> {
        let held = if !crate::clock::one_thread() {
            // A poisoned lock cannot happen: panics abort.
            Some(self.state.mutex.lock().unwrap_or_else(|e| e.into_inner()))
        } else {
            None
        };
        // SAFETY: see `StateLock`: the mutex is held, or the thread level
        // guarantees that no other thread is inside the shim. No caller
        // takes the state twice (with a mutex that would deadlock).
        let state = unsafe { &mut *self.state.cell.get() };
        StateGuard { _held: held, state }
    }

    /// Tells the shim the thread level MPI provides: below
    /// MPI_THREAD_MULTIPLE the engine's state needs no mutex (`StateLock`)
    /// and per-thread values are kept once (`clock::OneThread`).
    /// Some rank runs under MPI_THREAD_MULTIPLE: no tiny headers (every
    /// rank is told alike). Their price there: a probe for a specific tag
    /// takes its source's older messages of other tags off the network
    /// (`pull`), and a receive for one of those that another thread had
    /// just found the stash without would wait in MPI for a later one.
    pub fn no_tiny(&mut self) {
        self.tiny = false;
    }

    pub fn set_thread_level(&self, provided: c_int) {
        crate::clock::set_one_thread(provided < abi::THREAD_MULTIPLE);
    }

    /// Messages and bytes sent and delivered so far:
    /// `[sends, recvs, bytes_sent, bytes_recv]`.
    pub fn totals(&self) -> [u64; 4] {
        let st = self.lock();
        [st.sends, st.recvs, st.bytes_sent, st.bytes_recv]
    }

    /// The gate's holds so far: `[ns held, deliveries held, deliveries
    /// whose message came during the wait for it]`.
    pub fn gate_held(&self) -> [u64; 3] {
        let st = self.lock();
        [st.gate_wait_ns, st.gate_holds, st.came_during_wait]
    }

    /// The smallest one-way time (sender's stamp to this gate) seen since
    /// the last call: start-up's measure of the native transit.
    pub fn take_min_one_way(&self) -> Option<u64> {
        self.lock().gate.take_min_one_way()
    }

    /// An empty buffer with room for `n` bytes, from the staging pool when
    /// it has one, for the temporary buffers of the shim's collectives
    /// (`coll::ctx::Tmp`: two per Allreduce step, each a calloc and a free
    /// otherwise). Not zeroed: its users write through its pointer (a
    /// receive or a copy) before they read, and zeroing cost a memset of
    /// the whole message per call (5 % of a 1 MiB Allreduce's time at two
    /// ranks under `perf`).
    pub(crate) fn scratch(&self, n: usize) -> Vec<u8> {
        if n > POOLED_MAX {
            // The pool holds none this large, and this one will not go
            // back to it: leave the pool's small buffers where they are.
            return Vec::with_capacity(n);
        }
        let mut v = self.stage_buf();
        v.clear();
        if v.capacity() < n {
            // A new one rather than `reserve`, which would copy the old.
            v = Vec::with_capacity(n);
        }
        v
    }

    /// Returns a `scratch` buffer to the pool.
    pub(crate) fn give_back(&self, v: Vec<u8>) {
        self.lock().put_back(v);
    }

    fn stage_buf(&self) -> Vec<u8> {
        self.lock().pool.pop().unwrap_or_default()
    }

    /// Returns the staging buffer of a completed request to the pool
    /// (small ones, and not too many).
    /// By reference: the entry is not moved (a copy of ~100 bytes).
    fn recycle(&self, e: &mut Taken) {
        let v = match e.data_mut() {
            Some(Pending::Send { _keep, .. }) => match _keep.take() {
                Some(v) => v,
                None => return,
            },
            Some(Pending::Recv(Wire::Staged { stage, .. })) => std::mem::take(stage),
            _ => return,
        };
        self.lock().put_back_stage(v);
    }

    /// Enters the request of a nonblocking collective (`coll::nb`).
    pub fn track_coll(&self, r: Request) {
        let k = key(r);
        self.lock().reqs.track(k, Kind::Coll, Pending::Coll { k });
    }
}
