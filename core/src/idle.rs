//! How a rank passes time it does not compute: spin, yield the processor,
//! or sleep.
//!
//! Where a host has a processor per rank, spinning is the fastest way to
//! see a message or a deadline come, and the shim spins (its cost at 2
//! ranks on 2 cores is `scripts/bench-shim.sh`'s). Where ranks outnumber
//! processors, a spinning rank takes its processor from the rank it waits
//! for, until the scheduler preempts it (a time slice, milliseconds): each
//! wait then costs a slice instead of a message time. There a wait yields
//! the processor, and a wait that goes on sleeps, so that an idle
//! processor can take a runnable rank from a busy one (a yielding rank
//! stays runnable and keeps its processor from the scheduler's balancing).
//!
//! The shim asks [`Wait::step`] before each pause of a wait; every time is
//! nanoseconds on one monotonic clock, passed in.

/// What to do for one pause of a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Spin (a CPU pause instruction), then look again.
    Spin,
    /// Give the processor to another runnable process (`sched_yield`).
    Yield,
    /// Sleep this many nanoseconds.
    Sleep(u64),
}

/// Oversubscribed, a wait with no deadline spins this long first: a
/// message that is about to come is seen at once.
pub const SPIN_NS: u64 = 2_000;
/// ... then yields until this long has passed since it began ...
pub const YIELD_NS: u64 = 200_000;
/// ... then sleeps, from this long ...
pub const FIRST_SLEEP_NS: u64 = 20_000;
/// ... doubling each time, up to this long.
pub const MAX_SLEEP_NS: u64 = 1_000_000;
/// A wait for a deadline (a virtual arrival, a departure slot) yields only
/// while more than this remains: a yield may return after another
/// process's turn, so the last stretch spins.
pub const YIELD_MARGIN_NS: u64 = 20_000;
/// ... and sleeps while more than this remains (for all but
/// `SLEEP_MARGIN_NS` of it: a sleep overruns by the timer's slack, 50 µs
/// by default on Linux).
pub const SLEEP_FROM_NS: u64 = 500_000;
pub const SLEEP_MARGIN_NS: u64 = 100_000;

/// What kind of wait, decided when it begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The host has a processor per rank: spin.
    Spin,
    /// Ranks outnumber processors: spin briefly, yield, then sleep.
    Shared,
    /// A rank with nothing to do while others measure (start-up): sleep
    /// from the first pause, whatever the host.
    Asleep,
}

impl Kind {
    /// The kind of an ordinary wait on a host that is `oversubscribed`.
    pub fn of(oversubscribed: bool) -> Kind {
        if oversubscribed {
            Kind::Shared
        } else {
            Kind::Spin
        }
    }
}

/// One wait for something another process does (a message, a collective's
/// progress) whose end is not known.
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    kind: Kind,
    /// When the wait began (set at the first step that reads the clock).
    start: Option<u64>,
    /// The next sleep.
    sleep: u64,
}

impl Wait {
    pub fn new(kind: Kind) -> Wait {
        Wait {
            kind,
            start: None,
            sleep: FIRST_SLEEP_NS,
        }
    }

    /// True when `step` needs the time (a spinning wait does not read the
    /// clock: its pause is all its cost).
    pub fn needs_clock(&self) -> bool {
        self.kind != Kind::Spin
    }

    /// The next pause of a wait that has looked and found nothing at `now`.
    pub fn step(&mut self, now: u64) -> Step {
        match self.kind {
            Kind::Spin => Step::Spin,
            Kind::Asleep => Step::Sleep(self.next_sleep()),
            Kind::Shared => {
                let start = *self.start.get_or_insert(now);
                let waited = now.saturating_sub(start);
                if waited < SPIN_NS {
                    Step::Spin
                } else if waited < YIELD_NS {
                    Step::Yield
                } else {
                    Step::Sleep(self.next_sleep())
                }
            }
        }
    }

