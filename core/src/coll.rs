//! Which algorithm runs each collective the shim runs:
//! `LOGGP_COLL_<OP>=<algorithm>[:<segment>]` (pure: no MPI, unit-tested
//! below; segments in the units of `units::parse_bytes`).
//!
//! Every operation accepts `auto` (the default: the shim's `coll::resolve`)
//! and `native` (leave that collective to the MPI library, unperturbed);
//! `LOGGP_COLL_ALL=native` makes every operation not set otherwise native.
//! A malformed value, or an unknown `LOGGP_COLL_*` variable, is an error: a
//! silent fallback would corrupt an experiment.

use crate::units::parse_bytes;
use std::fmt::Write as _;

/// The algorithms (names from Pješivac-Grbović et al. §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alg {
    Auto,
    Native,
    /// Flat tree: the root talks to every rank (fan-in/fan-out for Barrier).
    Linear,
    Binomial,
    Binary,
    /// Chain (single pipeline) from the root.
    Pipeline,
    RecursiveDoubling,
    /// Bruck's dissemination barrier: ⌈log2 P⌉ rounds, r → r + 2^k.
    Bruck,
    /// Ring (Allgather(v)); double ring (Barrier).
    Ring,
    /// Pairwise exchange: step i, send to r + i, receive from r − i.
    Pairwise,
    /// Allreduce as a binomial Reduce to rank 0 and a binomial Bcast.
    ReduceBcast,
    /// Reduce_scatter(_block) as a binomial Reduce to rank 0 and a Scatter(v).
    ReduceScatter,
    /// Allreduce as a reduce-scatter by recursive halving and an Allgather
    /// by recursive doubling (Rabenseifner; `sched::halvings`).
    Rabenseifner,
}

impl Alg {
    pub fn name(self) -> &'static str {
        match self {
            Alg::Auto => "auto",
            Alg::Native => "native",
            Alg::Linear => "linear",
            Alg::Binomial => "binomial",
            Alg::Binary => "binary",
            Alg::Pipeline => "pipeline",
            Alg::RecursiveDoubling => "recursive_doubling",
            Alg::Bruck => "bruck",
            Alg::Ring => "ring",
            Alg::Pairwise => "pairwise",
            Alg::ReduceBcast => "reduce_bcast",
            Alg::ReduceScatter => "reduce_scatter",
            Alg::Rabenseifner => "rabenseifner",
        }
    }
}

/// An algorithm and its segment size in bytes (0: the whole message at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Choice {
    pub alg: Alg,
    pub seg: u64,
}

const AUTO: Choice = Choice {
    alg: Alg::Auto,
    seg: 0,
};

/// The intercepted collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    Gatherv,
    Scatterv,
    Allgatherv,
    Alltoallv,
    ReduceScatterBlock,
    ReduceScatter,
    Scan,
    Exscan,
    Alltoallw,
    /// The five neighbourhood collectives.
    Neighbor,
}

pub const N_OPS: usize = 18;

/// Per operation: its variable, the algorithms it accepts, whether a
/// segment size is accepted.
struct Spec {
    op: Op,
    var: &'static str,
    algs: &'static [Alg],
    seg: bool,
}

