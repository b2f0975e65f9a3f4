//! The algorithms (Pješivac-Grbović et al. §4), over the engine's perturbed
//! point-to-point on the private communicator. Who sends to whom in each
//! step (trees, recursive doubling, dissemination, ring, pairwise exchange,
//! segments) is `loggp_core::sched`, the schedules the calibration's model
//! check evaluates too; this file moves the data along them.
//!
//! Reductions apply operands in rank order, x0 op x1 op … op x(P−1), with
//! only the association changed (MPI-3.1 §5.9.1 allows that for every
//! operation, commutative or not): so integer results and MAX/MIN are
//! bit-identical to the native library's, and floating-point sums and
//! products can differ from it in the last bits, as between two MPI
//! libraries (each associates in its own way).

use super::ctx::{self, commutative, count, reduce_local, Ctx, Inline, Tmp, Ty, R};
use crate::abi::{self, Datatype, Op, Request};
use loggp_core::coll::{Alg, Choice};
use loggp_core::sched::{
    self, binomial_parent, segments, subtree_end, to_real, to_virtual, tree, Doubling,
};
use std::ffi::{c_int, c_void};

fn in_place(p: *const c_void) -> bool {
    p as usize == abi::IN_PLACE
}

/// Elements per segment: `seg` bytes of `t`, at least one element.
fn seg_elems(seg: u64, t: &Ty, n: usize) -> usize {
    sched::seg_elems(seg, t.size, n)
}

// ------------------------------------------------------------------ Barrier

pub async unsafe fn barrier(c: &Ctx, alg: Alg) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let byte = c.e.c.byte;
        let mut zb = [0u8; 1];
        let z: *mut c_void = zb.as_mut_ptr().cast();
        if p < 2 {
            return Ok(());
        }
        match alg {
            Alg::Linear => {
                let t = tree(Alg::Linear, r, p);
                if let Some(par) = t.parent {
                    c.send(z, 0, byte, par).await?;
                    return c.recv(z, 0, byte, par).await;
                }
                let mut reqs = Vec::new();
                for &i in &t.children {
                    c.irecv(z, 0, byte, i, &mut reqs)?;
                }
                c.waitall(&mut reqs).await?;
                for &i in &t.children {
                    c.isend(z, 0, byte, i, &mut reqs)?;
                }
                c.waitall(&mut reqs).await
            }
            Alg::Ring => {
                // Double ring: a token from rank 0 goes around twice.
                let (left, right) = sched::ring(r, p);
                for _ in 0..2 {
                    if r == 0 {
                        c.send(z, 0, byte, right).await?;
                        c.recv(z, 0, byte, left).await?;
                    } else {
                        c.recv(z, 0, byte, left).await?;
                        c.send(z, 0, byte, right).await?;
                    }
                }
                Ok(())
            }
            // Extra ranks report to a partner first and are released last
            // (⌊log2 P⌋ + 2 steps when P is not a power of two).
            Alg::RecursiveDoubling => match sched::doubling_barrier(r, p) {
                Doubling::Extra { partner } => {
                    c.send(z, 0, byte, partner).await?;
                    c.recv(z, 0, byte, partner).await
                }
                Doubling::Core { extra, peers } => {
                    if let Some(e) = extra {
                        c.recv(z, 0, byte, e).await?;
                    }
                    for d in peers {
                        c.sendrecv(z, 0, byte, d, z, 0, byte, d).await?;
                    }
                    if let Some(e) = extra {
                        c.send(z, 0, byte, e).await?;
                    }
                    Ok(())
                }
            },
            // Bruck / dissemination: ⌈log2 P⌉ rounds.
            _ => {
                for (to, from) in sched::dissemination(r, p) {
                    c.sendrecv(z, 0, byte, to, z, 0, byte, from).await?;
                }
                Ok(())
            }
        }
    }
}

// -------------------------------------------------------------------- Bcast

