//! Real applications from Debian's packages give the same scientific output
//! under the shim as natively ("nothing changes for the application
//! but time"). Each runs at np = 2 natively, with `LOGGP_VT=on` (every
//! knob zero) and with every knob set, and its output must equal the
//! native run's by the rule stated per application:
//! - ScaLAPACK's LU test `xdlu` (package `scalapack-mpi-test`, both MPIs):
//!   every line identical, except the three timing columns of its `WALL`
//!   lines (LU time, solve time, MFLOPS); the PASSED/FAILED column, the
//!   summary and gfortran's closing note on signalling floating-point
//!   exceptions included.
//! - LAMMPS (`lammps`, built for Open MPI only): the 3-d Lennard-Jones melt
//!   of `examples/lammps/in.lj` at 4,000 atoms, 100 steps: the thermo table
//!   and the neighbour-list statistics identical to the last printed digit.
//!   At np = 2 every reduction is a sum of two values, which is the same
//!   in either order, so bit-identical output is the rule, not a tolerance.
//! - HPCC (`hpcc`, built for Open MPI only), `examples/hpcc/hpccinf.txt`
//!   (N = 400, NB = 40, a 1 × 2 grid; about a second): in its output file
//!   `hpccoutf.txt`, every line that states a result identical to the last
//!   printed digit: HPL's residual line and its PASSED/FAILED counts,
//!   PTRANS's counts, RandomAccess's "Found N errors" lines, STREAM's
//!   validation, and in the summary `Success`, HPL's norms, the PTRANS
//!   residual, the RandomAccess error counts and updates, MPIFFT's maximum
//!   error. Timings and rates are left out, and so is StarDGEMM's
//!   "Scaled residual", which differs between native runs (its matrices
//!   are drawn afresh each run). At np = 2 the reductions are sums of two
//!   values: bit-identical is the rule.
//!
//! `scripts/install-deps.sh` installs the three packages.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_apps`

mod common;

use common::{Job, Mpi, Outcome, Via, EVERY_KNOB};
use std::path::{Path, PathBuf};

/// `LOGGP_*` settings of one run.
type Knobs = Vec<(&'static str, &'static str)>;

/// (name, how, variables) of the three runs of each application.
fn configs() -> Vec<(&'static str, Via, Knobs)> {
    vec![
        ("native (no shim)", Via::Native, vec![]),
        ("shim, LOGGP_VT=on", Via::Direct, vec![("LOGGP_VT", "on")]),
        ("shim, every knob", Via::Direct, EVERY_KNOB.to_vec()),
    ]
}

/// Runs `job` under each configuration; `extract` turns stdout+stderr into
/// the text that must equal the native run's (`Err` when the output is not
/// what a finished run prints).
fn compare(what: &str, job: Job, extract: impl Fn(&Outcome) -> Result<String, String>) {
    let mut native: Option<String> = None;
    let mut failures = Vec::new();
    for (name, via, vars) in configs() {
        let out = job.clone().via(via).vars(&vars).run();
        let got = if out.success() {
            extract(&out)
        } else {
            Err("the run failed".to_string())
        };
        match (got, &native) {
            (Err(e), _) => failures.push(format!("{what} {name}: {e}\n{}", out.describe())),
            (Ok(text), None) => native = Some(text),
            (Ok(text), Some(n)) if &text != n => failures.push(format!(
                "{what} {name}: output differs from the native run's\n{}",
                line_diff(n, &text)
            )),
            (Ok(_), Some(_)) => eprintln!("ok: {what} {name} ({:.2} s)", out.elapsed.as_secs_f64()),
        }
        if native.is_none() {
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The lines only one of `native` and `shim` has, marked `-` and `+`.
fn line_diff(native: &str, shim: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (native.lines().collect(), shim.lines().collect());
    let mut d: Vec<String> = a
        .iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("- {l}"))
        .collect();
    d.extend(
        b.iter()
            .filter(|l| !a.contains(l))
            .map(|l| format!("+ {l}")),
    );
    if d.is_empty() {
        d.push("(the same lines, in another order or number)".into());
    }
    d.join("\n")
}

fn scalapack_dir(mpi: Mpi) -> PathBuf {
    PathBuf::from(format!(
        "/usr/lib/x86_64-linux-gnu/scalapack/{}-tests",
        mpi.name()
    ))
}

/// xdlu's output without its timings.
fn xdlu_text(out: &Outcome) -> Result<String, String> {
    let all = format!("{}{}", out.stdout, out.stderr);
    if !all.contains("END OF TESTS") || !all.contains("completed and passed residual checks") {
        return Err("no 'END OF TESTS' and residual summary".into());
    }
    let mut v = Vec::new();
    for line in all.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"WALL") && f.len() == 12 {
            // TIME M N NB NRHS NBRHS P Q | LU Sol MFLOPS | CHECK
            v.push(format!("{} {}", f[..8].join(" "), f[11]));
        } else {
            v.push(line.trim_end().to_string());
        }
    }
    // Two ranks print gfortran's note in either order.
    v.sort();
    Ok(v.join("\n"))
}

