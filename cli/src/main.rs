//! `loggp`: the front door of loggp-shim.

mod args;
mod calibrate;
mod csv;
mod job;
mod json;
mod knobs;
#[allow(dead_code)]
mod launch;
mod svg;
mod sweep;

use clap::{Parser, Subcommand};
use launch::Mpi;
use std::io::Write;
use std::process::ExitCode;

/// Emulates LogGP network parameters for MPI programs
///
/// Runs them with the shim preloaded into every rank, measures what the
/// shim realises, and sweeps knobs to see which ones a program cares about.
#[derive(Parser, Debug)]
#[command(name = "loggp", version, after_help = UNITS)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// Printed under every subcommand's help.
const UNITS: &str = "\
Units, the same for every flag and every LOGGP_* variable:
  times      ns us ms s (5us, 1.5ms; a bare 0 needs none)
  bandwidths B/s KB/s MB/s GB/s (decimal), KiB/s MiB/s GiB/s; or a time per byte (0.5ns)
  sizes      bytes: 64, 8KiB (KiB MiB GiB: 1024-based), 8KB (KB MB GB: 1000-based)
  lists      comma-separated; a bare number takes the unit of the next value
             that has one (0,20,40us), except sizes, where it is bytes";

#[derive(Subcommand, Debug)]
enum Cmd {
    Run(RunArgs),
    ShimPath(ShimPathArgs),
    Calibrate(calibrate::Args),
    Sweep(sweep::Args),
}

/// Run a program with the shim preloaded into every rank
///
/// The program is an MPI launcher (mpirun, mpiexec) or one process. Each
/// knob flag means exactly what its variable means (`--L +5us` is
/// `LOGGP_L=+5us`); LOGGP_* variables already in the environment apply
/// too, and a flag wins over them. A knob may target some pairs of ranks:
/// `--L 1us,20us@inter` (@inter, @intra, @ranks=0-3, @from=0-3, @to=0-3,
/// @pairs=0:1; README, "Targeting").
#[derive(clap::Args, Debug)]
#[command(after_help = UNITS)]
struct RunArgs {
    /// Which shim to preload: openmpi, mpich (Debian's) or a build's name
    /// (openmpi-5.0); default: the build that serves the launcher (its
    /// location and --version) or the libmpi the program links
    #[arg(long, value_name = "BUILD", value_parser = args::mpi)]
    mpi: Option<Mpi>,
    /// LOGGP_L: added latency (+5us)
    #[arg(long = "L", value_name = "TIME", allow_hyphen_values = true, value_parser = args::knob("LOGGP_L"))]
    l: Option<String>,
    /// LOGGP_O_S: added send overhead, CPU busy (2us)
    #[arg(long = "o-s", value_name = "TIME", allow_hyphen_values = true, value_parser = args::knob("LOGGP_O_S"))]
    o_s: Option<String>,
    /// LOGGP_O_R: added receive overhead, CPU busy (2us)
    #[arg(long = "o-r", value_name = "TIME", allow_hyphen_values = true, value_parser = args::knob("LOGGP_O_R"))]
    o_r: Option<String>,
    /// LOGGP_G_S: floor on the gap between departures (20us)
    #[arg(long = "g-s", value_name = "TIME", allow_hyphen_values = true, value_parser = args::knob("LOGGP_G_S"))]
    g_s: Option<String>,
    /// LOGGP_G_R: floor on the gap between deliveries (20us)
    #[arg(long = "g-r", value_name = "TIME", allow_hyphen_values = true, value_parser = args::knob("LOGGP_G_R"))]
    g_r: Option<String>,
    /// LOGGP_G: floor on the time per byte, or a bandwidth (1GB/s)
    #[arg(long = "G", value_name = "BANDWIDTH", allow_hyphen_values = true, value_parser = args::knob("LOGGP_G"))]
    big_g: Option<String>,
    /// LOGGP_L_DIST: distribution of L per message around its value
    /// (fixed, uniform:W, normal:S, exp, empirical:FILE)
    #[arg(long = "l-dist", value_name = "DIST", value_parser = args::knob("LOGGP_L_DIST"))]
    l_dist: Option<String>,
    /// LOGGP_O_S_DIST: distribution of o_s per message (as --l-dist)
    #[arg(long = "o-s-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_S_DIST"))]
    o_s_dist: Option<String>,
    /// LOGGP_O_R_DIST: distribution of o_r per message (as --l-dist)
    #[arg(long = "o-r-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_R_DIST"))]
    o_r_dist: Option<String>,
    /// LOGGP_SEED: seed of the draws (each rank its own stream)
    #[arg(long = "seed", value_name = "N", value_parser = args::knob("LOGGP_SEED"))]
    seed: Option<String>,
    /// LOGGP_SEND_QUEUE: messages whose virtual departure lies ahead, at most
    #[arg(long = "send-queue", value_name = "N", allow_hyphen_values = true, value_parser = args::knob("LOGGP_SEND_QUEUE"))]
    send_queue: Option<String>,
    /// LOGGP_VT: virtual-time mode
    #[arg(long = "vt", value_name = "auto|on|off", allow_hyphen_values = true, value_parser = args::knob("LOGGP_VT"))]
    vt: Option<String>,
    /// LOGGP_LOG: logging to standard error
    #[arg(long = "log", value_name = "off|info|debug", allow_hyphen_values = true, value_parser = args::knob("LOGGP_LOG"))]
    log: Option<String>,
    /// LOGGP_REPORT: JSON summary of the run (%r in the path: one file per rank)
    #[arg(long = "report", value_name = "PATH", allow_hyphen_values = true, value_parser = args::knob("LOGGP_REPORT"))]
    report: Option<String>,
    /// LOGGP_INLINE_MAX: receives up to this size carry the piggyback by copy
    #[arg(long = "inline-max", value_name = "BYTES", allow_hyphen_values = true, value_parser = args::knob("LOGGP_INLINE_MAX"))]
    inline_max: Option<String>,
    /// LOGGP_CLOCK: the shim's clock (auto: the TSC where the kernel uses it)
    #[arg(long = "clock", value_name = "auto|monotonic", allow_hyphen_values = true, value_parser = args::knob("LOGGP_CLOCK"))]
    clock: Option<String>,
    /// The launcher or program and its arguments, passed on untouched
    #[arg(last = true, value_name = "PROGRAM")]
    cmd: Vec<String>,
}

