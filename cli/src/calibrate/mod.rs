//! `loggp calibrate`: measures the native machine (the baseline), then, per
//! knob, the machine emulated by the shim over a sweep of requested values,
//! and prints León et al.'s Tables 1–6 for it: requested, realised, percent
//! error, and every other parameter with avg/std rows, plus a summary
//! against León's published average errors (DESIGN.md §3).
//!
//! The measurement is `calibrate/prtt.c` (Hoefler's PRTT method); the
//! statistics are `loggp_core::stats` and `loggp_core::fit`; this module
//! only orchestrates, and `report` writes the files.

mod coll;
mod kernel;
mod report;

use crate::args;
use crate::knobs::knob_var;
use crate::launch::{self, Mpi};
use kernel::{KernelOpts, Params, PARAMS};
use loggp_core::dist::Dist;
use loggp_core::spread::Shape;
use loggp_core::stats;
use loggp_core::units::{self, SIZE_ACCEPTED};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Shown under `loggp calibrate --help`.
const NOTES: &str = "\
Without --collectives: measures L, o_s, o_r, g, g_s, g_r, G with Hoefler's
PRTT method, natively (baseline) and through the shim for each requested knob
value (virtual time on: a row at 0 is the emulated machine at zero knobs), and
writes report.md, calibration.csv, calibration.json, plots (SVG) and the raw
kernel output into --out (default ./loggp-calibration). After each sweep: a
native run, and one at the largest kernel delay d of the sweep's runs.
  defaults: --knob all; time knobs 0,20,40,60,80,100,120us (León: 0..120us);
            G 256,512,...,16384MB/s (León's key: 2^x MB/s, x = 8..14);
            --np 2, --size 8, --reps 100, --fit-reps 15, --baseline-runs 3
  --quick:  --knob o_s, values 0,20,50us (G: 1024,4096MB/s), --reps 40,
            --fit-reps 7, --baseline-runs 2
  --l-dist, --o-s-dist, --o-r-dist (else LOGGP_L_DIST, ... when set): that
            knob's sweep runs varied, and the report adds its realised
            per-message delay (mean, median, sd, IQR, p5, p95) against the
            distribution's, and dist-<knob>.svg

With --collectives: times each collective as the shim runs it (LOGGP_VT=on,
algorithm forced with LOGGP_COLL_<OP>), at zero knobs and with each --knob
raised alone, and prints measured vs LogGP-predicted change (and absolute
times), per op, size and P. Writes report.md, coll.csv, coll.json, coll.svg and
the raw kernel output into --out (default ./loggp-coll).
  --np:     rank counts (Open MPI runs above 2 ranks with --oversubscribe)
  --params: LogGP parameters from an earlier calibration.json (its baseline
            median) or coll.json; otherwise measured first by PRTT through
            the shim at zero knobs (LOGGP_VT=on)
  --rounds: runs of each setting, interleaved, where P fits the cores; per
            cell the smallest median is kept (noise only adds time)
  defaults: --np 2,4,8 --knob L=20us,o_s=20us --sizes 8,1024,16384 --reps 40
            --warmup 5 --rounds 3
  --quick:  --sizes 8,1024 --reps 15 --warmup 3 --rounds 1, quick PRTT

Units: times ns us ms s; G a bandwidth (B/s KB/s MB/s GB/s, KiB/s MiB/s
GiB/s) or a time per byte; sizes in bytes, 8KiB (KiB MiB: 1024-based) or 8KB
(KB MB: 1000-based). In --values a bare number takes the unit of the next
value that has one (0,20,40us).
Only one MPI job runs at a time: each run takes /tmp/loggp-mpi.lock.";

/// Measure what the shim realises (or, with --collectives, check the collective model)
///
/// Measures the LogGP parameters natively and through the shim (León et
/// al.'s Tables 1-6), or, with --collectives, holds the collectives as the
/// shim runs them against the LogGP model.
#[derive(clap::Args, Debug)]
#[command(after_help = NOTES)]
pub struct Args {
    /// The collective model check instead of the point-to-point calibration
    #[arg(long)]
    pub collectives: bool,
    /// Which MPI to measure: openmpi (default), mpich (Debian's) or a build's
    /// name (openmpi-5.0; loggp shim-path --list)
    #[arg(long, value_name = "BUILD", value_parser = args::mpi)]
    pub mpi: Option<Mpi>,
    /// The launcher to run the kernels with (default: Debian's, or the one
    /// beside the build's mpicc); without --mpi the build that serves it
    #[arg(long, value_name = "PATH")]
    pub mpirun: Option<String>,
    /// Ranks (with --collectives: a list of rank counts)
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', value_parser = args::whole(2, 256))]
    pub np: Vec<u32>,
    /// Knobs to sweep: L,o_s,o_r,g_s,g_r,G, all or none; with
    /// --collectives knob=value pairs raised one at a time (L=20us,o_s=20us)
    #[arg(long, alias = "knobs", value_name = "LIST", value_delimiter = ',', value_parser = knob_arg)]
    pub knob: Vec<KnobArg>,
    /// Requested values of the time knobs (L, o_s, o_r, g_s, g_r)
    #[arg(
        long,
        value_name = "T1,T2,...",
        allow_hyphen_values = true,
        conflicts_with = "collectives"
    )]
    pub values: Option<String>,
    /// Requested values of G (bandwidths, or times per byte)
    #[arg(
        long,
        value_name = "BW1,BW2,...",
        allow_hyphen_values = true,
        conflicts_with = "collectives"
    )]
    pub g_values: Option<String>,
    /// LOGGP_L_DIST for the L sweep (default: the variable, if set): the
    /// report shows the realised per-message delay against it
    #[arg(long = "l-dist", value_name = "DIST", value_parser = args::knob("LOGGP_L_DIST"), conflicts_with = "collectives")]
    pub l_dist: Option<String>,
    /// LOGGP_O_S_DIST for the o_s sweep (as --l-dist)
    #[arg(long = "o-s-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_S_DIST"), conflicts_with = "collectives")]
    pub o_s_dist: Option<String>,
    /// LOGGP_O_R_DIST for the o_r sweep (as --l-dist)
    #[arg(long = "o-r-dist", value_name = "DIST", value_parser = args::knob("LOGGP_O_R_DIST"), conflicts_with = "collectives")]
    pub o_r_dist: Option<String>,
    /// LOGGP_SEED for the varied sweeps (default: the variable, else 1)
    #[arg(long = "seed", value_name = "N", value_parser = args::knob("LOGGP_SEED"), conflicts_with = "collectives")]
    pub seed: Option<String>,
    /// Message size of the measurement, 1 byte to 1MiB
    #[arg(long, value_name = "BYTES", value_parser = message_size, conflicts_with = "collectives")]
    pub size: Option<u64>,
    /// Rebuild the report from DIR/raw/*.txt of an earlier run (no
    /// measurement; writes into --out, default DIR)
    #[arg(
        long,
        alias = "reanalyze",
        value_name = "DIR",
        conflicts_with = "collectives"
    )]
    pub reanalyse: Option<PathBuf>,
    /// PRTT repetitions per point (with --collectives: per cell, from 3)
    #[arg(long, value_name = "R", value_parser = args::whole(3, 100_000))]
    pub reps: Option<u32>,
    /// Repetitions per size of the g/G fit, from 3
    #[arg(long, value_name = "R", value_parser = args::whole(3, 100_000), conflicts_with = "collectives")]
    pub fit_reps: Option<u32>,
    /// Native runs that make the baseline
    #[arg(long, value_name = "K", value_parser = args::whole(1, 100), conflicts_with = "collectives")]
    pub baseline_runs: Option<u32>,
    /// Collectives to time
    #[arg(long, value_name = "OPS", value_delimiter = ',', value_parser = coll_op, requires = "collectives")]
    pub ops: Vec<coll::model::Coll>,
    /// Bytes per message (per pair for Alltoall), multiples of 8 up to 1MiB
    #[arg(long, value_name = "BYTES,...", value_delimiter = ',', value_parser = coll_size, requires = "collectives")]
    pub sizes: Vec<u64>,
    /// Untimed repetitions before the timed ones
    #[arg(long, value_name = "W", value_parser = args::whole(0, 100_000), requires = "collectives")]
    pub warmup: Option<u32>,
    /// Runs of each setting, interleaved
    #[arg(long, value_name = "N", value_parser = args::whole(1, 20), requires = "collectives")]
    pub rounds: Option<u32>,
    /// LogGP parameters from calibration.json or coll.json
    #[arg(long, value_name = "FILE", requires = "collectives")]
    pub params: Option<PathBuf>,
    /// Fewer values and repetitions
    #[arg(long)]
    pub quick: bool,
    /// Hosts of ranks 0, 1, ... in order (e.g. node1,node2: the pair
    /// across the network); the launcher's --host (Open MPI) or -hosts
    /// (MPICH)
    #[arg(
        long,
        value_name = "H1,H2[,...]",
        value_delimiter = ',',
        conflicts_with = "collectives"
    )]
    pub hosts: Vec<String>,
    /// A hostfile for the launcher (--hostfile, MPICH -f)
    #[arg(long, value_name = "FILE", conflicts_with = "collectives")]
    pub hostfile: Option<PathBuf>,
    /// Where the report goes
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Kill one MPI job (its whole process group) after this long
    #[arg(long, value_name = "TIME", default_value = "300s", allow_hyphen_values = true, value_parser = args::duration)]
    pub timeout: Duration,
}

impl Args {
    /// The build and launcher: `--mpi` run by `--mpirun`, or the build
    /// that serves `--mpirun`, or Debian's Open MPI.
    pub fn target(&self) -> Result<Mpi, String> {
        Ok(match (self.mpi, &self.mpirun) {
            (Some(m), Some(l)) => m.with_launcher(l),
            (Some(m), None) => m,
            (None, Some(l)) => launch::pick(std::slice::from_ref(l))?.0,
            (None, None) => Mpi::OpenMpi,
        })
    }
}

