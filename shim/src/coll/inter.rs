//! Collectives on intercommunicators (MPI-4.0 §6.2.2 and each operation's
//! "intercommunicator" paragraph), over the engine's perturbed
//! point-to-point on the private duplicate, which is itself an
//! intercommunicator: a rank addresses the *remote* group, and `c.p()` is
//! the remote group's size.
//!
//! Rooted operations take the root's role from `root`: `MPI_ROOT` at the
//! root, `MPI_PROC_NULL` at the other ranks of its group (they do nothing),
//! and the root's rank in the remote group at every rank of the other
//! group. The algorithms are linear (the root exchanges with each remote
//! rank; the all-to-all forms exchange with every remote rank), so each
//! message feels the knobs as an application message would. Reductions
//! apply the remote group's operands in rank order (only the association
//! changes, as for the intracommunicator algorithms).

use super::algo::{Bufs, V, W};
use super::ctx::{count, reduce_local, Ctx, Tmp, Ty, R};
use crate::abi::{self, Datatype, Op};
use crate::real;
use std::ffi::{c_int, c_void};

/// What a rank does in a rooted operation.
enum Role {
    /// The root (`MPI_ROOT`).
    Root,
    /// Another rank of the root's group (`MPI_PROC_NULL`): nothing.
    Idle,
    /// A rank of the other group; the root's rank in the remote group.
    Leaf(usize),
}

fn role(root: c_int) -> Role {
    if root == abi::ROOT {
        Role::Root
    } else if root == abi::PROC_NULL {
        Role::Idle
    } else {
        Role::Leaf(count(root))
    }
}

/// Every rank sends a token to every remote rank and leaves once it has
/// one from each: by then every rank of the other group has entered.
pub async unsafe fn barrier(c: &Ctx) -> R {
    unsafe {
        let byte = c.e.c.byte;
        let (mut tok_in, tok_out) = (vec![0u8; c.p()], 0u8);
        let mut reqs = Vec::with_capacity(2 * c.p());
        for j in 0..c.p() {
            c.irecv(tok_in.as_mut_ptr().add(j).cast(), 1, byte, j, &mut reqs)?;
        }
        for j in 0..c.p() {
            c.isend((&tok_out as *const u8).cast(), 1, byte, j, &mut reqs)?;
        }
        c.waitall(&mut reqs).await
    }
}

pub async unsafe fn bcast(c: &Ctx, buf: *mut c_void, n: usize, dt: Datatype, root: c_int) -> R {
    unsafe {
        match role(root) {
            Role::Idle => Ok(()),
            Role::Leaf(r) => c.recv(buf, n, dt, r).await,
            Role::Root => {
                let mut reqs = Vec::with_capacity(c.p());
                for j in 0..c.p() {
                    c.isend(buf, n, dt, j, &mut reqs)?;
                }
                c.waitall(&mut reqs).await
            }
        }
    }
}

/// Gather (`v` None) and Gatherv: the root receives each remote rank's
/// block.
pub async unsafe fn gather(c: &Ctx, b: Bufs, v: Option<V>, root: c_int) -> R {
    unsafe {
        match role(root) {
            Role::Idle => Ok(()),
            Role::Leaf(r) => c.send(b.sbuf, b.scount, b.sdt, r).await,
            Role::Root => {
                let t = Ty::of(b.rdt);
                let mut reqs = Vec::with_capacity(c.p());
                for j in 0..c.p() {
                    let (at, n) = block(&v, j, b.rcount);
                    c.irecv(t.at(b.rbuf, at), n, b.rdt, j, &mut reqs)?;
                }
                c.waitall(&mut reqs).await
            }
        }
    }
}

/// Scatter (`v` None) and Scatterv: the root sends each remote rank its
/// block.
pub async unsafe fn scatter(c: &Ctx, b: Bufs, v: Option<V>, root: c_int) -> R {
    unsafe {
        match role(root) {
            Role::Idle => Ok(()),
            Role::Leaf(r) => c.recv(b.rbuf, b.rcount, b.rdt, r).await,
            Role::Root => {
                let t = Ty::of(b.sdt);
                let mut reqs = Vec::with_capacity(c.p());
                for j in 0..c.p() {
                    let (at, n) = block(&v, j, b.scount);
                    c.isend(t.at(b.sbuf, at), n, b.sdt, j, &mut reqs)?;
                }
                c.waitall(&mut reqs).await
            }
        }
    }
}

/// Element offset and count of block `j`: from the vector, or `j × n`.
unsafe fn block(v: &Option<V>, j: usize, n: usize) -> (usize, usize) {
    unsafe {
        match v {
            Some(v) => (count(*v.displs.add(j)), count(*v.counts.add(j))),
            None => (j * n, n),
        }
    }
}

/// Allgather (`rv` None) and Allgatherv: every rank sends its block to
/// every remote rank and receives each remote rank's block.
pub async unsafe fn allgather(c: &Ctx, b: Bufs, rv: Option<V>) -> R {
    unsafe {
        let t = Ty::of(b.rdt);
        let mut reqs = Vec::with_capacity(2 * c.p());
        for j in 0..c.p() {
            let (at, n) = block(&rv, j, b.rcount);
            c.irecv(t.at(b.rbuf, at), n, b.rdt, j, &mut reqs)?;
        }
        for j in 0..c.p() {
            c.isend(b.sbuf, b.scount, b.sdt, j, &mut reqs)?;
        }
        c.waitall(&mut reqs).await
    }
}

