//! Running the measurement kernel (`calibrate/prtt.c`, built as
//! `loggp-prtt-{openmpi,mpich}`) and turning its raw repetitions into LogGP
//! parameters with the formulas of Hoefler et al. §3 and León et al. §6.1.

use crate::job::{self, End};
use crate::launch::{self, Family, Mpi};
use loggp_core::fit::{join_agreeing, theil_sen_slope, ChangeDetector, Range};
use loggp_core::prtt;
use loggp_core::stats::{self, Summary};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Every mpirun on this machine takes this lock, so that only one MPI job
/// runs at a time (the machine has two cores; two jobs would measure each
/// other).
pub const MPI_LOCK: &str = "/tmp/loggp-mpi.lock";

/// How the kernel is run.
#[derive(Clone, Debug)]
pub struct KernelOpts {
    pub mpi: Mpi,
    pub np: u32,
    /// Placement options for the launcher (`--hosts`, `--hostfile`).
    pub place: Vec<String>,
    pub size: u64,
    pub reps: u32,
    pub fit_reps: u32,
    pub timeout: Duration,
}

/// Path of the kernel binary for `mpi`, or an error saying how to build it.
pub fn kernel_path(mpi: Mpi) -> Result<PathBuf, String> {
    let p = launch::bin_dir().join(format!("loggp-prtt-{}", mpi.name()));
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "the calibration kernel for {} is not built: {} does not exist (run scripts/build.sh)",
            mpi.name(),
            p.display()
        ))
    }
}

/// A comment line of a kernel's output (`prtt.c`, `collbench.c`): `# meta
/// <key> <value>` and `# library: <version>` are kept, other comments
/// skipped. False when `line` is not a comment.
pub(super) fn header_line(
    line: &str,
    meta: &mut BTreeMap<String, String>,
    library: &mut String,
) -> bool {
    let Some(rest) = line.strip_prefix('#') else {
        return false;
    };
    let rest = rest.trim();
    if let Some((k, v)) = rest.strip_prefix("meta ").and_then(|m| m.split_once(' ')) {
        meta.insert(k.to_string(), v.trim().to_string());
    } else if let Some(l) = rest.strip_prefix("library:") {
        *library = l.trim().to_string();
    }
    true
}

/// Launcher options that place the ranks on `hosts` (in rank order) or as
/// `hostfile` says, in the grammar of `mpi`'s launcher.
pub fn placement(mpi: Mpi, hosts: &[String], hostfile: Option<&Path>) -> Vec<String> {
    let mut v = Vec::new();
    if !hosts.is_empty() {
        v.push(match mpi.family {
            Family::OpenMpi => "--host".to_string(),
            Family::Mpich => "-hosts".to_string(),
        });
        v.push(hosts.join(","));
    }
    if let Some(f) = hostfile {
        v.push(match mpi.family {
            Family::OpenMpi => "--hostfile".to_string(),
            Family::Mpich => "-f".to_string(),
        });
        v.push(f.display().to_string());
    }
    v
}

/// Raw output of one kernel run: samples keyed by `(kind, n, size, d>0)`.
#[derive(Clone, Debug, Default)]
pub struct Raw {
    pub text: String,
    pub meta: BTreeMap<String, String>,
    pub library: String,
    /// `(kind, n, size, delayed)` → values (ns).
    pub samples: BTreeMap<(String, u64, u64, bool), Vec<f64>>,
    /// Actual delays (aux column) of the `prtt` rows with d > 0.
    pub d_actual: Vec<f64>,
}

impl Raw {
    /// The hosts of the measured pair (ranks 0 and 1), as the kernel read
    /// them (`MPI_Get_processor_name`); None from older kernels' output.
    pub fn pair(&self) -> Option<(String, String)> {
        Some((
            self.meta.get("host0")?.clone(),
            self.meta.get("host1")?.clone(),
        ))
    }
}

