//! Finding the right shim and putting it into the ranks of a launcher
//! command (Open MPI `-x`, MPICH `-genv`), and only into the ranks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The two ABI families the shim is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    OpenMpi,
    Mpich,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "openmpi",
            Family::Mpich => "mpich",
        }
    }
    /// As the library calls itself.
    pub fn title(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
        }
    }
    fn from_name(s: &str) -> Option<Family> {
        match s {
            "openmpi" | "ompi" | "open-mpi" => Some(Family::OpenMpi),
            "mpich" => Some(Family::Mpich),
            _ => None,
        }
    }
}

/// One build of the shim and the launcher that runs its jobs: Debian's
/// two (`Mpi::OpenMpi`, `Mpi::Mpich`, the defaults) or a build made with
/// `MPICC=... scripts/build.sh` (`openmpi-5.0`, found on disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mpi {
    pub family: Family,
    /// The build's name: its files are `libloggp-<build>.so`,
    /// `loggp-prtt-<build>`, `loggp-collbench-<build>`.
    pub build: &'static str,
    /// The launcher of its jobs.
    pub launcher: &'static str,
}

#[allow(non_upper_case_globals)]
impl Mpi {
    /// Debian's Open MPI.
    pub const OpenMpi: Mpi = Mpi {
        family: Family::OpenMpi,
        build: "openmpi",
        launcher: "mpirun.openmpi",
    };
    /// Debian's MPICH.
    pub const Mpich: Mpi = Mpi {
        family: Family::Mpich,
        build: "mpich",
        launcher: "mpirun.mpich",
    };

    /// `openmpi`, `mpich` (Debian's) or the name of a build on disk
    /// (`openmpi-5.0`).
    pub fn parse(s: &str) -> Result<Mpi, String> {
        match Family::from_name(s) {
            Some(Family::OpenMpi) => return Ok(Mpi::OpenMpi),
            Some(Family::Mpich) => return Ok(Mpi::Mpich),
            None => {}
        }
        let all = builds();
        match all.iter().find(|b| b.name == s) {
            Some(b) => Ok(b.mpi(None)),
            None => Err(format!(
                "--mpi {s:?} is not accepted: expected {}",
                accepted_names(&all)
            )),
        }
    }

    /// The build's name (file names, reports).
    pub fn name(self) -> &'static str {
        self.build
    }

    /// The launcher of this build's jobs.
    pub fn mpirun(self) -> &'static str {
        self.launcher
    }

    /// The same build run by another launcher.
    pub fn with_launcher(self, launcher: &str) -> Mpi {
        Mpi {
            launcher: leak(launcher.to_string()),
            ..self
        }
    }

    /// File name of the shim of this build.
    pub fn shim_file(self) -> String {
        format!("libloggp-{}.so", self.name())
    }
}

/// What `--mpi` accepts, with the builds on disk.
pub fn accepted_names(all: &[Build]) -> String {
    let mut names = vec!["openmpi".to_string(), "mpich".to_string()];
    for b in all {
        if !names.contains(&b.name) {
            names.push(b.name.clone());
        }
    }
    let last = names.pop().unwrap_or_default();
    format!("{} or {last} (loggp shim-path --list)", names.join(", "))
}

/// A string that lives as long as the process (a few per command).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A shim library on disk and what it was built from (the line build.rs
/// puts into it: family, version, compiler wrapper, libmpi).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    pub name: String,
    pub family: Family,
    pub version: String,
    pub mpicc: PathBuf,
    pub libmpi: PathBuf,
    pub path: PathBuf,
}

