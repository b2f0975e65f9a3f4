//! The shim's own heap: its large blocks never pass through malloc.
//!
//! glibc serves a block of at least `M_MMAP_THRESHOLD` (128 KiB at start)
//! with its own mapping, and when such a block is freed it raises the
//! threshold to the block's size (glibc `malloc/malloc.c`, "dynamic mmap
//! threshold"; mallopt(3)). The shim's start-up measured the native transit
//! with a 1 MiB buffer and freed it: from then on the application's own
//! 1 MiB `malloc` came from the heap, at another alignment, and MPICH's
//! single-copy transfer (process_vm_readv) of it ran slower. A 1 MiB ping-
//! pong took 155 µs per half round trip at zero knobs against 118 µs
//! natively (MPICH 4.0 over UCX, this 2-core machine), with the same
//! copies: the application's memory was not what it is without the shim.
//!
//! So the shim maps blocks of `BIG` bytes and more itself (mmap(2)),
//! keeps a few freed mappings for the next large block (as the heap would
//! after the threshold rose: a collective's temporary buffers are large
//! and come every call), and leaves glibc's state to the application and
//! its MPI. Smaller blocks go to the system allocator as before.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks of this size and more are mapped: below glibc's smallest
/// threshold (128 KiB), so that no block of the shim's is ever one of
/// malloc's own mappings.
const BIG: usize = 64 << 10;
/// Mappings are page-aligned; a block asking for more alignment goes to
/// the system allocator whatever its size.
const PAGE: usize = 4096;
/// Freed mappings kept for reuse, of at most `KEPT_MAX` bytes each
/// (glibc's largest threshold on 64-bit systems: above it, it too maps
/// every block and unmaps it when freed).
const KEEP: usize = 4;
const KEPT_MAX: usize = 32 << 20;

pub struct ShimAlloc {
    busy: AtomicBool,
    /// Kept mappings as (address, length); length 0 is an empty slot.
    kept: UnsafeCell<[(usize, usize); KEEP]>,
}

// SAFETY: `kept` is only touched while `busy` is held (`with_kept`).
unsafe impl Sync for ShimAlloc {}

#[global_allocator]
static ALLOC: ShimAlloc = ShimAlloc {
    busy: AtomicBool::new(false),
    kept: UnsafeCell::new([(0, 0); KEEP]),
};

fn mapped(l: &Layout) -> bool {
    l.size() >= BIG && l.align() <= PAGE
}

fn pages(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

impl ShimAlloc {
    /// A block for `l` (zeroed when `zero`): mapped or the system's, as
    /// `mapped` says.
    #[inline]
    unsafe fn get(&self, l: Layout, zero: bool) -> *mut u8 {
        unsafe {
            match (mapped(&l), zero) {
                (true, _) => self.map(l.size(), zero),
                (false, false) => System.alloc(l),
                (false, true) => System.alloc_zeroed(l),
            }
        }
    }

    /// `realloc` to or from a mapping: a new block, the bytes copied.
    #[cold]
    #[inline(never)]
    unsafe fn moved(&self, p: *mut u8, l: Layout, nl: Layout) -> *mut u8 {
        unsafe {
            let q = self.alloc(nl);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p, q, l.size().min(nl.size()));
                self.dealloc(p, l);
            }
            q
        }
    }

    /// Runs `f` on the kept mappings under a spin lock (a few loads and
    /// stores: no system call, no allocation inside).
    fn with_kept<R>(&self, f: impl FnOnce(&mut [(usize, usize); KEEP]) -> R) -> R {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: `busy` is held: no other thread is in here.
        let r = f(unsafe { &mut *self.kept.get() });
        self.busy.store(false, Ordering::Release);
        r
    }

    /// A mapping of `size` bytes (zeroed when `zero`): a kept one that
    /// fits (its tail beyond the block unmapped, so that the block's own
    /// length frees it whole), or a new one.
    #[cold]
    #[inline(never)]
    unsafe fn map(&self, size: usize, zero: bool) -> *mut u8 {
        let len = pages(size);
        let reuse = self.with_kept(|kept| {
            let best = kept
                .iter()
                .enumerate()
                .filter(|(_, &(_, l))| l >= len)
                .min_by_key(|(_, &(_, l))| l)
                .map(|(i, _)| i)?;
            Some(std::mem::take(&mut kept[best]))
        });
        unsafe {
            if let Some((at, l)) = reuse {
                let p = at as *mut u8;
                if l > len {
                    libc::munmap(p.add(len).cast(), l - len);
                }
                if zero {
                    std::ptr::write_bytes(p, 0, size);
                }
                return p;
            }
            // Fresh anonymous pages are zero.
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            p.cast()
        }
    }

    /// Gives a mapping back: kept while there is room (and it is not too
    /// large), else unmapped.
    #[cold]
    #[inline(never)]
    unsafe fn unmap(&self, p: *mut u8, size: usize) {
        let len = pages(size);
        let kept = len <= KEPT_MAX
            && self.with_kept(|kept| match kept.iter_mut().find(|(_, l)| *l == 0) {
                Some(slot) => {
                    *slot = (p as usize, len);
                    true
                }
                None => false,
            });
        if !kept {
            // SAFETY: `p` is a mapping of `len` bytes of ours (`map`).
            unsafe { libc::munmap(p.cast(), len) };
        }
    }
}

// SAFETY: every block comes from the system allocator or from `map`, as
// `mapped` says from its layout, and goes back the same way; a mapping is
// page-aligned (at least the alignment `mapped` admits) and as long as its
// block, rounded up to pages.
unsafe impl GlobalAlloc for ShimAlloc {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        unsafe { self.get(l, false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        unsafe { self.get(l, true) }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe {
            if mapped(&l) {
                self.unmap(p, l.size())
            } else {
                System.dealloc(p, l)
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        unsafe {
            // SAFETY: the caller guarantees `new` is valid for `l.align()`.
            let nl = Layout::from_size_align_unchecked(new, l.align());
            match (mapped(&l), mapped(&nl)) {
                (false, false) => return System.realloc(p, l, new),
                (true, true) if pages(l.size()) == pages(new) => return p,
                _ => {}
            }
            self.moved(p, l, nl)
        }
    }
}
