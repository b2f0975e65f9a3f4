//! Targeting: a knob's value for a subset of the pairs of ranks.
//!
//! A knob's variable holds a comma-separated list of items, each a value
//! with an optional selection after `@`:
//!
//! ```text
//! LOGGP_L=1us,20us@inter            1 us on every pair, 20 us between hosts
//! LOGGP_L=+20us@pairs=0:1           20 us between ranks 0 and 1 (both ways)
//! LOGGP_O_S=5us@from=4-7            the sends of ranks 4 to 7
//! LOGGP_L=50us@ranks=4-7+12         every message to or from 4..7 or 12
//! ```
//!
//! Which item applies to a pair (source rank, destination rank, same
//! host?) is decided here, by specificity: `@pairs` before `@ranks`,
//! `@from` and `@to`, before `@inter` and `@intra`, before the item without
//! a selection (the default; 0 when absent). Two items of one level that
//! select a common pair with different values are refused (which one would
//! apply is a guess); so are an item without a value, a selection that
//! selects nothing by its own writing (`@ranks=`, `3-1`, `0:0`), and, once
//! the job's size and hosts are known ([`Rules::check_job`]), one that
//! names a rank the job does not have or selects no pair of it.
//!
//! Ranks are `MPI_COMM_WORLD` ranks, whatever communicator a message uses.

/// One pair of ranks, as a message sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub src: u32,
    pub dst: u32,
    /// Both ranks on one host (a rank to itself included).
    pub same_host: bool,
}

/// A set of ranks: inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RankSet(pub Vec<(u32, u32)>);

impl RankSet {
    pub fn contains(&self, r: u32) -> bool {
        self.0.iter().any(|&(a, b)| a <= r && r <= b)
    }
    fn meets(&self, o: &RankSet) -> bool {
        self.0
            .iter()
            .any(|&(a, b)| o.0.iter().any(|&(c, d)| a <= d && c <= b))
    }
    fn max(&self) -> u32 {
        self.0.iter().map(|r| r.1).max().unwrap_or(0)
    }
    /// `0-3+8`: ranges and single ranks joined by `+`.
    fn parse(s: &str) -> Option<RankSet> {
        let mut v = Vec::new();
        for part in s.split('+') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
                None => {
                    let a = part.parse().ok()?;
                    (a, a)
                }
            };
            if a > b {
                return None;
            }
            v.push((a, b));
        }
        Some(RankSet(v))
    }
}

impl std::fmt::Display for RankSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        write!(f, "{}", parts.join("+"))
    }
}

/// Which pairs an item applies to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sel {
    /// Ranks on different hosts.
    Inter,
    /// Ranks on one host.
    Intra,
    /// Every message to or from a rank of the set.
    Ranks(RankSet),
    /// Every message sent by a rank of the set.
    From(RankSet),
    /// Every message received by a rank of the set.
    To(RankSet),
    /// The listed pairs, both directions.
    Pairs(Vec<(u32, u32)>),
}

/// What a selection accepts, for error messages.
pub const SEL_ACCEPTED: &str = "a value, optionally followed by @inter, @intra, @ranks=0-3, \
     @from=0-3, @to=0-3 or @pairs=0:1 (several ranks or pairs joined by +), items separated by commas";

impl Sel {
    pub fn parse(s: &str) -> Option<Sel> {
        let s = s.trim();
        match s {
            "inter" => return Some(Sel::Inter),
            "intra" => return Some(Sel::Intra),
            _ => {}
        }
        let (k, v) = s.split_once('=')?;
        Some(match k.trim() {
            "ranks" => Sel::Ranks(RankSet::parse(v)?),
            "from" => Sel::From(RankSet::parse(v)?),
            "to" => Sel::To(RankSet::parse(v)?),
            "pairs" => {
                let mut ps = Vec::new();
                for p in v.split('+') {
                    let (a, b) = p.split_once(':')?;
                    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                    if a == b {
                        return None;
                    }
                    ps.push((a.min(b), a.max(b)));
                }
                Sel::Pairs(ps)
            }
            _ => return None,
        })
    }

