//! A map from MPI handles (request handles as integers) to small values:
//! open addressing with linear probing, Fibonacci hashing, and deletion by
//! backward shift (no tombstones, so a table that sees millions of inserts
//! and removals never degrades).
//!
//! The shim's light lane (`lifecycle::Table::track_light`) keeps one entry
//! per small nonblocking message here: an insert at the send or receive
//! and a removal at its completion. A general hash map cost ~40
//! instructions for each (hashbrown with a multiplicative hasher, its
//! entries of ~100 bytes moved in and out); this one probes one slot in
//! the common case.

/// A key of `HandleMap`: a handle's bits.
pub trait HandleKey: Copy + Eq {
    fn bits(self) -> u64;
}

impl HandleKey for usize {
    #[inline]
    fn bits(self) -> u64 {
        self as u64
    }
}

impl HandleKey for u64 {
    #[inline]
    fn bits(self) -> u64 {
        self
    }
}

impl HandleKey for u32 {
    #[inline]
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

/// Knuth's multiplicative constant (TAOCP vol. 3, §6.4): the product's high
/// bits are well mixed even for aligned pointers, whose low bits are zero.
const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

/// The smallest table allocated.
const MIN_SLOTS: usize = 16;

/// Keys are kept apart from values, as their bits: a probe reads only
/// the dense array of keys. A key whose bits are 0 marks a free slot, so
/// such a key is never entered (`insert_new` refuses it; no MPI handle of
/// a request is 0).
pub struct HandleMap<K, V> {
    /// A power of two in length (or empty); at most a quarter full, so
    /// that a probe or a removal's shift rarely passes a second entry.
    keys: Vec<u64>,
    vals: Vec<V>,
    len: usize,
    /// 64 less log2 of the number of slots: a hash's top bits index it.
    shift: u32,
    _k: std::marker::PhantomData<K>,
}

impl<K: HandleKey, V: Copy + Default> Default for HandleMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// A free slot's key.
const FREE: u64 = 0;

impl<K: HandleKey, V: Copy + Default> HandleMap<K, V> {
    pub const fn new() -> Self {
        HandleMap {
            keys: Vec::new(),
            vals: Vec::new(),
            len: 0,
            shift: 64,
            _k: std::marker::PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot where a probe for key bits `b` starts.
    #[inline(always)]
    fn home(&self, b: u64) -> usize {
        // The shift leaves at most log2(slots) bits: the value fits.
        usize::try_from(b.wrapping_mul(FIB) >> self.shift).unwrap_or(0)
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.keys.len().wrapping_sub(1)
    }

    /// The slot holding `k`.
    #[inline(always)]
    fn find(&self, k: K) -> Option<usize> {
        let b = k.bits();
        if self.len == 0 || b == FREE {
            return None;
        }
        let m = self.mask();
        let mut i = self.home(b);
        loop {
            match self.keys[i] {
                FREE => return None,
                x if x == b => return Some(i),
                _ => i = (i + 1) & m,
            }
        }
    }

    #[inline]
    pub fn contains(&self, k: K) -> bool {
        self.find(k).is_some()
    }

    #[inline]
    pub fn get(&self, k: K) -> Option<&V> {
        let i = self.find(k)?;
        Some(&self.vals[i])
    }

    #[inline]
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        let i = self.find(k)?;
        Some(&mut self.vals[i])
    }

    /// Enters `v` under `k` if `k` has no value yet; else `v` comes back
    /// and the map is unchanged (as it does for a key whose bits are 0).
    /// One probe, where `contains` and `insert` take two.
    #[inline(always)]
    pub fn insert_new(&mut self, k: K, v: V) -> Result<(), V> {
        let b = k.bits();
        if b == FREE {
            return Err(v);
        }
        if (self.len + 1) * 4 > self.keys.len() {
            self.grow();
        }
        let m = self.mask();
        let mut i = self.home(b);
        loop {
            match self.keys[i] {
                FREE => {
                    self.keys[i] = b;
                    self.vals[i] = v;
                    self.len += 1;
                    return Ok(());
                }
                x if x == b => return Err(v),
                _ => i = (i + 1) & m,
            }
        }
    }

    /// Enters `v` under `k`; the value `k` had, if any, comes back. A key
    /// whose bits are 0 is not entered: `v` comes back.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        if let Some(i) = self.find(k) {
            return Some(std::mem::replace(&mut self.vals[i], v));
        }
        self.insert_new(k, v).err()
    }