impl Build {
    /// Reads the build line out of a shim library file.
    pub fn read(path: &Path) -> Option<Build> {
        let name = path
            .file_name()?
            .to_str()?
            .strip_prefix("libloggp-")?
            .strip_suffix(".so")?
            .to_string();
        let bytes = std::fs::read(path).ok()?;
        let tag = b"LOGGP-SHIM-BUILD\t";
        let at = bytes.windows(tag.len()).position(|w| w == tag)?;
        let rest = &bytes[at + tag.len()..];
        let end = rest.windows(4).position(|w| w == b"\tEND")?;
        let line = String::from_utf8_lossy(&rest[..end]).into_owned();
        let field = |k: &str| {
            line.split('\t')
                .find_map(|f| f.strip_prefix(k)?.strip_prefix('='))
                .unwrap_or("")
                .to_string()
        };
        Some(Build {
            name,
            family: Family::from_name(&field("family"))?,
            version: field("version"),
            mpicc: PathBuf::from(field("mpicc")),
            libmpi: PathBuf::from(field("libmpi")),
            path: path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        })
    }

    /// Debian's default build of its family (`openmpi`, `mpich`).
    pub fn is_default(&self) -> bool {
        self.name == self.family.name()
    }

    /// The launcher beside its compiler wrapper (Debian's: by its name).
    pub fn default_launcher(&self) -> String {
        if self.is_default() {
            return format!("mpirun.{}", self.name);
        }
        let dir = self.mpicc.parent().unwrap_or(Path::new("."));
        for l in ["mpirun", "mpiexec"] {
            if dir.join(l).is_file() {
                return dir.join(l).display().to_string();
            }
        }
        "mpirun".into()
    }

    /// The `Mpi` of this build, run by `launcher` (its own when `None`).
    pub fn mpi(&self, launcher: Option<&str>) -> Mpi {
        let launcher = launcher.map_or_else(|| self.default_launcher(), str::to_string);
        Mpi {
            family: self.family,
            build: leak(self.name.clone()),
            launcher: leak(launcher),
        }
    }

    /// `major.minor` of the version it was built from.
    pub fn series(&self) -> String {
        series(&self.version)
    }
}

fn series(v: &str) -> String {
    loggp_core::mpilib::parse_version(v)
        .map(|[a, b, _]| format!("{a}.{b}"))
        .unwrap_or_default()
}

/// The build for a library version string (a calibration re-analysed from
/// its raw output): a build of the same family and series, else Debian's
/// of the family.
pub fn for_library(text: &str) -> Mpi {
    let loaded = loggp_core::mpilib::parse_library_version(text);
    let family = match loaded.as_ref().map(|l| l.family) {
        Some("mpich") => Family::Mpich,
        Some(_) => Family::OpenMpi,
        None if text.contains("MPICH") => Family::Mpich,
        None => Family::OpenMpi,
    };
    let want = loaded.map(|l| series(&l.version_string()));
    builds()
        .iter()
        .find(|b| b.family == family && want.as_ref() == Some(&b.series()))
        .map_or(
            match family {
                Family::OpenMpi => Mpi::OpenMpi,
                Family::Mpich => Mpi::Mpich,
            },
            |b| b.mpi(None),
        )
}

/// Every build of the shim in the shim directory, Debian's first, then by
/// name.
pub fn builds() -> Vec<Build> {
    let dir = shim_dir();
    let mut v: Vec<Build> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Build::read(&e.path()))
        .collect();
    v.sort_by(|a, b| (!a.is_default(), &a.name).cmp(&(!b.is_default(), &b.name)));
    v
}

fn shim_dir() -> PathBuf {
    std::env::var_os("LOGGP_SHIM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(bin_dir)
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
    let p = shim_dir().join(mpi.shim_file());
    if p.is_file() {
        Ok(p.canonicalize().unwrap_or(p))
    } else if mpi.build == mpi.family.name() {
        Err(format!(
            "the shim for {} is not built: {} does not exist (run scripts/build.sh)",
            mpi.name(),
            p.display()
        ))
    } else {
        Err(format!(
            "the shim build {} does not exist: {} (run MPICC=<its mpicc> scripts/build.sh)",
            mpi.name(),
            p.display()
        ))
    }
}

/// What a launcher or program reveals of its MPI.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// What was looked at (a path), for messages.
    pub what: String,
    pub family: Option<Family>,
    /// Its version (`5.0.11`), when it says.
    pub version: Option<String>,
    /// Directory of the launcher (symlinks resolved).
    pub dir: Option<PathBuf>,
    /// The libmpi a program links (symlinks resolved).
    pub libmpi: Option<PathBuf>,
    /// True when the program links the MPI-5 standard ABI (libmpi_abi).
    pub standard_abi: bool,
}

