//! Entry points that newer libraries of a family export and the headers of
//! some builds lack: `MPI_Isendrecv(_replace)` (MPI-4.0; MPICH 4.0, Open
//! MPI 5.0, not Open MPI 4.1) and `MPI_Request_get_status_{any,all,some}`
//! (MPI-4.1; MPICH 5.0). A build serves the newer libraries of its family
//! (`loggp_core::mpilib`), so every build exports them: a program that
//! calls one through a newer library reaches the shim, not the library
//! directly, whose message would miss the header. A program on an older
//! library never calls them (it could not link), and the library's own
//! function is looked up only when called.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::abi::{self, Comm, Datatype, Request, Status};
use crate::engine::{self, active};
use crate::real;
use std::ffi::{c_int, c_void};

mpi_fn!(MPI_Isendrecv / PMPI_Isendrecv (sbuf: *const c_void,
    scount: c_int,
    sdt: Datatype,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Datatype,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || engine::refuses(sbuf, scount.into(), sdt)
        || engine::refuses_recv(rbuf, rcount.into(), rdt) {
        return real::PMPI_Isendrecv(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, req,
        );
    }
    engine::get().isendrecv(
        sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, Vec::new(), req,
    )
});

mpi_fn!(MPI_Isendrecv_replace / PMPI_Isendrecv_replace (buf: *mut c_void,
    count: c_int,
    dt: Datatype,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || engine::refuses(buf, count.into(), dt) {
        return real::PMPI_Isendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, req);
    }
    engine::get().isendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, req)
});

/// The status slot `i` of an array, or IGNORE.
unsafe fn slot(statuses: *mut Status, i: usize) -> *mut Status {
    unsafe {
        if abi::statuses_ignored(statuses) {
            abi::STATUS_IGNORE as *mut Status
        } else {
            statuses.add(i)
        }
    }
}

fn is_null(r: Request) -> bool {
    abi::key(r) == abi::key(engine::get().c.request_null)
}

// The three MPI-4.1 forms, composed of the engine's MPI_Request_get_status
// (non-destructive, so asking each request in turn is the same as asking
// them together): a received message is reported once it has virtually
// arrived, as by MPI_Test.

mpi_fn!(MPI_Request_get_status_all / PMPI_Request_get_status_all (count: c_int,
    reqs: *const Request,
    flag: *mut c_int,
    statuses: *mut Status,) {
    if !active() {
        return real::PMPI_Request_get_status_all(count, reqs, flag, statuses);
    }
    let n = usize::try_from(count).unwrap_or(0);
    let mut all = 1;
    for i in 0..n {
        let mut f: c_int = 0;
        let mut st = Status::zeroed();
        let rc = engine::get().request_get_status(*reqs.add(i), &mut f, &mut st);
        if rc != abi::SUCCESS {
            return rc;
        }
        if f == 0 {
            all = 0;
        } else if !abi::statuses_ignored(statuses) {
            st.copy_to_all(slot(statuses, i));
        }
    }
    *flag = all;
    abi::SUCCESS
});

mpi_fn!(MPI_Request_get_status_any / PMPI_Request_get_status_any (count: c_int,
    reqs: *const Request,
    index: *mut c_int,
    flag: *mut c_int,
    st: *mut Status,) {
    if !active() {
        return real::PMPI_Request_get_status_any(count, reqs, index, flag, st);
    }
    let n = usize::try_from(count).unwrap_or(0);
    let mut any_active = false;
    for i in 0..n {
        let r = *reqs.add(i);
        if is_null(r) {
            continue;
        }
        any_active = true;
        let mut f: c_int = 0;
        let rc = engine::get().request_get_status(r, &mut f, st);
        if rc != abi::SUCCESS {
            return rc;
        }
        if f != 0 {
            *flag = 1;
            *index = c_int::try_from(i).unwrap_or(abi::UNDEFINED);
            return abi::SUCCESS;
        }
    }
    // No active request: flag true, index MPI_UNDEFINED (MPI-4.1 §3.7.5).
    *flag = c_int::from(!any_active);
    *index = abi::UNDEFINED;
    abi::SUCCESS
});

mpi_fn!(MPI_Request_get_status_some / PMPI_Request_get_status_some (count: c_int,
    reqs: *const Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,) {
    if !active() {
        return real::PMPI_Request_get_status_some(count, reqs, outcount, indices, statuses);
    }
    let n = usize::try_from(count).unwrap_or(0);
    let mut done: c_int = 0;
    let mut any_active = false;
    for i in 0..n {
        let r = *reqs.add(i);
        if is_null(r) {
            continue;
        }
        any_active = true;
        let mut f: c_int = 0;
        let mut st = Status::zeroed();
        let rc = engine::get().request_get_status(r, &mut f, &mut st);
        if rc != abi::SUCCESS {
            return rc;
        }
        if f != 0 {
            let k = usize::try_from(done).unwrap_or(0);
            *indices.add(k) = c_int::try_from(i).unwrap_or(abi::UNDEFINED);
            if !abi::statuses_ignored(statuses) {
                st.copy_to_all(statuses.add(k));
            }
            done += 1;
        }
    }
    *outcount = if any_active { done } else { abi::UNDEFINED };
    abi::SUCCESS
});
