//! `loggp run` picks the shim build that serves what the user runs, and the
//! shim reports the library actually loaded (issue "Any MPI"):
//! - for each launcher given by its path (Debian's two, the PyPI Open MPI 5
//!   and MPICH 5), `loggp run --log info` names the build it preloads and
//!   the shim's info line names the loaded library's own version;
//! - a singleton program gets the build for the libmpi it links;
//! - a launcher no build serves stops with one line naming it;
//! - Debian's Open MPI 4.1 build under Open MPI 5.0 (same ABI, measured)
//!   runs and its LOGGP_REPORT records the loaded 5.0.11 beside the 4.1.4
//!   it was built for.
//!
//! Run: `bash scripts/test.sh`, or `cargo test -p loggp --test pick` after
//! scripts/install-mpi-wheels.sh and the builds for the wheels.

mod common;

use common::{loggp_bin, prog, run_command, shim, Job, Mpi, Via};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// What each library's info line must contain.
fn loaded(mpi: Mpi) -> &'static str {
    match mpi {
        Mpi::OpenMpi => "Open MPI v4.1",
        Mpi::Mpich => "MPICH Version: 4.0",
        Mpi::OpenMpi5 => "Open MPI v5.0",
        Mpi::Mpich5 => "MPICH Version: 5.0",
    }
}

/// The launcher as a user gives it: a full path.
fn launcher(mpi: Mpi) -> PathBuf {
    let l = mpi.mpirun();
    if l.contains('/') {
        return PathBuf::from(l);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(&l))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{l} not in PATH"))
}

fn picks(mpi: Mpi) {
    let mut c = Command::new(loggp_bin());
    c.args(["run", "--log", "info", "--L", "5us", "--"])
        .arg(launcher(mpi))
        .args(["-np", "2"])
        .arg(prog(mpi, "hello"));
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = run_command(c, Duration::from_secs(60));
    out.expect_pass("hello: PASS");
    let want = format!("loggp run: preloading {}", shim(mpi).display());
    assert!(
        out.stderr.lines().any(|l| l.starts_with(&want)),
        "expected a line starting {want:?}\n{}",
        out.describe()
    );
    let lines = out.shim_lines();
    assert!(
        lines.len() == 1 && lines[0].contains(loaded(mpi)),
        "expected one loggp-shim line naming {:?}, got {lines:#?}\n{}",
        loaded(mpi),
        out.describe()
    );
}

#[test]
fn run_picks_the_build_for_its_launcher_openmpi() {
    picks(Mpi::OpenMpi);
}

#[test]
fn run_picks_the_build_for_its_launcher_mpich() {
    picks(Mpi::Mpich);
}

#[test]
fn run_picks_the_build_for_its_launcher_openmpi5() {
    picks(Mpi::OpenMpi5);
}

#[test]
fn run_picks_the_build_for_its_launcher_mpich5() {
    picks(Mpi::Mpich5);
}

#[test]
fn a_singleton_gets_the_build_for_the_libmpi_it_links() {
    let mpi = Mpi::Mpich5;
    let mut c = Command::new(loggp_bin());
    c.args(["run", "--log", "info", "--vt", "on", "--"])
        .arg(prog(mpi, "hello"));
    let out = run_command(c, Duration::from_secs(60));
    out.expect_pass("hello: PASS np=1");
    let want = format!("loggp run: preloading {}", shim(mpi).display());
    assert!(
        out.stderr.contains(&want) && out.stderr.contains("libmpi.so.12"),
        "expected {want:?} and the libmpi found\n{}",
        out.describe()
    );
    // shim-path --mpirun answers the same without running anything
    for m in [Mpi::Mpich5, Mpi::OpenMpi] {
        let o = Command::new(loggp_bin())
            .args(["shim-path", "--mpirun"])
            .arg(prog(m, "hello"))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            shim(m).display().to_string(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_launcher_no_build_serves_is_one_line() {
    let dir = std::env::temp_dir().join(format!("loggp-pick-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("mpirun");
    std::fs::write(&fake, "#!/bin/sh\necho 'mpirun (Open MPI) 3.1.6'\n").unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let o = Command::new(loggp_bin())
        .args(["run", "--"])
        .arg(&fake)
        .args(["-np", "2", "./app"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.lines().count() == 1
            && err.contains(&format!("{} (Open MPI 3.1.6)", fake.display()))
            && err.contains("no build of the shim serves it"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debian_build_serves_open_mpi_5_and_reports_what_is_loaded() {
    let dir = std::env::temp_dir().join(format!("loggp-pick-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("r.json");
    let out = Job::new(Mpi::OpenMpi5, "hello")
        .via(Via::Direct)
        .preload(shim(Mpi::OpenMpi))
        .var("LOGGP_L", "5us")
        .var("LOGGP_REPORT", &report.display().to_string())
        .run();
    out.expect_pass("hello: PASS");
    let text = std::fs::read_to_string(&report).expect("report written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["mpi"], "openmpi", "{text}");
    assert_eq!(v["mpi_version"], "5.0.11", "{text}");
    assert_eq!(v["shim_built_for"], "4.1.4", "{text}");
    assert!(
        v["mpi_library"]
            .as_str()
            .is_some_and(|s| s.starts_with("Open MPI v5.0.11")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_standard_abi_program_is_refused_with_one_line() {
    // hello.c built with MPICH 5's mpicc_abi: it links libmpi_abi.so.1,
    // whose handles differ from MPICH's own ABI.
    let wrapper = PathBuf::from(Mpi::Mpich5.mpirun()).with_file_name("mpicc_abi");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hello-abi-{}", std::process::id()));
    let src = common::root().join("tests/progs/hello.c");
    let st = Command::new(&wrapper)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lm")
        .status()
        .expect("mpicc_abi runs");
    assert!(st.success(), "{} failed", wrapper.display());
    let mut c = Command::new(&exe);
    c.env("LD_PRELOAD", shim(Mpi::Mpich5)).env("LOGGP_L", "5us");
    let out = run_command(c, Duration::from_secs(30));
    let lines = out.shim_lines();
    assert!(
        !out.success()
            && !out.crashed()
            && lines.len() == 1
            && lines[0].contains("MPI-5 standard ABI")
            && !out.stdout.contains("hello: PASS"),
        "expected one loggp-shim line naming the standard ABI\n{}",
        out.describe()
    );
    let o = Command::new(loggp_bin())
        .args(["run", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && err.lines().count() == 1 && err.contains("standard ABI"),
        "{err}"
    );
    let _ = std::fs::remove_file(&exe);
}
