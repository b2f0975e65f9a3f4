//! Nonblocking collectives: a collective in flight is a future (the same
//! `async` algorithm text as the blocking one, over nonblocking sends and
//! receives) advanced by a progress hook.
//!
//! The application holds a generalized request (MPI_Grequest_start; a
//! PROC_NULL receive would not do: Open MPI hands out one shared request
//! object for all of those), entered in the engine's request table as
//! `Pending::Coll`, and completed (MPI_Grequest_complete) when the future
//! finishes. Its completion returns the future's error code, raised on the
//! application's communicator (its error handler runs), as a native
//! nonblocking collective's is.
//!
//! Progress: MPI only promises that an operation progresses while the
//! process is inside MPI. So every collective in flight is advanced by
//! `progress_all`, which the engine calls from every completion call (Wait,
//! Test and their any/all/some forms, request status), from probes, and from
//! the loops of blocking sends and receives, which it runs nonblocking
//! while anything is in flight: a rank blocked in MPI_Recv must still
//! forward its part of an Ibcast the sender is waiting for, as MPI's
//! progress rule requires.

use super::ctx::R;
use crate::abi::{self, key, Comm, Request, Status};
use crate::engine;
use crate::real;
use std::cell::Cell;
use std::ffi::c_int;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

type Fut = Pin<Box<dyn Future<Output = R>>>;

struct Job {
    /// The application's request.
    req: Request,
    /// The application's communicator, on which an error is raised, and
    /// the collective's name.
    comm: Comm,
    name: &'static str,
    /// The collective; `None` once finished.
    fut: Option<Fut>,
    /// Its result once finished.
    rc: Option<c_int>,
    /// The application freed the request (MPI_Request_free): the job runs
    /// to completion and is then forgotten.
    orphan: bool,
    /// The status its completion reports (an Isendrecv's receive), written
    /// by the future; a collective's is empty.
    status: Option<Arc<Mutex<Status>>>,
}

// SAFETY: the futures hold raw pointers to application buffers and MPI
// handles, which MPI lets any thread use; a job is only polled under its
// own mutex.
unsafe impl Send for Job {}

/// Jobs in the order they were started (their key is the request's).
static JOBS: Mutex<Jobs> = Mutex::new(Vec::new());
// Jobs not yet finished are counted where the engine reads them (the
// whole cost of its hook when none is).
use crate::engine::jobs::RUNNING;

/// What the engine calls (`engine::jobs`): it progresses and completes the
/// jobs without importing this module.
static HOOKS: crate::engine::jobs::Hooks = crate::engine::jobs::Hooks {
    progress_all,
    drive,
    done,
    finish,
    orphan,
    spawn_pair,
};

/// Hands the engine this runner's functions (`init`, at start-up).
pub fn register() {
    crate::engine::jobs::register(&HOOKS);
}

/// Jobs by request key: `JOBS`, and `progress_all`'s snapshot of those it
/// polls (taken out of `JOBS`, whose lock a job may need while it runs).
type Jobs = Vec<(usize, Arc<Mutex<Job>>)>;

thread_local! {
    /// Set while this thread is polling jobs: a job's own completion calls
    /// must not re-enter the hook.
    static POLLING: Cell<bool> = const { Cell::new(false) };
    /// Set while `drive` polls a job: its steps wait natively
    /// (`ctx::Done`).
    static DRIVING: Cell<bool> = const { Cell::new(false) };
    /// `progress_all`'s snapshot, kept with its capacity: one allocation
    /// per thread, not one per poll (`NB=1 scripts/bench-instr-coll.sh`).
    static SNAPSHOT: Cell<Jobs> = const { Cell::new(Vec::new()) };
}

fn jobs() -> MutexGuard<'static, Jobs> {
    JOBS.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock(j: &Mutex<Job>) -> MutexGuard<'_, Job> {
    j.lock().unwrap_or_else(|e| e.into_inner())
}

/// True while some nonblocking collective of this process is unfinished.
#[inline]
pub fn running() -> bool {
    crate::engine::jobs::running()
}