use Alg::*;
const SPECS: [Spec; N_OPS] = [
    Spec {
        op: Op::Barrier,
        var: "LOGGP_COLL_BARRIER",
        algs: &[Bruck, RecursiveDoubling, Linear, Ring],
        seg: false,
    },
    Spec {
        op: Op::Bcast,
        var: "LOGGP_COLL_BCAST",
        algs: &[Binomial, Binary, Pipeline, Linear],
        seg: true,
    },
    Spec {
        op: Op::Reduce,
        var: "LOGGP_COLL_REDUCE",
        algs: &[Binomial, Binary, Pipeline, Linear],
        seg: true,
    },
    Spec {
        op: Op::Allreduce,
        var: "LOGGP_COLL_ALLREDUCE",
        algs: &[RecursiveDoubling, ReduceBcast, Rabenseifner],
        seg: false,
    },
    Spec {
        op: Op::Gather,
        var: "LOGGP_COLL_GATHER",
        algs: &[Binomial, Linear],
        seg: false,
    },
    Spec {
        op: Op::Scatter,
        var: "LOGGP_COLL_SCATTER",
        algs: &[Binomial, Linear],
        seg: false,
    },
    Spec {
        op: Op::Allgather,
        var: "LOGGP_COLL_ALLGATHER",
        algs: &[RecursiveDoubling, Ring],
        seg: false,
    },
    Spec {
        op: Op::Alltoall,
        var: "LOGGP_COLL_ALLTOALL",
        algs: &[Pairwise, Linear],
        seg: false,
    },
    Spec {
        op: Op::Gatherv,
        var: "LOGGP_COLL_GATHERV",
        algs: &[Linear],
        seg: false,
    },
    Spec {
        op: Op::Scatterv,
        var: "LOGGP_COLL_SCATTERV",
        algs: &[Linear],
        seg: false,
    },
    Spec {
        op: Op::Allgatherv,
        var: "LOGGP_COLL_ALLGATHERV",
        algs: &[Ring],
        seg: false,
    },
    Spec {
        op: Op::Alltoallv,
        var: "LOGGP_COLL_ALLTOALLV",
        algs: &[Pairwise],
        seg: false,
    },
    Spec {
        op: Op::ReduceScatterBlock,
        var: "LOGGP_COLL_REDUCE_SCATTER_BLOCK",
        algs: &[ReduceScatter],
        seg: false,
    },
    Spec {
        op: Op::ReduceScatter,
        var: "LOGGP_COLL_REDUCE_SCATTER",
        algs: &[ReduceScatter],
        seg: false,
    },
    Spec {
        op: Op::Scan,
        var: "LOGGP_COLL_SCAN",
        algs: &[RecursiveDoubling, Linear],
        seg: false,
    },
    Spec {
        op: Op::Exscan,
        var: "LOGGP_COLL_EXSCAN",
        algs: &[RecursiveDoubling, Linear],
        seg: false,
    },
    Spec {
        op: Op::Alltoallw,
        var: "LOGGP_COLL_ALLTOALLW",
        algs: &[Pairwise],
        seg: false,
    },
    Spec {
        op: Op::Neighbor,
        var: "LOGGP_COLL_NEIGHBOR",
        algs: &[Linear],
        seg: false,
    },
];

/// The global switch.
pub const GLOBAL_VAR: &str = "LOGGP_COLL_ALL";

/// Every variable this module reads (for the configuration's accepted list).
pub fn variables() -> Vec<&'static str> {
    std::iter::once(GLOBAL_VAR)
        .chain(SPECS.iter().map(|s| s.var))
        .collect()
}

/// The resolved choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CollCfg {
    choice: [Choice; N_OPS],
}

impl Default for CollCfg {
    fn default() -> Self {
        CollCfg {
            choice: [AUTO; N_OPS],
        }
    }
}

impl CollCfg {
    pub fn get(&self, op: Op) -> Choice {
        self.choice[op as usize]
    }

    /// Reads the `LOGGP_COLL*` variables among `vars`; others are ignored.
    /// The error is one line naming the variable, the value and what is
    /// accepted.
    pub fn from_vars<I, K, V>(vars: I) -> Result<CollCfg, String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut c = CollCfg::default();
        let mut global_native = false;
        for (k, v) in vars {
            let (k, v) = (k.as_ref(), v.as_ref());
            if k == GLOBAL_VAR {
                match v.trim() {
                    "native" | "off" => global_native = true,
                    "shim" | "on" | "" => {}
                    _ => {
                        return Err(format!(
                            "{k}={v:?} is not accepted: expected shim (collectives run over the \
                             perturbed point-to-point, the default) or native"
                        ))
                    }
                }
                continue;
            }
            if !k.starts_with("LOGGP_COLL_") {
                continue;
            }
            let Some(spec) = SPECS.iter().find(|s| s.var == k) else {
                return Err(format!(
                    "{k}={v:?} is not accepted: unknown variable; the collective variables are {}",
                    variables().join(", ")
                ));
            };
            c.choice[spec.op as usize] = parse_choice(spec, v)?;
        }
        if global_native {
            for ch in c.choice.iter_mut().filter(|ch| ch.alg == Alg::Auto) {
                *ch = Choice {
                    alg: Alg::Native,
                    seg: 0,
                };
            }
        }
        Ok(c)
    }
}