impl Found {
    fn describe(&self) -> String {
        let mut s = self.what.clone();
        match (&self.family, &self.version) {
            (Some(f), Some(v)) => s.push_str(&format!(" ({} {v})", f.title())),
            (Some(f), None) => s.push_str(&format!(" ({})", f.title())),
            _ => {}
        }
        if let Some(l) = &self.libmpi {
            s.push_str(&format!(", linking {}", l.display()));
        }
        s
    }
}

/// Finds `word` as a command: a path, or a name in PATH.
pub fn which(word: &str) -> Option<PathBuf> {
    if word.contains('/') {
        let p = PathBuf::from(word);
        return p.is_file().then(|| std::path::absolute(&p).unwrap_or(p));
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(word))
        .find(|p| p.is_file())
}

/// Family and version from a launcher's `--version` text.
pub fn parse_launcher_version(text: &str) -> (Option<Family>, Option<String>) {
    let version_after = |key: &str| {
        text.split(key)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .filter(|v| loggp_core::mpilib::parse_version(v).is_some())
            .map(str::to_string)
    };
    if text.contains("Open MPI") || text.contains("OpenRTE") || text.contains("PRRTE") {
        (Some(Family::OpenMpi), version_after(") "))
    } else if text.contains("HYDRA") || text.contains("MPICH") {
        (Some(Family::Mpich), version_after("Version:"))
    } else {
        (None, None)
    }
}

/// What a launcher reveals: its location, and its name (Debian's
/// `.openmpi`/`.mpich`) or `--version`.
pub fn inspect_launcher(launcher: &str) -> Found {
    let path = which(launcher);
    let mut f = Found {
        what: path
            .as_ref()
            .map_or(launcher.to_string(), |p| p.display().to_string()),
        dir: path
            .as_ref()
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| p.parent().map(Path::to_path_buf)),
        ..Found::default()
    };
    let base = Path::new(launcher)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Ok(out) = Command::new(launcher).arg("--version").output() {
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (f.family, f.version) = parse_launcher_version(&text);
    }
    if base.ends_with(".openmpi") || base == "orterun" || base == "prterun" {
        f.family = Some(Family::OpenMpi);
    } else if base.ends_with(".mpich") || base.ends_with(".hydra") {
        f.family = Some(Family::Mpich);
    }
    f
}

/// What a program reveals: the libmpi it links (ldd).
pub fn inspect_program(program: &str) -> Option<Found> {
    let path = which(program)?;
    let out = Command::new("ldd").arg(&path).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let Some((name, rest)) = line.split_once("=>") else {
            continue;
        };
        let name = name.trim();
        let family = if name.starts_with("libmpi_abi.") {
            None
        } else if name.starts_with("libmpi.so.40") {
            Some(Family::OpenMpi)
        } else if name.starts_with("libmpich.") || name.starts_with("libmpi.so.12") {
            Some(Family::Mpich)
        } else {
            continue;
        };
        let lib = rest
            .split_whitespace()
            .next()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)));
        return Some(Found {
            what: path.display().to_string(),
            family,
            libmpi: lib,
            standard_abi: family.is_none(),
            ..Found::default()
        });
    }
    None
}

/// Picks the build that serves what `cmd` runs: a launcher by its
/// location and `--version`, else the first word of the command that is a
/// program linking libmpi (a singleton run, `srun ... ./app`). Returns the
/// build (with `cmd[0]` as its launcher when it is one) and a line saying
/// why; `Err` is one line naming what was found.
pub fn pick(cmd: &[String]) -> Result<(Mpi, String), String> {
    let all = builds();
    let first = cmd.first().map(String::as_str).unwrap_or("");
    let found = if is_launcher(first) {
        Some(inspect_launcher(first))
    } else {
        cmd.iter().find_map(|w| inspect_program(w))
    };
    let Some(found) = found else {
        return Err(format!(
            "cannot tell which MPI {first:?} uses (not an mpirun/mpiexec, and no word of the \
             command is a program linking libmpi); say --mpi {}",
            accepted_names(&all)
        ));
    };
    let launcher = is_launcher(first).then_some(first);
    choose(&all, &found).map(|(b, why)| {
        (
            b.mpi(launcher),
            format!("build {} for {}: {why}", b.name, found.describe()),
        )
    })
}

