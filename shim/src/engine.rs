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
#![allow(clippy::too_many_arguments)]

use crate::abi::{self, key, Comm, Consts, Datatype, Message, Request, Status};
use crate::clock::{now, spin_for, wait_until};
use crate::coll::nb;
use crate::log;
use crate::real::*;
use loggp_core::{Config, Envelope, Pattern, RecvGate, SendSide, Stash, Transit};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const HDR: usize = 16;
const HDR_INT: c_int = 16;
const MAGIC: u32 = 0x4C47_5021; // "LGP!"

/// The piggyback.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    magic: u32,
    flags: u32,
    d: u64,
}

impl Header {
    fn new(d: u64) -> Header {
        Header {
            magic: MAGIC,
            flags: 0,
            d,
        }
    }
    fn write_to(&self, p: *mut u8) {
        // SAFETY: callers pass a buffer of at least HDR bytes.
        unsafe { p.cast::<Header>().write_unaligned(*self) }
    }
    fn read_from(p: *const u8) -> Header {
        // SAFETY: callers pass a buffer of at least HDR bytes.
        unsafe { p.cast::<Header>().read_unaligned() }
    }
}

/// Send modes (MPI-3.1 §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Standard,
    Buffered,
    Synchronous,
    Ready,
}

/// Where a receive's header (and, when staged, its payload) lands.
enum Wire {
    /// Header and payload land in `stage`; the payload is then copied to
    /// `buf`, at most `cap` bytes. Only receive types whose elements form
    /// one contiguous block are staged: the copy needs nothing of the
    /// datatype, which the application may free while the receive is
    /// pending (MPI-4.0 §5.1.9), and it keeps every byte that arrived,
    /// partial elements included.
    Staged {
        stage: Vec<u8>,
        buf: *mut u8,
        cap: usize,
        placed: bool,
    },
    /// Zero-copy: MPI itself places the payload with the user's datatype.
    Struct { hdr: Box<Header> },
}

impl Wire {
    fn header(&self) -> Header {
        match self {
            Wire::Staged { stage, .. } => Header::read_from(stage.as_ptr()),
            Wire::Struct { hdr } => **hdr,
        }
    }

    /// Copies a staged payload to the user's buffer, once. `got` is the
    /// message size MPI reports, header included; on truncation it can
    /// exceed what landed in the stage.
    ///
    /// # Safety
    /// `buf` must still be the user's receive buffer of `cap` bytes.
    unsafe fn place(&mut self, got: usize) {
        if let Wire::Staged {
            stage,
            buf,
            cap,
            placed,
        } = self
        {
            if !*placed {
                let n = stage.len().min(got).saturating_sub(HDR).min(*cap);
                if n > 0 {
                    std::ptr::copy_nonoverlapping(stage.as_ptr().add(HDR), *buf, n);
                }
                *placed = true;
            }
        }
    }
}

/// A message taken off the network early by a probe, waiting to be received
/// (the matching rules are `loggp_core::stash`'s).
pub struct Stashed {
    env: Envelope,
    comm_h: Comm,
    d: u64,
    /// Virtual arrival, from `d` (fixed once the message is here).
    arrival: u64,
    payload: Vec<u8>,
}

impl loggp_core::stash::Stashed for Box<Stashed> {
    fn envelope(&self) -> &Envelope {
        &self.env
    }
    fn arrival(&self) -> u64 {
        self.arrival
    }
}

/// What a receive or probe for `(src, tag)` on `comm` asks of the stash.
fn pattern(comm: Comm, src: c_int, tag: c_int) -> Pattern {
    Pattern {
        comm: key(comm),
        source: (src != abi::ANY_SOURCE).then_some(src),
        tag: (tag != abi::ANY_TAG).then_some(tag),
    }
}

/// Where a request stands, for the completion calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Poll {
    /// Not the shim's: MPI alone decides.
    Untracked,
    /// A persistent request of the shim's that was not started.
    Inactive,
    NotReady,
    /// Complete natively and in the emulated machine.
    Ready,
}

/// What a probe found: the status to report and, when taken, the message.
type Probed = (Status, Option<Box<Stashed>>);

/// Shim state attached to an MPI request.
enum Pending {
    /// Nonblocking send: keeps the staging buffer or header alive.
    Send {
        _keep: Option<Vec<u8>>,
        _hdr: Option<Box<Header>>,
        complete_at: u64,
    },
    Recv(Wire),
    /// A receive satisfied from the stash (Imrecv of a probed message, or an
    /// Irecv matching one); the MPI request is a generalized request. The
    /// payload was placed in the user's buffer when the receive was posted
    /// (`n` bytes; `truncated` when it did not fit), so completion needs
    /// nothing of the datatype.
    FromStash {
        msg: Box<Stashed>,
        n: usize,
        truncated: bool,
    },
    /// Persistent send: the header is rewritten by every Start.
    PSend {
        hdr: Box<Header>,
        bytes: u64,
        complete_at: u64,
        active: bool,
    },
    /// Persistent buffered send: Start runs a buffered send and starts a
    /// PROC_NULL persistent request that stands for it. `dt` is the shim's
    /// own duplicate of the application's datatype, which the application
    /// may free before the request; freed with the request.
    PBsend {
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        active: bool,
    },
    PRecv {
        hdr: Box<Header>,
        active: bool,
    },
    /// A nonblocking collective (`coll::nb`, job `k`); the MPI request is
    /// a PROC_NULL receive.
    Coll {
        k: usize,
    },
}

// SAFETY: raw pointers in Pending point to user buffers that MPI itself
// allows any thread to complete; access is serialised by the state mutex.
unsafe impl Send for Pending {}
unsafe impl Send for Stashed {}

impl Pending {
    fn persistent(&self) -> bool {
        matches!(
            self,
            Pending::PSend { .. } | Pending::PBsend { .. } | Pending::PRecv { .. }
        )
    }
    fn active(&self) -> bool {
        match self {
            Pending::PSend { active, .. }
            | Pending::PBsend { active, .. }
            | Pending::PRecv { active, .. } => *active,
            _ => true,
        }
    }
}

struct State {
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

/// Starts a generalized request (MPI-3.1 §12.2) that stands for work of the
/// shim's: a request handle of its own, unlike a PROC_NULL receive (Open MPI
/// hands out one shared object for all of those, so two in flight would be
/// one key in the request table). Its status is empty; the engine fills in
/// the real one.
pub unsafe fn start_grequest(req: *mut Request) -> c_int {
    PMPI_Grequest_start(
        grequest_query,
        grequest_free,
        grequest_cancel,
        std::ptr::null_mut(),
        req,
    )
}

unsafe extern "C" fn grequest_query(_: *mut c_void, st: *mut Status) -> c_int {
    if !abi::status_ignored(st) {
        if let Some(e) = get_opt() {
            PMPI_Status_set_elements_x(st, e.c.byte, 0);
        }
        PMPI_Status_set_cancelled(st, 0);
        (*st).set_source(abi::ANY_SOURCE);
        (*st).set_tag(abi::ANY_TAG);
        (*st).set_error(abi::SUCCESS);
    }
    abi::SUCCESS
}

unsafe extern "C" fn grequest_free(_: *mut c_void) -> c_int {
    abi::SUCCESS
}

/// Nothing to undo: cancelling a collective is erroneous (MPI-3.1 §5.12),
/// and a receive from the stash already has its message.
unsafe extern "C" fn grequest_cancel(_: *mut c_void, _: c_int) -> c_int {
    abi::SUCCESS
}

fn status_ignore() -> *mut Status {
    std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE)
}

fn ok(rc: c_int) -> bool {
    rc == abi::SUCCESS
}

unsafe fn type_size(dt: Datatype) -> u64 {
    let mut s: c_int = 0;
    PMPI_Type_size(dt, &mut s);
    u64::try_from(s).unwrap_or(0)
}

