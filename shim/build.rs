//! Probes one MPI library's ABI (handle types, status layout, constants) by
//! compiling and running probe/abi_probe.c with that MPI's `mpicc`, and
//! writes the facts as Rust into $OUT_DIR/abi_gen.rs. The shim never links
//! libmpi: every MPI function is found at run time (dlsym RTLD_NEXT), so
//! preloading it into a program of the other MPI can be caught and refused.
//!
//! LOGGP_SHIM_MPI=openmpi|mpich chooses the MPI (default openmpi); MPICC
//! overrides the compiler wrapper.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-env-changed=LOGGP_SHIM_MPI");
    println!("cargo::rerun-if-env-changed=MPICC");
    println!("cargo::rerun-if-changed=probe/abi_probe.c");
    println!("cargo::rustc-check-cfg=cfg(ompi)");
    println!("cargo::rustc-check-cfg=cfg(mpich)");
    let mpi = env::var("LOGGP_SHIM_MPI").unwrap_or_else(|_| "openmpi".into());
    let (cfg, default_cc) = match mpi.as_str() {
        "openmpi" => ("ompi", "mpicc.openmpi"),
        "mpich" => ("mpich", "mpicc.mpich"),
        other => panic!("LOGGP_SHIM_MPI={other:?} is not accepted: expected openmpi or mpich"),
    };
    println!("cargo::rustc-cfg={cfg}");
    let cc = env::var("MPICC").unwrap_or_else(|_| default_cc.into());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let exe = out.join("abi_probe");
    let status = Command::new(&cc)
        .args(["-O0", "-o"])
        .arg(&exe)
        .arg("probe/abi_probe.c")
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run {cc} ({e}): install the MPI (scripts/install-deps.sh)")
        });
    assert!(status.success(), "{cc} failed to compile probe/abi_probe.c");
    let run = Command::new(&exe).output().expect("cannot run abi_probe");
    assert!(
        run.status.success(),
        "abi_probe found an unexpected ABI: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::write(out.join("abi_gen.rs"), run.stdout).unwrap();
}