fn xdlu(mpi: Mpi) {
    let src = scalapack_dir(mpi);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("xdlu-{}", mpi.name()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(src.join("LU.dat"), dir.join("LU.dat"))
        .expect("LU.dat of scalapack-mpi-test: run scripts/install-deps.sh");
    compare(
        &format!("xdlu {}", mpi.name()),
        Job::external(mpi, &src.join("xdlu")).dir(&dir),
        xdlu_text,
    );
}

#[test]
fn scalapack_lu_openmpi() {
    xdlu(Mpi::OpenMpi);
}

#[test]
fn scalapack_lu_mpich() {
    xdlu(Mpi::Mpich);
}

/// LAMMPS's thermo table and neighbour statistics.
fn lammps_text(out: &Outcome) -> Result<String, String> {
    let mut v = Vec::new();
    let mut in_thermo = false;
    for line in out.stdout.lines() {
        if line.starts_with("Step ") {
            in_thermo = true;
        } else if line.starts_with("Loop time") {
            in_thermo = false;
        }
        let stats = [
            "Total # of neighbors",
            "Ave neighs/atom",
            "Neighbor list builds",
            "Dangerous builds",
        ];
        if in_thermo || stats.iter().any(|s| line.starts_with(s)) {
            v.push(line.trim_end().to_string());
        }
    }
    if v.len() < 7 {
        return Err("no thermo table and neighbour statistics in the output".into());
    }
    Ok(v.join("\n"))
}

#[test]
fn lammps_lj_openmpi() {
    let input = common::root().join("examples/lammps/in.lj");
    let input = input.display().to_string();
    let job = Job::external(Mpi::OpenMpi, Path::new("/usr/bin/lmp")).args(&[
        "-in", &input, "-var", "x", "0.5", "-var", "y", "0.5", "-var", "z", "0.5", "-log", "none",
    ]);
    compare("lammps in.lj 4000 atoms", job, lammps_text);
}

/// HPCC's results (see the module) from the last run in `hpccoutf.txt`
/// (HPCC appends to it).
fn hpcc_text(file: &Path) -> Result<String, String> {
    let all = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let start = all
        .rfind("This is the DARPA/DOE HPC Challenge Benchmark")
        .ok_or("no HPCC header in hpccoutf.txt")?;
    if !all[start..].contains("End of HPC Challenge tests.") {
        return Err("HPCC did not finish".into());
    }
    let keys = [
        "Success",
        "HPL_RnormI",
        "HPL_Anorm1",
        "HPL_AnormI",
        "HPL_Xnorm1",
        "HPL_XnormI",
        "HPL_BnormI",
        "HPL_N",
        "PTRANS_residual",
        "MPIRandomAccess_LCG_Errors",
        "MPIRandomAccess_LCG_ErrorsFraction",
        "MPIRandomAccess_LCG_ExeUpdates",
        "MPIRandomAccess_Errors",
        "MPIRandomAccess_ErrorsFraction",
        "MPIRandomAccess_ExeUpdates",
        "MPIFFT_N",
        "MPIFFT_maxErr",
    ];
    let body = ["Found ", "||Ax-b||", "Solution Validates"];
    let mut v = Vec::new();
    let mut summary = false;
    for line in all[start..].lines() {
        let line = line.trim();
        if line.starts_with("Begin of Summary") {
            summary = true;
        }
        let result = if summary {
            line.split_once('=').is_some_and(|(k, _)| keys.contains(&k))
        } else {
            body.iter().any(|b| line.starts_with(b)) || line.contains("residual checks")
        };
        if result {
            v.push(line.to_string());
        }
    }
    if !v.iter().any(|l| l == "Success=1") {
        return Err("no Success=1 in HPCC's summary".into());
    }
    Ok(v.join("\n"))
}

#[test]
fn hpcc_openmpi() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hpcc-openmpi");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        common::root().join("examples/hpcc/hpccinf.txt"),
        dir.join("hpccinf.txt"),
    )
    .unwrap();
    let out = dir.join("hpccoutf.txt");
    let _ = std::fs::remove_file(&out);
    compare(
        "hpcc N=400",
        Job::external(Mpi::OpenMpi, Path::new("/usr/bin/hpcc")).dir(&dir),
        |_| hpcc_text(&out),
    );
}
