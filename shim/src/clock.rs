//! The one clock: CLOCK_MONOTONIC, shared by every process on a host, in
//! nanoseconds.
//!
//! Read through the vDSO it costs ~21 ns here, against ~9 ns for the
//! processor's time-stamp counter (`bench/side_calls.c`). Where the kernel
//! itself keeps time with the invariant counter (clocksource `tsc`, so it
//! is shared by all processors), `now` reads the counter and extrapolates
//! from the last CLOCK_MONOTONIC reading of this thread (its anchor), with
//! a rate calibrated over start-up and refined at every re-anchoring, for
//! at most a span that grows with the run from 20 µs to 10 ms
//! (`loggp_core::tsc`, where the error budget is: a few ns, so ranks and
//! threads still share one clock). Elsewhere, and until calibrated, it is
//! `clock_gettime`.
//!
//! `LOGGP_TEST_CLOCK` shifts and drifts it as the shim sees it (a testing
//! aid); across hosts, departures travel as stamps in the job's reference
//! time base (`loggp_core::clocks`).

use loggp_core::clocks::{Hosts, TestClock};
use loggp_core::idle::{self, Kind, Step, Wait};
use loggp_core::tsc::{Anchor, Pair, TscRate};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static TEST_CLOCK: OnceLock<(TestClock, u64)> = OnceLock::new();
static TEST_ON: AtomicBool = AtomicBool::new(false);
static HOSTS: OnceLock<Hosts> = OnceLock::new();

/// Installs `LOGGP_TEST_CLOCK` (once, before MPI_Init's start-up).
pub fn set_test_clock(c: TestClock) {
    if !c.is_identity() && TEST_CLOCK.set((c, raw())).is_ok() {
        TEST_ON.store(true, Ordering::Release);
    }
}

/// Installs what start-up learned about the job's hosts (several hosts).
pub fn set_hosts(h: Hosts) {
    let _ = HOSTS.set(h);
}

/// A departure as the header carries it: on several hosts, tagged with
/// this host and in the job's reference time base.
#[inline]
pub fn stamp(d: u64) -> u64 {
    match HOSTS.get() {
        Some(h) => h.stamp(d),
        None => d,
    }
}

/// Nanoseconds on CLOCK_MONOTONIC, as the shim sees it (`LOGGP_TEST_CLOCK`).
#[inline]
pub fn now() -> u64 {
    let t = raw();
    if TEST_ON.load(Ordering::Relaxed) {
        if let Some((c, start)) = TEST_CLOCK.get() {
            return c.shown(t, *start);
        }
    }
    t
}

/// CLOCK_MONOTONIC through the vDSO.
#[inline]
pub fn monotonic() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The counter's calibrated rate (`loggp_core::tsc`), once start-up has
/// set it; until then, and where it is not used, `now` is `monotonic`.
static RATE: OnceLock<TscRate> = OnceLock::new();

thread_local! {
    static ANCHOR: UnsafeCell<Anchor> = const { UnsafeCell::new(Anchor::new()) };
}

/// Below MPI_THREAD_MULTIPLE (`set_one_thread`): per-thread state of the
/// shim's kept once for the process. A thread-local value costs a
/// `__tls_get_addr` call in a shared library, and the anchor two copies per
/// read: 25 of the ~65 instructions of a clock read, and 11 more for the
/// gate's `WAITED`, on the path of every message under a knob
/// (`scripts/bench-instr.sh openmpi LOGGP_L=1ns`).
static ONE_THREAD: AtomicBool = AtomicBool::new(false);

/// Tells the shim whether at most one thread calls MPI at a time (the
/// thread level MPI provides is below MPI_THREAD_MULTIPLE): then what is
/// kept per thread is kept once for the process (`OneThread`).
pub fn set_one_thread(on: bool) {
    ONE_THREAD.store(on, Ordering::Relaxed);
}

/// Whether `OneThread` values are in use.
#[inline]
pub fn one_thread() -> bool {
    ONE_THREAD.load(Ordering::Relaxed)
}

/// A value of the process's that stands for a thread-local one while
/// `one_thread()`.
pub struct OneThread<T>(UnsafeCell<T>);

// SAFETY: the value is used only while `one_thread()` (`OneThread::get`'s
// contract): the application then never overlaps its MPI calls and orders
// them itself (MPI-4.0 §11.6.2), and the shim uses these values only
// inside MPI calls, on the calling thread (as `StateLock` in the engine).
unsafe impl<T> Sync for OneThread<T> {}

impl<T> OneThread<T> {
    pub const fn new(v: T) -> OneThread<T> {
        OneThread(UnsafeCell::new(v))
    }

    /// The value.
    ///
    /// # Safety
    /// Only while `one_thread()`, inside an MPI call, and not while an
    /// earlier reference from `get` is alive.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self) -> &mut T {
        // SAFETY: the caller's contract (above) makes it the only access.
        unsafe { &mut *self.0.get() }
    }
}

/// The process's anchor while `one_thread()`.
static PROCESS_ANCHOR: OneThread<Anchor> = OneThread::new(Anchor::new());

#[cfg(target_arch = "x86_64")]
#[inline]
fn ticks() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 processor.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn ticks() -> u64 {
    0
}

/// CLOCK_MONOTONIC read between two counter reads.
#[inline]
fn reading() -> Pair {
    let t0 = ticks();
    let ns = monotonic();
    Pair::bracketed(t0, ns, ticks())
}

/// A calibration point: the narrowest of 8 readings (the first calls of a
/// process were seen 350 ns wide, warm ones 20-30 ns).
pub fn calibration_point() -> Pair {
    (0..8)
        .map(|_| reading())
        .min_by_key(|p| p.width)
        .unwrap_or_default()
}

