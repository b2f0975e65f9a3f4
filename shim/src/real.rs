//! The MPI library's own functions, found at run time with
//! `dlsym(RTLD_NEXT, "PMPI_x")` and cached. The shim never links libmpi, so
//! it loads into any process (a launcher, a shell) and can tell, before
//! touching MPI, whether it was preloaded into the wrong MPI.
//!
//! These are the only paths by which the shim calls MPI: its own traffic
//! never re-enters its exported symbols.
#![allow(non_snake_case, dead_code, clippy::too_many_arguments)]

use crate::abi::{Aint, Comm, Count, Datatype, Errhandler, Handle, Message, Op, Request, Status};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Resolves `name` (NUL-terminated) in the libraries loaded after the shim.
pub fn lookup(name: &'static str) -> *mut c_void {
    // SAFETY: name is a NUL-terminated literal. RTLD_NEXT is resolved
    // relative to the caller: black_box keeps the call out of tail position.
    std::hint::black_box(unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) })
}

fn missing(name: &str) -> ! {
    crate::log::fatal_raw(&format!(
        "{} is not exported by the MPI library of this program; is it an MPI program of the right MPI?",
        name.trim_end_matches('\0')
    ))
}

/// The callbacks of a generalized request (MPI-3.1 §12.2).
pub type GrequestQuery = unsafe extern "C" fn(extra: *mut c_void, st: *mut Status) -> c_int;
pub type GrequestFree = unsafe extern "C" fn(extra: *mut c_void) -> c_int;
pub type GrequestCancel = unsafe extern "C" fn(extra: *mut c_void, complete: c_int) -> c_int;

/// The first call of a function: looks `name` up and caches it in `p`.
#[cold]
#[inline(never)]
fn resolve(p: &AtomicPtr<c_void>, name: &'static str) -> *mut c_void {
    let f = lookup(name);
    if f.is_null() {
        missing(name);
    }
    p.store(f, Ordering::Relaxed);
    f
}

// Each function is a load, a test and MPI's own call at every call site
// (in line always, its first call's look-up out of line): as an
// out-of-line function of its own it cost ~20 instructions per call where
// the compiler did not inline it (an application's Sendrecv: three).
macro_rules! reals {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* ); )*) => {$(
        #[inline(always)]
        pub unsafe fn $name($($arg: $ty),*) -> c_int {
            static P: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
            let mut f = P.load(Ordering::Relaxed);
            if f.is_null() {
                f = resolve(&P, concat!(stringify!($name), "\0"));
            }
            // SAFETY: the symbol has the C signature declared by mpi.h, and
            // the caller passes arguments valid for it.
            unsafe {
                let f: unsafe extern "C" fn($($ty),*) -> c_int = std::mem::transmute(f);
                f($($arg),*)
            }
        }
    )*};
}