pub async unsafe fn bcast(
    c: &Ctx,
    ch: Choice,
    buf: *mut c_void,
    n: usize,
    dt: Datatype,
    root: usize,
) -> R {
    unsafe {
        let p = c.p();
        let t = Ty::of(dt);
        if p < 2 || n == 0 || t.size == 0 {
            return Ok(());
        }
        let vr = to_virtual(c.r(), root, p);
        let real = |v: usize| to_real(v, root, p);
        let tr = tree(ch.alg, vr, p);
        let per = seg_elems(ch.seg, &t, n);
        // One segment to at most one child (a leaf, or a chain's link): a
        // blocking send, which completes as the Isend and Waitall would,
        // without their list of requests (nor, at a leaf, an empty one).
        if tr.children.len() <= 1 && per >= n {
            if let Some(par) = tr.parent {
                c.recv(buf, n, dt, real(par)).await?;
            }
            return match tr.children[..] {
                [k] => c.send(buf, n, dt, real(k)).await,
                _ => Ok(()),
            };
        }
        let mut reqs: Vec<Request> = Vec::with_capacity(tr.children.len());
        for (s, len) in segments(n, per) {
            let sp = t.at(buf, s);
            if let Some(par) = tr.parent {
                c.recv(sp, len, dt, real(par)).await?;
            }
            // Largest subtree first.
            for &k in tr.children.iter().rev() {
                c.isend(sp, len, dt, real(k), &mut reqs)?;
            }
        }
        c.waitall(&mut reqs).await
    }
}

// ------------------------------------------------------------------- Reduce

