//! Collectives over the shim's perturbed point-to-point.
//!
//! Open MPI and MPICH run collectives on internal paths that no PMPI symbol
//! sees, so while virtual time is on the shim runs them itself: every
//! constituent message goes through the engine's send/receive on a private
//! duplicate of the application's communicator, and so feels L, o_s, o_r,
//! g_s, g_r and G exactly as application messages do. With virtual time off
//! each wrapper is a plain call to the library's own `PMPI_` function.
//!
//! * `cfg` — `LOGGP_COLL_<OP>=<algorithm>[:<segment>]` (pure, tested);
//! * `algo` — the algorithms (Pješivac-Grbović et al. §4);
//! * `ctx` — private communicator, point-to-point, buffers, local reduction;
//! * `nb` — the nonblocking collectives' jobs and their progress;
//! * `large` — MPICH's scalar large-count (`_c`) collectives.
//!
//! The private duplicate is made inside the first collective a
//! communicator sees, which every rank of it calls (`MPI_Comm_dup`, or
//! `MPI_Comm_idup` when that collective is a nonblocking one, whose
//! initiation must not block); it is freed when the application frees the
//! communicator (`MPI_Comm_free`, `MPI_Comm_disconnect`, wrapped here; later
//! if collectives on it are still in flight) or by `finalize`.
//!
//! The nonblocking collectives (`MPI_Ibarrier`, `MPI_Ibcast`, … one for
//! each blocking one above) run the same algorithms as futures that the
//! completion calls progress (`nb`); each in flight has its own tag on the
//! private duplicate.
//!
//! The neighbourhood collectives (`MPI_Neighbor_*`, `MPI_Ineighbor_*`) on
//! Cartesian, graph and distributed-graph communicators post every send and
//! receive at once (`algo::neighbor`).
//!
//! Intercommunicators: the collectives MPI defines there, blocking and
//! nonblocking, but for Reduce_scatter, run
//! linear algorithms (`inter`); the others are refused with one line. Limits: the persistent
//! collectives of MPI-4, MPICH's vector large-count collectives
//! (`MPI_Gatherv_c`, …) and scalar ones whose count exceeds an `int` stay
//! native (correct but unperturbed).
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

mod algo;
mod ctx;
mod inter;
#[cfg(mpich)]
mod large;
pub mod nb;

use crate::abi::{self, key, Comm, Datatype, Op as MpiOp};
use crate::clock::OneThread;
use crate::engine::{self, active, HandleMap};
use crate::log;
use crate::real;
use algo::{Blk, Bufs, V, W};
use ctx::{count, Ctx, R};
use loggp_core::coll::{resolve, Alg, Choice, CollCfg, Op};
use std::ffi::{c_char, c_int, c_void};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};

// --------------------------------------------------------- private comms

/// The private duplicate of one communicator, shared by its table entry
/// and the nonblocking collectives that wait for it.
struct Slot {
    /// The application's communicator.
    app: Comm,
    /// Boxed: MPI_Comm_idup writes it when the duplicate completes.
    dup: Box<Comm>,
    /// The MPI_Comm_idup in flight when the communicator's first
    /// collective was a nonblocking one (a blocking MPI_Comm_dup inside a
    /// nonblocking call could deadlock a correct program).
    idup: Option<abi::Request>,
}

// SAFETY: handles are plain values usable from any thread; the slot is
// only touched under its mutex.
unsafe impl Send for Slot {}

type SlotRef = std::sync::Arc<Mutex<Slot>>;

struct Entry {
    slot: SlotRef,
    rank: c_int,
    /// The group ranks address (the remote group of an intercommunicator).
    size: c_int,
    inter: bool,
    /// Nonblocking collectives started on this communicator: each gets its
    /// own tag, so that several in flight cannot take each other's messages.
    seq: u32,
    /// The private duplicate, once a blocking collective has found it made
    /// (`blocking_ctx`): later ones take it from here, without the slot's
    /// lock and reference count.
    ready: Option<Comm>,
}

/// Tags of the nonblocking collectives: `NB_TAG0 + seq % NB_TAGS` (MPI
/// guarantees tags up to 32767).
const NB_TAG0: c_int = 1000;
const NB_TAGS: u32 = 30_000;

fn nb_tag(seq: u32) -> c_int {
    NB_TAG0 + c_int::try_from(seq % NB_TAGS).unwrap_or(0)
}

/// The private duplicate once it exists: `None` while its MPI_Comm_idup
/// is in flight (tested here, which also progresses it).
unsafe fn dup_now(slot: &SlotRef) -> Option<R<Comm>> {
    unsafe {
        let mut en = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut r) = en.idup {
            let mut flag: c_int = 0;
            let st = std::ptr::null_mut::<abi::Status>().wrapping_byte_add(abi::STATUS_IGNORE);
            let rc = real::PMPI_Test(&mut r, &mut flag, st);
            if rc != abi::SUCCESS {
                return Some(Err(rc));
            }
            if flag == 0 {
                en.idup = Some(r);
                return None;
            }
            en.idup = None;
            adopt(*en.dup, en.app);
        }
        Some(Ok(*en.dup))
    }
}

/// Makes the private duplicate of `app` return its errors to the shim
/// (MPI_ERRORS_RETURN; a duplicate inherits `app`'s handler, which would
/// then report the application's own errors, a truncation say, on a
/// communicator it never made): the collective's wrapper raises them on
/// `app` instead (`raise`), as the library's collective would. And names
/// it after `app`, so that anything that does show it says whose it is and
/// that the shim ran the collective.
unsafe fn adopt(dup: Comm, app: Comm) {
    unsafe {
        let e = engine::get();
        real::PMPI_Comm_set_errhandler(dup, e.c.errors_return);
        let max = usize::try_from(abi::MAX_OBJECT_NAME).unwrap_or(64);
        if let Ok(name) = std::ffi::CString::new(dup_name(&comm_name(app), max - 1)) {
            real::PMPI_Comm_set_name(dup, name.as_ptr());
        }
    }
}

/// The private duplicate's name: "<application's name> (loggp-shim
/// collective)" in at most `max` bytes (the application's name is cut,
/// not the suffix).
fn dup_name(app: &str, max: usize) -> String {
    const SUFFIX: &str = " (loggp-shim collective)";
    let mut keep = max.saturating_sub(SUFFIX.len()).min(app.len());
    while !app.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{SUFFIX}", &app[..keep])
}

/// An error of the shim's collective `name` on `comm`, raised on `comm`
/// (its error handler runs) and returned, as the library's collective
/// would. When that handler is MPI_ERRORS_ARE_FATAL, one line first says
/// where the error comes from: the library's own message names the
/// function that raised it (MPI_Comm_call_errhandler) and, for MPICH, the
/// shim's internal calls.
pub(crate) unsafe fn raise(comm: Comm, rc: c_int, name: &str) -> c_int {
    unsafe {
        if rc == abi::SUCCESS {
            return rc;
        }
        if fatal_handler(comm) {
            let mut msg: Vec<c_char> =
                vec![0; usize::try_from(abi::MAX_ERROR_STRING).unwrap_or(512) + 1];
            let mut len: c_int = 0;
            // The class's text: MPICH's text of the code itself is a stack of
            // the shim's internal calls.
            let mut class = rc;
            real::PMPI_Error_class(rc, &mut class);
            real::PMPI_Error_string(class, msg.as_mut_ptr(), &mut len);
            let msg = std::ffi::CStr::from_ptr(msg.as_ptr()).to_string_lossy();
            let mut rank: c_int = 0;
            real::PMPI_Comm_rank(comm, &mut rank);
            log::line(&format!(
            "{name} on {} failed at its rank {rank}: {msg} (an error of the application's call; \
             the shim runs collectives itself, over point-to-point on a private duplicate of \
             the communicator, and raises their errors on the application's communicator)",
            comm_name(comm)
        ));
            // The handler aborts the job: give the launcher time to forward
            // the line (MPICH's can lose an aborting rank's last words).
            libc::usleep(100_000);
        }
        real::PMPI_Comm_call_errhandler(comm, rc);
        rc
    }
}

