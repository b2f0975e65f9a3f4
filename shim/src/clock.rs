//! The one clock: CLOCK_MONOTONIC, shared by every process on a host, in
//! nanoseconds. Read through the vDSO (~20 ns). `LOGGP_TEST_CLOCK` shifts
//! and drifts it as the shim sees it (a testing aid); across hosts,
//! departures travel as stamps in the job's reference time base
//! (`loggp_core::clocks`).

use loggp_core::clocks::{Hosts, TestClock};
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

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
fn raw() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

static YIELD: AtomicBool = AtomicBool::new(false);

/// Waits should yield the processor (more ranks than processors here).
pub fn set_yield(on: bool) {
    YIELD.store(on, Ordering::Relaxed);
}

/// Passes the time until `t` while calling `poke` about every `every` ns,
/// but not in the last `every` ns (the caller's progress hook must not make
/// it late). CPU work (`busy`: o_s, o_r) spins, as those knobs demand; a
/// wait for something that is not CPU work (a message's virtual arrival, a
/// departure slot) spins too, except when the host is oversubscribed: then
/// it yields the processor while more than 20 µs remain.
#[inline]
pub fn pass_until(t: u64, busy: bool, every: u64, mut poke: impl FnMut()) {
    let yielding = !busy && YIELD.load(Ordering::Relaxed);
    let mut next = now() + every;
    loop {
        let n = now();
        if n >= t {
            return;
        }
        if n >= next && n + every < t {
            poke();
            next = now() + every;
        } else if yielding && n + 20_000 < t {
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}
