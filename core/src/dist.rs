//! Variation: a distribution for a knob's added time per message
//! (`LOGGP_L_DIST=normal:5us`, also `LOGGP_O_S_DIST`, `LOGGP_O_R_DIST`),
//! drawn from a seeded generator, and the order that varied latencies must
//! keep on one channel.
//!
//! The knob's value (for the message's pair, after targeting) is the
//! distribution's mean; every draw is truncated at zero by drawing again:
//!
//! * `fixed` — the value itself (the default);
//! * `uniform:W` — uniform on `[value − W, value + W]`;
//! * `normal:S` — normal with standard deviation `S`;
//! * `exp` — exponential with the value as its mean;
//! * `empirical:FILE` — one of the file's samples (one time a line, `#`
//!   comments), shifted so that their mean is the value: the file gives the
//!   shape of the variation, the knob (and its targeting) its level.
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014), one stream per rank from
//! `LOGGP_SEED` and the rank: a run is repeated exactly by the same seed,
//! ranks and program (the draws follow each rank's order of messages).

use crate::units::round_ns;

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream of `rank` under `seed`; `salt` tells the knobs' streams
    /// apart (a knob's draws do not depend on another knob's).
    pub fn new(seed: u64, rank: u32, salt: u64) -> Rng {
        Rng(mix(seed
            ^ mix(u64::from(rank).wrapping_add(GOLDEN))
            ^ mix(salt)))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }

    /// Uniform on (0, 1]: 53 random bits, never 0 (the logarithms below).
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The distribution of one knob's added time per message.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Dist {
    #[default]
    Fixed,
    /// Half width, ns.
    Uniform(f64),
    /// Standard deviation, ns.
    Normal(f64),
    /// Mean = the knob's value.
    Exp,
    /// Samples less their mean, ns (their shape), and the file's name.
    Empirical(Vec<f64>, String),
}

/// What a distribution accepts, for error messages.
pub const DIST_ACCEPTED: &str = "fixed, uniform:W (value ± W), normal:S (standard deviation S), \
     exp (exponential, mean the value) or empirical:FILE (one time a line), times such as 5us";

impl Dist {
    /// Parses `kind[:parameter]`; `read` gives a file's text (empirical).
    pub fn parse(s: &str, read: impl Fn(&str) -> Result<String, String>) -> Result<Dist, String> {
        let s = s.trim();
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (s, None),
        };
        let time = |a: Option<&str>| {
            a.and_then(crate::units::parse_time_ns)
                .map(|v| v as f64)
                .ok_or_else(|| format!("{kind} needs a time, such as {kind}:5us"))
        };
        match (kind, arg) {
            ("fixed", None) => Ok(Dist::Fixed),
            ("uniform", a) => Ok(Dist::Uniform(time(a)?)),
            ("normal", a) => Ok(Dist::Normal(time(a)?)),
            ("exp", None) => Ok(Dist::Exp),
            ("empirical", Some(path)) if !path.is_empty() => {
                let text = read(path)?;
                let mut v = Vec::new();
                for (i, line) in text.lines().enumerate() {
                    let l = line.split('#').next().unwrap_or_default().trim();
                    if l.is_empty() {
                        continue;
                    }
                    let ns = crate::units::parse_time_ns(l.strip_prefix('+').unwrap_or(l))
                        .ok_or_else(|| format!("{path} line {}: {l:?} is not a time", i + 1))?;
                    v.push(ns as f64);
                }
                if v.is_empty() {
                    return Err(format!("{path} holds no sample"));
                }
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                Ok(Dist::Empirical(
                    v.into_iter().map(|x| x - mean).collect(),
                    path.to_string(),
                ))
            }
            _ => Err("unknown distribution".into()),
        }
    }

    pub fn is_fixed(&self) -> bool {
        *self == Dist::Fixed
    }

    /// One draw around `mean` ns, truncated at zero (drawn again; after 64
    /// draws below zero, 0).
    pub fn draw(&self, mean: u64, rng: &mut Rng) -> u64 {
        let m = mean as f64;
        for _ in 0..64 {
            let x = match self {
                Dist::Fixed => return mean,
                Dist::Uniform(w) => m + w * (2.0 * rng.unit() - 1.0),
                Dist::Normal(sd) => m + sd * rng.normal(),
                Dist::Exp => -m * rng.unit().ln(),
                Dist::Empirical(dev, _) => {
                    let i = usize::try_from(rng.next_u64() % dev.len() as u64).unwrap_or(0);
                    m + dev.get(i).copied().unwrap_or(0.0)
                }
            };
            if x >= 0.0 {
                return round_ns(x);
            }
        }
        0
    }

    /// As a variable spells it.
    pub fn text(&self) -> String {
        use crate::units::fmt_ns;
        match self {
            Dist::Fixed => "fixed".into(),
            Dist::Uniform(w) => format!("uniform:{}", fmt_ns(*w)),
            Dist::Normal(s) => format!("normal:{}", fmt_ns(*s)),
            Dist::Exp => "exp".into(),
            Dist::Empirical(v, p) => format!("empirical:{p} ({} samples)", v.len()),
        }
    }

    /// Bits that differ when two distributions differ (the settings check
    /// across ranks: an empirical file of other contents counts).
    pub fn hash_into(&self, feed: &mut impl FnMut(u64)) {
        match self {
            Dist::Fixed => feed(0),
            Dist::Uniform(w) => {
                feed(1);
                feed(w.to_bits())
            }
            Dist::Normal(s) => {
                feed(2);
                feed(s.to_bits())
            }
            Dist::Exp => feed(3),
            Dist::Empirical(v, _) => {
                feed(4);
                for x in v {
                    feed(x.to_bits());
                }
            }
        }
    }
}