impl RunArgs {
    /// `(variable, value)` of every knob flag given.
    fn flags(&self) -> Vec<(String, String)> {
        [
            ("LOGGP_L", &self.l),
            ("LOGGP_O_S", &self.o_s),
            ("LOGGP_O_R", &self.o_r),
            ("LOGGP_G_S", &self.g_s),
            ("LOGGP_G_R", &self.g_r),
            ("LOGGP_G", &self.big_g),
            ("LOGGP_L_DIST", &self.l_dist),
            ("LOGGP_O_S_DIST", &self.o_s_dist),
            ("LOGGP_O_R_DIST", &self.o_r_dist),
            ("LOGGP_SEED", &self.seed),
            ("LOGGP_SEND_QUEUE", &self.send_queue),
            ("LOGGP_VT", &self.vt),
            ("LOGGP_LOG", &self.log),
            ("LOGGP_REPORT", &self.report),
            ("LOGGP_INLINE_MAX", &self.inline_max),
            ("LOGGP_CLOCK", &self.clock),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string(), v.clone())))
        .collect()
    }
}

/// Print the absolute path of the shim library for an MPI
///
/// Debian's Open MPI by default; --list prints every build (one per line:
/// name, family and version built from, compiler wrapper, library path).
#[derive(clap::Args, Debug)]
struct ShimPathArgs {
    /// Which MPI's shim: openmpi, mpich (Debian's) or a build's name (openmpi-5.0)
    #[arg(long, value_name = "BUILD", value_parser = args::mpi, default_value = "openmpi")]
    mpi: Mpi,
    /// The build that serves this launcher or program (as loggp run picks it)
    #[arg(long, value_name = "PATH", conflicts_with_all = ["mpi", "list"])]
    mpirun: Option<String>,
    /// List every build
    #[arg(long)]
    list: bool,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli: Cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            // name the subcommand in the message when there is one
            let sub = argv
                .iter()
                .skip(1)
                .find(|a| ["run", "shim-path", "calibrate", "sweep"].contains(&a.as_str()));
            let what = sub.map_or("loggp".to_string(), |s| format!("loggp {s}"));
            return args::exit(&e, &what);
        }
    };
    let (what, result) = match cli.cmd {
        None => {
            let _ = write!(
                std::io::stdout(),
                "{}",
                <Cli as clap::CommandFactory>::command().render_help()
            );
            return ExitCode::SUCCESS;
        }
        Some(Cmd::Run(a)) => ("loggp run", cmd_run(&a)),
        Some(Cmd::ShimPath(a)) => ("loggp shim-path", cmd_shim_path(&a)),
        Some(Cmd::Calibrate(a)) => {
            // the arguments as given, for the report's reproduction line
            let raw: Vec<String> = argv
                .iter()
                .skip_while(|s| *s != "calibrate")
                .skip(1)
                .cloned()
                .collect();
            ("loggp calibrate", calibrate::main(a, raw))
        }
        Some(Cmd::Sweep(a)) => ("loggp sweep", sweep::main(a)),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("{what}: {msg}");
            ExitCode::from(2)
        }
    }
}