    /// 0 is the most specific.
    pub fn level(&self) -> u8 {
        match self {
            Sel::Pairs(_) => 0,
            Sel::Ranks(_) | Sel::From(_) | Sel::To(_) => 1,
            Sel::Inter | Sel::Intra => 2,
        }
    }

    pub fn matches(&self, p: Pair) -> bool {
        match self {
            Sel::Inter => !p.same_host,
            Sel::Intra => p.same_host,
            Sel::Ranks(s) => s.contains(p.src) || s.contains(p.dst),
            Sel::From(s) => s.contains(p.src),
            Sel::To(s) => s.contains(p.dst),
            Sel::Pairs(ps) => {
                let k = (p.src.min(p.dst), p.src.max(p.dst));
                ps.contains(&k)
            }
        }
    }

    /// True when some pair (of a job large enough) is selected by both.
    fn overlaps(&self, o: &Sel) -> bool {
        use Sel::*;
        match (self, o) {
            (Inter, Inter) | (Intra, Intra) => true,
            (Inter, Intra) | (Intra, Inter) => false,
            (Pairs(a), Pairs(b)) => a.iter().any(|p| b.contains(p)),
            // A message from a rank of one set to a rank of the other.
            (Ranks(_), Ranks(_) | From(_) | To(_)) | (From(_) | To(_), Ranks(_)) => true,
            (From(_), To(_)) | (To(_), From(_)) => true,
            (From(a), From(b)) | (To(a), To(b)) => a.meets(b),
            _ => false,
        }
    }

    /// The largest rank the selection names.
    fn max_rank(&self) -> Option<u32> {
        match self {
            Sel::Inter | Sel::Intra => None,
            Sel::Ranks(s) | Sel::From(s) | Sel::To(s) => Some(s.max()),
            Sel::Pairs(ps) => ps.iter().map(|p| p.1).max(),
        }
    }
}

impl std::fmt::Display for Sel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sel::Inter => write!(f, "inter"),
            Sel::Intra => write!(f, "intra"),
            Sel::Ranks(s) => write!(f, "ranks={s}"),
            Sel::From(s) => write!(f, "from={s}"),
            Sel::To(s) => write!(f, "to={s}"),
            Sel::Pairs(ps) => {
                let v: Vec<String> = ps.iter().map(|(a, b)| format!("{a}:{b}")).collect();
                write!(f, "pairs={}", v.join("+"))
            }
        }
    }
}

/// The selected items of one knob (the default is kept beside them).
#[derive(Clone, Debug, PartialEq)]
pub struct Rules<T> {
    pub items: Vec<(Sel, T)>,
}

impl<T> Default for Rules<T> {
    fn default() -> Self {
        Rules { items: Vec::new() }
    }
}

impl<T: Copy + PartialEq> Rules<T> {
    /// The value for pair `p`: the most specific item that selects it,
    /// else `default`.
    pub fn value(&self, p: Pair, default: T) -> T {
        let mut best: Option<(u8, T)> = None;
        for (s, v) in &self.items {
            if s.matches(p) && best.is_none_or(|(l, _)| s.level() < l) {
                best = Some((s.level(), *v));
            }
        }
        best.map_or(default, |b| b.1)
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The values of the items (for "is any of them non-zero").
    pub fn values(&self) -> impl Iterator<Item = T> + '_ {
        self.items.iter().map(|i| i.1)
    }

    /// Once the job is known (`size` ranks, `host_of[r]` the host of rank
    /// `r`): the text of the first selection that names a rank the job does
    /// not have or selects none of its pairs.
    pub fn check_job(&self, size: u32, host_of: &[usize]) -> Result<(), String> {
        for (s, _) in &self.items {
            if let Some(m) = s.max_rank() {
                if m >= size {
                    return Err(format!(
                        "@{s} names rank {m}, but the job has {size} rank{}",
                        if size == 1 { "" } else { "s" }
                    ));
                }
            }
            let host = |r: u32| host_of.get(r as usize).copied().unwrap_or(0);
            let any = (0..size).any(|a| {
                (0..size).any(|b| {
                    a != b
                        && s.matches(Pair {
                            src: a,
                            dst: b,
                            same_host: host(a) == host(b),
                        })
                })
            });
            if !any {
                return Err(format!(
                    "@{s} selects no pair of two ranks in this job ({size} rank{} on {} host{})",
                    if size == 1 { "" } else { "s" },
                    host_of.iter().max().map_or(1, |h| h + 1),
                    if host_of.iter().max().copied().unwrap_or(0) == 0 {
                        ""
                    } else {
                        "s"
                    }
                ));
            }
        }
        Ok(())
    }
}