impl Raw {
    /// Parses the kernel's rows (`kind n d_ns size rep t_ns aux_ns`).
    pub fn parse(text: &str) -> Result<Raw, String> {
        let mut raw = Raw {
            text: text.to_string(),
            ..Raw::default()
        };
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if header_line(line, &mut raw.meta, &mut raw.library) {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let bad = || format!("kernel output line {}: cannot parse {line:?}", i + 1);
            if f.len() != 7 {
                return Err(bad());
            }
            let n: u64 = f[1].parse().map_err(|_| bad())?;
            let d: f64 = f[2].parse().map_err(|_| bad())?;
            let size: u64 = f[3].parse().map_err(|_| bad())?;
            let t: f64 = f[5].parse().map_err(|_| bad())?;
            let aux: f64 = f[6].parse().map_err(|_| bad())?;
            if !t.is_finite() || !aux.is_finite() {
                return Err(bad());
            }
            let delayed = d > 0.0;
            if f[0] == "prtt" && delayed {
                raw.d_actual.push(aux);
            }
            raw.samples
                .entry((f[0].to_string(), n, size, delayed))
                .or_default()
                .push(t);
        }
        if raw.samples.is_empty() {
            return Err("the kernel printed no measurements".into());
        }
        Ok(raw)
    }

    pub fn get(&self, kind: &str, n: u64, size: u64, delayed: bool) -> Result<&[f64], String> {
        self.samples
            .get(&(kind.to_string(), n, size, delayed))
            .map(Vec::as_slice)
            .ok_or_else(|| format!("kernel output lacks {kind} n={n} size={size}"))
    }

    fn med(&self, kind: &str, n: u64, size: u64, delayed: bool) -> Result<f64, String> {
        Summary::of(self.get(kind, n, size, delayed)?)
            .map(|s| s.median)
            .ok_or_else(|| format!("no repetitions of {kind}"))
    }

    /// How disturbed the run was by other processes: the largest ratio
    /// median / 10th percentile over PRTT(1,0,s), PRTT(n,0,s) and
    /// PRTT(n,d,s) at `--size`. A quiet run gives about 1.1–1.5; when
    /// another process shares a core with a rank for a stretch of the run,
    /// round trips grow tenfold and the ratio with them. The modified
    /// Z-score cannot see this when more than half of the repetitions are
    /// hit, the ratio can.
    pub fn disturbance(&self) -> f64 {
        let (Ok(n), Ok(size)) = (self.meta_u64("n"), self.meta_u64("size")) else {
            return f64::INFINITY;
        };
        [(1, false), (n, false), (n, true)]
            .iter()
            .filter_map(|&(k, delayed)| {
                let mut v = self.get("prtt", k, size, delayed).ok()?.to_vec();
                v.sort_by(f64::total_cmp);
                let p10 = v[v.len() / 10];
                let med = stats::median(&v)?;
                (p10 > 0.0).then(|| med / p10)
            })
            .fold(0.0, f64::max)
    }

    /// The median one-way time 0 → 1 (`oneway` rows) against half the
    /// median round trip PRTT(1,0,s) of the same run, on one host (the
    /// one-way rows compare two ranks' clocks). A quiet run of any knob
    /// gives 0.8–1.4 (two full reports and the test suite's runs, this
    /// 2-core machine), because every knob acts alike in both directions.
    /// The one-way phase comes last and lasts a fraction of a second;
    /// other processes can slow all of it and nothing else: seen at
    /// 6–106× with PRTT and its median/p10 quiet, in baselines whose
    /// median one-way time is the zero of a varied L's realised
    /// distribution (a baseline at 15.9 µs took 16 µs off every realised
    /// sample). None when the run lacks the rows or spans hosts.
    pub fn oneway_excess(&self) -> Option<f64> {
        let size = self.meta_u64("size").ok()?;
        let (h0, h1) = self.pair()?;
        if h0 != h1 {
            return None;
        }
        let ow = stats::median(self.get("oneway", 1, size, false).ok()?)?;
        let rtt = stats::median(self.get("prtt", 1, size, false).ok()?)?;
        (rtt > 0.0 && ow > 0.0).then(|| ow / (rtt / 2.0))
    }

