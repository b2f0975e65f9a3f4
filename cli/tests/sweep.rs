//! `loggp sweep` end to end, and the example programs of `examples/`.
//!
//! Expectations, one per test:
//! - every example builds (scripts/build-examples.sh), runs natively on 2
//!   ranks under both MPIs, prints its timing line and checks its result;
//! - a sweep of the ping-pong example over two values of L, through the
//!   real shim (scripts/build.sh must have built it), writes every output
//!   file and finds a positive slope for L;
//! - a program that fails is reported with its exit code and last lines,
//!   the sweep goes on or stops as asked, and exits non-zero;
//! - `--metric` takes the figure from the last matching line;
//! - a bad value stops the sweep with one line naming it;
//! - a run that hangs is killed at `--timeout`.
//!
//! Every MPI job holds an exclusive lock on /tmp/loggp-mpi.lock (the sweep
//! through `--lock`, native runs here through `File::lock`) so that only one
//! runs at a time on the machine, and every job has a timeout.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

const LOCK: &str = "/tmp/loggp-mpi.lock";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn loggp() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loggp"))
}

/// Runs `cmd` with a timeout, killing it (and failing the test) if it hangs.
fn run(mut cmd: Command, timeout: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            // SIGTERM first: mpirun then stops its ranks, and loggp passes
            // it on to the job it runs; SIGKILL if that was not enough
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn mpi_lock() -> File {
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(LOCK)
        .unwrap();
    f.lock().unwrap();
    f
}

/// Builds the examples once per test binary.
fn examples(mpi: &str) -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let r = BUILT.get_or_init(|| {
        let mut c = Command::new("bash");
        c.arg(root().join("scripts/build-examples.sh"));
        let o = run(c, Duration::from_secs(300));
        if o.status.success() {
            Ok(())
        } else {
            Err(text(&o.stderr))
        }
    });
    if let Err(e) = r {
        panic!("scripts/build-examples.sh failed:\n{e}");
    }
    root().join("target/examples").join(mpi)
}

fn launcher(mpi: &str, np: u32) -> Vec<String> {
    let mut v: Vec<String> = vec![format!("mpirun.{mpi}")];
    if mpi == "openmpi" {
        v.push("--oversubscribe".into());
    }
    v.extend(["-np".to_string(), np.to_string()]);
    v
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loggp-sweep-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// A directory holding an empty shared object under both shim names, so
/// that the sweep's own logic is tested without the real shim in the way.
fn fake_shim_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempdir("fakeshim");
        let src = d.join("empty.c");
        fs::write(&src, "int loggp_sweep_test_fake_shim;\n").unwrap();
        let so = d.join("libloggp-openmpi.so");
        let mut c = Command::new("cc");
        c.args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&src);
        let o = run(c, Duration::from_secs(60));
        assert!(o.status.success(), "cc failed: {}", text(&o.stderr));
        fs::copy(&so, d.join("libloggp-mpich.so")).unwrap();
        d
    })
    .clone()
}