/// One item of `--knob`: a name (or all, none) for the calibration, a
/// knob=value pair for the collective check.
#[derive(Clone, Debug)]
pub enum KnobArg {
    All,
    None,
    Name(Knob),
    Set(coll::KnobSetting),
}

const KNOB_ACCEPTED: &str = "L, o_s, o_r, g_s, g_r, G, all or none; with --collectives knob=value pairs such as L=20us,o_s=20us (L, o_s, o_r, g_s, g_r: a time above 0; G: a bandwidth such as 1GB/s)";

fn knob_arg(s: &str) -> Result<KnobArg, String> {
    let s = s.trim();
    let found = match s {
        "all" => Some(KnobArg::All),
        "none" => Some(KnobArg::None),
        _ if s.contains('=') => coll::parse_knob(s).map(KnobArg::Set),
        _ => KNOBS
            .iter()
            .find(|k| k.name == s)
            .map(|k| KnobArg::Name(*k)),
    };
    found.ok_or_else(|| format!("expected {KNOB_ACCEPTED}"))
}

fn message_size(s: &str) -> Result<u64, String> {
    Some(args::bytes(s)?)
        .filter(|&b| (1..=1 << 20).contains(&b))
        .ok_or_else(|| format!("expected {SIZE_ACCEPTED}, from 1 to 1MiB"))
}

fn coll_size(s: &str) -> Result<u64, String> {
    units::parse_bytes(s)
        .filter(|&b| b >= 8 && b % 8 == 0 && b <= 1 << 20)
        .ok_or_else(|| "expected bytes per message, multiples of 8 from 8 to 1MiB, such as 8,1024,16KiB (KiB MiB: 1024-based; KB MB: 1000-based)".to_string())
}

/// The command line as `loggp calibrate` reads it, mistakes as one line.
#[cfg(test)]
pub(crate) fn parse_args(line: &str) -> Result<Args, String> {
    use clap::Parser;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }
    let argv = std::iter::once("calibrate").chain(line.split_whitespace());
    Cli::try_parse_from(argv)
        .map(|c| c.a)
        .map_err(|e| args::one_line(&e, "loggp calibrate"))
}

fn coll_op(s: &str) -> Result<coll::model::Coll, String> {
    coll::model::Coll::parse(s.trim()).ok_or_else(|| {
        "expected barrier, bcast, reduce, allreduce, alltoall (comma-separated)".into()
    })
}

/// One knob of the shim and what the report needs to know about it.
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    /// Name in `--knob` lists and in the report (`o_s`).
    pub name: &'static str,
    /// Floor knob (In⁼): realised = measured. Added knob (In⁺): realised =
    /// measured − baseline (the median of the baseline runs).
    pub floor: bool,
    /// Parameters that LogGP says must move with this knob (León §6.2: an
    /// overhead raises the gap); not flagged as drift.
    pub coupled: &'static [&'static str],
    /// León et al.'s average % error for this knob (Tables 1–6).
    pub leon: f64,
    /// Default sweep.
    pub default_values: &'static str,
    pub quick_values: &'static str,
}

const TIME_VALUES: &str = "0,20,40,60,80,100,120us";
const TIME_QUICK: &str = "0,20,50us";

pub const KNOBS: &[Knob] = &[
    Knob {
        name: "L",
        floor: false,
        coupled: &["RTT"],
        leon: 6.79,
        default_values: TIME_VALUES,
        quick_values: TIME_QUICK,
    },
    Knob {
        name: "o_s",
        floor: false,
        coupled: &["RTT", "g", "g_s"],
        leon: 0.64,
        default_values: TIME_VALUES,
        quick_values: TIME_QUICK,
    },
    Knob {
        name: "o_r",
        floor: false,
        coupled: &["RTT", "g", "g_r"],
        leon: 2.64,
        default_values: TIME_VALUES,
        quick_values: TIME_QUICK,
    },
    Knob {
        name: "g_s",
        floor: true,
        coupled: &["g"],
        leon: 1.52,
        default_values: TIME_VALUES,
        quick_values: TIME_QUICK,
    },
    Knob {
        name: "g_r",
        floor: true,
        coupled: &["g"],
        leon: 2.99,
        default_values: TIME_VALUES,
        quick_values: TIME_QUICK,
    },
    Knob {
        name: "G",
        floor: true,
        coupled: &["RTT", "g"],
        leon: 8.60,
        default_values: "256,512,1024,2048,4096,8192,16384MB/s",
        quick_values: "1024,4096MB/s",
    },
];

/// A requested value: what the shim is told, and the value in ns (G: ns/B).
#[derive(Clone, Debug)]
pub struct Requested {
    pub text: String,
    pub value: f64,
}

/// Parsed command line.
#[derive(Clone, Debug)]
pub struct Opts {
    pub mpi: Mpi,
    pub np: u32,
    /// Launcher options that place the ranks (`--hosts`, `--hostfile`).
    pub place: Vec<String>,
    pub knobs: Vec<Knob>,
    pub values: Option<String>,
    pub g_values: Option<String>,
    pub size: u64,
    pub out: PathBuf,
    pub quick: bool,
    pub reps: u32,
    pub fit_reps: u32,
    pub baseline_runs: u32,
    pub timeout: Duration,
    pub reanalyse: Option<PathBuf>,
    /// Varied knobs: (knob name, distribution as given), from the flags or
    /// the `LOGGP_*_DIST` variables.
    pub dists: Vec<(&'static str, String)>,
    pub seed: Option<String>,
}

/// The knobs that can vary per message: name, variable, flag.
pub const VARIED: &[(&str, &str, &str)] = &[
    ("L", "LOGGP_L_DIST", "--l-dist"),
    ("o_s", "LOGGP_O_S_DIST", "--o-s-dist"),
    ("o_r", "LOGGP_O_R_DIST", "--o-r-dist"),
];

impl Opts {
    pub fn from_args(a: &Args) -> Result<Opts, String> {
        let quick = a.quick;
        let np = match a.np.as_slice() {
            [] => 2,
            [n] => *n,
            _ => {
                return Err(format!(
                "--np {:?} is not accepted: expected one rank count (a list is for --collectives)",
                a.np.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ))
            }
        };
        let mut knobs = Vec::new();
        if a.knob.is_empty() {
            knobs = if quick {
                vec![KNOBS[1]]
            } else {
                KNOBS.to_vec()
            };
        }
        for k in &a.knob {
            match k {
                KnobArg::All => knobs.extend(KNOBS.iter().copied()),
                KnobArg::None => {}
                KnobArg::Name(k) => knobs.push(*k),
                KnobArg::Set(s) => {
                    return Err(format!(
                        "--knob \"{}\" is not accepted: expected a knob name (L, o_s, o_r, g_s, g_r, G, all or none; knob=value pairs are for --collectives)",
                        s.label()
                    ))
                }
            }
        }
        let reps = a.reps.unwrap_or(if quick { 40 } else { 100 });
        if reps < 5 {
            return Err(format!(
                "--reps \"{reps}\" is not accepted: expected a whole number from 5"
            ));
        }
        if a.hosts
            .iter()
            .any(|h| h.is_empty() || h.contains(char::is_whitespace))
        {
            return Err(format!(
                "--hosts \"{}\" is not accepted: expected host names separated by commas",
                a.hosts.join(",")
            ));
        }
        if let Some(f) = &a.hostfile {
            if !f.is_file() {
                return Err(format!(
                    "--hostfile \"{}\" is not accepted: no such file",
                    f.display()
                ));
            }
        }
        let mpi = a.target()?;
        let mut opts = Opts {
            mpi,
            np,
            place: kernel::placement(mpi, &a.hosts, a.hostfile.as_deref()),
            knobs,
            values: a.values.clone(),
            g_values: a.g_values.clone(),
            size: a.size.unwrap_or(8),
            out: a
                .out
                .clone()
                .or_else(|| a.reanalyse.clone())
                .unwrap_or_else(|| PathBuf::from("loggp-calibration")),
            quick,
            reps,
            fit_reps: a.fit_reps.unwrap_or(if quick { 7 } else { 15 }),
            baseline_runs: a.baseline_runs.unwrap_or(if quick { 2 } else { 3 }),
            timeout: a.timeout,
            reanalyse: a.reanalyse.clone(),
            dists: Vec::new(),
            seed: None,
        };
        for k in &opts.knobs {
            opts.requested(k)?;
        }
        let flags = [&a.l_dist, &a.o_s_dist, &a.o_r_dist];
        for (&(name, var, flag), given) in VARIED.iter().zip(flags) {
            let swept = opts.knobs.iter().any(|k| k.name == name);
            if let Some(d) = given {
                if !swept {
                    return Err(format!(
                        "{flag} \"{d}\" is not accepted: {name} is not swept (add --knob {name})"
                    ));
                }
                opts.dists.push((name, d.clone()));
            } else if let Ok(d) = std::env::var(var) {
                if swept && !d.trim().is_empty() {
                    args::knob(var)(&d).map_err(|e| format!("{var}={d:?} is not accepted: {e}"))?;
                    opts.dists.push((name, d));
                }
            }
        }
        opts.seed = match &a.seed {
            Some(s) => Some(s.clone()),
            None => match std::env::var("LOGGP_SEED") {
                Ok(s) if !opts.dists.is_empty() => Some(
                    args::knob("LOGGP_SEED")(&s)
                        .map_err(|e| format!("LOGGP_SEED={s:?} is not accepted: {e}"))?,
                ),
                _ => None,
            },
        };
        Ok(opts)
    }