/// Starts `fut` as the nonblocking collective of request `*req` on the
/// application's `comm`, and advances it once (so that its first messages
/// leave in the initiating call, as a native library's would).
pub unsafe fn spawn(fut: Fut, req: *mut Request, comm: Comm, name: &'static str) -> c_int {
    unsafe { spawn_with(fut, req, comm, name, None) }
}

/// Completes when both requests of an Isendrecv (`[send, recv]`, the
/// engine's) have completed in the emulated machine; the receive's status
/// goes to `st`.
#[cfg_attr(ompi, allow(dead_code))] // MPI_Isendrecv is MPICH's alone (MPI-4).
struct Pair {
    reqs: [Request; 2],
    st: Arc<Mutex<Status>>,
}

impl Future for Pair {
    type Output = R;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<R> {
        let mut flag: c_int = 0;
        let mut sts = [Status::zeroed(); 2];
        // SAFETY: the requests are live requests made by the engine.
        let rc = unsafe {
            engine::get().testall(2, self.reqs.as_mut_ptr(), &mut flag, sts.as_mut_ptr())
        };
        if flag == 0 && rc == abi::SUCCESS {
            return Poll::Pending;
        }
        *self.st.lock().unwrap_or_else(|e| e.into_inner()) = sts[1];
        match engine::Engine::pair_rc(rc, &sts) {
            abi::SUCCESS => Poll::Ready(Ok(())),
            e => Poll::Ready(Err(e)),
        }
    }
}

/// Runs an Isendrecv's two requests as a job of request `*req`; `keep`
/// (the packed copy of an Isendrecv_replace) lives until it completes. Its
/// error is returned by the completion call, as a point-to-point error, not
/// raised as a collective's (no communicator is named).
pub unsafe fn spawn_pair(reqs: [Request; 2], keep: Vec<u8>, req: *mut Request) -> c_int {
    unsafe {
        let st = Arc::new(Mutex::new(Status::zeroed()));
        let pair = Pair {
            reqs,
            st: st.clone(),
        };
        let fut = async move {
            let _keep = keep;
            pair.await
        };
        let null = engine::get().c.comm_null;
        spawn_with(Box::pin(fut), req, null, "MPI_Isendrecv", Some(st))
    }
}

unsafe fn spawn_with(
    fut: Fut,
    req: *mut Request,
    comm: Comm,
    name: &'static str,
    status: Option<Arc<Mutex<Status>>>,
) -> c_int {
    unsafe {
        let e = engine::get();
        let rc = engine::start_grequest(req);
        if rc != abi::SUCCESS {
            return rc;
        }
        let k = key(*req);
        e.track_coll(*req);
        let job = Arc::new(Mutex::new(Job {
            req: *req,
            comm,
            name,
            fut: Some(fut),
            rc: None,
            orphan: false,
            status,
        }));
        RUNNING.fetch_add(1, Ordering::Relaxed);
        jobs().push((k, job));
        progress_all();
        abi::SUCCESS
    }
}

/// Polls `j` once unless it is finished or another thread is polling it.
/// True when it finished in this call.
fn poll_job(j: &Mutex<Job>) -> bool {
    let Ok(mut g) = j.try_lock() else {
        return false;
    };
    let Some(fut) = g.fut.as_mut() else {
        return false;
    };
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Pending => false,
        Poll::Ready(r) => {
            g.fut = None;
            // SAFETY: the request is the generalized request of this job,
            // not yet completed.
            unsafe {
                real::PMPI_Grequest_complete(g.req);
            }
            g.rc = Some(match r {
                Ok(()) => abi::SUCCESS,
                Err(rc) => rc,
            });
            RUNNING.fetch_sub(1, Ordering::Relaxed);
            true
        }
    }
}

/// Advances every unfinished collective once, oldest first. Re-entry from
/// inside a job on the same thread is a no-op.
pub fn progress_all() {
    if !running() || POLLING.with(|p| p.replace(true)) {
        return;
    }
    // Not re-entered on this thread (POLLING), so the buffer is free.
    let mut snapshot = SNAPSHOT.with(Cell::take);
    snapshot.extend(
        jobs()
            .iter()
            .filter(|(_, j)| j.try_lock().is_ok_and(|g| g.fut.is_some()))
            .cloned(),
    );
    let mut orphans_done = false;
    for (_, j) in &snapshot {
        if poll_job(j) && lock(j).orphan {
            orphans_done = true;
        }
    }
    if orphans_done {
        jobs().retain(|(_, j)| {
            let g = lock(j);
            !(g.orphan && g.fut.is_none())
        });
    }
    snapshot.clear();
    SNAPSHOT.with(|c| c.set(snapshot));
    if !running() {
        super::free_deferred();
    }
    POLLING.with(|p| p.set(false));
}

