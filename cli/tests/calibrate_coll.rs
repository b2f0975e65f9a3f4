//! `loggp calibrate --collectives` end to end, on 2 ranks, for both MPIs.
//!
//! Runs the release binary `target/release/loggp` with the kernels
//! `loggp-collbench-*`, `loggp-prtt-*` and the shims beside it: build with
//! `scripts/build.sh` first. The command takes `/tmp/loggp-mpi.lock` itself
//! around every mpirun (as the harness in `common` does for its jobs), so
//! these tests must not hold it.
//!
//! Expectations:
//! * `--quick` at P = 2 (PRTT through the shim first): every output file
//!   exists and is well formed; the table has one row per knob × op × size
//!   (Barrier once), each naming the algorithm forced, with finite
//!   positive times; the predicted Δ of L = 20 µs at P = 2 is 20 µs for
//!   every op (one message on each critical path), and of o_s likewise.
//! * L = +20 µs on Bcast at P = 2: the measured Δ is at least 15 µs and
//!   below 40 µs (up to three attempts: noise only makes a run slower, a
//!   shim that does not delay the collective misses the lower bound on
//!   every attempt). Parameters come from `--params`, which is tested too.
//! * Allreduce of 64 KiB at P = 2 runs (and is predicted as) Rabenseifner's,
//!   two rounds: L = +50 µs measures 75 to 150 µs against 100 predicted.
//! * Bad input stops before any job, with one line naming the option.

mod common;

use common::{loggp_bin, retry};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn loggp() -> PathBuf {
    let p = loggp_bin();
    for mpi in ["openmpi", "mpich"] {
        for k in ["collbench", "prtt"] {
            let f = p.with_file_name(format!("loggp-{k}-{mpi}"));
            assert!(
                f.is_file(),
                "{} is missing: run scripts/build.sh first",
                f.display()
            );
        }
    }
    p
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loggp-coll-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(args: &[&str]) -> Output {
    Command::new(loggp())
        .arg("calibrate")
        .arg("--collectives")
        .args(args)
        .output()
        .expect("cannot start loggp")
}

fn check(o: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("# loggp collective model check"),
        "{stdout}"
    );
    stdout
}

