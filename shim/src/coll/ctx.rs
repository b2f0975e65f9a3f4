//! What every algorithm stands on: the private communicator, the engine's
//! perturbed point-to-point on it, datatype geometry, temporary buffers,
//! local copies and the local reduction.

use crate::abi::{self, Comm, Datatype, Op, Request, Status};
use crate::engine::{Engine, Mode, Small};
use crate::real;
use loggp_core::reduce::{self, Elem, Fun};
use std::ffi::{c_int, c_void};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An MPI error code to hand back to the application.
pub type R<T = ()> = Result<T, c_int>;

pub fn chk(rc: c_int) -> R {
    if rc == abi::SUCCESS {
        Ok(())
    } else {
        Err(rc)
    }
}

/// A count as `c_int`, or MPI_ERR_OTHER when it does not fit (the shim's
/// collectives are limited to 2^31−1 elements per message).
pub fn int(n: usize) -> R<c_int> {
    c_int::try_from(n).map_err(|_| abi::ERR_OTHER)
}

/// A count from the application (negative counts are MPI's to reject; here
/// they count as 0).
pub fn count(n: c_int) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Tag of the shim's own messages on a private communicator: the
/// collectives of one communicator run in the same order on every rank and
/// MPI does not overtake, so one tag per operation suffices.
pub const TAG_SELF: c_int = 1;

/// One collective call on one communicator: the private duplicate and the
/// engine whose point-to-point perturbs every message.
///
/// The algorithms are `async` so that one text serves both kinds of call.
/// For a blocking collective (`nb == false`) every operation below is the
/// engine's blocking call, made inside the first poll: the future never
/// suspends and `block_on` polls it once. For a nonblocking one
/// (`nb == true`) sends and receives are posted nonblocking and the future
/// suspends until the engine (virtual time included) completes them; it is
/// advanced by the progress hook in the completion calls (`nb`).
pub struct Ctx {
    pub e: &'static Engine,
    pub comm: Comm,
    pub rank: c_int,
    /// The group ranks address: this communicator's, or for an
    /// intercommunicator (`inter`) the remote group's.
    pub size: c_int,
    pub tag: c_int,
    pub nb: bool,
    pub inter: bool,
}

/// Completes when every request of `reqs` has completed in the emulated
/// machine (MPI_Testall through the engine); the requests are freed.
struct Done<'a> {
    e: &'static Engine,
    reqs: &'a mut [Request],
    /// Their statuses (for the error of a failed one), made once, in place
    /// up to 8 requests (no allocation per step).
    sts: Small<Status, 8>,
}

impl Future for Done<'_> {
    type Output = R;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<R> {
        let e = self.e;
        let this = &mut *self;
        let (reqs, sts) = (&mut *this.reqs, &mut this.sts);
        if reqs.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let Ok(n) = int(reqs.len()) else {
            return Poll::Ready(Err(abi::ERR_OTHER));
        };
        let mut flag: c_int = 0;
        // Made for these requests, which only this future changes.
        debug_assert_eq!(sts.len(), reqs.len());
        if super::nb::driving() {
            // SAFETY: the requests are the engine's, made by this context.
            let rc = unsafe { e.waitall_driven(reqs, sts.as_mut_ptr()) };
            return Poll::Ready(if rc == abi::SUCCESS {
                Ok(())
            } else {
                Err(first_error(rc, sts))
            });
        }
        // SAFETY: the requests are the engine's, made by this context.
        let rc = unsafe { e.testall(n, reqs.as_mut_ptr(), &mut flag, sts.as_mut_ptr()) };
        if rc != abi::SUCCESS {
            return Poll::Ready(Err(first_error(rc, sts)));
        }
        if flag == 0 {
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }
}

/// The error to report for a failed Waitall/Testall: for MPI_ERR_IN_STATUS
/// the first request's own error (a truncation, say, as the application's
/// collective would report it), else `rc`.
fn first_error(rc: c_int, sts: &[Status]) -> c_int {
    if rc != abi::ERR_IN_STATUS {
        return rc;
    }
    sts.iter()
        .map(Status::error)
        .find(|&e| e != abi::SUCCESS && e != abi::ERR_PENDING)
        .unwrap_or(rc)
}

fn status_ignore() -> *mut Status {
    std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE)
}