    /// The sweep for `knob`: `--values` (`--g-values` for G), else the
    /// default (or quick) list.
    /// The distribution `knob` is swept with, as given.
    pub fn dist(&self, knob: &str) -> Option<&str> {
        self.dists
            .iter()
            .find(|(k, _)| *k == knob)
            .map(|(_, d)| d.as_str())
    }

    /// The variables of one run of `knob` at `value`: virtual time on (so
    /// that the row at zero is the emulated machine at zero knobs, as
    /// `loggp sweep`'s baseline, and not the pass-through; and so that a
    /// `LOGGP_VT` in the caller's environment cannot turn a sweep into
    /// one), the knob armed where `loggp sweep` arms it (`LOGGP_ARM`: its
    /// row at zero then runs the paths its other rows run), the knob, and
    /// its distribution and the seed when it is varied.
    pub fn vars(&self, knob: &Knob, value: &str) -> Vec<(String, String)> {
        let mut v = vec![("LOGGP_VT".to_string(), "on".to_string())];
        if crate::knobs::armed_when_swept(knob.name) != 0 {
            v.push(("LOGGP_ARM".to_string(), knob.name.to_string()));
        }
        if let Some(var) = knob_var(knob.name) {
            v.push((var.to_string(), value.to_string()));
        }
        if let Some(d) = self.dist(knob.name) {
            if let Some((_, var, _)) = VARIED.iter().find(|x| x.0 == knob.name) {
                v.push((var.to_string(), d.to_string()));
            }
            if let Some(s) = &self.seed {
                v.push(("LOGGP_SEED".into(), s.clone()));
            }
        }
        v
    }

    pub fn requested(&self, knob: &Knob) -> Result<Vec<Requested>, String> {
        let given = if knob.name == "G" {
            &self.g_values
        } else {
            &self.values
        };
        let list = given.as_deref().unwrap_or(if self.quick {
            knob.quick_values
        } else {
            knob.default_values
        });
        parse_values(knob, list)
    }
}

/// Parses a value list ([`units::split_list_with_units`]: a bare number
/// takes the unit of the next value that carries one).
fn parse_values(knob: &Knob, list: &str) -> Result<Vec<Requested>, String> {
    let flag = if knob.name == "G" {
        "--g-values"
    } else {
        "--values"
    };
    let texts = units::split_list_with_units(list)
        .map_err(|e| format!("{flag} {list:?} is not accepted: {e}"))?;
    let mut out = Vec::new();
    for (it, text) in list.split(',').map(str::trim).zip(texts) {
        let value =
            if knob.name == "G" {
                units::parse_g_ns_per_byte(&text).filter(|&g| g > 0.0).ok_or_else(|| {
                format!("{flag} {it:?} is not accepted for G: expected a bandwidth such as 512MB/s")
            })?
            } else {
                units::parse_time_ns(&text)
                    .map(|v| v as f64)
                    .ok_or_else(|| {
                        format!(
                            "{flag} {it:?} is not accepted for {}: expected a time such as 20us",
                            knob.name
                        )
                    })?
            };
        out.push(Requested { text, value });
    }
    if out.is_empty() {
        return Err(format!("--values gives no value for {}", knob.name));
    }
    Ok(out)
}

/// The baseline: several native runs.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub runs: Vec<Params>,
    pub seconds: f64,
    /// Disturbed attempts that were repeated: (run, how).
    pub repeated: Vec<(u32, Disturbance)>,
    /// A native run after each knob's sweep, in the order the sweeps ran:
    /// each knob's rows are compared with the native machine on either
    /// side of its sweep (`center_at`), not with one taken minutes
    /// earlier. Empty in a raw directory from before they were taken.
    pub between: Vec<(&'static str, Params)>,
    /// Per sweep, the round trip of its row at zero (through the shim, at
    /// the sweep's start): which of the native runs around it ran in the
    /// same phase of the machine (`center_at`). Set once a sweep's rows
    /// are measured, before they are made (`set_zero_rtt`).
    pub zero_rtt: Vec<(&'static str, f64)>,
}

/// A native run whose PRTT median exceeds this many times its 10th
/// percentile was disturbed by other processes (see `Raw::disturbance`).
pub const DISTURBED: f64 = 2.0;
/// A run whose delayed PRTT exceeds Hoefler's model of it from the run's
/// own o_s, d and g this many times was disturbed for a stretch (see
/// `Raw::model_excess`; quiet runs stay below 1.07).
pub const MODEL_OFF: f64 = 1.25;
/// A run whose median one-way time lies further than this factor from
/// half its round trip, either way, was disturbed during one of the two
/// phases (see `Raw::oneway_excess`; quiet runs stay within 0.8–1.4).
pub const ONEWAY_OFF: f64 = 2.0;

/// Whether a one-way time `x` times half the round trip is beyond
/// `ONEWAY_OFF` either way (NaN, not measured, is not).
fn oneway_beyond(x: f64) -> bool {
    !x.is_nan() && !(1.0 / ONEWAY_OFF..=ONEWAY_OFF).contains(&x)
}
/// Native runs whose round trip lies within this factor of a sweep's row
/// at zero ran in the same phase of the machine as that sweep
/// (`Baseline::center_at`): the shim's own cost at zero is a few tens of
/// ns on a round trip of 0.25 µs, the machine's slow phases 3–4× it.
pub const PHASE: f64 = 1.5;

/// How disturbed a run was: the median/p10 ratio of its PRTTs
/// (`Raw::disturbance`), its delayed PRTT against the model
/// (`Raw::model_excess`; NaN when not checked: a varied knob's draws make
/// the mean and the median differ) and its median one-way time against
/// half its round trip (`Raw::oneway_excess`; NaN where not measured).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Disturbance {
    pub median_p10: f64,
    pub model_excess: f64,
    pub oneway_excess: f64,
}

impl Disturbance {
    pub const UNKNOWN: Disturbance = Disturbance {
        median_p10: f64::NAN,
        model_excess: f64::NAN,
        oneway_excess: f64::NAN,
    };

    fn of(r: &kernel::Raw, varied: bool) -> Disturbance {
        Disturbance {
            median_p10: r.disturbance(),
            model_excess: if varied {
                f64::NAN
            } else {
                r.model_excess().unwrap_or(f64::NAN)
            },
            oneway_excess: r.oneway_excess().unwrap_or(f64::NAN),
        }
    }

    fn oneway_off(&self) -> bool {
        oneway_beyond(self.oneway_excess)
    }

    /// Beyond any threshold.
    pub fn disturbed(&self) -> bool {
        self.median_p10 > DISTURBED || self.model_excess > MODEL_OFF || self.oneway_off()
    }
}

impl std::fmt::Display for Disturbance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let by_model = self.model_excess > MODEL_OFF;
        if self.oneway_off() && self.median_p10 <= DISTURBED && !by_model {
            return write!(
                f,
                "median one-way time = {:.2}× half the round trip, outside 1/{ONEWAY_OFF}..{ONEWAY_OFF}",
                self.oneway_excess
            );
        }
        if self.median_p10 > DISTURBED || !by_model {
            write!(
                f,
                "median/p10 of PRTT = {:.1} > {DISTURBED}",
                self.median_p10
            )
        } else {
            write!(
                f,
                "PRTT(n,d,s) = {:.2}× its model from the run's own o_s, d and g > {MODEL_OFF}",
                self.model_excess
            )
        }
    }
}

/// How often a disturbed run is repeated before it is kept anyway.
pub const RETRIES: usize = 2;

/// Runs the kernel and repeats a disturbed run (see `Raw::disturbance`) up
/// to [`RETRIES`] times: a run during which other processes took a rank's
/// core for a stretch measures them, not the machine. This applies to runs
/// through the shim as well, because the machine is shared; jitter that the
/// shim itself causes does not go away on a repeat, so the kept run still
/// shows it, and the report lists every repeat (with the disturbed
/// attempts' raw output, `<label>-disturbed-K`). Returns the kept run and
/// the disturbance of each repeated attempt.
fn run_checked(
    kopts: &KernelOpts,
    shim: Option<&std::path::Path>,
    vars: &[(String, String)],
    extra: &[String],
    label: &str,
    raw: &mut Vec<(String, String)>,
) -> Result<(kernel::Raw, Vec<Disturbance>), String> {
    let mut disturbed = Vec::new();
    let varied = vars.iter().any(|(k, _)| k.ends_with("_DIST"));
    loop {
        let r = kernel::run(kopts, shim, vars, extra)?;
        let dist = Disturbance::of(&r, varied);
        if !dist.disturbed() || disturbed.len() == RETRIES {
            return Ok((r, disturbed));
        }
        disturbed.push(dist);
        eprintln!("calibrate: {label} disturbed ({dist}); repeating");
        raw.push((format!("{label}-disturbed-{}", disturbed.len()), r.text));
    }
}

/// A native run between sweeps (`native-after-<knob>`, `native-paced-<knob>`),
/// with `extra` kernel arguments: `run_checked`, its repeats said on stderr.
fn native_between(
    kopts: &KernelOpts,
    extra: &[String],
    label: &str,
    raw: &mut Vec<(String, String)>,
) -> Result<kernel::Raw, String> {
    let (r, disturbed) = run_checked(kopts, None, &[], extra, label, raw)?;
    if !disturbed.is_empty() {
        eprintln!(
            "calibrate: {label}: {} disturbed attempt(s) repeated",
            disturbed.len()
        );
    }
    Ok(r)
}

impl Baseline {
    fn values(&self, p: &str) -> Vec<f64> {
        self.runs.iter().map(|r| r.get(p)).collect()
    }

    /// The baseline value of a parameter: the median over the baseline
    /// runs (one disturbed run, common on a shared 2-core machine, must not
    /// move it).
    pub fn center(&self, p: &str) -> f64 {
        stats::median(&self.values(p)).unwrap_or(f64::NAN)
    }

