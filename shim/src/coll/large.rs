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

/// `MPI_x_c` (and `PMPI_x_c`): the shim's `MPI_x` when every count fits
/// in an `int`, the library's `PMPI_x_c` otherwise.
macro_rules! coll_c {
    ($name:ident / $pname:ident => $int:ident; ($($a:ident: $t:ty),*); counts($($n:ident),*)) => {
        mpi_fn!($name / $pname ($($a: $t),*) {
            if active() {
                'c: {
                    $(let Some($n) = small($n) else { break 'c; };)*
                    return crate::coll::$int($($a),*);
                }
                native_once(stringify!($name));
            }
            crate::real::$pname($($a),*)
        });
    };
}

coll_c!(MPI_Bcast_c / PMPI_Bcast_c => MPI_Bcast; (buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm); counts(n));
coll_c!(MPI_Ibcast_c / PMPI_Ibcast_c => MPI_Ibcast; (buf: *mut c_void, n: Count, dt: Datatype, root: c_int, comm: Comm, req: *mut Request); counts(n));
coll_c!(MPI_Reduce_c / PMPI_Reduce_c => MPI_Reduce; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, root: c_int, comm: Comm); counts(n));
coll_c!(MPI_Ireduce_c / PMPI_Ireduce_c => MPI_Ireduce; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, root: c_int, comm: Comm, req: *mut Request); counts(n));
coll_c!(MPI_Allreduce_c / PMPI_Allreduce_c => MPI_Allreduce; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm); counts(n));
coll_c!(MPI_Iallreduce_c / PMPI_Iallreduce_c => MPI_Iallreduce; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request); counts(n));
coll_c!(MPI_Gather_c / PMPI_Gather_c => MPI_Gather; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm); counts(sn, rn));
coll_c!(MPI_Igather_c / PMPI_Igather_c => MPI_Igather; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request); counts(sn, rn));
coll_c!(MPI_Scatter_c / PMPI_Scatter_c => MPI_Scatter; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm); counts(sn, rn));
coll_c!(MPI_Iscatter_c / PMPI_Iscatter_c => MPI_Iscatter; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, root: c_int, comm: Comm, req: *mut Request); counts(sn, rn));
coll_c!(MPI_Allgather_c / PMPI_Allgather_c => MPI_Allgather; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm); counts(sn, rn));
coll_c!(MPI_Iallgather_c / PMPI_Iallgather_c => MPI_Iallgather; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request); counts(sn, rn));
coll_c!(MPI_Alltoall_c / PMPI_Alltoall_c => MPI_Alltoall; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm); counts(sn, rn));
coll_c!(MPI_Ialltoall_c / PMPI_Ialltoall_c => MPI_Ialltoall; (sbuf: *const c_void, sn: Count, sdt: Datatype, rbuf: *mut c_void, rn: Count, rdt: Datatype, comm: Comm, req: *mut Request); counts(sn, rn));
coll_c!(MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c => MPI_Reduce_scatter_block; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm); counts(n));
coll_c!(MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c => MPI_Ireduce_scatter_block; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request); counts(n));
coll_c!(MPI_Scan_c / PMPI_Scan_c => MPI_Scan; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm); counts(n));
coll_c!(MPI_Iscan_c / PMPI_Iscan_c => MPI_Iscan; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request); counts(n));
coll_c!(MPI_Exscan_c / PMPI_Exscan_c => MPI_Exscan; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm); counts(n));
coll_c!(MPI_Iexscan_c / PMPI_Iexscan_c => MPI_Iexscan; (sbuf: *const c_void, rbuf: *mut c_void, n: Count, dt: Datatype, op: MpiOp, comm: Comm, req: *mut Request); counts(n));