/// Parses `item[,item...]`, each `value[@selection]`, with `value` read
/// by `one`. Returns the default (the item without a selection, if any)
/// and the selected items; `Err` is what is wrong, for the error line.
pub fn parse_items<T: Copy + PartialEq>(
    text: &str,
    one: impl Fn(&str) -> Option<T>,
) -> Result<(Option<T>, Rules<T>), String> {
    let mut default: Option<T> = None;
    let mut rules = Rules::default();
    for item in text.split(',') {
        let (v, sel) = match item.split_once('@') {
            Some((v, s)) => (v, Some(s)),
            None => (item, None),
        };
        let value = one(v).ok_or_else(|| format!("bad value {:?}", v.trim()))?;
        match sel {
            None => {
                if default.is_some() {
                    return Err("two values without a selection".into());
                }
                default = Some(value);
            }
            Some(s) => {
                let sel =
                    Sel::parse(s).ok_or_else(|| format!("bad or empty selection @{}", s.trim()))?;
                for (o, ov) in &rules.items {
                    if o.level() == sel.level() && *ov != value && o.overlaps(&sel) {
                        return Err(format!(
                            "@{o} and @{sel} select common pairs with different values"
                        ));
                    }
                }
                rules.items.push((sel, value));
            }
        }
    }
    Ok((default, rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &str) -> Option<u64> {
        crate::units::parse_time_ns(s.trim().strip_prefix('+').unwrap_or(s.trim()))
    }

    fn pair(src: u32, dst: u32, same_host: bool) -> Pair {
        Pair {
            src,
            dst,
            same_host,
        }
    }

    #[test]
    fn plain_value_is_the_default() {
        let (d, r) = parse_items("+20us", ns).unwrap();
        assert_eq!(d, Some(20_000));
        assert!(r.is_empty());
        assert_eq!(r.value(pair(0, 1, true), 7), 7);
    }

    #[test]
    fn inter_and_intra_follow_the_hosts() {
        let (d, r) = parse_items("1us,20us@inter", ns).unwrap();
        let d = d.unwrap();
        assert_eq!(r.value(pair(0, 1, false), d), 20_000);
        assert_eq!(r.value(pair(0, 1, true), d), 1_000);
        let (_, r) = parse_items("3us@intra", ns).unwrap();
        assert_eq!(r.value(pair(2, 3, true), 0), 3_000);
        assert_eq!(r.value(pair(2, 3, false), 0), 0);
        // inter and intra never meet: both may be given.
        let (_, r) = parse_items("3us@intra,9us@inter", ns).unwrap();
        assert_eq!(r.value(pair(0, 5, false), 0), 9_000);
        assert_eq!(r.value(pair(0, 5, true), 0), 3_000);
    }

    #[test]
    fn pairs_go_both_ways_and_nowhere_else() {
        let (_, r) = parse_items("20us@pairs=1:0", ns).unwrap();
        assert_eq!(r.value(pair(0, 1, true), 0), 20_000);
        assert_eq!(r.value(pair(1, 0, true), 0), 20_000);
        assert_eq!(r.value(pair(0, 2, true), 0), 0);
        assert_eq!(r.value(pair(2, 1, true), 0), 0);
        let (_, r) = parse_items("5us@pairs=0:1+2:3", ns).unwrap();
        assert_eq!(r.value(pair(3, 2, false), 0), 5_000);
        assert_eq!(r.value(pair(1, 2, false), 0), 0);
    }

    #[test]
    fn ranks_from_and_to() {
        let (_, r) = parse_items("50us@ranks=4-7+12", ns).unwrap();
        for (s, d, want) in [
            (0, 4, 50_000),
            (7, 1, 50_000),
            (12, 13, 50_000),
            (3, 8, 0),
            (8, 11, 0),
        ] {
            assert_eq!(r.value(pair(s, d, true), 0), want, "{s}->{d}");
        }
        let (_, r) = parse_items("5us@from=4-7", ns).unwrap();
        assert_eq!(r.value(pair(5, 0, true), 0), 5_000);
        assert_eq!(r.value(pair(0, 5, true), 0), 0);
        let (_, r) = parse_items("5us@to=4-7", ns).unwrap();
        assert_eq!(r.value(pair(5, 0, true), 0), 0);
        assert_eq!(r.value(pair(0, 5, true), 0), 5_000);
        // Disjoint senders may differ.
        let (_, r) = parse_items("5us@from=0-3,9us@from=4-7", ns).unwrap();
        assert_eq!(r.value(pair(6, 0, true), 0), 9_000);
    }

    #[test]
    fn the_most_specific_selection_wins() {
        let (d, r) = parse_items("1us,10us@inter,100us@ranks=3,0@pairs=3:4", ns).unwrap();
        let d = d.unwrap();
        assert_eq!(r.value(pair(0, 1, true), d), 1_000); // default
        assert_eq!(r.value(pair(0, 1, false), d), 10_000); // inter
        assert_eq!(r.value(pair(3, 1, false), d), 100_000); // ranks over inter
        assert_eq!(r.value(pair(0, 3, true), d), 100_000); // ranks over default
        assert_eq!(r.value(pair(4, 3, false), d), 0); // pairs over ranks
                                                      // The order of the items does not matter.
        let (d2, r2) = parse_items("0@pairs=3:4,100us@ranks=3,10us@inter,1us", ns).unwrap();
        for (s, t, h) in [(0, 1, true), (0, 1, false), (3, 1, false), (4, 3, false)] {
            assert_eq!(
                r.value(pair(s, t, h), d),
                r2.value(pair(s, t, h), d2.unwrap())
            );
        }
    }

    #[test]
    fn overlapping_items_of_one_level_are_refused() {
        for bad in [
            "1us,2us",
            "1us@inter,2us@inter",
            "1us@ranks=0-3,2us@ranks=8",
            "1us@ranks=0,2us@from=5",
            "1us@from=0-3,2us@from=3-5",
            "1us@to=0-3,2us@from=7",
            "1us@pairs=0:1,2us@pairs=1:0+2:3",
        ] {
            assert!(parse_items(bad, ns).is_err(), "{bad}");
        }
        // The same value twice is the union, not a conflict.
        let (_, r) = parse_items("2us@ranks=0-3,2us@ranks=8", ns).unwrap();
        assert_eq!(r.value(pair(1, 8, true), 0), 2_000);
        // Different levels never conflict: the more specific wins.
        assert!(parse_items("1us@ranks=0-3,2us@pairs=0:1,3us@inter", ns).is_ok());
    }

    #[test]
    fn empty_or_malformed_selections_are_refused() {
        for bad in [
            "1us@",
            "1us@ranks=",
            "1us@ranks=3-1",
            "1us@ranks=0-",
            "1us@pairs=0:0",
            "1us@pairs=0",
            "1us@pairs=",
            "1us@nodes=2",
            "1us@inter@intra",
            "@inter",
            "1us,,2us@inter",
            "5parsecs@inter",
        ] {
            assert!(parse_items(bad, ns).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_job_must_have_what_is_named() {
        let one_host = [0usize, 0, 0, 0];
        let two_hosts = [0usize, 0, 1, 1];
        let rules = |s: &str| parse_items(s, ns).unwrap().1;
        assert!(rules("1us@pairs=0:3").check_job(4, &one_host).is_ok());
        let e = rules("1us@pairs=0:4").check_job(4, &one_host).unwrap_err();
        assert!(e.contains("rank 4") && e.contains("4 ranks"), "{e}");
        let e = rules("1us@inter").check_job(4, &one_host).unwrap_err();
        assert!(e.contains("selects no pair"), "{e}");
        assert!(rules("1us@inter").check_job(4, &two_hosts).is_ok());
        // One rank per host: no two ranks share one.
        let e = rules("1us@intra").check_job(2, &[0, 1]).unwrap_err();
        assert!(e.contains("2 hosts"), "{e}");
        assert!(rules("1us@ranks=0").check_job(1, &[0]).is_err());
    }
}
