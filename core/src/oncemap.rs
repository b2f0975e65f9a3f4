//! A small write-once table from 64-bit keys to 64-bit values, shared by
//! threads without a lock: each slot is filled at most once and never
//! changes after, so a reader that finds its key finds that key's value.
//!
//! For facts that never change for a key, such as what a predefined MPI
//! datatype is (its size, whether it is one contiguous block): the shim
//! asks MPI once per handle instead of three queries per message. Keys
//! hash to one slot each (direct mapping); a key whose slot is taken by
//! another is simply not remembered, and its caller asks again.

use std::sync::atomic::{AtomicU64, Ordering};

/// No key yet.
const EMPTY: u64 = 0;
/// A writer has claimed the slot and is storing its value.
const BUSY: u64 = u64::MAX;

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

    /// The value stored for `key`, if any.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        if key == EMPTY || key == BUSY || N == 0 {
            return None;
        }
        let i = Self::slot(key);
        // Acquire pairs with the Release that published the key after its
        // value.
        if self.keys[i].load(Ordering::Acquire) == key {
            Some(self.values[i].load(Ordering::Relaxed))
        } else {
            None
        }
    }

    /// Stores `value` for `key` if the key's slot is free; returns whether
    /// it did. A slot holds one key for the life of the table.
    pub fn insert(&self, key: u64, value: u64) -> bool {
        if key == EMPTY || key == BUSY || N == 0 {
            return false;
        }
        let i = Self::slot(key);
        if self.keys[i]
            .compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        self.values[i].store(value, Ordering::Relaxed);
        self.keys[i].store(key, Ordering::Release);
        true
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

    #[test]
    fn a_colliding_key_is_not_remembered_and_never_gets_anothers_value() {
        let m: OnceMap<4> = OnceMap::new();
        // Find two keys of one slot.
        let a = 0x7f00_1000u64;
        let b = (a + 8..)
            .step_by(8)
            .find(|&k| OnceMap::<4>::slot(k) == OnceMap::<4>::slot(a))
            .unwrap();
        assert!(m.insert(a, 1));
        assert!(!m.insert(b, 2));
        assert_eq!(m.get(a), Some(1));
        assert_eq!(m.get(b), None);
    }

    #[test]
    fn aligned_pointers_spread_over_the_slots() {
        // Open MPI's predefined datatypes are structs in one array, some
        // hundred bytes apart: they must not all land in a few slots.
        let m: OnceMap<256> = OnceMap::new();
        let stored = (0..32u64)
            .filter(|i| m.insert(0x7f3a_5c40_0000 + i * 0x348, *i))
            .count();
        assert!(stored >= 28, "only {stored} of 32 stored");
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
