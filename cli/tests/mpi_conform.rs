//! Conformance faults of issue 14, with real `mpirun` jobs for Open MPI and
//! MPICH, natively and with the shim preloaded:
//!
//! - Arguments MPI says to ignore (`coll_ignored.c`): -1 counts,
//!   MPI_DATATYPE_NULL and NULL arrays where MPI_IN_PLACE or a non-root
//!   makes them insignificant, in Gather(v), Scatter(v), Allgather(v),
//!   Alltoall(v,w) and Reduce, blocking, nonblocking and large-count. The
//!   shim used to ask MPI_Type_size about them and die of MPI_ERR_TYPE.
//!
//! np 2, 3 and 4 (oversubscribed on this machine).
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_conform`

mod common;

use common::{Job, Mpi, Outcome, Via};

fn vt(via: Via) -> &'static [(&'static str, &'static str)] {
    if via == Via::Native {
        &[]
    } else {
        &[("LOGGP_VT", "on")]
    }
}

/// `prog args` passes with `marker` on stdout, without a crash or a word
/// from the shim.
fn pass(
    mpi: Mpi,
    prog: &str,
    np: u32,
    via: Via,
    vars: &[(&str, &str)],
    args: &[&str],
    marker: &str,
) -> Outcome {
    let out = Job::new(mpi, prog)
        .np(np)
        .via(via)
        .vars(vars)
        .args(args)
        .run();
    out.expect_pass(marker);
    assert!(
        !out.crashed() && out.shim_lines().is_empty(),
        "{}",
        out.describe()
    );
    out
}

fn ignored_arguments(mpi: Mpi) {
    for (via, nps) in [(Via::Native, &[3][..]), (Via::Direct, &[2, 3, 4][..])] {
        for &np in nps {
            let marker = format!("coll ignored: ok np={np}");
            pass(mpi, "coll_ignored", np, via, vt(via), &[], &marker);
        }
    }
    // The linear algorithms take other paths at the root.
    pass(
        mpi,
        "coll_ignored",
        3,
        Via::Direct,
        &[
            ("LOGGP_VT", "on"),
            ("LOGGP_COLL_GATHER", "linear"),
            ("LOGGP_COLL_SCATTER", "linear"),
        ],
        &[],
        "coll ignored: ok np=3",
    );
}

#[test]
fn conform_ignored_arguments_openmpi() {
    ignored_arguments(Mpi::OpenMpi);
}

#[test]
fn conform_ignored_arguments_mpich() {
    ignored_arguments(Mpi::Mpich);
}