/// Alltoall (`sv`, `rv` None) and Alltoallv: block j goes to remote rank j,
/// and remote rank j's block for this rank lands in block j.
pub async unsafe fn alltoall(c: &Ctx, b: Bufs, sv: Option<V>, rv: Option<V>) -> R {
    unsafe {
        let (st, rt) = (Ty::of(b.sdt), Ty::of(b.rdt));
        let mut reqs = Vec::with_capacity(2 * c.p());
        for j in 0..c.p() {
            let (at, n) = block(&rv, j, b.rcount);
            c.irecv(rt.at(b.rbuf, at), n, b.rdt, j, &mut reqs)?;
        }
        for j in 0..c.p() {
            let (at, n) = block(&sv, j, b.scount);
            c.isend(st.at(b.sbuf, at), n, b.sdt, j, &mut reqs)?;
        }
        c.waitall(&mut reqs).await
    }
}

/// Receives every remote rank's `n × dt` operand and reduces them in rank
/// order into `rbuf`: x0 op (x1 op (… op x(P−1))).
unsafe fn gather_reduce(
    c: &Ctx,
    rbuf: *mut c_void,
    n: usize,
    dt: Datatype,
    reqs: &mut Vec<abi::Request>,
) -> R<Vec<Tmp>> {
    unsafe {
        let p = c.p();
        let t = Ty::of(dt);
        let mut tmps: Vec<Tmp> = (0..p.saturating_sub(1)).map(|_| Tmp::new(&t, n)).collect();
        for (j, tmp) in tmps.iter_mut().enumerate() {
            c.irecv(tmp.p(), n, dt, j, reqs)?;
        }
        if p > 0 {
            c.irecv(rbuf, n, dt, p - 1, reqs)?;
        }
        Ok(tmps)
    }
}

/// Applies the operands received by `gather_reduce`, once they are in.
unsafe fn fold(tmps: &mut [Tmp], rbuf: *mut c_void, n: usize, dt: Datatype, op: Op) -> R {
    unsafe {
        for tmp in tmps.iter_mut().rev() {
            reduce_local(tmp.p(), rbuf, n, dt, op)?;
        }
        Ok(())
    }
}

pub async unsafe fn reduce(
    c: &Ctx,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
    root: c_int,
) -> R {
    unsafe {
        match role(root) {
            Role::Idle => Ok(()),
            Role::Leaf(r) => c.send(sbuf, n, dt, r).await,
            Role::Root => {
                let mut reqs = Vec::with_capacity(c.p());
                let mut tmps = gather_reduce(c, rbuf, n, dt, &mut reqs)?;
                c.waitall(&mut reqs).await?;
                fold(&mut tmps, rbuf, n, dt, op)
            }
        }
    }
}

/// Every rank gets the reduction of the remote group's operands: each
/// sends its operand to every remote rank and reduces what it receives.
pub async unsafe fn allreduce(
    c: &Ctx,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        let mut reqs = Vec::with_capacity(2 * c.p());
        let mut tmps = gather_reduce(c, rbuf, n, dt, &mut reqs)?;
        for j in 0..c.p() {
            c.isend(sbuf, n, dt, j, &mut reqs)?;
        }
        c.waitall(&mut reqs).await?;
        fold(&mut tmps, rbuf, n, dt, op)
    }
}

/// Alltoallw: block j (its own count, datatype and byte displacement) goes
/// to remote rank j, and remote rank j's block lands in receive block j.
pub async unsafe fn alltoallw(c: &Ctx, sbuf: *const c_void, s: W, rbuf: *mut c_void, r: W) -> R {
    unsafe {
        let mut reqs = Vec::with_capacity(2 * c.p());
        for j in 0..c.p() {
            c.irecv(r.at(rbuf, j), r.n(j), r.t(j), j, &mut reqs)?;
        }
        for j in 0..c.p() {
            c.isend(s.at(sbuf, j), s.n(j), s.t(j), j, &mut reqs)?;
        }
        c.waitall(&mut reqs).await
    }
}

/// Reduce_scatter_block: this group's vectors (`n` × local size elements)
/// are reduced and scattered over the remote group in blocks of the
/// remote group's `n` (total ÷ remote size, as both totals are equal);
/// this rank gets its block of the reduction of the remote group's
/// vectors. So each rank sends block k of its vector to remote rank k and
/// reduces the blocks it receives, in rank order. (Read off Open MPI 4.1
/// and MPICH 4.0, which agree.)
pub async unsafe fn reduce_scatter_block(
    c: &Ctx,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        let mut local: c_int = 0;
        real::PMPI_Comm_size(c.comm, &mut local);
        let total = n * count(local);
        if c.p() == 0 || !total.is_multiple_of(c.p()) {
            return Err(abi::ERR_OTHER);
        }
        let remote_n = total / c.p();
        let t = Ty::of(dt);
        let mut reqs = Vec::with_capacity(2 * c.p());
        let mut tmps = gather_reduce(c, rbuf, n, dt, &mut reqs)?;
        for k in 0..c.p() {
            c.isend(t.at(sbuf, k * remote_n), remote_n, dt, k, &mut reqs)?;
        }
        c.waitall(&mut reqs).await?;
        fold(&mut tmps, rbuf, n, dt, op)
    }
}
