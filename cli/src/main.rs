//! `loggp`: the front door of loggp-shim.

mod calibrate;
mod json;
#[allow(dead_code)]
mod knobs;
#[allow(dead_code)]
mod launch;
mod sweep;

use launch::Mpi;
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  loggp run [--mpi openmpi|mpich] [knob flags] -- <launcher or program> [args...]
  loggp shim-path [--mpi openmpi|mpich]
  loggp calibrate [--mpi openmpi|mpich] [--np N] [--knob L,o_s,...] [--values ...] [--quick] [--out DIR]
  loggp calibrate --collectives [--mpi openmpi|mpich] [--np 2,4,8] [--knob L=20us,o_s=20us] [--quick] [--out DIR]
  loggp sweep --knob L --values 0,5,20us [--repeat 5] [--metric REGEX] [--out DIR] -- <launcher> [args...]
  (loggp calibrate --help, loggp sweep --help for all options)

knob flags (each means the same as its variable):
  --L +5us        LOGGP_L       added latency
  --o-s 2us       LOGGP_O_S     added send overhead (CPU busy)
  --o-r 2us       LOGGP_O_R     added receive overhead (CPU busy)
  --g-s 20us      LOGGP_G_S     floor on the gap between departures
  --g-r 20us      LOGGP_G_R     floor on the gap between deliveries
  --G 1GB/s       LOGGP_G       floor on time per byte (or a bandwidth)
  --send-queue N  LOGGP_SEND_QUEUE
  --vt auto|on|off, --log off|info|debug, --report PATH, --inline-max BYTES";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => cmd_run(&args[1..]),
        Some("shim-path") => cmd_shim_path(&args[1..]),
        Some("calibrate") => calibrate::main(&args[1..]),
        Some("sweep") => sweep::main(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            // A closed pipe (loggp | head) is not an error worth a panic.
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("loggp: {msg}");
            ExitCode::from(2)
        }
    }
}

fn cmd_shim_path(args: &[String]) -> Result<ExitCode, String> {
    let mut mpi = Mpi::OpenMpi;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--mpi" => {
                mpi = Mpi::parse(args.get(i + 1).ok_or("--mpi needs a value")?)?;
                i += 2;
            }
            other => return Err(format!("shim-path: unexpected argument {other:?}")),
        }
    }
    let _ = writeln!(std::io::stdout(), "{}", launch::shim_path(mpi)?.display());
    Ok(ExitCode::SUCCESS)
}

fn cmd_run(args: &[String]) -> Result<ExitCode, String> {
    let mut mpi: Option<Mpi> = None;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--" {
            i += 1;
            break;
        }
        if args[i] == "--mpi" {
            mpi = Some(Mpi::parse(args.get(i + 1).ok_or("--mpi needs a value")?)?);
            i += 2;
            continue;
        }
        match knobs::take_flag(args, i)? {
            Some((var, val, used)) => {
                flags.push((var, val));
                i += used;
            }
            None => {
                return Err(format!(
                    "run: unknown flag {:?} (put the program after --)",
                    args[i]
                ))
            }
        }
    }
    let cmd = &args[i..];
    if cmd.is_empty() {
        return Err("run: no program given after --".into());
    }
    let vars = knobs::resolve(&flags)?;
    let mpi = match mpi {
        Some(m) => m,
        None => launch::detect_mpi(&cmd[0]).ok_or_else(|| {
            format!(
                "cannot tell which MPI {:?} belongs to; say --mpi openmpi or --mpi mpich",
                cmd[0]
            )
        })?,
    };
    let shim = launch::shim_path(mpi)?;
    let status = launch::command(mpi, &shim, &vars, cmd)
        .status()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd[0]))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}