/// True when `comm`'s error handler is MPI_ERRORS_ARE_FATAL.
unsafe fn fatal_handler(comm: Comm) -> bool {
    unsafe {
        let Some(fatal) = abi::ERRORS_ARE_FATAL.get() else {
            return false;
        };
        let mut eh = fatal;
        if real::PMPI_Comm_get_errhandler(comm, &mut eh) != abi::SUCCESS {
            return false;
        }
        let is = eh == fatal;
        real::PMPI_Errhandler_free(&mut eh);
        is
    }
}

/// The name of `comm` (MPI_Comm_get_name), or "a communicator without a
/// name".
unsafe fn comm_name(comm: Comm) -> String {
    unsafe {
        let max = usize::try_from(abi::MAX_OBJECT_NAME).unwrap_or(64);
        let mut buf: Vec<c_char> = vec![0; max + 1];
        let mut len: c_int = 0;
        real::PMPI_Comm_get_name(comm, buf.as_mut_ptr(), &mut len);
        let s = std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy();
        if s.is_empty() {
            "a communicator without a name".to_string()
        } else {
            s.into_owned()
        }
    }
}

/// True while `comm` is a communicator the shim has run collectives on and
/// the application has not freed.
pub(crate) fn known(comm: Comm) -> bool {
    comms().as_ref().is_some_and(|m| m.contains_key(&key(comm)))
}

/// `dup_now`, waiting (and progressing the collectives in flight).
unsafe fn dup_wait(slot: &SlotRef) -> R<Comm> {
    unsafe {
        let mut patience = crate::clock::Patience::new();
        loop {
            if let Some(r) = dup_now(slot) {
                return r;
            }
            nb::progress_all();
            patience.pause();
        }
    }
}

/// `dup_now` as a future, for a nonblocking collective's first step.
async unsafe fn dup_ready(slot: SlotRef) -> R<Comm> {
    unsafe {
        std::future::poll_fn(|_| match dup_now(&slot) {
            Some(r) => std::task::Poll::Ready(r),
            None => std::task::Poll::Pending,
        })
        .await
    }
}

// SAFETY: a communicator handle is a plain value usable from any thread.
unsafe impl Send for Entry {}

/// The entry of each communicator a collective ran on, by handle (hashed
/// as the engine's request table is: SipHash cost 140 instructions of an
/// 8-byte Allreduce).
static COMMS: Mutex<Option<HandleMap<Entry>>> = Mutex::new(None);

fn comms() -> std::sync::MutexGuard<'static, Option<HandleMap<Entry>>> {
    COMMS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Prints `msg` from the rank that is 0 in `comm` and ends the job. The
/// other ranks give it a moment to print before they abort too.
unsafe fn stop(comm: Comm, msg: &str) -> ! {
    unsafe {
        let e = engine::get();
        let mut r: c_int = 0;
        real::PMPI_Comm_rank(comm, &mut r);
        if r == 0 {
            log::line(msg);
        } else {
            libc::usleep(500_000);
        }
        real::PMPI_Abort(e.c.comm_world, 1);
        libc::_exit(1)
    }
}

static CFG: OnceLock<Result<CollCfg, String>> = OnceLock::new();

/// The algorithm choices; a bad variable stops the job at the first
/// collective with one line.
unsafe fn config(comm: Comm) -> &'static CollCfg {
    unsafe {
        match CFG.get_or_init(|| CollCfg::from_vars(std::env::vars())) {
            Ok(c) => c,
            Err(msg) => stop(comm, msg),
        }
    }
}

/// The error line for a bad `LOGGP_COLL_*` setting, if any, so that
/// start-up can refuse it at MPI_Init like the other variables (otherwise
/// it is refused at the first collective).
#[allow(dead_code)] // For init::config_or_exit (the engine's owner wires it).
pub fn config_error() -> Option<String> {
    CFG.get_or_init(|| CollCfg::from_vars(std::env::vars()))
        .as_ref()
        .err()
        .cloned()
}

/// The private duplicate of `comm` (made on first use) as a context for
/// one collective. For a nonblocking one (`nb`) the duplicate may still be
/// in flight: its `comm` is then resolved by the job (`dup_ready`).
unsafe fn ctx(comm: Comm, name: &str, op: Op, nb: bool) -> R<(Ctx, SlotRef)> {
    unsafe {
        let e = engine::get();
        let k = key(comm);
        let known = {
            let mut g = comms();
            g.as_mut().and_then(|m| m.get_mut(&k)).map(|en| {
                let tag = if nb {
                    en.seq = en.seq.wrapping_add(1);
                    nb_tag(en.seq)
                } else {
                    100 + op as c_int
                };
                (en.rank, en.size, en.inter, tag, en.slot.clone())
            })
        };
        if let Some((rank, size, inter, tag, slot)) = known {
            if inter {
                inter_supported_or_stop(comm, name, op);
            }
            let dup = if nb { e.c.comm_null } else { dup_wait(&slot)? };
            return Ok((
                Ctx {
                    e,
                    comm: dup,
                    rank,
                    size,
                    tag,
                    nb,
                    inter,
                },
                slot,
            ));
        }
        let mut inter: c_int = 0;
        ctx::chk(real::PMPI_Comm_test_inter(comm, &mut inter))?;
        let inter = inter != 0;
        if inter {
            inter_supported_or_stop(comm, name, op);
        }
        let (mut rank, mut size) = (0, 1);
        real::PMPI_Comm_rank(comm, &mut rank);
        if inter {
            real::PMPI_Comm_remote_size(comm, &mut size);
        } else {
            real::PMPI_Comm_size(comm, &mut size);
        }
        if nb {
            let mut dup = Box::new(e.c.comm_null);
            let mut req = e.c.request_null;
            ctx::chk(real::PMPI_Comm_idup(comm, &mut *dup, &mut req))?;
            let slot = SlotRef::new(Mutex::new(Slot {
                app: comm,
                dup,
                idup: Some(req),
            }));
            comms().get_or_insert_with(HandleMap::default).insert(
                k,
                Entry {
                    slot: slot.clone(),
                    rank,
                    size,
                    inter,
                    seq: 1,
                    ready: None,
                },
            );
            return Ok((
                Ctx {
                    e,
                    comm: e.c.comm_null,
                    rank,
                    size,
                    tag: nb_tag(1),
                    nb,
                    inter,
                },
                slot,
            ));
        }
        // Not under the lock: MPI_Comm_dup is collective, and another thread
        // may be making another communicator's duplicate.
        let mut dup = e.c.comm_null;
        ctx::chk(real::PMPI_Comm_dup(comm, &mut dup))?;
        adopt(dup, comm);
        agree(dup, comm);
        let slot = SlotRef::new(Mutex::new(Slot {
            app: comm,
            dup: Box::new(dup),
            idup: None,
        }));
        comms().get_or_insert_with(HandleMap::default).insert(
            k,
            Entry {
                slot: slot.clone(),
                rank,
                size,
                inter,
                seq: 0,
                ready: Some(dup),
            },
        );
        Ok((
            Ctx {
                e,
                comm: dup,
                rank,
                size,
                tag: 100 + op as c_int,
                nb,
                inter,
            },
            slot,
        ))
    }
}

