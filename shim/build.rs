//! Probes one MPI library's ABI (handle types, status layout, constants) by
//! compiling and running probe/abi_probe.c with that MPI's `mpicc`, and
//! writes the facts as Rust into $OUT_DIR/abi_gen.rs. The shim never links
//! libmpi: every MPI function is found at run time (dlsym RTLD_NEXT), so
//! preloading it into a program of the other MPI can be caught and refused.
//!
//! MPICC names the compiler wrapper of any MPI (Open MPI or MPICH family,
//! any version); the family is read from the probe, not assumed. Without
//! MPICC, LOGGP_SHIM_MPI=openmpi|mpich picks Debian's wrapper
//! (mpicc.openmpi, the default, or mpicc.mpich); when both are given they
//! must agree. What the build was made from (family, version, wrapper, the
//! libmpi the probe linked) is passed to the shim as LOGGP_BUILD_* so that
//! `loggp` can read it back from the library file.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    exports();
    println!("cargo::rerun-if-env-changed=LOGGP_SHIM_MPI");
    println!("cargo::rerun-if-env-changed=MPICC");
    println!("cargo::rerun-if-changed=probe/abi_probe.c");
    println!("cargo::rustc-check-cfg=cfg(ompi)");
    println!("cargo::rustc-check-cfg=cfg(mpich)");
    let asked = env::var("LOGGP_SHIM_MPI").ok().filter(|s| !s.is_empty());
    let default_cc = match asked.as_deref() {
        None | Some("openmpi") => "mpicc.openmpi",
        Some("mpich") => "mpicc.mpich",
        Some(other) => {
            panic!("LOGGP_SHIM_MPI={other:?} is not accepted: expected openmpi or mpich")
        }
    };
    let cc = env::var("MPICC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default_cc.into());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let exe = out.join("abi_probe");
    let status = Command::new(&cc)
        .args(["-O0", "-o"])
        .arg(&exe)
        .arg("probe/abi_probe.c")
        .status()
        .unwrap_or_else(|e| {
            panic!("MPICC={cc}: cannot run it ({e}): install the MPI (scripts/install-deps.sh) or give the path of its mpicc")
        });
    assert!(
        status.success(),
        "MPICC={cc} failed to compile probe/abi_probe.c"
    );
    let run = Command::new(&exe).output().expect("cannot run abi_probe");
    assert!(
        run.status.success(),
        "abi_probe found an unexpected ABI: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    let (cfg, family) = if text.contains("Flavour::OpenMpi") {
        ("ompi", "openmpi")
    } else if text.contains("Flavour::Mpich") {
        ("mpich", "mpich")
    } else {
        panic!("abi_probe printed no flavour:\n{text}")
    };
    if let Some(a) = &asked {
        assert!(
            a == family,
            "LOGGP_SHIM_MPI={a} but MPICC={cc} is the wrapper of {family}"
        );
    }
    println!("cargo::rustc-cfg={cfg}");
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("pub const LIB_VERSION: &str = \""))
        .and_then(|v| v.strip_suffix("\";"))
        .unwrap_or("unknown")
        .to_string();
    println!("cargo::rustc-env=LOGGP_BUILD_FAMILY={family}");
    println!("cargo::rustc-env=LOGGP_BUILD_VERSION={version}");
    println!(
        "cargo::rustc-env=LOGGP_BUILD_MPICC={}",
        which(&cc).display()
    );
    println!("cargo::rustc-env=LOGGP_BUILD_LIBMPI={}", libmpi(&exe));
    std::fs::write(out.join("abi_gen.rs"), text).unwrap();
}

/// The absolute path of a command (as found in PATH), symlinks kept.
/// Reads `exports.txt`, the table of every exported function, into
/// $OUT_DIR/exports_gen.rs (`EXPORTS`, for `src/exports.rs`); a malformed
/// line, an unknown kind or a name listed twice fails the build.
fn exports() {
    println!("cargo::rerun-if-changed=exports.txt");
    let text = std::fs::read_to_string("exports.txt").expect("shim/exports.txt is readable");
    let mut rows = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let kind = match fields[..] {
            [name, kind]
                if name.starts_with("MPI_")
                    && name[4..]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                assert!(
                    seen.insert(name),
                    "shim/exports.txt:{}: {name} is listed twice",
                    i + 1
                );
                match kind {
                    "all" => "All",
                    "mpich" => "Mpich",
                    "later" => "Later",
                    _ => panic!(
                        "shim/exports.txt:{}: kind {kind:?}: expected all, mpich or later",
                        i + 1
                    ),
                }
            }
            _ => panic!(
                "shim/exports.txt:{}: expected `MPI_<name> <kind>`, got {line:?}",
                i + 1
            ),
        };
        rows += &format!("    (\"{}\", Builds::{kind}),\n", fields[0]);
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(
        out.join("exports_gen.rs"),
        format!("/// shim/exports.txt\npub const EXPORTS: &[(&str, Builds)] = &[\n{rows}];\n"),
    )
    .expect("OUT_DIR is writable");
}

fn which(cmd: &str) -> PathBuf {
    if cmd.contains('/') {
        return std::path::absolute(cmd).unwrap_or_else(|_| PathBuf::from(cmd));
    }
    env::var_os("PATH")
        .iter()
        .flat_map(env::split_paths)
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(cmd))
}

/// The libmpi the probe was linked against, symlinks resolved (from ldd),
/// or an empty string when ldd does not name one.
fn libmpi(exe: &Path) -> String {
    let Ok(out) = Command::new("ldd").arg(exe).output() else {
        return String::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("=>"))
        .filter(|(name, _)| {
            let n = name.trim();
            n.starts_with("libmpi.") || n.starts_with("libmpich.") || n.starts_with("libmpi_abi.")
        })
        .filter_map(|(_, rest)| rest.split_whitespace().next())
        .map(|p| {
            std::fs::canonicalize(p)
                .map(|c| c.display().to_string())
                .unwrap_or_else(|_| p.to_string())
        })
        .next()
        .unwrap_or_default()
}