impl Ctx {
    pub fn p(&self) -> usize {
        count(self.size)
    }
    pub fn r(&self) -> usize {
        count(self.rank)
    }

    pub async unsafe fn send(&self, buf: *const c_void, n: usize, dt: Datatype, dest: usize) -> R {
        unsafe {
            if self.nb {
                let mut r = [self.isend_one(buf, n, dt, dest)?];
                return self.wait_own(&mut r).await;
            }
            chk(self.e.send(
                Mode::Standard,
                buf,
                int(n)?,
                dt,
                int(dest)?,
                self.tag,
                self.comm,
            ))
        }
    }

    pub async unsafe fn recv(&self, buf: *mut c_void, n: usize, dt: Datatype, src: usize) -> R {
        unsafe {
            if self.nb {
                let mut r = [self.irecv_one(buf, n, dt, src)?];
                return self.wait_own(&mut r).await;
            }
            self.post_recv(buf, n, dt, src, None)
        }
    }

    /// The engine's receive on the private communicator: blocking with
    /// `req` None, else posted into `*req`.
    unsafe fn post_recv(
        &self,
        buf: *mut c_void,
        n: usize,
        dt: Datatype,
        src: usize,
        req: Option<*mut Request>,
    ) -> R {
        unsafe {
            chk(self.e.recv(
                buf,
                int(n)?,
                dt,
                int(src)?,
                self.tag,
                self.comm,
                req,
                std::ptr::null_mut(),
            ))
        }
    }

    pub unsafe fn isend(
        &self,
        buf: *const c_void,
        n: usize,
        dt: Datatype,
        dest: usize,
        reqs: &mut Vec<Request>,
    ) -> R {
        unsafe {
            reqs.push(self.isend_one(buf, n, dt, dest)?);
            Ok(())
        }
    }

    /// `isend`, returning the request.
    unsafe fn isend_one(
        &self,
        buf: *const c_void,
        n: usize,
        dt: Datatype,
        dest: usize,
    ) -> Result<Request, c_int> {
        unsafe {
            let mut r = self.e.c.request_null;
            chk(self.e.isend(
                Mode::Standard,
                buf,
                int(n)?,
                dt,
                int(dest)?,
                self.tag,
                self.comm,
                &mut r,
            ))?;
            Ok(r)
        }
    }

    pub unsafe fn irecv(
        &self,
        buf: *mut c_void,
        n: usize,
        dt: Datatype,
        src: usize,
        reqs: &mut Vec<Request>,
    ) -> R {
        unsafe {
            reqs.push(self.irecv_one(buf, n, dt, src)?);
            Ok(())
        }
    }

    /// `irecv`, returning the request.
    unsafe fn irecv_one(
        &self,
        buf: *mut c_void,
        n: usize,
        dt: Datatype,
        src: usize,
    ) -> Result<Request, c_int> {
        unsafe {
            let mut r = self.e.c.request_null;
            self.post_recv(buf, n, dt, src, Some(&mut r))?;
            Ok(r)
        }
    }

    /// Completes requests of this context's (nonblocking: polled as a
    /// step of the collective's future). A send, a receive or a Sendrecv
    /// keeps its one or two requests in an array of its own, not a `Vec`
    /// (no allocation per step).
    async fn wait_own(&self, reqs: &mut [Request]) -> R {
        let sts = Small::new(Status::zeroed(), reqs.len());
        Done {
            e: self.e,
            reqs,
            sts,
        }
        .await
    }

    pub async unsafe fn waitall(&self, reqs: &mut Vec<Request>) -> R {
        unsafe {
            if reqs.is_empty() {
                return Ok(());
            }
            if self.nb {
                let r = self.wait_own(reqs).await;
                reqs.clear();
                return r;
            }
            let mut sts = Small::<Status, 8>::new(Status::zeroed(), reqs.len());
            let rc = self.e.waitall_own(reqs, sts.as_mut_ptr());
            reqs.clear();
            chk(first_error(rc, &sts))
        }
    }