/// Non-overtaking with varied latency, at the sender: on one channel
/// (destination, tag, communicator) a message must not arrive before an
/// earlier one. The sender keeps the latest `d + L` per channel and raises
/// a later message's `L` to reach at least it: a message drawn a smaller
/// delay waits for the one before it, as on an ordered link.
#[derive(Clone, Debug, Default)]
pub struct Channels {
    last: std::collections::HashMap<(usize, i32, i32), u64>,
}

impl Channels {
    /// The `L` of a message departing at `d` on `channel` (drawn `l`), and
    /// records it. `now` lets entries that can no longer matter (their
    /// arrival passed) be dropped when the table grows.
    pub fn order(&mut self, channel: (usize, i32, i32), d: u64, l: u64, now: u64) -> u64 {
        let floor = self.last.get(&channel).copied().unwrap_or(0);
        let l = l.max(floor.saturating_sub(d));
        if self.last.len() >= 4096 {
            self.last.retain(|_, &mut t| t > now);
        }
        self.last.insert(channel, d + l);
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
        (m, var.sqrt())
    }

    fn draws(d: &Dist, mean: u64, n: usize) -> Vec<f64> {
        let mut r = Rng::new(42, 0, 0);
        (0..n).map(|_| d.draw(mean, &mut r) as f64).collect()
    }

    fn no_file(_: &str) -> Result<String, String> {
        Err("no file".into())
    }

    #[test]
    fn parse_each_kind() {
        assert_eq!(Dist::parse("fixed", no_file), Ok(Dist::Fixed));
        assert_eq!(
            Dist::parse("normal:5us", no_file),
            Ok(Dist::Normal(5_000.0))
        );
        assert_eq!(
            Dist::parse("uniform:2us", no_file),
            Ok(Dist::Uniform(2_000.0))
        );
        assert_eq!(Dist::parse("exp", no_file), Ok(Dist::Exp));
        for bad in [
            "normal",
            "normal:5",
            "gauss:5us",
            "exp:5us",
            "uniform:",
            "empirical:",
        ] {
            assert!(Dist::parse(bad, no_file).is_err(), "{bad}");
        }
        let file = |_: &str| Ok("# us\n10us\n\n30us # peak\n20us\n".to_string());
        match Dist::parse("empirical:lat.txt", file).unwrap() {
            Dist::Empirical(v, p) => {
                assert_eq!(p, "lat.txt");
                assert_eq!(v, vec![-10_000.0, 10_000.0, 0.0]);
            }
            d => panic!("{d:?}"),
        }
        assert!(Dist::parse("empirical:x", |_| Ok("5 parsecs".into())).is_err());
        assert!(Dist::parse("empirical:x", |_| Ok("# none\n".into())).is_err());
    }