/// Bytes of `count` elements of `dt` when they are one contiguous block
/// starting at the buffer (a predefined type without holes, or any type
/// whose size equals its extent and true extent with both bounds at 0), so
/// that staging can be a memcpy instead of MPI_Pack.
/// `size` is `dt`'s size, which every caller already has.
unsafe fn contiguous_bytes(dt: Datatype, count: c_int, size: u64) -> Option<usize> {
    let (mut lb, mut ext, mut tlb, mut text) = (0, 0, 0, 0);
    PMPI_Type_get_extent(dt, &mut lb, &mut ext);
    if lb != 0 || u64::try_from(ext).ok()? != size {
        return None;
    }
    PMPI_Type_get_true_extent(dt, &mut tlb, &mut text);
    if tlb != 0 || u64::try_from(text).ok()? != size {
        return None;
    }
    usize::try_from(size * u64::try_from(count).ok()?).ok()
}

thread_local! {
    /// Staging buffer reused by blocking calls on this thread.
    static STAGE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// True when `rc` is an error of class MPI_ERR_TRUNCATE (MPICH returns
/// codes that carry the class in their low bits).
unsafe fn is_truncation(rc: c_int) -> bool {
    if rc == abi::SUCCESS {
        return false;
    }
    let mut class: c_int = rc;
    PMPI_Error_class(rc, &mut class);
    class == abi::ERR_TRUNCATE
}

fn as_int(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Bytes a completed receive's status reports, at any size: MPI_Get_count
/// says MPI_UNDEFINED above 2^31 - 1 (MPI-4.0 §3.2.5), the _x form does not.
unsafe fn status_bytes(st: &Status, byte: Datatype) -> usize {
    let mut n: abi::Count = 0;
    PMPI_Get_elements_x(st, byte, &mut n);
    usize::try_from(n).unwrap_or(0)
}

/// MPI_Pack of `count × dt` at `buf`. MPICH refuses a null input buffer,
/// and MPI_BOTTOM is null: a datatype of absolute addresses is then packed
/// from a non-null base through an hindexed wrapper whose displacement
/// takes the base off again, which names the same bytes (MPI-4.0 §5.1.12).
unsafe fn pack(
    buf: *const c_void,
    count: c_int,
    dt: Datatype,
    out: *mut u8,
    outsize: c_int,
    pos: &mut c_int,
    comm: Comm,
) -> c_int {
    if buf as usize != abi::BOTTOM || count == 0 {
        return PMPI_Pack(buf, count, dt, out.cast(), outsize, pos, comm);
    }
    let base = out as abi::Aint;
    let mut t = dt;
    let rc = PMPI_Type_create_hindexed(1, &count, &-base, dt, &mut t);
    if !ok(rc) {
        return rc;
    }
    let mut rc = PMPI_Type_commit(&mut t);
    if ok(rc) {
        rc = PMPI_Pack(
            out.cast_const().cast(),
            1,
            t,
            out.cast(),
            outsize,
            pos,
            comm,
        );
    }
    PMPI_Type_free(&mut t);
    rc
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
            cfg,
            c,
            rank,
            size,
            transit,
            counters: Counters::default(),
        }
    }

    /// Subtracts the shim's own per-call costs from the o_s and o_r spins.
    pub fn set_own_costs(&mut self, send_ns: u64, recv_ns: u64) {
        self.o_s_spin = self.cfg.o_s.saturating_sub(send_ns);
        self.o_r_spin = self.cfg.o_r.saturating_sub(recv_ns);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock cannot happen: panics abort.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ----------------------------------------------------------------- send

    /// Spends o_s, takes a departure slot, waits if the send queue is full.
    fn depart(&self, bytes: u64) -> loggp_core::Departure {
        if self.o_s_spin > 0 {
            spin_for(self.o_s_spin);
        }
        let t = now();
        let dep = {
            let mut st = self.lock();
            st.sends += 1;
            st.bytes_sent += bytes;
            st.send.depart(t, bytes)
        };
        if dep.ready > t {
            wait_until(dep.ready);
            self.counters
                .send_wait_ns
                .fetch_add(dep.ready - t, Ordering::Relaxed);
        }
        dep
    }

    /// Packs `[header][payload]` into a new buffer.
    unsafe fn stage(
        &self,
        size: u64,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<Vec<u8>, c_int> {
        let mut v = Vec::new();
        self.stage_into(&mut v, size, hdr, buf, count, dt, comm)?;
        Ok(v)
    }

    /// Writes `[header][payload]` into `v` (resized to fit).
    unsafe fn stage_into(
        &self,
        v: &mut Vec<u8>,
        size: u64,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<(), c_int> {
        if let Some(n) = contiguous_bytes(dt, count, size) {
            v.clear();
            v.reserve(HDR + n);
            let mut h = [0u8; HDR];
            hdr.write_to(h.as_mut_ptr());
            v.extend_from_slice(&h);
            if n > 0 {
                v.extend_from_slice(std::slice::from_raw_parts(buf.cast::<u8>(), n));
            }
            return Ok(());
        }
        let mut psize: c_int = 0;
        let rc = PMPI_Pack_size(count, dt, comm, &mut psize);
        if !ok(rc) {
            return Err(rc);
        }
        v.clear();
        v.resize(HDR + usize::try_from(psize).unwrap_or(0), 0);
        hdr.write_to(v.as_mut_ptr());
        let mut pos: c_int = 0;
        if count > 0 {
            let rc = pack(
                buf,
                count,
                dt,
                v.as_mut_ptr().add(HDR),
                psize,
                &mut pos,
                comm,
            );
            if !ok(rc) {
                return Err(rc);
            }
        }
        v.truncate(HDR + usize::try_from(pos).unwrap_or(0));
        Ok(())
    }

    /// Builds the struct datatype `{16 B at hdr, count × dt at buf}`.
    unsafe fn struct_type(
        &self,
        hdr: *const Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<Datatype, c_int> {
        let mut a0: abi::Aint = 0;
        let mut a1: abi::Aint = 0;
        PMPI_Get_address(hdr.cast(), &mut a0);
        PMPI_Get_address(buf, &mut a1);
        let lens = [HDR_INT, count];
        let disps = [a0, a1];
        let types = [self.c.byte, dt];
        let mut t: Datatype = self.c.byte;
        let rc = PMPI_Type_create_struct(2, lens.as_ptr(), disps.as_ptr(), types.as_ptr(), &mut t);
        if !ok(rc) {
            return Err(rc);
        }
        let rc = PMPI_Type_commit(&mut t);
        if !ok(rc) {
            return Err(rc);
        }
        Ok(t)
    }

    /// Blocking send in any mode.
    pub unsafe fn send(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        if mode == Mode::Buffered {
            return self.bsend(buf, count, dt, dest, tag, comm);
        }
        if nb::running() {
            // A blocking send may wait for its receiver, which may wait
            // for a collective this rank must progress.
            let mut r = self.c.request_null;
            let rc = self.isend(mode, buf, count, dt, dest, tag, comm, &mut r);
            if !ok(rc) {
                return rc;
            }
            return self.wait(&mut r, status_ignore());
        }
        let size = type_size(dt);
        let bytes = size * u64::try_from(count).unwrap_or(0);
        let dep = self.depart(bytes);
        let hdr = Header::new(dep.d);
        let real = match mode {
            Mode::Synchronous => PMPI_Ssend,
            Mode::Ready => PMPI_Rsend,
            _ => PMPI_Send,
        };
        let rc = if bytes <= self.cfg.inline_max {
            // Blocking: the buffer is free again when the call returns, so
            // this thread's staging buffer is reused (no allocation).
            STAGE.with(|cell| {
                let mut v = cell.take();
                let rc = match self.stage_into(&mut v, size, hdr, buf, count, dt, comm) {
                    Ok(()) => real(
                        v.as_ptr().cast(),
                        as_int(v.len()),
                        self.c.packed,
                        dest,
                        tag,
                        comm,
                    ),
                    Err(rc) => rc,
                };
                cell.replace(v);
                rc
            })
        } else {
            let h = Box::new(hdr);
            match self.struct_type(&*h, buf, count, dt) {
                Ok(mut t) => {
                    let rc = real(abi::BOTTOM as *const c_void, 1, t, dest, tag, comm);
                    PMPI_Type_free(&mut t);
                    rc
                }
                Err(rc) => rc,
            }
        };
        if dep.complete_at > dep.ready {
            self.hold_until(dep.complete_at);
        }
        rc
    }

    fn hold_until(&self, t: u64) {
        let n = now();
        if t > n {
            wait_until(t);
            self.counters
                .send_wait_ns
                .fetch_add(t - n, Ordering::Relaxed);
        }
    }

    /// Buffered send under virtual time: the shim buffers the message itself
    /// (a staged copy sent with Isend) instead of using the attached buffer,
    /// whose size the application computed without our 16-byte header.
    unsafe fn bsend(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        let size = type_size(dt);
        let bytes = size * u64::try_from(count).unwrap_or(0);
        let dep = self.depart(bytes);
        let v = match self.stage(size, Header::new(dep.d), buf, count, dt, comm) {
            Ok(v) => v,
            Err(rc) => return rc,
        };
        let mut req = self.c.request_null;
        let rc = PMPI_Isend(
            v.as_ptr().cast(),
            as_int(v.len()),
            self.c.packed,
            dest,
            tag,
            comm,
            &mut req,
        );
        if ok(rc) {
            let mut st = self.lock();
            st.bsends.push((req, v));
            Self::reap_bsends(&mut st, false);
        }
        rc
    }

    /// Frees buffered sends that have completed (all of them when `all`).
    fn reap_bsends(st: &mut State, all: bool) {
        st.bsends.retain_mut(|(req, _)| {
            let mut flag: c_int = 0;
            // SAFETY: req is a live request from PMPI_Isend.
            unsafe {
                if all {
                    PMPI_Wait(
                        req,
                        std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE),
                    );
                    flag = 1;
                } else {
                    PMPI_Test(
                        req,
                        &mut flag,
                        std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE),
                    );
                }
            }
            flag == 0
        });
    }

    /// Completes every buffered send (Buffer_detach, Finalize).
    pub fn flush_bsends(&self) {
        // SAFETY: freed receives are live requests of ours.
        unsafe { self.reap_freed_now(true) };
        let mut st = self.lock();
        Self::reap_bsends(&mut st, true);
    }

    /// A request that is already complete, standing for work the shim did
    /// itself: a receive from MPI_PROC_NULL.
    unsafe fn done_request(&self, req: *mut Request) -> c_int {
        let rc = start_grequest(req);
        if ok(rc) {
            PMPI_Grequest_complete(*req)
        } else {
            rc
        }
    }

    /// Nonblocking send in any mode.
    pub unsafe fn isend(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        if mode == Mode::Buffered {
            let rc = self.bsend(buf, count, dt, dest, tag, comm);
            if !ok(rc) {
                return rc;
            }
            return PMPI_Isend(
                std::ptr::null(),
                0,
                self.c.byte,
                abi::PROC_NULL,
                tag,
                comm,
                req,
            );
        }
        let size = type_size(dt);
        let bytes = size * u64::try_from(count).unwrap_or(0);
        let dep = self.depart(bytes);
        let hdr = Header::new(dep.d);
        let real = match mode {
            Mode::Synchronous => PMPI_Issend,
            Mode::Ready => PMPI_Irsend,
            _ => PMPI_Isend,
        };
        let (rc, pending) = if bytes <= self.cfg.inline_max {
            match self.stage(size, hdr, buf, count, dt, comm) {
                Ok(v) => {
                    let rc = real(
                        v.as_ptr().cast(),
                        as_int(v.len()),
                        self.c.packed,
                        dest,
                        tag,
                        comm,
                        req,
                    );
                    (
                        rc,
                        Pending::Send {
                            _keep: Some(v),
                            _hdr: None,
                            complete_at: dep.complete_at,
                        },
                    )
                }
                Err(rc) => return rc,
            }
        } else {
            let h = Box::new(hdr);
            match self.struct_type(&*h, buf, count, dt) {
                Ok(mut t) => {
                    let rc = real(abi::BOTTOM as *const c_void, 1, t, dest, tag, comm, req);
                    PMPI_Type_free(&mut t);
                    (
                        rc,
                        Pending::Send {
                            _keep: None,
                            _hdr: Some(h),
                            complete_at: dep.complete_at,
                        },
                    )
                }
                Err(rc) => return rc,
            }
        };
        if ok(rc) {
            self.lock().reqs.insert(key(*req), pending);
        }
        rc
    }

    /// Persistent send (standard, synchronous, ready, buffered).
    pub unsafe fn send_init(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        if mode == Mode::Buffered {
            let mut own = dt;
            let rc = PMPI_Type_dup(dt, &mut own);
            if !ok(rc) {
                return rc;
            }
            let rc = PMPI_Send_init(
                std::ptr::null(),
                0,
                self.c.byte,
                abi::PROC_NULL,
                tag,
                comm,
                req,
            );
            if !ok(rc) {
                PMPI_Type_free(&mut own);
            } else {
                self.lock().reqs.insert(
                    key(*req),
                    Pending::PBsend {
                        buf,
                        count,
                        dt: own,
                        dest,
                        tag,
                        comm,
                        active: false,
                    },
                );
            }
            return rc;
        }
        let size = type_size(dt);
        let bytes = size * u64::try_from(count).unwrap_or(0);
        let h = Box::new(Header::new(0));
        let mut t = match self.struct_type(&*h, buf, count, dt) {
            Ok(t) => t,
            Err(rc) => return rc,
        };
        let real = match mode {
            Mode::Synchronous => PMPI_Ssend_init,
            Mode::Ready => PMPI_Rsend_init,
            _ => PMPI_Send_init,
        };
        let rc = real(abi::BOTTOM as *const c_void, 1, t, dest, tag, comm, req);
        PMPI_Type_free(&mut t);
        if ok(rc) {
            self.lock().reqs.insert(
                key(*req),
                Pending::PSend {
                    hdr: h,
                    bytes,
                    complete_at: 0,
                    active: false,
                },
            );
        }
        rc
    }

    pub unsafe fn recv_init(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        let h = Box::new(Header::default());
        let mut t = match self.struct_type(&*h, buf, count, dt) {
            Ok(t) => t,
            Err(rc) => return rc,
        };
        let rc = PMPI_Recv_init(abi::BOTTOM as *mut c_void, 1, t, src, tag, comm, req);
        PMPI_Type_free(&mut t);
        if ok(rc) {
            self.lock().reqs.insert(
                key(*req),
                Pending::PRecv {
                    hdr: h,
                    active: false,
                },
            );
        }
        rc
    }

    /// Start of one request: tracked persistent requests get their header
    /// (departure) and overheads here.
    pub unsafe fn start(&self, req: *mut Request) -> c_int {
        enum Kind {
            Send(*mut Header, u64),
            Bsend(*const c_void, c_int, Datatype, c_int, c_int, Comm),
            Recv,
            Untracked,
        }
        let kind = {
            let mut st = self.lock();
            match st.reqs.get_mut(&key(*req)) {
                Some(Pending::PSend {
                    hdr, bytes, active, ..
                }) => {
                    *active = true;
                    Kind::Send(&mut **hdr, *bytes)
                }
                Some(Pending::PBsend {
                    buf,
                    count,
                    dt,
                    dest,
                    tag,
                    comm,
                    active,
                }) => {
                    *active = true;
                    Kind::Bsend(*buf, *count, *dt, *dest, *tag, *comm)
                }
                Some(Pending::PRecv { active, .. }) => {
                    *active = true;
                    Kind::Recv
                }
                _ => Kind::Untracked,
            }
        };
        match kind {
            Kind::Send(hdr, bytes) => {
                let dep = self.depart(bytes);
                // The header lives in the pending entry (boxed, stable) and
                // is not in flight: the request was inactive.
                *hdr = Header::new(dep.d);
                if let Some(Pending::PSend { complete_at, .. }) =
                    self.lock().reqs.get_mut(&key(*req))
                {
                    *complete_at = dep.complete_at;
                }
                PMPI_Start(req)
            }
            Kind::Bsend(buf, count, dt, dest, tag, comm) => {
                let rc = self.bsend(buf, count, dt, dest, tag, comm);
                if !ok(rc) {
                    return rc;
                }
                PMPI_Start(req)
            }
            Kind::Recv | Kind::Untracked => PMPI_Start(req),
        }
    }

    // -------------------------------------------------------------- receive

    /// Posts a receive (blocking when `req` is None).
    pub unsafe fn recv(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> c_int {
        self.reap_freed();
        if req.is_none() && nb::running() {
            // See `send`.
            let mut r = self.c.request_null;
            let rc = self.recv(buf, count, dt, src, tag, comm, Some(&mut r), status);
            if !ok(rc) {
                return rc;
            }
            return self.wait(&mut r, status);
        }
        if self.stash_len.load(Ordering::Relaxed) > 0 {
            let taken = self.lock().stash.take_for_recv(&pattern(comm, src, tag));
            if let Some(m) = taken {
                self.stash_len.fetch_sub(1, Ordering::Relaxed);
                return self.deliver_from_stash(m, buf, count, dt, req, status);
            }
        }
        let staged = contiguous_bytes(dt, count, type_size(dt))
            .filter(|&cap| cap as u64 <= self.cfg.inline_max);
        let wire = if let Some(cap) = staged {
            let n = HDR + cap;
            // Blocking receives reuse this thread's buffer; MPI writes it
            // and we read back only the bytes MPI reports as received.
            let mut stage = if req.is_none() {
                STAGE.with(|c| c.take())
            } else {
                Vec::new()
            };
            stage.clear();
            stage.reserve(n);
            // SAFETY: capacity reserved. MPI writes the received bytes and
            // only those (up to the count MPI reports) are ever read; not
            // zero-filling saves a memset of up to LOGGP_INLINE_MAX bytes.
            #[allow(clippy::uninit_vec)]
            stage.set_len(n);
            Wire::Staged {
                stage,
                buf: buf.cast(),
                cap,
                placed: false,
            }
        } else {
            Wire::Struct {
                hdr: Box::new(Header::default()),
            }
        };
        let mut st_local = Status::zeroed();
        let mut rc;
        let mut wire = wire;
        match &mut wire {
            Wire::Staged { stage, .. } => {
                let (p, n) = (stage.as_mut_ptr().cast::<c_void>(), as_int(stage.len()));
                rc = match req {
                    Some(r) => PMPI_Irecv(p, n, self.c.packed, src, tag, comm, r),
                    None => PMPI_Recv(p, n, self.c.packed, src, tag, comm, &mut st_local),
                };
            }
            Wire::Struct { hdr } => {
                let mut t = match self.struct_type(&**hdr, buf, count, dt) {
                    Ok(t) => t,
                    Err(rc) => return rc,
                };
                let p = abi::BOTTOM as *mut c_void;
                rc = match req {
                    Some(r) => PMPI_Irecv(p, 1, t, src, tag, comm, r),
                    None => PMPI_Recv(p, 1, t, src, tag, comm, &mut st_local),
                };
                PMPI_Type_free(&mut t);
            }
        }
        match req {
            Some(r) => {
                if ok(rc) {
                    self.lock().reqs.insert(key(*r), Pending::Recv(wire));
                }
                rc
            }
            None => {
                if rc != abi::SUCCESS && !is_truncation(rc) {
                    return rc;
                }
                let rc2 = self.finish_recv(&mut wire, &mut st_local, true, rc);
                if rc == abi::SUCCESS {
                    rc = rc2;
                }
                if !abi::status_ignored(status) {
                    st_local.copy_to(status);
                }
                if let Wire::Staged { stage, .. } = wire {
                    STAGE.with(|c| c.replace(stage));
                }
                rc
            }
        }
    }

    /// Reads the header of a completed receive, applies the delivery gate
    /// (waiting when `block`), unpacks a staged payload, fixes the count.
    unsafe fn finish_recv(
        &self,
        wire: &mut Wire,
        st: &mut Status,
        block: bool,
        rc: c_int,
    ) -> c_int {
        let mut cancelled: c_int = 0;
        PMPI_Test_cancelled(st, &mut cancelled);
        // Cancelled, from MPI_PROC_NULL, or an empty status: no message.
        if cancelled != 0 || st.source() == abi::PROC_NULL || st.source() == abi::ANY_SOURCE {
            return abi::SUCCESS;
        }
        let got = status_bytes(st, self.c.byte);
        let hdr = wire.header();
        if got < HDR || hdr.magic != MAGIC {
            if is_truncation(rc) {
                // MPI may drop a truncated message's bytes (MPICH does for
                // large ones): no header to read, nothing to deliver.
                PMPI_Status_set_elements_x(st, self.c.byte, got.saturating_sub(HDR) as i64);
                return rc;
            }
            self.escaped(st);
        }
        let payload = (got - HDR) as u64;
        self.gate(hdr.d, payload, block);
        wire.place(got);
        PMPI_Status_set_elements_x(st, self.c.byte, payload as i64);
        abi::SUCCESS
    }

    /// A message without our header reached a receive: some sender bypassed
    /// the shim. Going on would hand the application shifted bytes.
    unsafe fn escaped(&self, st: &Status) -> ! {
        let msg = format!(
            "rank {} received a message from rank {} (tag {}) without the shim's header: \
             a send bypassed the shim (an unsupported MPI call, or ranks preloaded differently); stopping",
            self.rank,
            st.source(),
            st.tag()
        );
        log::abort_job(Some(&msg), self.c.comm_world)
    }

    /// Reserves the message's delivery time at the gate (one step under
    /// the lock, `RecvGate::reserve`), waits for it when `block`, and
    /// spends o_r.
    fn gate(&self, d: u64, payload: u64, block: bool) {
        let t = now();
        let r = {
            let mut st = self.lock();
            st.recvs += 1;
            st.bytes_recv += payload;
            st.gate.reserve(t, d, payload)
        };
        if r > t && block {
            wait_until(r);
            self.counters
                .gate_wait_ns
                .fetch_add(r - t, Ordering::Relaxed);
        }
        if self.o_r_spin > 0 {
            spin_for(self.o_r_spin);
        }
    }

    /// Places a stashed message's payload in the receive buffer, now:
    /// MPI lets it be written any time before completion, and the datatype
    /// may be freed before then. Contiguous types take a copy; any other is
    /// filled by MPI itself, from a message to ourselves on a private
    /// duplicate of MPI_COMM_SELF (data sent as MPI_PACKED may be received
    /// with any datatype, MPI-4.0 §5.2.1), so that the basic elements of a
    /// partial last element land exactly as from the network. Returns the
    /// bytes placed and whether the message was truncated.
    unsafe fn place_stashed(
        &self,
        m: &Stashed,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<(usize, bool), c_int> {
        let size = type_size(dt);
        let cap = usize::try_from(size * u64::try_from(count).unwrap_or(0)).unwrap_or(usize::MAX);
        let n = m.payload.len().min(cap);
        let truncated = m.payload.len() > cap;
        if n == 0 {
            return Ok((0, truncated));
        }
        if contiguous_bytes(dt, count, size).is_some() {
            std::ptr::copy_nonoverlapping(m.payload.as_ptr(), buf.cast::<u8>(), n);
            return Ok((n, truncated));
        }
        let rc = PMPI_Sendrecv(
            m.payload.as_ptr().cast(),
            as_int(n),
            self.c.packed,
            0,
            0,
            buf,
            count,
            dt,
            0,
            0,
            self.self_comm.0,
            status_ignore(),
        );
        if ok(rc) {
            Ok((n, truncated))
        } else {
            Err(rc)
        }
    }

    /// Delivers a stashed message to a receive.
    unsafe fn deliver_from_stash(
        &self,
        m: Box<Stashed>,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> c_int {
        let (n, truncated) = match self.place_stashed(&m, buf, count, dt) {
            Ok(placed) => placed,
            Err(rc) => return rc,
        };
        match req {
            Some(r) => {
                let rc = self.done_request(r);
                if ok(rc) {
                    self.lock().reqs.insert(
                        key(*r),
                        Pending::FromStash {
                            msg: m,
                            n,
                            truncated,
                        },
                    );
                }
                rc
            }
            None => {
                let mut st = Status::zeroed();
                let rc = self.deliver_stashed(&m, n, truncated, &mut st, true);
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                rc
            }
        }
    }

    /// Completes the delivery of a placed stashed message: the gate, the
    /// status, the truncation error.
    unsafe fn deliver_stashed(
        &self,
        m: &Stashed,
        n: usize,
        truncated: bool,
        st: &mut Status,
        block: bool,
    ) -> c_int {
        self.gate(m.d, m.payload.len() as u64, block);
        st.set_source(m.env.source);
        st.set_tag(m.env.tag);
        PMPI_Status_set_elements_x(st, self.c.byte, n as i64);
        if truncated {
            st.set_error(abi::ERR_TRUNCATE);
            PMPI_Comm_call_errhandler(m.comm_h, abi::ERR_TRUNCATE);
            return abi::ERR_TRUNCATE;
        }
        st.set_error(abi::SUCCESS);
        abi::SUCCESS
    }

    // ------------------------------------------------------------- probes

    /// Takes one matching message off the network into the stash, if any.
    unsafe fn pull(&self, src: c_int, tag: c_int, comm: Comm) -> Result<bool, c_int> {
        let mut flag: c_int = 0;
        let mut msg: Message = self.c.message_null;
        let mut st = Status::zeroed();
        let rc = PMPI_Improbe(src, tag, comm, &mut flag, &mut msg, &mut st);
        if !ok(rc) {
            return Err(rc);
        }
        if flag == 0 {
            return Ok(false);
        }
        if msg == self.c.message_no_proc {
            return Ok(false);
        }
        let bytes = status_bytes(&st, self.c.byte);
        let mut v = vec![0u8; bytes];
        let mut st2 = Status::zeroed();
        let rc = PMPI_Mrecv(
            v.as_mut_ptr().cast(),
            as_int(bytes),
            self.c.packed,
            &mut msg,
            &mut st2,
        );
        if !ok(rc) {
            return Err(rc);
        }
        if v.len() < HDR || Header::read_from(v.as_ptr()).magic != MAGIC {
            self.escaped(&st);
        }
        let h = Header::read_from(v.as_ptr());
        v.drain(..HDR);
        self.counters.probed.fetch_add(1, Ordering::Relaxed);
        let mut s = self.lock();
        let arrival = s.gate.arrival(h.d, v.len() as u64);
        s.stash.push(Box::new(Stashed {
            env: Envelope {
                comm: key(comm),
                source: st.source(),
                tag: st.tag(),
            },
            comm_h: comm,
            d: h.d,
            arrival,
            payload: v,
        }));
        self.stash_len.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Iprobe/Improbe: a message is reported only once it has virtually
    /// arrived. With `take`, the message is removed and returned.
    unsafe fn probe_once(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        take: bool,
    ) -> Result<Option<Probed>, c_int> {
        if src == abi::PROC_NULL {
            return Ok(None);
        }
        self.reap_freed();
        for attempt in 0..2 {
            {
                let mut s = self.lock();
                if let Some((i, m)) = s.stash.find_for_probe(&pattern(comm, src, tag), now()) {
                    let mut st = Status::zeroed();
                    st.set_source(m.env.source);
                    st.set_tag(m.env.tag);
                    st.set_error(abi::SUCCESS);
                    PMPI_Status_set_elements_x(&mut st, self.c.byte, m.payload.len() as i64);
                    let taken = if take {
                        self.stash_len.fetch_sub(1, Ordering::Relaxed);
                        Some(s.stash.remove(i))
                    } else {
                        None
                    };
                    return Ok(Some((st, taken)));
                }
            }
            if attempt == 0 && !self.pull(src, tag, comm)? {
                break;
            }
        }
        Ok(None)
    }

    pub unsafe fn iprobe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        nb::progress_all();
        if src == abi::PROC_NULL {
            return PMPI_Iprobe(src, tag, comm, flag, status);
        }
        match self.probe_once(src, tag, comm, false) {
            Err(rc) => rc,
            Ok(None) => {
                *flag = 0;
                abi::SUCCESS
            }
            Ok(Some((st, _))) => {
                *flag = 1;
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                abi::SUCCESS
            }
        }
    }

    pub unsafe fn probe(&self, src: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int {
        if src == abi::PROC_NULL {
            return PMPI_Probe(src, tag, comm, status);
        }
        loop {
            let mut flag: c_int = 0;
            let rc = self.iprobe(src, tag, comm, &mut flag, status);
            if !ok(rc) || flag != 0 {
                return rc;
            }
            std::hint::spin_loop();
        }
    }

    pub unsafe fn improbe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        flag: *mut c_int,
        msg: *mut Message,
        status: *mut Status,
    ) -> c_int {
        nb::progress_all();
        if src == abi::PROC_NULL {
            return PMPI_Improbe(src, tag, comm, flag, msg, status);
        }
        match self.probe_once(src, tag, comm, true) {
            Err(rc) => rc,
            Ok(None) => {
                *flag = 0;
                abi::SUCCESS
            }
            Ok(Some((st, m))) => {
                *flag = 1;
                *msg = self.fake_message(m.expect("taken"));
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                abi::SUCCESS
            }
        }
    }

    pub unsafe fn mprobe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        msg: *mut Message,
        status: *mut Status,
    ) -> c_int {
        if src == abi::PROC_NULL {
            return PMPI_Mprobe(src, tag, comm, msg, status);
        }
        loop {
            let mut flag: c_int = 0;
            let rc = self.improbe(src, tag, comm, &mut flag, msg, status);
            if !ok(rc) || flag != 0 {
                return rc;
            }
            std::hint::spin_loop();
        }
    }

    /// An MPI_Message handle for a stashed message. Open MPI handles are
    /// pointers: we use our own heap address, which no live MPI object can
    /// share. MPICH handles are ints whose top two bits give the kind; kind
    /// 0 is invalid in MPICH, so values below 2^30 are never MPICH's.
    fn fake_message(&self, m: Box<Stashed>) -> Message {
        let mut s = self.lock();
        #[cfg(ompi)]
        let h: Message = (&*m as *const Stashed).cast_mut().cast();
        #[cfg(mpich)]
        let h: Message = {
            s.next_message = (s.next_message + 1) % (1 << 26);
            0x0d00_0000 | c_int::try_from(s.next_message).unwrap_or(1)
        };
        s.messages.insert(key(h), m);
        h
    }

    /// Mrecv/Imrecv. `None` when the handle is not ours (MESSAGE_NO_PROC).
    pub unsafe fn mrecv(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        msg: *mut Message,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> Option<c_int> {
        let m = self.lock().messages.remove(&key(*msg))?;
        *msg = self.c.message_null;
        Some(self.deliver_from_stash(m, buf, count, dt, req, status))
    }

    // --------------------------------------------------------- completion

    /// True when some request in `reqs` is tracked by the shim. Every
    /// multiple-completion call starts here, so freed receives are reaped
    /// here too.
    unsafe fn any_tracked(&self, reqs: &[Request]) -> bool {
        self.reap_freed();
        let st = self.lock();
        !st.reqs.is_empty() && reqs.iter().any(|r| st.reqs.contains_key(&key(*r)))
    }

    /// For a natively complete tracked request: the time at which it may
    /// complete in the emulated machine.
    unsafe fn ready_time(&self, p: &Pending, st: &Status, gate: &RecvGate) -> u64 {
        match p {
            Pending::Send { complete_at, .. } | Pending::PSend { complete_at, .. } => *complete_at,
            Pending::PBsend { .. } | Pending::Coll { .. } => 0,
            Pending::FromStash { msg, .. } => gate.ready_at(msg.d, msg.payload.len() as u64),
            Pending::Recv(wire) => {
                let mut cancelled: c_int = 0;
                PMPI_Test_cancelled(st, &mut cancelled);
                if cancelled != 0 || st.source() == abi::PROC_NULL {
                    return 0;
                }
                let payload = status_bytes(st, self.c.byte).saturating_sub(HDR) as u64;
                gate.ready_at(wire.header().d, payload)
            }
            Pending::PRecv { hdr, .. } => {
                let payload = status_bytes(st, self.c.byte).saturating_sub(HDR) as u64;
                if st.source() == abi::PROC_NULL {
                    0
                } else {
                    gate.ready_at(hdr.d, payload)
                }
            }
        }
    }

    /// Finishes a tracked request that MPI has completed (status `st`):
    /// waits for its emulated completion when `block`, then delivers.
    unsafe fn finish(&self, p: &mut Pending, st: &mut Status, block: bool, rc: c_int) -> c_int {
        match p {
            Pending::Send { complete_at, .. } | Pending::PSend { complete_at, .. } => {
                if block {
                    self.hold_until(*complete_at);
                }
                abi::SUCCESS
            }
            Pending::PBsend { .. } => abi::SUCCESS,
            Pending::Coll { k } => nb::finish(*k, st),
            Pending::Recv(wire) => self.finish_recv(wire, st, block, rc),
            Pending::PRecv { hdr, .. } => {
                let mut w = Wire::Struct {
                    hdr: Box::new(**hdr),
                };
                self.finish_recv(&mut w, st, block, rc)
            }
            Pending::FromStash { msg, n, truncated } => {
                self.deliver_stashed(msg, *n, *truncated, st, block)
            }
        }
    }

    /// Takes the pending entry of `r` out of the table for completion;
    /// persistent entries stay (marked inactive) and a working copy of what
    /// completion needs is returned.
    fn take(&self, r: Request) -> Option<Pending> {
        let mut st = self.lock();
        let k = key(r);
        let p = st.reqs.get(&k)?;
        if !p.persistent() {
            return st.reqs.remove(&k);
        }
        if !p.active() {
            // An inactive persistent request completes at once with an
            // empty status: nothing of ours to do.
            return None;
        }
        let p = st.reqs.get_mut(&k)?;
        Some(match p {
            Pending::PSend {
                hdr,
                complete_at,
                active,
                bytes,
            } => {
                *active = false;
                Pending::PSend {
                    hdr: Box::new(**hdr),
                    bytes: *bytes,
                    complete_at: *complete_at,
                    active: false,
                }
            }
            Pending::PRecv { hdr, active } => {
                *active = false;
                Pending::PRecv {
                    hdr: Box::new(**hdr),
                    active: false,
                }
            }
            Pending::PBsend { active, .. } => {
                *active = false;
                Pending::PBsend {
                    buf: std::ptr::null(),
                    count: 0,
                    dt: self.c.byte,
                    dest: 0,
                    tag: 0,
                    comm: self.c.comm_world,
                    active: false,
                }
            }
            _ => unreachable!(),
        })
    }

    pub unsafe fn wait(&self, req: *mut Request, status: *mut Status) -> c_int {
        self.reap_freed();
        let r = *req;
        if r == self.c.request_null {
            return PMPI_Wait(req, status);
        }
        if nb::running() {
            // Nonblocking collectives in flight: wait by polling, so that
            // they progress meanwhile (the request may depend on them).
            loop {
                let ready = match self.poll(r) {
                    Poll::Ready | Poll::Inactive => true,
                    Poll::NotReady => false,
                    Poll::Untracked => self.native_done(r),
                };
                if ready {
                    break;
                }
                nb::progress_all();
                std::hint::spin_loop();
            }
        }
        let mut st = Status::zeroed();
        let rc = self.complete_one(req, &mut st);
        if !abi::status_ignored(status) {
            st.copy_to(status);
        }
        rc
    }

    /// Completes `reqs[i]` (known complete natively and ready) into `st`.
    unsafe fn complete_one(&self, req: *mut Request, st: &mut Status) -> c_int {
        let r = *req;
        match self.take(r) {
            None => PMPI_Wait(req, st),
            Some(mut p) => {
                let rc = PMPI_Wait(req, st);
                if let Pending::PRecv { hdr, .. } = &mut p {
                    if let Some(Pending::PRecv { hdr: live, .. }) = self.lock().reqs.get(&key(r)) {
                        **hdr = **live;
                    }
                }
                let rc2 = self.finish(&mut p, st, true, rc);
                if ok(rc) {
                    rc2
                } else {
                    rc
                }
            }
        }
    }

    /// Where a request stands for the emulated machine.
    unsafe fn poll(&self, r: Request) -> Poll {
        let st = self.lock();
        let Some(p) = st.reqs.get(&key(r)) else {
            return Poll::Untracked;
        };
        if !p.active() {
            return Poll::Inactive;
        }
        if let Pending::Coll { k } = *p {
            drop(st);
            return if nb::done(k) {
                Poll::Ready
            } else {
                Poll::NotReady
            };
        }
        drop(st);
        let mut flag: c_int = 0;
        let mut s = Status::zeroed();
        PMPI_Request_get_status(r, &mut flag, &mut s);
        if flag == 0 {
            return Poll::NotReady;
        }
        let st = self.lock();
        let Some(p) = st.reqs.get(&key(r)) else {
            return Poll::Untracked;
        };
        if now() >= self.ready_time(p, &s, &st.gate) {
            Poll::Ready
        } else {
            Poll::NotReady
        }
    }

    /// Native completion of an untracked request, without freeing it.
    unsafe fn native_done(&self, r: Request) -> bool {
        let mut f: c_int = 0;
        let mut st = Status::zeroed();
        PMPI_Request_get_status(r, &mut f, &mut st);
        f != 0
    }

    pub unsafe fn test(&self, req: *mut Request, flag: *mut c_int, status: *mut Status) -> c_int {
        self.reap_freed();
        nb::progress_all();
        let r = *req;
        match self.poll(r) {
            Poll::Untracked | Poll::Inactive => PMPI_Test(req, flag, status),
            Poll::NotReady => {
                *flag = 0;
                abi::SUCCESS
            }
            Poll::Ready => {
                *flag = 1;
                let mut st = Status::zeroed();
                let rc = self.complete_one(req, &mut st);
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                rc
            }
        }
    }

    pub unsafe fn request_get_status(
        &self,
        r: Request,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        nb::progress_all();
        match self.poll(r) {
            Poll::Untracked | Poll::Inactive => PMPI_Request_get_status(r, flag, status),
            Poll::NotReady => {
                *flag = 0;
                abi::SUCCESS
            }
            Poll::Ready => {
                // Complete but not freed: deliver the data now (placing is
                // done once), report a fixed status, keep the request.
                *flag = 1;
                let mut st = Status::zeroed();
                let rc = PMPI_Request_get_status(r, flag, &mut st);
                let mut s = self.lock();
                if let Some(Pending::Recv(wire)) = s.reqs.get_mut(&key(r)) {
                    let mut w = std::mem::replace(
                        wire,
                        Wire::Struct {
                            hdr: Box::new(Header::default()),
                        },
                    );
                    drop(s);
                    self.peek_recv(&mut w, &mut st);
                    s = self.lock();
                    if let Some(Pending::Recv(wire)) = s.reqs.get_mut(&key(r)) {
                        *wire = w;
                    }
                }
                drop(s);
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                rc
            }
        }
    }

    /// Places a staged receive and fixes its status without delivering it.
    unsafe fn peek_recv(&self, wire: &mut Wire, st: &mut Status) {
        let got = status_bytes(st, self.c.byte);
        wire.place(got);
        PMPI_Status_set_elements_x(st, self.c.byte, got.saturating_sub(HDR) as i64);
    }

    pub unsafe fn waitall(&self, n: c_int, reqs: *mut Request, statuses: *mut Status) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        if len == 0 {
            return PMPI_Waitall(n, reqs, statuses);
        }
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        if !self.any_tracked(rs) && !nb::running() {
            return PMPI_Waitall(n, reqs, statuses);
        }
        let ignore = abi::statuses_ignored(statuses);
        let mut rc_all = abi::SUCCESS;
        // Complete in the order the emulated machine allows: repeatedly the
        // tracked request with the earliest ready time, untracked ones as
        // MPI completes them.
        let mut done = vec![false; len];
        loop {
            let mut remaining = false;
            let mut progressed = false;
            for i in 0..len {
                if done[i] {
                    continue;
                }
                if rs[i] == self.c.request_null {
                    done[i] = true;
                    if !ignore {
                        let mut st = Status::zeroed();
                        PMPI_Wait(&mut rs[i], &mut st);
                        st.copy_to_all(statuses.add(i));
                    }
                    continue;
                }
                let ready = match self.poll(rs[i]) {
                    Poll::Ready | Poll::Inactive => true,
                    Poll::NotReady => false,
                    Poll::Untracked => self.native_done(rs[i]),
                };
                if ready {
                    let mut st = Status::zeroed();
                    let rc = self.complete_one(&mut rs[i], &mut st);
                    if !ok(rc) {
                        rc_all = abi::ERR_IN_STATUS;
                        st.set_error(rc);
                    }
                    if !ignore {
                        st.copy_to_all(statuses.add(i));
                    }
                    done[i] = true;
                    progressed = true;
                } else {
                    remaining = true;
                }
            }
            if !remaining {
                break;
            }
            if !progressed {
                nb::progress_all();
                std::hint::spin_loop();
            }
        }
        rc_all
    }

    pub unsafe fn testall(
        &self,
        n: c_int,
        reqs: *mut Request,
        flag: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        nb::progress_all();
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        if !self.any_tracked(rs) {
            return PMPI_Testall(n, reqs, flag, statuses);
        }
        for r in rs.iter() {
            let ready = match self.poll(*r) {
                Poll::Ready | Poll::Inactive => true,
                Poll::NotReady => false,
                Poll::Untracked => self.native_done(*r),
            };
            if !ready {
                *flag = 0;
                return abi::SUCCESS;
            }
        }
        *flag = 1;
        self.waitall(n, reqs, statuses)
    }

    /// One pass of Testany: `Some(i)` completed, `Some(UNDEFINED)` nothing
    /// active, `None` nothing ready yet.
    unsafe fn any_pass(&self, rs: &mut [Request], st: &mut Status) -> (Option<c_int>, c_int) {
        let mut any_active = false;
        let mut masked: Vec<Request> = Vec::with_capacity(rs.len());
        let mut untracked_any = false;
        for (i, r) in rs.iter_mut().enumerate() {
            match self.poll(*r) {
                Poll::Ready => {
                    let rc = self.complete_one(r, st);
                    return (Some(as_int(i)), rc);
                }
                Poll::NotReady => {
                    any_active = true;
                    masked.push(self.c.request_null);
                }
                Poll::Inactive => masked.push(self.c.request_null),
                Poll::Untracked => {
                    untracked_any = true;
                    masked.push(*r);
                }
            }
        }
        if untracked_any {
            let mut idx: c_int = abi::UNDEFINED;
            let mut flag: c_int = 0;
            let rc = PMPI_Testany(
                as_int(masked.len()),
                masked.as_mut_ptr(),
                &mut idx,
                &mut flag,
                st,
            );
            if flag != 0 && idx != abi::UNDEFINED {
                rs[usize::try_from(idx).unwrap_or(0)] = masked[usize::try_from(idx).unwrap_or(0)];
                return (Some(idx), rc);
            }
            if flag == 0 {
                any_active = true;
            }
        }
        if any_active {
            (None, abi::SUCCESS)
        } else {
            (Some(abi::UNDEFINED), abi::SUCCESS)
        }
    }

    pub unsafe fn waitany(
        &self,
        n: c_int,
        reqs: *mut Request,
        idx: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        if !self.any_tracked(rs) && !nb::running() {
            return PMPI_Waitany(n, reqs, idx, status);
        }
        loop {
            let mut st = Status::zeroed();
            if let (Some(i), rc) = self.any_pass(rs, &mut st) {
                *idx = i;
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                return rc;
            }
            nb::progress_all();
            std::hint::spin_loop();
        }
    }

    pub unsafe fn testany(
        &self,
        n: c_int,
        reqs: *mut Request,
        idx: *mut c_int,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        nb::progress_all();
        if !self.any_tracked(rs) {
            return PMPI_Testany(n, reqs, idx, flag, status);
        }
        let mut st = Status::zeroed();
        match self.any_pass(rs, &mut st) {
            (Some(i), rc) => {
                *flag = 1;
                *idx = i;
                if !abi::status_ignored(status) {
                    st.copy_to(status);
                }
                rc
            }
            (None, rc) => {
                *flag = 0;
                *idx = abi::UNDEFINED;
                rc
            }
        }
    }

    /// One pass of Testsome; returns the number completed (UNDEFINED when
    /// nothing is active).
    unsafe fn some_pass(
        &self,
        rs: &mut [Request],
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> (c_int, c_int) {
        let ignore = abi::statuses_ignored(statuses);
        let mut out = 0usize;
        let mut any_active = false;
        let mut rc_all = abi::SUCCESS;
        #[allow(clippy::needless_range_loop)] // rs[i] is rewritten inside.
        for i in 0..rs.len() {
            let r = rs[i];
            if r == self.c.request_null {
                continue;
            }
            let ready = match self.poll(r) {
                Poll::Ready => true,
                Poll::Inactive => false,
                Poll::NotReady => {
                    any_active = true;
                    false
                }
                Poll::Untracked => {
                    // Untracked: ask MPI about this one alone.
                    let mut one = [r];
                    let mut oc: c_int = 0;
                    let mut ix: [c_int; 1] = [0];
                    let mut st = Status::zeroed();
                    PMPI_Testsome(1, one.as_mut_ptr(), &mut oc, ix.as_mut_ptr(), &mut st);
                    if oc == abi::UNDEFINED {
                        false
                    } else if oc == 0 {
                        any_active = true;
                        false
                    } else {
                        rs[i] = one[0];
                        *idx.add(out) = as_int(i);
                        if !ignore {
                            st.copy_to_all(statuses.add(out));
                        }
                        out += 1;
                        continue;
                    }
                }
            };
            if ready {
                let mut st = Status::zeroed();
                let rc = self.complete_one(&mut rs[i], &mut st);
                if !ok(rc) {
                    st.set_error(rc);
                    rc_all = abi::ERR_IN_STATUS;
                }
                *idx.add(out) = as_int(i);
                if !ignore {
                    st.copy_to_all(statuses.add(out));
                }
                out += 1;
            }
        }
        if out == 0 && !any_active {
            (abi::UNDEFINED, rc_all)
        } else {
            (as_int(out), rc_all)
        }
    }

    pub unsafe fn waitsome(
        &self,
        n: c_int,
        reqs: *mut Request,
        outcount: *mut c_int,
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        if !self.any_tracked(rs) && !nb::running() {
            return PMPI_Waitsome(n, reqs, outcount, idx, statuses);
        }
        loop {
            let (c, rc) = self.some_pass(rs, idx, statuses);
            if c != 0 {
                *outcount = c;
                return rc;
            }
            nb::progress_all();
            std::hint::spin_loop();
        }
    }

    pub unsafe fn testsome(
        &self,
        n: c_int,
        reqs: *mut Request,
        outcount: *mut c_int,
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        let len = usize::try_from(n).unwrap_or(0);
        let rs = std::slice::from_raw_parts_mut(reqs, len);
        nb::progress_all();
        if !self.any_tracked(rs) {
            return PMPI_Testsome(n, reqs, outcount, idx, statuses);
        }
        let (c, rc) = self.some_pass(rs, idx, statuses);
        *outcount = c;
        rc
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

    pub unsafe fn request_free(&self, req: *mut Request) -> c_int {
        let r = *req;
        let p = self.lock().reqs.remove(&key(r));
        if let Some(Pending::Coll { k }) = p {
            nb::orphan(k);
            return PMPI_Request_free(req);
        }
        if let Some(Pending::PBsend { mut dt, .. }) = p {
            // Its buffered sends are already on their own: only the
            // duplicate datatype is ours to free.
            PMPI_Type_free(&mut dt);
            return PMPI_Request_free(req);
        }
        if let Some(Pending::Recv(wire @ Wire::Staged { .. })) = p {
            // Its payload lands in our stage, and only we can copy it to
            // the application's buffer: keep the request and do so once it
            // completes (`reap_freed`). For the application the request
            // is gone.
            let mut st = self.lock();
            st.freed.push((r, wire));
            self.freed_len.store(st.freed.len(), Ordering::Relaxed);
            *req = self.c.request_null;
            return abi::SUCCESS;
        }
        if let Some(p) = p {
            if !p.persistent() || p.active() {
                // MPI completes it in the background and may still write
                // the header or read the staging buffer: keep them alive.
                std::mem::forget(p);
            }
        }
        PMPI_Request_free(req)
    }

    /// Completes the staged receives the application freed while active
    /// whose messages have arrived: places their data (no waiting at the
    /// gate: nobody waits for them). Called on entry to the receive,
    /// probe and completion calls and at MPI_Finalize; one relaxed load
    /// when there are none.
    #[inline]
    pub fn reap_freed(&self) {
        if self.freed_len.load(Ordering::Relaxed) > 0 {
            // SAFETY: the requests are live receive requests of ours.
            unsafe { self.reap_freed_now(false) }
        }
    }

    /// As `reap_freed`; with `all`, waits for every one (MPI_Finalize).
    pub unsafe fn reap_freed_now(&self, all: bool) {
        let mut list = std::mem::take(&mut self.lock().freed);
        list.retain_mut(|(r, wire)| {
            let mut flag: c_int = 0;
            let mut st = Status::zeroed();
            let rc = if all {
                flag = 1;
                PMPI_Wait(r, &mut st)
            } else {
                PMPI_Test(r, &mut flag, &mut st)
            };
            if flag != 0 {
                self.finish_recv(wire, &mut st, false, rc);
            }
            flag == 0
        });
        let mut st = self.lock();
        st.freed.append(&mut list);
        self.freed_len.store(st.freed.len(), Ordering::Relaxed);
    }

    // --------------------------------------------------------- composites

    /// Posts both halves of a Sendrecv (MPI-4.0 §3.10) as Irecv + Isend
    /// through the engine: `[send, recv]`.
    unsafe fn post_sendrecv(
        &self,
        sbuf: *const c_void,
        scount: c_int,
        sdt: Datatype,
        dest: c_int,
        stag: c_int,
        rbuf: *mut c_void,
        rcount: c_int,
        rdt: Datatype,
        src: c_int,
        rtag: c_int,
        comm: Comm,
    ) -> Result<[Request; 2], c_int> {
        let mut reqs = [self.c.request_null; 2];
        let rc = if src == abi::PROC_NULL {
            PMPI_Irecv(rbuf, rcount, rdt, src, rtag, comm, &mut reqs[1])
        } else {
            self.recv(
                rbuf,
                rcount,
                rdt,
                src,
                rtag,
                comm,
                Some(&mut reqs[1]),
                std::ptr::null_mut(),
            )
        };
        if !ok(rc) {
            return Err(rc);
        }
        let rc = if dest == abi::PROC_NULL {
            PMPI_Isend(sbuf, scount, sdt, dest, stag, comm, &mut reqs[0])
        } else {
            self.isend(
                Mode::Standard,
                sbuf,
                scount,
                sdt,
                dest,
                stag,
                comm,
                &mut reqs[0],
            )
        };
        if !ok(rc) {
            return Err(rc);
        }
        Ok(reqs)
    }

    /// The result of a Sendrecv whose two halves completed with `rc`
    /// (Waitall's): the receive's error, else the send's.
    pub fn pair_rc(rc: c_int, sts: &[Status; 2]) -> c_int {
        if rc != abi::ERR_IN_STATUS {
            return rc;
        }
        if sts[1].error() != abi::SUCCESS {
            sts[1].error()
        } else {
            sts[0].error()
        }
    }

    pub unsafe fn sendrecv(
        &self,
        sbuf: *const c_void,
        scount: c_int,
        sdt: Datatype,
        dest: c_int,
        stag: c_int,
        rbuf: *mut c_void,
        rcount: c_int,
        rdt: Datatype,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        let mut reqs = match self.post_sendrecv(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm,
        ) {
            Ok(r) => r,
            Err(rc) => return rc,
        };
        let mut sts = [Status::zeroed(); 2];
        let rc = self.waitall(2, reqs.as_mut_ptr(), sts.as_mut_ptr());
        if !abi::status_ignored(status) {
            sts[1].copy_to(status);
        }
        Self::pair_rc(rc, &sts)
    }

    /// MPI_Isendrecv (MPI-4.0 §3.10.1): the halves are posted like Isend +
    /// Irecv, and one request completes when both have, with the receive's
    /// status. `keep` is memory the send reads until then. (MPI-4: MPICH's
    /// alone.)
    #[cfg_attr(ompi, allow(dead_code))]
    pub unsafe fn isendrecv(
        &self,
        sbuf: *const c_void,
        scount: c_int,
        sdt: Datatype,
        dest: c_int,
        stag: c_int,
        rbuf: *mut c_void,
        rcount: c_int,
        rdt: Datatype,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        keep: Vec<u8>,
        req: *mut Request,
    ) -> c_int {
        match self.post_sendrecv(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm,
        ) {
            Ok(reqs) => nb::spawn_pair(reqs, keep, req),
            Err(rc) => rc,
        }
    }

    /// A packed copy of `count × dt` at `buf`, for the *_replace forms,
    /// whose receive overwrites the data they send.
    unsafe fn packed_copy(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<Vec<u8>, c_int> {
        let mut psize: c_int = 0;
        let rc = PMPI_Pack_size(count, dt, comm, &mut psize);
        if !ok(rc) {
            return Err(rc);
        }
        let mut tmp = vec![0u8; usize::try_from(psize).unwrap_or(0)];
        let mut pos: c_int = 0;
        if count > 0 {
            let rc = pack(buf, count, dt, tmp.as_mut_ptr(), psize, &mut pos, comm);
            if !ok(rc) {
                return Err(rc);
            }
        }
        tmp.truncate(usize::try_from(pos).unwrap_or(0));
        Ok(tmp)
    }

    pub unsafe fn sendrecv_replace(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        stag: c_int,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        let tmp = match self.packed_copy(buf, count, dt, comm) {
            Ok(v) => v,
            Err(rc) => return rc,
        };
        self.sendrecv(
            tmp.as_ptr().cast(),
            as_int(tmp.len()),
            self.c.packed,
            dest,
            stag,
            buf,
            count,
            dt,
            src,
            rtag,
            comm,
            status,
        )
    }

    /// MPI_Isendrecv_replace: as `isendrecv`, sending a packed copy.
    #[cfg_attr(ompi, allow(dead_code))]
    pub unsafe fn isendrecv_replace(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        stag: c_int,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        let tmp = match self.packed_copy(buf, count, dt, comm) {
            Ok(v) => v,
            Err(rc) => return rc,
        };
        self.isendrecv(
            tmp.as_ptr().cast(),
            as_int(tmp.len()),
            self.c.packed,
            dest,
            stag,
            buf,
            count,
            dt,
            src,
            rtag,
            comm,
            tmp,
            req,
        )
    }
}
