//! MPICH 4.0's large-count collectives (`MPI_Bcast_c`, `MPI_Ibcast_c`, …;
//! Open MPI 4.1 has none) with scalar counts: while virtual time is on, a
//! count that fits in an `int` runs the shim's collective; a larger one
//! runs natively (unperturbed) and says so once. The vector forms
//! (`MPI_Gatherv_c`, …) and the persistent collectives (`MPI_Bcast_init`,
//! …) are not wrapped: they run natively.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::abi::{Comm, Count, Datatype, Op as MpiOp, Request};
use crate::engine::active;
use crate::log;
use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// Says once per function that a call runs natively.
fn native_once(name: &'static str) {
    static SAID: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut g = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(HashSet::new).insert(name) {
        log::line(&format!(
            "{name} with a count above 2^31-1 runs natively: its messages are not perturbed"
        ));
    }
}

fn small(n: Count) -> Option<c_int> {
    c_int::try_from(n).ok()
}

mpi_fn!(MPI_Bcast_c / PMPI_Bcast_c (buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Bcast(buf, n0, dt, root, comm);
        }
        native_once("MPI_Bcast_c");
    }
    crate::real::PMPI_Bcast_c(buf, n, dt, root, comm)
});

mpi_fn!(MPI_Ibcast_c / PMPI_Ibcast_c (buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Ibcast(buf, n0, dt, root, comm, req);
        }
        native_once("MPI_Ibcast_c");
    }
    crate::real::PMPI_Ibcast_c(buf, n, dt, root, comm, req)
});

mpi_fn!(MPI_Reduce_c / PMPI_Reduce_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, root: c_int, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Reduce(sbuf, rbuf, n0, dt, op, root, comm);
        }
        native_once("MPI_Reduce_c");
    }
    crate::real::PMPI_Reduce_c(sbuf, rbuf, n, dt, op, root, comm)
});

mpi_fn!(MPI_Ireduce_c / PMPI_Ireduce_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, root: c_int, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Ireduce(sbuf, rbuf, n0, dt, op, root, comm, req);
        }
        native_once("MPI_Ireduce_c");
    }
    crate::real::PMPI_Ireduce_c(sbuf, rbuf, n, dt, op, root, comm, req)
});

mpi_fn!(MPI_Allreduce_c / PMPI_Allreduce_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Allreduce(sbuf, rbuf, n0, dt, op, comm);
        }
        native_once("MPI_Allreduce_c");
    }
    crate::real::PMPI_Allreduce_c(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Iallreduce_c / PMPI_Iallreduce_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Iallreduce(sbuf, rbuf, n0, dt, op, comm, req);
        }
        native_once("MPI_Iallreduce_c");
    }
    crate::real::PMPI_Iallreduce_c(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Gather_c / PMPI_Gather_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Gather(sbuf, n0, sdt, rbuf, n1, rdt, root, comm);
        }
        native_once("MPI_Gather_c");
    }
    crate::real::PMPI_Gather_c(sbuf, sn, sdt, rbuf, rn, rdt, root, comm)
});

mpi_fn!(MPI_Igather_c / PMPI_Igather_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Igather(sbuf, n0, sdt, rbuf, n1, rdt, root, comm, req);
        }
        native_once("MPI_Igather_c");
    }
    crate::real::PMPI_Igather_c(sbuf, sn, sdt, rbuf, rn, rdt, root, comm, req)
});

mpi_fn!(MPI_Scatter_c / PMPI_Scatter_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Scatter(sbuf, n0, sdt, rbuf, n1, rdt, root, comm);
        }
        native_once("MPI_Scatter_c");
    }
    crate::real::PMPI_Scatter_c(sbuf, sn, sdt, rbuf, rn, rdt, root, comm)
});

mpi_fn!(MPI_Iscatter_c / PMPI_Iscatter_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Iscatter(sbuf, n0, sdt, rbuf, n1, rdt, root, comm, req);
        }
        native_once("MPI_Iscatter_c");
    }
    crate::real::PMPI_Iscatter_c(sbuf, sn, sdt, rbuf, rn, rdt, root, comm, req)
});

mpi_fn!(MPI_Allgather_c / PMPI_Allgather_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Allgather(sbuf, n0, sdt, rbuf, n1, rdt, comm);
        }
        native_once("MPI_Allgather_c");
    }
    crate::real::PMPI_Allgather_c(sbuf, sn, sdt, rbuf, rn, rdt, comm)
});

mpi_fn!(MPI_Iallgather_c / PMPI_Iallgather_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Iallgather(sbuf, n0, sdt, rbuf, n1, rdt, comm, req);
        }
        native_once("MPI_Iallgather_c");
    }
    crate::real::PMPI_Iallgather_c(sbuf, sn, sdt, rbuf, rn, rdt, comm, req)
});

mpi_fn!(MPI_Alltoall_c / PMPI_Alltoall_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Alltoall(sbuf, n0, sdt, rbuf, n1, rdt, comm);
        }
        native_once("MPI_Alltoall_c");
    }
    crate::real::PMPI_Alltoall_c(sbuf, sn, sdt, rbuf, rn, rdt, comm)
});

mpi_fn!(MPI_Ialltoall_c / PMPI_Ialltoall_c (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(sn) else { break 'c; }; let Some(n1) = small(rn) else { break 'c; };
            return crate::coll::MPI_Ialltoall(sbuf, n0, sdt, rbuf, n1, rdt, comm, req);
        }
        native_once("MPI_Ialltoall_c");
    }
    crate::real::PMPI_Ialltoall_c(sbuf, sn, sdt, rbuf, rn, rdt, comm, req)
});

mpi_fn!(MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Reduce_scatter_block(sbuf, rbuf, n0, dt, op, comm);
        }
        native_once("MPI_Reduce_scatter_block_c");
    }
    crate::real::PMPI_Reduce_scatter_block_c(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Ireduce_scatter_block(sbuf, rbuf, n0, dt, op, comm, req);
        }
        native_once("MPI_Ireduce_scatter_block_c");
    }
    crate::real::PMPI_Ireduce_scatter_block_c(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Scan_c / PMPI_Scan_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Scan(sbuf, rbuf, n0, dt, op, comm);
        }
        native_once("MPI_Scan_c");
    }
    crate::real::PMPI_Scan_c(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Iscan_c / PMPI_Iscan_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Iscan(sbuf, rbuf, n0, dt, op, comm, req);
        }
        native_once("MPI_Iscan_c");
    }
    crate::real::PMPI_Iscan_c(sbuf, rbuf, n, dt, op, comm, req)
});

mpi_fn!(MPI_Exscan_c / PMPI_Exscan_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Exscan(sbuf, rbuf, n0, dt, op, comm);
        }
        native_once("MPI_Exscan_c");
    }
    crate::real::PMPI_Exscan_c(sbuf, rbuf, n, dt, op, comm)
});

mpi_fn!(MPI_Iexscan_c / PMPI_Iexscan_c (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request) {
    if active() {
        'c: {
            let Some(n0) = small(n) else { break 'c; };
            return crate::coll::MPI_Iexscan(sbuf, rbuf, n0, dt, op, comm, req);
        }
        native_once("MPI_Iexscan_c");
    }
    crate::real::PMPI_Iexscan_c(sbuf, rbuf, n, dt, op, comm, req)
});
