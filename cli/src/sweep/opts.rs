//! The command line of `loggp sweep`.

use super::metric::Metric;
use super::stats::Stat;
use crate::knobs::knob_var;
use crate::launch::Mpi;
use loggp_core::units::{parse_g_ns_per_byte, parse_time_ns, G_ACCEPTED, TIME_ACCEPTED};
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
usage: loggp sweep --knob K[,K...] --values [K=]V,V,...unit [options] -- <launcher> [args...]

Runs the program once per repeat at a baseline (the shim loaded, every knob
at zero) and at each value of each knob, and reports the slowdown curve of
each knob: CSV, JSON, an SVG plot and a summary table (slope, R², the value
at which the slowdown passes 10 %).

  --knob K[,K...]     knobs to sweep, one curve each: L o_s o_r g_s g_r G
  --values [K=]LIST   comma-separated values for knob K (or for every knob
                      without a list of its own); a bare number takes the
                      unit of the next value that has one, so 0,2,5,10us is
                      0us,2us,5us,10us. Times: ns us ms s. G: a bandwidth
                      (100MB/s, 1GiB/s) or a time per byte (0.5ns).
  --repeat N          runs per point (default 5); the median is reported
  --stat median|min   the statistic of the repeats that stands for a point
                      (default median; min suits a busy machine, where
                      interference only ever adds time)
  --metric REGEX      take the figure from the program's output instead of
                      the wall time: group 1 of the last matching line of
                      stdout (then stderr), a number or a time like 1.5ms
  --mpi openmpi|mpich which shim to preload (default: from the launcher)
  --out DIR           where the results go (default loggp-sweep)
  --timeout TIME      kill a run after this long (default 10min = 600s)
  --lock FILE         hold an exclusive lock on FILE during each run, so that
                      other jobs using the same FILE do not run alongside
  --keep-going        a failed run is reported and the sweep goes on (default)
  --stop-on-fail      stop at the first failed run (results so far are written)

Other LOGGP_* variables in the environment apply to every run, baseline too;
a swept knob set there is replaced by the swept values (absent at the baseline).
Collectives are not perturbed by the shim yet: a program whose messages all
go through collectives shows no slowdown.";

/// How a knob's values are placed on the x axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Times, plotted in microseconds.
    Micros,
    /// G, plotted as nanoseconds per byte.
    NsPerByte,
}

impl Axis {
    pub fn unit(self) -> &'static str {
        match self {
            Axis::Micros => "us",
            Axis::NsPerByte => "ns/B",
        }
    }
}

/// One value of a knob: the text passed to the shim and its x coordinate.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub text: String,
    pub x: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Knob {
    pub name: String,
    pub var: &'static str,
    pub axis: Axis,
    pub values: Vec<Value>,
}

#[derive(Debug)]
pub struct Opts {
    pub knobs: Vec<Knob>,
    pub repeat: usize,
    pub stat: Stat,
    pub mpi: Option<Mpi>,
    pub out: PathBuf,
    pub metric: Option<Metric>,
    pub keep_going: bool,
    pub timeout: Duration,
    pub lock: Option<PathBuf>,
    pub cmd: Vec<String>,
}

