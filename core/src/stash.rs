//! The probe stash: messages taken off the network early (a probe must see
//! a message only once it has virtually arrived, so the shim receives it to
//! read its departure time) and waiting for the receive that matches them.
//!
//! The rules are MPI's matching rules (MPI-4.0 §3.5, §3.8), on
//! communicator, source and tag with wildcards:
//! - a receive takes the oldest stashed message that matches it: of the
//!   first match's source, the one its sender sent first (`seq`: of two
//!   messages of one source, the one sent first has the earlier; the
//!   sender's count of messages from the header, or where headers carry
//!   none, the order the shim took them off the network in, which it
//!   keeps to send order there, `Engine::pull`). Stash order is not send
//!   order: a probe for a specific tag may take a message past older ones
//!   of other tags, which stay inside MPI;
//! - a probe at time `now` sees, per source, only the oldest matching
//!   message (it could not see a later one first), and of those the first
//!   (in stash order) that has arrived by `now`;
//! - a receive or probe with a wildcard tag may match an older message that
//!   MPI still holds from the stashed match's source (`Pattern::unsure`):
//!   the shim first takes that source's oldest message inside MPI into the
//!   stash (`source_to_check`) when it may be older (`may_be_older`, from
//!   its tag), then the rules above decide. With a specific
//!   tag this cannot happen: the probe that stashed a match would have
//!   found the older one first (MPI matches one source's messages in order).
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

    /// Whether a stashed match may be younger than a matching message MPI
    /// still holds from the same source (a wildcard tag: see the module).
    pub fn unsure(&self) -> bool {
        self.tag.is_none()
    }
}

/// Whether sequence number `a` was sent before `b`, by their low 24 bits
/// (all that the shim's compact header carries), wrapping: the two lie
/// less than 2^23 messages apart.
pub fn sent_before(a: u32, b: u32) -> bool {
    ((a.wrapping_sub(b) << 8) as i32) < 0
}

/// A tag's bit in `Stash::tag_bits` (tags alike modulo 64 share one).
pub fn tag_bit(tag: i32) -> u64 {
    1 << (tag as u32 & 63)
}

/// A stashed message: its envelope and its virtual arrival time.
pub trait Stashed {
    fn envelope(&self) -> &Envelope;
    fn arrival(&self) -> u64;
    /// The sender's sequence number: of two messages from one sender, the
    /// one sent first has the earlier (`sent_before`).
    fn seq(&self) -> u32;
}

/// Stashed messages in the order they were taken off the network.
#[derive(Debug)]
pub struct Stash<T> {
    items: Vec<T>,
    /// `tag_bits`.
    bits: u64,
}

