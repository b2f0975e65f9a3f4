//! A small backtracking regular-expression matcher for `--metric`, so that
//! the command needs no extra crate. It covers what a timing line needs:
//! literals, `.`, classes `[a-z0-9.]` and `[^...]`, the escapes `\d \D \s
//! \S \w \W` and escaped metacharacters, groups `( )` and `(?: )`,
//! alternation `|`, the quantifiers `* + ? {n} {n,} {n,m}` (greedy, or lazy
//! with a trailing `?`), and the anchors `^ $`. Text is matched one line
//! at a time, so `^` and `$` are the start and end of a line.
//! Backreferences, lookaround and flags are refused with a clear message.

use std::fmt;

#[derive(Debug, Clone)]
enum Node {
    /// One character out of a set.
    Class(Class),
    /// Concatenation.
    Seq(Vec<Node>),
    /// Alternation.
    Alt(Vec<Node>),
    /// A capturing group, numbered from 1.
    Group(usize, Box<Node>),
    Repeat {
        inner: Box<Node>,
        min: usize,
        max: Option<usize>,
        greedy: bool,
    },
    Start,
    End,
}

#[derive(Debug, Clone)]
struct Class {
    negated: bool,
    items: Vec<Item>,
}

#[derive(Debug, Clone, Copy)]
enum Item {
    Char(char),
    Range(char, char),
    Digit(bool),
    Space(bool),
    Word(bool),
    /// `.`: anything but a newline.
    Any,
}

impl Item {
    fn matches(self, c: char) -> bool {
        match self {
            Item::Char(x) => c == x,
            Item::Range(a, b) => a <= c && c <= b,
            Item::Digit(pos) => c.is_ascii_digit() == pos,
            Item::Space(pos) => c.is_whitespace() == pos,
            Item::Word(pos) => (c.is_alphanumeric() || c == '_') == pos,
            Item::Any => c != '\n',
        }
    }
}

impl Class {
    fn one(item: Item) -> Class {
        Class {
            negated: false,
            items: vec![item],
        }
    }
    fn matches(&self, c: char) -> bool {
        self.items.iter().any(|i| i.matches(c)) != self.negated
    }
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    source: String,
    root: Node,
    groups: usize,
}

/// Why a pattern was refused: the position (in characters) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub at: usize,
    pub msg: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.at + 1, self.msg)
    }
}

struct Parser {
    s: Vec<char>,
    i: usize,
    groups: usize,
}

impl Parser {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, Error> {
        Err(Error {
            at: self.i,
            msg: msg.into(),
        })
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn alt(&mut self) -> Result<Node, Error> {
        let mut alts = vec![self.seq()?];
        while self.peek() == Some('|') {
            self.i += 1;
            alts.push(self.seq()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one alternative")
        } else {
            Node::Alt(alts)
        })
    }

