//! `loggp run -- srun ...` on a one-node Slurm (`scripts/slurm.sh up`:
//! Debian's slurm-wlm, slurmctld and slurmd on this machine; CI runs as
//! root, so it must come up there; elsewhere the tests say why they skip).
//!
//! - Open MPI through `srun --mpi=pmix`, MPICH through `srun --mpi=pmi2`:
//!   `loggp run --L 20us -- srun ... timing pingpong` against the same
//!   `srun` natively, in one attempt: the half round trip rises by 17 to
//!   23 us (L applied twice, or not at all, fails).
//! - The README's line for people who set the variables themselves:
//!   `srun --export=ALL,LD_PRELOAD=<shim>,LOGGP_L=20us`, Open MPI, the same
//!   bound.
//! - Four ranks on the two processors (`srun -O`) under every knob: the
//!   integrity program's data checks pass.
//!
//! One test runs them all in turn and stops the daemons at its end (also
//! when it fails), so that the tests after it run on the machine as they
//! would without Slurm.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test slurm`

mod common;

use common::{clean_env, prog, retry, root, run_command, shim, Mpi, Outcome};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Starts Slurm once; `Err(reason)` when it cannot run here.
fn slurm() -> Result<(), String> {
    static UP: OnceLock<Result<(), String>> = OnceLock::new();
    UP.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("scripts/slurm.sh"))
            .arg("up")
            .output()
            .expect("run scripts/slurm.sh");
        match out.status.code() {
            Some(0) => Ok(()),
            Some(3) => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            _ => panic!(
                "scripts/slurm.sh up failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    })
    .clone()
}

fn ready(test: &str) -> bool {
    match slurm() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {test}: {why}");
            false
        }
    }
}

/// srun's PMI plugin for each MPI.
fn pmi(mpi: Mpi) -> &'static str {
    if mpi.is_ompi() {
        "--mpi=pmix"
    } else {
        "--mpi=pmi2"
    }
}

/// `[loggp run LOGGP_ARGS --] srun --mpi=... SRUN_ARGS prog ARGS`.
fn srun(mpi: Mpi, loggp: &[&str], srun_args: &[&str], name: &str, args: &[&str]) -> Outcome {
    let mut words: Vec<String> = Vec::new();
    if !loggp.is_empty() {
        words.push(root().join("target/release/loggp").display().to_string());
        words.push("run".into());
        words.extend(loggp.iter().map(|s| s.to_string()));
        words.push("--".into());
    }
    words.extend(["srun".to_string(), pmi(mpi).to_string()]);
    words.extend(srun_args.iter().map(|s| s.to_string()));
    words.push(prog(mpi, name).display().to_string());
    words.extend(args.iter().map(|s| s.to_string()));
    let mut c = Command::new(&words[0]);
    c.args(&words[1..]);
    clean_env(&mut c);
    run_command(c, Duration::from_secs(120))
}

fn half_rtt(o: &Outcome, what: &str) -> Result<f64, String> {
    if !o.success() || !o.stdout.contains("timing pingpong:") {
        return Err(format!("{what}: failed\n{}", o.describe()));
    }
    Ok(o.num("half_rtt_us"))
}

/// L = 20 us through srun, `loggp` (its `--L`) or the exported variables
/// (`srun_args`), against the same `srun` natively, in one attempt: the
/// half round trip rises by 17 to 23 us.
fn l_through_srun(mpi: Mpi, what: &str, loggp: &[&str], srun_args: &[&str]) {
    if !ready(what) {
        return;
    }
    retry(3, what, || {
        let args = ["pingpong", "300"];
        let native = half_rtt(&srun(mpi, &[], &["-n", "2"], "timing", &args), "native")?;
        let l = half_rtt(&srun(mpi, loggp, srun_args, "timing", &args), "L=20us")?;
        let added = l - native;
        if !(17.0..=23.0).contains(&added) {
            return Err(format!(
                "half round trip {native:.3} us natively, {l:.3} us with L=20us: +{added:.3} \
                 (expected 17 to 23)"
            ));
        }
        Ok(format!("{native:.3} -> {l:.3} us (+{added:.3})"))
    });
}

fn latency(mpi: Mpi) {
    let what = format!("loggp run --L 20us -- srun, {}", mpi.name());
    l_through_srun(mpi, &what, &["--L", "20us"], &["-n", "2"]);
}

/// The README's `srun --export=ALL,LD_PRELOAD=...` line, without `loggp`.
fn srun_export_line_openmpi() {
    let mpi = Mpi::OpenMpi;
    let export = format!(
        "--export=ALL,LD_PRELOAD={},LOGGP_L=20us",
        shim(mpi).display()
    );
    l_through_srun(
        mpi,
        "srun --export=ALL,LD_PRELOAD=..., Open MPI",
        &[],
        &["-n", "2", &export],
    );
}

/// Four ranks on two processors through srun, every knob set: the data
/// arrive intact.
fn integrity(mpi: Mpi) {
    let what = format!("srun -O -n 4, every knob, {}", mpi.name());
    if !ready(&what) {
        return;
    }
    let o = srun(
        mpi,
        &[
            "--L", "5us", "--o-s", "2us", "--o-r", "2us", "--g-s", "3us", "--g-r", "3us", "--G",
            "1ns",
        ],
        &["-O", "-n", "4"],
        "integrity",
        &[],
    );
    assert!(
        o.success() && o.stdout.contains("PASS"),
        "{what}: expected PASS\n{}",
        o.describe()
    );
}

/// Stops Slurm's daemons when dropped, even while a check panics.
struct Down;

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(root().join("scripts/slurm.sh"))
            .arg("down")
            .status();
    }
}

#[test]
fn loggp_run_through_srun() {
    if !ready("loggp run -- srun") {
        return;
    }
    let _down = Down;
    latency(Mpi::OpenMpi);
    latency(Mpi::Mpich);
    srun_export_line_openmpi();
    integrity(Mpi::OpenMpi);
    integrity(Mpi::Mpich);
}
