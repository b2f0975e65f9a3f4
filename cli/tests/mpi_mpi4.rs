//! MPI-4 point-to-point entry points that MPICH 4.0 exports and Open MPI
//! 4.1 does not (DESIGN.md §2: "every entry point through which a message
//! can leave or enter a rank must be seen ... refuse clearly what is not
//! supported"), with `tests/progs/mpi4.c` under MPICH:
//! - large-count calls (`MPI_Send_c`, `MPI_Recv_c`, `MPI_Isend_c`,
//!   `MPI_Irecv_c`) mixed with the classic ones keep every byte and status,
//!   and feel `L` like the classic calls; above 2^31-1 elements
//!   (`tests/progs/bigc.c`) they deliver every byte and count as natively,
//!   probed (Probe, Mprobe + Mrecv_c, Improbe + Imrecv_c) or exchanged
//!   (Sendrecv_c, Sendrecv_replace_c, Isendrecv(_replace)_c) too;
//! - `MPI_Isendrecv` and `MPI_Isendrecv_replace` work under virtual time
//!   and every knob, and an Isendrecv exchange feels `L` once, like an
//!   Isend + Irecv pair.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_mpi4`

mod common;

use common::{retry, Job, Mpi, Outcome, Via, EVERY_KNOB};
use std::time::{Duration, Instant};

/// `part`: "c" runs the large-count calls only, "all" adds
/// MPI_Isendrecv(_replace).
fn job(via: Via, vars: &[(&str, &str)], part: &str) -> Outcome {
    Job::new(Mpi::Mpich, "mpi4")
        .via(via)
        .vars(vars)
        .args(&["300", part])
        .run()
}

#[test]
fn mpi4_calls_keep_data_mpich() {
    job(Via::Native, &[], "all").expect_pass("mpi4: PASS");
    // The shim at zero is a pass-through: everything must work.
    job(Via::Direct, &[], "all").expect_pass("mpi4: PASS");
    // Under virtual time, and with every knob set, everything must work.
    job(Via::Direct, &[("LOGGP_VT", "on")], "all").expect_pass("mpi4: PASS");
    job(Via::Direct, EVERY_KNOB, "all").expect_pass("mpi4: PASS");
}

/// Large-count calls above 2^31-1 elements (2^31 + 8 bytes, `bigc.c`):
/// Send_c/Recv_c, Isend_c/Irecv_c, Probe then Recv_c, Mprobe + Mrecv_c,
/// Improbe + Imrecv_c, Sendrecv_c, Sendrecv_replace_c, Isendrecv_c and
/// Isendrecv_replace_c. Natively, through the shim as a pass-through, at
/// `LOGGP_VT=on` and with every knob the data, `MPI_Get_count_c` and the
/// probed sizes are whole (the shim once refused these calls, and once
/// failed Sendrecv_replace_c in MPI_Pack). Under virtual time the status
/// of Isendrecv(_replace)_c's Wait is checked too, which MPICH 4.0.2 itself
/// leaves unset. Each run moves 13 such messages and checks every byte: up
/// to about 35 s on a 2-core machine, hence the longer timeout.
#[test]
fn large_counts_above_2g_mpich() {
    let on = [("LOGGP_VT", "on")];
    let status: &[&str] = &["isendrecv-status"];
    for (name, via, vars, args) in [
        ("native (no shim)", Via::Native, &[][..], &[][..]),
        ("shim, pass-through", Via::Direct, &[][..], &[][..]),
        ("shim, LOGGP_VT=on", Via::Direct, &on[..], status),
        ("shim, every knob", Via::Direct, EVERY_KNOB, status),
    ] {
        let mut job = Job::new(Mpi::Mpich, "bigc").via(via).vars(vars).args(args);
        job.timeout = Duration::from_secs(180);
        let t0 = Instant::now();
        let out = job.run();
        assert!(
            out.success() && out.stdout.contains("bigc: PASS"),
            "bigc {name}: expected exit 0 and \"bigc: PASS\"\n{}",
            out.describe()
        );
        eprintln!("bigc {name}: {:.1} s", t0.elapsed().as_secs_f64());
    }
}