/// The rule of `pick`, on what was found.
pub fn choose<'a>(all: &'a [Build], found: &Found) -> Result<(&'a Build, String), String> {
    if found.standard_abi {
        return Err(format!(
            "{} uses the MPI-5 standard ABI (libmpi_abi); no build of the shim serves it yet: \
             build the program with its MPI's own mpicc",
            found.describe()
        ));
    }
    let Some(family) = found.family else {
        return Err(format!(
            "cannot tell which MPI {} belongs to; say --mpi {}",
            found.describe(),
            accepted_names(all)
        ));
    };
    let mine: Vec<&Build> = all.iter().filter(|b| b.family == family).collect();
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let want = found.version.as_deref().map(series);
    let same_series = |b: &&&Build| want.as_ref().is_none_or(|w| *w == b.series());
    // 1. The same library a program links, or a launcher beside the
    //    build's compiler wrapper, of the same series.
    if let Some(lib) = &found.libmpi {
        if let Some(b) = mine.iter().find(|b| canon(&b.libmpi) == *lib) {
            return Ok((b, "the libmpi it was built against".into()));
        }
    }
    if let Some(dir) = &found.dir {
        if let Some(b) = mine
            .iter()
            .filter(same_series)
            .find(|b| canon(&b.mpicc).parent() == Some(dir.as_path()))
        {
            return Ok((b, "built with the mpicc beside it".into()));
        }
    }
    // 2. A build of the same series, Debian's first.
    if want.is_some() {
        if let Some(b) = mine.iter().find(same_series) {
            return Ok((b, format!("built for {} {}", family.title(), b.version)));
        }
    }
    // 3. A build whose ABI was measured identical for the version found.
    let measured = match family {
        Family::OpenMpi => loggp_core::mpilib::MEASURED_OPENMPI,
        Family::Mpich => loggp_core::mpilib::MEASURED_MPICH,
    };
    let major = |v: &str| loggp_core::mpilib::parse_version(v).map(|v| v[0]);
    let serves = |b: &&&Build| {
        let built = major(&b.version);
        let runs = found.version.as_deref().and_then(major);
        match runs {
            Some(r) => built.is_some_and(|m| measured.contains(&m)) && measured.contains(&r),
            None => true,
        }
    };
    if let Some(b) = mine.iter().find(serves) {
        return Ok((
            b,
            format!(
                "built for {} {}, same ABI (measured)",
                family.title(),
                b.version
            ),
        ));
    }
    Err(format!(
        "found {}, but no build of the shim serves it (built: {}); build one: \
         MPICC=<its mpicc> scripts/build.sh",
        found.describe(),
        if all.is_empty() {
            "none".to_string()
        } else {
            all.iter()
                .map(|b| format!("{} for {} {}", b.name, b.family.title(), b.version))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ))
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
            match mpi.family {
                Family::OpenMpi => {
                    c.arg("-x").arg(format!("{k}={v}"));
                }
                Family::Mpich => {
                    c.arg("-genv").arg(k).arg(v);
                }
            }
        }
    } else {
        c.envs(all.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    c.args(&cmd[1..]);
    if mpi.family == Family::OpenMpi {
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

    fn build(name: &str, family: Family, version: &str, prefix: &str) -> Build {
        Build {
            name: name.into(),
            family,
            version: version.into(),
            mpicc: PathBuf::from(format!("{prefix}/bin/mpicc")),
            libmpi: PathBuf::from(format!("{prefix}/lib/libmpi.so.40")),
            path: PathBuf::from(format!("/b/libloggp-{name}.so")),
        }
    }

    fn builds4() -> Vec<Build> {
        vec![
            build("mpich", Family::Mpich, "4.0.2", "/usr"),
            build("openmpi", Family::OpenMpi, "4.1.4", "/usr"),
            build("mpich-5.0", Family::Mpich, "5.0.2", "/m5"),
            build("openmpi-5.0", Family::OpenMpi, "5.0.11", "/o5"),
        ]
    }

    fn launcher(family: Family, version: &str, dir: &str) -> Found {
        Found {
            what: format!("{dir}/mpirun"),
            family: Some(family),
            version: Some(version.into()),
            dir: Some(PathBuf::from(dir)),
            ..Found::default()
        }
    }

    #[test]
    fn launcher_versions_are_read() {
        assert_eq!(
            parse_launcher_version("mpirun (Open MPI) 5.0.11\n\nReport bugs to ..."),
            (Some(Family::OpenMpi), Some("5.0.11".into()))
        );
        assert_eq!(
            parse_launcher_version("HYDRA build details:\n    Version:     4.0.2\n"),
            (Some(Family::Mpich), Some("4.0.2".into()))
        );
        assert_eq!(parse_launcher_version("srun 23.02"), (None, None));
    }

    #[test]
    fn the_build_beside_the_launcher_or_of_its_series_wins() {
        let all = builds4();
        let (b, why) = choose(&all, &launcher(Family::OpenMpi, "5.0.11", "/o5/bin")).unwrap();
        assert_eq!(b.name, "openmpi-5.0");
        assert!(why.contains("beside"), "{why}");
        // elsewhere, same series
        let (b, _) = choose(&all, &launcher(Family::OpenMpi, "5.0.3", "/site/bin")).unwrap();
        assert_eq!(b.name, "openmpi-5.0");
        // Debian's launcher: family from its name, version 4.1
        let (b, _) = choose(&all, &launcher(Family::Mpich, "4.0.2", "/usr/bin")).unwrap();
        assert_eq!(b.name, "mpich");
        // only Debian's build: it serves 5.0 (ABI measured identical)
        let (b, why) = choose(&all[..2], &launcher(Family::OpenMpi, "5.0.11", "/o5/bin")).unwrap();
        assert_eq!(b.name, "openmpi");
        assert!(why.contains("measured"), "{why}");
    }

    #[test]
    fn a_program_gets_the_build_for_the_libmpi_it_links() {
        let all = builds4();
        let f = Found {
            what: "./app".into(),
            family: Some(Family::OpenMpi),
            libmpi: Some(PathBuf::from("/o5/lib/libmpi.so.40")),
            ..Found::default()
        };
        assert_eq!(choose(&all, &f).unwrap().0.name, "openmpi-5.0");
    }

    #[test]
    fn nothing_serves_it_is_one_line_naming_what_was_found() {
        let all = builds4();
        let e = choose(&all, &launcher(Family::OpenMpi, "3.1.6", "/old/bin")).unwrap_err();
        assert!(
            e.contains("/old/bin/mpirun (Open MPI 3.1.6)")
                && e.contains("openmpi-5.0 for Open MPI 5.0.11")
                && !e.contains('\n'),
            "{e}"
        );
        let f = Found {
            what: "./abi_app".into(),
            standard_abi: true,
            ..Found::default()
        };
        assert!(choose(&all, &f).unwrap_err().contains("standard ABI"));
        let f = Found {
            what: "./x".into(),
            ..Found::default()
        };
        assert!(choose(&all, &f).unwrap_err().contains("--mpi"));
    }

    #[test]
    fn names() {
        assert_eq!(
            inspect_launcher("/nonexistent/mpirun.openmpi").family,
            Some(Family::OpenMpi)
        );
        assert_eq!(
            inspect_launcher("/nonexistent/mpiexec.hydra").family,
            Some(Family::Mpich)
        );
        assert!(is_launcher("/usr/bin/mpiexec.mpich"));
        assert!(!is_launcher("./mpirunner"));
        assert!(Mpi::parse("lam").is_err());
    }
}