    fn seq(&mut self) -> Result<Node, Error> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            items.push(self.quantified(atom)?);
        }
        Ok(Node::Seq(items))
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let text: String = self.s[start..self.i].iter().collect();
        text.parse().ok()
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, Error> {
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => {
                let save = self.i;
                self.i += 1;
                let Some(min) = self.number() else {
                    // not a quantifier: a literal brace, as in most engines
                    self.i = save;
                    return Ok(atom);
                };
                let max = if self.peek() == Some(',') {
                    self.i += 1;
                    if self.peek() == Some('}') {
                        None
                    } else {
                        match self.number() {
                            Some(m) => Some(m),
                            None => return self.err("expected a number or } in {n,m}"),
                        }
                    }
                } else {
                    Some(min)
                };
                if self.peek() != Some('}') {
                    return self.err("expected } to close {n,m}");
                }
                if max.is_some_and(|m| m < min) {
                    return self.err("in {n,m}, m is smaller than n");
                }
                (min, max)
            }
            _ => return Ok(atom),
        };
        if matches!(atom, Node::Start | Node::End) {
            return self.err("an anchor cannot be repeated");
        }
        self.i += 1;
        let greedy = if self.peek() == Some('?') {
            self.i += 1;
            false
        } else {
            true
        };
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return self.err("a quantifier cannot follow another");
        }
        Ok(Node::Repeat {
            inner: Box::new(atom),
            min,
            max,
            greedy,
        })
    }

    fn escape(&mut self) -> Result<Item, Error> {
        // self.i is just past the backslash
        let Some(c) = self.peek() else {
            return self.err("the pattern ends with a lone \\");
        };
        self.i += 1;
        Ok(match c {
            'd' => Item::Digit(true),
            'D' => Item::Digit(false),
            's' => Item::Space(true),
            'S' => Item::Space(false),
            'w' => Item::Word(true),
            'W' => Item::Word(false),
            't' => Item::Char('\t'),
            'n' => Item::Char('\n'),
            c if c.is_ascii_punctuation() || c == ' ' => Item::Char(c),
            c => {
                self.i -= 1;
                return self.err(format!(
                    "\\{c} is not supported (use \\d \\s \\w, or \\ before punctuation)"
                ));
            }
        })
    }

    fn class(&mut self) -> Result<Class, Error> {
        // self.i is just past '['
        let mut class = Class {
            negated: false,
            items: Vec::new(),
        };
        if self.peek() == Some('^') {
            class.negated = true;
            self.i += 1;
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return self.err("[ is not closed by ]");
            };
            if c == ']' && !first {
                self.i += 1;
                return Ok(class);
            }
            first = false;
            self.i += 1;
            let item = if c == '\\' {
                self.escape()?
            } else {
                Item::Char(c)
            };
            if let Item::Char(lo) = item {
                if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|&n| n != ']') {
                    self.i += 1;
                    let hc = self.peek().expect("checked above");
                    self.i += 1;
                    let hi = if hc == '\\' {
                        match self.escape()? {
                            Item::Char(h) => h,
                            _ => return self.err("a range cannot end with a class like \\d"),
                        }
                    } else {
                        hc
                    };
                    if hi < lo {
                        return self.err(format!("the range {lo}-{hi} is backwards"));
                    }
                    class.items.push(Item::Range(lo, hi));
                    continue;
                }
            }
            class.items.push(item);
        }
    }

    fn atom(&mut self) -> Result<Node, Error> {
        let c = self.peek().expect("caller checked");
        self.i += 1;
        Ok(match c {
            '.' => Node::Class(Class::one(Item::Any)),
            '^' => Node::Start,
            '$' => Node::End,
            '\\' => Node::Class(Class::one(self.escape()?)),
            '[' => Node::Class(self.class()?),
            '(' => {
                let capture = if self.peek() == Some('?') {
                    if self.s.get(self.i + 1) == Some(&':') {
                        self.i += 2;
                        false
                    } else {
                        return self.err("only (?: ) groups are supported, no lookaround or flags");
                    }
                } else {
                    true
                };
                let index = if capture {
                    self.groups += 1;
                    Some(self.groups)
                } else {
                    None
                };
                let inner = self.alt()?;
                if self.peek() != Some(')') {
                    return self.err("( is not closed by )");
                }
                self.i += 1;
                match index {
                    Some(k) => Node::Group(k, Box::new(inner)),
                    None => inner,
                }
            }
            '*' | '+' | '?' => {
                self.i -= 1;
                return self.err(format!("{c} has nothing to repeat"));
            }
            c => Node::Class(Class::one(Item::Char(c))),
        })
    }
}

type Caps = Vec<Option<(usize, usize)>>;

struct Matcher<'a> {
    text: &'a [char],
    steps: u64,
}

/// Backtracking gives up after this many steps on one line, so that a
/// pathological pattern cannot hang the sweep.
const STEP_LIMIT: u64 = 5_000_000;

