//! Bad input, wrong MPI, logging and reports,
//! with real `mpirun` jobs of `tests/progs/hello.c` for Open MPI and MPICH.
//!
//! - A bad `LOGGP_*` value stops the job at MPI_Init with exactly one line
//!   `loggp-shim: <the config error line>` (the line `loggp_core::Config`
//!   gives for it) and a non-zero exit of mpirun, without a crash.
//! - `loggp run` with a bad flag value exits 2 with `loggp: <the same line>`
//!   and starts nothing.
//! - Preloading the shim built for the other MPI stops with one line starting
//!   `loggp-shim:` that names both MPIs, a non-zero exit, no crash.
//! - `LOGGP_LOG=info` makes rank 0 print one `loggp-shim:` line with the
//!   resolved configuration; without it the shim prints nothing.
//! - `LOGGP_REPORT` writes one JSON summary per rank.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test mpi_errors`

mod common;

use common::{loggp_bin, run_command, shim, Job, Mpi, Outcome, Via, BOTH};
use loggp_core::Config;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Bad settings of every kind.
const BAD: &[(&str, &str)] = &[
    ("LOGGP_L", "-5us"),
    ("LOGGP_G_S", "+20us"),
    ("LOGGP_FOO", "1"),
    ("LOGGP_SEND_QUEUE", "0"),
    ("LOGGP_G", "fast"),
    ("LOGGP_O_R", "5 parsecs"),
    ("LOGGP_ARM", "latency"),
];

fn config_error(k: &str, v: &str) -> String {
    Config::from_vars([(k, v)])
        .expect_err("the setting must be refused by loggp_core")
        .to_string()
}

/// Exactly one `loggp-shim:` line, equal to `want`.
fn one_shim_line(out: &Outcome, want: &str) -> Result<(), String> {
    let lines = out.shim_lines();
    if lines.len() == 1 && lines[0] == want {
        Ok(())
    } else {
        Err(format!(
            "expected exactly one line {want:?}, got {} loggp-shim line(s): {lines:#?}",
            lines.len()
        ))
    }
}

