//! Running one job, for every subcommand that starts MPI jobs (`sweep`,
//! `calibrate`, `calibrate --collectives`): optional exclusive lock, wall
//! time, captured output, and a timeout that takes the whole process tree
//! down.
//!
//! The job runs in a process group of its own so that a timeout can kill
//! the launcher and every rank it started (`killpg`, SIGTERM so that the
//! launcher can stop ranks it placed elsewhere, then SIGKILL to the whole
//! group). Because the terminal's Ctrl-C then no longer reaches that group,
//! SIGINT and SIGTERM to `loggp` are forwarded to it by a small handler.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Exit code (0 is success).
    Exit(i32),
    Signal(i32),
    /// Killed after the timeout.
    Timeout,
    /// Could not be started at all.
    Spawn(String),
    /// The program does not exist (not on PATH).
    Missing(String),
}

impl End {
    pub fn ok(&self) -> bool {
        *self == End::Exit(0)
    }

    /// The exit code as a number for tables (`-1` when there is none).
    pub fn code(&self) -> i32 {
        match self {
            End::Exit(c) => *c,
            _ => -1,
        }
    }

    pub fn describe(&self, timeout: Duration) -> String {
        match self {
            End::Exit(c) => format!("exit code {c}"),
            End::Signal(s) => format!("killed by signal {s}"),
            End::Timeout => format!(
                "timed out after {:.0} s and was killed",
                timeout.as_secs_f64()
            ),
            End::Spawn(e) => format!("could not start: {e}"),
            End::Missing(p) => format!("could not start: {p} not found"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub end: End,
    /// Seconds from start to exit (lock wait excluded).
    pub wall: f64,
    pub stdout: String,
    pub stderr: String,
}

/// Process group of the running job, for the signal handler (0: none).
static JOB_PGID: AtomicI32 = AtomicI32::new(0);
/// Whether `run` is starting a job whose group it has not yet published.
static STARTING: AtomicBool = AtomicBool::new(false);
/// The signal that came last (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Async-signal-safe: atomics, killpg(2), signal(2), raise(3). A signal
/// that comes while `run` starts a job (spawned, its group not yet in
/// `JOB_PGID`) is left to `run`, which reads `PENDING` once it has
/// published the group: else the job, already running, outlived loggp.
/// Sequentially consistent order: either this handler sees the group or
/// `run` sees the signal.
extern "C" fn forward(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
    if STARTING.load(Ordering::SeqCst) && JOB_PGID.load(Ordering::SeqCst) <= 0 {
        return;
    }
    stop(JOB_PGID.load(Ordering::SeqCst), sig);
}

/// Takes the job's group down (if any), then this process by `sig`.
/// Async-signal-safe.
fn stop(pg: i32, sig: libc::c_int) {
    // SAFETY: all async-signal-safe calls with plain integers.
    unsafe {
        if pg > 0 {
            libc::killpg(pg, libc::SIGTERM);
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// After a job's start (`pgid` its group, 0 if it failed to start): ends
/// the start, and acts on a signal that `forward` left to it.
fn started(pgid: i32) {
    JOB_PGID.store(pgid, Ordering::SeqCst);
    STARTING.store(false, Ordering::SeqCst);
    let sig = PENDING.load(Ordering::SeqCst);
    if sig != 0 {
        stop(pgid, sig);
    }
}

/// Installs the Ctrl-C forwarder (once per process is enough; harmless twice).
pub fn install_signal_forwarding() {
    let handler: extern "C" fn(libc::c_int) = forward;
    // SAFETY: installing a handler that only makes async-signal-safe calls.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

fn kill_group(pgid: i32, sig: libc::c_int) {
    if pgid > 0 {
        // SAFETY: plain system call on our own child's process group.
        unsafe {
            libc::killpg(pgid, sig);
        }
    }
}

/// Takes an exclusive lock on `path` (created if missing), waiting as long
/// as it takes, with a note on stderr when another job holds it for long;
/// the lock is released when the returned file is dropped.
pub fn lock(path: &Path) -> Result<File, String> {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
    // Block in the kernel's queue of waiters (polling with try_lock would
    // lose every race to them), on a helper thread so that a long wait can
    // be told about.
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let r = f.lock().map(|()| f);
        let _ = tx.send(r);
    });
    let got = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!(
                "\nloggp: waiting for the lock on {} (another job holds it)",
                path.display()
            );
            rx.recv()
                .map_err(|e| format!("cannot lock {}: {e}", path.display()))?
        }
    };
    got.map_err(|e| format!("cannot lock {}: {e}", path.display()))
}

fn reader(mut src: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = src.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Runs `cmd` to completion or until `timeout`, capturing its output.
pub fn run(mut cmd: Command, timeout: Duration, lock_path: Option<&Path>) -> Outcome {
    let _lock = match lock_path.map(lock).transpose() {
        Ok(l) => l,
        Err(e) => {
            return Outcome {
                end: End::Spawn(e),
                wall: 0.0,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    STARTING.store(true, Ordering::SeqCst);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            started(0);
            let program = cmd.get_program().to_string_lossy().into_owned();
            return Outcome {
                end: if e.kind() == std::io::ErrorKind::NotFound {
                    End::Missing(program)
                } else {
                    End::Spawn(format!("{program:?}: {e}"))
                },
                wall: 0.0,
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    let pgid = i32::try_from(child.id()).unwrap_or(0);
    started(pgid);
    let out_rx = reader(child.stdout.take().expect("piped"));
    let err_rx = reader(child.stderr.take().expect("piped"));
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let status = child.wait();
        let _ = done_tx.send((status, Instant::now()));
    });
    let (end, finish) = match done_rx.recv_timeout(timeout) {
        Ok((status, at)) => {
            let end = match status {
                Ok(s) => match (s.code(), s.signal()) {
                    (Some(c), _) => End::Exit(c),
                    (None, Some(sig)) => End::Signal(sig),
                    (None, None) => End::Exit(-1),
                },
                Err(e) => End::Spawn(format!("waiting for it failed: {e}")),
            };
            (end, at)
        }
        Err(_) => {
            // polite first (mpirun then stops ranks it may have placed in
            // other groups), then the whole group for sure, whether or not
            // the launcher is gone: its ranks may not be
            kill_group(pgid, libc::SIGTERM);
            let _ = done_rx.recv_timeout(Duration::from_secs(3));
            kill_group(pgid, libc::SIGKILL);
            let _ = done_rx.recv_timeout(Duration::from_secs(5));
            (End::Timeout, Instant::now())
        }
    };
    let wall = finish.duration_since(start).as_secs_f64();
    // A rank that outlives the launcher could hold the pipes open: give the
    // readers a moment, then take the group down and read what there is.
    let grab = |rx: &mpsc::Receiver<Vec<u8>>| rx.recv_timeout(Duration::from_secs(5)).ok();
    let mut stdout = grab(&out_rx);
    let mut stderr = grab(&err_rx);
    if stdout.is_none() || stderr.is_none() {
        kill_group(pgid, libc::SIGKILL);
        stdout = stdout.or_else(|| grab(&out_rx));
        stderr = stderr.or_else(|| grab(&err_rx));
    }
    JOB_PGID.store(0, Ordering::SeqCst);
    Outcome {
        end,
        wall,
        stdout: String::from_utf8_lossy(&stdout.unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned(),
    }
}

/// The last `n` non-empty lines of a run's output (stderr after stdout).
pub fn tail(o: &Outcome, n: usize) -> Vec<String> {
    let all: Vec<&str> = o
        .stdout
        .lines()
        .chain(o.stderr.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    all[all.len().saturating_sub(n)..]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Makes the output directory `dir` and checks that a file can be written
/// there, before any measurement: a run of minutes that can only find out
/// at its end that `--out` is not writable loses them all.
pub fn ensure_writable(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
    let probe = dir.join(format!(".loggp-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--out {}: cannot write there: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn captures_output_and_exit_code() {
        let o = run(
            sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(20),
            None,
        );
        assert_eq!(o.end, End::Exit(3));
        assert_eq!(o.stdout, "out\n");
        assert_eq!(o.stderr, "err\n");
        assert_eq!(tail(&o, 1), ["err"]);
        assert!(!o.end.ok());
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let t0 = Instant::now();
        // the grandchild sleep would keep the pipe open if it survived
        let o = run(
            sh("sleep 30 & sleep 30; echo never"),
            Duration::from_millis(300),
            None,
        );
        assert_eq!(o.end, End::Timeout);
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "took {:?}",
            t0.elapsed()
        );
        assert!(!o.stdout.contains("never"));
    }

    #[test]
    fn timeout_kills_ranks_that_outlive_the_launcher() {
        let marker =
            std::env::temp_dir().join(format!("loggp-job-survivor-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        // a "rank" that ignores SIGTERM and no longer holds the output
        // pipes: only SIGKILL to the whole group stops it
        let script = format!(
            "(trap '' TERM; sleep 4; touch {}) >/dev/null 2>&1 & sleep 30",
            marker.display()
        );
        let o = run(sh(&script), Duration::from_millis(300), None);
        assert_eq!(o.end, End::Timeout);
        thread::sleep(Duration::from_secs(6));
        let survived = marker.exists();
        let _ = std::fs::remove_file(&marker);
        assert!(!survived, "a process of the job outlived the timeout");
    }

    #[test]
    fn missing_program_is_reported() {
        let o = run(
            Command::new("/nonexistent/prog"),
            Duration::from_secs(5),
            None,
        );
        assert_eq!(o.end, End::Missing("/nonexistent/prog".into()));
        assert!(o.end.describe(Duration::ZERO).contains("not found"));
    }

    #[test]
    fn lock_waits_for_the_holder() {
        let path = std::env::temp_dir().join(format!("loggp-sweep-lock-{}", std::process::id()));
        let held = lock(&path).unwrap();
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        thread::spawn(move || {
            let _l = lock(&p).unwrap();
            let _ = tx.send(());
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "got the lock while held"
        );
        drop(held);
        assert!(
            rx.recv_timeout(Duration::from_secs(10)).is_ok(),
            "never got the lock"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn wall_time_is_measured() {
        let o = run(sh("sleep 0.2"), Duration::from_secs(20), None);
        assert!(o.end.ok());
        assert!(o.wall >= 0.2 && o.wall < 5.0, "{}", o.wall);
    }
}
