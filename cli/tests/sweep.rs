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
//! - a run that hangs is killed at `--timeout`;
//! - the baseline runs the shim with virtual time on (LOGGP_VT=on, every
//!   knob 0) and a native run has no shim: the real shim's own report
//!   says so, and a script that tells the three apart gives the exact
//!   emulation cost, sensitivity and tolerances;
//! - `--precision` adds rounds until the sensitivity's interval is narrow
//!   enough, and `--max-runs` stops it.
//! - a targeted knob (`--knob L@pairs=0:1`) and a varied one (`--l-dist`)
//!   reach the program's environment as `LOGGP_L=20us@pairs=0:1`,
//!   `LOGGP_L_DIST`, `LOGGP_SEED`, at that knob's points only; through the
//!   real shim the median half round trip of a ping-pong
//!   (`tests/progs/timing.c`) grows by the whole L for `L@pairs=0:1` and by
//!   half of it for `L@from=1` (one direction).
//!
//! Every MPI job holds an exclusive lock on /tmp/loggp-mpi.lock (the sweep
//! through `--lock`, native runs here through `File::lock`) so that only one
//! runs at a time on the machine, and every job has a timeout.

mod common;

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
            "{mpi}: 3 configurations (native, baseline, L=50us; 0 is the baseline) x 3 repeats"
        );
        assert!(
            se.contains("L=0 is the baseline"),
            "{mpi}: the 0 in --values is not measured again: {se}"
        );
        let json = fs::read_to_string(out.join("sweep.json")).unwrap();
        let slope = json_number(&json, "slope_per_unit").expect("a slope");
        // 5000 round trips x 2 messages x 50 us = 0.5 s more at L=50us:
        // 0.01 s/us; ask for a clearly positive fraction of it
        assert!(slope > 0.004, "{mpi}: slope {slope} s/us\n{so}");
        assert!(so.contains("L     1"), "{mpi}: no summary row for L:\n{so}");
        // progress went to stderr, with the time left
        assert!(se.contains("9/9") && se.contains("left ~"), "{mpi}: {se}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        // the emulation's own cost is there, as a line and in the JSON
        assert!(
            so.contains("native (no shim): median")
                && so.contains("emulation cost: the baseline takes"),
            "{mpi}: {so}"
        );
        let cost = &v["emulation_cost"];
        assert!(
            cost["native"].as_f64().unwrap() > 0.0 && cost["cost_pct"].as_f64().is_some(),
            "{mpi}: {cost}"
        );
        // the sensitivity at 0 is the slope to 50 us: 10000 messages of
        // 50 us (0.5 s) on a run of about 0.3 s, far above 1 %/us, and its
        // interval holds the estimate (it uses every run, so on a busy
        // machine the interval, not the estimate, is wide)
        let sens = &v["knobs"][0]["sensitivity"];
        let (p, lo, hi) = (
            sens["pct_per_unit"].as_f64().unwrap(),
            sens["pct_lo"].as_f64().unwrap(),
            sens["pct_hi"].as_f64().unwrap(),
        );
        assert!(lo <= p && p <= hi && p > 1.0, "{mpi}: {sens}");
        // +5 % is reached below 50 us, with an interval
        let tol = &v["knobs"][0]["tolerance"][2];
        let t5 = tol["value"].as_f64().expect("+5 % reached");
        assert!(t5 > 0.0 && t5 < 50.0, "{mpi}: {tol}");
        assert!(tol["lo"].as_f64().unwrap() <= t5 && t5 <= tol["hi"].as_f64().unwrap());
        assert!(
            so.contains("+5 % at") && so.contains("resolution:"),
            "{mpi}: {so}"
        );
        let svg = fs::read_to_string(out.join("sweep.svg")).unwrap();
        assert!(svg.contains("+1 %") && svg.contains("+5 % at"), "{mpi}");
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
    assert!(so.contains("4 of 8 runs failed"), "{so}");
    let rows = csv_rows(&out.join("runs.csv"));
    assert_eq!(rows.len(), 8, "keep going runs everything");
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
        3,
        "native, baseline, then the failure"
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
fn targeted_and_varied_knobs_reach_the_program() {
    let out = tempdir("targeted-env");
    let log = out.join("env.txt");
    let script = format!(
        r#"echo "L=${{LOGGP_L-}} D=${{LOGGP_L_DIST-}} S=${{LOGGP_SEED-}} OS=${{LOGGP_O_S-}} VT=${{LOGGP_VT-}}" >> {}"#,
        log.display()
    );
    let o = sweep_sh(
        &[
            "--knob",
            "L@pairs=0:1,o_s@from=1",
            "--values",
            "0,20us",
            "--l-dist",
            "normal:5us",
            "--seed",
            "3",
            "--repeat",
            "1",
        ],
        &script,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    let mut lines: Vec<String> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "L= D= S= OS= VT=",                            // native: no shim, no knob
            "L= D= S= OS= VT=on",                          // the baseline
            "L= D= S= OS=20us@from=1 VT=on",               // o_s: fixed
            "L=20us@pairs=0:1 D=normal:5us S=3 OS= VT=on", // L: targeted, varied
        ],
        "{se}"
    );
    let json = fs::read_to_string(out.join("sweep.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["knobs"][0]["knob"], "L@pairs=0:1", "{json}");
    assert_eq!(v["knobs"][0]["target"], "pairs=0:1", "{json}");
    assert_eq!(
        v["knobs"][0]["with"][0], "LOGGP_L_DIST=normal:5us",
        "{json}"
    );
    assert!(v["knobs"][1].get("with").is_none(), "{json}");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_targeted_l_reaches_only_its_pairs_openmpi() {
    let mpi = "openmpi";
    // the median half round trip of tests/progs/timing.c: a mean (the
    // example's figure) moves by milliseconds when another job takes a
    // core from a spinning rank on this shared 2-core machine
    let prog = common::prog(common::Mpi::OpenMpi, "timing");
    let out = tempdir("targeted-pingpong");
    let shims = root().join("target/release");
    let shim_copy = out.join("shim");
    fs::create_dir_all(&shim_copy).unwrap();
    let name = format!("libloggp-{mpi}.so");
    fs::copy(shims.join(&name), shim_copy.join(&name)).unwrap();
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", &shim_copy)
        .args([
            "sweep",
            "--knob",
            "L@pairs=0:1,L@from=1",
            "--values",
            "20us",
        ])
        .args(["--repeat", "2", "--stat", "min"])
        .args(["--metric", r"half_rtt_us=([0-9.]+)"])
        .args(["--timeout", "120s", "--lock", LOCK, "--out"])
        .arg(&out)
        .arg("--")
        .args(launcher(mpi, 2))
        .arg(prog)
        .args(["pingpong", "500"]);
    let o = run(c, Duration::from_secs(600));
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "sweep failed:\n{so}\n{se}");
    let points = csv_rows(&out.join("points.csv"));
    // the figure of a point: its --stat (min) of half round trips, us
    let json = fs::read_to_string(out.join("sweep.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let figure = |k: usize| v["knobs"][k]["points"][0]["figure"]["min"].as_f64();
    let base = v["baseline"]["figure"]["min"]
        .as_f64()
        .or_else(|| v["baseline"]["min"].as_f64());
    let (Some(base), Some(both), Some(one)) = (base, figure(0), figure(1)) else {
        panic!("no figures in sweep.json: {json}\npoints: {points:?}");
    };
    let (d_both, d_one) = (both - base, one - base);
    eprintln!(
        "half round trip: baseline {base:.2} us, L@pairs=0:1 +{d_both:.2}, L@from=1 +{d_one:.2}"
    );
    // both directions: +20 us; one direction: +10 us per half round trip.
    // Applied twice: +40 / +20; not at all: 0; to the wrong pairs: the
    // two alike.
    assert!(
        (16.0..=24.0).contains(&d_both),
        "L@pairs=0:1 +{d_both} us, expected ~20\n{so}"
    );
    assert!(
        (7.5..=12.5).contains(&d_one),
        "L@from=1 +{d_one} us, expected ~10\n{so}"
    );
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
        .env("LOGGP_ARM", "o_s")
        .args(["sweep", "--knob", "L", "--values", "5us", "--repeat", "1"])
        .args(["--mpi", "openmpi", "--timeout", "20s", "--out"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            // the native run has no shim and no LOGGP_* variable
            // (the environment's LOGGP_ARM is kept, the swept knob armed
            // beside it, in LOGGP_ARM's order)
            r#"if [ -z "$LD_PRELOAD" ]; then [ -z "$LOGGP_O_S$LOGGP_L$LOGGP_VT$LOGGP_ARM" ] && exit 0; exit 8; fi
[ "$LOGGP_O_S" = 1us ] && [ "$LOGGP_VT" = on ] && [ "$LOGGP_ARM" = L,o_s ] && { [ -z "$LOGGP_L" ] || [ "$LOGGP_L" = 5us ]; } || { echo "L=$LOGGP_L o_s=$LOGGP_O_S arm=$LOGGP_ARM" >&2; exit 9; }"#,
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

/// A script that tells the three kinds of run apart and prints a figure
/// for each: native (no shim, no LOGGP_*) 1.0; the shim with virtual time
/// on and L = 0: 2.0; with L = N us: 2.0 + 0.02 N. Anything else (the shim
/// without LOGGP_VT=on, as a baseline of old would be, or without L armed,
/// LOGGP_ARM=L, whose baseline would take the idle lanes) fails.
const THREE_KINDS: &str = r#"if [ -z "$LD_PRELOAD" ]; then
  [ -z "$LOGGP_VT$LOGGP_L$LOGGP_ARM" ] || { echo "native run with LOGGP_VT=$LOGGP_VT LOGGP_ARM=$LOGGP_ARM" >&2; exit 7; }
  echo "figure 1.0"; exit 0
fi
[ "$LOGGP_VT" = on ] || { echo "shim without virtual time (LOGGP_VT=$LOGGP_VT)" >&2; exit 7; }
[ "$LOGGP_ARM" = L ] || { echo "shim without L armed (LOGGP_ARM=$LOGGP_ARM)" >&2; exit 7; }
case "$LOGGP_L" in
  "") echo "figure 2.0" ;;
  10us) echo "figure 2.2" ;;
  20us) echo "figure 2.4" ;;
  *) echo "unexpected L=$LOGGP_L" >&2; exit 7 ;;
esac"#;

#[test]
fn baseline_has_virtual_time_on_and_native_has_no_shim() {
    let out = tempdir("three-kinds");
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "0,10,20us",
            "--repeat",
            "2",
            "--metric",
            r"figure ([0-9.]+)",
        ],
        THREE_KINDS,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    assert!(se.contains("L=0 is the baseline"), "{se}");
    let rows = csv_rows(&out.join("runs.csv"));
    // native, baseline, 10us, 20us; the 0 is not a point of its own
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r[0] == "native").count(), 2);
    assert!(!rows.iter().any(|r| r[0] == "L" && r[1] == "0"), "{rows:?}");
    // the emulation's own cost: 2.0 against 1.0
    assert!(
        so.contains("emulation cost: the baseline takes +100.0 % against native (median 2 vs 1)"),
        "{so}"
    );
    let json = fs::read_to_string(out.join("sweep.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["emulation_cost"]["cost_pct"], 100.0);
    assert_eq!(v["native"]["figure"]["median"], 1.0);
    assert_eq!(v["baseline"]["figure"]["median"], 2.0);
    // slopes from the baseline with virtual time on: 0.02 per us, 1 %/us
    // (from a baseline of 1.0 the knob would look 12 times worse)
    let k = &v["knobs"][0];
    assert!(
        (k["slope_per_unit"].as_f64().unwrap() - 0.02).abs() < 1e-9,
        "{k}"
    );
    let sens = &k["sensitivity"];
    assert!(
        (sens["pct_per_unit"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{sens}"
    );
    assert_eq!(sens["to_x"], 10.0);
    assert_eq!(
        (sens["n_baseline"].as_u64(), sens["n_first"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(sens["ols"]["df"], 2);
    // noiseless: the interval is the point itself
    assert!(
        (sens["pct_lo"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{sens}"
    );
    // tolerance 1, 2, 5 % at 1, 2, 5 us; +10 % at 10 us
    for (i, want) in [1.0, 2.0, 5.0].into_iter().enumerate() {
        let t = &k["tolerance"][i];
        assert!((t["value"].as_f64().unwrap() - want).abs() < 1e-9, "{t}");
        assert!((t["hi"].as_f64().unwrap() - want).abs() < 1e-9, "{t}");
    }
    assert!((k["crossing"].as_f64().unwrap() - 10.0).abs() < 1e-9, "{k}");
    assert!(so.contains("1 %/us [1, 1]"), "{so}");
    assert!(
        so.contains("1us [1, 1]") && so.contains("5us [5, 5]"),
        "{so}"
    );
    let md = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("| L | 1us [1, 1] | 2us [2, 2] | 5us [5, 5] |"),
        "{md}"
    );
    assert!(md.contains("| native (no shim) | 2 | 1 |"), "{md}");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn tolerance_not_reached_is_said_so() {
    let out = tempdir("not-reached");
    // +2 % at 20 us is the whole effect: 5 % is never reached
    let script = r#"if [ -z "$LD_PRELOAD" ]; then echo "figure 0.9"; exit 0; fi
case "$LOGGP_L" in 20us) echo "figure 1.02" ;; *) echo "figure 1.0" ;; esac"#;
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "20us",
            "--repeat",
            "2",
            "--metric",
            r"figure ([0-9.]+)",
        ],
        script,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    assert!(so.contains("not reached (max 2.0 % at 20us)"), "{so}");
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(
        v["knobs"][0]["tolerance"][2]["value"],
        serde_json::Value::Null
    );
    assert!((v["knobs"][0]["tolerance"][1]["value"].as_f64().unwrap() - 20.0).abs() < 1e-6);
    let _ = fs::remove_dir_all(&out);
}

/// A script with noise: the baseline 1.0, +1 % per us of L, each run off
/// by up to ±2 % (from /dev/urandom).
const NOISY: &str = r#"n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
case "$LOGGP_L" in 10us) b=1.1 ;; *) b=1.0 ;; esac
awk -v b="$b" -v n="$n" 'BEGIN { printf "figure %.6f\n", b * (1 + 0.04 * (n / 65535 - 0.5)) }'"#;

#[test]
fn precision_repeats_until_the_interval_is_narrow_enough() {
    let out = tempdir("precision");
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "10us",
            "--repeat",
            "2",
            "--metric",
            r"figure ([0-9.]+)",
            "--precision",
            "0.2%",
            "--max-runs",
            "150",
        ],
        NOISY,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    // 2 rounds of 3, then rounds of 2 (baseline and L=10us)
    assert!(se.contains("round 3 for precision ±0.2 %"), "{se}");
    assert!(se.contains("precision reached after"), "{se}");
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(v["precision_reached"], true);
    let s = &v["knobs"][0]["sensitivity"];
    let half = (s["pct_hi"].as_f64().unwrap() - s["pct_lo"].as_f64().unwrap()) / 2.0;
    assert!(half <= 0.2, "{s}");
    let rows = csv_rows(&out.join("runs.csv"));
    assert!(rows.len() > 6 && rows.len() <= 150, "{}", rows.len());
    // the extra rounds ran the baseline and L=10us only
    let natives = rows.iter().filter(|r| r[0] == "native").count();
    assert_eq!(natives, 2, "native runs stay at --repeat");
    assert!(so.contains("precision: ±0.2 % per unit asked"), "{so}");
    assert!(so.contains("; reached after"), "{so}");
    // never trusted from fewer than 10 runs of the baseline and L=10us
    assert!(s["n_baseline"].as_u64().unwrap() >= 10, "{s}");
    assert!(s["n_first"].as_u64().unwrap() >= 10, "{s}");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn max_runs_stops_a_precision_that_cannot_be_had() {
    let out = tempdir("max-runs");
    let o = sweep_sh(
        &[
            "--knob",
            "L",
            "--values",
            "10us",
            "--repeat",
            "2",
            "--metric",
            r"figure ([0-9.]+)",
            "--precision",
            "0.0001%",
            "--max-runs",
            "11",
        ],
        NOISY,
        &out,
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    // 6 runs, then rounds of 2: 8, 10; an 11th alone would not be a round
    assert_eq!(csv_rows(&out.join("runs.csv")).len(), 10);
    assert!(se.contains("--max-runs 11 reached (10 runs)"), "{se}");
    assert!(
        so.contains("NOT reached after 10 runs (at most 11)"),
        "{so}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(v["precision_reached"], false);
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn the_real_shim_reports_virtual_time_at_the_baseline() {
    // The ranks are a shell that runs the ping-pong (which inherits the
    // shim from LD_PRELOAD) and files the shim's own report under the
    // configuration it ran at; native runs have no shim and write none.
    let shims = root().join("target/release");
    let mpi = "openmpi";
    let dir = examples(mpi);
    let out = tempdir("real-vt");
    let shim_copy = out.join("shim");
    fs::create_dir_all(&shim_copy).unwrap();
    let name = format!("libloggp-{mpi}.so");
    fs::copy(shims.join(&name), shim_copy.join(&name)).unwrap();
    let reports = out.join("reports");
    fs::create_dir_all(&reports).unwrap();
    let script = format!(
        r#""$@"; rc=$?; r=$OMPI_COMM_WORLD_RANK; f={d}/rep-$r.json
if [ -f "$f" ]; then mv "$f" "{d}/L${{LOGGP_L:-0}}-vt${{LOGGP_VT:-unset}}-rank$r-$$.json"; fi
exit $rc"#,
        d = reports.display()
    );
    let mut c = loggp();
    c.env("LOGGP_SHIM_DIR", &shim_copy)
        .env("LOGGP_REPORT", reports.join("rep-%r.json"))
        .args(["sweep", "--knob", "L", "--values", "20us", "--repeat", "2"])
        .args(["--metric", r"round trips of \d+ B in ([0-9.]+) s"])
        .args(["--timeout", "120s", "--lock", LOCK, "--out"])
        .arg(out.join("results"))
        .arg("--")
        .args(launcher(mpi, 2))
        .args(["sh", "-c", &script, "sh"])
        .arg(dir.join("pingpong"))
        .arg("2000");
    let o = run(c, Duration::from_secs(600));
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    let mut names: Vec<String> = fs::read_dir(&reports)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // 2 repeats x 2 ranks at the baseline and at L=20us; none native
    let base: Vec<&String> = names.iter().filter(|n| n.starts_with("L0-vton-")).collect();
    let l20: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("L20us-vton-"))
        .collect();
    assert_eq!((base.len(), l20.len(), names.len()), (4, 4, 8), "{names:?}");
    for n in &base {
        let r = fs::read_to_string(reports.join(n)).unwrap();
        assert!(
            r.contains("\"virtual_time\": true") && r.contains("\"L_ns\":0,"),
            "{n}: {r}"
        );
    }
    // L armed in both (LOGGP_ARM): the baseline takes the timed paths an
    // L above zero takes, not the idle lanes.
    for n in base.iter().chain(&l20) {
        let r = fs::read_to_string(reports.join(n)).unwrap();
        assert!(
            r.contains("\"armed\": \"L\"")
                && r.contains("\"idle_lanes\": {\"send\":false,\"gate\":false,\"tiny\":false}"),
            "{n}: {r}"
        );
    }
    for n in &l20 {
        let r = fs::read_to_string(reports.join(n)).unwrap();
        assert!(r.contains("\"L_ns\":20000,"), "{n}: {r}");
    }
    let _ = fs::remove_dir_all(&out);
}
