//! Entry points that newer libraries export and some builds' headers lack
//! (`shim/src/later.rs`), with `tests/progs/later.c` on each library that
//! has them: `MPI_Isendrecv(_replace)` (MPICH 4.0 and 5.0, Open MPI 5.0)
//! and MPI-4.1's `MPI_Request_get_status_{all,any,some}` (MPICH 5.0):
//! - the data and the three forms' answers are right natively, through the
//!   shim at zero, under virtual time and with every knob;
//! - under `L=+20us` get_status_all reports the messages complete no
//!   earlier than their virtual arrival (native + 20 us) and as late as
//!   MPI_Waitall sees them, within 15 %: a form that bypassed the engine
//!   would report them at native speed.
//!
//! Run: `bash scripts/test.sh` (installs the PyPI MPIs and builds for them)
//! or `cargo test -p loggp --test mpi_later`.

mod common;

use common::{retry, Job, Mpi, Via, EVERY_KNOB};

fn parts(mpi: Mpi) -> &'static str {
    match mpi {
        Mpi::OpenMpi => "",
        Mpi::Mpich | Mpi::OpenMpi5 => "isendrecv",
        Mpi::Mpich5 => "isendrecv,getstatus",
    }
}

fn keeps_data(mpi: Mpi) {
    let every = EVERY_KNOB;
    let want = format!("later: PASS parts={} ", parts(mpi));
    Job::new(mpi, "later")
        .via(Via::Native)
        .args(&["30"])
        .run()
        .expect_pass(&want);
    for vars in [&[][..], &[("LOGGP_VT", "on")][..], every] {
        Job::new(mpi, "later")
            .vars(vars)
            .args(&["30"])
            .run()
            .expect_pass(&want);
    }
}

#[test]
fn later_entry_points_keep_data_openmpi5() {
    keeps_data(Mpi::OpenMpi5);
}

#[test]
fn later_entry_points_keep_data_mpich5() {
    keeps_data(Mpi::Mpich5);
}

#[test]
fn later_entry_points_keep_data_mpich() {
    keeps_data(Mpi::Mpich);
}

#[test]
fn get_status_waits_for_virtual_arrival_mpich5() {
    let mpi = Mpi::Mpich5;
    retry(3, "Request_get_status_all under L=+20us", || {
        let run = |via: Via, vars: &[(&str, &str)], mode: &[&str]| {
            let out = Job::new(mpi, "later")
                .via(via)
                .vars(vars)
                .args(&[&["100"], mode].concat())
                .run();
            out.expect_pass("later: PASS");
            out
        };
        let native = run(Via::Native, &[], &[]).num("getstatus_us_min");
        let poll = run(Via::Direct, &[("LOGGP_L", "+20us")], &[]).num("getstatus_us");
        let wait = run(Via::Direct, &[("LOGGP_L", "+20us")], &["waitall"]).num("getstatus_us");
        let what = format!(
            "native min {native:.3} us; with L=+20us get_status_all median {poll:.3} us, \
             Waitall median {wait:.3} us: expected get_status >= native + 19.8 and within \
             15 % (+1 us) of Waitall"
        );
        if poll - native >= 19.8 && (poll - wait).abs() <= 0.15 * wait + 1.0 {
            Ok(what)
        } else {
            Err(what)
        }
    });
}