/// `Ok(None)` means help was asked for.
pub fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    let mut knob_names: Vec<String> = Vec::new();
    let mut lists: Vec<(Option<String>, String)> = Vec::new();
    let mut repeat = 5usize;
    let mut stat = Stat::Median;
    let mut mpi = None;
    let mut out = PathBuf::from("loggp-sweep");
    let mut metric = None;
    let mut keep_going = true;
    let mut timeout = Duration::from_secs(600);
    let mut lock = None;
    let mut i = 0;
    let value = |i: usize, flag: &str| -> Result<String, String> {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| format!("sweep: {flag} needs a value"))
    };
    while i < args.len() {
        let a = args[i].as_str();
        // accept --flag=value as well as --flag value
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a, None),
        };
        let takes_value = matches!(
            flag,
            "--knob"
                | "--values"
                | "--repeat"
                | "--stat"
                | "--mpi"
                | "--out"
                | "--metric"
                | "--timeout"
                | "--lock"
        );
        let v = if takes_value {
            match inline {
                Some(v) => v,
                None => {
                    let v = value(i, flag)?;
                    i += 1;
                    v
                }
            }
        } else {
            String::new()
        };
        i += 1;
        match flag {
            "--" => break,
            "-h" | "--help" => return Ok(None),
            "--knob" => {
                for k in v.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                    let k = k.replace('-', "_");
                    if knob_var(&k).is_none() {
                        return Err(format!(
                            "sweep: --knob {k:?} is not a knob: expected L, o_s, o_r, g_s, g_r or G"
                        ));
                    }
                    if knob_names.contains(&k) {
                        return Err(format!("sweep: --knob {k} is given twice"));
                    }
                    knob_names.push(k);
                }
            }
            "--values" => match v.split_once('=') {
                Some((k, list)) => lists.push((Some(k.trim().replace('-', "_")), list.to_string())),
                None => lists.push((None, v)),
            },
            "--repeat" => {
                repeat = v
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("sweep: --repeat {v:?} is not accepted: expected a whole number >= 1"))?;
            }
            "--stat" => {
                stat = Stat::parse(&v).ok_or_else(|| {
                    format!("sweep: --stat {v:?} is not accepted: expected median or min")
                })?;
            }
            "--mpi" => mpi = Some(Mpi::parse(&v)?),
            "--out" => out = PathBuf::from(v),
            "--metric" => {
                let r = Metric::new(&v).map_err(|e| format!("sweep: --metric {v:?} is not accepted: {e}"))?;
                metric = Some(r);
            }
            "--timeout" => {
                let ns = parse_time_ns(&v)
                    .filter(|&ns| ns > 0)
                    .ok_or_else(|| format!("sweep: --timeout {v:?} is not accepted: expected {TIME_ACCEPTED}, above 0"))?;
                timeout = Duration::from_nanos(ns);
            }
            "--lock" => lock = Some(PathBuf::from(v)),
            "--keep-going" => keep_going = true,
            "--stop-on-fail" => keep_going = false,
            other => {
                return Err(format!(
                    "sweep: unknown option {other:?} (put the program after --; see loggp sweep --help)"
                ))
            }
        }
    }
    let cmd = args[i.min(args.len())..].to_vec();
    if !args.iter().any(|a| a == "--") || cmd.is_empty() {
        return Err("sweep: no program given: put it after --, as in loggp sweep --knob L --values 0,10us -- mpirun -np 2 ./app".into());
    }
    if knob_names.is_empty() {
        // --values L=... alone names its knob
        for (k, _) in &lists {
            if let Some(k) = k {
                if !knob_names.contains(k) {
                    knob_names.push(k.clone());
                }
            }
        }
    }
    if knob_names.is_empty() {
        return Err("sweep: no knob given: say --knob L (or o_s, o_r, g_s, g_r, G)".into());
    }
    for (k, _) in &lists {
        if let Some(k) = k {
            if !knob_names.contains(k) {
                return Err(format!(
                    "sweep: --values {k}=... is for a knob not in --knob {}",
                    knob_names.join(",")
                ));
            }
        }
    }
    let mut knobs = Vec::new();
    for name in &knob_names {
        let var = knob_var(name).ok_or_else(|| {
            format!("sweep: --values {name}=... names no knob: expected L, o_s, o_r, g_s, g_r or G")
        })?;
        let axis = if name == "G" {
            Axis::NsPerByte
        } else {
            Axis::Micros
        };
        let own = lists
            .iter()
            .rev()
            .find(|(k, _)| k.as_deref() == Some(name.as_str()));
        let shared = lists.iter().rev().find(|(k, _)| k.is_none());
        let Some((_, list)) = own.or(shared) else {
            return Err(format!(
                "sweep: knob {name} has no values: say --values {name}=0,5,10us"
            ));
        };
        let mut values = parse_values(name, axis, list)?;
        values.sort_by(|a, b| a.x.total_cmp(&b.x));
        knobs.push(Knob {
            name: name.clone(),
            var,
            axis,
            values,
        });
    }
    Ok(Some(Opts {
        knobs,
        repeat,
        stat,
        mpi,
        out,
        metric,
        keep_going,
        timeout,
        lock,
        cmd,
    }))
}