fn expected(spec: &Spec) -> String {
    let mut s = String::new();
    for a in spec.algs {
        let _ = write!(s, "{}, ", a.name());
    }
    s.push_str("auto or native");
    if spec.seg {
        s.push_str(", optionally with :<segment size> (e.g. binomial:8KiB)");
    }
    s
}

fn parse_choice(spec: &Spec, v: &str) -> Result<Choice, String> {
    let bad = || {
        format!(
            "{}={v:?} is not accepted: expected {}",
            spec.var,
            expected(spec)
        )
    };
    let (name, seg) = match v.trim().split_once(':') {
        Some((n, s)) => (n.trim(), Some(s.trim())),
        None => (v.trim(), None),
    };
    let alg = match name {
        "auto" => Alg::Auto,
        "native" => Alg::Native,
        "dissemination" if spec.op == Op::Barrier => Alg::Bruck,
        _ => *spec
            .algs
            .iter()
            .find(|a| a.name() == name)
            .ok_or_else(bad)?,
    };
    let seg = match seg {
        None => 0,
        Some(_) if !spec.seg || alg == Alg::Native => return Err(bad()),
        Some(s) => parse_bytes(s).ok_or_else(bad)?,
    };
    Ok(Choice { alg, seg })
}

/// The algorithm that runs `op` of `bytes` on `p` ranks: `ch` unless it
/// says `auto`, then the default.
pub fn resolve(op: Op, ch: Choice, bytes: usize, p: usize) -> Choice {
    if ch.alg != Alg::Auto {
        return ch;
    }
    let big = |alg| Choice {
        alg,
        // Segment only large messages (pipelining through the tree).
        seg: if bytes > 1 << 20 { 128 << 10 } else { 0 },
    };
    let plain = |alg| Choice { alg, seg: 0 };
    match op {
        Op::Barrier => plain(Alg::Bruck),
        // A binary tree sends at most two copies from each node where the
        // binomial root sends log2 P. Through the shim at zero knobs on 16
        // cores it broadcast 8 B, 2 KiB and 64 KiB in 0.79-0.90x the
        // binomial tree's time at 16 ranks (Open MPI 4.1.6 and MPICH 5.0),
        // but 0.97-0.98x at 8, within the noise (README, "Collectives");
        // larger messages were not measured.
        Op::Bcast if bytes <= 64 << 10 && p > 8 => plain(Alg::Binary),
        Op::Bcast | Op::Reduce => big(Alg::Binomial),
        // Rabenseifner's sends 2·(P−1)/P of the message where recursive
        // doubling sends all of it log2 P times, in log2 P more steps.
        // Through the shim at zero knobs on 16 cores (Open MPI 4.1.6;
        // README, "Collectives") it was the faster from 16 KiB at 16 ranks
        // (equal at 8), and at 2 to 8 ranks from 64 KiB (equal at 4; half
        // the time at 1 MiB).
        Op::Allreduce if bytes >= 64 << 10 || (bytes >= 16 << 10 && p >= 8) => {
            plain(Alg::Rabenseifner)
        }
        Op::Allreduce | Op::Scan | Op::Exscan => plain(Alg::RecursiveDoubling),
        Op::Gather | Op::Scatter => plain(Alg::Binomial),
        Op::Allgather if p.is_power_of_two() => plain(Alg::RecursiveDoubling),
        Op::Allgather | Op::Allgatherv => plain(Alg::Ring),
        Op::Alltoall | Op::Alltoallv => plain(Alg::Pairwise),
        Op::Gatherv | Op::Scatterv => plain(Alg::Linear),
        Op::Alltoallw => plain(Alg::Pairwise),
        Op::Neighbor => plain(Alg::Linear),
        Op::ReduceScatterBlock | Op::ReduceScatter => plain(Alg::ReduceScatter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kv: &[(&str, &str)]) -> Result<CollCfg, String> {
        CollCfg::from_vars(kv.iter().copied())
    }

    #[test]
    fn defaults_are_auto() {
        let c = cfg(&[("LOGGP_L", "5us")]).unwrap();
        assert_eq!(c.get(Op::Bcast), AUTO);
        assert_eq!(c.get(Op::Exscan), AUTO);
    }

    #[test]
    fn algorithm_and_segment() {
        let c = cfg(&[
            ("LOGGP_COLL_BCAST", "binomial:8KiB"),
            ("LOGGP_COLL_BARRIER", "dissemination"),
            ("LOGGP_COLL_ALLREDUCE", "native"),
        ])
        .unwrap();
        assert_eq!(
            c.get(Op::Bcast),
            Choice {
                alg: Alg::Binomial,
                seg: 8192
            }
        );
        assert_eq!(c.get(Op::Barrier).alg, Alg::Bruck);
        assert_eq!(c.get(Op::Allreduce).alg, Alg::Native);
    }

    #[test]
    fn global_native_keeps_explicit_choices() {
        let c = cfg(&[
            ("LOGGP_COLL_ALL", "native"),
            ("LOGGP_COLL_BCAST", "pipeline"),
        ])
        .unwrap();
        assert_eq!(c.get(Op::Bcast).alg, Alg::Pipeline);
        assert_eq!(c.get(Op::Reduce).alg, Alg::Native);
    }

    #[test]
    fn bad_values_name_variable_and_choices() {
        let e = cfg(&[("LOGGP_COLL_BCAST", "ring")]).unwrap_err();
        assert!(
            e.starts_with("LOGGP_COLL_BCAST=\"ring\" is not accepted"),
            "{e}"
        );
        assert!(e.contains("binomial, binary, pipeline, linear"), "{e}");
        assert!(cfg(&[("LOGGP_COLL_BARRIER", "bruck:8KiB")]).is_err());
        assert!(cfg(&[("LOGGP_COLL_BCAST", "binomial:8 parsecs")]).is_err());
        let e = cfg(&[("LOGGP_COLL_BCASTT", "binomial")]).unwrap_err();
        assert!(e.contains("unknown variable"), "{e}");
        assert!(cfg(&[("LOGGP_COLL_ALL", "maybe")]).is_err());
    }

    #[test]
    fn auto_picks_by_size_and_ranks() {
        let auto = AUTO;
        let alg = |bytes, p| resolve(Op::Allreduce, auto, bytes, p).alg;
        assert_eq!(alg(8, 16), Alg::RecursiveDoubling);
        assert_eq!(alg(16 << 10, 4), Alg::RecursiveDoubling);
        assert_eq!(alg(16 << 10, 8), Alg::Rabenseifner);
        assert_eq!(alg(64 << 10, 2), Alg::Rabenseifner);
        assert_eq!(
            resolve(Op::Scan, auto, 1 << 20, 16).alg,
            Alg::RecursiveDoubling
        );
        // A forced choice stays.
        let rd = Choice {
            alg: Alg::RecursiveDoubling,
            seg: 0,
        };
        assert_eq!(resolve(Op::Allreduce, rd, 1 << 20, 16), rd);
        // Bcast: a binary tree up to 64 KiB above 8 ranks, else binomial,
        // segmented above 1 MiB only.
        assert_eq!(resolve(Op::Bcast, auto, 8, 9).alg, Alg::Binary);
        assert_eq!(resolve(Op::Bcast, auto, 8, 8).alg, Alg::Binomial);
        assert_eq!(resolve(Op::Bcast, auto, 64 << 10, 16).alg, Alg::Binary);
        assert_eq!(resolve(Op::Bcast, auto, 8, 4).alg, Alg::Binomial);
        assert_eq!(
            resolve(Op::Bcast, auto, (64 << 10) + 1, 16).alg,
            Alg::Binomial
        );
        assert_eq!(resolve(Op::Reduce, auto, 8, 16).alg, Alg::Binomial);
        assert_eq!(resolve(Op::Bcast, auto, 1 << 20, 4).seg, 0);
        assert_eq!(resolve(Op::Bcast, auto, (1 << 20) + 1, 4).seg, 128 << 10);
    }
}
