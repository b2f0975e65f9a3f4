//! `--metric`: the figure a run reports, found in its output with a
//! regular expression (the `regex` crate's syntax, matched one line at a
//! time, so `^` and `$` are the start and end of a line).

/// A compiled `--metric` pattern.
#[derive(Debug, Clone)]
pub struct Metric {
    re: regex::Regex,
}

impl Metric {
    /// Compiles `pattern`; the error is one line (the crate's own message
    /// spans several, with a caret under the offending character).
    pub fn new(pattern: &str) -> Result<Metric, String> {
        regex::Regex::new(pattern)
            .map(|re| Metric { re })
            .map_err(|e| one_line(&e))
    }

    pub fn as_str(&self) -> &str {
        self.re.as_str()
    }

    /// The leftmost match in `line`: its group 1 when the pattern has
    /// groups, else the whole match. `None` when nothing matches (or a
    /// group 1 that did not take part).
    pub fn capture(&self, line: &str) -> Option<String> {
        let caps = self.re.captures(line)?;
        let group = usize::from(self.re.captures_len() > 1);
        caps.get(group).map(|m| m.as_str().to_string())
    }

    /// The capture of the last line of `text` that gives one.
    pub fn last_capture(&self, text: &str) -> Option<String> {
        text.lines().rev().find_map(|l| self.capture(l))
    }
}

fn one_line(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => s
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or_else(|| s.lines().last().unwrap_or(s))
            .trim()
            .to_string(),
        other => other.to_string().replace('\n', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(p: &str, s: &str) -> Option<String> {
        Metric::new(p).unwrap().capture(s)
    }

    #[test]
    fn whole_match_or_group_one() {
        assert_eq!(cap("abc", "xxabcxx").as_deref(), Some("abc"));
        assert_eq!(cap("b(c+)d", "abcccde").as_deref(), Some("ccc"));
        assert_eq!(cap("a(?:b)(c)", "abc").as_deref(), Some("c"));
        assert_eq!(cap("abc", "abd"), None);
    }

    #[test]
    fn lammps_loop_time() {
        let line = "Loop time of 1.23456 on 2 procs for 100 steps with 32000 atoms";
        assert_eq!(
            cap(r"Loop time of ([0-9.eE+-]+)", line).as_deref(),
            Some("1.23456")
        );
        assert_eq!(
            cap(r"^Loop time of (\S+) on", line).as_deref(),
            Some("1.23456")
        );
        assert_eq!(cap(r"^time of", line), None);
        assert_eq!(
            cap(r"in ([0-9.]+) s", "2000 round trips in 0.0123 s (x)").as_deref(),
            Some("0.0123")
        );
    }

    #[test]
    fn optional_group_that_did_not_take_part() {
        assert_eq!(cap("x(y)?z", "xz"), None);
    }

    #[test]
    fn last_line_wins() {
        let r = Metric::new(r"t=(\d+)").unwrap();
        assert_eq!(
            r.last_capture("t=1\nnoise\nt=2\nend\n").as_deref(),
            Some("2")
        );
        assert_eq!(r.last_capture("nothing"), None);
        // a line whose group 1 did not take part does not stop the search
        let r = Metric::new(r"t=(\d+)?").unwrap();
        assert_eq!(r.last_capture("t=7\nt=\n").as_deref(), Some("7"));
    }

    #[test]
    fn refused_patterns_say_why_on_one_line() {
        for p in [
            "(", "a)", "*a", "[abc", r"\1", "(?=a)", "a{3,1}", r"x\", "[z-a]",
        ] {
            let e = Metric::new(p).expect_err(p);
            assert!(!e.is_empty() && !e.contains('\n'), "{p:?}: {e:?}");
        }
        let e = Metric::new("(?=a)").unwrap_err();
        assert!(e.contains("look-around"), "{e}");
        let e = Metric::new("(").unwrap_err();
        assert!(e.contains("unclosed group"), "{e}");
    }

    #[test]
    fn pathological_pattern_is_linear() {
        // exponential for a backtracking matcher; the crate's automata
        // answer at once
        let r = Metric::new("(a*)*(a*)*(a*)*c").unwrap();
        let s = "a".repeat(10_000);
        let t0 = std::time::Instant::now();
        assert_eq!(r.capture(&s), None);
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }
}