    /// How far the delayed PRTT lies above Hoefler's model of it, from
    /// the run's own other measurements: PRTT(n,d,s) / (PRTT(1,0,s) +
    /// (n−1)·max(o_s + d, g + (s−1)G)), the model behind eq. 6, with o_s
    /// the time in `MPI_Send` (`gs_burst`), d the realised delay and
    /// g + (s−1)G by eq. 7; medians of all repetitions. A quiet run of any
    /// knob gives 0.98–1.07 (a full report, Open MPI, this 2-core
    /// machine). Another process that takes a rank's core for the whole
    /// delayed phase (a compiler, for a second) slows every delayed
    /// repetition alike, which the median/p10 ratio of `disturbance` cannot
    /// see: eq. 6 then reads it as o_s (1.46 and 1.96 seen, o_s 290 and
    /// 374 µs at o_s = 120 and 100 µs, with 120.1 and 100.1 µs in the
    /// call). None when the run lacks one of the measurements.
    pub fn model_excess(&self) -> Option<f64> {
        let n = self.meta_u64("n").ok()?;
        let size = self.meta_u64("size").ok()?;
        if n < 2 {
            return None;
        }
        let med = |k: &str, m: u64, delayed: bool| -> Option<f64> {
            stats::median(self.get(k, m, size, delayed).ok()?)
        };
        let rtt = med("prtt", 1, false)?;
        let prtt_n = med("prtt", n, false)?;
        let prtt_nd = med("prtt", n, true)?;
        let o_s = med("gs_burst", 1, false)?;
        let d = stats::median(&self.d_actual)?;
        let g = (prtt_n - rtt) / (n - 1) as f64;
        let model = rtt + (n - 1) as f64 * (o_s + d).max(g);
        (model > 0.0).then(|| prtt_nd / model)
    }

    pub fn meta_u64(&self, key: &str) -> Result<u64, String> {
        self.meta
            .get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("kernel output lacks '# meta {key}'"))
    }
}

/// One point of the g/G fit: message size and `(PRTT(n,0,s) − PRTT(1,0,s))/(n−1)`.
#[derive(Clone, Copy, Debug)]
pub struct FitPoint {
    pub size: u64,
    pub gap: f64,
    /// PRTT(1,0,s), the ping-pong round trip at this size.
    pub rtt: f64,
}

/// The LogGP parameters of one run, in ns (G in ns per byte).
#[derive(Clone, Debug)]
pub struct Params {
    pub l: f64,
    pub o_s: f64,
    pub o_r: f64,
    /// `g` at `--size` from PRTT (eq. 7): the larger of the two gaps.
    pub g: f64,
    pub g_s: f64,
    pub g_r: f64,
    /// Slope of eq. 7 in the last (largest-message) protocol range, ns/B,
    /// by Theil–Sen (robust to disturbed large sizes).
    pub big_g: f64,
    /// The same slope by least squares (Hoefler), for comparison.
    pub big_g_lsq: f64,
    /// Message sizes (first, last) of the range G was taken from.
    pub g_range: (u64, u64),
    /// "eq. 7" (Hoefler), or "ping-pong" when the byte term was hidden
    /// under a larger per-message gap (see `from_raw`).
    pub g_method: &'static str,
    /// PRTT(1,0,size) = the round trip.
    pub rtt: f64,
    /// Direct cross-check: time inside one MPI_Send (`gs_burst` T(1)).
    pub o_s_call: f64,
    /// Median one-way time 0 → 1 (`oneway` rows; NaN in output of a
    /// kernel without them).
    pub oneway: f64,
    /// How g_s and g_r were measured.
    pub gap_method: &'static str,
    /// Outlier repetitions flagged, over all quantities.
    pub outliers: usize,
    /// PRTT(n,d,s) repetitions left out of eq. 6 because rank 0's delay
    /// spin was stretched (rank 0 was preempted).
    pub preempted: usize,
    pub repetitions: usize,
    pub fit: Vec<FitPoint>,
    pub ranges: Vec<Range>,
}

/// A protocol range needs this many message sizes to give G.
pub const MIN_G_POINTS: usize = 5;
/// Neighbouring protocol ranges whose slopes and levels agree within this
/// fraction are one range (`loggp_core::fit::join_agreeing`).
pub const JOIN_TOL: f64 = 0.1;

/// Names of the parameters in report order, and how to read them.
pub const PARAMS: &[&str] = &["L", "o_s", "o_r", "g", "g_s", "g_r", "G", "RTT"];

impl Params {
    /// Value of a parameter by report name (G in ns/B, others ns).
    pub fn get(&self, name: &str) -> f64 {
        match name {
            "L" => self.l,
            "o_s" => self.o_s,
            "o_r" => self.o_r,
            "g" => self.g,
            "g_s" => self.g_s,
            "g_r" => self.g_r,
            "G" => self.big_g,
            "RTT" => self.rtt,
            "o_s_call" => self.o_s_call,
            "oneway" => self.oneway,
            _ => f64::NAN,
        }
    }