#[test]
fn isendrecv_feels_l_once_mpich() {
    retry(3, "MPI_Isendrecv with L=+20us", || {
        let native = job(Via::Native, &[], "all");
        native.expect_pass("mpi4: PASS");
        let n_min = native.num("isendrecv_us_min");
        let out = job(Via::Loggp, &[("LOGGP_L", "+20us")], "all");
        out.expect_pass("mpi4: PASS");
        let (s, s_p10) = (out.num("isendrecv_us"), out.num("isendrecv_us_p10"));
        // One message each way per exchange, both in flight at once: L is
        // felt once (+20), not twice (+40, the knob applied to both halves
        // in turn) and not zero times (bypassed).
        if s - n_min >= 19.8 && s_p10 - n_min < 35.0 {
            Ok(format!(
                "native min {n_min:.3} us, L=+20us median {s:.3} us"
            ))
        } else {
            Err(format!(
                "8-byte Isendrecv exchange native min {n_min:.3} us, with L=+20us median \
                 {s:.3} us (p10 {s_p10:.3}): expected median >= native min + 19.8, \
                 p10 < native min + 35"
            ))
        }
    });
}

#[test]
fn large_count_calls_feel_l_mpich() {
    retry(3, "MPI_Send_c/MPI_Recv_c with L=+20us", || {
        let native = job(Via::Native, &[], "c");
        native.expect_pass("mpi4: PASS");
        let (n_med, n_min) = (native.num("half_rtt_us"), native.num("half_rtt_us_min"));
        let out = job(Via::Loggp, &[("LOGGP_L", "+20us")], "c");
        out.expect_pass("mpi4: PASS");
        let (s, s_p10) = (out.num("half_rtt_us"), out.num("half_rtt_us_p10"));
        // MPI_Allreduce_c runs the shim's recursive doubling: one exchange
        // at np = 2, so +20 us.
        let (ca, cn) = (out.num("allreduce_c_us"), native.num("allreduce_c_us_min"));
        if ca - cn < 19.8 {
            return Err(format!(
                "MPI_Allreduce_c native min {cn:.3} us, with L=+20us median {ca:.3} us: \
                 expected >= native min + 20"
            ));
        }
        if s - n_min >= 19.8 && s_p10 - n_min < 40.0 {
            Ok(format!(
                "native {n_med:.3} us, L=+20us {s:.3} us; MPI_Allreduce_c {cn:.3} -> {ca:.3} us"
            ))
        } else {
            Err(format!(
                "large-count half round trip native {n_med:.3} us (min {n_min:.3}), with \
                 L=+20us {s:.3} us (p10 {s_p10:.3}): expected median >= native min + 20, \
                 p10 < native min + 40"
            ))
        }
    });
}

/// Partitioned communication (MPI 4.0 chapter 4) works natively and with
/// the shim as a pass-through, and is refused under virtual time with one
/// line naming the call: no crash, no hang, no wrong data.
#[test]
fn partitioned_refused_cleanly_mpich() {
    let run = |via, vars: &[(&str, &str)]| {
        Job::new(Mpi::Mpich, "partitioned")
            .via(via)
            .vars(vars)
            .run()
    };
    run(Via::Native, &[]).expect_pass("partitioned: PASS");
    run(Via::Direct, &[]).expect_pass("partitioned: PASS");
    let out = run(Via::Direct, &[("LOGGP_VT", "on")]);
    let lines = out.shim_lines();
    assert!(
        !out.success()
            && !out.timed_out
            && !out.crashed()
            && !lines.is_empty()
            && lines
                .iter()
                .all(|l| l.contains("MPI_Psend_init") || l.contains("MPI_Precv_init")),
        "LOGGP_VT=on: expected a non-zero exit with loggp-shim lines naming \
         MPI_Psend_init/MPI_Precv_init\n{}",
        out.describe()
    );
}
