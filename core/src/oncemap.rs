//! A small write-once table from 64-bit keys to 64-bit values, shared by
//! threads without a lock: each slot is filled at most once and never
//! changes after, so a reader that finds its key finds that key's value.
//!
//! For facts that never change for a key, such as what a predefined MPI
//! datatype is (its size, whether it is one contiguous block): the shim
//! asks MPI once per handle instead of three queries per message. A key
//! hashes to one slot and, where another holds it, takes the next free
//! one within `PROBES` (linear probing: slots are never emptied, so a
//! look stops at the first empty one). Only a key whose `PROBES` slots
//! are all taken is not remembered, and its caller asks again. (Direct
//! mapping alone, as before, left a type whose slot another type held
//! unremembered for the whole run: which pair collides moves with where
//! the libraries are loaded, and an 8-byte `MPI_Sendrecv` of one such
//! run paid 176 instructions per call asking MPI.)

use std::sync::atomic::{AtomicU64, Ordering};

/// No key yet.
const EMPTY: u64 = 0;
/// A writer has claimed the slot and is storing its value.
const BUSY: u64 = u64::MAX;
/// How many slots from its own a key may take or be looked for in.
const PROBES: usize = 8;

pub struct OnceMap<const N: usize> {
    keys: [AtomicU64; N],
    values: [AtomicU64; N],
}

impl<const N: usize> Default for OnceMap<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> OnceMap<N> {
    pub const fn new() -> Self {
        OnceMap {
            keys: [const { AtomicU64::new(EMPTY) }; N],
            values: [const { AtomicU64::new(0) }; N],
        }
    }

    fn slot(key: u64) -> usize {
        // Fibonacci hashing (Knuth, TAOCP vol. 3, §6.4): the product's high
        // bits are well mixed even for aligned pointers.
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) as usize) % N
    }

    /// How many slots a key may take: `PROBES`, or all of a smaller
    /// table.
    const REACH: usize = if N < PROBES { N } else { PROBES };

    /// The value stored for `key`, if any. In line, its own slot; the
    /// others out of line.
    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<u64> {
        if key == EMPTY || key == BUSY || N == 0 {
            return None;
        }
        let i = Self::slot(key);
        // Acquire pairs with the Release that published the key after its
        // value.
        match self.keys[i].load(Ordering::Acquire) {
            k if k == key => Some(self.values[i].load(Ordering::Relaxed)),
            EMPTY => None,
            _ => self.get_further(key, i),
        }
    }

    /// `get` past the key's own slot `i`, which another key holds (or is
    /// being filled).
    #[cold]
    #[inline(never)]
    fn get_further(&self, key: u64, i: usize) -> Option<u64> {
        for j in 1..Self::REACH {
            let at = (i + j) % N;
            match self.keys[at].load(Ordering::Acquire) {
                k if k == key => return Some(self.values[at].load(Ordering::Relaxed)),
                EMPTY => return None,
                _ => {}
            }
        }
        None
    }

    /// Stores `value` for `key` in the first free slot of its `PROBES`,
    /// unless the key is there already; returns whether it did. A slot
    /// holds one key for the life of the table. (Two threads storing one
    /// key at once may both store it, in two slots, with its one value.)
    pub fn insert(&self, key: u64, value: u64) -> bool {
        if key == EMPTY || key == BUSY || N == 0 {
            return false;
        }
        let i = Self::slot(key);
        for j in 0..Self::REACH {
            let at = (i + j) % N;
            match self.keys[at].compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    self.values[at].store(value, Ordering::Relaxed);
                    self.keys[at].store(key, Ordering::Release);
                    return true;
                }
                Err(k) if k == key => return false,
                Err(_) => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn remembers_what_it_was_given() {
        let m: OnceMap<64> = OnceMap::new();
        assert_eq!(m.get(0x4c00_080b), None);
        assert!(m.insert(0x4c00_080b, 8));
        assert_eq!(m.get(0x4c00_080b), Some(8));
        // Write once: a second insert of the same key changes nothing.
        assert!(!m.insert(0x4c00_080b, 99));
        assert_eq!(m.get(0x4c00_080b), Some(8));
    }

    #[test]
    fn reserved_keys_are_never_stored() {
        let m: OnceMap<8> = OnceMap::new();
        assert!(!m.insert(0, 1));
        assert!(!m.insert(u64::MAX, 1));
        assert_eq!(m.get(0), None);
        assert_eq!(m.get(u64::MAX), None);
    }

    /// Keys of one slot, the first `a`.
    fn colliding<const N: usize>(a: u64, n: usize) -> Vec<u64> {
        (a..)
            .step_by(8)
            .filter(|&k| OnceMap::<N>::slot(k) == OnceMap::<N>::slot(a))
            .take(n)
            .collect()
    }

    #[test]
    fn colliding_keys_take_the_next_slots_and_never_get_anothers_value() {
        let m: OnceMap<16> = OnceMap::new();
        let keys = colliding::<16>(0x7f00_1000, PROBES + 1);
        for (i, &k) in keys.iter().take(PROBES).enumerate() {
            assert!(m.insert(k, i as u64 + 1), "key {i} of one slot");
        }
        // A ninth key of the slot finds its PROBES slots taken.
        assert!(!m.insert(keys[PROBES], 99));
        assert_eq!(m.get(keys[PROBES]), None);
        for (i, &k) in keys.iter().take(PROBES).enumerate() {
            assert_eq!(m.get(k), Some(i as u64 + 1));
            assert!(!m.insert(k, 77), "stored once");
        }
        // A key of another slot that the probing passed over is still found
        // in, or next to, its own.
        let other = (0x7f00_1000u64..)
            .step_by(8)
            .find(|&k| OnceMap::<16>::slot(k) == (OnceMap::<16>::slot(keys[0]) + 3) % 16)
            .unwrap();
        assert!(m.insert(other, 5));
        assert_eq!(m.get(other), Some(5));
    }

    #[test]
    fn a_small_table_probes_each_slot_once() {
        let m: OnceMap<4> = OnceMap::new();
        let keys = colliding::<4>(0x7f00_1000, 5);
        for &k in &keys[..4] {
            assert!(m.insert(k, k));
        }
        assert!(!m.insert(keys[4], 1));
        assert_eq!(m.get(keys[4]), None);
        for &k in &keys[..4] {
            assert_eq!(m.get(k), Some(k));
        }
    }

    #[test]
    fn aligned_pointers_are_all_remembered() {
        // Open MPI's predefined datatypes are structs in one array, some
        // hundred bytes apart, loaded wherever the library lands.
        for base in [0x7f3a_5c40_0000u64, 0x7f12_0000_1000, 0x5555_0000_0040] {
            let m: OnceMap<256> = OnceMap::new();
            for i in 0..48u64 {
                assert!(m.insert(base + i * 0x348, i), "type {i} at {base:#x}");
            }
            for i in 0..48u64 {
                assert_eq!(m.get(base + i * 0x348), Some(i));
            }
        }
    }

    #[test]
    fn racing_writers_never_show_a_mixed_entry() {
        // Many threads insert and read the same keys, each key's value
        // derived from the key: a reader must see its key's value or nothing.
        let m: Arc<OnceMap<16>> = Arc::new(OnceMap::new());
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || {
                    for round in 0..20_000u64 {
                        let key = 1 + (round * 7 + t) % 64;
                        m.insert(key, key * 1000 + 7);
                        if let Some(v) = m.get(key) {
                            assert_eq!(v, key * 1000 + 7);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
