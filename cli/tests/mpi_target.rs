//! Targeting (`LOGGP_L=20us@pairs=0:1`, `loggp_core::target`): a knob
//! reaches the pairs its selection names and no other. Real `mpirun` jobs
//! of `tests/progs/target.c` at np = 3 on one host, Open MPI and MPICH.
//!
//! - `L=+20us@pairs=0:1` (through `loggp run --L` for Open MPI, on the
//!   launcher for MPICH): the 0↔1 half round trip rises by 20 µs, on
//!   MPI_COMM_WORLD and on a communicator whose ranks are reversed (the
//!   selection names MPI_COMM_WORLD ranks), and so does a barrier of
//!   ranks {0,1} (a collective's messages feel it); 0↔2 stays within a few
//!   µs of native, and no send slows down. A shim that ignored the
//!   selection (20 µs everywhere) or the knob (nowhere) fails.
//! - `O_S=10us@to=2` (a sender-side knob: the sender finds the
//!   destination's MPI_COMM_WORLD rank): rank 0's sends to 2 take at
//!   least 10 µs, its sends to 1 do not, on both communicators.
//! - `G=2ns@pairs=0:1`, `G_S=20us@to=2`, `G_R=20us@from=2` (`target N
//!   gaps`): the targeted pair's 64 KiB ping (G), burst of 20 sends (g_s)
//!   or 20 back-to-back receives (g_r) grows by the requested increment
//!   ((64 KiB − 1)·2 ns = 131 µs; 19·20 µs = 380 µs) within ±15 %, the
//!   other pair's by less than 15 % of it: applied twice (+100 %), not at
//!   all, or to both pairs fails. G is read from each pair's fastest ping
//!   against the fastest untargeted one (native 64 KiB pings on shared
//!   cores wander too far for medians of single jobs).
//! - Bad input stops the job with one line naming the variable: a rank the
//!   job lacks, `@inter` with every rank on one host (both known only at
//!   MPI_Init), overlapping items (refused before).
//!
//! Bounds are on medians against the native run's median or minimum, loose
//! enough for 3 ranks on 2 shared cores (each check retried 3 times).
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_target`

mod common;

use common::{retry, Job, Mpi, Outcome, Via};
use loggp_core::Config;

const REPS: &str = "300";

fn target(mpi: Mpi, via: Via, vars: &[(&str, &str)]) -> Outcome {
    let out = Job::new(mpi, "target")
        .np(3)
        .via(via)
        .vars(vars)
        .args(&[REPS])
        .run();
    out.expect_pass("target: PASS");
    out
}

fn check(ok: bool, what: String) -> Result<String, String> {
    if ok {
        Ok(what)
    } else {
        Err(what)
    }
}

fn l_on_one_pair(mpi: Mpi, via: Via) {
    retry(3, &format!("L=+20us@pairs=0:1, {}", mpi.name()), || {
        let n = target(mpi, Via::Native, &[]);
        let s = target(mpi, via, &[("LOGGP_L", "+20us@pairs=0:1")]);
        let mut bad = Vec::new();
        let mut line = Vec::new();
        for k in ["pp_1", "rev_1", "bar_1"] {
            let (nat, got) = (n.num(k), s.num(k));
            line.push(format!("{k} {nat:.2} -> {got:.2} us"));
            // Raised by L: at least native minimum + 19, at most native
            // median + 30 (a second L would give 40).
            if got < n.num(&format!("{k}_min")) + 19.0 || got > nat + 30.0 {
                bad.push(k);
            }
        }
        for k in ["pp_2", "rev_2", "bar_2", "send_1", "send_2"] {
            let (nat, got) = (n.num(k), s.num(k));
            line.push(format!("{k} {nat:.2} -> {got:.2} us"));
            // Untouched: within 8 us of native (20 us if L leaked).
            if got > nat + 8.0 {
                bad.push(k);
            }
        }
        check(
            bad.is_empty(),
            format!("{}; out of bounds: {bad:?}", line.join(", ")),
        )
    });
}

fn o_s_to_one_rank(mpi: Mpi) {
    retry(3, &format!("O_S=10us@to=2, {}", mpi.name()), || {
        let n = target(mpi, Via::Native, &[]);
        let s = target(mpi, Via::Direct, &[("LOGGP_O_S", "10us@to=2")]);
        let (s1, s2) = (s.num("send_1"), s.num("send_2"));
        // A round trip 0 -> 2 -> 0 holds one o_s (0's send): half of it
        // in the half round trip; 0 <-> 1 none.
        let (r1, r2) = (s.num("rev_1"), s.num("rev_2"));
        let (n1, n2) = (n.num("rev_1"), n.num("rev_2"));
        check(
            s2 >= 9.9
                && s2 <= n.num("send_2") + 14.0
                && s1 <= n.num("send_1") + 4.0
                && r2 >= n.num("rev_2_min") + 4.9
                && r1 <= n1 + 4.0,
            format!(
                "send to 1 {s1:.2} us (native {:.2}), to 2 {s2:.2} us (native {:.2}); \
                 reversed comm half round trip with 1 {r1:.2} (native {n1:.2}), with 2 {r2:.2} (native {n2:.2})",
                n.num("send_1"),
                n.num("send_2")
            ),
        )
    });
}

fn gaps(mpi: Mpi, vars: &[(&str, &str)]) -> Outcome {
    let out = Job::new(mpi, "target")
        .np(3)
        .via(if vars.is_empty() {
            Via::Native
        } else {
            Via::Direct
        })
        .vars(vars)
        .args(&["100", "gaps"])
        .run();
    out.expect_pass("target: PASS");
    out
}

/// g_s and g_r on one pair (G is checked on its own, above): `(variable, value, targeted key, other
/// key, requested increment in µs)`.
const GAPS: &[(&str, &str, &str, &str, f64)] = &[
    // 20 departures to rank 2: 19 gaps
    ("LOGGP_G_S", "20us@to=2", "sgap_2", "sgap_1", 380.0),
    // 20 deliveries from rank 2: 19 gaps (the native receives overlap them)
    ("LOGGP_G_R", "20us@from=2", "rgap_2", "rgap_1", 380.0),
];

fn gaps_on_one_pair(mpi: Mpi) {
    // G on 0:1. Each 64 KiB ping is held by the emulated machine for
    // (64 KiB - 1) x G at least, so the targeted pair's fastest ping is
    // steady (131.9-136.1 us in 8 jobs by hand); what is not is the
    // native time of a 64 KiB ping with 3 ranks on 2 shared cores: medians
    // of single jobs read 11-95 us, and once every ping of a job took 50 us
    // or more (a median against a median failed stop 39's CI three times
    // of three). So both pairs are measured by their fastest ping, against
    // the fastest untargeted 64 KiB ping of either job (the real transfer,
    // 8-12 us): doubled (+262), missing (~0) or on both pairs fails.
    let want = 131.07;
    retry(3, &format!("LOGGP_G=2ns@pairs=0:1, {}", mpi.name()), || {
        let n = gaps(mpi, &[]);
        let s = gaps(mpi, &[("LOGGP_G", "2ns@pairs=0:1")]);
        let floor = n
            .num("bw_1_min")
            .min(n.num("bw_2_min"))
            .min(s.num("bw_2_min"));
        let (dh, dm) = (s.num("bw_1_min") - floor, s.num("bw_2_min") - floor);
        check(
            (0.85 * want..=1.15 * want).contains(&dh) && dm < 0.15 * want,
            format!(
                "fastest 64 KiB ping: 0-1 {:.2} us, 0-2 {:.2} us; untargeted floor {floor:.2} us \
                 (native 0-1 {:.2}, 0-2 {:.2}): 0-1 +{dh:.2} (want +{want:.2} ± 15 %), 0-2 +{dm:.2} (want < {:.2})",
                s.num("bw_1_min"),
                s.num("bw_2_min"),
                n.num("bw_1_min"),
                n.num("bw_2_min"),
                0.15 * want
            ),
        )
    });
    for &(var, value, hit, miss, want) in GAPS {
        retry(3, &format!("{var}={value}, {}", mpi.name()), || {
            let n = gaps(mpi, &[]);
            let s = gaps(mpi, &[(var, value)]);
            let (dh, dm) = (s.num(hit) - n.num(hit), s.num(miss) - n.num(miss));
            check(
                (0.85 * want..=1.15 * want).contains(&dh) && dm < 0.15 * want,
                format!(
                    "{hit} {:.2} -> {:.2} us (+{dh:.2}, want +{want:.2} ± 15 %), {miss} {:.2} -> {:.2} us (+{dm:.2}, want < {:.2})",
                    n.num(hit),
                    s.num(hit),
                    n.num(miss),
                    s.num(miss),
                    0.15 * want
                ),
            )
        });
    }
}

/// A refused setting: non-zero exit, one `loggp-shim:` line naming the
/// variable and saying `want`, nothing past MPI_Init.
fn refused(mpi: Mpi, var: &str, value: &str, want: &str) {
    let out = Job::new(mpi, "target")
        .np(3)
        .via(Via::Direct)
        .var(var, value)
        .args(&["5"])
        .run();
    let lines = out.shim_lines();
    assert!(
        !out.success()
            && !out.timed_out
            && !out.crashed()
            && !out.stdout.contains("target:")
            && lines.len() == 1
            && lines[0].contains(&format!("{var}=\""))
            && lines[0].contains(want),
        "{var}={value:?}: expected one line naming {var} and saying {want:?}\n{}",
        out.describe()
    );
}

fn bad_input(mpi: Mpi) {
    refused(
        mpi,
        "LOGGP_L",
        "5us@pairs=0:7",
        "names rank 7, but the job has 3 ranks",
    );
    refused(mpi, "LOGGP_G_R", "5us@inter", "selects no pair");
    let e = Config::from_vars([("LOGGP_O_R", "1us@ranks=0,2us@ranks=2")])
        .unwrap_err()
        .to_string();
    refused(mpi, "LOGGP_O_R", "1us@ranks=0,2us@ranks=2", &e);
}

#[test]
fn l_on_one_pair_openmpi() {
    l_on_one_pair(Mpi::OpenMpi, Via::Loggp);
}

#[test]
fn l_on_one_pair_mpich() {
    l_on_one_pair(Mpi::Mpich, Via::Direct);
}

#[test]
fn o_s_to_one_rank_openmpi() {
    o_s_to_one_rank(Mpi::OpenMpi);
}

#[test]
fn o_s_to_one_rank_mpich() {
    o_s_to_one_rank(Mpi::Mpich);
}

#[test]
fn gaps_on_one_pair_openmpi() {
    gaps_on_one_pair(Mpi::OpenMpi);
}

#[test]
fn gaps_on_one_pair_mpich() {
    gaps_on_one_pair(Mpi::Mpich);
}

#[test]
fn bad_input_openmpi() {
    bad_input(Mpi::OpenMpi);
}

#[test]
fn bad_input_mpich() {
    bad_input(Mpi::Mpich);
}