    /// The native one-way time 0 → 1, the zero of a varied L's realised
    /// distribution: the least of the baseline runs' median one-way
    /// times. Other processes only ever lengthen a one-way time, so the
    /// least is the least disturbed; a run is kept after two disturbed
    /// repeats even if it is disturbed too, sometimes in both phases
    /// alike, which no check against its round trip sees (the cases
    /// seen: `calibrate/README.md`, and the unit test below).
    pub fn center_oneway(&self) -> f64 {
        self.runs
            .iter()
            .map(|r| r.oneway)
            .filter(|x| x.is_finite())
            .min_by(f64::total_cmp)
            .unwrap_or(f64::NAN)
    }

    /// Run-to-run spread: the robust σ `1.4826 · MAD` over the baseline
    /// runs (see `loggp_core::stats`); the sample std when the MAD is 0.
    pub fn spread(&self, p: &str) -> f64 {
        let v = self.values(p);
        let mad = stats::mad(&v).unwrap_or(0.0) * stats::MAD_TO_SIGMA;
        if mad > 0.0 {
            mad
        } else {
            stats::std_dev(&v).unwrap_or(f64::NAN)
        }
    }

    /// How far a parameter may move before it is flagged:
    /// `max(3·σ, 5 % of |baseline|, resolution)`, with σ from
    /// [`Baseline::spread`] and the resolution 10 ns (clock reads and spin
    /// overshoot are tens of ns; León's tables are at 0.01 µs) or
    /// 0.001 ns/B for G.
    pub fn tolerance(&self, p: &str) -> f64 {
        self.tolerance_around(p, self.center(p))
    }

    fn tolerance_around(&self, p: &str, center: f64) -> f64 {
        let res = if p == "G" { 1e-3 } else { 10.0 };
        (3.0 * self.spread(p)).max(0.05 * center.abs()).max(res)
    }

    /// The native value of `p` around the sweep of `knob`: the median of
    /// the native runs nearest it, in the order they ran (the one just
    /// before the sweep and the one just after it, and one further out on
    /// each side where there is one; the baseline's median stands for the
    /// runs before the first sweep), keeping only those in the sweep's
    /// phase where that is known: a round trip within a factor
    /// [`PHASE`] of the sweep's own row at zero (`zero_rtt`).
    ///
    /// A shared machine changes pace over a calibration: native round
    /// trips of 0.26 and 1.10 µs before and after one sweep of one report
    /// (session 15, MPICH), 0.24 and 0.76 µs in two reports of another
    /// session. Against a baseline taken once, at the start, every later
    /// row would show that change as drift. One native run in a uniformly
    /// slow stretch passes every disturbance check (L 2.23 µs against 0.2
    /// in one report of session 14): a mean of the two neighbours read
    /// −1.1 µs of "drift" into every row of two sweeps, and the median
    /// does not move for it. Where the pace changed right after a sweep,
    /// the runs after it are in another phase than the sweep itself
    /// (that MPICH report: its L sweep's rows read o_s −0.13 µs against
    /// them), and the sweep's row at zero tells them apart. The
    /// baseline's median where no native run followed the sweep.
    pub fn center_at(&self, p: &str, knob: &str) -> f64 {
        let Some(i) = self.between.iter().position(|(k, _)| *k == knob) else {
            return self.center(p);
        };
        // The natives in order, (value, round trip): 0 is the baseline,
        // k the run after sweep k − 1; sweep i lies between i and i + 1.
        let native = |k: usize| match k {
            0 => (self.center(p), self.center("RTT")),
            k => {
                let r = &self.between[k - 1].1;
                (r.get(p), r.rtt)
            }
        };
        let last = self.between.len();
        let window: Vec<(f64, f64)> = (i.saturating_sub(1)..=(i + 2).min(last))
            .map(native)
            .collect();
        let zero = self
            .zero_rtt
            .iter()
            .find(|(k, _)| *k == knob)
            .map(|&(_, rtt)| rtt)
            .filter(|rtt| rtt.is_finite() && *rtt > 0.0);
        let same_phase: Vec<f64> = match zero {
            Some(z) => window
                .iter()
                .filter(|(_, rtt)| *rtt <= z * PHASE && *rtt * PHASE >= z)
                .map(|&(v, _)| v)
                .collect(),
            None => Vec::new(),
        };
        let chosen = if same_phase.is_empty() {
            window.iter().map(|&(v, _)| v).collect()
        } else {
            same_phase
        };
        stats::median(&chosen).unwrap_or(f64::NAN)
    }

    /// Records the round trip of `knob`'s sweep at zero (`zero_rtt`) from
    /// its measured rows `(requested, params)`: the row requesting 0, if
    /// any.
    pub fn set_zero_rtt<'a>(
        &mut self,
        knob: &'static str,
        rows: impl IntoIterator<Item = (&'a Requested, &'a Params)>,
    ) {
        if let Some((_, prm)) = rows.into_iter().find(|(r, _)| r.value == 0.0) {
            self.zero_rtt.retain(|(k, _)| *k != knob);
            self.zero_rtt.push((knob, prm.rtt));
        }
    }

    /// `tolerance` around `center_at`: the spread is the baseline's
    /// (back-to-back runs), the 5 % of the local native value.
    pub fn tolerance_at(&self, p: &str, knob: &str) -> f64 {
        self.tolerance_around(p, self.center_at(p, knob))
    }
}

/// One row of a knob's table.
#[derive(Clone, Debug)]
pub struct Row {
    pub requested: Requested,
    pub params: Params,
    /// What the shim realised: measured − baseline (added knobs) or
    /// measured (floor knobs).
    pub realised: f64,
    pub err: Option<f64>,
    /// Floor knobs: the request does not exceed the native value, so
    /// nothing can be realised (León leaves those rows without %err).
    pub below_native: bool,
    /// Untouched parameters that moved beyond the baseline tolerance:
    /// `(name, delta)`.
    pub drift: Vec<(&'static str, f64)>,
    pub seconds: f64,
    /// Disturbance of attempts that were repeated.
    pub disturbed: Vec<Disturbance>,
    /// Disturbance of the kept run (`disturbed()`: kept anyway).
    pub disturbance: Disturbance,
    /// A varied knob: the realised per-message delays against the
    /// requested distribution.
    pub spread: Option<Spread>,
    /// Measured with virtual time on (`LOGGP_VT=on`, `# meta vt on` in its
    /// raw output). A row at zero without it (a raw directory from before)
    /// ran the pass-through.
    pub vt: bool,
}

/// The realised distribution of a varied knob at one requested value.
#[derive(Clone, Debug)]
pub struct Spread {
    /// The distribution as requested (`normal:5us`).
    pub dist: String,
    /// What was measured per message.
    pub quantity: &'static str,
    /// What each sample is measured from, as the report says it.
    pub zero: &'static str,
    /// Added delay of each message, ns: the kernel's sample less that
    /// zero.
    pub samples: Vec<f64>,
    pub measured: Shape,
    /// What the distribution implies around the requested value,
    /// truncated at zero.
    pub implied: Shape,
}

/// Which kernel rows carry a varied knob's per-message delay, the baseline
/// parameter they are measured against, and what they are.
fn spread_source(knob: &str) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match knob {
        "L" => ("oneway", "oneway", "one-way time 0 → 1"),
        "o_s" => ("gs_burst", "o_s_call", "time in one MPI_Send"),
        "o_r" => ("or_call", "o_r", "time in MPI_Recv of an arrived message"),
        _ => return None,
    })
}

/// The realised distribution of `knob` in one run under `dist` at
/// `value` ns; `None` when the knob does not vary or the kernel's output
/// lacks the rows (an older kernel).
pub fn spread_of(
    knob: &str,
    dist: &str,
    raw: &kernel::Raw,
    base: &Baseline,
    value: f64,
) -> Result<Option<Spread>, String> {
    let Some((kind, base_param, quantity)) = spread_source(knob) else {
        return Ok(None);
    };
    let d = Dist::parse(dist, |p| {
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"))
    })
    .map_err(|e| format!("{knob} distribution {dist:?}: {e}"))?;
    let Ok(size) = raw.meta_u64("size") else {
        return Ok(None);
    };
    let Ok(xs) = raw.get(kind, 1, size, false) else {
        return Ok(None);
    };
    let (zero, from) = if base_param == "oneway" {
        (
            base.center_oneway(),
            "the least of the baseline runs' median one-way times",
        )
    } else {
        (base.center(base_param), "the baseline's median")
    };
    if !zero.is_finite() {
        return Ok(None);
    }
    let samples: Vec<f64> = xs.iter().map(|x| x - zero).collect();
    let Some(measured) = Shape::of_sample(&samples) else {
        return Ok(None);
    };
    Ok(Some(Spread {
        dist: dist.to_string(),
        quantity,
        zero: from,
        samples,
        measured,
        implied: Shape::implied(&d, value),
    }))
}

/// One knob's sweep.
#[derive(Clone, Debug)]
pub struct KnobResult {
    pub knob: Knob,
    pub rows: Vec<Row>,
    pub seconds: f64,
    /// The native machine at the largest d of the sweep's runs (None in a
    /// raw directory from before it was measured).
    pub paced: Option<Paced>,
}

/// A native run with the kernel's d raised to the largest d a sweep's
/// runs used (`loggp-prtt --min-d`): a knob that lengthens the round trip
/// or the gap lengthens d, and eq. 6's o_s grows with d on the native
/// machine too (calibrate/README.md). Against the native runs around the
/// sweep it shows how much of o_s's (and so L's) drift the kernel's own
/// pacing makes.
#[derive(Clone, Debug)]
pub struct Paced {
    pub d_ns: f64,
    pub params: Params,
}