/// Reduce of `n × dt` from `inbuf` on every rank to `out` on `root` (out
/// is only touched at root).
pub async unsafe fn reduce(
    c: &Ctx,
    ch: Choice,
    inbuf: *const c_void,
    out: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
    root: usize,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let t = Ty::of(dt);
        if n == 0 {
            return Ok(());
        }
        if p < 2 {
            return c.copy(inbuf, n, dt, out, n, dt);
        }
        if ch.alg == Alg::Linear {
            if r != root {
                return c.send(inbuf, n, dt, root).await;
            }
            // acc = x0 op x1 op … in rank order.
            let mut acc = Tmp::new(&t, n);
            let mut tmp = Tmp::new(&t, n);
            for i in 0..p {
                let dst = if i == 0 { acc.p() } else { tmp.p() };
                if i == r {
                    c.copy(inbuf, n, dt, dst, n, dt)?;
                } else {
                    c.recv(dst, n, dt, i).await?;
                }
                if i > 0 {
                    reduce_local(acc.p(), tmp.p(), n, dt, op)?;
                    std::mem::swap(&mut acc, &mut tmp);
                }
            }
            return c.copy(acc.p(), n, dt, out, n, dt);
        }
        let commute = commutative(op);
        // A non-commutative op needs subtrees that are contiguous in rank
        // order: a tree rooted at rank 0 (and no binary tree).
        let alg = if !commute && ch.alg == Alg::Binary {
            Alg::Binomial
        } else {
            ch.alg
        };
        let troot = if commute { root } else { 0 };
        let vr = to_virtual(r, troot, p);
        let real = |v: usize| to_real(v, troot, p);
        let tr = tree(alg, vr, p);
        let per = seg_elems(ch.seg, &t, n);
        if let (Some(par), true, true) = (tr.parent, tr.children.is_empty(), per >= n) {
            // A leaf's one segment: its input as it is, by a blocking send
            // (no copy into a scratch buffer, no list of requests).
            c.send(inbuf, n, dt, real(par)).await?;
            if r == root && troot != root {
                c.recv(out, n, dt, troot).await?;
            }
            return Ok(());
        }
        // Small ones in place, not from the engine's pool (`ctx::scratch`).
        let (mut inline_acc, mut heap_acc) = (Inline::default(), None);
        let acc = ctx::scratch(&t, n, &mut inline_acc, &mut heap_acc);
        c.copy_as(&t, inbuf, acc, n, dt)?;
        let (mut inline_tmp, mut heap_tmp) = (Inline::default(), None);
        let tmp =
            (!tr.children.is_empty()).then(|| ctx::scratch(&t, n, &mut inline_tmp, &mut heap_tmp));
        let mut reqs: Vec<Request> = Vec::new();
        for (s, len) in segments(n, per) {
            let a = t.at(acc, s);
            if let Some(tmp) = tmp {
                let b = t.at(tmp, s);
                for &k in &tr.children {
                    c.recv(b, len, dt, real(k)).await?;
                    if commute {
                        reduce_local(b, a, len, dt, op)?;
                    } else {
                        // acc = acc op child: the child's ranks follow ours.
                        reduce_local(a, b, len, dt, op)?;
                        c.copy(b, len, dt, a, len, dt)?;
                    }
                }
            }
            if let Some(par) = tr.parent {
                c.isend(a, len, dt, real(par), &mut reqs)?;
            }
        }
        c.waitall(&mut reqs).await?;
        if troot == root {
            if r == root {
                c.copy_as(&t, acc, out, n, dt)?;
            }
        } else if r == troot {
            c.send(acc, n, dt, root).await?;
        } else if r == root {
            c.recv(out, n, dt, troot).await?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- Allreduce

pub async unsafe fn allreduce(
    c: &Ctx,
    alg: Alg,
    inbuf: *const c_void,
    out: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        if n == 0 {
            return Ok(());
        }
        if alg == Alg::ReduceBcast {
            let bin = Choice {
                alg: Alg::Binomial,
                seg: 0,
            };
            // Reduce copies its input before it writes `out`: in place is safe.
            let inbuf = if in_place(inbuf) {
                out.cast_const()
            } else {
                inbuf
            };
            reduce(c, bin, inbuf, out, n, dt, op, 0).await?;
            return bcast(c, bin, out, n, dt, 0).await;
        }
        if alg == Alg::Rabenseifner && sched::halvings_fit(n, p) {
            return rabenseifner(c, inbuf, out, n, dt, op).await;
        }
        // Recursive doubling (MPICH's; rank order kept for any op): the first
        // 2·rem ranks pair up so that a power of two takes part. Worked in
        // `out` and one scratch buffer, the two swapping roles where the
        // result forms in the scratch (`mine op theirs`): a copy at the end
        // only when the result lies there (at 8 bytes, a second scratch
        // buffer and its copies were ~250 of the shim's 1,900 instructions
        // per Allreduce at two ranks, `scripts/bench-instr-coll.sh`).
        match sched::doubling_allreduce(r, p) {
            Doubling::Extra { partner } => {
                c.send(inbuf, n, dt, partner).await?;
                c.recv(out, n, dt, partner).await
            }
            Doubling::Core { extra, peers } => {
                let t = Ty::of(dt);
                let (mut inline, mut heap) = (Inline::default(), None);
                let scratch = ctx::scratch(&t, n, &mut inline, &mut heap);
                c.copy_as(&t, inbuf, out, n, dt)?;
                // `acc` holds this rank's partial result, `other` receives.
                let (mut acc, mut other) = (out, scratch);
                if let Some(e) = extra {
                    c.recv(other, n, dt, e).await?;
                    reduce_local(other, acc, n, dt, op)?;
                }
                for dst in peers {
                    c.sendrecv(acc, n, dt, dst, other, n, dt, dst).await?;
                    if dst < r {
                        reduce_local(other, acc, n, dt, op)?;
                    } else {
                        reduce_local(acc, other, n, dt, op)?;
                        std::mem::swap(&mut acc, &mut other);
                    }
                }
                if let Some(e) = extra {
                    c.send(acc, n, dt, e).await?;
                }
                c.copy_as(&t, acc, out, n, dt)
            }
        }
    }
}

/// Rabenseifner's Allreduce (`sched::halvings`), worked in `out`: a
/// reduce-scatter by recursive halving, then an Allgather by recursive
/// doubling. Each rank sends and reduces 2·(P−1)/P of the message where
/// recursive doubling sends and reduces log2 P times all of it. `n` is at
/// least pof2(p).
async unsafe fn rabenseifner(
    c: &Ctx,
    inbuf: *const c_void,
    out: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let q = sched::pof2(p);
        let (extra, steps) = match sched::doubling_allreduce(r, p) {
            Doubling::Extra { partner } => {
                c.send(inbuf, n, dt, partner).await?;
                return c.recv(out, n, dt, partner).await;
            }
            Doubling::Core { extra, peers } => (extra, sched::halvings(r, q, peers)),
        };
        let t = Ty::of(dt);
        let at = |b: usize| t.at(out, sched::block_start(b, n, q));
        let len =
            |(a, b): (usize, usize)| sched::block_start(b, n, q) - sched::block_start(a, n, q);
        c.copy(inbuf, n, dt, out, n, dt)?;
        let Some(first) = steps.first() else {
            return Ok(()); // one rank
        };
        let mut tmp = Tmp::new(&t, if extra.is_some() { n } else { len(first.keep) });
        if let Some(e) = extra {
            // The extra is the rank below: its input comes first.
            c.recv(tmp.p(), n, dt, e).await?;
            reduce_local(tmp.p(), out, n, dt, op)?;
        }
        // In rank order: `theirs op mine` reduces into place; `mine op
        // theirs` does too where the operation commutes, else it is formed
        // in `tmp` and copied back.
        let commutes = commutative(op);
        for s in &steps {
            let (k, mine) = (len(s.keep), at(s.keep.0));
            c.sendrecv(
                at(s.give.0),
                len(s.give),
                dt,
                s.peer,
                tmp.p(),
                k,
                dt,
                s.peer,
            )
            .await?;
            if s.mine_first && !commutes {
                reduce_local(mine, tmp.p(), k, dt, op)?;
                c.copy(tmp.p(), k, dt, mine, k, dt)?;
            } else {
                reduce_local(tmp.p(), mine, k, dt, op)?;
            }
        }
        for s in steps.iter().rev() {
            let (g, k) = (len(s.give), len(s.keep));
            c.sendrecv(at(s.keep.0), k, dt, s.peer, at(s.give.0), g, dt, s.peer)
                .await?;
        }
        if let Some(e) = extra {
            c.send(out, n, dt, e).await?;
        }
        Ok(())
    }
}