/// Whether the job being polled on this thread may wait natively in its
/// steps (`drive`).
pub fn driving() -> bool {
    DRIVING.with(Cell::get)
}

/// MPI_Wait on the request of job `k` (`engine::jobs::drive`): when that
/// job is the only one unfinished, one thread calls MPI and this thread is
/// not polling jobs already, nothing else of the shim's needs progress
/// while this rank waits, so the job's steps may wait natively, as a
/// blocking collective's do, instead of being tested pass after pass (an
/// 8-byte Iallreduce + Wait at 2 ranks: 5,488 instructions of the shim's
/// own and 1,114 in malloc/free per call, against 1,508 for the blocking
/// Allreduce, `NB=1 scripts/bench-instr-coll.sh`). Polls the job once so;
/// true when it did (the job has then finished, or waits on something
/// else, and the caller's polling goes on).
pub fn drive(k: usize) -> bool {
    if RUNNING.load(Ordering::Relaxed) != 1
        || !crate::clock::one_thread()
        || POLLING.with(Cell::get)
        || !find(k).is_some_and(|j| j.try_lock().is_ok_and(|g| g.fut.is_some()))
    {
        return false;
    }
    DRIVING.with(|d| d.set(true));
    progress_all();
    DRIVING.with(|d| d.set(false));
    true
}

fn find(k: usize) -> Option<Arc<Mutex<Job>>> {
    jobs().iter().find(|(x, _)| *x == k).map(|(_, j)| j.clone())
}

/// Whether the job of request key `k` has finished (a job that is not
/// known counts as finished). It does not progress anything: the engine's
/// completion calls run `progress_all` once per pass over their requests.
pub fn done(k: usize) -> bool {
    find(k).is_none_or(|j| lock(&j).fut.is_none())
}

/// The result of the finished job of `k`, which is forgotten; its status,
/// if it has one, goes to `st`. An error is raised on the application's
/// communicator first (unless the application has freed it meanwhile).
pub fn finish(k: usize, st: &mut Status) -> c_int {
    let Some((rc, comm, name, status)) = forget(k) else {
        return abi::SUCCESS;
    };
    if let Some(s) = status {
        *st = *s.lock().unwrap_or_else(|e| e.into_inner());
    }
    if rc != abi::SUCCESS && super::known(comm) {
        // SAFETY: a communicator of the application, not freed.
        return unsafe { super::raise(comm, rc, name) };
    }
    rc
}

/// Removes the job of `k`: its result, communicator, name and status.
#[allow(clippy::type_complexity)]
fn forget(k: usize) -> Option<(c_int, Comm, &'static str, Option<Arc<Mutex<Status>>>)> {
    let mut all = jobs();
    let i = all.iter().position(|(x, _)| *x == k)?;
    let (_, j) = all.remove(i);
    drop(all);
    let g = lock(&j);
    Some((
        g.rc.unwrap_or(abi::SUCCESS),
        g.comm,
        g.name,
        g.status.clone(),
    ))
}

/// The application freed the request of `k`: let the job finish on its
/// own (progressed like the others) and forget it then.
pub fn orphan(k: usize) {
    if let Some(j) = find(k) {
        let finished = {
            let mut g = lock(&j);
            g.orphan = true;
            g.fut.is_none()
        };
        if finished {
            // Nobody to report an error to: the request is gone.
            forget(k);
        }
    }
}

/// Runs a collective to completion in the calling thread (the blocking
/// calls). Their futures never suspend (see `Ctx`), so this polls once;
/// the loop is for safety only.
pub fn block_on<F: Future<Output = R>>(f: F) -> R {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut patience = crate::clock::Patience::new();
    loop {
        if let Poll::Ready(r) = f.as_mut().poll(&mut cx) {
            return r;
        }
        progress_all();
        patience.pause();
    }
}