    /// Applies the formulas to a parsed run.
    ///
    /// * `RTT = PRTT(1,0,s)`; `o_s = (PRTT(n,d,s) − PRTT(1,0,s))/(n−1) − d`
    ///   (Hoefler eq. 6, with `d` the delay actually spun);
    /// * `o_r` = time in `MPI_Recv` of an already-arrived message;
    /// * `L = PRTT(1,0,s)/2 − o_s − o_r` (León eq. 2);
    /// * `g = (PRTT(n,0,s) − PRTT(1,0,s))/(n−1)` (Hoefler eq. 7 at s);
    /// * `g_s`, `g_r` = `(T(n) − T(1))/(n−1)` of the sender burst and the
    ///   receiver burst (2 ranks) or of the one-to-many and many-to-one
    ///   patterns (3 or more ranks);
    /// * `G` = slope of eq. 7 (or of PRTT(1,0,s)/2 when eq. 7 cannot see
    ///   it, `g_method`) over the sizes of the last protocol range (of
    ///   at least [`MIN_G_POINTS`] sizes) found by the look-ahead detector
    ///   (Hoefler §3.5); the ranges are
    ///   found with least squares as in the paper, the slope reported is
    ///   Theil–Sen's (least squares' is kept as `big_g_lsq`).
    ///
    /// Each quantity is the median of its repetitions.
    pub fn from_raw(raw: &Raw) -> Result<Params, String> {
        let n = raw.meta_u64("n")?;
        let size = raw.meta_u64("size")?;
        let np = raw.meta_u64("np")?;
        let rtt = raw.med("prtt", 1, size, false)?;
        let prtt_n = raw.med("prtt", n, size, false)?;
        // Eq. 6 assumes rank 0 spun d between sends. A repetition in which
        // that spin took much longer (rank 0 lost its core to another
        // process; the kernel's spin never yields) violates it and is left
        // out; `preempted` counts them. If most were hit, all are kept.
        let d_req: f64 = raw
            .meta
            .get("d_ns")
            .and_then(|v| v.parse().ok())
            .ok_or("kernel output lacks '# meta d_ns'")?;
        let nd = raw.get("prtt", n, size, true)?;
        if raw.d_actual.len() != nd.len() {
            return Err("kernel output: delayed PRTT rows and delays disagree".into());
        }
        let ok: Vec<usize> = (0..nd.len())
            .filter(|&i| raw.d_actual[i] <= 1.2 * d_req + 2000.0)
            .collect();
        let (kept_t, kept_d): (Vec<f64>, Vec<f64>) = if ok.len() * 2 >= nd.len() {
            ok.iter().map(|&i| (nd[i], raw.d_actual[i])).unzip()
        } else {
            (nd.to_vec(), raw.d_actual.clone())
        };
        let preempted = nd.len() - kept_t.len();
        let prtt_nd = Summary::of(&kept_t)
            .map(|s| s.median)
            .ok_or("kernel output lacks the delayed PRTT")?;
        let d_act = Summary::of(&kept_d)
            .map(|s| s.median)
            .ok_or("kernel output lacks the delayed PRTT")?;
        let o_s = prtt::send_overhead(prtt_nd, rtt, n, d_act);
        let o_s_call = raw.med("gs_burst", 1, size, false)?;
        let o_r = raw.med("or_call", 1, size, false)?;
        let g = prtt::gap(prtt_n, rtt, n);
        let (g_s, g_r, gap_method) = if np >= 3 {
            let p = np - 1;
            let a = raw.med("gs_1toN", n * p, size, false)?;
            let b = raw.med("gs_1toN", p, size, false)?;
            let c = raw.med("gr_Nto1", n * p, size, false)?;
            let e = raw.med("gr_Nto1", p, size, false)?;
            (
                prtt::pattern_gap(a, b, n, p),
                prtt::pattern_gap(c, e, n, p),
                "one-to-many / many-to-one",
            )
        } else {
            let a = raw.med("gs_burst", n, size, false)?;
            let b = raw.med("gs_burst", 1, size, false)?;
            let c = raw.med("gr_burst", n, size, false)?;
            let e = raw.med("gr_burst", 1, size, false)?;
            (
                prtt::gap(a, b, n),
                prtt::gap(c, e, n),
                "sender burst / receiver burst (2 ranks)",
            )
        };
        let mut fit = Vec::new();
        for ((kind, kn, s, delayed), v1) in &raw.samples {
            if kind != "prtt" || *kn != 1 || *delayed {
                continue;
            }
            let Ok(vn) = raw.get("prtt", n, *s, false) else {
                continue;
            };
            let (Some(a), Some(b)) = (Summary::of(vn), Summary::of(v1)) else {
                continue;
            };
            fit.push(FitPoint {
                size: *s,
                gap: prtt::gap(a.median, b.median, n),
                rtt: b.median,
            });
        }
        fit.sort_by_key(|p| p.size);
        let pts: Vec<(f64, f64)> = fit.iter().map(|p| ((p.size - 1) as f64, p.gap)).collect();
        // Hoefler's cuts, then neighbours that fit one line joined again
        // (loggp_core::fit::join_agreeing: noise that grows with the gap
        // cuts a long protocol range into short pieces)
        let ranges = join_agreeing(&pts, &ChangeDetector::default().ranges(&pts), JOIN_TOL);
        // G is the slope of the last range with at least MIN_G_POINTS
        // sizes: a shorter trailing range is a handful of disturbed large
        // messages more often than a protocol; `g_range` says which sizes
        // were used, so a skipped tail is visible in the report.
        let last = ranges
            .iter()
            .rev()
            .find(|r| r.end - r.start + 1 >= MIN_G_POINTS)
            .or_else(|| ranges.iter().max_by_key(|r| r.end - r.start))
            .ok_or("too few message sizes for the g/G fit")?;
        let g_range = (fit[last.start].size, fit[last.end].size);
        let big_g_lsq = last.line.slope;
        let mut big_g = theil_sen_slope(&pts[last.start..=last.end]).unwrap_or(big_g_lsq);
        // Eq. 7 sees G only where the byte term (s−1)·G is a fair part of
        // the gap. When a large overhead or gap hides it (LogGP: the gap
        // per message is max(o, g + (s−1)G)), the ping-pong round trip
        // still carries it: PRTT(1,0,s) = 2(L + o_s + o_r + (s−1)G), so G
        // is half the slope of PRTT(1,0,s) over s, o and L being constant.
        // Resolved: over the range, the byte term grows by at least the
        // gap at the range's first size (the per-message part).
        let span = (fit[last.end].size - fit[last.start].size) as f64;
        let g_method = if big_g * span >= fit[last.start].gap {
            "eq. 7"
        } else {
            let pp: Vec<(f64, f64)> = fit[last.start..=last.end]
                .iter()
                .map(|p| ((p.size - 1) as f64, p.rtt / 2.0))
                .collect();
            big_g = theil_sen_slope(&pp).unwrap_or(big_g);
            "ping-pong"
        };
        let mut outliers = 0;
        let mut repetitions = 0;
        for v in raw.samples.values() {
            if let Some(s) = Summary::of(v) {
                outliers += s.outliers;
                repetitions += s.n;
            }
        }
        Ok(Params {
            l: prtt::latency(rtt, o_s, o_r),
            o_s,
            o_r,
            g,
            g_s,
            g_r,
            big_g,
            big_g_lsq,
            g_range,
            g_method,
            rtt,
            o_s_call,
            oneway: raw.med("oneway", 1, size, false).unwrap_or(f64::NAN),
            gap_method,
            outliers,
            preempted,
            repetitions,
            fit,
            ranges,
        })
    }
}