    #[test]
    fn realised_mean_and_spread() {
        let n = 200_000;
        // normal: mean and sd as asked (truncation negligible 4 sd away).
        let (m, s) = stats(&draws(&Dist::Normal(5_000.0), 20_000, n));
        assert!(
            (m - 20_000.0).abs() < 50.0 && (s - 5_000.0).abs() < 50.0,
            "{m} {s}"
        );
        // uniform on 20 +- 5 us: sd = 10/sqrt(12) us.
        let (m, s) = stats(&draws(&Dist::Uniform(5_000.0), 20_000, n));
        assert!(
            (m - 20_000.0).abs() < 50.0 && (s - 2_886.8).abs() < 30.0,
            "{m} {s}"
        );
        // exponential: sd = mean.
        let (m, s) = stats(&draws(&Dist::Exp, 20_000, n));
        assert!(
            (m - 20_000.0).abs() < 200.0 && (s - 20_000.0).abs() < 300.0,
            "{m} {s}"
        );
        // fixed: no spread.
        let (m, s) = stats(&draws(&Dist::Fixed, 20_000, 1_000));
        assert_eq!((m, s), (20_000.0, 0.0));
        // empirical: the samples' shape around the value.
        let e = Dist::Empirical(vec![-10_000.0, 10_000.0, 0.0], "f".into());
        let v = draws(&e, 50_000, 30_000);
        assert!(v
            .iter()
            .all(|&x| [40_000.0, 50_000.0, 60_000.0].contains(&x)));
        let (m, _) = stats(&v);
        assert!((m - 50_000.0).abs() < 200.0, "{m}");
    }

    #[test]
    fn truncated_at_zero_by_drawing_again() {
        // normal around 1 us with sd 5 us: never negative, mean above 1 us
        // (the truncated normal's), not a spike at 0.
        let v = draws(&Dist::Normal(5_000.0), 1_000, 100_000);
        let zeros = v.iter().filter(|&&x| x == 0.0).count();
        assert!(zeros < 100, "{zeros} zeros");
        let (m, _) = stats(&v);
        // E[X | X > 0] for N(1, 5): 1 + 5 phi(0.2)/Phi(0.2) = 4.375 us.
        assert!((m - 4_375.0).abs() < 60.0, "{m}");
    }

    #[test]
    fn deterministic_per_seed_and_rank() {
        let d = Dist::Normal(5_000.0);
        let run = |seed, rank| {
            let mut r = Rng::new(seed, rank, 1);
            (0..100).map(|_| d.draw(20_000, &mut r)).collect::<Vec<_>>()
        };
        assert_eq!(run(7, 3), run(7, 3));
        assert_ne!(run(7, 3), run(7, 4));
        assert_ne!(run(7, 3), run(8, 3));
        // Knobs' streams differ by their salt.
        let mut a = Rng::new(7, 3, 1);
        let mut b = Rng::new(7, 3, 2);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn a_later_message_never_arrives_before_an_earlier_one() {
        let mut c = Channels::default();
        let ch = (1, 2, 7);
        // Departs at 0 drawn 30 us: arrives 30 us.
        assert_eq!(c.order(ch, 0, 30_000, 0), 30_000);
        // Departs at 1 us drawn 5 us: would arrive at 6 us; waits for 30.
        assert_eq!(c.order(ch, 1_000, 5_000, 1_000), 29_000);
        // Another tag, another channel: free to arrive first.
        assert_eq!(c.order((1, 2, 8), 1_000, 5_000, 1_000), 5_000);
        // After the earlier arrival, a draw is what it is.
        assert_eq!(c.order(ch, 40_000, 2_000, 40_000), 2_000);
        // Random draws: arrivals on one channel never fall.
        let mut r = Rng::new(1, 0, 0);
        let d = Dist::Exp;
        let mut last = 0;
        for i in 0..10_000u64 {
            let dep = i * 3_000;
            let l = c.order(ch, dep, d.draw(20_000, &mut r), dep);
            assert!(dep + l >= last);
            last = dep + l;
        }
    }
}