/// The intracommunicator the last blocking collective found ready, while
/// one thread calls MPI (`clock::one_thread`): its key, private duplicate,
/// rank and size. The next collective on it takes them from here, without
/// the table's lock and lookup (`blocking_ctx` 90 → 22 instructions,
/// `scripts/bench-instr-coll.sh`). Cleared wherever an entry leaves the
/// table (`forget`, `finalize`).
static LAST: OneThread<Option<(usize, Comm, c_int, c_int)>> = OneThread::new(None);

/// Clears `LAST` (an entry left the table).
unsafe fn forget_last() {
    if crate::clock::one_thread() {
        // SAFETY: one thread calls MPI, and this is inside its call.
        unsafe { *LAST.get() = None };
    }
}

/// `LAST`'s private duplicate, rank and size when it is `comm`'s.
unsafe fn last_of(comm: Comm) -> Option<(Comm, c_int, c_int)> {
    if !crate::clock::one_thread() {
        return None;
    }
    // SAFETY: one thread calls MPI, and this is inside its call.
    let (k, dup, rank, size) = unsafe { (*LAST.get())? };
    (k == key(comm)).then_some((dup, rank, size))
}

/// `ctx` for a blocking collective: the private duplicate from the
/// communicator's entry once one was found made, else through `ctx`
/// (which makes it, or waits for its MPI_Comm_idup), remembered then.
unsafe fn blocking_ctx(comm: Comm, name: &str, op: Op) -> R<Ctx> {
    unsafe {
        let e = engine::get();
        let k = key(comm);
        let known = match last_of(comm) {
            Some((dup, rank, size)) => Some((dup, rank, size, false)),
            None => {
                let found = comms()
                    .as_ref()
                    .and_then(|m| m.get(&k))
                    .and_then(|en| Some((en.ready?, en.rank, en.size, en.inter)));
                match found {
                    Some((_, _, _, true)) => inter_supported_or_stop(comm, name, op),
                    Some((dup, rank, size, false)) if crate::clock::one_thread() => {
                        *LAST.get() = Some((k, dup, rank, size));
                    }
                    _ => {}
                }
                found
            }
        };
        if let Some((dup, rank, size, inter)) = known {
            return Ok(Ctx {
                e,
                comm: dup,
                rank,
                size,
                tag: 100 + op as c_int,
                nb: false,
                inter,
            });
        }
        let (c, _) = ctx(comm, name, op, false)?;
        if let Some(en) = comms().as_mut().and_then(|m| m.get_mut(&k)) {
            en.ready = Some(c.comm);
        }
        Ok(c)
    }
}

/// The collectives the shim runs on an intercommunicator (`inter`): those
/// whose intercommunicator form MPI defines, blocking and nonblocking, but
/// for Reduce_scatter (its remote block sizes are the remote group's
/// counts, which this rank does not know). Any other stops the job with one
/// line, rather than run natively past the emulated network.
unsafe fn inter_supported_or_stop(comm: Comm, name: &str, op: Op) {
    unsafe {
        let supported = matches!(
            op,
            Op::Barrier
                | Op::Bcast
                | Op::Gather
                | Op::Gatherv
                | Op::Scatter
                | Op::Scatterv
                | Op::Allgather
                | Op::Allgatherv
                | Op::Alltoall
                | Op::Alltoallv
                | Op::Alltoallw
                | Op::Reduce
                | Op::Allreduce
                | Op::ReduceScatterBlock
        );
        if supported {
            return;
        }
        // Merged, so that one rank of both groups says it.
        let e = engine::get();
        let mut merged = e.c.comm_null;
        real::PMPI_Intercomm_merge(comm, 0, &mut merged);
        stop(
            merged,
            &format!(
            "{name} on an intercommunicator is not supported while virtual time is on (the shim \
             runs Barrier, Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v,w), Reduce, \
             Allreduce and Reduce_scatter_block there); stopping"
        ),
        );
    }
}

/// A hash of the algorithm choices, which start-up adds to the settings
/// every rank must share (0 when they are invalid: refused anyway).
pub fn config_hash() -> u64 {
    match CFG.get_or_init(|| CollCfg::from_vars(std::env::vars())) {
        Ok(c) => {
            let mut h = DefaultHasher::new();
            c.hash(&mut h);
            h.finish()
        }
        Err(_) => 0,
    }
}

/// Every rank must choose the same algorithms, or the collectives would
/// mismatch: checked natively once per communicator.
unsafe fn agree(dup: Comm, comm: Comm) {
    unsafe {
        let e = engine::get();
        let mut h = DefaultHasher::new();
        config(comm).hash(&mut h);
        let mine = h.finish();
        let (mut mx, mut mn) = (0u64, 0u64);
        real::PMPI_Allreduce(
            (&mine as *const u64).cast(),
            (&mut mx as *mut u64).cast(),
            1,
            e.c.uint64,
            e.c.op_max,
            dup,
        );
        real::PMPI_Allreduce(
            (&mine as *const u64).cast(),
            (&mut mn as *mut u64).cast(),
            1,
            e.c.uint64,
            e.c.op_min,
            dup,
        );
        if mx != mn {
            stop(
            comm,
            "the ranks were started with different LOGGP_COLL* settings; every rank must have the same",
        );
        }
    }
}

/// Forgets (and frees) the private duplicate of a communicator the
/// application is freeing.
unsafe fn forget(comm: Comm) {
    unsafe {
        // What the engine learned of the two (targeting): their handles may
        // name other communicators next. A duplicate still in use by a
        // collective in flight is merely learned again.
        engine::get().forget_comm(comm);
        forget_last();
        let en = comms().as_mut().and_then(|m| m.remove(&key(comm)));
        if let Some(en) = en {
            let Ok(mut dup) = dup_wait(&en.slot) else {
                return;
            };
            engine::get().forget_comm(dup);
            if nb::running() {
                // MPI lets a communicator be freed with collectives on it still
                // in flight; ours use the duplicate, freed when they are done.
                deferred().push(DupComm(dup));
            } else {
                real::PMPI_Comm_free(&mut dup);
            }
        }
    }
}

struct DupComm(Comm);
// SAFETY: a communicator handle is a plain value usable from any thread.
unsafe impl Send for DupComm {}

static DEFERRED: Mutex<Vec<DupComm>> = Mutex::new(Vec::new());

fn deferred() -> std::sync::MutexGuard<'static, Vec<DupComm>> {
    DEFERRED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frees the duplicates of freed communicators once no nonblocking
/// collective is in flight (called by `nb::progress_all` and `finalize`).
fn free_deferred() {
    if nb::running() {
        return;
    }
    let all = std::mem::take(&mut *deferred());
    for mut d in all {
        if let Some(e) = engine::get_opt() {
            e.forget_comm(d.0);
        }
        // SAFETY: a duplicate of ours, no longer used by any collective.
        unsafe {
            real::PMPI_Comm_free(&mut d.0);
        }
    }
}

