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

/// Payload bytes a slot holds beyond the header: the record and its stage
/// fill five cache lines exactly (asserted below), so that a mid slot's
/// tail continues the stage (`MidSlot`).
pub(super) const SLOT_PAYLOAD: usize = 250;

/// Payload bytes a mid slot holds beyond the header. Messages of 251 to
/// 4000 bytes took the general path, whose request table, pooled stage
/// and completion cost ~1600 instructions more per Sendrecv than the
/// light lane (2207 against 588 of the shim's own per exchange at 512 B
/// and 2 KiB, Open MPI 4.1, callgrind; session 42). On Open MPI 4000:
/// with the header, within what it moves by its eager protocol
/// (`OMPI_STAGED_MAX`, send.rs), as every staged send must be.
#[cfg(ompi)]
pub(super) const MID_PAYLOAD: usize = 4000;
/// On MPICH, which the shim stages up to `LOGGP_DIRECT_MIN` (16 KiB by
/// default): up to that, less the header. An exchange of 8 KiB through
/// the general path read 5.8 µs against 2.6 in a mid slot (native 1.6;
/// `scripts/bench-exchange.sh`, MPICH 4.0, 6 rounds; session 42).
#[cfg(not(ompi))]
pub(super) const MID_PAYLOAD: usize = 16 * 1024 - HDR;

/// Slots allocated at once (a chunk, never freed or moved).
const CHUNK: usize = 64;

/// Mid slots allocated at once (~64 KiB on Open MPI, ~260 KiB on MPICH).
const MID_CHUNK: usize = 16;

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
    /// A receive's capacity in bytes (at most `SLOT_PAYLOAD`, or
    /// `MID_PAYLOAD` in a mid slot).
    pub(super) cap: u32,
    /// A receive's slot (else a send's).
    pub(super) recv: bool,
    /// The head of a `MidSlot` (its stage runs on into the tail), from
    /// and back to the mid free list.
    mid: bool,
    /// Header and payload: what MPI sends from or receives into.
    pub(super) stage: [u8; HDR + SLOT_PAYLOAD],
}

/// No padding after the stage: a `MidSlot`'s tail follows it directly.
const _: () =
    assert!(std::mem::size_of::<Slot>() == std::mem::offset_of!(Slot, stage) + HDR + SLOT_PAYLOAD);

/// A slot whose stage holds `MID_PAYLOAD` bytes of payload: the record
/// and stage of a `Slot`, and the rest of the stage right behind them.
/// The light lane sees only its head (`SlotRef` points to it); the
/// stage's pointer (`SlotRef::ptr`), taken from the whole allocation's,
/// reaches into the tail.
#[repr(C, align(64))]
struct MidSlot {
    head: Slot,
    tail: [u8; MID_PAYLOAD - SLOT_PAYLOAD],
}

const _: () = assert!(std::mem::offset_of!(MidSlot, tail) == std::mem::size_of::<Slot>());

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

/// Every slot ever allocated, and the free ones, of both sizes.
#[derive(Default)]
pub(super) struct Slots {
    chunks: Vec<Box<[Slot]>>,
    free: Vec<SlotRef>,
    mid_chunks: Vec<Box<[MidSlot]>>,
    mid_free: Vec<SlotRef>,
}

/// A slot's record as `grow` and `grow_mid` leave it.
fn empty_slot(mid: bool) -> Slot {
    Slot {
        len: 0,
        buf: std::ptr::null_mut(),
        // SAFETY: a handle is a pointer or an integer: zero is a valid
        // (null) value of either.
        comm: unsafe { std::mem::zeroed() },
        complete_at: 0,
        cap: 0,
        recv: false,
        mid,
        stage: [0; HDR + SLOT_PAYLOAD],
    }
}

impl Slots {
    /// A free slot for `payload` bytes (at most `MID_PAYLOAD`). Inlined
    /// always: left to itself the compiler called it from `sendrecv`
    /// (+10 instructions a message).
    #[inline(always)]
    pub(super) fn take(&mut self, payload: usize) -> SlotRef {
        debug_assert!(payload <= MID_PAYLOAD);
        if payload <= SLOT_PAYLOAD {
            match self.free.pop() {
                Some(s) => s,
                None => self.grow(),
            }
        } else {
            match self.mid_free.pop() {
                Some(s) => s,
                None => self.grow_mid(),
            }
        }
    }

    /// A slot back to its free list, its request done with it.
    #[inline(always)]
    pub(super) fn give(&mut self, s: SlotRef) {
        // SAFETY: the caller's request owned the slot until now.
        if unsafe { (*s.0).mid } {
            self.mid_free.push(s);
        } else {
            self.free.push(s);
        }
    }