/// `loggp sweep ARGS -- sh -c SCRIPT` with the fake shim, as a singleton
/// (the knob variables reach the script through its environment).
fn sweep_sh(args: &[&str], script: &str, out: &Path) -> Output {
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", fake_shim_dir())
        .arg("sweep")
        .args(args)
        .args(["--mpi", "openmpi", "--timeout", "20s", "--out"])
        .arg(out)
        .args(["--", "sh", "-c", script]);
    run(c, Duration::from_secs(120))
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

/// `knobs[0][key]` of a sweep.json, as a number.
fn json_number(json: &str, key: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(json).expect("sweep.json is JSON");
    v["knobs"][0][key].as_f64()
}

#[test]
fn examples_run_natively_and_check_themselves() {
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "pingpong",
            &["2000"],
            "pingpong: 2000 round trips of 8 B in ",
        ),
        (
            "stencil",
            &["256", "100"],
            "stencil: 256x256 grid, 2x1 ranks, 100 steps in ",
        ),
        ("farm", &["1000"], "farm: 1000 tasks on 1 workers in "),
        ("cg", &["1000", "5"], "cg: 5 solves of 2000 rows, 2 ranks, "),
        (
            "transpose",
            &["512", "4"],
            "transpose: 512x512 f64, 2 ranks, 4 transposes in ",
        ),
    ];
    for mpi in ["openmpi", "mpich"] {
        let dir = examples(mpi);
        for (name, args, expect) in cases {
            let mut c = Command::new(&launcher(mpi, 2)[0]);
            c.args(&launcher(mpi, 2)[1..])
                .arg(dir.join(name))
                .args(args);
            c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            let _lock = mpi_lock();
            let o = run(c, Duration::from_secs(120));
            let out = text(&o.stdout);
            assert!(
                o.status.success(),
                "{mpi} {name} failed ({}):\n{out}\n{}",
                o.status,
                text(&o.stderr)
            );
            let line = out
                .lines()
                .find(|l| l.starts_with(expect))
                .unwrap_or_else(|| panic!("{mpi} {name}: no line starting {expect:?} in:\n{out}"));
            assert!(line.ends_with(" OK"), "{mpi} {name}: {line}");
        }
    }
}

