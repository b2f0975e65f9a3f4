//! The MPI ABI of the library this shim was built for, probed at build time
//! (build.rs runs probe/abi_probe.c with that MPI's mpicc), plus the few
//! helpers that read it. Handles differ in kind between the two MPIs
//! (pointers in Open MPI, ints in MPICH), so everything is written against
//! `Handle`.
#![allow(dead_code)]

use std::ffi::{c_int, c_void};

/// Which MPI library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    OpenMpi,
    Mpich,
}

impl Flavour {
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "Open MPI",
            Flavour::Mpich => "MPICH",
        }
    }
    pub fn cli_name(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "openmpi",
            Flavour::Mpich => "mpich",
        }
    }
}

/// A predefined handle: a literal (MPICH) or the address of an object the
/// library exports (Open MPI), resolved at run time so that the shim has no
/// link-time dependency on either library.
#[derive(Clone, Copy, Debug)]
pub enum HandleConst {
    Lit(i64),
    Sym(&'static [u8]),
}

include!(concat!(env!("OUT_DIR"), "/abi_gen.rs"));

/// What this build was made from, as one tab-separated line inside the
/// library file: `loggp` reads it back (`loggp shim-path --list`) to pick
/// the build that matches the MPI a user runs. Set by build.rs.
#[used]
pub static BUILD_INFO: &str = concat!(
    "LOGGP-SHIM-BUILD\tfamily=",
    env!("LOGGP_BUILD_FAMILY"),
    "\tversion=",
    env!("LOGGP_BUILD_VERSION"),
    "\tmpicc=",
    env!("LOGGP_BUILD_MPICC"),
    "\tlibmpi=",
    env!("LOGGP_BUILD_LIBMPI"),
    "\tEND\n"
);

pub type Comm = Handle;
pub type Datatype = Handle;
pub type Request = Handle;
pub type Message = Handle;
pub type Op = Handle;
pub type Errhandler = Handle;
pub type Aint = isize;
pub type Count = i64;

/// `MPI_Status`, opaque but for its three public fields. Exactly the C
/// type's size and alignment: arrays of statuses are indexed with it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Status {
    words: [StatusWord; STATUS_SIZE / std::mem::size_of::<StatusWord>()],
}

/// Open MPI's status holds a size_t (align 8); MPICH's is five ints.
#[cfg(ompi)]
type StatusWord = u64;
#[cfg(mpich)]
type StatusWord = u32;

const _: () = assert!(std::mem::size_of::<Status>() == STATUS_SIZE);
const _: () = assert!(std::mem::align_of::<Status>() == STATUS_ALIGN);

/// Where a status keeps its count of bytes, as MPI itself writes it
/// (learned at start-up, `engine::learn_status_count`): read and written in
/// place, it spares MPI_Get_elements_x and MPI_Status_set_elements_x on
/// every message (a sixth of the shim's cost per received message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountAt {
    /// One unsigned 64-bit count at this offset (Open MPI's `_ucount`).
    Wide(usize),
    /// The low 32 bits at the first offset; the high bits at the second,
    /// shifted left by one above the cancelled flag (MPICH's `count_lo`
    /// and `count_hi_and_cancelled`).
    Split(usize, usize),
}

/// The learned `CountAt` as one word, so that the two uses per received
/// message are a plain load and no branch on the layout (a `OnceLock` of
/// the enum cost a state check and a copy): 0 until learned, else bits
/// 0..8 the offset of the low 32 bits, bits 8..16 that of the high ones,
/// bit 16 their shift (1: `Split`, above the cancelled flag), bit 17 set.
/// `set_count_at` keeps only places inside a status.
static COUNT_AT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

const _: () = assert!(STATUS_SIZE < 256);

/// A learned place of the count (`count_at`), checked to lie inside a
/// status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountPlace {
    lo: u8,
    hi: u8,
    shift: u32,
}

impl CountAt {
    /// The place, if it lies inside a status.
    fn place(self) -> Option<CountPlace> {
        let (lo, hi, shift) = match self {
            CountAt::Wide(o) => (o, o + 4, 0),
            CountAt::Split(lo, hi) if lo.abs_diff(hi) >= 4 => (lo, hi, 1),
            CountAt::Split(..) => return None,
        };
        if lo.max(hi) + 4 > STATUS_SIZE {
            return None;
        }
        Some(CountPlace {
            lo: u8::try_from(lo).ok()?,
            hi: u8::try_from(hi).ok()?,
            shift,
        })
    }
}

impl CountPlace {
    fn pack(self) -> u32 {
        1 << 17 | self.shift << 16 | u32::from(self.hi) << 8 | u32::from(self.lo)
    }
    #[inline(always)]
    fn unpack(v: u32) -> Option<CountPlace> {
        (v != 0).then_some(CountPlace {
            lo: v.to_le_bytes()[0],
            hi: v.to_le_bytes()[1],
            shift: v >> 16 & 1,
        })
    }
}

