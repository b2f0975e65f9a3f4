//! The one clock: CLOCK_MONOTONIC, shared by every process on a host, in
//! nanoseconds. Read through the vDSO (~20 ns).

use std::sync::atomic::{AtomicBool, Ordering};

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now() -> u64 {
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

/// Busy-waits until `t`: the CPU stays with this rank, as o_s and o_r
/// demand, and as an MPI library's progress loop does while it waits.
#[inline]
pub fn spin_until(t: u64) {
    while now() < t {
        std::hint::spin_loop();
    }
}

/// Waits until `t` for something that is not CPU work (a message's virtual
/// arrival, a departure slot). Spins, except when the host is
/// oversubscribed: then it yields while more than 20 µs remain.
#[inline]
pub fn wait_until(t: u64) {
    if YIELD.load(Ordering::Relaxed) {
        loop {
            let n = now();
            if n + 20_000 >= t {
                break;
            }
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
        }
    }
    spin_until(t);
}

/// Busy-waits for `ns` nanoseconds from now.
#[inline]
pub fn spin_for(ns: u64) {
    spin_until(now() + ns);
}