/// The largest d of a sweep's kernel runs (`# meta d_ns`).
fn largest_d<'a>(runs: impl Iterator<Item = &'a kernel::Raw>) -> Option<f64> {
    runs.filter_map(|r| r.meta.get("d_ns").and_then(|v| v.parse::<f64>().ok()))
        .filter(|d| d.is_finite() && *d > 0.0)
        .reduce(f64::max)
}

impl KnobResult {
    pub fn errors(&self) -> Vec<f64> {
        self.rows.iter().filter_map(|r| r.err).collect()
    }
}

/// Builds a row from a measured run.
pub fn make_row(
    knob: &Knob,
    requested: Requested,
    params: Params,
    base: &Baseline,
    seconds: f64,
) -> Row {
    let measured = params.get(knob.name);
    let base_v = base.center_at(knob.name, knob.name);
    let (realised, below_native) = if knob.floor {
        (
            measured,
            requested.value <= base_v + base.tolerance_at(knob.name, knob.name),
        )
    } else {
        (measured - base_v, false)
    };
    let err = if below_native {
        None
    } else {
        stats::percent_error(requested.value, realised)
    };
    let drift = PARAMS
        .iter()
        .filter(|&&p| p != knob.name && !knob.coupled.contains(&p))
        .filter_map(|&p| {
            let d = params.get(p) - base.center_at(p, knob.name);
            (d.abs() > base.tolerance_at(p, knob.name)).then_some((p, d))
        })
        .collect();
    Row {
        requested,
        params,
        realised,
        err,
        below_native,
        drift,
        seconds,
        disturbed: Vec::new(),
        disturbance: Disturbance::UNKNOWN,
        spread: None,
        vt: false,
    }
}

/// Everything the report needs.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub opts: Opts,
    pub library: String,
    /// The hosts of ranks 0 and 1 (the measured pair), as the kernel saw
    /// them.
    pub pair: Option<(String, String)>,
    pub baseline: Baseline,
    pub knobs: Vec<KnobResult>,
    pub seconds: f64,
    pub raw: Vec<(String, String)>,
    /// Built from saved raw output: the times are not measured again.
    pub reanalysed: bool,
}

