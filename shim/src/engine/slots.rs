//! Staging slots: fixed records, each with room for a small message's
//! header and payload, at addresses that never move, for the light lane
//! (`lifecycle::Table::track_light`). A small nonblocking send is staged
//! into a slot and a small nonblocking receive lands in one; the table
//! keeps only a pointer to it (`SlotRef`), and the slot itself keeps the
//! rest of the request: where a receive's payload goes, its communicator,
//! a send's emulated completion. A slot is taken from a free list and
//! given back after completion: no allocation per message, and no
//! staging buffer moved from a pool into the request and back.

use super::*;

/// Payload bytes a slot holds beyond the header.
pub(super) const SLOT_PAYLOAD: usize = 224;

/// Slots allocated at once (a chunk, never freed or moved).
const CHUNK: usize = 64;

/// The record first and the stage right behind it, on a cache line of
/// its own: a compact 8-byte message (16 + 8 bytes) lies on the record's
/// line, so that a small send or receive touches one line of its slot,
/// not two (the stage's head and the record 256 bytes further). Under
/// callgrind's cache model of `bench/rate.c`'s receiver (Open MPI 4.1),
/// the shim's D1 misses per message were ~4, and the library's own rose
/// by ~6 over native with the shim's footprint beside its own.
#[repr(C, align(64))]
pub(super) struct Slot {
    /// Bytes of `stage` in use: a send's header and payload, a receive's
    /// header and capacity.
    pub(super) len: usize,
    /// A receive's buffer (the application's).
    pub(super) buf: *mut u8,
    /// The application's communicator (a truncation is raised on it).
    pub(super) comm: Comm,
    /// A send's emulated completion.
    pub(super) complete_at: u64,
    /// A receive's capacity in bytes (at most `SLOT_PAYLOAD`).
    pub(super) cap: u32,
    /// A receive's slot (else a send's).
    pub(super) recv: bool,
    /// Header and payload: what MPI sends from or receives into.
    pub(super) stage: [u8; HDR + SLOT_PAYLOAD],
}

/// The stage's offset in a slot: a compact message of 8 bytes of payload
/// ends within the slot's first cache line.
const _: () = assert!(std::mem::offset_of!(Slot, stage) + COMPACT + 8 <= 64);

/// A slot in use, as the request table keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SlotRef(pub(super) *mut Slot);

impl Default for SlotRef {
    /// No slot (the request table's free entries).
    fn default() -> Self {
        SlotRef(std::ptr::null_mut())
    }
}

// SAFETY: a slot belongs to one request at a time; the request table that
// holds the reference is touched only under the engine's lock.
unsafe impl Send for SlotRef {}

impl SlotRef {
    /// The slot's record.
    ///
    /// # Safety
    /// The slot must be in use by the caller's request (taken from `Slots`
    /// and not given back), and the reference not kept beyond that, nor
    /// two of them at once.
    #[inline(always)]
    pub(super) unsafe fn slot<'a>(self) -> &'a mut Slot {
        unsafe { &mut *self.0 }
    }

    /// The staged bytes in use.
    #[inline(always)]
    pub(super) fn ptr(self) -> *mut u8 {
        // SAFETY: a field's address; nothing is read.
        unsafe { std::ptr::addr_of_mut!((*self.0).stage).cast() }
    }
}

/// Every slot ever allocated, and the free ones.
#[derive(Default)]
pub(super) struct Slots {
    chunks: Vec<Box<[Slot]>>,
    free: Vec<SlotRef>,
}

impl Slots {
    /// A free slot.
    #[inline]
    pub(super) fn take(&mut self) -> SlotRef {
        match self.free.pop() {
            Some(s) => s,
            None => self.grow(),
        }
    }

    /// A slot back to the free list, its request done with it.
    #[inline]
    pub(super) fn give(&mut self, s: SlotRef) {
        self.free.push(s);
    }

    #[cold]
    fn grow(&mut self) -> SlotRef {
        let mut chunk: Box<[Slot]> = (0..CHUNK)
            .map(|_| Slot {
                len: 0,
                buf: std::ptr::null_mut(),
                // SAFETY: a handle is a pointer or an integer: zero is a
                // valid (null) value of either.
                comm: unsafe { std::mem::zeroed() },
                complete_at: 0,
                cap: 0,
                recv: false,
                stage: [0; HDR + SLOT_PAYLOAD],
            })
            .collect();
        let base = chunk.as_mut_ptr();
        // The boxed chunk's slots stay where they are when the box moves.
        self.chunks.push(chunk);
        for i in 1..CHUNK {
            // SAFETY: within the chunk.
            self.free.push(SlotRef(unsafe { base.add(i) }));
        }
        SlotRef(base)
    }
}

/// A staging buffer: a pooled vector, a slot (small messages of the
/// light lane, promoted to a general request: `LightData::promote`), or
/// a persistent receive's own buffer (`ptr`, `len` bytes), which the
/// request keeps for its life and which is never pooled.
pub(super) enum Stage {
    Heap(Vec<u8>),
    Slot(SlotRef),
    Fixed { ptr: *mut u8, len: usize },
}

/// No buffer (an empty vector), left behind by `std::mem::take`.
impl Default for Stage {
    fn default() -> Stage {
        Stage::Heap(Vec::new())
    }
}

impl Stage {
    #[inline]
    pub(super) fn as_ptr(&self) -> *const u8 {
        match self {
            Stage::Heap(v) => v.as_ptr(),
            Stage::Slot(s) => s.ptr(),
            Stage::Fixed { ptr, .. } => *ptr,
        }
    }

    #[inline]
    pub(super) fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Stage::Heap(v) => v.as_mut_ptr(),
            Stage::Slot(s) => s.ptr(),
            Stage::Fixed { ptr, .. } => *ptr,
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        match self {
            Stage::Heap(v) => v.len(),
            // SAFETY: the slot belongs to this stage's request.
            Stage::Slot(s) => unsafe { (*s.0).len },
            Stage::Fixed { len, .. } => *len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots are distinct while in use, come back from the free list, and
    /// never move when more are allocated (MPI may be writing into one).
    #[test]
    fn slots_are_distinct_reused_and_never_move() {
        let mut s = Slots::default();
        let a = s.take();
        let first: Vec<SlotRef> = (0..CHUNK * 3).map(|_| s.take()).collect();
        let mut all = first.clone();
        all.push(a);
        all.sort_by_key(|r| r.0 as usize);
        all.dedup();
        assert_eq!(all.len(), CHUNK * 3 + 1, "a slot handed out twice");
        // SAFETY: `a` is ours; writing its stage is what MPI would do.
        unsafe {
            a.slot().stage[0] = 7;
            a.slot().len = 3;
        }
        let p = a.ptr();
        s.give(a);
        let b = s.take();
        assert_eq!(b, a, "the slot given back is the next taken");
        assert_eq!(b.ptr(), p);
        // SAFETY: as above.
        unsafe {
            assert_eq!(b.slot().stage[0], 7);
            assert_eq!(Stage::Slot(b).len(), 3);
        }
        for r in &first {
            assert!(s.chunks.iter().any(|c| {
                let base = c.as_ptr() as usize;
                let at = r.0 as usize;
                at >= base && at < base + CHUNK * std::mem::size_of::<Slot>()
            }));
        }
    }
}