// ----------------------------------------------------------- Gather/Scatter

/// Arguments of Gather/Scatter/Allgather/Alltoall.
#[derive(Clone, Copy)]
pub struct Bufs {
    pub sbuf: *const c_void,
    pub scount: usize,
    pub sdt: Datatype,
    pub rbuf: *mut c_void,
    pub rcount: usize,
    pub rdt: Datatype,
}

pub async unsafe fn gather(c: &Ctx, alg: Alg, b: Bufs, root: usize) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let is_root = r == root;
        // MPI ignores the receive arguments at the non-roots, and the send
        // count and type at a root that gathers in place: they may be -1 and
        // MPI_DATATYPE_NULL, so only the significant side is looked at.
        let rt = is_root.then(|| Ty::of(b.rdt));
        let own_in_place = is_root && in_place(b.sbuf);
        if is_root && !own_in_place {
            let rt = rt.expect("root");
            c.copy(
                b.sbuf,
                b.scount,
                b.sdt,
                rt.at(b.rbuf, root * b.rcount),
                b.rcount,
                b.rdt,
            )?;
        }
        let nb = match rt {
            Some(rt) => rt.bytes(b.rcount),
            None => Ty::of(b.sdt).bytes(b.scount),
        };
        if p < 2 || nb == 0 {
            return Ok(());
        }
        if alg == Alg::Linear {
            if !is_root {
                return c.send(b.sbuf, b.scount, b.sdt, root).await;
            }
            let rt = rt.expect("root");
            let mut reqs = Vec::new();
            for i in (0..p).filter(|&i| i != root) {
                c.irecv(rt.at(b.rbuf, i * b.rcount), b.rcount, b.rdt, i, &mut reqs)?;
            }
            return c.waitall(&mut reqs).await;
        }
        // Binomial: each subtree's blocks travel packed, in virtual order.
        let vr = to_virtual(r, root, p);
        let end = subtree_end(vr, p);
        let mut tmp = vec![0u8; (end - vr) * nb];
        if !is_root {
            let mut pos: c_int = 0;
            c.pack(b.sbuf, b.scount, b.sdt, &mut tmp[..nb], &mut pos)?;
        }
        let mut reqs = Vec::new();
        for &k in &tree(Alg::Binomial, vr, p).children {
            let (lo, hi) = ((k - vr) * nb, (subtree_end(k, p) - vr) * nb);
            c.irecv(
                tmp[lo..].as_mut_ptr().cast(),
                hi - lo,
                c.e.c.byte,
                to_real(k, root, p),
                &mut reqs,
            )?;
        }
        c.waitall(&mut reqs).await?;
        if let Some(par) = binomial_parent(vr) {
            return c
                .send(
                    tmp.as_ptr().cast(),
                    tmp.len(),
                    c.e.c.byte,
                    to_real(par, root, p),
                )
                .await;
        }
        let rt = rt.expect("root");
        for v in 1..p {
            let i = to_real(v, root, p);
            c.unpack(
                &tmp[v * nb..(v + 1) * nb],
                rt.at(b.rbuf, i * b.rcount),
                b.rcount,
                b.rdt,
            )?;
        }
        Ok(())
    }
}