/// Runs the kernel once, natively (`shim = None`) or through the shim with
/// `vars`, with `extra` arguments after the usual ones (`--min-d NS`),
/// under the MPI lock; returns the parsed output.
pub fn run(
    opts: &KernelOpts,
    shim: Option<&Path>,
    vars: &[(String, String)],
    extra: &[String],
) -> Result<Raw, String> {
    let kernel = kernel_path(opts.mpi)?;
    let mut args: Vec<String> = [
        ("--size", opts.size.to_string()),
        ("--reps", opts.reps.to_string()),
        ("--fit-reps", opts.fit_reps.to_string()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_string(), v])
    .collect();
    args.extend(extra.iter().cloned());
    let out = run_job(
        opts.mpi,
        opts.np,
        &opts.place,
        &kernel,
        &args,
        shim,
        vars,
        opts.timeout,
    )?;
    Raw::parse(&out).map_err(|e| format!("{e} ({})", describe(vars)))
}

/// Runs `exe args` on `np` ranks of `mpi` placed by the launcher options
/// `place` (Open MPI oversubscribed above 2 ranks), natively (`shim = None`) or through the shim with `vars`, under
/// the MPI lock, with no other `LOGGP_*` variable leaking in; returns its
/// standard output, or the tail of its standard error when it fails or
/// outlives `timeout`.
#[allow(clippy::too_many_arguments)]
pub fn run_job(
    mpi: Mpi,
    np: u32,
    place: &[String],
    exe: &Path,
    args: &[String],
    shim: Option<&Path>,
    vars: &[(String, String)],
    timeout: Duration,
) -> Result<String, String> {
    let mut cmd: Vec<String> = vec![mpi.mpirun().to_string(), "-np".into(), np.to_string()];
    cmd.extend(place.iter().cloned());
    if mpi.family == Family::OpenMpi && np > 2 {
        cmd.push("--oversubscribe".into());
    }
    cmd.push(exe.display().to_string());
    cmd.extend(args.iter().cloned());
    let mut c = match shim {
        Some(s) => launch::command(mpi, s, vars, &cmd),
        None => {
            let mut c = Command::new(&cmd[0]);
            c.args(&cmd[1..]);
            if mpi.family == Family::OpenMpi {
                c.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
                c.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            }
            c
        }
    };
    // MPICH's launcher forwards the whole environment: make sure no knob
    // from the caller's shell leaks into a run that did not ask for it.
    for (name, _, _) in loggp_core::config::VARIABLES {
        if !vars.iter().any(|(k, _)| k == name) {
            c.env_remove(name);
        }
    }
    if shim.is_none() {
        c.env_remove("LD_PRELOAD");
    }
    let out = job::run(c, timeout, Some(Path::new(MPI_LOCK)));
    match out.end {
        End::Exit(0) => Ok(out.stdout),
        End::Missing(_) => Err(format!(
            "{} not found: install {} (scripts/install-deps.sh)",
            mpi.mpirun(),
            mpi.name()
        )),
        End::Spawn(e) => Err(format!("cannot start {}: {e}", mpi.mpirun())),
        End::Timeout => Err(format!(
            "the kernel did not finish within {:.0}s ({}); killed it and its ranks",
            timeout.as_secs_f64(),
            describe(vars)
        )),
        end => {
            let tail: Vec<&str> = out.stderr.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(format!(
                "the kernel failed ({}, {}):\n{}",
                end.describe(timeout),
                describe(vars),
                tail.join("\n")
            ))
        }
    }
}