/// Uses `c` from now on (once; start-up verified it against MPI). A
/// place outside a status is never kept.
pub fn set_count_at(c: CountAt) {
    if let Some(p) = c.place() {
        let _ = COUNT_AT.compare_exchange(
            0,
            p.pack(),
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// The learned place of the count, if start-up found one.
#[inline(always)]
pub fn count_at() -> Option<CountPlace> {
    CountPlace::unpack(COUNT_AT.load(std::sync::atomic::Ordering::Relaxed))
}

impl Status {
    fn word32(&self, off: usize) -> u32 {
        // SAFETY: callers pass offsets inside MPI_Status (see CountAt).
        unsafe {
            (self as *const Status as *const u8)
                .add(off)
                .cast::<u32>()
                .read_unaligned()
        }
    }
    fn set_word32(&mut self, off: usize, v: u32) {
        // SAFETY: as above.
        unsafe {
            (self as *mut Status as *mut u8)
                .add(off)
                .cast::<u32>()
                .write_unaligned(v)
        }
    }

    /// The count of bytes kept at `c`; None if `c` is not inside a status.
    pub fn count_in(&self, c: CountAt) -> Option<u64> {
        c.place().map(|p| self.count_at_place(p))
    }

    /// Writes `v` bytes at `c`, leaving the cancelled flag as it is; false
    /// if `c` is not inside a status.
    pub fn set_count_in(&mut self, c: CountAt, v: u64) -> bool {
        let Some(p) = c.place() else {
            return false;
        };
        self.set_count_at_place(p, v);
        true
    }

    /// The count of bytes kept at `p`: the high word shifted right past
    /// MPICH's cancelled flag where it shares the word (`shift` 1).
    #[inline(always)]
    pub fn count_at_place(&self, p: CountPlace) -> u64 {
        let (lo, hi) = (usize::from(p.lo), usize::from(p.hi));
        u64::from(self.word32(lo)) | u64::from(self.word32(hi) >> p.shift) << 32
    }

    /// Writes `v` bytes at `p`, leaving a cancelled flag that shares the
    /// high word as it is.
    #[inline(always)]
    pub fn set_count_at_place(&mut self, p: CountPlace, v: u64) {
        let (lo, hi) = (usize::from(p.lo), usize::from(p.hi));
        // Open MPI's layout (no shift) has no flag to read first.
        let flag = if p.shift == 0 { 0 } else { self.word32(hi) & 1 };
        self.set_word32(lo, (v & 0xffff_ffff) as u32);
        self.set_word32(hi, ((v >> 32) as u32) << p.shift | flag);
    }

    pub const fn zeroed() -> Status {
        Status {
            words: [0; STATUS_SIZE / std::mem::size_of::<StatusWord>()],
        }
    }
    fn field(&self, off: usize) -> c_int {
        // SAFETY: `off` is an offset of a c_int inside MPI_Status (probed).
        unsafe {
            (self as *const Status as *const u8)
                .add(off)
                .cast::<c_int>()
                .read_unaligned()
        }
    }
    fn set_field(&mut self, off: usize, v: c_int) {
        // SAFETY: as above.
        unsafe {
            (self as *mut Status as *mut u8)
                .add(off)
                .cast::<c_int>()
                .write_unaligned(v)
        }
    }
    pub fn source(&self) -> c_int {
        self.field(OFF_SOURCE)
    }
    pub fn tag(&self) -> c_int {
        self.field(OFF_TAG)
    }
    pub fn error(&self) -> c_int {
        self.field(OFF_ERROR)
    }
    pub fn set_source(&mut self, v: c_int) {
        self.set_field(OFF_SOURCE, v)
    }
    pub fn set_tag(&mut self, v: c_int) {
        self.set_field(OFF_TAG, v)
    }
    pub fn set_error(&mut self, v: c_int) {
        self.set_field(OFF_ERROR, v)
    }
    /// Copies into the user status of a single-completion call (Recv,
    /// Wait, Test, Waitany, Testany, probes, Mrecv, Sendrecv,
    /// Request_get_status): every field but MPI_ERROR, which such calls
    /// leave as the application set it (MPI-4.0 §3.2.5).
    ///
    /// # Safety
    /// `dst` must be a valid MPI_Status pointer and not an IGNORE value.
    pub unsafe fn copy_to(&self, dst: *mut Status) {
        unsafe {
            let e = (*dst).error();
            self.copy_to_all(dst);
            (*dst).set_error(e);
        }
    }

    /// Copies every field, MPI_ERROR included, into one status of the
    /// array of a multiple-completion call (Waitall, Waitsome, ...).
    ///
    /// # Safety
    /// As `copy_to`.
    pub unsafe fn copy_to_all(&self, dst: *mut Status) {
        unsafe {
            std::ptr::copy_nonoverlapping(
                self as *const Status as *const u8,
                dst as *mut u8,
                STATUS_SIZE,
            );
        }
    }
}

/// True when a status pointer passed by the user means "ignore".
pub fn status_ignored(p: *mut Status) -> bool {
    p as usize == STATUS_IGNORE || p.is_null()
}

/// True when a statuses array pointer passed by the user means "ignore".
pub fn statuses_ignored(p: *mut Status) -> bool {
    p as usize == STATUSES_IGNORE || p.is_null()
}

/// A handle as a map key.
#[cfg(ompi)]
pub fn key(h: Handle) -> usize {
    h as usize
}
#[cfg(mpich)]
pub fn key(h: Handle) -> usize {
    h as u32 as usize
}

#[cfg(ompi)]
#[allow(clippy::cast_possible_truncation)] // x86_64 only: pointers are 64-bit.
fn from_lit(v: i64) -> Handle {
    v as usize as *mut c_void
}
#[cfg(mpich)]
#[allow(clippy::cast_possible_truncation)] // MPICH handles are 32-bit ints by definition.
fn from_lit(v: i64) -> Handle {
    v as c_int
}

#[cfg(ompi)]
fn from_ptr(p: *mut c_void) -> Handle {
    p
}
#[cfg(mpich)]
#[allow(clippy::cast_possible_truncation)]
fn from_ptr(p: *mut c_void) -> Handle {
    p as usize as c_int
}

impl HandleConst {
    /// Resolves the handle; `None` when the library does not export it,
    /// which means the program uses another MPI.
    pub fn get(self) -> Option<Handle> {
        match self {
            HandleConst::Lit(v) => Some(from_lit(v)),
            HandleConst::Sym(name) => {
                // SAFETY: name is NUL-terminated (generated).
                let p = std::hint::black_box(unsafe {
                    libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast())
                });
                (!p.is_null()).then(|| from_ptr(p))
            }
        }
    }
}

/// A handle kept in shared state (a static, the engine): handles are plain
/// values that MPI lets every thread of the process use.
#[derive(Clone, Copy)]
pub struct SharedHandle(pub Handle);

// SAFETY: see above.
unsafe impl Send for SharedHandle {}
unsafe impl Sync for SharedHandle {}

/// Predefined handles, resolved once.
#[derive(Clone, Copy)]
pub struct Consts {
    pub comm_world: Comm,
    pub comm_null: Comm,
    pub comm_self: Comm,
    pub request_null: Request,
    pub message_null: Message,
    pub message_no_proc: Message,
    pub byte: Datatype,
    pub packed: Datatype,
    pub datatype_null: Datatype,
    pub uint64: Datatype,
    pub double: Datatype,
    pub op_max: Op,
    pub op_min: Op,
    pub info_null: Handle,
    pub errors_return: Errhandler,
}

// SAFETY: handles are plain values shared by every thread of the process.
unsafe impl Send for Consts {}
unsafe impl Sync for Consts {}

impl Consts {
    pub fn resolve() -> Option<Consts> {
        Some(Consts {
            comm_world: COMM_WORLD.get()?,
            comm_null: COMM_NULL.get()?,
            comm_self: COMM_SELF.get()?,
            request_null: REQUEST_NULL.get()?,
            message_null: MESSAGE_NULL.get()?,
            message_no_proc: MESSAGE_NO_PROC.get()?,
            byte: BYTE.get()?,
            packed: PACKED.get()?,
            datatype_null: DATATYPE_NULL.get()?,
            uint64: UINT64_T.get()?,
            double: DOUBLE.get()?,
            op_max: OP_MAX.get()?,
            op_min: OP_MIN.get()?,
            info_null: INFO_NULL.get()?,
            errors_return: ERRORS_RETURN.get()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_place_packs_and_reads_both_layouts() {
        for c in [
            CountAt::Wide(0),
            CountAt::Wide(STATUS_SIZE - 8),
            CountAt::Split(4, 0),
            CountAt::Split(0, STATUS_SIZE - 4),
        ] {
            let p = c.place().unwrap();
            assert_eq!(CountPlace::unpack(p.pack()), Some(p));
            // Through the place as through the enum, the flag kept.
            for v in [0, 1, 0x7fff_ffff, 0xffff_ffff, (1 << 41) + 3] {
                let mut st = Status::zeroed();
                if let CountAt::Split(_, hi) = c {
                    st.set_word32(hi, 1);
                }
                st.set_count_at_place(p, v);
                assert_eq!(st.count_in(c), Some(v));
                assert_eq!(st.count_at_place(p), v);
                if let CountAt::Split(_, hi) = c {
                    assert_eq!(st.word32(hi) & 1, 1);
                }
            }
        }
        assert_eq!(CountPlace::unpack(0), None);
        assert_eq!(CountAt::Wide(STATUS_SIZE - 4).place(), None);
        assert_eq!(CountAt::Split(0, 2).place(), None);
    }
}
