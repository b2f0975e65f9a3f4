//! The wire format: the 32-byte header that travels inside every
//! application message, and the two encodings (staged copy, zero-copy
//! struct datatype) of a message with its header.

use super::*;

pub const HDR: usize = 32;
pub(super) const HDR_INT: c_int = 32;
pub(super) const MAGIC: u32 = 0x4C47_5021; // "LGP!"
/// A header sent alone: the payload follows as a message of its own on
/// `Engine::payload_comm`, from the sender's MPI_COMM_WORLD rank (`src`),
/// tagged `payload_tag(seq)`, contiguous and without a header. A struct
/// datatype makes MPI take its non-contiguous path (a pack into its own
/// buffers), which on Open MPI 4.1 and MPICH 4.0 here moves large
/// messages at twice native bandwidth, and elsewhere slower: the emulated
/// machine at zero knobs would not be the native one.
pub(super) const MAGIC_SPLIT: u32 = 0x4C47_502B; // "LGP+"

/// The compact header: 16 bytes, before a payload of at most
/// `COMPACT_MAX` bytes without a varied L of its own, nor across hosts a
/// lag to tell (`Header::compact`). Its first two bytes, `MAGIC_COMPACT`, differ
/// from the full header's first two ("!P", "+P"); then the sender's rank
/// (24 bits), the low 24 bits of its sequence number, and `d`. Whole,
/// such a message is at most a full header's 32 bytes, so it lands inside
/// the header's room of any receive (a slot, a stage, a struct
/// datatype's header block). MPICH 4.0 here moves a 24-byte message
/// ~100 ns faster than a 32-byte one in most jobs (8 B of payload behind
/// a 32-byte header paid that on every half round trip; Open MPI 4.1's
/// fast size is 8 bytes of payload, which no header leaves).
pub const COMPACT: usize = 16;
pub(super) const COMPACT_MAX: usize = HDR - COMPACT;
/// `COMPACT` as MPI counts it.
pub(super) const COMPACT_INT: c_int = 16;
const _: () = assert!(COMPACT_INT as usize == COMPACT && HDR_INT as usize == HDR);
pub(super) const MAGIC_COMPACT: u16 = 0x502D; // "-P"
/// The tiny header: its two bytes, `MAGIC_TINY`, alone, before a payload
/// of at most `TINY_MAX` bytes, in a job where every sender and every
/// gate is idle (`Engine::tiny`): no departure, rank or sequence number
/// is read there (a probed message's order is the order it was taken
/// off the network, `Engine::pull`). Such a message is at most 10 bytes,
/// shorter than any other form, so its size tells it, and the magic
/// checks it. Open MPI 4.1's shared memory moves up to 10 bytes of
/// payload in its fast size (session 33: any longer header beside 8
/// bytes paid a step of ~20 % of its 8-byte message rate); behind the
/// compact header the shim's 8-byte rate there stood at 0.53–0.57×
/// native, behind this one 0.84–0.85× (`scripts/bench-compare.sh`, two
/// runs, session 53).
pub(super) const TINY: usize = 2;
pub(super) const TINY_MAX: usize = 8;
pub(super) const MAGIC_TINY: u16 = 0x502A; // "*P"
/// Ranks and sequence numbers a compact header holds (24 bits).
pub(super) const COMPACT_MASK: u32 = 0x00FF_FFFF;

/// Payload tags 1 ..= this on `Engine::payload_comm` belong to persistent
/// split sends, one per request for its lifetime (`PTags`): a persistent
/// request cannot change its tag from one Start to the next, as a
/// nonblocking split send's does (`Header::payload_tag`). Where MPI's tag
/// bound leaves fewer than twice as many, none (persistent sends then go
/// by a struct datatype).
pub(super) const PERSISTENT_TAGS: u32 = 1024;
/// Where a split header's `l` carries a persistent send's payload tag
/// (its top 16 bits: L itself stays below 2^48 ns, 78 hours).
const PTAG_SHIFT: u32 = 48;
const L_MASK: u64 = (1 << PTAG_SHIFT) - 1;
const _: () = assert!(PERSISTENT_TAGS < 1 << (64 - PTAG_SHIFT));

/// The payload tags of this rank's persistent split sends
/// (1 ..= `PERSISTENT_TAGS`): one per request, given back when it is freed
/// inactive. One freed while active keeps its tag (its payload may still
/// be unmatched, and a second payload on that tag could be taken for it).
#[derive(Default)]
pub(super) struct PTags {
    used: u32,
    free: Vec<u32>,
}

impl PTags {
    /// A tag below `limit` (`persistent_tags`) no live request has.
    pub(super) fn take(&mut self, limit: u32) -> Option<u32> {
        if let Some(t) = self.free.pop() {
            return Some(t);
        }
        (self.used < limit).then(|| {
            self.used += 1;
            self.used
        })
    }
    pub(super) fn give(&mut self, t: u32) {
        self.free.push(t);
    }
}

/// The smallest standard or ready persistent send that goes split: its
/// payload goes synchronous (`request::PSplit`), and below this an MPI
/// may move a message eagerly (Open MPI 4.1's TCP transport up to 64 KiB
/// with its own header; its shared memory 4 KiB), so that a program
/// which counts on that buffering (unsafe by MPI's rules, but it runs
/// natively) would stall. A synchronous one goes split from
/// `LOGGP_INLINE_MAX`.
pub(super) const PSPLIT_MIN: u64 = 64 * 1024;

/// How many payload tags persistent sends have under a tag bound `tags`.
pub(super) const fn persistent_tags(tags: u32) -> u32 {
    if tags > 2 * PERSISTENT_TAGS {
        PERSISTENT_TAGS
    } else {
        0
    }
}