fn bad_input(mpi: Mpi) {
    let mut failures = Vec::new();
    // Directly on the launcher: `loggp run` would refuse these itself.
    for &(k, v) in BAD {
        let want = format!("loggp-shim: {}", config_error(k, v));
        let out = Job::new(mpi, "hello").via(Via::Direct).var(k, v).run();
        let mut why = Vec::new();
        if out.success() || out.code.is_none() {
            why.push(format!("expected a non-zero exit, got {:?}", out.code));
        }
        if out.timed_out {
            why.push("the job hung".into());
        }
        if out.crashed() {
            why.push("the output shows a crash".into());
        }
        if out.stdout.contains("after MPI_Init") {
            why.push("the program ran past MPI_Init".into());
        }
        if let Err(e) = one_shim_line(&out, &want) {
            why.push(e);
        }
        if why.is_empty() {
            eprintln!("ok: {} {k}={v:?}", mpi.name());
        } else {
            failures.push(format!(
                "{} {k}={v:?}: {}\n{}",
                mpi.name(),
                why.join("; "),
                out.describe()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bad_input_stops_at_init_openmpi() {
    bad_input(Mpi::OpenMpi);
}

#[test]
fn bad_input_stops_at_init_mpich() {
    bad_input(Mpi::Mpich);
}

/// `loggp run` refuses a bad flag value, or a bad variable in its own
/// environment, before starting anything: exit 2, one line `loggp run: ...`.
#[test]
fn loggp_run_refuses_bad_values() {
    let mpi = Mpi::OpenMpi;
    let hello = common::prog(mpi, "hello");
    let cases: &[(&str, &str, &str)] = &[
        ("--L", "LOGGP_L", "-5us"),
        ("--g-s", "LOGGP_G_S", "+20us"),
        ("--send-queue", "LOGGP_SEND_QUEUE", "0"),
        ("--G", "LOGGP_G", "fast"),
        ("--vt", "LOGGP_VT", "maybe"),
    ];
    let mut failures = Vec::new();
    for &(flag, var, v) in cases {
        for as_env in [false, true] {
            let mut c = Command::new(loggp_bin());
            c.arg("run").arg("--mpi").arg(mpi.name());
            if as_env {
                c.env(var, v);
            } else {
                c.arg(flag).arg(v);
            }
            c.arg("--")
                .arg(mpi.mpirun())
                .arg("-np")
                .arg("2")
                .arg(&hello);
            let out = run_command(c, Duration::from_secs(60));
            // in the environment the variable is named, on the command
            // line the flag, each with what the shim accepts
            let want = if as_env {
                format!("loggp run: {}", config_error(var, v))
            } else {
                let accepted = Config::from_vars([(var, v)]).unwrap_err().accepted;
                format!("loggp run: {flag} {v:?} is not accepted: expected {accepted} (as {var})")
            };
            let got: Vec<&str> = out.stderr.lines().collect();
            let how = if as_env {
                format!("{var}={v:?} in the environment")
            } else {
                format!("{flag} {v:?}")
            };
            if out.code == Some(2) && got == [want.as_str()] && !out.stdout.contains("hello:") {
                eprintln!("ok: loggp run {how}");
            } else {
                failures.push(format!(
                    "loggp run {how}: expected exit 2, nothing started and stderr exactly {want:?}\n{}",
                    out.describe()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A misspelt variable must not leave a knob silently at zero, whichever
/// way the job is started (DESIGN.md §4, "unknown"): `loggp run` with
/// `LOGGP_L_TYPO=5us` in its environment must stop with a line naming it,
/// under both MPIs (MPICH's launcher forwards the whole environment to the
/// ranks, Open MPI's does not).
#[test]
fn misspelt_variable_is_refused_through_loggp_run() {
    let mut failures = Vec::new();
    for mpi in BOTH {
        let out = Job::new(mpi, "hello")
            .via(Via::Loggp)
            .var("LOGGP_L_TYPO", "5us")
            .run();
        let named = out.stderr.lines().any(|l| {
            (l.starts_with("loggp:") || l.starts_with("loggp-shim:")) && l.contains("LOGGP_L_TYPO")
        });
        if out.success() || !named || out.crashed() {
            failures.push(format!(
                "{}: expected a non-zero exit and a `loggp:` or `loggp-shim:` line naming LOGGP_L_TYPO\n{}",
                mpi.name(),
                out.describe()
            ));
        } else {
            eprintln!("ok: {}", mpi.name());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The shim for the other MPI, preloaded directly: one clear line naming
/// both MPIs, non-zero exit, no crash, the program does not complete.
fn wrong_mpi(mpi: Mpi) {
    let wrong = shim(mpi.other());
    let out = Job::new(mpi, "hello").via(Via::Direct).preload(wrong).run();
    let lines = out.shim_lines();
    let names_both = lines.iter().any(|l| {
        let l = l.to_lowercase();
        (l.contains("open mpi") || l.contains("openmpi")) && l.contains("mpich")
    });
    assert!(
        !out.success()
            && !out.timed_out
            && !out.crashed()
            && lines.len() == 1
            && names_both
            && !out.stdout.contains("hello: PASS"),
        "program built for {} with libloggp-{}.so preloaded: expected a non-zero exit without a crash \
         and exactly one `loggp-shim:` line naming both MPIs, got {} such line(s)\n{}",
        mpi.name(),
        mpi.other().name(),
        lines.len(),
        out.describe()
    );
}

#[test]
fn wrong_mpi_refused_openmpi_program() {
    wrong_mpi(Mpi::OpenMpi);
}

#[test]
fn wrong_mpi_refused_mpich_program() {
    wrong_mpi(Mpi::Mpich);
}

/// `LOGGP_LOG=info`: one `loggp-shim:` line (rank 0 only) holding the
/// resolved configuration as `loggp_core::Config` displays it. Without
/// `LOGGP_LOG` the shim is silent, with or without knobs.
fn logging(mpi: Mpi) {
    let vars = [("LOGGP_L", "+5us"), ("LOGGP_G", "1GB/s")];
    let resolved = Config::from_vars(vars).expect("valid").to_string();
    let out = Job::new(mpi, "hello")
        .np(3)
        .via(Via::Loggp)
        .vars(&vars)
        .var("LOGGP_LOG", "info")
        .run();
    out.expect_pass("hello: PASS");
    let lines = out.shim_lines();
    assert!(
        lines.len() == 1 && lines[0].contains(&resolved),
        "LOGGP_LOG=info at np=3: expected exactly one loggp-shim line containing {resolved:?}, got {lines:#?}\n{}",
        out.describe()
    );
    // The start-up probe runs the timed paths: its transit is the minimum
    // from departure stamp to gate in every size, not the half round trip
    // through the shim (what it fell back to while the probe, every knob
    // zero, took the idle lanes, which stamp nothing).
    assert!(
        lines[0].contains("native transit (through the shim, departure stamp to gate)"),
        "{lines:#?}"
    );
    for vars in [&vars[..], &[]] {
        let out = Job::new(mpi, "hello").via(Via::Direct).vars(vars).run();
        out.expect_pass("hello: PASS");
        assert!(
            out.shim_lines().is_empty() && !out.stderr.contains("loggp"),
            "without LOGGP_LOG the shim must print nothing (knobs {vars:?})\n{}",
            out.describe()
        );
    }
}

#[test]
fn log_info_echoes_config_once_openmpi() {
    logging(Mpi::OpenMpi);
}

#[test]
fn log_info_echoes_config_once_mpich() {
    logging(Mpi::Mpich);
}

/// True when `s` is one JSON object (and nothing else).
fn json_object(s: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(s).is_ok_and(|v| v.is_object())
}

/// `LOGGP_REPORT` (core/src/config.rs): a plain path is one JSON file
/// written by rank 0 with every rank's counters; a path with `%r` gives one
/// file per rank, `%r` replaced by the rank.
fn report(mpi: Mpi) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "reports-{}-{}",
        mpi.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("report directory");
    let files = || {
        let mut v: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let read = |name: &str, out: &Outcome| {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| {
            panic!(
                "cannot read report {name}: {e}\nfiles: {:?}\n{}",
                files(),
                out.describe()
            )
        });
        assert!(json_object(&text), "{name} is not a JSON object: {text:?}");
        text.split_whitespace().collect::<String>()
    };
    for (pattern, want) in [
        ("r.%r.json", vec!["r.0.json", "r.1.json"]),
        ("plain.json", vec!["plain.json"]),
    ] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("report directory");
        let path = dir.join(pattern);
        let out = Job::new(mpi, "hello")
            .via(Via::Direct)
            .var("LOGGP_L", "5us")
            .var("LOGGP_REPORT", &path.display().to_string())
            .run();
        out.expect_pass("hello: PASS");
        assert_eq!(
            files(),
            want,
            "LOGGP_REPORT={pattern}: files written\n{}",
            out.describe()
        );
        if pattern.contains("%r") {
            for r in 0..2 {
                let t = read(&format!("r.{r}.json"), &out);
                assert!(
                    t.contains(&format!("\"rank\":{r}")),
                    "r.{r}.json does not name rank {r}: {t}"
                );
            }
        } else {
            let t = read("plain.json", &out);
            assert!(
                t.contains("\"rank\":0") && t.contains("\"rank\":1"),
                "plain.json does not hold both ranks' counters: {t}"
            );
        }
    }
    // Which lanes serve a rank (`idle_lanes`): the idle ones where its
    // side's knobs are zero and not armed (LOGGP_ARM), the timed ones
    // where a knob of that side is set or armed; tiny headers where both
    // sides are idle and no rank runs MPI_THREAD_MULTIPLE (threads.c).
    for (prog, vars, armed, send, gate, tiny) in [
        ("hello", &[("LOGGP_VT", "on")][..], "", true, true, true),
        (
            "hello",
            &[("LOGGP_ARM", "o_r")][..],
            "o_r",
            true,
            false,
            false,
        ),
        (
            "hello",
            &[("LOGGP_ARM", "o_s")][..],
            "o_s",
            false,
            true,
            false,
        ),
        (
            "hello",
            &[("LOGGP_ARM", "L,G")][..],
            "L,G",
            false,
            false,
            false,
        ),
        ("hello", &[("LOGGP_L", "5us")][..], "", false, false, false),
        ("threads", &[("LOGGP_VT", "on")][..], "", true, true, false),
    ] {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("report directory");
        let path = dir.join("lanes.json");
        let out = Job::new(mpi, prog)
            .via(Via::Direct)
            .vars(vars)
            .var("LOGGP_REPORT", &path.display().to_string())
            .run();
        out.expect_pass(&format!("{prog}: PASS"));
        let t = read("lanes.json", &out);
        let want = format!(
            "\"virtual_time\":true,\"armed\":\"{armed}\",\"idle_lanes\":{{\"send\":{send},\"gate\":{gate},\"tiny\":{tiny}}}"
        );
        assert!(t.contains(&want), "{vars:?}: want {want} in {t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_files_openmpi() {
    report(Mpi::OpenMpi);
}

#[test]
fn report_files_mpich() {
    report(Mpi::Mpich);
}

/// The harness itself: a deadlocked job is killed at its timeout, with every
/// process it started, and reported as such (a deadlock fails, it never
/// hangs CI).
fn harness_kills(mpi: Mpi) {
    let mut job = Job::new(mpi, "deadlock").via(Via::Native);
    job.timeout = Duration::from_secs(5);
    let exe = job.prog.clone();
    let out = job.run();
    assert!(
        out.timed_out && !out.success() && out.elapsed < Duration::from_secs(30),
        "expected the deadlocked job to be killed after 5 s\n{}",
        out.describe()
    );
    assert!(
        out.stdout.contains("deadlock: waiting rank 1"),
        "the job did not get as far as the deadlock\n{}",
        out.describe()
    );
    std::thread::sleep(Duration::from_millis(500));
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|p| p == exe))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "ranks left running after the kill: pids {left:?}"
    );
}

#[test]
fn harness_kills_deadlocked_job_openmpi() {
    harness_kills(Mpi::OpenMpi);
}

#[test]
fn harness_kills_deadlocked_job_mpich() {
    harness_kills(Mpi::Mpich);
}

#[test]
fn json_object_check_is_not_vacuous() {
    assert!(json_object(r#"{"a": [1, {"b": "}"}], "c": "\""}"#));
    for bad in [
        "",
        "{",
        "}",
        "{}}",
        "[1]",
        r#"{"a": "}"#,
        "{} {}",
        "{]",
        r#"{"a": 1,}"#,
        r#"{"a" 1}"#,
    ] {
        assert!(!json_object(bad), "{bad:?} accepted");
    }
}

/// Ranks started with different knobs would misread each other's messages:
/// the job stops at MPI_Init with one `loggp-shim:` line, no crash, no hang.
fn different_knobs(mpi: Mpi) {
    let hello = common::prog(mpi, "hello");
    let so = shim(mpi).display().to_string();
    let cmd = common::mpmd(
        mpi,
        &hello,
        &[
            vec![("LD_PRELOAD", so.clone()), ("LOGGP_L", "5us".into())],
            vec![("LD_PRELOAD", so), ("LOGGP_L", "10us".into())],
        ],
    );
    let out = run_command(cmd, Duration::from_secs(30));
    let lines = out.shim_lines();
    assert!(
        !out.success()
            && !out.timed_out
            && !out.crashed()
            && lines.len() == 1
            && !out.stdout.contains("hello: PASS"),
        "rank 0 with LOGGP_L=5us, rank 1 with LOGGP_L=10us: expected a non-zero exit, no crash or \
         hang, exactly one loggp-shim line; got {} such line(s)\n{}",
        lines.len(),
        out.describe()
    );
}

#[test]
fn ranks_with_different_knobs_stop_openmpi() {
    different_knobs(Mpi::OpenMpi);
}

#[test]
fn ranks_with_different_knobs_stop_mpich() {
    different_knobs(Mpi::Mpich);
}

/// Only rank 0 preloaded (a launcher that drops LD_PRELOAD for some ranks,
/// or a typo in a wrapper script): the job must stop with a `loggp-shim:`
/// line, not hang and not crash. (With the shim at zero it would be a mere
/// pass-through; with a knob its messages carry what rank 1 cannot read.)
fn partial_preload(mpi: Mpi) {
    let hello = common::prog(mpi, "hello");
    let so = shim(mpi).display().to_string();
    let cmd = common::mpmd(
        mpi,
        &hello,
        &[vec![("LD_PRELOAD", so), ("LOGGP_L", "5us".into())], vec![]],
    );
    let out = run_command(cmd, Duration::from_secs(15));
    assert!(
        !out.success() && !out.timed_out && !out.crashed() && !out.shim_lines().is_empty(),
        "only rank 0 preloaded (LOGGP_L=5us): expected a non-zero exit with a loggp-shim line, \
         no crash and no hang\n{}",
        out.describe()
    );
}

#[test]
fn partially_preloaded_job_stops_openmpi() {
    partial_preload(Mpi::OpenMpi);
}

#[test]
fn partially_preloaded_job_stops_mpich() {
    partial_preload(Mpi::Mpich);
}