impl<T> Default for Stash<T> {
    fn default() -> Self {
        Stash {
            items: Vec::new(),
            bits: 0,
        }
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

    /// A superset of the stashed messages' `tag_bit`s: a receive for a
    /// specific tag whose bit is not in it has no match here (nor a source
    /// to check: `source_to_check`), and need not look. Bits are added by
    /// `push` and cleared only when a push finds the stash empty, so that
    /// taking a message out costs nothing here.
    pub fn tag_bits(&self) -> u64 {
        self.bits
    }

    /// Stashes a message taken off the network (after every message taken
    /// before it).
    pub fn push(&mut self, m: T) {
        let bit = tag_bit(m.envelope().tag);
        self.bits = if self.items.is_empty() {
            bit
        } else {
            self.bits | bit
        };
        self.items.push(m);
    }

    /// Before a receive for `p` takes from the stash: the source whose
    /// oldest message inside MPI must join the stash first, because it may
    /// be older than the stashed match (`Pattern::unsure`).
    pub fn source_to_check(&self, p: &Pattern) -> Option<i32> {
        if !p.unsure() {
            return None;
        }
        let m = self.items.iter().find(|m| p.matches(m.envelope()))?;
        Some(m.envelope().source)
    }

    /// Whether the oldest message MPI still holds from `source` on `comm`,
    /// of tag `tag`, may be older than what the stash holds from there: not
    /// when a stashed message from that source has that tag, since the
    /// probe that took it took the oldest of its tag, and MPI's came after
    /// it (and after every older stashed message of the source).
    pub fn may_be_older(&self, comm: usize, source: i32, tag: i32) -> bool {
        !self.items.iter().any(|m| {
            let e = m.envelope();
            e.comm == comm && e.source == source && e.tag == tag
        })
    }

    /// The index of the oldest stashed match of `p` from `source`, whose
    /// first match in stash order is at `first` (the first among equal
    /// sequence numbers). Where every source's messages were stashed in
    /// the order sent (`in_order`: the engine's drain in a job of tiny
    /// headers, which numbers them as it takes them), that is the one at
    /// `first`, and nothing is scanned (a probe of the last of a burst
    /// of 16 then had each of the 16 receives scan the rest: ~190 of the
    /// shim's instructions per message, `OP=g scripts/bench-instr-coll.sh`).
    fn oldest_of(&self, p: &Pattern, source: i32, first: usize, in_order: bool) -> usize {
        if in_order {
            return first;
        }
        let mut best = first;
        for (i, m) in self.items.iter().enumerate().skip(first + 1) {
            let e = m.envelope();
            if e.source != source || !p.matches(e) {
                continue;
            }
            if sent_before(m.seq(), self.items[best].seq()) {
                best = i;
            }
        }
        best
    }

    /// Removes and returns the message a receive for `p` takes, if any
    /// (`in_order`: see `oldest_of`).
    pub fn take_for_recv(&mut self, p: &Pattern, in_order: bool) -> Option<T> {
        let f = self.items.iter().position(|m| p.matches(m.envelope()))?;
        let i = self.oldest_of(p, self.items[f].envelope().source, f, in_order);
        Some(self.items.remove(i))
    }

    /// The message a probe for `p` at `now` reports, if any, with its index
    /// (for `remove`; `in_order`: see `oldest_of`).
    pub fn find_for_probe(&self, p: &Pattern, now: u64, in_order: bool) -> Option<(usize, &T)> {
        for (k, m) in self.items.iter().enumerate() {
            let e = m.envelope();
            // Each source once, at its first match (a scan of those before
            // rather than a list of sources seen: no allocation per probe).
            if !p.matches(e)
                || self.items[..k].iter().any(|b| {
                    let f = b.envelope();
                    f.source == e.source && p.matches(f)
                })
            {
                continue;
            }
            // Only the source's oldest match may be seen.
            let i = self.oldest_of(p, e.source, k, in_order);
            let head = &self.items[i];
            if head.arrival() <= now {
                return Some((i, head));
            }
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
        seq: u32,
    }
    impl Stashed for M {
        fn envelope(&self) -> &Envelope {
            &self.e
        }
        fn arrival(&self) -> u64 {
            self.a
        }
        fn seq(&self) -> u32 {
            self.seq
        }
    }

    /// A message stashed in send order (`seq` = `id`).
    fn m(comm: usize, source: i32, tag: i32, a: u64, id: u32) -> M {
        ms(comm, source, tag, a, id, id)
    }
    fn ms(comm: usize, source: i32, tag: i32, a: u64, id: u32, seq: u32) -> M {
        M {
            e: Envelope { comm, source, tag },
            a,
            id,
            seq,
        }
    }
    fn pat(comm: usize, source: Option<i32>, tag: Option<i32>) -> Pattern {
        Pattern { comm, source, tag }
    }

    /// Stashed in each source's send order, the first match is the
    /// oldest: `in_order` answers as the scan does, for receives and
    /// probes with and without wildcards.
    #[test]
    fn in_send_order_the_first_match_is_the_oldest() {
        let fill = || {
            let mut s = Stash::default();
            for id in 0..24u32 {
                let (source, tag) = ((id % 3) as i32 % 2, 5 + (id % 4) as i32);
                s.push(m(
                    1 + (id % 5 == 4) as usize,
                    source,
                    tag,
                    u64::from(id) * 10,
                    id,
                ));
            }
            s
        };
        let (mut scan, mut short) = (fill(), fill());
        let pats = [
            pat(1, Some(0), Some(6)),
            pat(1, None, Some(5)),
            pat(1, Some(1), None),
            pat(2, None, None),
            pat(1, None, None),
            pat(1, Some(0), Some(8)),
        ];
        for k in 0..40 {
            let p = pats[k % pats.len()];
            let now = 10 * k as u64;
            assert_eq!(
                scan.find_for_probe(&p, now, false).map(|(i, m)| (i, m.id)),
                short.find_for_probe(&p, now, true).map(|(i, m)| (i, m.id)),
                "probe {k}"
            );
            assert_eq!(
                scan.take_for_recv(&p, false).map(|m| m.id),
                short.take_for_recv(&p, true).map(|m| m.id),
                "receive {k}"
            );
        }
        assert!(scan.is_empty() && short.is_empty());
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
        assert_eq!(
            s.take_for_recv(&pat(1, Some(0), Some(5)), false)
                .unwrap()
                .id,
            1
        );
        // Wildcards: the oldest of any source/tag on the communicator.
        assert_eq!(s.take_for_recv(&pat(1, None, None), false).unwrap().id, 2);
        assert_eq!(
            s.take_for_recv(&pat(1, Some(0), None), false).unwrap().id,
            3
        );
        assert_eq!(
            s.take_for_recv(&pat(1, None, Some(5)), false).unwrap().id,
            4
        );
        // Another communicator never matches.
        assert!(s.take_for_recv(&pat(1, None, None), false).is_none());
        assert_eq!(s.take_for_recv(&pat(2, None, None), false).unwrap().id, 5);
        assert!(s.is_empty());
    }

    #[test]
    fn tag_bits_cover_every_stashed_tag() {
        let mut s = Stash::default();
        assert_eq!(s.tag_bits(), 0);
        s.push(m(1, 0, 15, 10, 1));
        s.push(m(1, 1, 70, 10, 2)); // 70 = 6 mod 64
        s.push(m(2, 0, 15, 10, 3));
        assert_eq!(s.tag_bits(), tag_bit(15) | tag_bit(6));
        assert_eq!(s.tag_bits() & tag_bit(0), 0);
        // Taking leaves the bits (a superset)...
        assert_eq!(
            s.take_for_recv(&pat(1, None, Some(70)), false).unwrap().id,
            2
        );
        assert_eq!(s.tag_bits(), tag_bit(15) | tag_bit(6));
        // ...and the other messages keep theirs, whatever is taken.
        for i in 0..s.len() {
            let t = s.get(i).unwrap().e.tag;
            assert_ne!(s.tag_bits() & tag_bit(t), 0, "tag {t}");
        }
        assert_eq!(
            s.take_for_recv(&pat(1, Some(0), Some(15)), false)
                .unwrap()
                .id,
            1
        );
        assert_eq!(s.take_for_recv(&pat(2, None, None), false).unwrap().id, 3);
        // A push into the emptied stash starts over.
        s.push(m(1, 0, -1, 10, 4));
        assert_eq!(s.tag_bits(), tag_bit(-1));
        s.push(m(1, 0, 63, 10, 5));
        assert_eq!(s.tag_bits(), tag_bit(63));
        s.push(m(1, 0, 0, 10, 6));
        assert_eq!(s.tag_bits(), tag_bit(63) | tag_bit(0));
    }

    #[test]
    fn probes_see_a_message_only_once_it_has_arrived() {
        let mut s = Stash::default();
        s.push(m(1, 0, 5, 100, 1));
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), Some(5)), 99, false)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), Some(5)), 100, false)
                .map(|(i, _)| i),
            Some(0)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, None, None), 100, false)
                .map(|(i, _)| i),
            Some(0)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(1), None), 1000, false)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(3, None, None), 1000, false)
                .map(|(i, _)| i),
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
            s.find_for_probe(&pat(1, None, None), 300, false)
                .map(|(i, _)| i),
            Some(2)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), None), 300, false)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), None), 500, false)
                .map(|(i, _)| i),
            Some(0)
        );
        // A pattern that skips the first message (another tag) is not held
        // back by it.
        let mut t = Stash::default();
        t.push(m(1, 0, 6, 500, 1));
        t.push(m(1, 0, 5, 100, 2));
        assert_eq!(
            t.find_for_probe(&pat(1, Some(0), Some(5)), 300, false)
                .map(|(i, _)| i),
            Some(1)
        );
        assert_eq!(
            t.find_for_probe(&pat(1, Some(0), None), 300, false)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(t.remove(1).id, 2);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(sent_before(1, 2));
        assert!(!sent_before(2, 1));
        assert!(!sent_before(2, 2));
        assert!(sent_before(u32::MAX, 0));
        assert!(!sent_before(0, u32::MAX));
        // Only the low 24 bits count: a compact header's 0xFF_FFFF comes
        // just before a full header's 0x0100_0000.
        assert!(sent_before(0x00FF_FFFF, 0x0100_0000));
        assert!(sent_before(0x00FF_FFFF, 0x7700_0000));
        assert!(!sent_before(0x0100_0001, 0x00FF_FFFF));
        assert!(!sent_before(0x0500_0007, 0x0000_0007));
    }

    #[test]
    fn only_wildcard_tags_check_inside_mpi() {
        let mut s = Stash::default();
        assert_eq!(s.source_to_check(&pat(1, None, None)), None);
        s.push(m(1, 3, 702, 0, 1));
        // A specific tag: the stashed match is the oldest of its tag.
        assert_eq!(s.source_to_check(&pat(1, Some(3), Some(702))), None);
        assert_eq!(s.source_to_check(&pat(1, None, Some(702))), None);
        // A wildcard tag: source 3 may hold an older message of another tag.
        assert_eq!(s.source_to_check(&pat(1, Some(3), None)), Some(3));
        assert_eq!(s.source_to_check(&pat(1, None, None)), Some(3));
        // No match, nothing to check.
        assert_eq!(s.source_to_check(&pat(1, Some(4), None)), None);
        assert_eq!(s.source_to_check(&pat(2, None, None)), None);
        // MPI's oldest of source 3 has tag 701: maybe older than the stashed
        // 702. With tag 702 it came after the stashed one.
        assert!(s.may_be_older(1, 3, 701));
        assert!(!s.may_be_older(1, 3, 702));
        assert!(s.may_be_older(2, 3, 702));
        assert!(s.may_be_older(1, 4, 702));
    }

    #[test]
    fn receives_follow_send_order_not_stash_order() {
        // Source 0 sent tags 700, 701, 702 (seq 10, 11, 12); probes for 702
        // then 701 stashed those first; a wildcard receive then pulled 700.
        let mut s = Stash::default();
        s.push(ms(1, 0, 702, 0, 1, 12));
        s.push(ms(1, 1, 5, 0, 2, 99));
        s.push(ms(1, 0, 701, 0, 3, 11));
        s.push(ms(1, 0, 700, 0, 4, 10));
        assert_eq!(
            s.take_for_recv(&pat(1, Some(0), None), false).unwrap().id,
            4
        );
        // ANY_SOURCE: the first match's source (0), its oldest message.
        assert_eq!(s.take_for_recv(&pat(1, None, None), false).unwrap().id, 3);
        // A specific tag is not held back by other tags.
        assert_eq!(
            s.take_for_recv(&pat(1, None, Some(5)), false).unwrap().id,
            2
        );
        assert_eq!(s.take_for_recv(&pat(1, None, None), false).unwrap().id, 1);
        assert!(s.is_empty());
        // Across the wrap of the sender's count.
        s.push(ms(1, 0, 1, 0, 1, 0));
        s.push(ms(1, 0, 2, 0, 2, u32::MAX));
        assert_eq!(s.take_for_recv(&pat(1, None, None), false).unwrap().id, 2);
    }

    #[test]
    fn probes_see_a_source_oldest_message_by_send_order() {
        let mut s = Stash::default();
        s.push(ms(1, 0, 702, 100, 1, 12));
        s.push(ms(1, 0, 700, 300, 2, 10));
        s.push(ms(1, 1, 5, 200, 3, 1));
        // Tag 700 was sent first: until it arrives, source 0 shows nothing.
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), None), 250, false)
                .map(|(i, _)| i),
            None
        );
        assert_eq!(
            s.find_for_probe(&pat(1, None, None), 250, false)
                .map(|(i, _)| i),
            Some(2)
        );
        assert_eq!(
            s.find_for_probe(&pat(1, None, None), 300, false)
                .map(|(i, _)| i),
            Some(1)
        );
        // A probe for tag 702 itself sees it.
        assert_eq!(
            s.find_for_probe(&pat(1, Some(0), Some(702)), 250, false)
                .map(|(i, _)| i),
            Some(0)
        );
    }
}