    fn next_sleep(&mut self) -> u64 {
        let s = self.sleep;
        self.sleep = (self.sleep * 2).min(MAX_SLEEP_NS);
        s
    }
}

/// The next pause of a wait until the deadline `until`, at `now` (before
/// it). `busy`: the time stands for CPU work (o_s, o_r), which spins, as
/// those knobs demand; a wait for something that is not CPU work spins
/// where the host has a processor per rank, and where it is oversubscribed
/// sleeps through a long wait, yields through a shorter one and spins the
/// last `YIELD_MARGIN_NS`.
pub fn until(now: u64, until: u64, busy: bool, oversubscribed: bool) -> Step {
    let left = until.saturating_sub(now);
    if busy || !oversubscribed || left <= YIELD_MARGIN_NS {
        Step::Spin
    } else if left > SLEEP_FROM_NS {
        Step::Sleep(left - SLEEP_MARGIN_NS)
    } else {
        Step::Yield
    }
}

/// How many processors the ranks of this host may use: the processors
/// online, fewer where the process's control group confines it to a set of
/// them (`cpuset`, a Linux CPU list such as `0-3,8`) or to a share of CPU
/// time (`quota`: a cgroup v2 `cpu.max` line, `"200000 100000"` for two
/// processors' worth, `"max 100000"` for no limit; for cgroup v1 the same
/// two numbers from `cpu.cfs_quota_us` and `cpu.cfs_period_us`, a quota of
/// -1 for none). A batch system's allocation (Slurm's cgroup cpuset) or a
/// container's CPU limit is what the ranks share, however many processors
/// the node has. A per-process affinity mask is not asked: a launcher that
/// binds each rank to one core would make every host look oversubscribed.
/// Text that does not parse is ignored (the next limit or the processors
/// online stand).
pub fn processors(online: usize, cpuset: Option<&str>, quota: Option<&str>) -> usize {
    let mut n = online.max(1);
    if let Some(c) = cpuset.and_then(cpu_list_len) {
        n = n.min(c);
    }
    if let Some(q) = quota.and_then(quota_cpus) {
        n = n.min(q);
    }
    n.max(1)
}

/// The number of processors in a Linux CPU list (`0-3,8,10-11`).
fn cpu_list_len(s: &str) -> Option<usize> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut n = 0usize;
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<usize>().ok()?,
                b.trim().parse::<usize>().ok()?,
            ),
            None => {
                let a = part.trim().parse::<usize>().ok()?;
                (a, a)
            }
        };
        n += b.checked_sub(a)? + 1;
    }
    Some(n)
}