pub async unsafe fn scatter(c: &Ctx, alg: Alg, b: Bufs, root: usize) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let is_root = r == root;
        // MPI ignores the send arguments at the non-roots, and the receive
        // count and type at a root that scatters in place (see `gather`).
        let st = is_root.then(|| Ty::of(b.sdt));
        if is_root && !in_place(b.rbuf) {
            let st = st.expect("root");
            c.copy(
                st.at(b.sbuf, root * b.scount),
                b.scount,
                b.sdt,
                b.rbuf,
                b.rcount,
                b.rdt,
            )?;
        }
        let nb = match st {
            Some(st) => st.bytes(b.scount),
            None => Ty::of(b.rdt).bytes(b.rcount),
        };
        if p < 2 || nb == 0 {
            return Ok(());
        }
        if alg == Alg::Linear {
            if !is_root {
                return c.recv(b.rbuf, b.rcount, b.rdt, root).await;
            }
            let st = st.expect("root");
            let mut reqs = Vec::new();
            for i in (0..p).filter(|&i| i != root) {
                c.isend(st.at(b.sbuf, i * b.scount), b.scount, b.sdt, i, &mut reqs)?;
            }
            return c.waitall(&mut reqs).await;
        }
        let vr = to_virtual(r, root, p);
        let end = subtree_end(vr, p);
        let mut tmp = vec![0u8; (end - vr) * nb];
        if let Some(st) = st {
            for v in 1..p {
                let i = to_real(v, root, p);
                let mut pos: c_int = 0;
                c.pack(
                    st.at(b.sbuf, i * b.scount),
                    b.scount,
                    b.sdt,
                    &mut tmp[v * nb..(v + 1) * nb],
                    &mut pos,
                )?;
            }
        } else if let Some(par) = binomial_parent(vr) {
            let len = tmp.len();
            c.recv(
                tmp.as_mut_ptr().cast(),
                len,
                c.e.c.byte,
                to_real(par, root, p),
            )
            .await?;
        }
        let mut reqs = Vec::new();
        for &k in tree(Alg::Binomial, vr, p).children.iter().rev() {
            let (lo, hi) = ((k - vr) * nb, (subtree_end(k, p) - vr) * nb);
            c.isend(
                tmp[lo..].as_ptr().cast(),
                hi - lo,
                c.e.c.byte,
                to_real(k, root, p),
                &mut reqs,
            )?;
        }
        c.waitall(&mut reqs).await?;
        if !is_root {
            c.unpack(&tmp[..nb], b.rbuf, b.rcount, b.rdt)?;
        }
        Ok(())
    }
}

/// Gatherv (linear): `counts`/`displs` are significant at the root only.
pub async unsafe fn gatherv(
    c: &Ctx,
    b: Bufs,
    counts: *const c_int,
    displs: *const c_int,
    root: usize,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        if r != root {
            if b.scount == 0 {
                return Ok(());
            }
            return c.send(b.sbuf, b.scount, b.sdt, root).await;
        }
        let rt = Ty::of(b.rdt);
        let at = |i: usize| {
            rt.at(b.rbuf, 0)
                .wrapping_byte_offset(*displs.add(i) as isize * rt.ext)
        };
        if !in_place(b.sbuf) {
            c.copy(b.sbuf, b.scount, b.sdt, at(r), count(*counts.add(r)), b.rdt)?;
        }
        let mut reqs = Vec::new();
        for i in (0..p).filter(|&i| i != root) {
            let n = count(*counts.add(i));
            if n > 0 {
                c.irecv(at(i), n, b.rdt, i, &mut reqs)?;
            }
        }
        c.waitall(&mut reqs).await
    }
}

/// Scatterv (linear): `counts`/`displs` are significant at the root only.
pub async unsafe fn scatterv(
    c: &Ctx,
    b: Bufs,
    counts: *const c_int,
    displs: *const c_int,
    root: usize,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        if r != root {
            if b.rcount == 0 {
                return Ok(());
            }
            return c.recv(b.rbuf, b.rcount, b.rdt, root).await;
        }
        let st = Ty::of(b.sdt);
        let at = |i: usize| {
            st.at(b.sbuf, 0)
                .wrapping_byte_offset(*displs.add(i) as isize * st.ext)
        };
        if !in_place(b.rbuf) {
            c.copy(at(r), count(*counts.add(r)), b.sdt, b.rbuf, b.rcount, b.rdt)?;
        }
        let mut reqs = Vec::new();
        for i in (0..p).filter(|&i| i != root) {
            let n = count(*counts.add(i));
            if n > 0 {
                c.isend(at(i), n, b.sdt, i, &mut reqs)?;
            }
        }
        c.waitall(&mut reqs).await
    }
}

// ---------------------------------------------------------------- Allgather

pub async unsafe fn allgather(c: &Ctx, alg: Alg, b: Bufs) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let rt = Ty::of(b.rdt);
        let n = b.rcount;
        if !in_place(b.sbuf) {
            c.copy(b.sbuf, b.scount, b.sdt, rt.at(b.rbuf, r * n), n, b.rdt)?;
        }
        if p < 2 || rt.bytes(n) == 0 {
            return Ok(());
        }
        if alg == Alg::RecursiveDoubling && p.is_power_of_two() {
            for (m, d) in sched::hypercube(r, p) {
                let (mine, theirs) = (r & !(m - 1), d & !(m - 1));
                c.sendrecv(
                    rt.at(b.rbuf, mine * n),
                    m * n,
                    b.rdt,
                    d,
                    rt.at(b.rbuf, theirs * n),
                    m * n,
                    b.rdt,
                    d,
                )
                .await?;
            }
            return Ok(());
        }
        // Ring (also recursive doubling's fallback when P is not a power of 2).
        let (left, right) = sched::ring(r, p);
        for k in 0..p - 1 {
            let (sb, rb) = sched::ring_blocks(r, p, k);
            c.sendrecv(
                rt.at(b.rbuf, sb * n),
                n,
                b.rdt,
                right,
                rt.at(b.rbuf, rb * n),
                n,
                b.rdt,
                left,
            )
            .await?;
        }
        Ok(())
    }
}

