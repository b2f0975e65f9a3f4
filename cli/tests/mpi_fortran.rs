//! Fortran programs see the knobs: ping-pongs
//! through `include 'mpif.h'`, `use mpi` and `use mpi_f08`
//! (`tests/progs/pp_*.f90`), compiled with `mpifort.openmpi` and
//! `mpifort.mpich`, check their data natively, with the shim at zero and with
//! `L=+50us`, which must raise the half round trip by >= 50 us (Open MPI's
//! Fortran layer calls `PMPI_*` directly: a shim that only wraps the C
//! `MPI_*` symbols fails here).
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_fortran`

mod common;

use common::{retry, Job, Mpi, Via};

fn fortran(mpi: Mpi, flavour: &str) {
    let prog = format!("pp_{flavour}");
    let marker = format!("fortran {flavour}: half_rtt_us=");
    // Data under the shim at zero, once.
    Job::new(mpi, &prog)
        .via(Via::Direct)
        .run()
        .expect_pass(&marker);
    retry(3, &format!("{prog} {} L=+50us", mpi.name()), || {
        let native = Job::new(mpi, &prog).via(Via::Native).run();
        native.expect_pass(&marker);
        let shim = Job::new(mpi, &prog)
            .via(Via::Loggp)
            .var("LOGGP_L", "+50us")
            .run();
        shim.expect_pass(&marker);
        let (n, n_min) = (native.num("half_rtt_us"), native.num("half_rtt_us_min"));
        let (s, s_p10) = (shim.num("half_rtt_us"), shim.num("half_rtt_us_p10"));
        // Lower bound on the median against the native minimum (noise in
        // the native run must not hide a missing delay), upper bound on the
        // 10th percentile (noise only adds time).
        if s - n_min >= 49.5 && s_p10 - n_min < 80.0 {
            Ok(format!("native {n:.3} us, L=+50us {s:.3} us"))
        } else {
            Err(format!(
                "half round trip native {n:.3} us (min {n_min:.3}), with L=+50us {s:.3} us \
                 (p10 {s_p10:.3}): expected median >= native min + 50, p10 < native min + 80"
            ))
        }
    });
}

#[test]
fn fortran_mpifh_openmpi() {
    fortran(Mpi::OpenMpi, "mpifh");
}

#[test]
fn fortran_use_mpi_openmpi() {
    fortran(Mpi::OpenMpi, "usempi");
}

#[test]
fn fortran_mpi_f08_openmpi() {
    fortran(Mpi::OpenMpi, "f08");
}

#[test]
fn fortran_mpifh_mpich() {
    fortran(Mpi::Mpich, "mpifh");
}

#[test]
fn fortran_use_mpi_mpich() {
    fortran(Mpi::Mpich, "usempi");
}

#[test]
fn fortran_mpi_f08_mpich() {
    fortran(Mpi::Mpich, "f08");
}