    /// Takes `k`'s value out. The entries after it in its run move back
    /// into the hole where their probe passes it, so that every entry stays
    /// reachable from its home slot without tombstones.
    #[inline(always)]
    pub fn remove(&mut self, k: K) -> Option<V> {
        let mut hole = self.find(k)?;
        let v = self.vals[hole];
        self.len -= 1;
        let m = self.mask();
        let mut j = (hole + 1) & m;
        loop {
            let kj = self.keys[j];
            if kj == FREE {
                break;
            }
            // The entry at j may fill the hole when the hole lies on its
            // probe path, i.e. no farther from its home than j is.
            if j.wrapping_sub(self.home(kj)) & m >= j.wrapping_sub(hole) & m {
                self.keys[hole] = kj;
                self.vals[hole] = self.vals[j];
                hole = j;
            }
            j = (j + 1) & m;
        }
        self.keys[hole] = FREE;
        Some(v)
    }

    /// The keys' bits, in no particular order.
    pub fn key_bits(&self) -> impl Iterator<Item = u64> + '_ {
        self.keys.iter().copied().filter(|&b| b != FREE)
    }

    #[cold]
    fn grow(&mut self) {
        let n = (self.keys.len() * 2).max(MIN_SLOTS);
        let keys = std::mem::replace(&mut self.keys, vec![FREE; n]);
        let vals = std::mem::replace(&mut self.vals, vec![V::default(); n]);
        self.shift = 64 - n.trailing_zeros();
        let m = n - 1;
        for (b, v) in keys.into_iter().zip(vals).filter(|(b, _)| *b != FREE) {
            let mut i = self.home(b);
            while self.keys[i] != FREE {
                i = (i + 1) & m;
            }
            self.keys[i] = b;
            self.vals[i] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn insert_get_remove() {
        let mut m = HandleMap::<usize, u32>::new();
        assert!(m.is_empty());
        assert_eq!(m.get(5), None);
        assert_eq!(m.remove(5), None);
        assert_eq!(m.insert(5, 50), None);
        assert_eq!(m.insert(6, 60), None);
        assert_eq!(m.insert(5, 55), Some(50));
        assert_eq!(m.len(), 2);
        assert_eq!(m.get(5), Some(&55));
        *m.get_mut(6).unwrap() += 1;
        assert_eq!(m.remove(6), Some(61));
        assert_eq!(m.remove(6), None);
        assert!(m.contains(5) && !m.contains(6));
        assert_eq!(m.key_bits().collect::<Vec<_>>(), vec![5]);
        // A key whose bits are 0 is never entered.
        assert_eq!(m.insert_new(0, 1), Err(1));
        assert_eq!(m.insert(0, 1), Some(1));
        assert!(!m.contains(0) && m.remove(0).is_none());
    }

    /// Against a reference map, under a long mix of inserts and removals
    /// of keys shaped like real handles: aligned pointers (Open MPI) and
    /// integers that differ in their low bits (MPICH), many colliding.
    #[test]
    fn agrees_with_a_hash_map_under_churn() {
        for shape in [|i: u64| 0x5555_0000_0000 + 64 * i, |i: u64| 0x2c00_0000 + i] {
            let mut m = HandleMap::<u64, u64>::new();
            let mut r = HashMap::new();
            // A fixed generator: the same sequence every run.
            let mut x: u64 = 0x1234_5678;
            for step in 0..200_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = shape(x % 300);
                if x.is_multiple_of(3) {
                    assert_eq!(m.remove(k), r.remove(&k), "step {step}");
                } else if x % 3 == 1 {
                    let fresh = !r.contains_key(&k);
                    assert_eq!(m.insert_new(k, step).is_ok(), fresh, "step {step}");
                    r.entry(k).or_insert(step);
                } else {
                    assert_eq!(m.insert(k, step), r.insert(k, step), "step {step}");
                }
                assert_eq!(m.len(), r.len());
            }
            for (k, v) in &r {
                assert_eq!(m.get(*k), Some(v));
            }
            let mut keys: Vec<u64> = m.key_bits().collect();
            keys.sort_unstable();
            let mut want: Vec<u64> = r.keys().copied().collect();
            want.sort_unstable();
            assert_eq!(keys, want);
        }
    }

    /// Never more than a quarter full: a probe always ends at an empty
    /// slot, soon.
    #[test]
    fn grows_before_a_quarter_full() {
        let mut m = HandleMap::<u32, ()>::new();
        for k in 1..1000 {
            if k % 2 == 0 {
                m.insert(k, ());
            } else {
                assert_eq!(m.insert_new(k, ()), Ok(()));
                assert_eq!(m.insert_new(k, ()), Err(()));
            }
            assert!(m.len() * 4 <= m.keys.len());
            assert!(m.keys.len().is_power_of_two());
        }
        for k in 1..1000 {
            assert!(m.contains(k));
        }
    }
}