/// Allgatherv (ring).
pub async unsafe fn allgatherv(c: &Ctx, b: Bufs, counts: *const c_int, displs: *const c_int) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let rt = Ty::of(b.rdt);
        let at = |i: usize| {
            rt.at(b.rbuf, 0)
                .wrapping_byte_offset(*displs.add(i) as isize * rt.ext)
        };
        let cnt = |i: usize| count(*counts.add(i));
        if !in_place(b.sbuf) {
            c.copy(b.sbuf, b.scount, b.sdt, at(r), cnt(r), b.rdt)?;
        }
        if p < 2 {
            return Ok(());
        }
        let (left, right) = sched::ring(r, p);
        for k in 0..p - 1 {
            let (sb, rb) = sched::ring_blocks(r, p, k);
            c.sendrecv(at(sb), cnt(sb), b.rdt, right, at(rb), cnt(rb), b.rdt, left)
                .await?;
        }
        Ok(())
    }
}

// ----------------------------------------------------------------- Alltoall

pub async unsafe fn alltoall(c: &Ctx, alg: Alg, b: Bufs) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let rt = Ty::of(b.rdt);
        let mut saved = None;
        let b = if in_place(b.sbuf) {
            // The data to send is in rbuf, which the receives overwrite.
            let mut t = Tmp::new(&rt, p * b.rcount);
            c.copy(b.rbuf, p * b.rcount, b.rdt, t.p(), p * b.rcount, b.rdt)?;
            let sbuf = t.p().cast_const();
            saved = Some(t);
            Bufs {
                sbuf,
                scount: b.rcount,
                sdt: b.rdt,
                ..b
            }
        } else {
            b
        };
        let st = Ty::of(b.sdt);
        let (sn, rn) = (b.scount, b.rcount);
        c.copy(
            st.at(b.sbuf, r * sn),
            sn,
            b.sdt,
            rt.at(b.rbuf, r * rn),
            rn,
            b.rdt,
        )?;
        if p >= 2 && rt.bytes(rn) > 0 {
            if alg == Alg::Linear {
                let mut reqs = Vec::new();
                for (_, i) in sched::pairwise(r, p) {
                    c.irecv(rt.at(b.rbuf, i * rn), rn, b.rdt, i, &mut reqs)?;
                }
                for (i, _) in sched::pairwise(r, p) {
                    c.isend(st.at(b.sbuf, i * sn), sn, b.sdt, i, &mut reqs)?;
                }
                c.waitall(&mut reqs).await?;
            } else {
                for (to, from) in sched::pairwise(r, p) {
                    c.sendrecv(
                        st.at(b.sbuf, to * sn),
                        sn,
                        b.sdt,
                        to,
                        rt.at(b.rbuf, from * rn),
                        rn,
                        b.rdt,
                        from,
                    )
                    .await?;
                }
            }
        }
        drop(saved);
        Ok(())
    }
}

/// Counts and displacements of one side of Alltoallv.
#[derive(Clone, Copy)]
pub struct V {
    pub counts: *const c_int,
    pub displs: *const c_int,
}

impl V {
    unsafe fn n(&self, i: usize) -> usize {
        unsafe { count(*self.counts.add(i)) }
    }
    unsafe fn at(&self, t: &Ty, buf: *const c_void, i: usize) -> *mut c_void {
        unsafe {
            t.at(buf, 0)
                .wrapping_byte_offset((*self.displs.add(i) as isize).wrapping_mul(t.ext))
        }
    }
}

