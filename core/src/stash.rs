//! The probe stash: messages taken off the network early (a probe must see
//! a message only once it has virtually arrived, so the shim receives it to
//! read its departure time) and waiting for the receive that matches them.
//!
//! The rules are MPI's matching rules (MPI-4.0 §3.5, §3.8), on
//! communicator, source and tag with wildcards:
//! - a receive takes the oldest stashed message that matches it: messages
//!   from one source on one communicator are stashed in the order they were
//!   sent, so this keeps MPI's non-overtaking order;
//! - a probe at time `now` sees, per source, only the oldest matching
//!   message (it could not see a later one first), and of those the first
//!   (in stash order) that has arrived by `now`.
//!
//! Nothing here knows MPI: communicators are keys, wildcards are `None`.

/// Where a message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub comm: usize,
    pub source: i32,
    pub tag: i32,
}

/// What a receive or probe asks for; `None` is a wildcard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub comm: usize,
    pub source: Option<i32>,
    pub tag: Option<i32>,
}

impl Pattern {
    pub fn matches(&self, e: &Envelope) -> bool {
        self.comm == e.comm
            && self.source.is_none_or(|s| s == e.source)
            && self.tag.is_none_or(|t| t == e.tag)
    }
}

/// A stashed message: its envelope and its virtual arrival time.
pub trait Stashed {
    fn envelope(&self) -> &Envelope;
    fn arrival(&self) -> u64;
}

/// Stashed messages in the order they were taken off the network.
#[derive(Debug)]
pub struct Stash<T> {
    items: Vec<T>,
}

impl<T> Default for Stash<T> {
    fn default() -> Self {
        Stash { items: Vec::new() }
    }
}

impl<T: Stashed> Stash<T> {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i)
    }

    /// Stashes a message taken off the network (after every message taken
    /// before it).
    pub fn push(&mut self, m: T) {
        self.items.push(m);
    }

    /// Removes and returns the message a receive for `p` takes, if any.
    pub fn take_for_recv(&mut self, p: &Pattern) -> Option<T> {
        let i = self.items.iter().position(|m| p.matches(m.envelope()))?;
        Some(self.items.remove(i))
    }

    /// The message a probe for `p` at `now` reports, if any, with its index
    /// (for `remove`).
    pub fn find_for_probe(&self, p: &Pattern, now: u64) -> Option<(usize, &T)> {
        let mut blocked: Vec<i32> = Vec::new();
        for (i, m) in self.items.iter().enumerate() {
            let e = m.envelope();
            if !p.matches(e) || blocked.contains(&e.source) {
                continue;
            }
            if m.arrival() <= now {
                return Some((i, m));
            }
            // A later message from this source must not be seen first.
            blocked.push(e.source);
        }
        None
    }

    /// Removes the message at `i` (from `find_for_probe`).
    pub fn remove(&mut self, i: usize) -> T {
        self.items.remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct M {
        e: Envelope,
        a: u64,
        id: u32,
    }
    impl Stashed for M {
        fn envelope(&self) -> &Envelope {
            &self.e
        }
        fn arrival(&self) -> u64 {
            self.a
        }
    }

    fn m(comm: usize, source: i32, tag: i32, a: u64, id: u32) -> M {
        M {
            e: Envelope { comm, source, tag },
            a,
            id,
        }
    }
    fn pat(comm: usize, source: Option<i32>, tag: Option<i32>) -> Pattern {
        Pattern { comm, source, tag }
    }

    #[test]
    fn receives_take_the_oldest_match_per_pattern() {
        let mut s = Stash::default();
        s.push(m(1, 0, 5, 100, 1));
        s.push(m(1, 1, 5, 50, 2));
        s.push(m(1, 0, 6, 10, 3));
        s.push(m(1, 0, 5, 10, 4));
        s.push(m(2, 0, 5, 10, 5));
        // Non-overtaking: source 0 tag 5 gives 1 then 4, whatever arrived first.
        assert_eq!(s.take_for_recv(&pat(1, Some(0), Some(5))).unwrap().id, 1);
        // Wildcards: the oldest of any source/tag on the communicator.
        assert_eq!(s.take_for_recv(&pat(1, None, None)).unwrap().id, 2);
        assert_eq!(s.take_for_recv(&pat(1, Some(0), None)).unwrap().id, 3);
        assert_eq!(s.take_for_recv(&pat(1, None, Some(5))).unwrap().id, 4);
        // Another communicator never matches.
        assert!(s.take_for_recv(&pat(1, None, None)).is_none());
        assert_eq!(s.take_for_recv(&pat(2, None, None)).unwrap().id, 5);
        assert!(s.is_empty());
    }

    #[test]
    fn probes_see_a_message_only_once_it_has_arrived() {
        let mut s = Stash::default();
        s.push(m(1, 0, 5, 100, 1));
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), Some(5)), 99)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), Some(5)), 100)
                .map(|(i, _)| i),
            Some(0)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, None, None), 100).map(|(i, _)| i),
            Some(0)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(1), None), 1000)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(3, None, None), 1000).map(|(i, _)| i),
            None
        );
    }

    #[test]
    fn probes_never_see_a_later_message_of_a_source_first() {
        // Source 0's first message arrives late (large L on a big message),
        // its second early: a probe must not report the second before the
        // first. Source 1's message, arrived, may be reported meanwhile.
        let mut s = Stash::default();
        s.push(m(1, 0, 5, 500, 1));
        s.push(m(1, 0, 5, 100, 2));
        s.push(m(1, 1, 5, 200, 3));
        assert_eq!(
            s.find_for_probe(&pat(1, None, None), 300).map(|(i, _)| i),
            Some(2)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), None), 300)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), None), 500)
                .map(|(i, _)| i),
            Some(0)
        );
        // A pattern that skips the first message (another tag) is not held
        // back by it.
        let mut t = Stash::default();
        t.push(m(1, 0, 6, 500, 1));
        t.push(m(1, 0, 5, 100, 2));
        assert_eq!(
            t.find_for_probe(&pat(1, Some(0), Some(5)), 300)
                .map(|(i, _)| i),
            Some(1)
        );
        assert_eq!(
            t.find_for_probe(&pat(1, Some(0), None), 300)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(t.remove(1).id, 2);
        assert_eq!(t.len(), 1);
    }
}