/// Splits one CSV line, honouring double quotes.
fn split(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn csv(out: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(out.join("coll.csv")).expect("coll.csv");
    let mut lines = text.lines();
    let head = split(lines.next().expect("header"));
    lines
        .map(|l| {
            let cells = split(l);
            assert_eq!(cells.len(), head.len(), "ragged CSV row {l:?}");
            head.iter().cloned().zip(cells).collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col} = {:?} is not a number in {row:?}", row[col]))
}

fn quick(mpi: &str) {
    let out = out_dir(&format!("quick-{mpi}"));
    let o = run(&[
        "--quick",
        "--mpi",
        mpi,
        "--np",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = check(&o, "calibrate --collectives --quick");
    for f in [
        "report.md",
        "coll.csv",
        "coll.json",
        "coll.svg",
        "raw/prtt-vt-on.txt",
        "raw/P2-zero.txt",
        "raw/P2-L=20us.txt",
        "raw/P2-o_s=20us.txt",
    ] {
        let p = out.join(f);
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{} missing or empty", p.display());
    }
    let svg = std::fs::read_to_string(out.join("coll.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let text = std::fs::read_to_string(out.join("coll.csv")).unwrap();
    let bad = text
        .split([',', '\n'])
        .any(|c| matches!(c.trim(), "NaN" | "inf" | "-inf"));
    assert!(!bad, "coll.csv:\n{text}");
    let json = std::fs::read_to_string(out.join("coll.json")).unwrap();
    assert!(json.contains("\"params\"") && json.contains("\"rows\""));
    assert!(!json.contains("NaN") && !json.contains(": inf"), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("coll.json is JSON");
    // calibrate --collectives --params reads these back
    for p in ["L", "o_s", "o_r", "g_s", "g_r", "G"] {
        assert!(v["params"][p].is_number(), "params {p}: {json}");
    }
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), csv(&out).len(), "one JSON row per CSV row");
    assert!(
        rows.iter().all(|r| r["zero"]["median"].is_number()),
        "{json}"
    );
    for want in [
        "## L=20us",
        "## o_s=20us",
        "recursive_doubling",
        "## Summary",
    ] {
        assert!(stdout.contains(want), "no {want:?} in\n{stdout}");
    }
    let rows = csv(&out);
    // 2 knobs × (Barrier + 4 ops × 2 sizes)
    assert_eq!(rows.len(), 18, "rows: {rows:?}");
    for r in &rows {
        let alg = match r["op"].as_str() {
            "barrier" => "bruck",
            "bcast" | "reduce" => "binomial",
            "allreduce" => "recursive_doubling",
            "alltoall" => "pairwise",
            other => panic!("unexpected op {other}"),
        };
        assert_eq!(r["algorithm"], alg);
        assert_eq!(r["mpi"], mpi);
        for col in ["t0_median_ns", "t_median_ns", "t0_pred_ns", "t_pred_ns"] {
            let v = num(r, col);
            assert!(v.is_finite() && v > 0.0, "{col} = {v} in {r:?}");
        }
        assert!(num(r, "delta_meas_ns").is_finite(), "{r:?}");
        // P = 2: every op has one message (round) on its critical path
        let pred = num(r, "delta_pred_ns");
        assert!((pred - 20_000.0).abs() < 1.0, "predicted Δ {pred} in {r:?}");
        // 2 ranks on 2 cores: never flagged as oversubscribed
        assert!(!r["notes"].contains("oversubscribed"), "{r:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// One row of `calibrate --collectives` at P = 2: `op` of `size` with L =
/// +`l_us` µs and `reps` repetitions, from shared-memory-like `--params` (ns;
/// each prediction here is a number of L whatever they are). Up to three
/// attempts; `judge` passes the row or says why not.
fn l_row(
    mpi: &str,
    l_us: u32,
    op: &str,
    size: &str,
    reps: &str,
    judge: impl Fn(&HashMap<String, String>) -> Result<String, String>,
) {
    let dir = out_dir(&format!("{op}-{size}-{mpi}"));
    std::fs::create_dir_all(&dir).unwrap();
    let params = dir.join("params.json");
    std::fs::write(
        &params,
        r#"{"params": {"L": 300, "o_s": 200, "o_r": 150, "g_s": 150, "g_r": 100, "G": 0.1}}"#,
    )
    .unwrap();
    let out = dir.join("out");
    retry(
        3,
        &format!("{mpi}: L = {l_us} us on {op} of {size} at P = 2"),
        || {
            let o = run(&[
                "--mpi",
                mpi,
                "--np",
                "2",
                "--ops",
                op,
                "--sizes",
                size,
                "--knob",
                &format!("L={l_us}us"),
                "--reps",
                reps,
                "--params",
                params.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ]);
            check(&o, &format!("calibrate --collectives ({op}, L)"));
            let rows = csv(&out);
            if rows.len() != 1 {
                return Err(format!("expected one row, got {rows:?}"));
            }
            judge(&rows[0])
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The measured Δ of `row` in µs, passed when within `range`.
fn delta_within(
    row: &HashMap<String, String>,
    range: std::ops::Range<f64>,
) -> Result<String, String> {
    let d = num(row, "delta_meas_ns") / 1e3;
    if range.contains(&d) {
        Ok(format!("measured Δ {d:.2} µs"))
    } else {
        Err(format!(
            "measured Δ {d:.2} µs, expected {} to {} µs",
            range.start, range.end
        ))
    }
}

/// Bcast of 8 B at P = 2: one L on the critical path (20 µs predicted).
fn bcast_latency(mpi: &str) {
    l_row(mpi, 20, "bcast", "8", "30", |row| {
        delta_within(row, 15.0..40.0)
    });
}

/// Allreduce of 64 KiB at P = 2 runs Rabenseifner's by default (one
/// halving and one doubling round, each one message on the critical path):
/// the report names it, predicts Δ = 2 L, and L = +50 µs measures 75 to
/// 150 µs (a knob applied in one round only would be at most 50, twice per
/// round 200). L is 50 µs, not 20, because part of each round's L is
/// absorbed where the native 32 KiB exchange takes longer than the
/// learned transit (the report's note says so): 4 to 13 µs of 40 on this
/// 2-core host and in CI, which left 2 L = 40 µs at 27 to 38 µs, a bound
/// of 32 failing by noise; the absorbed part does not grow with L.
fn allreduce_rabenseifner(mpi: &str) {
    l_row(mpi, 50, "allreduce", "64KiB", "20", |row| {
        assert_eq!(row["algorithm"], "rabenseifner", "{row:?}");
        let pred = num(row, "delta_pred_ns");
        assert!((pred - 100_000.0).abs() < 1.0, "predicted Δ {pred}");
        delta_within(row, 75.0..150.0)
    });
}

#[test]
fn allreduce_rabenseifner_openmpi() {
    allreduce_rabenseifner("openmpi");
}

#[test]
fn allreduce_rabenseifner_mpich() {
    allreduce_rabenseifner("mpich");
}

#[test]
fn quick_openmpi() {
    quick("openmpi");
}

#[test]
fn quick_mpich() {
    quick("mpich");
}

#[test]
fn bcast_latency_openmpi() {
    bcast_latency("openmpi");
}

#[test]
fn bcast_latency_mpich() {
    bcast_latency("mpich");
}

#[test]
fn bad_input_is_one_line_naming_the_option() {
    for (args, want) in [
        (&["--np", "1"][..], "--np \"1\" is not accepted"),
        (
            &["--knob", "L=fast"][..],
            "--knob \"L=fast\" is not accepted",
        ),
        (&["--sizes", "7"][..], "--sizes \"7\" is not accepted"),
        (&["--ops", "gather"][..], "--ops \"gather\" is not accepted"),
        (
            &["--params", "/nonexistent.json"][..],
            "--params /nonexistent.json",
        ),
    ] {
        let o = run(args);
        assert!(!o.status.success(), "{args:?} was accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