impl Matcher<'_> {
    /// Matches `node` at `pos` and calls `k` with the end position; true
    /// when `k` (the rest of the pattern) accepted.
    fn m(
        &mut self,
        node: &Node,
        pos: usize,
        caps: &mut Caps,
        k: &mut dyn FnMut(&mut Self, usize, &mut Caps) -> bool,
    ) -> bool {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return false;
        }
        match node {
            Node::Class(c) => match self.text.get(pos) {
                Some(&ch) if c.matches(ch) => k(self, pos + 1, caps),
                _ => false,
            },
            Node::Start => pos == 0 && k(self, pos, caps),
            Node::End => pos == self.text.len() && k(self, pos, caps),
            Node::Seq(items) => self.seq(items, pos, caps, k),
            Node::Alt(alts) => alts.iter().any(|a| self.m(a, pos, caps, k)),
            Node::Group(idx, inner) => {
                let idx = *idx;
                self.m(inner, pos, caps, &mut |me, end, caps| {
                    let old = caps[idx];
                    caps[idx] = Some((pos, end));
                    if k(me, end, caps) {
                        true
                    } else {
                        caps[idx] = old;
                        false
                    }
                })
            }
            Node::Repeat {
                inner,
                min,
                max,
                greedy,
            } => self.rep(inner, *min, *max, *greedy, 0, pos, caps, k),
        }
    }

    fn seq(
        &mut self,
        items: &[Node],
        pos: usize,
        caps: &mut Caps,
        k: &mut dyn FnMut(&mut Self, usize, &mut Caps) -> bool,
    ) -> bool {
        match items.split_first() {
            None => k(self, pos, caps),
            Some((first, rest)) => self.m(first, pos, caps, &mut |me, p, caps| {
                me.seq(rest, p, caps, k)
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rep(
        &mut self,
        inner: &Node,
        min: usize,
        max: Option<usize>,
        greedy: bool,
        count: usize,
        pos: usize,
        caps: &mut Caps,
        k: &mut dyn FnMut(&mut Self, usize, &mut Caps) -> bool,
    ) -> bool {
        let can_more = max.is_none_or(|m| count < m);
        let more = |me: &mut Self,
                    caps: &mut Caps,
                    k: &mut dyn FnMut(&mut Self, usize, &mut Caps) -> bool| {
            can_more
                && me.m(inner, pos, caps, &mut |me, p, caps| {
                    // an iteration that consumed nothing cannot help: stop
                    // here instead of looping forever
                    if p == pos && count >= min {
                        return false;
                    }
                    me.rep(inner, min, max, greedy, count + 1, p, caps, k)
                })
        };
        // greedy: one more iteration first, then stop; lazy: the reverse.
        // `||` short-circuits, so the order of the operands is the point
        // (clippy takes the two branches for the same).
        #[allow(clippy::if_same_then_else)]
        if greedy {
            more(self, caps, k) || (count >= min && k(self, pos, caps))
        } else {
            (count >= min && k(self, pos, caps)) || more(self, caps, k)
        }
    }
}

impl Regex {
    pub fn new(pattern: &str) -> Result<Regex, Error> {
        let mut p = Parser {
            s: pattern.chars().collect(),
            i: 0,
            groups: 0,
        };
        let root = p.alt()?;
        if p.i < p.s.len() {
            return p.err(") has no matching (");
        }
        Ok(Regex {
            source: pattern.to_string(),
            root,
            groups: p.groups,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The leftmost match in `line`: its group 1 when the pattern has
    /// groups, else the whole match. `None` when nothing matches (or a
    /// group 1 that did not take part).
    pub fn capture(&self, line: &str) -> Option<String> {
        let text: Vec<char> = line.chars().collect();
        let mut m = Matcher {
            text: &text,
            steps: 0,
        };
        for start in 0..=text.len() {
            let mut caps: Caps = vec![None; self.groups + 1];
            let mut found: Option<Caps> = None;
            let ok = m.m(&self.root, start, &mut caps, &mut |_, end, caps| {
                let mut c = caps.clone();
                c[0] = Some((start, end));
                found = Some(c);
                true
            });
            if ok {
                let caps = found.expect("set on success");
                let (a, b) = caps[if self.groups > 0 { 1 } else { 0 }]?;
                return Some(text[a..b].iter().collect());
            }
            if m.steps > STEP_LIMIT {
                return None;
            }
        }
        None
    }

    /// The capture of the last line of `text` that matches.
    pub fn last_capture(&self, text: &str) -> Option<String> {
        text.lines().rev().find_map(|l| self.capture(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(p: &str, s: &str) -> Option<String> {
        Regex::new(p).unwrap().capture(s)
    }

    #[test]
    fn literals_and_groups() {
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
    }

    #[test]
    fn classes_and_quantifiers() {
        assert_eq!(cap(r"\d+", "ab 123 cd").as_deref(), Some("123"));
        assert_eq!(cap(r"[^ ]+$", "a b cde").as_deref(), Some("cde"));
        assert_eq!(cap(r"x{2,3}", "xxxxx").as_deref(), Some("xxx"));
        assert_eq!(cap(r"x{2}", "x"), None);
        assert_eq!(cap(r"a.*?b", "aXbYb").as_deref(), Some("aXb"));
        assert_eq!(cap(r"a.*b", "aXbYb").as_deref(), Some("aXbYb"));
        assert_eq!(
            cap(r"(\w+)@", "mail: user_1@host").as_deref(),
            Some("user_1")
        );
        assert_eq!(cap(r"[a-c-]+", "zz-ab-cz").as_deref(), Some("-ab-c"));
        assert_eq!(cap(r"colou?r", "color").as_deref(), Some("color"));
        assert_eq!(cap(r"\.", "a.b").as_deref(), Some("."));
        assert_eq!(
            cap(r"in ([0-9.]+) s", "2000 round trips in 0.0123 s (x)").as_deref(),
            Some("0.0123")
        );
    }

    #[test]
    fn alternation_and_backtracking() {
        assert_eq!(cap("(cat|dog)s", "hotdogs").as_deref(), Some("dog"));
        assert_eq!(cap("(a|ab)(c|bcd)", "abcd").as_deref(), Some("a"));
        assert_eq!(cap("(a*)*b", "aaab").as_deref(), Some("aaa"));
        assert_eq!(cap("(a*)*b", "aaaa"), None);
        assert_eq!(cap("^$", "").as_deref(), Some(""));
    }

    #[test]
    fn optional_group_that_did_not_take_part() {
        assert_eq!(cap("x(y)?z", "xz"), None);
    }

    #[test]
    fn last_line_wins() {
        let r = Regex::new(r"t=(\d+)").unwrap();
        assert_eq!(
            r.last_capture("t=1\nnoise\nt=2\nend\n").as_deref(),
            Some("2")
        );
        assert_eq!(r.last_capture("nothing"), None);
    }

    #[test]
    fn refused_patterns() {
        for p in [
            "(", "a)", "*a", "[abc", r"\1", "(?=a)", "a{3,1}", r"x\", "a**", "[z-a]",
        ] {
            assert!(Regex::new(p).is_err(), "{p:?} should be refused");
        }
        let e = Regex::new("(?=a)").unwrap_err();
        assert!(e.to_string().contains("lookaround"), "{e}");
    }

    #[test]
    fn pathological_pattern_gives_up() {
        let r = Regex::new("(a*)*(a*)*(a*)*c").unwrap();
        let s = "a".repeat(60);
        assert_eq!(r.capture(&s), None);
    }
}