#[test]
fn examples_refuse_bad_arguments() {
    // the self-checks can fail: a grid that does not split over the ranks
    // and a transpose that does not divide are refused, not run
    let dir = examples("mpich");
    for (name, args) in [("stencil", &["255", "10"]), ("transpose", &["511", "2"])] {
        let mut c = Command::new("mpirun.mpich");
        c.args(["-np", "2"]).arg(dir.join(name)).args(args);
        let _lock = mpi_lock();
        let o = run(c, Duration::from_secs(60));
        assert!(!o.status.success(), "{name} {args:?} should fail");
        assert!(
            text(&o.stderr).contains(name),
            "{name}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn sweep_of_pingpong_over_l_writes_every_file_and_a_positive_slope() {
    let shims = root().join("target/release");
    for mpi in ["openmpi", "mpich"] {
        assert!(
            shims.join(format!("libloggp-{mpi}.so")).is_file(),
            "the shim for {mpi} is not built in {}: run scripts/build.sh first",
            shims.display()
        );
        let dir = examples(mpi);
        let out = tempdir(&format!("pingpong-{mpi}"));
        // A private copy: a rebuild that rewrites the shim in place while
        // a rank has it mapped would crash that rank.
        let shim_copy = out.join("shim");
        fs::create_dir_all(&shim_copy).unwrap();
        let name = format!("libloggp-{mpi}.so");
        fs::copy(shims.join(&name), shim_copy.join(&name)).unwrap();
        let mut c = loggp();
        c.env("LOGGP_SHIM_DIR", &shim_copy)
            .args([
                "sweep", "--knob", "L", "--values", "0,50us", "--repeat", "3",
            ])
            // on a shared machine other jobs only ever add time, so the
            // fastest of three runs is the robust figure
            .args(["--stat", "min"])
            .args(["--timeout", "120s", "--lock", LOCK, "--out"])
            .arg(&out)
            .arg("--")
            .args(launcher(mpi, 2))
            .arg(dir.join("pingpong"))
            .arg("5000");
        let o = run(c, Duration::from_secs(900));
        let (so, se) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "{mpi}: sweep failed:\n{so}\n{se}");
        for f in [
            "runs.csv",
            "points.csv",
            "sweep.json",
            "summary.md",
            "sweep.svg",
        ] {
            let p = out.join(f);
            assert!(
                p.is_file() && fs::metadata(&p).unwrap().len() > 0,
                "{mpi}: {f} missing"
            );
        }
        assert_eq!(
            csv_rows(&out.join("runs.csv")).len(),
            9,
            "{mpi}: 3 points x 3 repeats"
        );
        let json = fs::read_to_string(out.join("sweep.json")).unwrap();
        let slope = json_number(&json, "slope_per_unit").expect("a slope");
        // 5000 round trips x 2 messages x 50 us = 0.5 s more at L=50us:
        // 0.01 s/us; ask for a clearly positive fraction of it
        assert!(slope > 0.004, "{mpi}: slope {slope} s/us\n{so}");
        assert!(so.contains("L     2"), "{mpi}: no summary row for L:\n{so}");
        // progress went to stderr, with the time left
        assert!(se.contains("9/9") && se.contains("left ~"), "{mpi}: {se}");
        let _ = fs::remove_dir_all(&out);
    }
}

#[test]
fn a_failing_run_is_reported_and_the_sweep_goes_on() {
    let out = tempdir("fail-keep-going");
    // fine at the baseline, fails whenever a latency is set
    let script = r#"if [ -n "$LOGGP_L" ]; then echo "first line"; echo "bad latency $LOGGP_L" >&2; exit 4; fi; echo ok"#;
    let o = sweep_sh(
        &["--knob", "L", "--values", "5,10us", "--repeat", "2"],
        script,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{so}\n{se}");
    assert!(se.contains("(L=5us, repeat 1) failed: exit code 4"), "{se}");
    assert!(
        se.contains("| bad latency 5us") && se.contains("| first line"),
        "{se}"
    );
    assert!(so.contains("4 of 6 runs failed"), "{so}");
    let rows = csv_rows(&out.join("runs.csv"));
    assert_eq!(rows.len(), 6, "keep going runs everything");
    assert_eq!(
        rows.iter().filter(|r| r[5] == "0" && r[6] == "4").count(),
        4
    );
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn stop_on_fail_stops_at_the_first_failure() {
    let out = tempdir("fail-stop");
    let script = r#"if [ -n "$LOGGP_L" ]; then exit 5; fi; echo ok"#;
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "5,10us",
            "--repeat",
            "3",
            "--stop-on-fail",
        ],
        script,
        &out,
    );
    let se = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{se}");
    assert!(
        se.contains("exit code 5") && se.contains("--stop-on-fail"),
        "{se}"
    );
    assert!(se.contains("(it printed nothing)"), "{se}");
    assert_eq!(
        csv_rows(&out.join("runs.csv")).len(),
        2,
        "baseline, then the failure"
    );
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_program_that_fails_at_the_baseline_stops_the_sweep() {
    let out = tempdir("fail-baseline");
    let o = sweep_sh(
        &["--knob", "L", "--values", "5us"],
        "echo nope >&2; exit 3",
        &out,
    );
    let se = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{se}");
    assert!(
        se.contains("fails even at the baseline") && se.contains("| nope"),
        "{se}"
    );
    assert!(text(&o.stdout).contains("no successful run"));
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn metric_takes_the_last_matching_line() {
    let out = tempdir("metric");
    // a LAMMPS-like report: a decoy first, the figure last, doubling at 10us
    let script = r#"echo "Loop time of 77.0 on 2 procs (warm-up)"; echo "noise 5.0"
case "$LOGGP_L" in 10us) t=2.5 ;; *) t=1.25 ;; esac
echo "Loop time of $t on 2 procs for 100 steps with 32000 atoms""#;
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "10us",
            "--repeat",
            "2",
            "--metric",
            r"^Loop time of ([0-9.eE+-]+) on",
        ],
        script,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    let points = csv_rows(&out.join("points.csv"));
    let median = |knob: &str| -> f64 {
        points.iter().find(|r| r[0] == knob).unwrap()[6]
            .parse()
            .unwrap()
    };
    assert_eq!(median("baseline"), 1.25);
    assert_eq!(median("L"), 2.5);
    let json = fs::read_to_string(out.join("sweep.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["figure"], "metric", "{json}");
    assert_eq!(
        parsed["metric_regex"], r"^Loop time of ([0-9.eE+-]+) on",
        "{json}"
    );
    // (2.5 - 1.25) / 10 us
    let slope = json_number(&json, "slope_per_unit").unwrap();
    assert!((slope - 0.125).abs() < 1e-9, "{slope}");
    assert!(so.contains("+10 % at") && so.contains("1us"), "{so}");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn metric_that_matches_nothing_is_a_failure() {
    let out = tempdir("metric-missing");
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "1us",
            "--metric",
            r"took (\d+) ms",
        ],
        "echo done",
        &out,
    );
    let se = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{se}");
    assert!(
        se.contains(r#"no line of its output matches --metric "took (\\d+) ms""#),
        "{se}"
    );
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn bad_values_stop_with_one_line() {
    let out = tempdir("bad-value");
    for (args, needle) in [
        (
            vec!["--knob", "L", "--values", "0,5parsecs"],
            "\"5parsecs\" is not accepted: expected a time",
        ),
        (
            vec!["--knob", "G", "--values", "100MB/s,fast"],
            "\"fast\" is not accepted: expected a bandwidth",
        ),
        (
            vec!["--knob", "Lat", "--values", "1us"],
            "--knob \"Lat\" is not accepted: expected L, o_s, o_r, g_s, g_r or G",
        ),
        (
            vec!["--knob", "L", "--values", "1us", "--timeout", "300"],
            "--timeout \"300\" is not accepted: expected a time above 0",
        ),
    ] {
        let o = sweep_sh(&args, "true", &out);
        let se = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {se}");
        assert_eq!(se.trim_end().lines().count(), 1, "{args:?}: {se}");
        assert!(se.contains(needle), "{args:?}: {se}");
    }
    assert!(!out.join("runs.csv").exists(), "nothing ran");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_hanging_run_is_killed_at_the_timeout() {
    let out = tempdir("timeout");
    let t0 = Instant::now();
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", fake_shim_dir())
        .args(["sweep", "--knob", "L", "--values", "1us", "--repeat", "1"])
        .args(["--mpi", "openmpi", "--timeout", "500ms", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "sleep 60 & sleep 60"]);
    let o = run(c, Duration::from_secs(60));
    let se = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{se}");
    assert!(se.contains("timed out"), "{se}");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn environment_knobs_apply_to_every_run_but_a_swept_one_is_replaced() {
    let out = tempdir("environment");
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", fake_shim_dir())
        .env("LOGGP_O_S", "1us")
        .env("LOGGP_L", "7us")
        .args(["sweep", "--knob", "L", "--values", "5us", "--repeat", "1"])
        .args(["--mpi", "openmpi", "--timeout", "20s", "--out"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            r#"[ "$LOGGP_O_S" = 1us ] && { [ -z "$LOGGP_L" ] || [ "$LOGGP_L" = 5us ]; } || { echo "L=$LOGGP_L o_s=$LOGGP_O_S" >&2; exit 9; }"#,
        ]);
    let o = run(c, Duration::from_secs(60));
    let se = text(&o.stderr);
    assert!(o.status.success(), "{se}");
    assert!(se.contains("the environment sets LOGGP_O_S=1us"), "{se}");
    let _ = fs::remove_dir_all(&out);
}

/// True while `pid` is alive (a zombie counts as dead).
fn alive(pid: &str) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn stopping_loggp_stops_the_job_it_runs() {
    let out = tempdir("sigterm");
    let pidfile = out.join("pid");
    let script = format!("sleep 61 & echo $! > {}; wait", pidfile.display());
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", fake_shim_dir())
        .args([
            "sweep", "--knob", "L", "--values", "1us", "--mpi", "openmpi",
        ])
        .args(["--timeout", "120s", "--out"])
        .arg(out.join("results"))
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let t0 = Instant::now();
    let pid = loop {
        if let Ok(p) = fs::read_to_string(&pidfile) {
            if !p.trim().is_empty() {
                break p.trim().to_string();
            }
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the job never started");
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert!(alive(&pid));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let t1 = Instant::now();
    while alive(&pid) && t1.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(50));
    }
    let survived = alive(&pid);
    if survived {
        let _ = Command::new("kill").args(["-9", &pid]).status();
    }
    assert!(!survived, "the job's process {pid} outlived loggp");
    let _ = fs::remove_dir_all(&out);
}