/// Alltoallv (pairwise exchange).
pub async unsafe fn alltoallv(c: &Ctx, b: Bufs, s: V, rv: V) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        let rt = Ty::of(b.rdt);
        let mut saved = None;
        let (b, s) = if in_place(b.sbuf) {
            // Copy rbuf whole (up to the furthest block) before receiving.
            let mut hi = 0usize;
            for i in 0..p {
                let d = usize::try_from(*rv.displs.add(i)).unwrap_or(0);
                hi = hi.max(d + rv.n(i));
            }
            let mut t = Tmp::new(&rt, hi);
            c.copy(b.rbuf, hi, b.rdt, t.p(), hi, b.rdt)?;
            let sbuf = t.p().cast_const();
            saved = Some(t);
            (
                Bufs {
                    sbuf,
                    sdt: b.rdt,
                    ..b
                },
                rv,
            )
        } else {
            (b, s)
        };
        let st = Ty::of(b.sdt);
        c.copy(
            s.at(&st, b.sbuf, r),
            s.n(r),
            b.sdt,
            rv.at(&rt, b.rbuf, r),
            rv.n(r),
            b.rdt,
        )?;
        for (to, from) in sched::pairwise(r, p) {
            c.sendrecv(
                s.at(&st, b.sbuf, to),
                s.n(to),
                b.sdt,
                to,
                rv.at(&rt, b.rbuf, from),
                rv.n(from),
                b.rdt,
                from,
            )
            .await?;
        }
        drop(saved);
        Ok(())
    }
}

/// Counts, displacements in bytes and types of one side of Alltoallw.
#[derive(Clone, Copy)]
pub struct W {
    pub counts: *const c_int,
    pub displs: *const c_int,
    pub types: *const Datatype,
}

impl W {
    pub unsafe fn n(&self, i: usize) -> usize {
        unsafe { count(*self.counts.add(i)) }
    }
    pub unsafe fn t(&self, i: usize) -> Datatype {
        unsafe { *self.types.add(i) }
    }
    pub unsafe fn at(&self, buf: *const c_void, i: usize) -> *mut c_void {
        unsafe {
            buf.cast_mut()
                .wrapping_byte_offset(*self.displs.add(i) as isize)
        }
    }
}

/// Alltoallw (pairwise exchange, one datatype per block).
pub async unsafe fn alltoallw(c: &Ctx, sbuf: *const c_void, s: W, rbuf: *mut c_void, rw: W) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        // In place: each block of rbuf is sent from a copy of itself.
        let mut saved: Vec<Tmp> = Vec::new();
        let inplace = in_place(sbuf);
        let mut send: Vec<(*const c_void, usize, Datatype)> = Vec::with_capacity(p);
        for i in 0..p {
            if inplace {
                let (n, t) = (rw.n(i), rw.t(i));
                let mut tmp = Tmp::new(&Ty::of(t), n);
                c.copy(rw.at(rbuf, i), n, t, tmp.p(), n, t)?;
                send.push((tmp.p().cast_const(), n, t));
                saved.push(tmp);
            } else {
                send.push((s.at(sbuf, i).cast_const(), s.n(i), s.t(i)));
            }
        }
        let (sp, sn, st) = send[r];
        c.copy(sp, sn, st, rw.at(rbuf, r), rw.n(r), rw.t(r))?;
        for (to, from) in sched::pairwise(r, p) {
            let (sp, sn, st) = send[to];
            c.sendrecv(
                sp,
                sn,
                st,
                to,
                rw.at(rbuf, from),
                rw.n(from),
                rw.t(from),
                from,
            )
            .await?;
        }
        drop(saved);
        Ok(())
    }
}

// ------------------------------------------------------------ Neighbourhood

/// One block of a neighbourhood collective: `n × dt` at `p`.
#[derive(Clone, Copy)]
pub struct Blk {
    pub p: *mut c_void,
    pub n: usize,
    pub dt: Datatype,
}

/// A neighbourhood collective (MPI-3.1 §7.6): block `i` of `sends` to
/// destination `dst[i]`, block `j` of `recvs` from source `src[j]`, all at
/// once (MPI_PROC_NULL neighbours skipped).
///
/// Matching with one tag relies on order: a rank sends to its destinations
/// in index order, so a receiver posts, per source, in the order of the
/// sender's indices. For a Cartesian topology the block a rank sends in
/// direction i (2d: −, 2d+1: +) lands in its neighbour's slot i ^ 1, so
/// slots are posted in the order 1, 0, 3, 2, …: right even where one rank
/// is the neighbour on both sides (a periodic dimension of size 1 or 2).
/// Graph topologies are taken in list order.
pub async unsafe fn neighbor(
    c: &Ctx,
    src: &[c_int],
    dst: &[c_int],
    cart: bool,
    recvs: &[Blk],
    sends: &[Blk],
) -> R {
    unsafe {
        let mut reqs: Vec<Request> = Vec::with_capacity(src.len() + dst.len());
        for k in 0..src.len() {
            let j = if cart && src.len().is_multiple_of(2) {
                k ^ 1
            } else {
                k
            };
            let Ok(s) = usize::try_from(src[j]) else {
                continue; // MPI_PROC_NULL
            };
            let b = recvs[j];
            c.irecv(b.p, b.n, b.dt, s, &mut reqs)?;
        }
        for (i, &d) in dst.iter().enumerate() {
            let Ok(d) = usize::try_from(d) else {
                continue;
            };
            let b = sends[i];
            c.isend(b.p, b.n, b.dt, d, &mut reqs)?;
        }
        c.waitall(&mut reqs).await
    }
}