/// A reading for an anchor: the first narrow one of up to three
/// (`TscRate::narrow`), else the narrowest.
#[cold]
fn anchor_reading(rate: &TscRate) -> Pair {
    let mut best = reading();
    for _ in 0..2 {
        if rate.narrow(best) {
            break;
        }
        let p = reading();
        if p.width < best.width {
            best = p;
        }
    }
    best
}

/// Starts using the counter, with the rate between two calibration points
/// taken some milliseconds apart, when the kernel's clocksource is the TSC
/// (so that it is invariant and shared by all processors), unless
/// `use_tsc` is false (`LOGGP_CLOCK=monotonic`).
pub fn calibrate(a: Pair, b: Pair, use_tsc: bool) {
    if !cfg!(target_arch = "x86_64") || !use_tsc {
        return;
    }
    let tsc =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    if let (true, Some(r)) = (tsc, TscRate::from_pairs(a, b)) {
        let _ = RATE.set(r);
    }
}

/// Nanoseconds on CLOCK_MONOTONIC, from the counter where calibrated (see
/// the module's text).
#[inline]
fn raw() -> u64 {
    let Some(rate) = RATE.get() else {
        return monotonic();
    };
    let t = ticks();
    if one_thread() {
        // SAFETY: one thread calls MPI at a time, and the shim reads the
        // clock inside MPI calls; the reference lives only here. A read on
        // another processor than the anchor's is safe: `Anchor::read`
        // re-anchors on a counter that lags.
        return read(unsafe { PROCESS_ANCHOR.get() }, rate, t);
    }
    raw_tls(rate, t)
}

/// The time at counter `t` from anchor `a`, re-anchored first when its
/// span is over.
#[inline]
fn read(a: &mut Anchor, rate: &TscRate, t: u64) -> u64 {
    match a.read(t) {
        Some(v) => v,
        None => a.reset(rate, anchor_reading(rate)),
    }
}

/// `raw` on this thread's anchor. Out of line: inlined, the compiler
/// computes the thread-local's address (a `__tls_get_addr` call) before
/// the test of `one_thread`, on both paths.
#[inline(never)]
fn raw_tls(rate: &TscRate, t: u64) -> u64 {
    ANCHOR.with(|c| {
        // SAFETY: this thread's own value, and the only reference to it:
        // nothing called here reads the clock again.
        read(unsafe { &mut *c.get() }, rate, t)
    })
}

static OVERSUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// This host runs more ranks than it has processors: waits give the
/// processor away (`loggp_core::idle`).
pub fn set_oversubscribed(on: bool) {
    OVERSUBSCRIBED.store(on, Ordering::Relaxed);
}

#[inline]
pub fn oversubscribed() -> bool {
    OVERSUBSCRIBED.load(Ordering::Relaxed)
}

/// Does one pause of a wait.
#[inline]
fn pause(step: Step) {
    match step {
        Step::Spin => std::hint::spin_loop(),
        // SAFETY: plain syscall.
        Step::Yield => unsafe {
            libc::sched_yield();
        },
        Step::Sleep(ns) => {
            let ts = libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: valid timespec; an early wake-up (a signal) only
            // shortens one pause of a wait that looks again.
            unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
        }
    }
}

/// A wait for something other processes do (a message, a collective's
/// progress), paused between looks as `loggp_core::idle::Wait` says:
/// spinning where each rank has a processor (one relaxed load more than a
/// bare spin), giving the processor away where ranks outnumber them.
pub struct Patience(Wait);

impl Patience {
    /// An ordinary wait of the application's (a Wait, a Probe, a blocking
    /// collective of the shim's).
    #[inline]
    pub fn new() -> Patience {
        Patience(Wait::new(Kind::of(oversubscribed())))
    }

    /// A rank with nothing to do while others measure (start-up): asleep.
    pub fn asleep() -> Patience {
        Patience(Wait::new(Kind::Asleep))
    }

    /// One pause, after a look that found nothing.
    #[inline]
    pub fn pause(&mut self) {
        let t = if self.0.needs_clock() { now() } else { 0 };
        pause(self.0.step(t));
    }
}

/// Passes the time until `t` while calling `poke` about every `every` ns,
/// but not in the last `every` ns, nor where the longest poke of this pass
/// would end beyond `t` (the caller's progress hook must not make it
/// late). CPU work (`busy`: o_s, o_r) spins, as those knobs demand; a
/// wait for something that is not CPU work (a message's virtual arrival, a
/// departure slot) spins too, except when the host is oversubscribed: then
/// it sleeps or yields the processor while more than 20 µs remain
/// (`loggp_core::idle::until`). Returns the time read last (`t` or
/// later), for the caller's next step without another clock read.
#[inline]
pub fn pass_until(t: u64, busy: bool, every: u64, mut poke: impl FnMut()) -> u64 {
    let mut n = now();
    if n >= t {
        return n;
    }
    let shared = !busy && oversubscribed();
    let mut next = n + every;
    // How long a poke may take: `every`, or the longest one seen in this
    // pass (a probe that runs the progress of a TCP transport took 2-5 us
    // here: started 1 us before `t`, it made every wait that much late).
    let mut cost = every;
    loop {
        if n >= next && n + cost < t {
            poke();
            let after = now();
            cost = cost.max(after - n);
            next = after + every;
        } else if shared {
            // A sleep is cut to the next poke: the library keeps moving
            // what is in flight meanwhile.
            match idle::until(n, t, false, true) {
                Step::Sleep(ns) => pause(Step::Sleep(ns.min(next.saturating_sub(n).max(1)))),
                s => pause(s),
            }
        } else {
            std::hint::spin_loop();
        }
        n = now();
        if n >= t {
            return n;
        }
    }
}
