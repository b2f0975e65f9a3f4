//! The one clock: CLOCK_MONOTONIC, shared by every process on a host, in
//! nanoseconds. Read through the vDSO (~20 ns).

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

/// Busy-waits until `t` (the CPU stays with this rank, as o_s and o_r
/// demand). Far from the target it yields, so that oversubscribed runs make
/// progress; the last 20 µs are a pure spin for accuracy.
#[inline]
pub fn spin_until(t: u64) {
    loop {
        let n = now();
        if n >= t {
            return;
        }
        if t - n > 20_000 {
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Busy-waits for `ns` nanoseconds from now; returns the end time.
#[inline]
pub fn spin_for(ns: u64) -> u64 {
    let end = now() + ns;
    spin_until(end);
    end
}