/// Splits `"1.5us"` into `("1.5", "us")`.
fn split_unit(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// Parses one knob's list. A bare number takes the unit of the next value
/// that carries one; a bare `0` needs none.
pub fn parse_values(knob: &str, axis: Axis, list: &str) -> Result<Vec<Value>, String> {
    let tokens: Vec<&str> = list.split(',').map(str::trim).collect();
    let accepted = match axis {
        Axis::Micros => TIME_ACCEPTED,
        Axis::NsPerByte => G_ACCEPTED,
    };
    let mut out = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        if tok.is_empty() {
            return Err(format!(
                "sweep: --values {knob}: an empty value in {list:?}: expected comma-separated values, each {accepted}"
            ));
        }
        let (num, unit) = split_unit(tok);
        let text =
            if unit.is_empty() && !num.is_empty() && num.parse::<f64>().is_ok_and(|v| v != 0.0) {
                match tokens[i + 1..]
                    .iter()
                    .map(|t| split_unit(t).1)
                    .find(|u| !u.is_empty())
                {
                    Some(u) => format!("{num}{u}"),
                    None => tok.to_string(),
                }
            } else {
                tok.to_string()
            };
        let body = text.strip_prefix('+').unwrap_or(&text);
        let x = match axis {
            Axis::Micros => parse_time_ns(body).map(|ns| ns as f64 / 1e3),
            Axis::NsPerByte => parse_g_ns_per_byte(body),
        };
        let Some(x) = x else {
            return Err(format!(
                "sweep: --values {knob}: {tok:?} is not accepted: expected {accepted}"
            ));
        };
        out.push(Value { text, x });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn trailing_unit_applies_to_bare_numbers() {
        let v = parse_values("L", Axis::Micros, "0,2,5,10,500ns,1,2ms").unwrap();
        let texts: Vec<&str> = v.iter().map(|v| v.text.as_str()).collect();
        assert_eq!(texts, ["0", "2ns", "5ns", "10ns", "500ns", "1ms", "2ms"]);
        assert_eq!(v[4].x, 0.5);
        assert_eq!(v[6].x, 2000.0);
    }

    #[test]
    fn bandwidths_for_g() {
        let v = parse_values("G", Axis::NsPerByte, "1000,100MB/s,0.5ns").unwrap();
        assert_eq!(v[0].text, "1000MB/s");
        assert!((v[0].x - 1.0).abs() < 1e-12);
        assert!((v[1].x - 10.0).abs() < 1e-12);
        assert_eq!(v[2].x, 0.5);
    }

    #[test]
    fn bad_value_names_itself_and_what_is_accepted() {
        let e = parse_values("L", Axis::Micros, "0,5parsecs").unwrap_err();
        assert!(
            e.contains("\"5parsecs\"") && e.contains("units ns, us, ms, s"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        let e = parse_values("L", Axis::Micros, "1,2").unwrap_err();
        assert!(e.contains("\"1\""), "{e}");
        let e = parse_values("L", Axis::Micros, "1,,2us").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = parse_values("G", Axis::NsPerByte, "5 bogons/s").unwrap_err();
        assert!(e.contains("bandwidth"), "{e}");
    }

    #[test]
    fn several_knobs_each_with_a_list() {
        let o = parse(&args(
            "--knob L,o_s --values L=0,5,10us --values o_s=2,1us --repeat 3 -- mpirun -np 2 ./a",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(o.knobs.len(), 2);
        assert_eq!(o.knobs[0].var, "LOGGP_L");
        assert_eq!(
            o.knobs[1].values.iter().map(|v| v.x).collect::<Vec<_>>(),
            [1.0, 2.0]
        );
        assert_eq!(o.repeat, 3);
        assert_eq!(o.stat, Stat::Median);
        assert_eq!(o.cmd, ["mpirun", "-np", "2", "./a"]);
    }

    #[test]
    fn shared_list_and_knob_from_values() {
        let o = parse(&args("--knob o_s,o_r --values 0,1us -- ./a"))
            .unwrap()
            .unwrap();
        assert_eq!(o.knobs[1].values.len(), 2);
        let o = parse(&args("--values=L=0,1us --stop-on-fail --stat min -- ./a"))
            .unwrap()
            .unwrap();
        assert_eq!(o.knobs[0].name, "L");
        assert!(!o.keep_going);
        assert_eq!(o.stat, Stat::Min);
    }

    #[test]
    fn mistakes_are_refused() {
        for (line, needle) in [
            ("--knob X --values 1us -- ./a", "not a knob"),
            ("--knob L -- ./a", "has no values"),
            ("--knob L --values 1us", "no program"),
            ("--knob L --values 1us --repeat 0 -- ./a", "--repeat"),
            ("--knob L --values 1us --bogus -- ./a", "unknown option"),
            ("--knob L --values o_s=1us -- ./a", "not in --knob"),
            ("--knob L --values 1us --metric ( -- ./a", "--metric"),
            ("--knob L --values 1us --timeout 0 -- ./a", "--timeout"),
            (
                "--knob L --values 1us --stat mean -- ./a",
                "expected median or min",
            ),
        ] {
            let e = parse(&args(line)).unwrap_err();
            assert!(e.contains(needle), "{line}: {e}");
        }
        assert!(parse(&args("--help")).unwrap().is_none());
    }
}
