//! The engine: turns intercepted MPI point-to-point calls into native calls
//! plus the virtual-time rules of `loggp_core::vt`.
//!
//! # Wire format (only while virtual time is on)
//! Every application message carries a 16-byte header *inside the same
//! message*, before the payload: `[magic u32][flags u32][d u64]`, where `d`
//! is the sender's virtual departure. Travelling in the same message makes
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
//!
//! Counts seen by the application exclude the header (statuses are rewritten
//! with `MPI_Status_set_elements_x`); truncation happens exactly where it
//! would natively, since the receive capacity is the user's plus 16.
//!
//! # Rooms
//! `wire` (header, encodings), `send`, `recv` (posting, the gate),
//! `probe` (the probe stash), `complete` (Wait/Test forms), `request` (the
//! request table, Request_free), `composite` (Sendrecv forms). The
//! decisions of *when* live in `loggp_core` (`vt`, `stash`).
#![allow(clippy::too_many_arguments)]

mod complete;
mod composite;
mod probe;
mod recv;
mod request;
mod send;
mod wire;

use probe::*;
pub use request::start_grequest;
use request::*;
pub use wire::HDR;
use wire::*;

use crate::abi::{self, key, Comm, Consts, Datatype, Message, Request, Status};
use crate::clock::{now, pass_until};
use crate::coll::nb;
use crate::log;
use crate::real::*;
use loggp_core::{Config, Envelope, Pattern, RecvGate, SendSide, Stash, Transit};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
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

pub(super) struct State {
    send: SendSide,
    gate: RecvGate,
    reqs: HashMap<usize, Pending>,
    /// Probed messages in the order they were taken off the network. Boxed:
    /// a message handed out by Improbe is named by its box's address.
    stash: Stash<Box<Stashed>>,
    /// Probed messages handed to the application as MPI_Message handles.
    messages: HashMap<usize, Box<Stashed>>,
    #[cfg_attr(ompi, allow(dead_code))]
    next_message: usize,
    /// Buffered sends in flight (our own buffering; see `bsend`).
    bsends: Vec<(Request, Vec<u8>)>,
    /// Staged receives the application freed while active
    /// (MPI_Request_free): the shim keeps their requests and places the
    /// data when they complete (`reap_freed`).
    freed: Vec<(Request, Wire)>,
    /// Counters for the report, kept under the lock the hot path already
    /// takes (no extra atomics per message).
    sends: u64,
    recvs: u64,
    bytes_sent: u64,
    bytes_recv: u64,
}

// SAFETY: request handles are plain values MPI lets any thread use; the
// state is only touched under its mutex.
unsafe impl Send for State {}

/// Counters for the report (rare events; per-message counts live in
/// `State`).
#[derive(Default)]
pub struct Counters {
    /// Time spent holding deliveries for virtual arrival / g_r, ns.
    pub gate_wait_ns: AtomicU64,
    /// Time spent waiting for departure (queue full, blocking completion), ns.
    pub send_wait_ns: AtomicU64,
    pub probed: AtomicU64,
}

pub struct Engine {
    pub cfg: Config,
    pub c: Consts,
    pub rank: c_int,
    pub size: c_int,
    pub transit: Transit,
    state: Mutex<State>,
    stash_len: AtomicUsize,
    /// Length of `State::freed`: its whole cost while it is empty.
    freed_len: AtomicUsize,
    pub counters: Counters,
    /// Spin per send and per delivery: o_s and o_r less the shim's own cost
    /// in those calls, learned at start-up (`init::measure_native`).
    o_s_spin: u64,
    o_r_spin: u64,
    /// A private duplicate of MPI_COMM_SELF: a stashed message is placed
    /// into a derived receive type by sending it to ourselves on it
    /// (`place_stashed`). Set at MPI_Init.
    pub self_comm: abi::SharedHandle,
    /// The shim's private duplicate of MPI_COMM_WORLD (start-up and report
    /// traffic only), probed to drive the library's progress engine while
    /// the shim passes emulated time (`pass_time`). Set at MPI_Init.
    pub progress_comm: abi::SharedHandle,
}

