//! The engine's view of the shim's nonblocking jobs (the nonblocking
//! collectives of `coll::nb`, and Isendrecv pairs). The engine progresses
//! and completes them inside its own completion calls, but does not know
//! what they are: `coll::nb` registers its functions at start-up
//! (`register`, from `init`), and counts its unfinished jobs in `RUNNING`.
//! So the engine imports nothing of `coll`, while `coll` stands on the
//! engine: no import circle.

use crate::abi::{self, Request, Status};
use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// What the engine asks of the job runner (see `coll::nb` for each).
pub struct Hooks {
    /// Advances every unfinished job once.
    pub progress_all: fn(),
    /// Runs the job of a request key to its end with steps that wait
    /// natively, where that is safe; whether it did.
    pub drive: fn(usize) -> bool,
    /// Whether the job of a request key has finished.
    pub done: fn(usize) -> bool,
    /// The finished job's result (and status), which is forgotten.
    pub finish: fn(usize, &mut Status) -> c_int,
    /// The application freed the job's request.
    pub orphan: fn(usize),
    /// Runs an Isendrecv's two requests as one job of `*req`.
    pub spawn_pair: unsafe fn([Request; 2], Vec<u8>, *mut Request) -> c_int,
}

static HOOKS: OnceLock<&'static Hooks> = OnceLock::new();

/// Unfinished jobs, kept by the runner: the whole cost of a hook when none
/// is (one relaxed load).
pub static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Makes `h` the job runner (once).
pub fn register(h: &'static Hooks) {
    let _ = HOOKS.set(h);
}

/// True while some job is unfinished.
#[inline]
pub fn running() -> bool {
    RUNNING.load(Ordering::Relaxed) > 0
}

/// Nonblocking receives whose header may come alone (`MAGIC_SPLIT`) and
/// whose payload's receive is not yet posted (`Engine::watch_split`).
pub static WATCHED: AtomicUsize = AtomicUsize::new(0);

/// True while a blocking call must not block inside MPI: a job needs
/// progress, or a watched receive may need its payload's receive posted
/// (its sender's payload waits for it; this rank waiting natively for
/// anything else could then wait for ever).
#[inline]
pub fn must_poll() -> bool {
    running() || WATCHED.load(Ordering::Relaxed) > 0
}

pub fn progress_all() {
    if running() {
        if let Some(h) = HOOKS.get() {
            (h.progress_all)();
        }
    }
    if WATCHED.load(Ordering::Relaxed) > 0 {
        super::get().progress_splits();
    }
}

/// MPI_Wait on the request of job `k`: runs it to its end with steps that
/// wait natively, as a blocking collective's do, when it is the only
/// thing that needs progress (`coll::nb::drive`). False: the caller polls.
pub fn drive(k: usize) -> bool {
    WATCHED.load(Ordering::Relaxed) == 0 && HOOKS.get().is_some_and(|h| (h.drive)(k))
}

pub fn done(k: usize) -> bool {
    HOOKS.get().is_none_or(|h| (h.done)(k))
}

pub fn finish(k: usize, st: &mut Status) -> c_int {
    HOOKS.get().map_or(abi::SUCCESS, |h| (h.finish)(k, st))
}

pub fn orphan(k: usize) {
    if let Some(h) = HOOKS.get() {
        (h.orphan)(k);
    }
}

/// # Safety
/// As `coll::nb::spawn_pair`: live requests of the engine, `req` writable.
#[cfg_attr(ompi, allow(dead_code))] // MPI_Isendrecv is MPICH's alone (MPI-4).
pub unsafe fn spawn_pair(reqs: [Request; 2], keep: Vec<u8>, req: *mut Request) -> c_int {
    match HOOKS.get() {
        // SAFETY: as this function's.
        Some(h) => unsafe { (h.spawn_pair)(reqs, keep, req) },
        None => abi::ERR_OTHER,
    }
}