/// The piggyback.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    /// The magic (`MAGIC`, `MAGIC_SPLIT`; the low 32 bits, the first four
    /// bytes on the wire) and the sender's rank in MPI_COMM_WORLD (the high
    /// 32 bits: the receiver applies the knobs of the pair, targeting and
    /// `LOGGP_L=20us@inter`, without asking MPI): `magic()`, `src()`.
    /// One field, so that a header is built with one 8-byte store: as two
    /// 4-byte fields, the 8-byte load that copies them on (the compiler
    /// moves the pair as one) could not take its value from the two
    /// stores still in flight and waited for them to reach the cache,
    /// 64 % of MPI_Isend's cycles at zero knobs (`perf annotate` of
    /// bench/rate.c, sender, Open MPI 4.1 on this 2-core AMD EPYC host).
    head: u64,
    pub(super) d: u64,
    /// The added L of this message, drawn by the sender (`LOGGP_L_DIST`,
    /// `loggp_core::dist`) and raised so that it arrives no earlier than
    /// the message before it on its channel; unused while L is fixed.
    /// Its top 16 bits (`PTAG_SHIFT`) carry a persistent split send's
    /// payload tag (`Header::payload_tag`); read it with `l()`.
    pub(super) l: u64,
    /// How long before `d` the message was handed to MPI, ns (`d` lies
    /// later under g_s, G or a full send queue); `u32::MAX`: as long or
    /// longer. Across hosts the receiver learns the clocks' drift from
    /// the hand-off (`RecvGate::observe`).
    pub(super) lag: u32,
    /// The sender's count of messages sent (wrapping): of two messages
    /// from one sender, the earlier was sent first. A probe for one tag
    /// takes a message off the network past older ones of other tags; a
    /// wildcard receive then needs this to take the oldest
    /// (`loggp_core::stash`).
    pub(super) seq: u32,
}

// A header is sent and received from its own memory as `HDR` bytes (the
// struct datatype's header block, a persistent split send's header).
const _: () = assert!(std::mem::size_of::<Header>() == HDR);

/// `Header::head` of `magic` and `src`: in memory, `magic`'s four bytes
/// first (what a receiver reads as the magic at the message's start), on
/// either byte order.
#[inline(always)]
const fn head(magic: u32, src: u32) -> u64 {
    let (m, s) = (magic.to_ne_bytes(), src.to_ne_bytes());
    u64::from_ne_bytes([m[0], m[1], m[2], m[3], s[0], s[1], s[2], s[3]])
}