/// Rebuilds a calibration from `dir/raw/*.txt` (named `baseline-N` and
/// `<knob>-<value>`, `/` written as `_`), taking MPI, ranks, size and
/// repetitions from the kernel's own header.
fn reanalyse(mut opts: Opts, dir: &std::path::Path) -> Result<Calibration, String> {
    let raw_dir = dir.join("raw");
    let mut names: Vec<String> = std::fs::read_dir(&raw_dir)
        .map_err(|e| format!("cannot read {}: {e}", raw_dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter_map(|n| n.strip_suffix(".txt").map(String::from))
        .collect();
    names.sort();
    let read = |n: &str| -> Result<kernel::Raw, String> {
        let p = raw_dir.join(format!("{n}.txt"));
        let t =
            std::fs::read_to_string(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        kernel::Raw::parse(&t).map_err(|e| format!("{}: {e}", p.display()))
    };
    let mut runs = Vec::new();
    let mut raw = Vec::new();
    let mut library = String::new();
    let mut pair = None;
    // baseline-N only: disturbed attempts (baseline-N-disturbed-K) were
    // replaced when measured
    let is_run = |n: &str| {
        n.strip_prefix("baseline-")
            .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()))
    };
    for n in names.iter().filter(|n| is_run(n)) {
        let r = read(n)?;
        if library.is_empty() {
            library.clone_from(&r.library);
            pair = r.pair();
            let meta = |k: &str| r.meta.get(k).and_then(|v| v.parse::<u64>().ok());
            opts.np = meta("np")
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(opts.np);
            opts.size = meta("size").unwrap_or(opts.size);
            opts.reps = meta("reps")
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(opts.reps);
            opts.fit_reps = meta("fit_reps")
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(opts.fit_reps);
            opts.mpi = launch::for_library(&library);
        }
        runs.push(Params::from_raw(&r)?);
        raw.push((n.clone(), r.text));
    }
    if runs.is_empty() {
        return Err(format!("{} holds no baseline-N.txt", raw_dir.display()));
    }
    opts.baseline_runs = u32::try_from(runs.len()).unwrap_or(u32::MAX);
    // The native runs after each sweep, in the order they ran (`seq`).
    let mut between = Vec::new();
    for knob in KNOBS {
        let n = format!("native-after-{}", knob.name);
        if names.contains(&n) {
            let r = read(&n)?;
            let seq = r.meta.get("seq").and_then(|v| v.parse::<u64>().ok());
            between.push((seq.unwrap_or(u64::MAX), knob.name, Params::from_raw(&r)?));
            raw.push((n, r.text));
        }
    }
    between.sort_by_key(|b| b.0);
    let mut baseline = Baseline {
        runs,
        seconds: f64::NAN,
        repeated: Vec::new(),
        between: between.into_iter().map(|(_, k, p)| (k, p)).collect(),
        zero_rtt: Vec::new(),
    };
    // Every sweep's runs first: its row at zero tells which native runs
    // share its phase (`Baseline::center_at`).
    let mut parsed = Vec::new();
    for knob in KNOBS {
        let prefix = format!("{}-", knob.name);
        let mut runs = Vec::new();
        let paced_name = format!("native-paced-{}", knob.name);
        let paced = if names.contains(&paced_name) {
            let r = read(&paced_name)?;
            let d = r.meta.get("min_d_ns").and_then(|v| v.parse::<f64>().ok());
            let p = Params::from_raw(&r)?;
            raw.push((paced_name, r.text));
            d.map(|d_ns| Paced { d_ns, params: p })
        } else {
            None
        };
        for n in names.iter().filter(|n| n.starts_with(&prefix)) {
            let text = n[prefix.len()..].replace('_', "/");
            let Ok(mut req) = parse_values(knob, &text) else {
                continue;
            };
            let r = read(n)?;
            let params = Params::from_raw(&r)?;
            runs.push((n.clone(), req.remove(0), params, r));
        }
        baseline.set_zero_rtt(knob.name, runs.iter().map(|(_, q, prm, _)| (q, prm)));
        parsed.push((knob, runs, paced));
    }
    let mut knobs = Vec::new();
    for (knob, runs, paced) in parsed {
        let mut rows = Vec::new();
        for (n, req, params, r) in runs {
            let value = req.value;
            let mut row = make_row(knob, req, params, &baseline, f64::NAN);
            // The kept run's disturbance, as the measurement judged it
            // (a row kept disturbed is marked in its table and summary).
            row.disturbance = Disturbance::of(&r, r.meta.contains_key("dist"));
            row.vt = r.meta.get("vt").is_some_and(|v| v == "on");
            if let Some(d) = r.meta.get("dist") {
                row.spread = spread_of(knob.name, d, &r, &baseline, value)?;
                if !opts.dists.iter().any(|(k, _)| *k == knob.name) {
                    opts.dists.push((knob.name, d.clone()));
                }
            }
            raw.push((n, r.text));
            rows.push(row);
        }
        if !rows.is_empty() {
            rows.sort_by(|a, b| a.requested.value.total_cmp(&b.requested.value));
            if knob.name == "G" {
                rows.reverse(); // León's order: slowest bandwidth first
            }
            knobs.push(KnobResult {
                knob: *knob,
                rows,
                seconds: f64::NAN,
                paced,
            });
        }
    }
    opts.knobs = knobs.iter().map(|k| k.knob).collect();
    Ok(Calibration {
        opts,
        library,
        pair,
        baseline,
        knobs,
        seconds: f64::NAN,
        raw,
        reanalysed: true,
    })
}

fn progress(done: usize, total: usize, what: &str, secs: f64) {
    let width = 24;
    let filled = (done * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    eprintln!(
        "calibrate: [{}{}] {done:>3}/{total} {what} ({secs:.1}s)",
        "#".repeat(filled),
        ".".repeat(width - filled)
    );
}

/// `raw`: the arguments as given, for the reproduction line of a report.
pub fn main(args: Args, raw: Vec<String>) -> Result<ExitCode, String> {
    if args.collectives {
        return coll::main(coll::Opts::from_args(&args, raw)?);
    }
    let opts = Opts::from_args(&args)?;
    if let Some(dir) = opts.reanalyse.clone() {
        let cal = reanalyse(opts, &dir)?;
        let text = report::markdown(&cal);
        print!("{text}");
        report::write_all(&cal, &text)?;
        eprintln!(
            "calibrate: re-analysed {} into {}",
            dir.display(),
            cal.opts.out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Fail before measuring anything when a part is missing.
    crate::job::ensure_writable(&opts.out)?;
    kernel::kernel_path(opts.mpi)?;
    let shim = if opts.knobs.is_empty() {
        None
    } else {
        Some(launch::shim_path(opts.mpi)?)
    };
    let kopts = KernelOpts {
        mpi: opts.mpi,
        np: opts.np,
        place: opts.place.clone(),
        size: opts.size,
        reps: opts.reps,
        fit_reps: opts.fit_reps,
        timeout: opts.timeout,
    };
    let mut sweeps = Vec::new();
    for k in &opts.knobs {
        sweeps.push((*k, opts.requested(k)?));
    }
    // A sweep's runs, then two native runs (after it, and at its largest d).
    let total = opts.baseline_runs as usize + sweeps.iter().map(|s| s.1.len() + 2).sum::<usize>();
    let t0 = Instant::now();
    let mut done = 0;
    let mut raw = Vec::new();
    let mut library = String::new();
    let mut pair = None;

    let tb = Instant::now();
    let mut runs = Vec::new();
    let mut repeated = Vec::new();
    for i in 0..opts.baseline_runs {
        let t = Instant::now();
        let label = format!("baseline-{}", i + 1);
        let (r, disturbed) = run_checked(&kopts, None, &[], &[], &label, &mut raw)?;
        repeated.extend(disturbed.iter().map(|&d| (i + 1, d)));
        library.clone_from(&r.library);
        pair = pair.or_else(|| r.pair());
        runs.push(Params::from_raw(&r)?);
        raw.push((format!("baseline-{}", i + 1), r.text));
        done += 1;
        progress(
            done,
            total,
            &format!("baseline {} (native)", i + 1),
            t.elapsed().as_secs_f64(),
        );
    }
    let mut baseline = Baseline {
        runs,
        seconds: tb.elapsed().as_secs_f64(),
        repeated,
        between: Vec::new(),
        zero_rtt: Vec::new(),
    };
    eprintln!("calibrate: baseline took {:.1}s", baseline.seconds);

    let mut knobs = Vec::new();
    let mut pending = Vec::new();
    for (knob, values) in sweeps {
        let tk = Instant::now();
        let dist = opts.dist(knob.name).map(String::from);
        let mut measured = Vec::new();
        let mut d_max: Option<f64> = None;
        for req in values {
            let t = Instant::now();
            let vars = opts.vars(&knob, &req.text);
            let label = format!("{}-{}", knob.name, req.text.replace('/', "_"));
            let (mut r, disturbed) =
                run_checked(&kopts, shim.as_deref(), &vars, &[], &label, &mut raw)?;
            let params = Params::from_raw(&r)?;
            let still = Disturbance::of(&r, vars.iter().any(|(k, _)| k.ends_with("_DIST")));
            let spread = match &dist {
                Some(d) => {
                    // the raw output says which distribution it ran under
                    // (for --reanalyse)
                    r.text = format!("# meta dist {d}\n{}", r.text);
                    spread_of(knob.name, d, &r, &baseline, req.value)?
                }
                None => None,
            };
            if let Some(d) = largest_d(std::iter::once(&r)) {
                d_max = Some(d_max.map_or(d, |m: f64| m.max(d)));
            }
            r.text = format!("# meta vt on\n{}", r.text);
            raw.push((label, r.text));
            done += 1;
            let secs = t.elapsed().as_secs_f64();
            progress(done, total, &format!("{}={}", knob.name, req.text), secs);
            measured.push((req, params, secs, disturbed, still, spread));
        }
        // The native machine right after this sweep (see
        // `Baseline::center_at`); the rows are made once it is in.
        let t = Instant::now();
        let label = format!("native-after-{}", knob.name);
        let mut r = native_between(&kopts, &[], &label, &mut raw)?;
        baseline.between.push((knob.name, Params::from_raw(&r)?));
        // Where it falls in the order of the sweeps, for --reanalyse.
        r.text = format!("# meta seq {}\n{}", baseline.between.len(), r.text);
        raw.push((label, r.text));
        done += 1;
        progress(
            done,
            total,
            &format!("native after {}", knob.name),
            t.elapsed().as_secs_f64(),
        );
        // The native machine at the sweep's largest d (`Paced`).
        let t = Instant::now();
        let mut paced = None;
        if let Some(d) = d_max {
            let label = format!("native-paced-{}", knob.name);
            let extra = ["--min-d".to_string(), format!("{d:.0}")];
            let r = native_between(&kopts, &extra, &label, &mut raw)?;
            paced = Some(Paced {
                d_ns: d,
                params: Params::from_raw(&r)?,
            });
            raw.push((label, r.text));
        }
        done += 1;
        progress(
            done,
            total,
            &format!("native at {}'s largest d", knob.name),
            t.elapsed().as_secs_f64(),
        );
        let seconds = tk.elapsed().as_secs_f64();
        eprintln!("calibrate: {} sweep took {seconds:.1}s", knob.name);
        pending.push((knob, measured, seconds, paced));
    }
    // The rows are made once every native run is in: each sweep's are
    // compared with the native runs on either side of it, up to the one
    // after the next sweep (`Baseline::center_at`), as `--reanalyse` does.
    for (knob, measured, _, _) in &pending {
        baseline.set_zero_rtt(knob.name, measured.iter().map(|m| (&m.0, &m.1)));
    }
    for (knob, measured, seconds, paced) in pending {
        let mut rows = Vec::new();
        for (req, params, secs, disturbed, still, spread) in measured {
            let mut row = make_row(&knob, req, params, &baseline, secs);
            row.disturbed = disturbed;
            row.disturbance = still;
            row.spread = spread;
            row.vt = true;
            rows.push(row);
        }
        knobs.push(KnobResult {
            knob,
            rows,
            seconds,
            paced,
        });
    }
    let cal = Calibration {
        opts,
        library,
        pair,
        baseline,
        knobs,
        seconds: t0.elapsed().as_secs_f64(),
        raw,
        reanalysed: false,
    };
    let text = report::markdown(&cal);
    print!("{text}");
    report::write_all(&cal, &text)?;
    eprintln!(
        "calibrate: wrote {} (total {:.1}s)",
        cal.opts.out.display(),
        cal.seconds
    );
    Ok(ExitCode::SUCCESS)
}

/// The largest drift flag of one knob's sweep.
pub struct Worst<'a> {
    pub param: &'static str,
    pub delta: f64,
    /// The row's requested value, as written.
    pub at: &'a str,
    /// |delta| in tolerances around the sweep's own native value
    /// (`Baseline::tolerance_at`, as the flag was judged).
    pub times: f64,
    /// The row's kept run was disturbed (kept after its repeats).
    pub disturbed: bool,
}

/// What the summary says of a knob's drift flags.
pub struct DriftSummary<'a> {
    /// The largest, in tolerances; a flag of a run kept disturbed only
    /// when no quiet row has one (one slow stretch, 181× tolerance in one
    /// report of session 15, would otherwise stand for the whole sweep).
    pub worst: Option<Worst<'a>>,
    /// Flags beyond 3× tolerance: issue 12's bound for the machinery's own
    /// drift under a knob.
    pub beyond_3x: usize,
    /// Of those, the row at zero's: the machinery alone (virtual time on,
    /// every knob zero). None without such a row (no 0 requested, or a
    /// raw directory whose row at zero ran the pass-through).
    pub at_zero: Option<usize>,
    /// The other rows' untouched parameters beyond 3× tolerance against
    /// the row at zero instead of the native machine: what raising the
    /// knob moves beyond the machinery's own cost, which a sweep from the
    /// emulated machine at zero (`loggp sweep`) does not see.
    pub from_zero: Option<usize>,
}

pub fn drift_summary<'a>(k: &'a KnobResult, b: &Baseline) -> DriftSummary<'a> {
    let mut beyond_3x = 0;
    let mut worst: Option<Worst> = None;
    for r in &k.rows {
        let disturbed = r.disturbance.disturbed();
        for &(p, d) in &r.drift {
            let w = Worst {
                param: p,
                delta: d,
                at: r.requested.text.as_str(),
                times: d.abs() / b.tolerance_at(p, k.knob.name),
                disturbed,
            };
            if w.times > 3.0 {
                beyond_3x += 1;
            }
            // Quiet before disturbed, then the larger.
            let better = worst
                .as_ref()
                .is_none_or(|c| (c.disturbed, w.times) > (w.disturbed, c.times));
            if better {
                worst = Some(w);
            }
        }
    }
    let zero = k.rows.iter().find(|r| r.requested.value == 0.0 && r.vt);
    let at_zero = zero.map(|z| {
        z.drift
            .iter()
            .filter(|&&(p, d)| d.abs() > 3.0 * b.tolerance_at(p, k.knob.name))
            .count()
    });
    let from_zero = zero.map(|z| {
        let untouched: Vec<&str> = PARAMS
            .iter()
            .copied()
            .filter(|&p| p != k.knob.name && !k.knob.coupled.contains(&p))
            .collect();
        k.rows
            .iter()
            .filter(|r| r.requested.value != 0.0)
            .map(|r| {
                untouched
                    .iter()
                    .filter(|&&p| {
                        let d = r.params.get(p) - z.params.get(p);
                        d.abs() > 3.0 * b.tolerance_at(p, k.knob.name)
                    })
                    .count()
            })
            .sum()
    });
    DriftSummary {
        worst,
        beyond_3x,
        at_zero,
        from_zero,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Opts, String> {
        Opts::from_args(&parse_args(line)?)
    }

    fn params(l: f64, o_s: f64, o_r: f64, g_s: f64) -> Params {
        Params {
            l,
            o_s,
            o_r,
            g: g_s,
            g_s,
            g_r: 60.0,
            big_g: 0.1,
            big_g_lsq: 0.1,
            g_range: (1024, 1 << 20),
            g_method: "eq. 7",
            rtt: 2.0 * (l + o_s + o_r),
            o_s_call: o_s,
            oneway: f64::NAN,
            gap_method: "test",
            outliers: 0,
            preempted: 0,
            repetitions: 0,
            fit: Vec::new(),
            ranges: Vec::new(),
        }
    }

    fn base() -> Baseline {
        Baseline {
            runs: vec![
                params(200.0, 100.0, 120.0, 90.0),
                params(210.0, 104.0, 118.0, 92.0),
                params(190.0, 96.0, 500.0, 94.0), // o_r disturbed in one run
            ],
            seconds: 1.0,
            repeated: Vec::new(),
            between: Vec::new(),
            zero_rtt: Vec::new(),
        }
    }

    #[test]
    fn the_one_way_zero_is_the_least_disturbed_baseline() {
        // One CI run: rank 1 descheduled in two baselines' one-way phase.
        let mut b = base();
        for (r, ow) in b.runs.iter_mut().zip([16529.0, 436.0, 14756.0]) {
            r.rtt = 770.0;
            r.oneway = ow;
        }
        assert_eq!(b.center("oneway"), 14756.0);
        assert_eq!(b.center_oneway(), 436.0);
        // A later CI rehearsal: two baselines slowed in both phases, so
        // that their one-way times looked like half their round trips.
        for (r, (rtt, ow)) in
            b.runs
                .iter_mut()
                .zip([(9469.5, 7386.5), (17195.5, 5894.5), (6104.0, 420.0)])
        {
            r.rtt = rtt;
            r.oneway = ow;
        }
        assert_eq!(b.center_oneway(), 420.0);
        // A run without one-way rows is passed over.
        b.runs[2].oneway = f64::NAN;
        assert_eq!(b.center_oneway(), 5894.5);
        // A kernel without one-way rows: NaN, as before.
        assert!(base().center_oneway().is_nan());
    }

    #[test]
    fn rows_are_compared_with_the_native_runs_around_their_sweep() {
        let mut b = base();
        // The machine slowed after the baseline (L 200): 220, 240 and 260
        // after the sweeps of o_s, o_r and g_r, and one native run in a
        // slow stretch (4000) after g_s's.
        b.between = vec![
            ("o_s", params(220.0, 100.0, 120.0, 92.0)),
            ("o_r", params(240.0, 100.0, 120.0, 92.0)),
            ("g_s", params(4000.0, 100.0, 120.0, 92.0)),
            ("g_r", params(260.0, 100.0, 120.0, 92.0)),
        ];
        // First sweep: median of the baseline and the two runs after it.
        assert_eq!(b.center_at("L", "o_s"), 220.0);
        // Middle sweeps: median of four; the slow run does not move it
        // (a mean of the two neighbours would give 2120 for g_s).
        assert_eq!(b.center_at("L", "o_r"), 230.0);
        assert_eq!(b.center_at("L", "g_s"), 250.0);
        // Last sweep: the two before it and the one after it.
        assert_eq!(b.center_at("L", "g_r"), 260.0);
        // A knob with no run after its sweep: the baseline's median.
        assert_eq!(b.center_at("L", "G"), b.center("L"));
        // One native run after the only sweep: the mean of it and the
        // baseline (nothing to outvote).
        let mut one = base();
        one.between = vec![("o_r", params(300.0, 100.0, 120.0, 92.0))];
        assert_eq!(one.center_at("L", "o_r"), 250.0);
        // 5 % of the local value; the spread is the baseline's.
        assert_eq!(b.tolerance_at("L", "o_r"), (3.0 * b.spread("L")).max(11.5));
        // L at 262 in o_r's sweep is not drift; against the baseline of
        // the start (200, tolerance 10..) it would be.
        let o_r = KNOBS.iter().find(|k| k.name == "o_r").unwrap();
        let m = params(262.0, 100.0, 120.0, 92.0);
        let r = make_row(o_r, req("0us", 0.0), m.clone(), &b, 1.0);
        assert!(!r.drift.iter().any(|(p, _)| *p == "L"), "{:?}", r.drift);
        let r = make_row(o_r, req("0us", 0.0), m, &base(), 1.0);
        assert!(r.drift.iter().any(|(p, _)| *p == "L"), "{:?}", r.drift);
        // L at 250 in g_s's sweep, next to the slow native run, is not
        // drift either.
        let g_s = KNOBS.iter().find(|k| k.name == "g_s").unwrap();
        let r = make_row(
            g_s,
            req("0us", 0.0),
            params(250.0, 100.0, 120.0, 92.0),
            &b,
            1.0,
        );
        assert!(!r.drift.iter().any(|(p, _)| *p == "L"), "{:?}", r.drift);
    }

    fn req(text: &str, value: f64) -> Requested {
        Requested {
            text: text.into(),
            value,
        }
    }

    #[test]
    fn natives_in_another_phase_than_the_sweep_are_left_out() {
        // The machine slowed right after the first sweep (a native round
        // trip of 1100 instead of 250) and stayed slow.
        let with_rtt = |l: f64, o_s: f64, rtt: f64| Params {
            rtt,
            ..params(l, o_s, 120.0, 92.0)
        };
        let mut b = base();
        for r in &mut b.runs {
            r.rtt = 250.0;
        }
        b.between = vec![
            ("L", with_rtt(190.0, 320.0, 1100.0)),
            ("o_s", with_rtt(190.0, 316.0, 1090.0)),
            ("o_r", with_rtt(194.0, 317.0, 1100.0)),
        ];
        // Unknown phase: the median of baseline and the two runs after.
        assert_eq!(b.center_at("o_s", "L"), 316.0);
        // L's row at zero ran fast (260): only the baseline is its phase.
        let zero = [(req("0us", 0.0), with_rtt(200.0, 100.0, 260.0))];
        b.set_zero_rtt("L", zero.iter().map(|(q, p)| (q, p)));
        assert_eq!(b.center_at("o_s", "L"), b.center("o_s"));
        // o_s's sweep ran slow: the baseline is left out of its window.
        let zero = [
            (req("20us", 20e3), with_rtt(200.0, 20e3, 41e3)),
            (req("0us", 0.0), with_rtt(200.0, 330.0, 1120.0)),
        ];
        b.set_zero_rtt("o_s", zero.iter().map(|(q, p)| (q, p)));
        // (the runs after L, o_s and o_r: 320, 316, 317).
        assert_eq!(b.center_at("o_s", "o_s"), 317.0);
        // A row at zero in no native run's phase: all of the window.
        let (q, p) = (req("0us", 0.0), with_rtt(0.0, 0.0, 9000.0));
        b.set_zero_rtt("o_r", [(&q, &p)]);
        // (the window of the last sweep: the runs after L, o_s and o_r).
        assert_eq!(b.center_at("o_s", "o_r"), 317.0);
    }

    #[test]
    fn the_summary_names_a_quiet_rows_drift_first_and_counts_beyond_3x() {
        // Baseline L 200, tolerance 3σ = 44.5 ns (spread of 200, 210, 190).
        let b = base();
        let o_r = *KNOBS.iter().find(|k| k.name == "o_r").unwrap();
        // A quiet row with L +100 (2.2×) and a disturbed one with L +1800
        // (40×, one slow stretch kept after its repeats).
        let quiet = make_row(
            &o_r,
            req("20us", 20e3),
            params(300.0, 100.0, 20120.0, 92.0),
            &b,
            1.0,
        );
        let mut slow = make_row(
            &o_r,
            req("40us", 40e3),
            params(2000.0, 100.0, 40120.0, 92.0),
            &b,
            1.0,
        );
        slow.disturbance = Disturbance {
            median_p10: 3.0,
            model_excess: f64::NAN,
            oneway_excess: f64::NAN,
        };
        assert!(
            quiet.drift.iter().any(|(p, _)| *p == "L"),
            "{:?}",
            quiet.drift
        );
        assert!(
            slow.drift.iter().any(|(p, _)| *p == "L"),
            "{:?}",
            slow.drift
        );
        let k = KnobResult {
            knob: o_r,
            rows: vec![slow.clone(), quiet],
            seconds: 1.0,
            paced: None,
        };
        let d = drift_summary(&k, &b);
        let w = d.worst.unwrap();
        assert_eq!((w.param, w.at, w.disturbed), ("L", "20us", false));
        assert!((w.times - 100.0 / b.tolerance_at("L", "o_r")).abs() < 1e-9);
        assert_eq!(d.beyond_3x, 1);
        // With no quiet row drifting, the disturbed one is named, marked.
        let k = KnobResult {
            knob: o_r,
            rows: vec![slow],
            seconds: 1.0,
            paced: None,
        };
        let w = drift_summary(&k, &b).worst.unwrap();
        assert_eq!((w.param, w.at, w.disturbed), ("L", "40us", true));
    }

    #[test]
    fn the_summary_tells_the_machinery_at_zero_from_what_the_knob_moves() {
        // Baseline L 200, tolerance 44.5 ns. The row at zero (virtual
        // time on) has L +150 (3.4×): the machinery's own. At 20us L is
        // +180 against native (4×) but +30 against the row at zero; at
        // 40us +350 and +200 (4.5×).
        let b = base();
        let o_r = *KNOBS.iter().find(|k| k.name == "o_r").unwrap();
        let row = |text: &str, v: f64, l: f64, vt: bool| {
            let mut r = make_row(
                &o_r,
                req(text, v),
                params(l, 100.0, v + 120.0, 92.0),
                &b,
                1.0,
            );
            r.vt = vt;
            r
        };
        let k = KnobResult {
            knob: o_r,
            rows: vec![
                row("0", 0.0, 350.0, true),
                row("20us", 20e3, 380.0, true),
                row("40us", 40e3, 550.0, true),
            ],
            seconds: 1.0,
            paced: None,
        };
        let d = drift_summary(&k, &b);
        assert_eq!(d.beyond_3x, 3);
        assert_eq!(d.at_zero, Some(1));
        assert_eq!(d.from_zero, Some(1));
        // A row at zero that ran the pass-through (a raw directory from
        // before) is no measure of the machinery: n/a.
        let k = KnobResult {
            knob: o_r,
            rows: vec![row("0", 0.0, 200.0, false), row("20us", 20e3, 380.0, true)],
            seconds: 1.0,
            paced: None,
        };
        let d = drift_summary(&k, &b);
        assert_eq!((d.at_zero, d.from_zero), (None, None));
        // No row at zero requested: n/a too.
        let k = KnobResult {
            knob: o_r,
            rows: vec![row("20us", 20e3, 380.0, true)],
            seconds: 1.0,
            paced: None,
        };
        assert_eq!(drift_summary(&k, &b).from_zero, None);
    }

    #[test]
    fn the_paced_native_run_takes_the_sweeps_largest_d_and_says_what_it_moves() {
        let raw = |meta: &str| kernel::Raw::parse(&format!("{meta}prtt 1 0 8 0 300 0\n")).unwrap();
        let runs = [
            raw("# meta d_ns 900\n"),
            raw("# meta d_ns 40100\n"),
            raw(""),
            raw("# meta d_ns 12000\n"),
        ];
        assert_eq!(largest_d(runs.iter()), Some(40100.0));
        assert_eq!(largest_d(runs[2..3].iter()), None);
        // Around the sweep: L 200, o_s 100 (the baseline's medians). At
        // the largest d the native o_s reads 125 and L 190.
        let b = base();
        let l = *KNOBS.iter().find(|k| k.name == "L").unwrap();
        let mut k = KnobResult {
            knob: l,
            rows: Vec::new(),
            seconds: 1.0,
            paced: None,
        };
        assert_eq!(report::paced_line(&k, &b), None);
        k.paced = Some(Paced {
            d_ns: 40100.0,
            params: params(190.0, 125.0, 120.0, 92.0),
        });
        let line = report::paced_line(&k, &b).unwrap();
        assert!(line.contains("(40.1 µs"), "{line}");
        // L is the knob: only o_s is said, +0.025 µs.
        assert!(line.contains("o_s 0.125 against 0.100 (+0.025)"), "{line}");
        assert!(!line.contains("L 0.190"), "{line}");
        k.knob = *KNOBS.iter().find(|k| k.name == "o_r").unwrap();
        let line = report::paced_line(&k, &b).unwrap();
        assert!(line.contains("L 0.190 against 0.200 (-0.010)"), "{line}");
    }

    #[test]
    fn either_measure_of_disturbance_repeats_a_run() {
        let d = |median_p10, model_excess| Disturbance {
            median_p10,
            model_excess,
            oneway_excess: 1.0,
        };
        assert!(!d(1.3, 1.05).disturbed());
        assert!(d(2.5, 1.0).disturbed());
        assert!(d(1.1, 1.96).disturbed());
        assert!(d(1.1, 1.96).to_string().contains("1.96× its model"));
        assert!(d(2.5, 1.0).to_string().contains("median/p10 of PRTT = 2.5"));
        // not checked (a varied knob): only the spread decides
        assert!(!d(1.3, f64::NAN).disturbed());
        // a one-way phase slowed throughout, PRTT quiet (a baseline at
        // 15.9 us one-way, 0.75 us round trip), or sped past its half
        let ow = |x| Disturbance {
            oneway_excess: x,
            ..d(1.3, 1.05)
        };
        assert!(ow(42.4).disturbed() && ow(0.3).disturbed());
        assert!(ow(42.4).to_string().contains("42.40× half the round trip"));
        assert!(!ow(1.4).disturbed() && !ow(0.8).disturbed() && !ow(f64::NAN).disturbed());
    }

    #[test]
    fn baseline_is_robust_to_one_disturbed_run() {
        let b = base();
        assert_eq!(b.center("o_r"), 120.0);
        // MAD of (120, 118, 500) about 120 is 2 -> σ = 2.9652
        assert!((b.spread("o_r") - 2.0 * stats::MAD_TO_SIGMA).abs() < 1e-9);
        // max(3σ = 8.9, 5 % of 120 = 6, resolution 10 ns) = 10 ns
        assert_eq!(b.tolerance("o_r"), 10.0);
        assert_eq!(b.center("L"), 200.0);
    }

    #[test]
    fn added_knob_realises_measured_minus_baseline() {
        let o_s = KNOBS.iter().find(|k| k.name == "o_s").unwrap();
        let m = params(200.0, 100.0 + 20_500.0, 120.0, 20_600.0);
        let r = make_row(o_s, req("20us", 20_000.0), m, &base(), 1.0);
        assert!((r.realised - 20_500.0).abs() < 1e-9);
        assert!((r.err.unwrap() - 2.5).abs() < 1e-9);
        assert!(!r.below_native);
        // g and g_s are coupled to o_s: not drift
        assert!(r.drift.is_empty(), "{:?}", r.drift);
        let zero = make_row(
            o_s,
            req("0", 0.0),
            params(200.0, 100.0, 120.0, 92.0),
            &base(),
            1.0,
        );
        assert_eq!(zero.err, None);
    }

    #[test]
    fn floor_knob_below_native_has_no_error_and_drift_is_flagged() {
        let g_s = KNOBS.iter().find(|k| k.name == "g_s").unwrap();
        // requested 50 ns, native 92 ns: nothing to realise
        let r = make_row(
            g_s,
            req("50ns", 50.0),
            params(200.0, 100.0, 120.0, 92.0),
            &base(),
            1.0,
        );
        assert!(r.below_native);
        assert_eq!(r.err, None);
        // requested 20 us, measured 20.2 us; o_r moved by 1 us: flagged
        let r = make_row(
            g_s,
            req("20us", 20_000.0),
            params(200.0, 100.0, 1_120.0, 20_200.0),
            &base(),
            1.0,
        );
        assert!(!r.below_native);
        assert!((r.err.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(r.drift.len(), 2, "{:?}", r.drift); // o_r, and RTT with it
        assert!(r
            .drift
            .iter()
            .any(|(p, d)| *p == "o_r" && (*d - 1_000.0).abs() < 1e-9));
    }

    #[test]
    fn a_varied_knob_goes_with_its_own_sweep() {
        let o = parse("--knob L,o_s --l-dist normal:5us --seed 4").unwrap();
        assert_eq!(o.dist("L"), Some("normal:5us"));
        assert_eq!(o.dist("o_s"), None);
        let vars = o.vars(&o.knobs[0], "20us");
        assert!(vars.contains(&("LOGGP_L".into(), "20us".into())));
        // L's runs arm it, its row at 0 too; o_s's do not (below)
        assert!(vars.contains(&("LOGGP_ARM".into(), "L".into())));
        assert!(o
            .vars(&o.knobs[0], "0")
            .contains(&("LOGGP_ARM".into(), "L".into())));
        assert!(vars.contains(&("LOGGP_L_DIST".into(), "normal:5us".into())));
        assert!(vars.contains(&("LOGGP_SEED".into(), "4".into())));
        // the o_s sweep runs with L fixed at 0, not around 0
        assert_eq!(
            o.vars(&o.knobs[1], "20us"),
            [
                ("LOGGP_VT".into(), "on".into()),
                ("LOGGP_O_S".into(), "20us".into())
            ]
        );
        for (line, want) in [
            (
                "--knob o_s --l-dist normal:5us",
                "--l-dist \"normal:5us\" is not accepted: L is not swept (add --knob L)",
            ),
            (
                "--knob L --l-dist normal",
                "--l-dist \"normal\" is not accepted",
            ),
            (
                "--knob o_r --o-r-dist gamma:1us",
                "--o-r-dist \"gamma:1us\" is not accepted",
            ),
            ("--collectives --l-dist exp", "--l-dist"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: {e:?}");
        }
    }

    #[test]
    fn values_borrow_the_last_unit() {
        let v = parse_values(&KNOBS[0], "0,20,40us").unwrap();
        let ns: Vec<f64> = v.iter().map(|r| r.value).collect();
        assert_eq!(ns, vec![0.0, 20_000.0, 40_000.0]);
        assert_eq!(v[1].text, "20us");
        let g = parse_values(&KNOBS[5], "500,1000MB/s").unwrap();
        assert!((g[0].value - 2.0).abs() < 1e-12);
        assert!(parse_values(&KNOBS[5], "0").is_err());
        assert!(parse_values(&KNOBS[0], "20").is_err());
        assert!(parse_values(&KNOBS[0], "-5us").is_err());
    }

    #[test]
    fn option_defaults_and_errors() {
        let o = parse("--quick").unwrap();
        assert_eq!(o.knobs.len(), 1);
        assert_eq!(o.knobs[0].name, "o_s");
        assert_eq!(o.baseline_runs, 2);
        let o = parse("--mpi mpich --knob L,G --np 3").unwrap();
        assert_eq!(o.mpi, Mpi::Mpich);
        assert_eq!(o.knobs.len(), 2);
        assert_eq!(o.requested(&o.knobs[1]).unwrap().len(), 7);
        assert!(parse("--knob X").is_err());
        assert!(parse("--np 1").is_err());
        let o = parse("--knob L,G --values 20us --g-values 100,200MB/s").unwrap();
        assert_eq!(o.requested(&o.knobs[0]).unwrap().len(), 1);
        assert_eq!(o.requested(&o.knobs[1]).unwrap()[1].text, "200MB/s");
        assert!(parse("--knob G --g-values 20").is_err());
        assert!(parse("--knob L --values 100MB/s").is_err());
        assert!(parse("--bogus 1").is_err());
        assert!(parse("--knob none").unwrap().knobs.is_empty());
        // one grammar: the timeout is a time with its unit, sizes in bytes
        assert_eq!(
            parse("--timeout 90s --size 1KiB").unwrap().timeout,
            Duration::from_secs(90)
        );
        assert_eq!(parse("--size 1KiB").unwrap().size, 1024);
        for (line, want) in [
            (
                "--timeout 300",
                "--timeout \"300\" is not accepted: expected a time",
            ),
            (
                "--size 8K",
                "--size \"8K\" is not accepted: expected a number of bytes",
            ),
            ("--size 2MiB", "--size \"2MiB\" is not accepted"),
            (
                "--np 2,4",
                "--np \"2,4\" is not accepted: expected one rank count",
            ),
            ("--knob L=5us", "knob=value pairs are for --collectives"),
            ("--reps 4", "--reps \"4\" is not accepted"),
            ("--ops bcast", "--collectives"),
            ("--knob X", "--knob \"X\" is not accepted: expected L, o_s"),
            ("--values 1,,2us", "empty"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
            assert!(!e.contains('\n'), "{line}: {e:?}");
        }
    }
}