/// How often the native library's progress engine is driven while the
/// shim passes emulated time (`Engine::pass_time`).
const PROGRESS_EVERY_NS: u64 = 1_000;

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

pub(super) fn status_ignore() -> *mut Status {
    std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE)
}

pub(super) fn ok(rc: c_int) -> bool {
    rc == abi::SUCCESS
}

pub(super) unsafe fn type_size(dt: Datatype) -> u64 {
    let mut s: c_int = 0;
    PMPI_Type_size(dt, &mut s);
    u64::try_from(s).unwrap_or(0)
}

/// True when `rc` is an error of class MPI_ERR_TRUNCATE (MPICH returns
/// codes that carry the class in their low bits).
pub(super) unsafe fn is_truncation(rc: c_int) -> bool {
    if rc == abi::SUCCESS {
        return false;
    }
    let mut class: c_int = rc;
    PMPI_Error_class(rc, &mut class);
    class == abi::ERR_TRUNCATE
}

pub(super) fn as_int(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Bytes a completed receive's status reports, at any size: MPI_Get_count
/// says MPI_UNDEFINED above 2^31 - 1 (MPI-4.0 §3.2.5), the _x form does not.
pub(super) unsafe fn status_bytes(st: &Status, byte: Datatype) -> usize {
    let mut n: abi::Count = 0;
    PMPI_Get_elements_x(st, byte, &mut n);
    usize::try_from(n).unwrap_or(0)
}

impl Engine {
    pub fn new(cfg: Config, c: Consts, rank: c_int, size: c_int, transit: Transit) -> Engine {
        Engine {
            state: Mutex::new(State {
                send: SendSide::new(&cfg),
                gate: RecvGate::new(&cfg, transit),
                reqs: HashMap::new(),
                stash: Stash::default(),
                messages: HashMap::new(),
                next_message: 1,
                bsends: Vec::new(),
                freed: Vec::new(),
                sends: 0,
                recvs: 0,
                bytes_sent: 0,
                bytes_recv: 0,
            }),
            stash_len: AtomicUsize::new(0),
            freed_len: AtomicUsize::new(0),
            o_s_spin: cfg.o_s,
            o_r_spin: cfg.o_r,
            self_comm: abi::SharedHandle(c.comm_null),
            progress_comm: abi::SharedHandle(c.comm_null),
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
        self.state
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .gate
            .set_hosts(h);
    }

    /// Subtracts the shim's own per-call costs from the o_s and o_r spins.
    pub fn set_own_costs(&mut self, send_ns: u64, recv_ns: u64) {
        self.o_s_spin = self.cfg.o_s.saturating_sub(send_ns);
        self.o_r_spin = self.cfg.o_r.saturating_sub(recv_ns);
    }

    /// Passes emulated time until `t`: CPU time (o_s, o_r: `busy`) or a
    /// wait (the gate, a send-queue slot, a send's completion). Either way
    /// the native library keeps moving what is already in flight, as a NIC
    /// would (DESIGN.md §1): about every microsecond a probe drives its
    /// progress engine. Without it the rendezvous of a message sent just
    /// before an o_s spin would wait for the spin to end. The probe is on
    /// the shim's private duplicate of MPI_COMM_WORLD, where no application
    /// message travels and nothing is received (MPICH does not progress the
    /// network for a probe on a communicator of one rank).
    pub(super) fn pass_time(&self, t: u64, busy: bool) {
        let comm = self.progress_comm.0;
        if comm == self.c.comm_null {
            pass_until(t, busy, u64::MAX / 4, || {});
            return;
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
        });
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock cannot happen: panics abort.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Messages and bytes sent and delivered so far:
    /// `[sends, recvs, bytes_sent, bytes_recv]`.
    pub fn totals(&self) -> [u64; 4] {
        let st = self.lock();
        [st.sends, st.recvs, st.bytes_sent, st.bytes_recv]
    }

    /// Enters the request of a nonblocking collective (`coll::nb`).
    pub fn track_coll(&self, r: Request) {
        let k = key(r);
        self.lock().reqs.insert(k, Pending::Coll { k });
    }
}