fn describe(vars: &[(String, String)]) -> String {
    if vars.is_empty() {
        "native".into()
    } else {
        vars.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds kernel text for a machine with known parameters (every
    /// repetition equal), as the LogGP model predicts it.
    fn synthetic(l: f64, o_s: f64, o_r: f64, g: f64, big_g: f64) -> String {
        let n = 16.0;
        // at s = 8 bytes the model carries 7·G in both the round trip and
        // the gap, as the fit rows below do
        let rtt = 2.0 * (l + o_s + o_r + 7.0 * big_g);
        let g8 = g + 7.0 * big_g;
        let d = 1000.0;
        let mut t = String::from("# meta np 2\n# meta n 16\n# meta size 8\n# meta d_ns 1000\n");
        for r in 0..5 {
            t += &format!("prtt 1 0 8 {r} {rtt} 0\n");
            t += &format!("prtt 16 0 8 {r} {} 0\n", rtt + (n - 1.0) * g8);
            t += &format!("prtt 16 {d} 8 {r} {} {d}\n", rtt + (n - 1.0) * (o_s + d));
            t += &format!("or_call 1 0 8 {r} {o_r} 0\n");
            t += &format!("gs_burst 1 0 8 {r} {o_s} 0\n");
            t += &format!("gs_burst 16 0 8 {r} {} 0\n", o_s + (n - 1.0) * g8);
            t += &format!("gr_burst 1 0 8 {r} {o_r} 0\n");
            t += &format!("gr_burst 16 0 8 {r} {} 0\n", o_r + (n - 1.0) * g8);
            for s in [1u64, 2, 4, 8, 16, 64, 512, 4096, 65536] {
                let sf = s as f64;
                let p1 = 2.0 * (l + o_s + o_r + (sf - 1.0) * big_g);
                let gall = g + (sf - 1.0) * big_g;
                t += &format!(
                    "prtt 1 0 {s} {r} {p1} 0\nprtt 16 0 {s} {r} {} 0\n",
                    p1 + (n - 1.0) * gall
                );
            }
        }
        t
    }

    #[test]
    fn formulas_recover_a_model_machine() {
        let raw = Raw::parse(&synthetic(300.0, 90.0, 70.0, 200.0, 0.1)).unwrap();
        let p = Params::from_raw(&raw).unwrap();
        // León's L = RTT/2 − o_s − o_r includes (s−1)G = 0.7 ns at 8 B
        assert!((p.l - 300.7).abs() < 1e-6, "{p:?}");
        assert!((p.o_s - 90.0).abs() < 1e-6);
        assert!((p.o_r - 70.0).abs() < 1e-6);
        assert!((p.g - 200.7).abs() < 1e-6);
        assert!((p.g_s - 200.7).abs() < 1e-6);
        assert!((p.g_r - 200.7).abs() < 1e-6);
        assert!((p.big_g - 0.1).abs() < 1e-9);
        assert_eq!(p.ranges.len(), 1);
        assert_eq!(p.g_method, "eq. 7");
        assert_eq!(p.outliers, 0);
        assert_eq!(p.preempted, 0);
    }

    #[test]
    fn g_hidden_under_a_large_overhead_comes_from_the_ping_pong() {
        // o_s = 50 us: the gap per message is max(o_s, g + (s−1)G), flat
        // over every size measured, but the round trip still grows by 2G/B.
        let (l, o_s, o_r, big_g) = (300.0, 50_000.0, 70.0, 0.05);
        let mut t = String::from("# meta np 2\n# meta n 16\n# meta size 8\n# meta d_ns 80000\n");
        for r in 0..5 {
            let rtt = 2.0 * (l + o_s + o_r + 7.0 * big_g);
            t += &format!("prtt 16 0 8 {r} {} 0\n", rtt + 15.0 * o_s);
            t += &format!(
                "prtt 16 80000 8 {r} {} 80000\n",
                rtt + 15.0 * (o_s + 80_000.0)
            );
            for k in ["or_call 1", "gs_burst 1", "gr_burst 1"] {
                t += &format!("{k} 0 8 {r} {o_r} 0\n");
            }
            for k in ["gs_burst 16", "gr_burst 16"] {
                t += &format!("{k} 0 8 {r} {} 0\n", o_r + 15.0 * o_s);
            }
            for s in [1u64, 2, 4, 8, 16, 64, 512, 4096, 65536, 262_144] {
                let p1 = 2.0 * (l + o_s + o_r + (s - 1) as f64 * big_g);
                let gap = o_s.max(100.0 + (s - 1) as f64 * big_g);
                t += &format!(
                    "prtt 1 0 {s} {r} {p1} 0\nprtt 16 0 {s} {r} {} 0\n",
                    p1 + 15.0 * gap
                );
            }
        }
        let p = Params::from_raw(&Raw::parse(&t).unwrap()).unwrap();
        assert_eq!(p.g_method, "ping-pong");
        assert!((p.big_g - big_g).abs() < 1e-9, "{}", p.big_g);
        assert!((p.o_s - o_s).abs() < 1e-6);
    }

    #[test]
    fn preempted_delays_are_left_out_of_eq_6() {
        let mut t = synthetic(300.0, 90.0, 70.0, 200.0, 0.1);
        // two more repetitions in which rank 0's 1 us spin took 50 us
        for r in 5..7 {
            let rtt = 2.0 * (300.0 + 90.0 + 70.0 + 0.7);
            t += &format!(
                "prtt 16 1000 8 {r} {} 50000\n",
                rtt + 15.0 * (90.0 + 50_000.0)
            );
        }
        let p = Params::from_raw(&Raw::parse(&t).unwrap()).unwrap();
        assert_eq!(p.preempted, 2);
        assert!((p.o_s - 90.0).abs() < 1e-6, "{}", p.o_s);
    }

    #[test]
    fn model_excess_sees_a_delayed_phase_slowed_throughout() {
        let quiet = Raw::parse(&synthetic(300.0, 90.0, 70.0, 200.0, 0.1)).unwrap();
        let m = quiet.model_excess().unwrap();
        assert!((m - 1.0).abs() < 1e-9, "{m}");
        // g above o_s + d: the gap sets the delayed PRTT, still the model
        let gap_bound = Raw::parse(&synthetic(300.0, 90.0, 70.0, 5000.0, 0.1)).unwrap();
        let gs = gap_bound.model_excess().unwrap();
        assert!(gs < 1.0 + 1e-9 && gs > 0.2, "{gs}");
        // every delayed repetition twice as long (another process held a
        // core through the phase): median/p10 stays 1, the model sees it
        let slow: String = synthetic(300.0, 90.0, 70.0, 200.0, 0.1)
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                if f[0] == "prtt" && f[1] == "16" && f[2] != "0" {
                    let t: f64 = f[5].parse().unwrap();
                    format!(
                        "{} {} {} {} {} {} {}\n",
                        f[0],
                        f[1],
                        f[2],
                        f[3],
                        f[4],
                        2.0 * t,
                        f[6]
                    )
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let slow = Raw::parse(&slow).unwrap();
        assert!((slow.disturbance() - 1.0).abs() < 1e-9);
        assert!(slow.model_excess().unwrap() > 1.9);
    }

    #[test]
    fn oneway_excess_compares_the_one_way_phase_with_half_the_round_trip() {
        let base = synthetic(300.0, 90.0, 70.0, 200.0, 0.1);
        // no oneway rows, or no hosts named: not checked
        assert_eq!(Raw::parse(&base).unwrap().oneway_excess(), None);
        let with = |host1: &str, ow: f64| {
            let mut t = format!("# meta host0 vm\n# meta host1 {host1}\n{base}");
            for r in 0..8 {
                t += &format!("oneway 1 0 8 {r} {ow} 0\n");
            }
            Raw::parse(&t).unwrap()
        };
        // PRTT(1) = 2 (300 + 90 + 70 + 0.7) = 921.4: half is 460.7
        let quiet = with("vm", 470.0).oneway_excess().unwrap();
        assert!((quiet - 470.0 / 460.7).abs() < 1e-9, "{quiet}");
        let slowed = with("vm", 15_900.0);
        assert!(slowed.oneway_excess().unwrap() > 30.0);
        assert!(
            (slowed.disturbance() - 1.0).abs() < 1e-9,
            "PRTT stays quiet"
        );
        // two hosts: the rows compare two clocks
        assert_eq!(with("other", 470.0).oneway_excess(), None);
    }

    #[test]
    fn disturbance_sees_a_majority_of_slow_repetitions() {
        let quiet = Raw::parse(&synthetic(300.0, 90.0, 70.0, 200.0, 0.1)).unwrap();
        assert!((quiet.disturbance() - 1.0).abs() < 1e-9);
        // 7 of 10 round trips twenty times slower: the median moves with them
        let mut t = String::from("# meta np 2\n# meta n 16\n# meta size 8\n");
        for r in 0..10 {
            let slow = if r < 7 { 20.0 } else { 1.0 };
            t += &format!("prtt 1 0 8 {r} {} 0\n", 900.0 * slow);
            t += &format!("prtt 16 0 8 {r} {} 0\n", 3000.0 * slow);
            t += &format!("prtt 16 900 8 {r} {} 900\n", 16000.0 * slow);
        }
        let busy = Raw::parse(&t).unwrap();
        assert!(busy.disturbance() > 10.0, "{}", busy.disturbance());
        assert!(
            crate::calibrate::kernel::Summary::of(busy.get("prtt", 1, 8, false).unwrap())
                .unwrap()
                .outliers
                == 0
        );
    }

    #[test]
    fn parse_rejects_garbage() {
        assert!(Raw::parse("# only comments\n").is_err());
        assert!(Raw::parse("prtt 1 0 8 0 abc 0\n").is_err());
        assert!(Raw::parse("prtt 1 0 8\n").is_err());
        assert!(Params::from_raw(&Raw::parse("prtt 1 0 8 0 5 0\n").unwrap()).is_err());
    }
}