/// Frees every private duplicate; to be called before the real
/// MPI_Finalize (MPI would reclaim them anyway).
#[allow(dead_code)] // Wired from init::before_finalize by the engine's owner.
pub unsafe fn finalize() {
    unsafe {
        forget_last();
        let all = comms().take();
        for (_, en) in all.into_iter().flatten() {
            if let Ok(mut dup) = dup_wait(&en.slot) {
                real::PMPI_Comm_free(&mut dup);
            }
        }
        free_deferred();
    }
}

mpi_fn!(MPI_Comm_free / PMPI_Comm_free (comm: *mut Comm) {
    if active() && !comm.is_null() {
        forget(*comm);
    }
    real::PMPI_Comm_free(comm)
});

mpi_fn!(MPI_Comm_disconnect / PMPI_Comm_disconnect (comm: *mut Comm) {
    if active() && !comm.is_null() {
        forget(*comm);
    }
    real::PMPI_Comm_disconnect(comm)
});

// ------------------------------------------------------------- dispatch

/// Runs `f` over the private duplicate, or returns `None` when the
/// operation is configured `native`.
unsafe fn run(op: Op, name: &str, comm: Comm, f: impl FnOnce(&Ctx, Choice) -> R) -> Option<c_int> {
    unsafe {
        let ch = config(comm).get(op);
        if ch.alg == Alg::Native {
            return None;
        }
        let c = match blocking_ctx(comm, name, op) {
            Ok(c) => c,
            // Raised already, by the library's call that failed on `comm`.
            Err(rc) => return Some(rc),
        };
        Some(match f(&c, ch) {
            Ok(()) => abi::SUCCESS,
            Err(rc) => raise(comm, rc, name),
        })
    }
}

unsafe fn bytes_of(n: c_int, dt: Datatype) -> usize {
    unsafe { ctx::Ty::of(dt).bytes(count(n)) }
}

/// The input of a reduction: `rbuf` when `sbuf` is MPI_IN_PLACE.
fn input(sbuf: *const c_void, rbuf: *mut c_void) -> *const c_void {
    if sbuf as usize == abi::IN_PLACE {
        rbuf.cast_const()
    } else {
        sbuf
    }
}

fn root_of(root: c_int) -> usize {
    count(root)
}

/// True when arguments that every rank passes alike are ones MPI must
/// reject (a negative count, a root outside the communicator): those calls
/// go to the library on every rank, which reports the error through the
/// communicator's error handler as usual. (Arguments significant on some
/// ranks only are not checked: one rank going native alone would hang.)
unsafe fn invalid(comm: Comm, counts: &[c_int], root: Option<c_int>) -> bool {
    unsafe {
        if counts.iter().any(|&n| n < 0) {
            return true;
        }
        let Some(root) = root else {
            return false;
        };
        // The communicator the last blocking collective ran on: its size is
        // known (no MPI_Comm_size).
        if last_of(comm).is_some_and(|(_, _, size)| (0..size).contains(&root)) {
            return false;
        }
        let mut size: c_int = 0;
        if real::PMPI_Comm_size(comm, &mut size) == abi::SUCCESS && (0..size).contains(&root) {
            return false;
        }
        // On an intercommunicator the root may be MPI_ROOT, MPI_PROC_NULL or
        // a rank of the remote group (checked by the collective itself).
        let mut inter: c_int = 0;
        real::PMPI_Comm_test_inter(comm, &mut inter) == abi::SUCCESS && inter == 0
    }
}

/// `invalid` for `n` elements of `dt` on every rank (Bcast, the
/// reductions and scans): also a datatype MPI refuses (MPI_DATATYPE_NULL,
/// or one not committed: `engine::refuses`), which a program passes alike
/// on every rank. Through the shim's algorithms the ranks whose sends MPI
/// refused would return the error while the others waited for ever (or
/// Open MPI 4.1 crashed staging it).
unsafe fn invalid_typed(comm: Comm, n: c_int, dt: Datatype, root: Option<c_int>) -> bool {
    // What the datatype is checked with: nothing is read from it (a send
    // to MPI_PROC_NULL), and it is not null, which MPICH would refuse
    // (the application's buffer may be null where it is not significant).
    static PROBE: u64 = 0;
    unsafe {
        invalid(comm, &[n], root)
            // Not where they are not significant: a rank of an
            // intercommunicator's root group other than the root.
            || (root != Some(abi::PROC_NULL)
                && engine::refuses(std::ptr::addr_of!(PROBE).cast(), n.into(), dt))
    }
}

// ------------------------------------------------------------- exports

mpi_fn!(MPI_Barrier / PMPI_Barrier (comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::Barrier, "MPI_Barrier", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::barrier(c));
            }
            nb::block_on(algo::barrier(c, resolve(Op::Barrier, ch, 0, c.p()).alg))
        }) {
            return rc;
        }
    }
    real::PMPI_Barrier(comm)
});

mpi_fn!(MPI_Bcast / PMPI_Bcast (buf: *mut c_void, n: c_int, dt: Datatype, root: c_int, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, Some(root)) {
        if let Some(rc) = run(Op::Bcast, "MPI_Bcast", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::bcast(c, buf, count(n), dt, root));
            }
            let ch = resolve(Op::Bcast, ch, bytes_of(n, dt), c.p());
            nb::block_on(algo::bcast(c, ch, buf, count(n), dt, root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Bcast(buf, n, dt, root, comm)
});

mpi_fn!(MPI_Reduce / PMPI_Reduce (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, root: c_int, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, Some(root)) {
        if let Some(rc) = run(Op::Reduce, "MPI_Reduce", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::reduce(c, sbuf, rbuf, count(n), dt, op, root));
            }
            let ch = resolve(Op::Reduce, ch, bytes_of(n, dt), c.p());
            nb::block_on(algo::reduce(c, ch, input(sbuf, rbuf), rbuf, count(n), dt, op, root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Reduce(sbuf, rbuf, n, dt, op, root, comm)
});

mpi_fn!(MPI_Allreduce / PMPI_Allreduce (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = run(Op::Allreduce, "MPI_Allreduce", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::allreduce(c, sbuf, rbuf, count(n), dt, op));
            }
            let ch = resolve(Op::Allreduce, ch, bytes_of(n, dt), c.p());
            nb::block_on(algo::allreduce(c, ch.alg, input(sbuf, rbuf), rbuf, count(n), dt, op))
        }) {
            return rc;
        }
    }
    real::PMPI_Allreduce(sbuf, rbuf, n, dt, op, comm)
});

fn bufs(
    sbuf: *const c_void,
    scount: c_int,
    sdt: Datatype,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Datatype,
) -> Bufs {
    Bufs {
        sbuf,
        scount: count(scount),
        sdt,
        rbuf,
        rcount: count(rcount),
        rdt,
    }
}

mpi_fn!(MPI_Gather / PMPI_Gather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm) {
    if active() && !invalid(comm, &[], Some(root)) {
        if let Some(rc) = run(Op::Gather, "MPI_Gather", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::gather(c, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), None, root));
            }
            let ch = resolve(Op::Gather, ch, 0, c.p());
            nb::block_on(algo::gather(c, ch.alg, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm)
});