/// Whole processors' worth of a quota and period (`"200000 100000"`),
/// rounded up; `None` for no limit (`max`, or a negative quota).
fn quota_cpus(s: &str) -> Option<usize> {
    let mut it = s.split_whitespace();
    let quota = it.next()?.parse::<i64>().ok()?;
    let period = it.next()?.parse::<i64>().ok()?;
    if quota <= 0 || period <= 0 {
        return None;
    }
    let whole = (quota as u64).div_ceil(period as u64);
    Some(usize::try_from(whole).ok()?.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps of a wait that looks at `times` and never succeeds.
    fn steps(kind: Kind, times: &[u64]) -> Vec<Step> {
        let mut w = Wait::new(kind);
        times.iter().map(|&t| w.step(t)).collect()
    }

    #[test]
    fn one_processor_per_rank_always_spins() {
        let w = Wait::new(Kind::of(false));
        assert!(!w.needs_clock());
        let s = steps(Kind::of(false), &[0, 1_000, 1_000_000, 10_000_000_000]);
        assert!(s.iter().all(|&x| x == Step::Spin));
        // Deadlines too, however far.
        assert_eq!(until(0, 10_000_000_000, false, false), Step::Spin);
    }

    #[test]
    fn oversubscribed_spins_then_yields_then_sleeps_longer_and_longer() {
        let t0 = 5_000_000;
        let at = |d: u64| t0 + d;
        let s = steps(
            Kind::of(true),
            &[
                at(0),
                at(1_999),
                at(2_000),
                at(199_999),
                at(200_000),
                at(300_000),
                at(400_000),
                at(10_000_000),
                at(20_000_000),
                at(30_000_000),
                at(40_000_000),
                at(50_000_000),
                at(60_000_000),
            ],
        );
        assert_eq!(
            s,
            vec![
                Step::Spin,
                Step::Spin,
                Step::Yield,
                Step::Yield,
                Step::Sleep(20_000),
                Step::Sleep(40_000),
                Step::Sleep(80_000),
                Step::Sleep(160_000),
                Step::Sleep(320_000),
                Step::Sleep(640_000),
                Step::Sleep(1_000_000),
                Step::Sleep(1_000_000),
                Step::Sleep(1_000_000),
            ]
        );
    }

    #[test]
    fn each_wait_starts_afresh() {
        let mut a = Wait::new(Kind::Shared);
        assert_eq!(a.step(0), Step::Spin);
        assert_eq!(a.step(500_000), Step::Sleep(FIRST_SLEEP_NS));
        let mut b = Wait::new(Kind::Shared);
        assert_eq!(b.step(500_000), Step::Spin);
        assert_eq!(b.step(503_000), Step::Yield);
    }

    #[test]
    fn a_bystander_sleeps_from_the_first_pause() {
        let w = Wait::new(Kind::Asleep);
        assert!(w.needs_clock());
        let s = steps(Kind::Asleep, &[0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            s,
            vec![
                Step::Sleep(20_000),
                Step::Sleep(40_000),
                Step::Sleep(80_000),
                Step::Sleep(160_000),
                Step::Sleep(320_000),
                Step::Sleep(640_000),
                Step::Sleep(1_000_000),
                Step::Sleep(1_000_000),
            ]
        );
    }

    #[test]
    fn deadlines_on_a_shared_host() {
        // CPU work spins whatever the host.
        assert_eq!(until(0, 5_000_000, true, true), Step::Spin);
        // The last 20 us spin.
        assert_eq!(until(0, 20_000, false, true), Step::Spin);
        assert_eq!(until(0, 20_001, false, true), Step::Yield);
        assert_eq!(until(0, 500_000, false, true), Step::Yield);
        // Long waits sleep all but 100 us.
        assert_eq!(until(0, 500_001, false, true), Step::Sleep(400_001));
        assert_eq!(until(1_000, 3_001_000, false, true), Step::Sleep(2_900_000));
        // Past the deadline: nothing to wait (the caller stops first).
        assert_eq!(until(10, 5, false, true), Step::Spin);
    }

    #[test]
    fn a_control_groups_cpus_and_quota_limit_the_processors() {
        // Nothing known: the processors online.
        assert_eq!(processors(64, None, None), 64);
        // Slurm's cpuset of 4 of a node's 64.
        assert_eq!(processors(64, Some("0-1,32-33\n"), None), 4);
        assert_eq!(processors(64, Some("7"), None), 1);
        // A container's limit of 2.5 processors' worth: 3.
        assert_eq!(processors(64, None, Some("250000 100000\n")), 3);
        assert_eq!(processors(64, Some("0-7"), Some("200000 100000")), 2);
        // No limit, in either version's words.
        assert_eq!(processors(8, None, Some("max 100000")), 8);
        assert_eq!(processors(8, None, Some("-1 100000")), 8);
        // A limit above the processors online changes nothing.
        assert_eq!(processors(2, Some("0-15"), Some("1600000 100000")), 2);
        // Text that does not parse is passed over; never below 1.
        assert_eq!(processors(8, Some("0-x"), Some("lots")), 8);
        assert_eq!(processors(8, Some("3-1"), Some("")), 8);
        assert_eq!(processors(8, None, Some("1000 100000")), 1);
        assert_eq!(processors(0, None, None), 1);
    }
}