    #[cold]
    fn grow(&mut self) -> SlotRef {
        let mut chunk: Box<[Slot]> = (0..CHUNK).map(|_| empty_slot(false)).collect();
        let base = chunk.as_mut_ptr();
        // The boxed chunk's slots stay where they are when the box moves.
        self.chunks.push(chunk);
        for i in 1..CHUNK {
            // SAFETY: within the chunk.
            self.free.push(SlotRef(unsafe { base.add(i) }));
        }
        SlotRef(base)
    }

    #[cold]
    fn grow_mid(&mut self) -> SlotRef {
        let mut chunk: Box<[MidSlot]> = (0..MID_CHUNK)
            .map(|_| MidSlot {
                head: empty_slot(true),
                tail: [0; MID_PAYLOAD - SLOT_PAYLOAD],
            })
            .collect();
        let base = chunk.as_mut_ptr();
        self.mid_chunks.push(chunk);
        // The head is at offset 0: a pointer to it, cast from the whole
        // mid slot's, keeps the reach of the whole (the stage's tail).
        for i in 1..MID_CHUNK {
            // SAFETY: within the chunk.
            self.mid_free.push(SlotRef(unsafe { base.add(i) }.cast()));
        }
        SlotRef(base.cast())
    }
}

/// The largest message of the light lane: `MID_PAYLOAD`, or less where
/// `LOGGP_INLINE_MAX` is smaller (larger messages are not staged at all)
/// or `LOGGP_DIRECT_MIN` asks receives from that size to land in the
/// application's buffer (a struct datatype, not a slot); `SLOT_PAYLOAD`
/// at least, as before mid slots, up to `LOGGP_INLINE_MAX`.
pub(super) fn slot_max(inline_max: u64, direct_min: usize) -> usize {
    let inline = usize::try_from(inline_max).unwrap_or(usize::MAX);
    MID_PAYLOAD
        .min(direct_min.saturating_sub(1))
        .max(SLOT_PAYLOAD)
        .min(inline)
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
        let a = s.take(8);
        let first: Vec<SlotRef> = (0..CHUNK * 3).map(|_| s.take(SLOT_PAYLOAD)).collect();
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
        let b = s.take(1);
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

    /// A payload above `SLOT_PAYLOAD` gets a mid slot: its whole stage is
    /// writable and distinct from every other slot's, it goes back to the
    /// mid free list (not the small one), and small and mid slots never
    /// share memory.
    #[test]
    fn mid_slots_hold_their_payload_and_return_to_their_list() {
        let mut s = Slots::default();
        let small = s.take(SLOT_PAYLOAD);
        let mids: Vec<SlotRef> = (0..MID_CHUNK + 1)
            .map(|_| s.take(SLOT_PAYLOAD + 1))
            .collect();
        assert_eq!(s.mid_chunks.len(), 2, "a second mid chunk for the 17th");
        let stage = HDR + MID_PAYLOAD;
        let mark = |i: usize| u8::try_from(i + 1).expect("fewer than 255 mid slots");
        for (i, m) in mids.iter().enumerate() {
            // SAFETY: ours; MPI would write the whole stage of a receive.
            unsafe { std::ptr::write_bytes(m.ptr(), mark(i), stage) };
        }
        for (i, m) in mids.iter().enumerate() {
            // SAFETY: as above; reads back what was written.
            let bytes = unsafe { std::slice::from_raw_parts(m.ptr(), stage) };
            assert!(
                bytes.iter().all(|&b| b == mark(i)),
                "mid slot {i} overwritten"
            );
        }
        let mut spans: Vec<(usize, usize)> = mids
            .iter()
            .chain(std::iter::once(&small))
            .map(|m| (m.ptr() as usize, m.ptr() as usize + stage))
            .collect();
        spans.sort_unstable();
        // The small slot's span is taken as long as a mid one's: still
        // no overlap with a mid slot (they come from other chunks).
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "stages overlap");
        let m = mids[3];
        s.give(m);
        assert_ne!(s.take(SLOT_PAYLOAD), m, "a mid slot on the small list");
        assert_eq!(
            s.take(MID_PAYLOAD),
            m,
            "the mid slot given back is the next mid taken"
        );
        s.give(small);
        assert_eq!(s.take(0), small);
    }

    #[test]
    fn slot_max_keeps_inline_max_and_direct_min() {
        assert_eq!(slot_max(16 * 1024, 4096), MID_PAYLOAD.min(4095));
        assert_eq!(slot_max(16 * 1024, 16 * 1024), MID_PAYLOAD);
        assert_eq!(slot_max(16 * 1024, usize::MAX), MID_PAYLOAD);
        // A receive from LOGGP_DIRECT_MIN lands in the application's buffer.
        assert_eq!(slot_max(16 * 1024, 1024), 1023);
        // Below SLOT_PAYLOAD, LOGGP_DIRECT_MIN leaves the light lane as it was.
        assert_eq!(slot_max(16 * 1024, 100), SLOT_PAYLOAD);
        assert_eq!(slot_max(2048, 4096), 2048);
        assert_eq!(slot_max(64, 4096), 64);
        assert_eq!(slot_max(0, 4096), 0);
    }
}
