//! More ranks than cores, with real `mpirun` jobs for Open MPI and MPICH,
//! natively and with the shim preloaded (twice this machine's cores, at
//! least 4 ranks):
//!
//! - The shim's own waits give the processor away (`oversub.c idle`): a
//!   rank waiting 300 ms in MPI_Probe, MPI_Waitany, and MPI_Wait with a
//!   nonblocking collective in flight (three waits the shim runs itself
//!   under virtual time) uses under a quarter of that in CPU time. They
//!   used to spin: 35–95 % (MPICH and Open MPI, 4 ranks on 2 cores), where
//!   the shim's waits now take about 1 %. Retried up to 3 times: a thread
//!   that wakes 300 times is charged more where the host is busy (a CI run
//!   read 11–29 %); the bound is a quarter above the share of a bare
//!   sleep loop in the same job.
//! - What such a job costs under virtual time (`oversub.c` workloads and
//!   start-up alone, `hello.c`): the job's wall time at `LOGGP_VT=on` stays
//!   under 10× the native job's, measured in the same test (the bound is
//!   loose for a shared, noisy machine, and MPICH's own spinning makes its
//!   native times vary by 100× from run to run; it catches the 60×
//!   regressions: a native transit learned at start-up as 47 µs instead
//!   of 0.13 µs held every message that long, and the shim's start-up
//!   collectives spun for 0.6 s at 10 ranks). The target, 3× at zero knobs,
//!   is `scripts/bench-oversub.sh`'s to show (medians of interleaved runs).
//! - Many nonblocking collectives of every kind in flight at once on three
//!   communicators, with point-to-point traffic, completed by every
//!   completion call (`icoll_mix.c`), at 4 ranks: natively, at
//!   `LOGGP_VT=on` and with every knob set.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_oversub`

mod common;

use common::{retry, Job, Via, BOTH, EVERY_KNOB};
use std::time::Duration;

/// Twice the processors of this machine, at least 4.
fn np() -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    u32::try_from(2 * cores).unwrap_or(4).max(4)
}

#[test]
fn waits_give_the_processor_away_when_oversubscribed() {
    let np = np();
    for mpi in BOTH {
        for vars in [&[("LOGGP_VT", "on")][..], EVERY_KNOB] {
            let what = format!("{} idle waits, {np} ranks, {vars:?}", mpi.name());
            // A spinning wait takes 35-95 % on every attempt; a sleeping one
            // about 1 %, as does a bare loop of 1 ms sleeps here. A thread
            // that wakes 300 times is charged more where the machine's host
            // is busy (one CI run read 11-29 %), so the bound is a quarter
            // above what the job's bare sleep loop was charged, retried.
            retry(3, &what, || {
                let out = Job::new(mpi, "oversub")
                    .np(np)
                    .vars(vars)
                    .args(&["idle"])
                    .run();
                out.expect_pass("oversub idle: ok");
                assert!(out.shim_lines().is_empty(), "{}", out.describe());
                let control = out.num("sleep_cpu");
                let mut shares = Vec::new();
                for key in ["probe_cpu", "waitany_cpu", "wait_cpu"] {
                    let f = out.num(key);
                    shares.push(format!("{key}={f:.3}"));
                    if f >= 0.25 + control {
                        return Err(format!(
                            "{key}={f:.3}: a rank waiting 300 ms inside the shim used that share \
                             of it in CPU time, {np} ranks on {} processors (a bare sleep loop: \
                             {control:.3})\n{}",
                            np / 2,
                            out.describe()
                        ));
                    }
                }
                Ok(format!("{} sleep_cpu={control:.3}", shares.join(" ")))
            });
        }
    }
}

#[test]
fn oversubscribed_job_costs_under_10x_native() {
    let np = np();
    for mpi in BOTH {
        for (prog, args) in [
            ("hello", &[][..]),
            ("oversub", &["nbx", "100"][..]),
            ("oversub", &["pp", "300"][..]),
            ("oversub", &["coll", "60"][..]),
            ("oversub", &["icoll", "40"][..]),
        ] {
            let what = format!("{} {prog} {args:?}, {np} ranks", mpi.name());
            retry(3, &what, || {
                let run = |via: Via, vars: &[(&str, &str)]| {
                    let mut job = Job::new(mpi, prog).np(np).via(via).vars(vars).args(args);
                    job.timeout = Duration::from_secs(120);
                    let out = job.run();
                    if !out.success() {
                        return Err(out.describe());
                    }
                    Ok(out.elapsed.as_secs_f64())
                };
                let native = run(Via::Native, &[])?;
                let vt = run(Via::Direct, &[("LOGGP_VT", "on")])?;
                let ratio = vt / native;
                let detail = format!("native {native:.2} s, LOGGP_VT=on {vt:.2} s: {ratio:.1}x");
                if ratio < 10.0 {
                    Ok(detail)
                } else {
                    Err(detail)
                }
            });
        }
    }
}

#[test]
fn nonblocking_collective_mix_at_4_ranks() {
    for mpi in BOTH {
        for (via, vars) in [
            (Via::Native, &[][..]),
            (Via::Direct, &[("LOGGP_VT", "on")][..]),
            (Via::Direct, EVERY_KNOB),
        ] {
            let mut job = Job::new(mpi, "icoll_mix").np(4).via(via).vars(vars);
            job.timeout = Duration::from_secs(120);
            let out = job.run();
            out.expect_pass("icoll_mix: ok np=4 ops=400");
            assert!(
                !out.crashed() && out.shim_lines().is_empty(),
                "{}",
                out.describe()
            );
        }
    }
}
