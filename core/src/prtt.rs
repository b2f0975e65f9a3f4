//! The measurement formulas of `loggp calibrate`, written out as in
//! Netgauge's `ptrn_loggp.c`: Hoefler et al., "LogGP in theory and
//! practice" §3 (PRTT(n, d, s): n messages of s bytes sent back to back
//! with a delay d between them, then one reply), and León et al. eq. 2.
//! All times in ns; the inputs are medians of repetitions.

/// Hoefler eq. 7: the gap per message, `(PRTT(n,0,s) − PRTT(1,0,s))/(n−1)`.
/// The same difference of a burst of `n` against a burst of 1 gives the
/// sender's and the receiver's gap (2 ranks).
pub fn gap(prtt_n: f64, prtt_1: f64, n: u64) -> f64 {
    (prtt_n - prtt_1) / n.saturating_sub(1).max(1) as f64
}

/// Hoefler eq. 6: the send overhead, `(PRTT(n,d,s) − PRTT(1,0,s))/(n−1) − d`,
/// with `d` the delay actually spun; valid when `d` exceeds the gap, so
/// that each message waits for the delay and the send, not the network.
pub fn send_overhead(prtt_nd: f64, prtt_1: f64, n: u64, d: f64) -> f64 {
    gap(prtt_nd, prtt_1, n) - d
}

/// León eq. 2: the latency, `PRTT(1,0,s)/2 − o_s − o_r`.
pub fn latency(prtt_1: f64, o_s: f64, o_r: f64) -> f64 {
    prtt_1 / 2.0 - o_s - o_r
}

/// The gap of a one-to-many (or many-to-one) pattern with `p` peers:
/// `(T(n·p) − T(p)) / ((n−1)·p)`, where `T(k)` is the time of k messages
/// spread over the peers.
pub fn pattern_gap(t_np: f64, t_p: f64, n: u64, p: u64) -> f64 {
    (t_np - t_p) / (n.saturating_sub(1).max(1) * p.max(1)) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PRTT on a LogGP machine (Hoefler §3.1): the first message costs
    /// o_s + L + o_r and the reply the same; each further message adds the
    /// larger of the sender's per-message cost (o_s + d) and the gap g.
    fn prtt(n: u64, d: f64, m: &(f64, f64, f64, f64)) -> f64 {
        let (l, o_s, o_r, g) = *m;
        2.0 * (l + o_s + o_r) + (n - 1) as f64 * (o_s + d).max(g)
    }

    #[test]
    fn a_loggp_machine_gives_back_its_parameters() {
        // L = 2 us, o_s = 0.3 us, o_r = 0.4 us, g = 1 us.
        let m = (2000.0, 300.0, 400.0, 1000.0);
        let (n, d) = (16, 5000.0);
        let p1 = prtt(1, 0.0, &m);
        assert_eq!(gap(prtt(n, 0.0, &m), p1, n), 1000.0);
        let o_s = send_overhead(prtt(n, d, &m), p1, n, d);
        assert!((o_s - 300.0).abs() < 1e-9, "{o_s}");
        assert!((latency(p1, o_s, 400.0) - 2000.0).abs() < 1e-9);
        // A delay below the gap measures the gap, not o_s: eq. 6 needs d > g.
        assert!(send_overhead(prtt(n, 500.0, &m), p1, n, 500.0) > 400.0);
    }

    #[test]
    fn patterns_and_degenerate_counts() {
        // 3 peers, 8 rounds: 21 further messages 1.5 us apart.
        assert_eq!(pattern_gap(100.0 + 21.0 * 1500.0, 100.0, 8, 3), 1500.0);
        // n = 1 has no gap to measure: no division by zero.
        assert_eq!(gap(5.0, 5.0, 1), 0.0);
        assert_eq!(pattern_gap(5.0, 5.0, 1, 0), 0.0);
    }
}