// ------------------------------------------------------ Reduce_scatter(_block)

/// Reduce to rank 0 (binomial, rank order), then Scatterv from rank 0.
/// `counts[i]` elements go to rank i.
pub async unsafe fn reduce_scatter(
    c: &Ctx,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    dt: Datatype,
    op: Op,
) -> R {
    unsafe {
        let r = c.r();
        let total: usize = counts.iter().sum();
        if total == 0 {
            return Ok(());
        }
        let t = Ty::of(dt);
        let inbuf = if in_place(sbuf) {
            rbuf.cast_const()
        } else {
            sbuf
        };
        let mut acc = Tmp::new(&t, if r == 0 { total } else { 0 });
        let bin = Choice {
            alg: Alg::Binomial,
            seg: 0,
        };
        reduce(c, bin, inbuf, acc.p(), total, dt, op, 0).await?;
        let ci: Vec<c_int> = counts
            .iter()
            .map(|&n| super::ctx::int(n))
            .collect::<R<_>>()?;
        let mut di = Vec::with_capacity(counts.len());
        let mut off = 0usize;
        for &n in counts {
            di.push(super::ctx::int(off)?);
            off += n;
        }
        let b = Bufs {
            sbuf: acc.p().cast_const(),
            scount: 0,
            sdt: dt,
            rbuf,
            rcount: counts[r],
            rdt: dt,
        };
        scatterv(c, b, ci.as_ptr(), di.as_ptr(), 0).await
    }
}

// --------------------------------------------------------------- Scan/Exscan

/// Inclusive (`exclusive == false`) or exclusive prefix reduction.
pub async unsafe fn scan(
    c: &Ctx,
    alg: Alg,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    dt: Datatype,
    op: Op,
    exclusive: bool,
) -> R {
    unsafe {
        let (p, r) = (c.p(), c.r());
        if n == 0 {
            return Ok(());
        }
        let t = Ty::of(dt);
        let inbuf = if in_place(sbuf) {
            rbuf.cast_const()
        } else {
            sbuf
        };
        // mine = x_r, kept apart from rbuf (which may be the input).
        let mut mine = Tmp::new(&t, n);
        c.copy(inbuf, n, dt, mine.p(), n, dt)?;
        let mut tmp = Tmp::new(&t, n);
        if alg == Alg::Linear {
            // Chain: rank r receives x0 op … op x(r−1) from r − 1.
            let chain = tree(Alg::Pipeline, r, p);
            if let Some(prev) = chain.parent {
                c.recv(tmp.p(), n, dt, prev).await?;
                if exclusive {
                    c.copy(tmp.p(), n, dt, rbuf, n, dt)?;
                }
                reduce_local(tmp.p(), mine.p(), n, dt, op)?;
            }
            for &next in &chain.children {
                c.send(mine.p(), n, dt, next).await?;
            }
            if !exclusive {
                c.copy(mine.p(), n, dt, rbuf, n, dt)?;
            }
            return Ok(());
        }
        // Recursive doubling (MPICH's algorithm): `partial` is the reduction
        // over this rank's current group, `result` over its ranks up to r.
        let mut partial = mine;
        let mut result = Tmp::new(&t, n);
        let mut have = !exclusive;
        if !exclusive {
            c.copy(partial.p(), n, dt, result.p(), n, dt)?;
        }
        for (_, d) in sched::hypercube(r, p) {
            if d < p {
                c.sendrecv(partial.p(), n, dt, d, tmp.p(), n, dt, d).await?;
                if r > d {
                    reduce_local(tmp.p(), partial.p(), n, dt, op)?;
                    if have {
                        reduce_local(tmp.p(), result.p(), n, dt, op)?;
                    } else {
                        c.copy(tmp.p(), n, dt, result.p(), n, dt)?;
                        have = true;
                    }
                } else {
                    reduce_local(partial.p(), tmp.p(), n, dt, op)?;
                    std::mem::swap(&mut partial, &mut tmp);
                }
            }
        }
        if have {
            c.copy(result.p(), n, dt, rbuf, n, dt)?;
        }
        Ok(())
    }
}