mpi_fn!(MPI_Scatter / PMPI_Scatter (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm) {
    if active() && !invalid(comm, &[], Some(root)) {
        if let Some(rc) = run(Op::Scatter, "MPI_Scatter", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::scatter(c, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), None, root));
            }
            let ch = resolve(Op::Scatter, ch, 0, c.p());
            nb::block_on(algo::scatter(c, ch.alg, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm)
});

mpi_fn!(MPI_Allgather / PMPI_Allgather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::Allgather, "MPI_Allgather", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::allgather(c, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), None));
            }
            let ch = resolve(Op::Allgather, ch, 0, c.p());
            nb::block_on(algo::allgather(c, ch.alg, bufs(sbuf, scount, sdt, rbuf, rcount, rdt)))
        }) {
            return rc;
        }
    }
    real::PMPI_Allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
});

mpi_fn!(MPI_Alltoall / PMPI_Alltoall (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::Alltoall, "MPI_Alltoall", comm, |c, ch| {
            if c.inter {
                return nb::block_on(inter::alltoall(c, bufs(sbuf, scount, sdt, rbuf, rcount, rdt), None, None));
            }
            let ch = resolve(Op::Alltoall, ch, 0, c.p());
            nb::block_on(algo::alltoall(c, ch.alg, bufs(sbuf, scount, sdt, rbuf, rcount, rdt)))
        }) {
            return rc;
        }
    }
    real::PMPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
});

mpi_fn!(MPI_Gatherv / PMPI_Gatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, root: c_int, comm: Comm) {
    if active() && !invalid(comm, &[], Some(root)) {
        if let Some(rc) = run(Op::Gatherv, "MPI_Gatherv", comm, |c, _| {
            if c.inter {
                let v = V { counts: rcounts, displs };
                return nb::block_on(inter::gather(c, bufs(sbuf, scount, sdt, rbuf, 0, rdt), Some(v), root));
            }
            nb::block_on(algo::gatherv(c, bufs(sbuf, scount, sdt, rbuf, 0, rdt), rcounts, displs, root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm)
});

mpi_fn!(MPI_Scatterv / PMPI_Scatterv (sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm) {
    if active() && !invalid(comm, &[], Some(root)) {
        if let Some(rc) = run(Op::Scatterv, "MPI_Scatterv", comm, |c, _| {
            if c.inter {
                let v = V { counts: scounts, displs };
                return nb::block_on(inter::scatter(c, bufs(sbuf, 0, sdt, rbuf, rcount, rdt), Some(v), root));
            }
            nb::block_on(algo::scatterv(c, bufs(sbuf, 0, sdt, rbuf, rcount, rdt), scounts, displs, root_of(root)))
        }) {
            return rc;
        }
    }
    real::PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm)
});

mpi_fn!(MPI_Allgatherv / PMPI_Allgatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::Allgatherv, "MPI_Allgatherv", comm, |c, _| {
            if c.inter {
                let v = V { counts: rcounts, displs };
                return nb::block_on(inter::allgather(c, bufs(sbuf, scount, sdt, rbuf, 0, rdt), Some(v)));
            }
            nb::block_on(algo::allgatherv(c, bufs(sbuf, scount, sdt, rbuf, 0, rdt), rcounts, displs))
        }) {
            return rc;
        }
    }
    real::PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm)
});

mpi_fn!(MPI_Alltoallv / PMPI_Alltoallv (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::Alltoallv, "MPI_Alltoallv", comm, |c, _| {
            if c.inter {
                let (sv, rv) = (V { counts: scounts, displs: sdispls }, V { counts: rcounts, displs: rdispls });
                return nb::block_on(inter::alltoall(c, bufs(sbuf, 0, sdt, rbuf, 0, rdt), Some(sv), Some(rv)));
            }
            nb::block_on(algo::alltoallv(
                c,
                bufs(sbuf, 0, sdt, rbuf, 0, rdt),
                V { counts: scounts, displs: sdispls },
                V { counts: rcounts, displs: rdispls },
            ))
        }) {
            return rc;
        }
    }
    real::PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm)
});

mpi_fn!(MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = run(Op::ReduceScatterBlock, "MPI_Reduce_scatter_block", comm, |c, _| {
            if c.inter {
                return nb::block_on(inter::reduce_scatter_block(c, sbuf, rbuf, count(n), dt, op));
            }
            let counts = vec![count(n); c.p()];
            nb::block_on(algo::reduce_scatter(c, sbuf, rbuf, &counts, dt, op))
        }) {
            return rc;
        }
    }
    real::PMPI_Reduce_scatter_block(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Reduce_scatter / PMPI_Reduce_scatter (sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() {
        if let Some(rc) = run(Op::ReduceScatter, "MPI_Reduce_scatter", comm, |c, _| {
            let counts: Vec<usize> = (0..c.p()).map(|i| count(*rcounts.add(i))).collect();
            nb::block_on(algo::reduce_scatter(c, sbuf, rbuf, &counts, dt, op))
        }) {
            return rc;
        }
    }
    real::PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm)
});

mpi_fn!(MPI_Scan / PMPI_Scan (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = run(Op::Scan, "MPI_Scan", comm, |c, ch| {
            let ch = resolve(Op::Scan, ch, 0, c.p());
            nb::block_on(algo::scan(c, ch.alg, sbuf, rbuf, count(n), dt, op, false))
        }) {
            return rc;
        }
    }
    real::PMPI_Scan(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Exscan / PMPI_Exscan (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = run(Op::Exscan, "MPI_Exscan", comm, |c, ch| {
            let ch = resolve(Op::Exscan, ch, 0, c.p());
            nb::block_on(algo::scan(c, ch.alg, sbuf, rbuf, count(n), dt, op, true))
        }) {
            return rc;
        }
    }
    real::PMPI_Exscan(sbuf, rbuf, n, dt, op, comm)
});

// ------------------------------------------------- nonblocking collectives

/// Starts the nonblocking form of `op`: the job awaits the private
/// duplicate, then runs `f` (which owns its context). `None` when the
/// operation is configured `native`.
unsafe fn start<F, Fut>(
    op: Op,
    name: &'static str,
    comm: Comm,
    req: *mut abi::Request,
    f: F,
) -> Option<c_int>
where
    F: FnOnce(Ctx, Choice) -> Fut + 'static,
    Fut: std::future::Future<Output = R> + 'static,
{
    unsafe {
        if req.is_null() {
            return None;
        }
        let ch = config(comm).get(op);
        if ch.alg == Alg::Native {
            return None;
        }
        let (mut c, slot) = match ctx(comm, name, op, true) {
            Ok(c) => c,
            Err(rc) => return Some(rc),
        };
        let job = async move {
            c.comm = dup_ready(slot).await?;
            f(c, ch).await
        };
        // An error of the job is raised on `comm` when the application
        // completes the request (`nb::finish`).
        Some(nb::spawn(Box::pin(job), req, comm, name))
    }
}