impl Header {
    /// The magic: `MAGIC`, `MAGIC_SPLIT`.
    #[inline(always)]
    pub(super) fn magic(&self) -> u32 {
        let b = self.head.to_ne_bytes();
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The sender's rank in MPI_COMM_WORLD.
    #[inline(always)]
    pub(super) fn src(&self) -> u32 {
        let b = self.head.to_ne_bytes();
        u32::from_ne_bytes([b[4], b[5], b[6], b[7]])
    }

    pub(super) fn set_magic(&mut self, magic: u32) {
        self.head = head(magic, self.src());
    }

    /// The header of a message departing at `dep`, the sender's `seq`th
    /// (`State::next_seq`).
    pub(super) fn new(dep: &loggp_core::Departure, src: c_int, l: u64, seq: u32) -> Header {
        Header {
            head: head(MAGIC, u32::try_from(src).unwrap_or(0)),
            // Below the top 16 bits, which only a persistent split send's
            // payload tag may fill: an L beyond 78 hours would read as one.
            l: l.min(L_MASK),
            lag: u32::try_from(dep.d.saturating_sub(dep.ready)).unwrap_or(u32::MAX),
            seq,
            // Across hosts: the job's reference time base, tagged with this
            // host (the receiver's gate turns it back, `loggp_core::clocks`).
            d: crate::clock::stamp(dep.d),
        }
    }

    /// A header to be filled at each start of a persistent send.
    pub(super) fn placeholder(src: c_int) -> Header {
        Header {
            head: head(MAGIC, u32::try_from(src).unwrap_or(0)),
            lag: u32::MAX,
            ..Header::default()
        }
    }
    /// The tag of this split message's payload on `Engine::payload_comm`:
    /// a persistent send's own (`set_ptag`, 1 ..= `PERSISTENT_TAGS`),
    /// else above those up to `tags`, from the sender's count of messages,
    /// so that payloads of one sender in flight together have distinct
    /// tags.
    pub(super) fn payload_tag(&self, tags: u32) -> c_int {
        let p = self.l >> PTAG_SHIFT;
        if p != 0 {
            return c_int::try_from(p).unwrap_or(1);
        }
        let below = persistent_tags(tags);
        c_int::try_from(1 + below + self.seq % (tags - below).max(1)).unwrap_or(1)
    }

    /// The added L (`l` without a persistent payload tag).
    #[inline(always)]
    pub(super) fn l(&self) -> u64 {
        self.l & L_MASK
    }

    /// Marks a persistent split send's header with its payload's tag
    /// (1 ..= `PERSISTENT_TAGS`).
    pub(super) fn set_ptag(&mut self, ptag: u32) {
        self.l = self.l & L_MASK | u64::from(ptag) << PTAG_SHIFT;
    }
    pub(super) fn write_to(&self, p: *mut u8) {
        // SAFETY: callers pass a buffer of at least HDR bytes.
        unsafe { p.cast::<Header>().write_unaligned(*self) }
    }
    /// The header at `p`, in any form (a compact or tiny one as its full
    /// equivalent: `magic` MAGIC, no L of its own, no lag; a tiny one's
    /// rank, sequence number and departure 0).
    #[inline(always)]
    pub(super) fn read_from(p: *const u8) -> Header {
        // SAFETY: callers pass a buffer of at least HDR bytes, or of a
        // compact header's 16 or a tiny one's 2 (`hdr_len`).
        unsafe {
            if is_compact(p) {
                let w = p.cast::<u64>().read_unaligned();
                return Header {
                    head: head(MAGIC, field24(w >> 16)),
                    seq: field24(w >> 40),
                    d: p.add(8).cast::<u64>().read_unaligned(),
                    l: 0,
                    lag: 0,
                };
            }
            if is_tiny(p) {
                return Header {
                    head: head(MAGIC, 0),
                    ..Header::default()
                };
            }
            p.cast::<Header>().read_unaligned()
        }
    }

    /// Whether this header may travel compact: nothing in it that the
    /// compact form leaves out. `lag` matters only where it must travel
    /// (`keep_lag`: across hosts, or where `g_s` or `G` may put `d` after
    /// the hand-off; `Engine::keep_lag`).
    #[inline(always)]
    pub(super) fn compact(&self, keep_lag: bool) -> bool {
        self.l == 0 && (self.lag == 0 || !keep_lag) && self.src() <= COMPACT_MASK
    }

    /// Writes the compact form (`compact` must hold): 16 bytes at `p`.
    #[inline(always)]
    pub(super) fn write_compact_to(&self, p: *mut u8) {
        let w = u64::from(MAGIC_COMPACT)
            | u64::from(self.src()) << 16
            | u64::from(self.seq & COMPACT_MASK) << 40;
        // SAFETY: callers pass a buffer of at least COMPACT bytes.
        unsafe {
            p.cast::<u64>().write_unaligned(w);
            p.add(8).cast::<u64>().write_unaligned(self.d);
        }
    }
}

/// The first word of the compact header of rank `src` (`COMPACT_MASK` at
/// most) without its sequence number (`write_compact`).
pub(super) fn compact_head(src: u32) -> u64 {
    u64::from(MAGIC_COMPACT) | u64::from(src) << 16
}

/// Writes at `p` the compact header of the `seq`th message of the sender
/// whose `compact_head` is `head`, departed at `d` (0 for an idle sender;
/// else the departure's stamp, `clock::stamp`): what `Header::new` and
/// `Header::write_compact_to` write there, from four values.
#[inline(always)]
pub(super) unsafe fn write_compact(p: *mut u8, head: u64, seq: u32, d: u64) {
    // SAFETY: callers pass a buffer of at least COMPACT bytes.
    unsafe {
        p.cast::<u64>()
            .write_unaligned(head | u64::from(seq & COMPACT_MASK) << 40);
        p.add(8).cast::<u64>().write_unaligned(d);
    }
}

/// Writes the tiny header at `p` (`TINY` bytes).
#[inline(always)]
pub(super) unsafe fn write_tiny(p: *mut u8) {
    // SAFETY: callers pass a buffer of at least TINY bytes.
    unsafe { p.cast::<u16>().write_unaligned(MAGIC_TINY) }
}

/// The low 24 bits of `w`.
#[inline(always)]
fn field24(w: u64) -> u32 {
    u32::try_from(w & u64::from(COMPACT_MASK)).unwrap_or(0)
}

/// Whether the header at `p` is tiny (its first two bytes).
#[inline(always)]
pub(super) unsafe fn is_tiny(p: *const u8) -> bool {
    unsafe { p.cast::<u16>().read_unaligned() == MAGIC_TINY }
}

/// Whether the header at `p` is compact (its first two bytes).
#[inline(always)]
unsafe fn is_compact(p: *const u8) -> bool {
    unsafe { p.cast::<u16>().read_unaligned() == MAGIC_COMPACT }
}

/// The length of the header that begins the `got` bytes received at `p`
/// (read only when `got` is a compact or tiny message's size): `COMPACT`
/// for a compact one, `TINY` for a tiny one, else `HDR` (also for what
/// is no message of the shim's: the callers' checks of size and magic
/// then refuse it).
#[inline(always)]
pub(super) unsafe fn hdr_len(p: *const u8, got: usize) -> usize {
    unsafe {
        if (COMPACT..=HDR).contains(&got) && is_compact(p) {
            COMPACT
        } else if (TINY..=TINY + TINY_MAX).contains(&got) && is_tiny(p) {
            TINY
        } else {
            HDR
        }
    }
}

/// Copies `n` bytes: up to 32 with unaligned word moves in line, more with
/// memcpy. A staged small message is a few bytes, and a call into libc's
/// memcpy (its dispatch included) cost 50 instructions per copy, one on
/// each side of every message.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes, not overlapping.
#[inline(always)]
pub(super) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    unsafe {
        unsafe fn word(src: *const u8, dst: *mut u8, at: usize) {
            unsafe {
                dst.add(at)
                    .cast::<u64>()
                    .write_unaligned(src.add(at).cast::<u64>().read_unaligned());
            }
        }
        match n {
            0 => {}
            1..=7 => {
                for i in 0..n {
                    *dst.add(i) = *src.add(i);
                }
            }
            // Two or four words, the last ones ending at n (overlapping the
            // first where n is not a multiple of 8).
            8..=16 => {
                word(src, dst, 0);
                word(src, dst, n - 8);
            }
            17..=32 => {
                word(src, dst, 0);
                word(src, dst, 8);
                word(src, dst, n - 16);
                word(src, dst, n - 8);
            }
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

/// Where a receive's header (and, when staged, its payload) lands.
pub(super) enum Wire {
    /// Header and payload land in `stage`; the payload is then copied to
    /// `buf`, at most `cap` bytes. Only receive types whose elements form
    /// one contiguous block are staged: the copy needs nothing of the
    /// datatype, which the application may free while the receive is
    /// pending (MPI-4.0 §5.1.9), and it keeps every byte that arrived,
    /// partial elements included.
    Staged {
        stage: Stage,
        buf: *mut u8,
        cap: usize,
        placed: bool,
        /// The application's communicator (a payload's truncation is
        /// raised on it).
        comm: Comm,
    },
    /// Zero-copy: MPI itself places the payload with the user's datatype
    /// (`into`), or, when the header came alone (`MAGIC_SPLIT`), receives
    /// the payload into it as a second message (`split`).
    Struct {
        hdr: HdrMem,
        into: Landing,
        split: Split,
        comm: Comm,
    },
}

/// The receive's buffer, for the payload of a split message.
pub(super) enum Landing {
    /// One contiguous block of `bytes` at `buf`, received as MPI_BYTE.
    Bytes { buf: *mut c_void, bytes: c_int },
    /// `count` × `dt` at `buf`: the application's datatype, alive for the
    /// call (a blocking receive, a persistent request's duplicate), or
    /// the shim's own duplicate (`owned`, freed with this).
    Typed {
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        owned: bool,
    },
}

impl Landing {
    /// Buffer, count and datatype of the payload's receive.
    pub(super) fn args(&self, byte: Datatype) -> (*mut c_void, c_int, Datatype) {
        match *self {
            Landing::Bytes { buf, bytes } => (buf, bytes, byte),
            Landing::Typed { buf, count, dt, .. } => (buf, count, dt),
        }
    }
}

impl Drop for Landing {
    fn drop(&mut self) {
        if let Landing::Typed {
            dt, owned: true, ..
        } = self
        {
            // SAFETY: our own duplicate, used by no pending request: the
            // payload receive, if posted, has completed.
            unsafe { PMPI_Type_free(dt) };
        }
    }
}

/// Where the payload receive of a split message stands.
#[derive(Clone, Copy, Debug, Default)]
pub(super) enum Split {
    /// Not posted (no split header seen yet).
    #[default]
    Idle,
    /// Posted; the request is the shim's own.
    Posted(Request),
    /// Received: `bytes`, and MPI's return code (a truncation).
    Done { bytes: usize, rc: c_int },
}

impl Wire {
    /// The header that landed, either form (`Header::read_from`).
    pub(super) fn header(&self) -> Header {
        Header::read_from(self.header_ptr())
    }

    /// Where the header lands: its first bytes of a stage, or a struct
    /// datatype's header block (MPI writes that `Header` as bytes).
    fn header_ptr(&self) -> *const u8 {
        match self {
            Wire::Staged { stage, .. } => stage.as_ptr(),
            Wire::Struct { hdr, .. } => std::ptr::addr_of!(**hdr).cast(),
        }
    }

    /// Whether the `got` bytes that landed are a compact or tiny message
    /// (`COMPACT`, `TINY`): its payload then lies in the header's room,
    /// even in a struct datatype's header block, and
    /// `Engine::place_compact` moves it to the receive.
    pub(super) fn is_compact(&self, got: usize) -> bool {
        // SAFETY: a stage and a header block hold at least HDR bytes.
        unsafe { hdr_len(self.header_ptr(), got) != HDR }
    }

    /// The payload's bytes of a receive that got `got` bytes: a split
    /// message's payload, else what came behind the header.
    pub(super) fn payload_len(&self, got: usize) -> usize {
        self.split_bytes().unwrap_or_else(|| {
            // SAFETY: as in `is_compact`.
            got.saturating_sub(unsafe { hdr_len(self.header_ptr(), got) })
        })
    }

    /// The compact or tiny payload's bytes (`is_compact`), in the
    /// header's room.
    ///
    /// # Safety
    /// `got` is what MPI reported of this receive, and the wire is not
    /// changed while the slice lives.
    pub(super) unsafe fn compact_payload(&self, got: usize) -> &[u8] {
        unsafe {
            let at = hdr_len(self.header_ptr(), got);
            std::slice::from_raw_parts(
                self.header_ptr().add(at),
                got.saturating_sub(at).min(HDR - at),
            )
        }
    }

    pub(super) fn comm(&self) -> Comm {
        match self {
            Wire::Staged { comm, .. } | Wire::Struct { comm, .. } => *comm,
        }
    }

    /// The payload's bytes where a split message's payload is in.
    pub(super) fn split_bytes(&self) -> Option<usize> {
        match self {
            Wire::Struct {
                split: Split::Done { bytes, .. },
                ..
            } => Some(*bytes),
            _ => None,
        }
    }

    /// A placeholder, taking the place of a wire moved out.
    pub(super) fn empty(comm: Comm) -> Wire {
        Wire::Struct {
            hdr: HdrMem::own(Header::default()),
            into: Landing::Bytes {
                buf: std::ptr::null_mut(),
                bytes: 0,
            },
            split: Split::Idle,
            comm,
        }
    }

    /// Copies a staged payload to the user's buffer, once. `got` is the
    /// message size MPI reports, header included; on truncation it can
    /// exceed what landed in the stage.
    ///
    /// # Safety
    /// `buf` must still be the user's receive buffer of `cap` bytes.
    pub(super) unsafe fn place(&mut self, got: usize) {
        unsafe {
            if let Wire::Staged {
                stage,
                buf,
                cap,
                placed,
                ..
            } = self
            {
                if !*placed {
                    let at = hdr_len(stage.as_ptr(), got);
                    let n = stage.len().min(got).saturating_sub(at).min(*cap);
                    copy_bytes(stage.as_ptr().add(at), *buf, n);
                    *placed = true;
                }
            }
        }
    }
}

/// Bytes of `count` elements of `dt` when they are one contiguous block
/// starting at the buffer (a predefined type without holes, or any type
/// whose size equals its extent and true extent with both bounds at 0), so
/// that staging can be a memcpy instead of MPI_Pack.
/// `size` is `dt`'s size, which every caller already has.
#[inline]
pub(super) unsafe fn contiguous_bytes(dt: Datatype, count: c_int, size: u64) -> Option<usize> {
    unsafe {
        let v = super::type_facts(dt);
        if v & super::NAMED != 0 {
            if v & super::CONTIG == 0 {
                return None;
            }
            return usize::try_from(size * u64::try_from(count).ok()?).ok();
        }
        contiguous_bytes_asked(dt, count, size)
    }
}

/// `contiguous_bytes` by asking MPI.
pub(super) unsafe fn contiguous_bytes_asked(
    dt: Datatype,
    count: c_int,
    size: u64,
) -> Option<usize> {
    unsafe {
        let (mut lb, mut ext, mut tlb, mut text) = (0, 0, 0, 0);
        PMPI_Type_get_extent(dt, &mut lb, &mut ext);
        if lb != 0 || u64::try_from(ext).ok()? != size {
            return None;
        }
        PMPI_Type_get_true_extent(dt, &mut tlb, &mut text);
        if tlb != 0 || u64::try_from(text).ok()? != size {
            return None;
        }
        usize::try_from(size * u64::try_from(count).ok()?).ok()
    }
}

/// Where the header of a message sent or received as a struct datatype
/// lives: a box of its own, or a kept one (`Kept`), whose datatype with
/// the application's buffer is built once; it is free for the next
/// message when this goes.
pub(super) enum HdrMem {
    Own(Box<Header>),
    Kept(&'static KeptHdr),
}

impl HdrMem {
    pub(super) fn own(h: Header) -> HdrMem {
        HdrMem::Own(Box::new(h))
    }
}

impl std::ops::Deref for HdrMem {
    type Target = Header;
    fn deref(&self) -> &Header {
        match self {
            HdrMem::Own(b) => b,
            // SAFETY: the claim (`busy`) makes this its only user.
            HdrMem::Kept(k) => unsafe { &*k.hdr.get() },
        }
    }
}

impl std::ops::DerefMut for HdrMem {
    fn deref_mut(&mut self) -> &mut Header {
        match self {
            HdrMem::Own(b) => b,
            // SAFETY: as for `deref`.
            HdrMem::Kept(k) => unsafe { &mut *k.hdr.get() },
        }
    }
}

impl Drop for HdrMem {
    fn drop(&mut self) {
        if let HdrMem::Kept(k) = self {
            k.busy.store(false, Ordering::Release);
        }
    }
}

/// A kept header: its memory never moves nor goes (the kept datatypes
/// name its address), and one message at a time uses it (`busy`).
pub(super) struct KeptHdr {
    hdr: std::cell::UnsafeCell<Header>,
    busy: AtomicBool,
}

// SAFETY: `hdr` is touched only through the one `HdrMem::Kept` that
// claimed it (`busy`, set under the engine's lock, cleared by its drop).
unsafe impl Sync for KeptHdr {}

/// Kept headers, `KEPT` of them, each with the struct datatype `T` of
/// itself and the contiguous buffer of the last message that used it,
/// found by buffer and length from a home entry onwards (`PROBE`).
pub(super) struct Kept<T> {
    hdrs: &'static [KeptHdr],
    e: Vec<Option<(usize, c_int, T)>>,
}

/// A window of 64 messages from or into distinct buffers finds a kept
/// header for most of them.
const KEPT: usize = 256;

/// How many entries from its home a message looks at: a window of up to
/// this many messages from or into one buffer at once (osu_bw's 64 from
/// one buffer into one) gets a header and datatype each, built in the
/// first window and ready in the next. (With one entry per buffer,
/// every message of such a window but the first built its datatype and
/// freed it: a 16 KiB stream from one buffer moved 0.73x native on
/// MPICH 4.0 against 1.13x from distinct ones, `bench-compare.sh`'s
/// bw_16k and `bench-midsize.sh`.)
const PROBE: usize = 64;

/// What `Kept::claim` found for a message.
pub(super) enum Claim<T> {
    /// The header, with the datatype of it and the buffer.
    Ready(HdrMem, T),
    /// The header (at entry `.1`), whose datatype is to be built and
    /// `install`ed; `.2` is the datatype of another buffer it held, for
    /// the caller to free.
    Build(HdrMem, usize, Option<T>),
    /// Every header it may take is in use by another message.
    Busy,
}

impl<T: Copy> Kept<T> {
    pub(super) fn new() -> Self {
        Kept {
            hdrs: &[],
            e: Vec::new(),
        }
    }

    fn at(buf: usize, bytes: c_int) -> usize {
        let h = ((buf as u64) ^ (bytes as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 56) as usize % KEPT
    }

    /// The kept header for a message of `bytes` at `buf`, claimed: of the
    /// `PROBE` entries from its home, the first not in use that holds its
    /// datatype; else the first empty one, else the first not in use
    /// (whose datatype it evicts).
    pub(super) fn claim(&mut self, buf: usize, bytes: c_int) -> Claim<T> {
        if self.hdrs.is_empty() {
            // Never freed: a datatype may name a header after its engine
            // is gone (the start-up probe's), and no header moves.
            let v: Vec<KeptHdr> = (0..KEPT)
                .map(|_| KeptHdr {
                    hdr: std::cell::UnsafeCell::new(Header::default()),
                    busy: AtomicBool::new(false),
                })
                .collect();
            self.hdrs = Box::leak(v.into_boxed_slice());
            self.e.resize_with(KEPT, || None);
        }
        let home = Self::at(buf, bytes);
        let mut spare = None;
        for j in 0..PROBE {
            let i = (home + j) % KEPT;
            // Claims are made under the engine's lock; a header's message
            // going clears its flag at any time.
            if self.hdrs[i].busy.load(Ordering::Relaxed) {
                continue;
            }
            match self.e[i] {
                Some((b, n, _)) if b == buf && n == bytes => return self.take(i, true),
                Some(_) => {
                    spare.get_or_insert(i);
                }
                None => {
                    // Nothing was kept past it since it was.
                    spare = Some(i);
                    break;
                }
            }
        }
        match spare {
            Some(i) => self.take(i, false),
            None => Claim::Busy,
        }
    }

    /// Entry `i`'s header, claimed: with its datatype (`ready`), or to
    /// build one.
    fn take(&mut self, i: usize, ready: bool) -> Claim<T> {
        let k: &'static KeptHdr = &self.hdrs[i];
        if k.busy.swap(true, Ordering::Acquire) {
            return Claim::Busy;
        }
        // SAFETY: claimed just now.
        unsafe { *k.hdr.get() = Header::default() };
        match (ready, self.e[i]) {
            (true, Some((_, _, t))) => Claim::Ready(HdrMem::Kept(k), t),
            _ => Claim::Build(HdrMem::Kept(k), i, self.e[i].take().map(|(_, _, t)| t)),
        }
    }

    /// Enters `t`, built for slot `i`'s header and `bytes` at `buf`.
    pub(super) fn install(&mut self, i: usize, buf: usize, bytes: c_int, t: T) {
        self.e[i] = Some((buf, bytes, t));
    }

    /// Empties the cache, saying every datatype it held (the headers
    /// stay).
    pub(super) fn drain(&mut self) -> Vec<T> {
        self.e
            .iter_mut()
            .filter_map(|e| e.take())
            .map(|(_, _, t)| t)
            .collect()
    }
}

thread_local! {
    /// Staging buffer reused by blocking calls on this thread.
    pub(super) static STAGE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// MPI_Pack of `count × dt` at `buf`. MPICH refuses a null input buffer,
/// and MPI_BOTTOM is null: a datatype of absolute addresses is then packed
/// from a non-null base through an hindexed wrapper whose displacement
/// takes the base off again, which names the same bytes (MPI-4.0 §5.1.12).
pub(super) unsafe fn pack(
    buf: *const c_void,
    count: c_int,
    dt: Datatype,
    out: *mut u8,
    outsize: c_int,
    pos: &mut c_int,
    comm: Comm,
) -> c_int {
    unsafe {
        if buf as usize != abi::BOTTOM || count == 0 {
            return PMPI_Pack(buf, count, dt, out.cast(), outsize, pos, comm);
        }
        let base = out as abi::Aint;
        let mut t = dt;
        let rc = PMPI_Type_create_hindexed(1, &count, &-base, dt, &mut t);
        if !ok(rc) {
            return rc;
        }
        let mut rc = PMPI_Type_commit(&mut t);
        if ok(rc) {
            rc = PMPI_Pack(
                out.cast_const().cast(),
                1,
                t,
                out.cast(),
                outsize,
                pos,
                comm,
            );
        }
        PMPI_Type_free(&mut t);
        rc
    }
}

impl Engine {
    /// Packs `[header][payload]` into a new buffer.
    pub(super) unsafe fn stage(
        &self,
        size: u64,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<Vec<u8>, c_int> {
        unsafe {
            let mut v = self.stage_buf();
            self.stage_into(&mut v, size, hdr, buf, count, dt, comm)?;
            Ok(v)
        }
    }

    /// Writes `[header][payload]` into `v` (resized to fit): behind a
    /// compact header where the payload and the header allow it
    /// (`COMPACT`), as a slot's send does.
    #[inline]
    pub(super) unsafe fn stage_into(
        &self,
        v: &mut Vec<u8>,
        size: u64,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<(), c_int> {
        unsafe {
            let compact = hdr.compact(self.keep_lag);
            if let Some(n) = contiguous_bytes(dt, count, size) {
                let at = if compact && n <= COMPACT_MAX {
                    COMPACT
                } else {
                    HDR
                };
                v.clear();
                v.reserve(at + n);
                // SAFETY: capacity reserved; the header and the n bytes are
                // written before they are counted in.
                if at == COMPACT {
                    hdr.write_compact_to(v.as_mut_ptr());
                } else {
                    hdr.write_to(v.as_mut_ptr());
                }
                copy_bytes(buf.cast::<u8>(), v.as_mut_ptr().add(at), n);
                v.set_len(at + n);
                return Ok(());
            }
            self.stage_packed(v, hdr, buf, count, dt, comm)?;
            // MPI_Pack wrote the payload behind a full header; a small one
            // moves up behind the compact form.
            let n = v.len() - HDR;
            if compact && n <= COMPACT_MAX {
                v.copy_within(HDR.., COMPACT);
                hdr.write_compact_to(v.as_mut_ptr());
                v.truncate(COMPACT + n);
            }
            Ok(())
        }
    }

    /// `stage_into` for a payload that is not one contiguous block:
    /// MPI_Pack.
    #[inline(never)]
    unsafe fn stage_packed(
        &self,
        v: &mut Vec<u8>,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<(), c_int> {
        unsafe {
            let mut psize: c_int = 0;
            let rc = PMPI_Pack_size(count, dt, comm, &mut psize);
            if !ok(rc) {
                return Err(rc);
            }
            v.clear();
            v.resize(HDR + usize::try_from(psize).unwrap_or(0), 0);
            hdr.write_to(v.as_mut_ptr());
            let mut pos: c_int = 0;
            if count > 0 {
                let rc = pack(
                    buf,
                    count,
                    dt,
                    v.as_mut_ptr().add(HDR),
                    psize,
                    &mut pos,
                    comm,
                );
                if !ok(rc) {
                    return Err(rc);
                }
            }
            v.truncate(HDR + usize::try_from(pos).unwrap_or(0));
            Ok(())
        }
    }

    /// The header for a message of `bytes` contiguous bytes at `buf` sent
    /// or received as a struct datatype, and that datatype, `{HDR ×
    /// MPI_BYTE at the header, bytes × MPI_BYTE at buf}`, with whether
    /// the caller frees it after posting. Kept (`State::kept`) for the
    /// next message with that buffer and length where it can be: built
    /// per message, it cost MPICH 4.0 1-2 us (create, commit and free in
    /// yaksa): natively, a stream of 20000-byte messages split as the
    /// shim splits them moved 4.1 GB/s with a datatype built per receive,
    /// 5.1 with the datatypes built once and 6.1 whole (medians of 6
    /// runs of `bench/split_bw.c`).
    pub(super) unsafe fn kept_struct(
        &self,
        buf: *const c_void,
        bytes: c_int,
    ) -> Result<(HdrMem, Datatype, bool), c_int> {
        unsafe {
            let claim = self.lock().kept.claim(buf as usize, bytes);
            match claim {
                Claim::Ready(h, t) => Ok((h, t, false)),
                Claim::Build(h, i, old) => {
                    if let Some(mut old) = old {
                        // MPI-4.0 §5.1.9: a pending operation that uses
                        // it is not affected.
                        PMPI_Type_free(&mut old);
                    }
                    let t = self.struct_type_with(&*h, HDR_INT, buf, bytes, self.c.byte)?;
                    self.lock().kept.install(i, buf as usize, bytes, t);
                    Ok((h, t, false))
                }
                Claim::Busy => {
                    let h = HdrMem::own(Header::default());
                    let t = self.struct_type_with(&*h, HDR_INT, buf, bytes, self.c.byte)?;
                    Ok((h, t, true))
                }
            }
        }
    }

    /// The header `hdr` and struct datatype of a send of `count × dt`
    /// (of size `size`) at `buf`, and whether the caller frees the
    /// datatype after posting: one contiguous block gets a kept one
    /// (`kept_struct`).
    pub(super) unsafe fn send_struct(
        &self,
        hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        size: u64,
    ) -> Result<(HdrMem, Datatype, bool), c_int> {
        unsafe {
            match contiguous_bytes(dt, count, size).and_then(|n| c_int::try_from(n).ok()) {
                Some(n) => {
                    let (mut h, t, free) = self.kept_struct(buf, n)?;
                    *h = hdr;
                    Ok((h, t, free))
                }
                None => {
                    let h = HdrMem::own(hdr);
                    let t = self.struct_type(&*h, buf, count, dt)?;
                    Ok((h, t, true))
                }
            }
        }
    }

    /// Frees every kept datatype (`kept_struct`; before MPI_Finalize).
    pub unsafe fn free_kept(&self) {
        unsafe {
            let all = self.lock().kept.drain();
            for mut t in all {
                PMPI_Type_free(&mut t);
            }
        }
    }

    /// Builds the struct datatype `{HDR bytes at hdr, count × dt at buf}`.
    pub(super) unsafe fn struct_type(
        &self,
        hdr: *const Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<Datatype, c_int> {
        unsafe { self.struct_type_with(hdr, HDR_INT, buf, count, dt) }
    }

    /// `struct_type` with the header's first `hdr_len` bytes (`COMPACT`
    /// for a compact header).
    pub(super) unsafe fn struct_type_with(
        &self,
        hdr: *const Header,
        hdr_len: c_int,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<Datatype, c_int> {
        unsafe {
            let mut a0: abi::Aint = 0;
            let mut a1: abi::Aint = 0;
            PMPI_Get_address(hdr.cast(), &mut a0);
            PMPI_Get_address(buf, &mut a1);
            let lens = [hdr_len, count];
            let disps = [a0, a1];
            let types = [self.c.byte, dt];
            let mut t: Datatype = self.c.byte;
            let rc =
                PMPI_Type_create_struct(2, lens.as_ptr(), disps.as_ptr(), types.as_ptr(), &mut t);
            if !ok(rc) {
                return Err(rc);
            }
            let rc = PMPI_Type_commit(&mut t);
            if !ok(rc) {
                return Err(rc);
            }
            Ok(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(src: u32, seq: u32, d: u64) -> Header {
        Header {
            head: head(MAGIC, src),
            d,
            l: 0,
            lag: 0,
            seq,
        }
    }

    /// A compact header reads back as its full equivalent (the sequence
    /// number's low 24 bits), and tells its length from the bytes alone.
    #[test]
    fn compact_header_round_trip() {
        let h = header(0x00AB_CDEF, 0x1234_5678, 0xFEDC_BA98_7654_3210);
        assert!(h.compact(true));
        let mut b = [0u8; HDR];
        h.write_compact_to(b.as_mut_ptr());
        let r = Header::read_from(b.as_ptr());
        assert_eq!(r.magic(), MAGIC);
        assert_eq!(r.src(), 0x00AB_CDEF);
        assert_eq!(r.seq, 0x0034_5678);
        assert_eq!(r.d, 0xFEDC_BA98_7654_3210);
        assert_eq!((r.l, r.lag), (0, 0));
        for got in COMPACT..=HDR {
            assert_eq!(unsafe { hdr_len(b.as_ptr(), got) }, COMPACT, "{got} bytes");
        }
        // Longer than a full header: not a compact message.
        assert_eq!(unsafe { hdr_len(b.as_ptr(), HDR + 1) }, HDR);
        assert_eq!(unsafe { hdr_len(b.as_ptr(), COMPACT - 1) }, HDR);
    }

    /// The header of a sender that decides nothing or only stamps,
    /// written from rank, sequence number and departure alone
    /// (`write_compact`), is byte for byte the compact header of that
    /// departure (`Header::new`, `write_compact_to`), and reads back as
    /// it (the sequence number's low 24 bits).
    #[test]
    fn a_compact_header_from_four_values_is_header_new() {
        for d in [0, 1, 0x0012_3456_789A_BCDE] {
            let dep = loggp_core::Departure {
                ready: d,
                d,
                complete_at: d,
            };
            for (src, seq) in [(0, 0), (5, 7), (COMPACT_MASK, u32::MAX), (1, 0x0100_0001)] {
                let h = Header::new(&dep, c_int::try_from(src).unwrap(), 0, seq);
                assert!(h.compact(false), "rank {src}");
                let (mut a, mut b) = ([0u8; COMPACT], [0u8; COMPACT]);
                h.write_compact_to(a.as_mut_ptr());
                unsafe { write_compact(b.as_mut_ptr(), compact_head(src), seq, d) };
                assert_eq!(a, b, "rank {src}, seq {seq}, d {d}");
                let r = Header::read_from(b.as_ptr());
                assert_eq!((r.src(), r.seq, r.d), (src, seq & COMPACT_MASK, d));
            }
        }
    }

    /// The magic is a full header's first four bytes, as a receiver reads
    /// it (`landed_whole`), and the source rank the next four.
    /// A tiny header tells its length from the bytes alone at the sizes
    /// it has (2 to 10), and reads back as a full header of rank 0,
    /// departed at 0; the other forms' first bytes are not tiny.
    #[test]
    fn tiny_header_round_trip() {
        let mut b = [0u8; HDR];
        unsafe { write_tiny(b.as_mut_ptr()) };
        for got in TINY..=TINY + TINY_MAX {
            assert_eq!(unsafe { hdr_len(b.as_ptr(), got) }, TINY, "{got} bytes");
        }
        for got in [0, 1, TINY + TINY_MAX + 1, COMPACT, HDR] {
            assert_eq!(unsafe { hdr_len(b.as_ptr(), got) }, HDR, "{got} bytes");
        }
        let r = Header::read_from(b.as_ptr());
        assert_eq!(r.magic(), MAGIC);
        assert_eq!((r.src(), r.seq, r.d, r.l, r.lag), (0, 0, 0, 0, 0));
        let h = header(3, 9, 11);
        h.write_compact_to(b.as_mut_ptr());
        assert!(!unsafe { is_tiny(b.as_ptr()) });
        for magic in [MAGIC, MAGIC_SPLIT] {
            let mut f = header(3, 9, 11);
            f.set_magic(magic);
            f.write_to(b.as_mut_ptr());
            assert!(!unsafe { is_tiny(b.as_ptr()) });
        }
    }

    #[test]
    fn magic_leads_the_wire() {
        let mut b = [0u8; HDR];
        header(0x0102_0304, 9, 11).write_to(b.as_mut_ptr());
        assert_eq!(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]), MAGIC);
        assert_eq!(u32::from_ne_bytes([b[4], b[5], b[6], b[7]]), 0x0102_0304);
        let h = header(7, 0, 0);
        assert_eq!((h.magic(), h.src()), (MAGIC, 7));
    }

    /// Full headers (either magic) are never read as compact, and read back
    /// unchanged.
    #[test]
    fn full_headers_are_not_compact() {
        for magic in [MAGIC, MAGIC_SPLIT] {
            let mut h = header(7, 9, 11);
            h.set_magic(magic);
            h.l = 13;
            let mut b = [0u8; HDR];
            h.write_to(b.as_mut_ptr());
            assert_eq!(unsafe { hdr_len(b.as_ptr(), HDR) }, HDR);
            let r = Header::read_from(b.as_ptr());
            assert_eq!((r.magic(), r.src(), r.d, r.l, r.seq), (magic, 7, 11, 13, 9));
        }
    }

    /// A persistent split send's payload tag travels in `l`'s top bits
    /// beside the drawn L, which `l()` reads back alone; nonblocking split
    /// sends' tags from the sequence number stay above every persistent
    /// one, where the tag bound leaves room for both.
    #[test]
    fn payload_tags_of_persistent_and_nonblocking_sends_do_not_meet() {
        let tags = 32767;
        let mut h = header(2, 40, 5);
        h.set_magic(MAGIC_SPLIT);
        h.l = 1234;
        assert_eq!(h.payload_tag(tags), 1 + 1024 + 40);
        h.seq = u32::MAX;
        let t = h.payload_tag(tags);
        assert!(t > 1024 && t <= 32767 as c_int, "{t}");
        h.set_ptag(7);
        assert_eq!((h.payload_tag(tags), h.l()), (7, 1234));
        h.set_ptag(PERSISTENT_TAGS);
        assert_eq!((h.payload_tag(tags), h.l()), (1024, 1234));
        let mut b = [0u8; HDR];
        h.write_to(b.as_mut_ptr());
        let r = Header::read_from(b.as_ptr());
        assert_eq!((r.payload_tag(tags), r.l(), r.seq), (1024, 1234, u32::MAX));
        // An L beyond 2^48 ns is kept below the tag's bits, never read as
        // a persistent send's tag.
        let dep = loggp_core::Departure {
            ready: 0,
            d: 0,
            complete_at: 0,
        };
        let mut h = Header::new(&dep, 2, u64::MAX, 40);
        h.set_magic(MAGIC_SPLIT);
        assert_eq!((h.l(), h.payload_tag(tags)), (L_MASK, 1 + 1024 + 40));
        // A tag bound without room for both: every tag from the sequence.
        let mut h = header(2, 40, 5);
        h.set_magic(MAGIC_SPLIT);
        assert_eq!(persistent_tags(2048), 0);
        assert_eq!(h.payload_tag(2048), 41);
    }

    /// Each live persistent request holds its own tag, up to the limit;
    /// a tag given back is handed out again.
    #[test]
    fn persistent_tags_are_distinct_and_reused() {
        let mut p = PTags::default();
        let got: Vec<u32> = (0..3).map_while(|_| p.take(3)).collect();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(p.take(3), None);
        p.give(2);
        assert_eq!(p.take(3), Some(2));
        assert_eq!(p.take(3), None);
    }

    /// What the compact form cannot carry keeps the full one: a drawn L, a
    /// rank beyond 24 bits, and a lag where it must travel.
    #[test]
    fn compact_only_when_nothing_is_lost() {
        let mut h = header(3, 1, 5);
        h.l = 1;
        assert!(!h.compact(false));
        let mut h = header(1 << 24, 1, 5);
        assert!(!h.compact(false));
        h.head = head(MAGIC, (1 << 24) - 1);
        assert!(h.compact(false));
        h.lag = 40;
        assert!(h.compact(false));
        assert!(!h.compact(true));
    }

    fn ready(c: Claim<u32>) -> (HdrMem, u32) {
        match c {
            Claim::Ready(h, t) => (h, t),
            _ => panic!("not ready"),
        }
    }

    fn build(c: Claim<u32>) -> (HdrMem, usize, Option<u32>) {
        match c {
            Claim::Build(h, i, old) => (h, i, old),
            _ => panic!("not to build"),
        }
    }

    fn addr(h: &HdrMem) -> usize {
        std::ptr::addr_of!(**h) as usize
    }

    /// A buffer's next message finds the header and datatype its last
    /// one left, at the same address; one in use is not handed out again
    /// until it goes; a header comes back cleared.
    #[test]
    fn kept_headers_come_back_for_their_buffer_alone() {
        let mut k: Kept<u32> = Kept::new();
        let (mut h, i, old) = build(k.claim(0x1000, 20000));
        assert_eq!(old, None);
        let at = addr(&h);
        h.d = 99;
        k.install(i, 0x1000, 20000, 7);
        drop(h);
        let (h, t) = ready(k.claim(0x1000, 20000));
        assert_eq!((addr(&h), t, h.d), (at, 7, 0));
        // Another length at the same buffer is another message.
        drop(h);
        assert!(!matches!(k.claim(0x1000, 20001), Claim::Ready(..)));
    }

    /// A window of messages from one buffer gets a header and datatype
    /// each, the same ones in the next window, up to `PROBE` at once.
    #[test]
    fn a_window_from_one_buffer_keeps_a_datatype_per_message() {
        let mut k: Kept<u32> = Kept::new();
        let mut first = Vec::new();
        for n in 0..PROBE {
            let (h, i, old) = build(k.claim(0x1000, 16384));
            assert_eq!(old, None);
            let t = u32::try_from(n).unwrap();
            k.install(i, 0x1000, 16384, t);
            first.push((addr(&h), t));
            std::mem::forget(h);
        }
        // The window is in flight: one more finds every header in use.
        assert!(matches!(k.claim(0x1000, 16384), Claim::Busy));
        for h in k.hdrs {
            h.busy.store(false, Ordering::Release);
        }
        let mut next: Vec<HdrMem> = Vec::new();
        let mut again = Vec::new();
        for _ in 0..PROBE {
            let (h, t) = ready(k.claim(0x1000, 16384));
            again.push((addr(&h), t));
            next.push(h);
        }
        first.sort();
        again.sort();
        assert_eq!(first, again);
        assert_eq!(k.drain().len(), PROBE);
    }

    /// Two buffers with one home keep a datatype each; a buffer whose
    /// entries all hold others' evicts one: its datatype goes to the
    /// caller to free.
    #[test]
    fn buffers_of_one_home_share_it_and_evict_only_when_full() {
        let mut k: Kept<u32> = Kept::new();
        let (h, i, _) = build(k.claim(0x1000, 64));
        k.install(i, 0x1000, 64, 1);
        drop(h);
        let other = (1..1 << 20)
            .map(|n| 0x1000 + 64 * n)
            .find(|&b| Kept::<u32>::at(b, 64) == i)
            .expect("a colliding buffer");
        let (h, j, old) = build(k.claim(other, 64));
        assert_eq!((j, old), ((i + 1) % KEPT, None));
        k.install(j, other, 64, 2);
        drop(h);
        for _ in 0..3 {
            assert_eq!(ready(k.claim(0x1000, 64)).1, 1);
            assert_eq!(ready(k.claim(other, 64)).1, 2);
        }
        // Every entry full: a new buffer evicts the first not in use.
        for n in 0..4 * KEPT {
            let b = 0x100_0000 + 64 * n;
            if let Claim::Build(h, e, _) = k.claim(b, 64) {
                k.install(e, b, 64, 3);
                drop(h);
            }
        }
        assert!(k.e.iter().all(Option::is_some));
        let (h, _, old) = build(k.claim(0x7000_0000, 64));
        assert!(old.is_some());
        drop(h);
    }

    /// `drain` hands over every datatype once.
    #[test]
    fn drain_says_each_datatype_once() {
        let mut k: Kept<u32> = Kept::new();
        let mut t = Vec::new();
        for n in 0..8u32 {
            let b = 0x10_0000 + 0x1_0000 * n as usize;
            if let Claim::Build(h, i, _) = k.claim(b, 100) {
                k.install(i, b, 100, n);
                drop(h);
            }
        }
        t.extend(k.drain());
        t.sort();
        assert!(!t.is_empty() && t.windows(2).all(|w| w[0] < w[1]));
        assert!(k.drain().is_empty());
    }
}
