//! MPI conformance of the shim's collectives and floating-point state, with
//! real `mpirun` jobs for Open MPI and MPICH, natively and with the shim
//! preloaded:
//!
//! - Arguments MPI says to ignore (`coll_ignored.c`): -1 counts,
//!   MPI_DATATYPE_NULL and NULL arrays where MPI_IN_PLACE or a non-root
//!   makes them insignificant, in Gather(v), Scatter(v), Allgather(v),
//!   Alltoall(v,w) and Reduce, blocking, nonblocking and large-count. The
//!   shim used to ask MPI_Type_size about them and die of MPI_ERR_TYPE.
//! - The floating-point environment (`fpenv.c`, `fpenv_fortran.f90`): MPI
//!   calls raise no exception flag and change neither the rounding mode nor
//!   the traps, also with traps on (`-ffpe-trap=invalid` in effect). The
//!   shim's start-up used to compute ∞ − ∞ and leave FE_INVALID raised
//!   (gfortran: "IEEE_INVALID_FLAG" at STOP; with traps, SIGFPE).
//! - The application's malloc (`heap.c`): after MPI_Init, 1 MiB
//!   point-to-point, a probed 1 MiB message and (under the shim) 1 MiB
//!   collectives, a 1 MiB `malloc` is still one of glibc's own mappings,
//!   as in a fresh process. The shim's start-up freed a 1 MiB buffer,
//!   which raised glibc's mmap threshold: the application's 1 MiB blocks
//!   then came from the heap, and MPICH moved them 30 % slower.
//! - Errors inside collectives (`coll_errors.c`): a truncation in a Gather
//!   reaches the application's error handler, on the application's
//!   communicator, with class MPI_ERR_TRUNCATE; a fatal one says which
//!   communicator. The shim used to raise it on its private duplicate
//!   ("MPI COMMUNICATOR 4 DUP FROM 0").
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

fn fp_environment(mpi: Mpi) {
    for (via, nps) in [(Via::Native, &[2][..]), (Via::Direct, &[2, 3][..])] {
        for &np in nps {
            for mode in ["flags", "trap"] {
                let marker = format!("fpenv: ok np={np} mode={mode}");
                pass(mpi, "fpenv", np, via, vt(via), &[mode], &marker);
                let marker = format!("fpenv fortran: ok np={np}");
                let out = pass(mpi, "fpenv_fortran", np, via, vt(via), &[mode], &marker);
                assert!(
                    !out.stderr.contains("IEEE_INVALID_FLAG"),
                    "{}",
                    out.describe()
                );
            }
        }
    }
    // Under knobs (each spends time in other code of the shim).
    pass(
        mpi,
        "fpenv",
        3,
        Via::Direct,
        &[
            ("LOGGP_L", "2us"),
            ("LOGGP_O_S", "1us"),
            ("LOGGP_O_R", "1us"),
            ("LOGGP_G_S", "1us"),
            ("LOGGP_G", "1GB/s"),
        ],
        &["trap"],
        "fpenv: ok np=3 mode=trap",
    );
}

fn heap_as_native(mpi: Mpi) {
    pass(mpi, "heap", 2, Via::Native, &[], &[], "heap: ok np=2");
    // The collectives under the shim only: both libraries' own raise the
    // threshold natively (their temporary buffers), the shim's must not.
    for np in [2, 3] {
        let marker = format!("heap: ok np={np}");
        pass(
            mpi,
            "heap",
            np,
            Via::Direct,
            vt(Via::Direct),
            &["coll"],
            &marker,
        );
    }
    // Under knobs (the sender's queue, the gate, a drawn L).
    pass(
        mpi,
        "heap",
        2,
        Via::Direct,
        &[
            ("LOGGP_L", "2us"),
            ("LOGGP_L_DIST", "normal:500ns"),
            ("LOGGP_G", "1GB/s"),
            ("LOGGP_G_S", "1us"),
        ],
        &["coll"],
        "heap: ok np=2",
    );
}

fn collective_errors(mpi: Mpi) {
    for (via, nps) in [(Via::Native, &[3][..]), (Via::Direct, &[2, 3, 4][..])] {
        for &np in nps {
            let marker = format!("coll errors: ok np={np}");
            pass(mpi, "coll_errors", np, via, vt(via), &["handler"], &marker);
        }
    }
    // Fatal: the job stops, and nothing names the shim's duplicate. Open MPI
    // names the communicator on which the error was raised; the shim says in
    // one line which call failed on which communicator.
    for via in [Via::Native, Via::Direct] {
        let job = Job::new(mpi, "coll_errors")
            .np(3)
            .via(via)
            .vars(vt(via))
            .args(&["fatal"]);
        let mut out = job.run();
        // Open MPI 4.1's mpirun sometimes loses the aborting rank's message
        // itself ("ORTE_ERROR_LOG: Data unpack ... show_help.c"), natively
        // too (3 of 15 native runs here; CI once lost it three times in a
        // row): run such a job again, at most six times.
        for _ in 0..6 {
            if !(mpi == Mpi::OpenMpi
                && out.stderr.contains("ORTE_ERROR_LOG")
                && !out.stderr.contains("on communicator"))
            {
                break;
            }
            eprintln!("note: mpirun lost the error message, running again");
            out = job.run();
        }
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(
            !out.success() && !out.timed_out && !all.contains("not stopped"),
            "the truncation must stop the job\n{}",
            out.describe()
        );
        assert!(
            !all.contains("DUP FROM") && !all.contains("loggp-shim collective"),
            "the error names the shim's private communicator\n{}",
            out.describe()
        );
        if mpi == Mpi::OpenMpi {
            assert!(
                all.contains("on communicator MPI_COMM_WORLD") && all.contains("MPI_ERR_TRUNCATE"),
                "{}",
                out.describe()
            );
        }
        if via == Via::Direct {
            let lines = out.shim_lines();
            assert!(
                lines.len() == 1
                    && lines[0].starts_with(
                        "loggp-shim: MPI_Gather on MPI_COMM_WORLD failed at its rank 0:"
                    ),
                "expected one line from the shim naming MPI_Gather and MPI_COMM_WORLD\n{}",
                out.describe()
            );
        }
    }
}

#[test]
fn conform_ignored_arguments_openmpi() {
    ignored_arguments(Mpi::OpenMpi);
}

#[test]
fn conform_ignored_arguments_mpich() {
    ignored_arguments(Mpi::Mpich);
}

#[test]
fn conform_fp_environment_openmpi() {
    fp_environment(Mpi::OpenMpi);
}

#[test]
fn conform_fp_environment_mpich() {
    fp_environment(Mpi::Mpich);
}

#[test]
fn conform_heap_openmpi() {
    heap_as_native(Mpi::OpenMpi);
}

#[test]
fn conform_heap_mpich() {
    heap_as_native(Mpi::Mpich);
}

#[test]
fn conform_collective_errors_openmpi() {
    collective_errors(Mpi::OpenMpi);
}

#[test]
fn conform_collective_errors_mpich() {
    collective_errors(Mpi::Mpich);
}