mpi_fn!(MPI_Ibarrier / PMPI_Ibarrier (comm: Comm, req: *mut abi::Request) {
    if active() {
        if let Some(rc) = start(Op::Barrier, "MPI_Ibarrier", comm, req, |c, ch| async move {
            if c.inter {
                return inter::barrier(&c).await;
            }
            algo::barrier(&c, resolve(Op::Barrier, ch, 0, c.p()).alg).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ibarrier(comm, req)
});

mpi_fn!(MPI_Ibcast / PMPI_Ibcast (buf: *mut c_void, n: c_int, dt: Datatype, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, Some(root)) {
        let bytes = bytes_of(n, dt);
        if let Some(rc) = start(Op::Bcast, "MPI_Ibcast", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::bcast(&c, buf, count(n), dt, root).await;
            }
            let ch = resolve(Op::Bcast, ch, bytes, c.p());
            algo::bcast(&c, ch, buf, count(n), dt, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ibcast(buf, n, dt, root, comm, req)
});

mpi_fn!(MPI_Ireduce / PMPI_Ireduce (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, Some(root)) {
        let bytes = bytes_of(n, dt);
        if let Some(rc) = start(Op::Reduce, "MPI_Ireduce", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::reduce(&c, sbuf, rbuf, count(n), dt, op, root).await;
            }
            let ch = resolve(Op::Reduce, ch, bytes, c.p());
            algo::reduce(&c, ch, input(sbuf, rbuf), rbuf, count(n), dt, op, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ireduce(sbuf, rbuf, n, dt, op, root, comm, req)
});

mpi_fn!(MPI_Iallreduce / PMPI_Iallreduce (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, None) {
        let bytes = bytes_of(n, dt);
        if let Some(rc) = start(Op::Allreduce, "MPI_Iallreduce", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::allreduce(&c, sbuf, rbuf, count(n), dt, op).await;
            }
            let ch = resolve(Op::Allreduce, ch, bytes, c.p());
            algo::allreduce(&c, ch.alg, input(sbuf, rbuf), rbuf, count(n), dt, op).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iallreduce(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Igather / PMPI_Igather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid(comm, &[], Some(root)) {
        let b = bufs(sbuf, scount, sdt, rbuf, rcount, rdt);
        if let Some(rc) = start(Op::Gather, "MPI_Igather", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::gather(&c, b, None, root).await;
            }
            let ch = resolve(Op::Gather, ch, 0, c.p());
            algo::gather(&c, ch.alg, b, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Igather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, req)
});

mpi_fn!(MPI_Iscatter / PMPI_Iscatter (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid(comm, &[], Some(root)) {
        let b = bufs(sbuf, scount, sdt, rbuf, rcount, rdt);
        if let Some(rc) = start(Op::Scatter, "MPI_Iscatter", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::scatter(&c, b, None, root).await;
            }
            let ch = resolve(Op::Scatter, ch, 0, c.p());
            algo::scatter(&c, ch.alg, b, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iscatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, req)
});

mpi_fn!(MPI_Iallgather / PMPI_Iallgather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() {
        let b = bufs(sbuf, scount, sdt, rbuf, rcount, rdt);
        if let Some(rc) = start(Op::Allgather, "MPI_Iallgather", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::allgather(&c, b, None).await;
            }
            let ch = resolve(Op::Allgather, ch, 0, c.p());
            algo::allgather(&c, ch.alg, b).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iallgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, req)
});

mpi_fn!(MPI_Ialltoall / PMPI_Ialltoall (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() {
        let b = bufs(sbuf, scount, sdt, rbuf, rcount, rdt);
        if let Some(rc) = start(Op::Alltoall, "MPI_Ialltoall", comm, req, move |c, ch| async move {
            if c.inter {
                return inter::alltoall(&c, b, None, None).await;
            }
            let ch = resolve(Op::Alltoall, ch, 0, c.p());
            algo::alltoall(&c, ch.alg, b).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ialltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, req)
});

mpi_fn!(MPI_Igatherv / PMPI_Igatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid(comm, &[], Some(root)) {
        let b = bufs(sbuf, scount, sdt, rbuf, 0, rdt);
        if let Some(rc) = start(Op::Gatherv, "MPI_Igatherv", comm, req, move |c, _| async move {
            if c.inter {
                return inter::gather(&c, b, Some(V { counts: rcounts, displs }), root).await;
            }
            algo::gatherv(&c, b, rcounts, displs, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Igatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm, req)
});

mpi_fn!(MPI_Iscatterv / PMPI_Iscatterv (sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid(comm, &[], Some(root)) {
        let b = bufs(sbuf, 0, sdt, rbuf, rcount, rdt);
        if let Some(rc) = start(Op::Scatterv, "MPI_Iscatterv", comm, req, move |c, _| async move {
            if c.inter {
                return inter::scatter(&c, b, Some(V { counts: scounts, displs }), root).await;
            }
            algo::scatterv(&c, b, scounts, displs, root_of(root)).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iscatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm, req)
});

mpi_fn!(MPI_Iallgatherv / PMPI_Iallgatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() {
        let b = bufs(sbuf, scount, sdt, rbuf, 0, rdt);
        if let Some(rc) = start(Op::Allgatherv, "MPI_Iallgatherv", comm, req, move |c, _| async move {
            if c.inter {
                return inter::allgather(&c, b, Some(V { counts: rcounts, displs })).await;
            }
            algo::allgatherv(&c, b, rcounts, displs).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iallgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, req)
});

mpi_fn!(MPI_Ialltoallv / PMPI_Ialltoallv (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() {
        let b = bufs(sbuf, 0, sdt, rbuf, 0, rdt);
        if let Some(rc) = start(Op::Alltoallv, "MPI_Ialltoallv", comm, req, move |c, _| async move {
            if c.inter {
                let (sv, rv) = (V { counts: scounts, displs: sdispls }, V { counts: rcounts, displs: rdispls });
                return inter::alltoall(&c, b, Some(sv), Some(rv)).await;
            }
            algo::alltoallv(
                &c,
                b,
                V { counts: scounts, displs: sdispls },
                V { counts: rcounts, displs: rdispls },
            )
            .await
        }) {
            return rc;
        }
    }
    real::PMPI_Ialltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, req)
});

mpi_fn!(MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = start(Op::ReduceScatterBlock, "MPI_Ireduce_scatter_block", comm, req, move |c, _| async move {
            if c.inter {
                return inter::reduce_scatter_block(&c, sbuf, rbuf, count(n), dt, op).await;
            }
            let counts = vec![count(n); c.p()];
            algo::reduce_scatter(&c, sbuf, rbuf, &counts, dt, op).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ireduce_scatter_block(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Ireduce_scatter / PMPI_Ireduce_scatter (sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Datatype, op: MpiOp, comm: Comm, req: *mut abi::Request) {
    if active() {
        if let Some(rc) = start(Op::ReduceScatter, "MPI_Ireduce_scatter", comm, req, move |c, _| async move {
            let counts: Vec<usize> = (0..c.p()).map(|i| count(*rcounts.add(i))).collect();
            algo::reduce_scatter(&c, sbuf, rbuf, &counts, dt, op).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, req)
});

mpi_fn!(MPI_Iscan / PMPI_Iscan (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = start(Op::Scan, "MPI_Iscan", comm, req, move |c, ch| async move {
            let ch = resolve(Op::Scan, ch, 0, c.p());
            algo::scan(&c, ch.alg, sbuf, rbuf, count(n), dt, op, false).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iscan(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Iexscan / PMPI_Iexscan (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Datatype, op: MpiOp, comm: Comm, req: *mut abi::Request) {
    if active() && !invalid_typed(comm, n, dt, None) {
        if let Some(rc) = start(Op::Exscan, "MPI_Iexscan", comm, req, move |c, ch| async move {
            let ch = resolve(Op::Exscan, ch, 0, c.p());
            algo::scan(&c, ch.alg, sbuf, rbuf, count(n), dt, op, true).await
        }) {
            return rc;
        }
    }
    real::PMPI_Iexscan(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Alltoallw / PMPI_Alltoallw (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rtypes: *const Datatype, comm: Comm) {
    if active() {
        let (s, r) = (
            W { counts: scounts, displs: sdispls, types: stypes },
            W { counts: rcounts, displs: rdispls, types: rtypes },
        );
        if let Some(rc) = run(Op::Alltoallw, "MPI_Alltoallw", comm, |c, _| {
            if c.inter {
                return nb::block_on(inter::alltoallw(c, sbuf, s, rbuf, r));
            }
            nb::block_on(algo::alltoallw(c, sbuf, s, rbuf, r))
        }) {
            return rc;
        }
    }
    real::PMPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm)
});

mpi_fn!(MPI_Ialltoallw / PMPI_Ialltoallw (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rtypes: *const Datatype, comm: Comm, req: *mut abi::Request) {
    if active() {
        let (s, r) = (
            W { counts: scounts, displs: sdispls, types: stypes },
            W { counts: rcounts, displs: rdispls, types: rtypes },
        );
        if let Some(rc) = start(Op::Alltoallw, "MPI_Ialltoallw", comm, req, move |c, _| async move {
            if c.inter {
                return inter::alltoallw(&c, sbuf, s, rbuf, r).await;
            }
            algo::alltoallw(&c, sbuf, s, rbuf, r).await
        }) {
            return rc;
        }
    }
    real::PMPI_Ialltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req)
});

// ------------------------------------------------ neighbourhood collectives

/// The neighbours of a topology communicator in the standard's order
/// (MPI-3.1 §7.6); `None` when `comm` has no topology (the library then
/// reports the error).
struct Nbrs {
    src: Vec<c_int>,
    dst: Vec<c_int>,
    cart: bool,
}

unsafe fn neighbours(comm: Comm) -> Option<Nbrs> {
    unsafe {
        let mut kind: c_int = abi::UNDEFINED;
        if real::PMPI_Topo_test(comm, &mut kind) != abi::SUCCESS {
            return None;
        }
        if kind == abi::CART {
            let mut nd: c_int = 0;
            real::PMPI_Cartdim_get(comm, &mut nd);
            let mut v = Vec::new();
            for d in 0..nd {
                let (mut s, mut t) = (abi::PROC_NULL, abi::PROC_NULL);
                real::PMPI_Cart_shift(comm, d, 1, &mut s, &mut t);
                v.push(s);
                v.push(t);
            }
            Some(Nbrs {
                src: v.clone(),
                dst: v,
                cart: true,
            })
        } else if kind == abi::GRAPH {
            let (mut r, mut n): (c_int, c_int) = (0, 0);
            real::PMPI_Comm_rank(comm, &mut r);
            real::PMPI_Graph_neighbors_count(comm, r, &mut n);
            let mut v = vec![0; count(n).max(1)];
            real::PMPI_Graph_neighbors(comm, r, n, v.as_mut_ptr());
            v.truncate(count(n));
            Some(Nbrs {
                src: v.clone(),
                dst: v,
                cart: false,
            })
        } else if kind == abi::DIST_GRAPH {
            let (mut i, mut o, mut w): (c_int, c_int, c_int) = (0, 0, 0);
            real::PMPI_Dist_graph_neighbors_count(comm, &mut i, &mut o, &mut w);
            let (ni, no) = (count(i), count(o));
            let (mut src, mut sw) = (vec![0; ni.max(1)], vec![0; ni.max(1)]);
            let (mut dst, mut dw) = (vec![0; no.max(1)], vec![0; no.max(1)]);
            real::PMPI_Dist_graph_neighbors(
                comm,
                i,
                src.as_mut_ptr(),
                sw.as_mut_ptr(),
                o,
                dst.as_mut_ptr(),
                dw.as_mut_ptr(),
            );
            src.truncate(ni);
            dst.truncate(no);
            Some(Nbrs {
                src,
                dst,
                cart: false,
            })
        } else {
            None
        }
    }
}

/// The blocks of one side: `n(i) × dt(i)` at `at(i)` for each neighbour.
fn blocks(
    k: usize,
    at: impl Fn(usize) -> *mut c_void,
    n: impl Fn(usize) -> usize,
    dt: impl Fn(usize) -> Datatype,
) -> Vec<Blk> {
    (0..k)
        .map(|i| Blk {
            p: at(i),
            n: n(i),
            dt: dt(i),
        })
        .collect()
}

/// Runs (blocking, `req` null) or starts a neighbourhood collective over
/// the blocks that `mk` lays out for the neighbours; `None`: go native.
unsafe fn neighbor(
    name: &'static str,
    comm: Comm,
    req: *mut abi::Request,
    mk: impl FnOnce(&Nbrs) -> (Vec<Blk>, Vec<Blk>),
) -> Option<c_int> {
    unsafe {
        let nb = neighbours(comm)?;
        let (recvs, sends) = mk(&nb);
        if req.is_null() {
            run(Op::Neighbor, name, comm, |c, _| {
                nb::block_on(algo::neighbor(c, &nb.src, &nb.dst, nb.cart, &recvs, &sends))
            })
        } else {
            start(Op::Neighbor, name, comm, req, move |c, _| async move {
                algo::neighbor(&c, &nb.src, &nb.dst, nb.cart, &recvs, &sends).await
            })
        }
    }
}

/// Neighbor_allgather(v): the send buffer to every destination; slot `j`
/// at `rdisp(j)` elements of `rdt`, `rn(j)` of them.
unsafe fn nbr_allgather(
    name: &'static str,
    comm: Comm,
    req: *mut abi::Request,
    (sbuf, scount, sdt): (*const c_void, c_int, Datatype),
    rbuf: *mut c_void,
    rdisp: impl Fn(usize) -> isize,
    rn: impl Fn(usize) -> usize,
    rdt: Datatype,
) -> Option<c_int> {
    unsafe {
        let rt = ctx::Ty::of(rdt);
        neighbor(name, comm, req, |nb| {
            let at = |j| rbuf.wrapping_byte_offset(rdisp(j).wrapping_mul(rt.ext));
            let recvs = blocks(nb.src.len(), at, &rn, |_| rdt);
            let sends = blocks(
                nb.dst.len(),
                |_| sbuf.cast_mut(),
                |_| count(scount),
                |_| sdt,
            );
            (recvs, sends)
        })
    }
}

/// Neighbor_alltoall(v): block `i` at `sdisp(i)` elements of `sdt`,
/// `sn(i)` of them, to destination `i`; likewise for the receive slots.
unsafe fn nbr_alltoall(
    name: &'static str,
    comm: Comm,
    req: *mut abi::Request,
    (sbuf, sdt): (*const c_void, Datatype),
    sdisp: impl Fn(usize) -> isize,
    sn: impl Fn(usize) -> usize,
    (rbuf, rdt): (*mut c_void, Datatype),
    rdisp: impl Fn(usize) -> isize,
    rn: impl Fn(usize) -> usize,
) -> Option<c_int> {
    unsafe {
        let (st, rt) = (ctx::Ty::of(sdt), ctx::Ty::of(rdt));
        neighbor(name, comm, req, |nb| {
            let rat = |j| rbuf.wrapping_byte_offset(rdisp(j).wrapping_mul(rt.ext));
            let sat = |i| {
                sbuf.cast_mut()
                    .wrapping_byte_offset(sdisp(i).wrapping_mul(st.ext))
            };
            let recvs = blocks(nb.src.len(), rat, &rn, |_| rdt);
            let sends = blocks(nb.dst.len(), sat, &sn, |_| sdt);
            (recvs, sends)
        })
    }
}

/// Neighbor_alltoallw: byte displacements and a type per block.
unsafe fn nbr_alltoallw(
    name: &'static str,
    comm: Comm,
    req: *mut abi::Request,
    (sbuf, scounts, sdispls, stypes): (
        *const c_void,
        *const c_int,
        *const abi::Aint,
        *const Datatype,
    ),
    (rbuf, rcounts, rdispls, rtypes): (
        *mut c_void,
        *const c_int,
        *const abi::Aint,
        *const Datatype,
    ),
) -> Option<c_int> {
    unsafe {
        neighbor(name, comm, req, |nb| {
            let recvs = blocks(
                nb.src.len(),
                |j| rbuf.wrapping_byte_offset(*rdispls.add(j)),
                |j| count(*rcounts.add(j)),
                |j| *rtypes.add(j),
            );
            let sends = blocks(
                nb.dst.len(),
                |i| sbuf.cast_mut().wrapping_byte_offset(*sdispls.add(i)),
                |i| count(*scounts.add(i)),
                |i| *stypes.add(i),
            );
            (recvs, sends)
        })
    }
}

/// Element offset `i · n` of fixed-size blocks.
fn fixed(n: c_int) -> (impl Fn(usize) -> isize, impl Fn(usize) -> usize) {
    let n = count(n);
    (move |i: usize| (i * n) as isize, move |_: usize| n)
}

/// Element offset and count `i` of vector arguments.
unsafe fn vector(
    counts: *const c_int,
    displs: *const c_int,
) -> (impl Fn(usize) -> isize, impl Fn(usize) -> usize) {
    unsafe {
        (
            move |i: usize| *displs.add(i) as isize,
            move |i: usize| count(*counts.add(i)),
        )
    }
}

mpi_fn!(MPI_Neighbor_allgather / PMPI_Neighbor_allgather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm) {
    let (d, n) = fixed(rcount);
    if active() {
        if let Some(rc) = nbr_allgather("MPI_Neighbor_allgather", comm, std::ptr::null_mut(), (sbuf, scount, sdt), rbuf, d, n, rdt) {
            return rc;
        }
    }
    real::PMPI_Neighbor_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
});

mpi_fn!(MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    let (d, n) = fixed(rcount);
    if active() && !req.is_null() {
        if let Some(rc) = nbr_allgather("MPI_Ineighbor_allgather", comm, req, (sbuf, scount, sdt), rbuf, d, n, rdt) {
            return rc;
        }
    }
    real::PMPI_Ineighbor_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, req)
});

mpi_fn!(MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm) {
    if active() {
        let (d, n) = vector(rcounts, displs);
        if let Some(rc) = nbr_allgather("MPI_Neighbor_allgatherv", comm, std::ptr::null_mut(), (sbuf, scount, sdt), rbuf, d, n, rdt) {
            return rc;
        }
    }
    real::PMPI_Neighbor_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm)
});

mpi_fn!(MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() && !req.is_null() {
        let (d, n) = vector(rcounts, displs);
        if let Some(rc) = nbr_allgather("MPI_Ineighbor_allgatherv", comm, req, (sbuf, scount, sdt), rbuf, d, n, rdt) {
            return rc;
        }
    }
    real::PMPI_Ineighbor_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, req)
});

mpi_fn!(MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm) {
    if active() {
        let ((sd, sn), (rd, rn)) = (fixed(scount), fixed(rcount));
        if let Some(rc) = nbr_alltoall("MPI_Neighbor_alltoall", comm, std::ptr::null_mut(), (sbuf, sdt), sd, sn, (rbuf, rdt), rd, rn) {
            return rc;
        }
    }
    real::PMPI_Neighbor_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm)
});

mpi_fn!(MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall (sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() && !req.is_null() {
        let ((sd, sn), (rd, rn)) = (fixed(scount), fixed(rcount));
        if let Some(rc) = nbr_alltoall("MPI_Ineighbor_alltoall", comm, req, (sbuf, sdt), sd, sn, (rbuf, rdt), rd, rn) {
            return rc;
        }
    }
    real::PMPI_Ineighbor_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, req)
});

mpi_fn!(MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm) {
    if active() {
        let ((sd, sn), (rd, rn)) = (vector(scounts, sdispls), vector(rcounts, rdispls));
        if let Some(rc) = nbr_alltoall("MPI_Neighbor_alltoallv", comm, std::ptr::null_mut(), (sbuf, sdt), sd, sn, (rbuf, rdt), rd, rn) {
            return rc;
        }
    }
    real::PMPI_Neighbor_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm)
});

mpi_fn!(MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm, req: *mut abi::Request) {
    if active() && !req.is_null() {
        let ((sd, sn), (rd, rn)) = (vector(scounts, sdispls), vector(rcounts, rdispls));
        if let Some(rc) = nbr_alltoall("MPI_Ineighbor_alltoallv", comm, req, (sbuf, sdt), sd, sn, (rbuf, rdt), rd, rn) {
            return rc;
        }
    }
    real::PMPI_Ineighbor_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, req)
});

mpi_fn!(MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw (sbuf: *const c_void, scounts: *const c_int, sdispls: *const abi::Aint, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const abi::Aint, rtypes: *const Datatype, comm: Comm) {
    if active() {
        let (s, r) = ((sbuf, scounts, sdispls, stypes), (rbuf, rcounts, rdispls, rtypes));
        if let Some(rc) = nbr_alltoallw("MPI_Neighbor_alltoallw", comm, std::ptr::null_mut(), s, r) {
            return rc;
        }
    }
    real::PMPI_Neighbor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm)
});

mpi_fn!(MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw (sbuf: *const c_void, scounts: *const c_int, sdispls: *const abi::Aint, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const abi::Aint, rtypes: *const Datatype, comm: Comm, req: *mut abi::Request) {
    if active() && !req.is_null() {
        let (s, r) = ((sbuf, scounts, sdispls, stypes), (rbuf, rcounts, rdispls, rtypes));
        if let Some(rc) = nbr_alltoallw("MPI_Ineighbor_alltoallw", comm, req, s, r) {
            return rc;
        }
    }
    real::PMPI_Ineighbor_alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm, req)
});

#[cfg(test)]
mod tests {
    use super::dup_name;

    #[test]
    fn dup_name_keeps_the_suffix_within_the_limit() {
        assert_eq!(
            dup_name("MPI_COMM_WORLD", 63),
            "MPI_COMM_WORLD (loggp-shim collective)"
        );
        let long = "x".repeat(100);
        let n = dup_name(&long, 63);
        assert_eq!(n.len(), 63);
        assert!(n.ends_with(" (loggp-shim collective)"));
        // Cut on a character boundary.
        let n = dup_name(&"é".repeat(40), 40);
        assert!(n.len() <= 40 && n.ends_with(" (loggp-shim collective)"));
    }
}
