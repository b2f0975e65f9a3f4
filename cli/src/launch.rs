//! Finding the right shim and putting it into the ranks of a launcher
//! command (Open MPI `-x`, MPICH `-genv`), and only into the ranks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The two MPI libraries the shim is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpi {
    OpenMpi,
    Mpich,
}

impl Mpi {
    pub fn parse(s: &str) -> Result<Mpi, String> {
        match s {
            "openmpi" | "ompi" | "open-mpi" => Ok(Mpi::OpenMpi),
            "mpich" => Ok(Mpi::Mpich),
            _ => Err(format!(
                "--mpi {s:?} is not accepted: expected openmpi or mpich"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
        }
    }

    /// Debian's launcher for this MPI.
    pub fn mpirun(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpirun.openmpi",
            Mpi::Mpich => "mpirun.mpich",
        }
    }

    /// Debian's C compiler wrapper for this MPI.
    pub fn mpicc(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "mpicc.openmpi",
            Mpi::Mpich => "mpicc.mpich",
        }
    }

    /// File name of the shim built for this MPI.
    pub fn shim_file(self) -> String {
        format!("libloggp-{}.so", self.name())
    }
}

/// Directory holding the built artefacts: `$LOGGP_BIN_DIR`, else the
/// directory of the running `loggp` executable.
pub fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LOGGP_BIN_DIR") {
        return PathBuf::from(d);
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Absolute path of the shim for `mpi`, or an error saying how to build it.
pub fn shim_path(mpi: Mpi) -> Result<PathBuf, String> {
    let dir = std::env::var_os("LOGGP_SHIM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(bin_dir);
    let p = dir.join(mpi.shim_file());
    if p.is_file() {
        Ok(p.canonicalize().unwrap_or(p))
    } else {
        Err(format!(
            "the shim for {} is not built: {} does not exist (run scripts/build.sh)",
            mpi.name(),
            p.display()
        ))
    }
}

/// Guesses the MPI of a launcher from its name, then from `--version`.
pub fn detect_mpi(launcher: &str) -> Option<Mpi> {
    let base = Path::new(launcher)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if base.ends_with(".openmpi") || base == "orterun" || base == "prterun" {
        return Some(Mpi::OpenMpi);
    }
    if base.ends_with(".mpich") || base.ends_with(".hydra") {
        return Some(Mpi::Mpich);
    }
    let out = Command::new(launcher).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    if text.contains("Open MPI") || text.contains("OpenRTE") {
        Some(Mpi::OpenMpi)
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        Some(Mpi::Mpich)
    } else {
        None
    }
}

/// True when `word` names an MPI launcher.
pub fn is_launcher(word: &str) -> bool {
    let base = Path::new(word)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = base.split('.').next().unwrap_or("");
    matches!(stem, "mpirun" | "mpiexec" | "orterun" | "prterun")
}

/// Builds the command that runs `cmd` with the shim and `vars` in every
/// rank. For a launcher, the variables are passed with the launcher's own
/// flag so that the launcher itself is not preloaded; a plain program (a
/// singleton run) gets them in its environment.
pub fn command(mpi: Mpi, shim: &Path, vars: &[(String, String)], cmd: &[String]) -> Command {
    let mut all: Vec<(String, String)> = vec![("LD_PRELOAD".into(), shim.display().to_string())];
    all.extend(vars.iter().cloned());
    let mut c = Command::new(&cmd[0]);
    if is_launcher(&cmd[0]) {
        for (k, v) in &all {
            match mpi {
                Mpi::OpenMpi => {
                    c.arg("-x").arg(format!("{k}={v}"));
                }
                Mpi::Mpich => {
                    c.arg("-genv").arg(k).arg(v);
                }
            }
        }
    } else {
        c.envs(all.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    c.args(&cmd[1..]);
    if mpi == Mpi::OpenMpi {
        // Root is common on lab machines and containers; Open MPI refuses
        // it unless told. Harmless otherwise.
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
        c.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    c
}

/// The command that runs `cmd` as it is, without the shim (the native
/// reference of `loggp sweep`).
pub fn native_command(mpi: Mpi, cmd: &[String]) -> Command {
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]);
    if mpi == Mpi::OpenMpi {
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
        c.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn openmpi_uses_x() {
        let vars = vec![("LOGGP_L".to_string(), "5us".to_string())];
        let cmd: Vec<String> = ["mpirun", "-np", "2", "./a"].map(String::from).to_vec();
        let c = command(Mpi::OpenMpi, Path::new("/s.so"), &vars, &cmd);
        assert_eq!(
            args(&c),
            [
                "-x",
                "LD_PRELOAD=/s.so",
                "-x",
                "LOGGP_L=5us",
                "-np",
                "2",
                "./a"
            ]
        );
    }

    #[test]
    fn mpich_uses_genv() {
        let cmd: Vec<String> = ["mpiexec.hydra", "-n", "2", "./a"]
            .map(String::from)
            .to_vec();
        let c = command(Mpi::Mpich, Path::new("/s.so"), &[], &cmd);
        assert_eq!(args(&c), ["-genv", "LD_PRELOAD", "/s.so", "-n", "2", "./a"]);
    }

    #[test]
    fn singleton_gets_environment() {
        let cmd: Vec<String> = vec!["./a".into()];
        let c = command(Mpi::Mpich, Path::new("/s.so"), &[], &cmd);
        assert!(args(&c).is_empty());
        assert!(c
            .get_envs()
            .any(|(k, v)| k == "LD_PRELOAD" && v.is_some_and(|v| v == "/s.so")));
    }

    #[test]
    fn names() {
        assert_eq!(detect_mpi("/usr/bin/mpirun.openmpi"), Some(Mpi::OpenMpi));
        assert_eq!(detect_mpi("mpiexec.hydra"), Some(Mpi::Mpich));
        assert!(is_launcher("/usr/bin/mpiexec.mpich"));
        assert!(!is_launcher("./mpirunner"));
        assert!(Mpi::parse("lam").is_err());
    }
}