fn cmd_shim_path(a: &ShimPathArgs) -> Result<ExitCode, String> {
    let mut out = std::io::stdout();
    if a.list {
        let all = launch::builds();
        if all.is_empty() {
            return Err("no build of the shim found (run scripts/build.sh)".into());
        }
        for b in all {
            let _ = writeln!(
                out,
                "{:<14} {:<8} {:<9} {:<40} {}",
                b.name,
                b.family.name(),
                b.version,
                b.mpicc.display(),
                b.path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mpi = match &a.mpirun {
        Some(m) => launch::pick(std::slice::from_ref(m))?.0,
        None => a.mpi,
    };
    let _ = writeln!(out, "{}", launch::shim_path(mpi)?.display());
    Ok(ExitCode::SUCCESS)
}

fn cmd_run(a: &RunArgs) -> Result<ExitCode, String> {
    let cmd = &a.cmd;
    if cmd.is_empty() {
        return Err(
            "no program given: put it after --, as in loggp run --L 5us -- mpirun -np 2 ./app"
                .into(),
        );
    }
    let vars = knobs::resolve(&a.flags())?;
    let (mpi, why) = match a.mpi {
        Some(m) => (m, "--mpi".to_string()),
        None => launch::pick(cmd)?,
    };
    let shim = launch::shim_path(mpi)?;
    if knobs::log_level(&vars) >= loggp_core::config::LogLevel::Info {
        eprintln!("loggp run: preloading {}: {why}", shim.display());
    }
    let status = launch::command(mpi, &shim, &vars, cmd)
        .status()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd[0]))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("loggp").chain(line.split_whitespace()))
    }

    #[test]
    fn run_passes_everything_after_the_double_dash() {
        let c =
            parse("run --L +5us --o-s=2us --G 1GB/s -- mpirun -np 2 ./a --L x -- --help").unwrap();
        let Some(Cmd::Run(r)) = c.cmd else {
            panic!("not run")
        };
        assert_eq!(
            r.cmd,
            ["mpirun", "-np", "2", "./a", "--L", "x", "--", "--help"]
        );
        assert_eq!(
            r.flags(),
            [
                ("LOGGP_L".to_string(), "+5us".to_string()),
                ("LOGGP_O_S".into(), "2us".into()),
                ("LOGGP_G".into(), "1GB/s".into())
            ]
        );
    }

    #[test]
    fn run_refuses_a_bad_knob_value_naming_the_flag() {
        let e = parse("run --g-s +20us -- ./a").unwrap_err();
        let line = args::one_line(&e, "loggp run");
        assert!(
            line.starts_with("--g-s \"+20us\" is not accepted: expected a time"),
            "{line}"
        );
        assert!(line.contains("floor"), "{line}");
        // a value that looks like a flag is still the flag's value
        let e = parse("run --L -5us -- ./a").unwrap_err();
        let line = args::one_line(&e, "loggp run");
        assert!(line.starts_with("--L \"-5us\" is not accepted"), "{line}");
        let e = parse("run --inline-max 8K -- ./a").unwrap_err();
        assert!(args::one_line(&e, "loggp run").contains("KiB"));
        let e = parse("run mpirun ./a").unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn every_subcommand_has_help() {
        for sub in ["run", "shim-path", "calibrate", "sweep"] {
            let e = parse(&format!("{sub} --help")).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "{sub}");
        }
        let c = parse("shim-path").unwrap();
        assert!(matches!(
            c.cmd,
            Some(Cmd::ShimPath(ShimPathArgs {
                mpi: Mpi::OpenMpi,
                mpirun: None,
                list: false
            }))
        ));
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}