    /// Send to `dest` and receive from `src` at once (MPI_Sendrecv).
    pub async unsafe fn sendrecv(
        &self,
        sbuf: *const c_void,
        sn: usize,
        sdt: Datatype,
        dest: usize,
        rbuf: *mut c_void,
        rn: usize,
        rdt: Datatype,
        src: usize,
    ) -> R {
        unsafe {
            if self.nb {
                let mut r = [self.irecv_one(rbuf, rn, rdt, src)?, self.e.c.request_null];
                r[1] = self.isend_one(sbuf, sn, sdt, dest)?;
                return self.wait_own(&mut r).await;
            }
            chk(self.e.sendrecv(
                sbuf,
                int(sn)?,
                sdt,
                int(dest)?,
                self.tag,
                rbuf,
                int(rn)?,
                rdt,
                int(src)?,
                self.tag,
                self.comm,
                std::ptr::null_mut(),
            ))
        }
    }

    /// Copies `sn × sdt` at `src` to `rn × rdt` at `dst` on this rank, with
    /// MPI's type matching (a memcpy when both are the same contiguous
    /// type; otherwise a native message to self on the private
    /// communicator, which the engine never sees and which costs no LogGP
    /// parameter, as a local copy should not).
    pub unsafe fn copy(
        &self,
        src: *const c_void,
        sn: usize,
        sdt: Datatype,
        dst: *mut c_void,
        rn: usize,
        rdt: Datatype,
    ) -> R {
        unsafe {
            if sn == 0 || src == dst.cast_const() && sdt == rdt && sn == rn {
                return Ok(());
            }
            if sdt == rdt && sn == rn {
                let t = Ty::of(sdt);
                if t.contiguous() {
                    std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), t.size * sn);
                    return Ok(());
                }
            }
            chk(real::PMPI_Sendrecv(
                src,
                int(sn)?,
                sdt,
                self.rank,
                TAG_SELF,
                dst,
                int(rn)?,
                rdt,
                self.rank,
                TAG_SELF,
                self.comm,
                status_ignore(),
            ))
        }
    }

    /// `copy` of `n` elements of one type, whose geometry `t` the caller
    /// has already (no second lookup).
    pub unsafe fn copy_as(
        &self,
        t: &Ty,
        src: *const c_void,
        dst: *mut c_void,
        n: usize,
        dt: Datatype,
    ) -> R {
        unsafe {
            if n == 0 || src == dst.cast_const() {
                return Ok(());
            }
            if t.contiguous() {
                std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), t.bytes(n));
                return Ok(());
            }
            self.copy(src, n, dt, dst, n, dt)
        }
    }

    /// Packs `n × dt` at `buf` into `out` at `*pos` (MPI_Pack).
    pub unsafe fn pack(
        &self,
        buf: *const c_void,
        n: usize,
        dt: Datatype,
        out: &mut [u8],
        pos: &mut c_int,
    ) -> R {
        unsafe {
            if n == 0 {
                return Ok(());
            }
            chk(real::PMPI_Pack(
                buf,
                int(n)?,
                dt,
                out.as_mut_ptr().cast(),
                int(out.len())?,
                pos,
                self.comm,
            ))
        }
    }

    /// Unpacks `n × dt` into `buf` from the whole of `inp` (MPI_Unpack).
    pub unsafe fn unpack(&self, inp: &[u8], buf: *mut c_void, n: usize, dt: Datatype) -> R {
        unsafe {
            if n == 0 {
                return Ok(());
            }
            let mut pos: c_int = 0;
            chk(real::PMPI_Unpack(
                inp.as_ptr().cast(),
                int(inp.len())?,
                &mut pos,
                buf,
                int(n)?,
                dt,
                self.comm,
            ))
        }
    }
}

/// `inout = in op inout` (MPI_Reduce_local: the first argument is the left
/// operand, MPI-3.1 §5.9.7), for predefined and user-defined operations.
/// Sum, product, maximum and minimum of up to `FAST_MAX` bytes of the C
/// and Fortran integer and floating types are computed here
/// (`loggp_core::reduce`, bit for bit the library's result, or left to the
/// library where its own choices decide it); the rest by the library.
pub unsafe fn reduce_local(
    inp: *const c_void,
    inout: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        if n == 0 {
            return Ok(());
        }
        if let Some((e, f)) = fast_op(dt, op) {
            let bytes = e.size().saturating_mul(n);
            let (a, b) = (inp as usize, inout as usize);
            // Distinct buffers, as MPI_Reduce_local requires (else the
            // library says so).
            if bytes <= FAST_MAX
                && (a.saturating_add(bytes) <= b || b.saturating_add(bytes) <= a)
                && reduce::apply(
                    e,
                    f,
                    std::slice::from_raw_parts(inp.cast::<u8>(), bytes),
                    std::slice::from_raw_parts_mut(inout.cast::<u8>(), bytes),
                )
            {
                return Ok(());
            }
        }
        chk(real::PMPI_Reduce_local(inp, inout, int(n)?, dt, op))
    }
}