reals! {
    fn PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char);
    fn PMPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int);
    fn PMPI_Query_thread(provided: *mut c_int);
    fn PMPI_Finalize();
    fn PMPI_Initialized(flag: *mut c_int);
    fn PMPI_Finalized(flag: *mut c_int);
    fn PMPI_Abort(comm: Comm, code: c_int);
    fn PMPI_Get_library_version(version: *mut c_char, len: *mut c_int);
    fn PMPI_Get_processor_name(name: *mut c_char, len: *mut c_int);
    fn PMPI_Comm_rank(comm: Comm, rank: *mut c_int);
    fn PMPI_Comm_size(comm: Comm, size: *mut c_int);
    fn PMPI_Comm_dup(comm: Comm, new: *mut Comm);
    fn PMPI_Comm_free(comm: *mut Comm);
    fn PMPI_Comm_split_type(comm: Comm, split_type: c_int, key: c_int, info: Handle, new: *mut Comm);
    fn PMPI_Comm_call_errhandler(comm: Comm, code: c_int);
    fn PMPI_Comm_set_errhandler(comm: Comm, eh: Errhandler);
    fn PMPI_Comm_get_attr(comm: Comm, keyval: c_int, value: *mut c_void, flag: *mut c_int);
    fn PMPI_Comm_get_errhandler(comm: Comm, eh: *mut Errhandler);
    fn PMPI_Errhandler_free(eh: *mut Errhandler);
    fn PMPI_Error_string(code: c_int, s: *mut c_char, len: *mut c_int);
    fn PMPI_Comm_get_name(comm: Comm, name: *mut c_char, len: *mut c_int);
    fn PMPI_Comm_set_name(comm: Comm, name: *const c_char);
    fn PMPI_Error_class(code: c_int, class: *mut c_int);
    fn PMPI_Allreduce(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Bcast(buf: *mut c_void, count: c_int, dt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Barrier(comm: Comm);
    fn PMPI_Ibarrier(comm: Comm, req: *mut Request);
    fn PMPI_Type_size(dt: Datatype, size: *mut c_int);
    fn PMPI_Type_size_x(dt: Datatype, size: *mut Count);
    fn PMPI_Pack(inbuf: *const c_void, incount: c_int, dt: Datatype, outbuf: *mut c_void, outsize: c_int, pos: *mut c_int, comm: Comm);
    fn PMPI_Unpack(inbuf: *const c_void, insize: c_int, pos: *mut c_int, outbuf: *mut c_void, outcount: c_int, dt: Datatype, comm: Comm);
    fn PMPI_Type_get_envelope(dt: Datatype, ni: *mut c_int, na: *mut c_int, nd: *mut c_int, combiner: *mut c_int);
    fn PMPI_Type_get_extent(dt: Datatype, lb: *mut Aint, extent: *mut Aint);
    fn PMPI_Type_get_true_extent(dt: Datatype, lb: *mut Aint, extent: *mut Aint);
    fn PMPI_Pack_size(incount: c_int, dt: Datatype, comm: Comm, size: *mut c_int);
    fn PMPI_Get_address(loc: *const c_void, addr: *mut Aint);
    fn PMPI_Type_create_struct(count: c_int, blocklens: *const c_int, displs: *const Aint, types: *const Datatype, new: *mut Datatype);
    fn PMPI_Type_commit(dt: *mut Datatype);
    fn PMPI_Type_free(dt: *mut Datatype);
    fn PMPI_Type_dup(old: Datatype, new: *mut Datatype);
    fn PMPI_Get_count(st: *const Status, dt: Datatype, count: *mut c_int);
    fn PMPI_Get_elements_x(st: *const Status, dt: Datatype, count: *mut Count);
    fn PMPI_Type_create_hindexed(count: c_int, blocklens: *const c_int, displs: *const Aint, old: Datatype, new: *mut Datatype);
    fn PMPI_Status_set_elements_x(st: *mut Status, dt: Datatype, count: Count);
    fn PMPI_Test_cancelled(st: *const Status, flag: *mut c_int);
    fn PMPI_Buffer_detach(buf: *mut c_void, size: *mut c_int);

    fn PMPI_Send(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Bsend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Ssend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Rsend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Isend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Ibsend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Issend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Irsend(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Send_init(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Bsend_init(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Ssend_init(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Rsend_init(buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Recv(buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Irecv(buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Recv_init(buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Sendrecv(sbuf: *const c_void, scount: c_int, sdt: Datatype, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, src: c_int, rtag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Sendrecv_replace(buf: *mut c_void, count: c_int, dt: Datatype, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Probe(src: c_int, tag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Iprobe(src: c_int, tag: c_int, comm: Comm, flag: *mut c_int, st: *mut Status);
    fn PMPI_Mprobe(src: c_int, tag: c_int, comm: Comm, msg: *mut Message, st: *mut Status);
    fn PMPI_Improbe(src: c_int, tag: c_int, comm: Comm, flag: *mut c_int, msg: *mut Message, st: *mut Status);
    fn PMPI_Mrecv(buf: *mut c_void, count: c_int, dt: Datatype, msg: *mut Message, st: *mut Status);
    fn PMPI_Imrecv(buf: *mut c_void, count: c_int, dt: Datatype, msg: *mut Message, req: *mut Request);
    fn PMPI_Start(req: *mut Request);
    fn PMPI_Startall(n: c_int, reqs: *mut Request);
    fn PMPI_Wait(req: *mut Request, st: *mut Status);
    fn PMPI_Test(req: *mut Request, flag: *mut c_int, st: *mut Status);
    fn PMPI_Waitany(n: c_int, reqs: *mut Request, idx: *mut c_int, st: *mut Status);
    fn PMPI_Testany(n: c_int, reqs: *mut Request, idx: *mut c_int, flag: *mut c_int, st: *mut Status);
    fn PMPI_Waitall(n: c_int, reqs: *mut Request, sts: *mut Status);
    fn PMPI_Testall(n: c_int, reqs: *mut Request, flag: *mut c_int, sts: *mut Status);
    fn PMPI_Waitsome(n: c_int, reqs: *mut Request, outcount: *mut c_int, idx: *mut c_int, sts: *mut Status);
    fn PMPI_Testsome(n: c_int, reqs: *mut Request, outcount: *mut c_int, idx: *mut c_int, sts: *mut Status);
    fn PMPI_Request_get_status(req: Request, flag: *mut c_int, st: *mut Status);
    fn PMPI_Request_get_status_all(count: c_int, reqs: *const Request, flag: *mut c_int, st: *mut Status);
    fn PMPI_Request_get_status_any(count: c_int, reqs: *const Request, index: *mut c_int, flag: *mut c_int, st: *mut Status);
    fn PMPI_Request_get_status_some(count: c_int, reqs: *const Request, outcount: *mut c_int, indices: *mut c_int, st: *mut Status);
    fn PMPI_Cancel(req: *mut Request);
    fn PMPI_Request_free(req: *mut Request);
}

// MPI-4 entry points that MPICH 4.0 exports and Open MPI 4.1 does not.
reals! {
    fn PMPI_Send_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Bsend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Ssend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Rsend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm);
    fn PMPI_Isend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Ibsend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Issend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Irsend_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Send_init_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Bsend_init_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Ssend_init_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Rsend_init_c(buf: *const c_void, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Recv_c(buf: *mut c_void, count: Count, dt: Datatype, src: c_int, tag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Irecv_c(buf: *mut c_void, count: Count, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Recv_init_c(buf: *mut c_void, count: Count, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Sendrecv_c(sbuf: *const c_void, scount: Count, sdt: Datatype, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: Count, rdt: Datatype, src: c_int, rtag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Sendrecv_replace_c(buf: *mut c_void, count: Count, dt: Datatype, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm: Comm, st: *mut Status);
    fn PMPI_Mrecv_c(buf: *mut c_void, count: Count, dt: Datatype, msg: *mut Message, st: *mut Status);
    fn PMPI_Imrecv_c(buf: *mut c_void, count: Count, dt: Datatype, msg: *mut Message, req: *mut Request);
    fn PMPI_Isendrecv(sbuf: *const c_void, scount: c_int, sdt: Datatype, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, src: c_int, rtag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Isendrecv_c(sbuf: *const c_void, scount: Count, sdt: Datatype, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: Count, rdt: Datatype, src: c_int, rtag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Isendrecv_replace(buf: *mut c_void, count: c_int, dt: Datatype, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Isendrecv_replace_c(buf: *mut c_void, count: Count, dt: Datatype, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Psend_init(buf: *const c_void, partitions: c_int, count: Count, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, info: Handle, req: *mut Request);
    fn PMPI_Precv_init(buf: *mut c_void, partitions: c_int, count: Count, dt: Datatype, src: c_int, tag: c_int, comm: Comm, info: Handle, req: *mut Request);
    fn PMPI_Buffer_detach_c(buf: *mut c_void, size: *mut Count);
}

// ---------------------------------------------------------------------------
// Functions used by the collectives (shim/src/coll/); that work appends here.
reals! {
    fn PMPI_Comm_test_inter(comm: Comm, flag: *mut c_int);
    fn PMPI_Comm_remote_size(comm: Comm, size: *mut c_int);
    fn PMPI_Comm_disconnect(comm: *mut Comm);
    fn PMPI_Intercomm_merge(comm: Comm, high: c_int, new: *mut Comm);
    fn PMPI_Op_commutative(op: Op, commute: *mut c_int);
    fn PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, dt: Datatype, op: Op);
    fn PMPI_Reduce(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, root: c_int, comm: Comm);
    fn PMPI_Gather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Scatter(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Allgather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Alltoall(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Gatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Scatterv(sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Allgatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Alltoallv(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Reduce_scatter_block(sbuf: *const c_void, rbuf: *mut c_void, rcount: c_int, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Reduce_scatter(sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Scan(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Exscan(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Comm_idup(comm: Comm, new: *mut Comm, req: *mut Request);
    fn PMPI_Topo_test(comm: Comm, kind: *mut c_int);
    fn PMPI_Cartdim_get(comm: Comm, ndims: *mut c_int);
    fn PMPI_Cart_shift(comm: Comm, dir: c_int, disp: c_int, src: *mut c_int, dst: *mut c_int);
    fn PMPI_Graph_neighbors_count(comm: Comm, rank: c_int, n: *mut c_int);
    fn PMPI_Graph_neighbors(comm: Comm, rank: c_int, max: c_int, nbrs: *mut c_int);
    fn PMPI_Dist_graph_neighbors_count(comm: Comm, indeg: *mut c_int, outdeg: *mut c_int, weighted: *mut c_int);
    fn PMPI_Dist_graph_neighbors(comm: Comm, maxin: c_int, srcs: *mut c_int, sw: *mut c_int, maxout: c_int, dsts: *mut c_int, dw: *mut c_int);
    fn PMPI_Neighbor_allgather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Neighbor_allgatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Neighbor_alltoall(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Neighbor_alltoallv(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm);
    fn PMPI_Neighbor_alltoallw(sbuf: *const c_void, scounts: *const c_int, sdispls: *const Aint, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const Aint, rtypes: *const Datatype, comm: Comm);
    fn PMPI_Ineighbor_allgather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ineighbor_allgatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ineighbor_alltoall(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ineighbor_alltoallv(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ineighbor_alltoallw(sbuf: *const c_void, scounts: *const c_int, sdispls: *const Aint, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const Aint, rtypes: *const Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Alltoallw(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rtypes: *const Datatype, comm: Comm);
    fn PMPI_Ialltoallw(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, stypes: *const Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rtypes: *const Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Grequest_start(query: GrequestQuery, free: GrequestFree, cancel: GrequestCancel, extra: *mut c_void, req: *mut Request);
    fn PMPI_Grequest_complete(req: Request);
    fn PMPI_Status_set_cancelled(st: *mut Status, flag: c_int);
    fn PMPI_Ibcast(buf: *mut c_void, count: c_int, dt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Ireduce(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Iallreduce(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Igather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Iscatter(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Iallgather(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ialltoall(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Igatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Iscatterv(sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Iallgatherv(sbuf: *const c_void, scount: c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ialltoallv(sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Datatype, rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Ireduce_scatter_block(sbuf: *const c_void, rbuf: *mut c_void, rcount: c_int, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Ireduce_scatter(sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Iscan(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Iexscan(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
}

// MPICH's large-count collectives (shim/src/coll/large.rs).
reals! {
    fn PMPI_Bcast_c(buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Ibcast_c(buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Reduce_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, root: c_int, comm: Comm);
    fn PMPI_Ireduce_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Allreduce_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Iallreduce_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Gather_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Igather_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Scatter_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm);
    fn PMPI_Iscatter_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request);
    fn PMPI_Allgather_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm);
    fn PMPI_Iallgather_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Alltoall_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm);
    fn PMPI_Ialltoall_c(sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request);
    fn PMPI_Reduce_scatter_block_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Ireduce_scatter_block_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Scan_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Iscan_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
    fn PMPI_Exscan_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm);
    fn PMPI_Iexscan_c(sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: Op, comm: Comm, req: *mut Request);
}

// ---------------------------------------------------------------------------
// Targeting (`LOGGP_L=20us@inter`): the world rank of a communicator's rank.
reals! {
    fn PMPI_Comm_group(comm: Comm, group: *mut Handle);
    fn PMPI_Comm_remote_group(comm: Comm, group: *mut Handle);
    fn PMPI_Group_translate_ranks(g1: Handle, n: c_int, r1: *const c_int, g2: Handle, r2: *mut c_int);
    fn PMPI_Group_free(group: *mut Handle);
}