/// Up to how many bytes `reduce_local` applies a predefined operation
/// itself: where the library's call costs more than the arithmetic.
/// Measured here (best of 5, ns per call; `loggp_core::reduce` against
/// MPI_Reduce_local): a double's sum 3.8 against Open MPI 4.1's 10.4 and
/// MPICH 4.0's 11.7; an int's 4.4 against 10.9 and 82; 64 bytes of doubles
/// 9.0 against 9.8 and 16.6; 256 bytes 25 against 11 and 29 (the scan for
/// ±0 and NaN does not vectorise well). Above it, the library's own loops
/// (Open MPI's are vectorised), which is also what the native machine
/// pays.
const FAST_MAX: usize = 64;

/// The predefined types and operations `reduce_local` applies itself
/// (`loggp_core::reduce`), by handle; resolved at the first reduction.
struct FastOps {
    types: Vec<(usize, Elem)>,
    ops: [(usize, Fun); 4],
}

static FAST: std::sync::OnceLock<FastOps> = std::sync::OnceLock::new();

/// `(element, operation)` when `dt` is one of the types and `op` one of
/// MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN that `loggp_core::reduce` may
/// compute (`handled`).
#[inline]
unsafe fn fast_op(dt: Datatype, op: Op) -> Option<(Elem, Fun)> {
    let t = FAST.get_or_init(|| unsafe { FastOps::resolve() });
    let (d, o) = (abi::key(dt), abi::key(op));
    let f = t.ops.iter().find(|x| x.0 == o)?.1;
    let e = t.types.iter().find(|x| x.0 == d)?.1;
    reduce::handled(e, f).then_some((e, f))
}

impl FastOps {
    unsafe fn resolve() -> FastOps {
        use abi::HandleConst as H;
        let types: [(H, Elem); 15] = [
            (abi::DOUBLE, Elem::F64),
            (abi::INT, Elem::I32),
            (abi::FLOAT, Elem::F32),
            (abi::LONG, Elem::I64),
            (abi::LONG_LONG, Elem::I64),
            (abi::UNSIGNED, Elem::U32),
            (abi::UNSIGNED_LONG, Elem::U64),
            (abi::UNSIGNED_LONG_LONG, Elem::U64),
            (abi::INT32_T, Elem::I32),
            (abi::INT64_T, Elem::I64),
            (abi::UINT32_T, Elem::U32),
            (abi::UINT64_T, Elem::U64),
            // Fortran's, where the library's are of these widths.
            (abi::DOUBLE_PRECISION, Elem::F64),
            (abi::REAL, Elem::F32),
            (abi::INTEGER, Elem::I32),
        ];
        let ops = [
            (abi::OP_SUM, Fun::Sum),
            (abi::OP_PROD, Fun::Prod),
            (abi::OP_MAX, Fun::Max),
            (abi::OP_MIN, Fun::Min),
        ];
        // A type this MPI lacks, or of another width than expected, is left
        // to the library.
        // A Fortran type of a library built without Fortran may be the
        // null handle (whose size query would raise an error).
        let null = abi::DATATYPE_NULL.get().map(abi::key);
        let types = types
            .iter()
            .filter_map(|&(h, e)| {
                let dt = h.get()?;
                if Some(abi::key(dt)) == null {
                    return None;
                }
                let mut size: c_int = 0;
                let ok = unsafe { real::PMPI_Type_size(dt, &mut size) } == abi::SUCCESS;
                (ok && usize::try_from(size).ok() == Some(e.size())).then(|| (abi::key(dt), e))
            })
            .collect();
        // An operation it lacks matches no handle (0 is none's).
        let ops = ops.map(|(h, f)| (h.get().map_or(0, abi::key), f));
        FastOps { types, ops }
    }
}

pub unsafe fn commutative(op: Op) -> bool {
    unsafe {
        let mut c: c_int = 1;
        real::PMPI_Op_commutative(op, &mut c);
        c != 0
    }
}

/// A datatype's geometry (MPI-3.1 §4.1.7–8).
#[derive(Clone, Copy, Debug)]
pub struct Ty {
    pub size: usize,
    pub ext: isize,
    pub tlb: isize,
    pub text: isize,
    lb: isize,
}

impl Ty {
    #[inline]
    pub unsafe fn of(dt: Datatype) -> Ty {
        unsafe {
            // A predefined contiguous type (most reductions' MPI_DOUBLE,
            // MPI_INT): from the engine's cache, not three queries of MPI
            // per call (twelve per 8-byte Allreduce).
            match crate::engine::named_contiguous_size(dt) {
                Some(size) => {
                    let s = isize::try_from(size).unwrap_or(isize::MAX);
                    Ty {
                        size,
                        ext: s,
                        tlb: 0,
                        text: s,
                        lb: 0,
                    }
                }
                None => Ty::queried(dt),
            }
        }
    }

    /// Any other type's geometry, from MPI.
    #[inline(never)]
    unsafe fn queried(dt: Datatype) -> Ty {
        unsafe {
            let mut size: c_int = 0;
            real::PMPI_Type_size(dt, &mut size);
            let (mut lb, mut ext, mut tlb, mut text) = (0, 0, 0, 0);
            real::PMPI_Type_get_extent(dt, &mut lb, &mut ext);
            real::PMPI_Type_get_true_extent(dt, &mut tlb, &mut text);
            Ty {
                size: count(size),
                ext,
                tlb,
                text,
                lb,
            }
        }
    }

    /// One block of bytes, starting at the buffer, without holes.
    pub fn contiguous(&self) -> bool {
        isize::try_from(self.size).is_ok_and(|s| s == self.ext && s == self.text)
            && self.lb == 0
            && self.tlb == 0
    }

    /// The address of element `i` of a buffer of this type.
    pub fn at(&self, p: *const c_void, i: usize) -> *mut c_void {
        p.cast::<u8>()
            .cast_mut()
            .wrapping_offset(self.ext.wrapping_mul(i as isize))
            .cast()
    }

    /// Bytes of `n` elements (the signature's size).
    pub fn bytes(&self, n: usize) -> usize {
        self.size * n
    }
}

/// A temporary buffer for `n` elements of a type, laid out as MPI expects
/// (its true lower bound respected; MPI-3.1 §4.1.8 "true extent").
pub struct Tmp {
    /// Empty, with the room as its capacity: the bytes are reached only
    /// through `p` (MPI and the shim's copies write them before anything
    /// reads), never as a slice, so they need no initial value.
    v: Vec<u8>,
    shift: isize,
}

impl Tmp {
    pub fn new(t: &Ty, n: usize) -> Tmp {
        let span = if n == 0 {
            0
        } else {
            t.text
                .saturating_add(t.ext.saturating_mul(n as isize - 1))
                .max(0)
        };
        let n = usize::try_from(span).unwrap_or(0).max(1);
        Tmp {
            v: match crate::engine::get_opt() {
                Some(e) => e.scratch(n),
                None => Vec::with_capacity(n),
            },
            shift: -t.tlb,
        }
    }

    pub fn p(&mut self) -> *mut c_void {
        self.v.as_mut_ptr().wrapping_offset(self.shift).cast()
    }
}

/// Scratch space of the caller's own for a temporary of at most this many
/// bytes (`scratch`).
pub type Inline = [u64; 8];

/// A temporary buffer for `n` elements of `t`: `inline` (a local of the
/// caller's, which must not move while the pointer is in use: a local of a
/// blocking function, or of an async one, whose future is pinned before it
/// runs) when the elements fit there, else a `Tmp` kept in `heap`. An
/// 8-byte Allreduce then takes no buffer from the engine's pool (a `Tmp`
/// and its drop cost ~110 instructions, `scripts/bench-instr-coll.sh`).
pub fn scratch(t: &Ty, n: usize, inline: &mut Inline, heap: &mut Option<Tmp>) -> *mut c_void {
    if t.contiguous() && t.bytes(n) <= std::mem::size_of::<Inline>() {
        return inline.as_mut_ptr().cast();
    }
    heap.insert(Tmp::new(t, n)).p()
}

impl Drop for Tmp {
    fn drop(&mut self) {
        if let Some(e) = crate::engine::get_opt() {
            e.give_back(std::mem::take(&mut self.v));
        }
    }
}
