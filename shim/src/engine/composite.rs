//! Sendrecv, Sendrecv_replace and MPICH's Isendrecv(_replace): two
//! halves through the engine.

use super::*;

impl Engine {
    /// Posts both halves of a Sendrecv (MPI-4.0 §3.10) as Irecv + Isend
    /// through the engine: `[send, recv]`.
    pub(super) unsafe fn post_sendrecv(
        &self,
        sbuf: *const c_void,
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
    ) -> Result<[Request; 2], c_int> {
        unsafe {
            let mut reqs = [self.c.request_null; 2];
            let rc = if src == abi::PROC_NULL {
                PMPI_Irecv(rbuf, rcount, rdt, src, rtag, comm, &mut reqs[1])
            } else {
                self.irecv(rbuf, rcount, rdt, src, rtag, comm, &mut reqs[1])
            };
            if !ok(rc) {
                return Err(rc);
            }
            let rc = if dest == abi::PROC_NULL {
                PMPI_Isend(sbuf, scount, sdt, dest, stag, comm, &mut reqs[0])
            } else {
                self.isend(
                    Mode::Standard,
                    sbuf,
                    scount,
                    sdt,
                    dest,
                    stag,
                    comm,
                    &mut reqs[0],
                )
            };
            if !ok(rc) {
                return Err(rc);
            }
            Ok(reqs)
        }
    }

    /// The result of a Sendrecv whose two halves completed with `rc`
    /// (Waitall's): the receive's error, else the send's.
    pub fn pair_rc(rc: c_int, sts: &[Status; 2]) -> c_int {
        if rc != abi::ERR_IN_STATUS {
            return rc;
        }
        if sts[1].error() != abi::SUCCESS {
            sts[1].error()
        } else {
            sts[0].error()
        }
    }

    pub unsafe fn sendrecv(
        &self,
        sbuf: *const c_void,
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
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let mut reqs = match self.post_sendrecv(
                sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm,
            ) {
                Ok(r) => r,
                Err(rc) => return rc,
            };
            let mut sts = [Status::zeroed(); 2];
            let rc = self.waitall_own(&mut reqs, sts.as_mut_ptr());
            if !abi::status_ignored(status) {
                sts[1].copy_to(status);
            }
            Self::pair_rc(rc, &sts)
        }
    }

    /// MPI_Isendrecv (MPI-4.0 §3.10.1): the halves are posted like Isend +
    /// Irecv, and one request completes when both have, with the receive's
    /// status. `keep` is memory the send reads until then. (MPI-4: MPICH's
    /// alone.)
    #[cfg_attr(ompi, allow(dead_code))]
    pub unsafe fn isendrecv(
        &self,
        sbuf: *const c_void,
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
        keep: Vec<u8>,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            match self.post_sendrecv(
                sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm,
            ) {
                Ok(reqs) => jobs::spawn_pair(reqs, keep, req),
                Err(rc) => rc,
            }
        }
    }

    /// `packed_copy` with the count and type it is sent as
    /// (`packed_bytes`; free the type with `free_packed_bytes`).
    unsafe fn packed_send(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<(Vec<u8>, c_int, Datatype), c_int> {
        unsafe {
            let tmp = self.packed_copy(buf, count, dt, comm)?;
            let (k, t) = self.packed_bytes(tmp.len())?;
            Ok((tmp, k, t))
        }
    }

    /// A packed copy of `count × dt` at `buf`, for the *_replace forms,
    /// whose receive overwrites the data they send; sent as `packed_bytes`.
    pub(super) unsafe fn packed_copy(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<Vec<u8>, c_int> {
        unsafe {
            let size = type_size(dt).saturating_mul(u64::try_from(count).unwrap_or(0));
            if c_int::try_from(size).is_err() {
                // Above 2^31-1 bytes (a large-count call, `mpi4`), which
                // MPI_Pack_size cannot say: MPI packs it by a message to
                // ourselves on a private duplicate of MPI_COMM_SELF, received
                // as MPI_PACKED (MPI-4.0 §5.2.1; `place_stashed` the other
                // way round).
                let n = usize::try_from(size).unwrap_or(usize::MAX);
                let mut tmp = vec![0u8; n];
                let (k, t) = self.packed_bytes(n)?;
                let rc = PMPI_Sendrecv(
                    buf,
                    count,
                    dt,
                    0,
                    0,
                    tmp.as_mut_ptr().cast(),
                    k,
                    t,
                    0,
                    0,
                    self.self_comm.0,
                    status_ignore(),
                );
                self.free_packed_bytes(t);
                return if ok(rc) { Ok(tmp) } else { Err(rc) };
            }
            let mut psize: c_int = 0;
            let rc = PMPI_Pack_size(count, dt, comm, &mut psize);
            if !ok(rc) {
                return Err(rc);
            }
            let mut tmp = vec![0u8; usize::try_from(psize).unwrap_or(0)];
            let mut pos: c_int = 0;
            if count > 0 {
                let rc = pack(buf, count, dt, tmp.as_mut_ptr(), psize, &mut pos, comm);
                if !ok(rc) {
                    return Err(rc);
                }
            }
            tmp.truncate(usize::try_from(pos).unwrap_or(0));
            Ok(tmp)
        }
    }

    pub unsafe fn sendrecv_replace(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        stag: c_int,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let (tmp, k, t) = match self.packed_send(buf, count, dt, comm) {
                Ok(p) => p,
                Err(rc) => return rc,
            };
            let rc = self.sendrecv(
                tmp.as_ptr().cast(),
                k,
                t,
                dest,
                stag,
                buf,
                count,
                dt,
                src,
                rtag,
                comm,
                status,
            );
            self.free_packed_bytes(t);
            rc
        }
    }

    /// MPI_Isendrecv_replace: as `isendrecv`, sending a packed copy.
    #[cfg_attr(ompi, allow(dead_code))]
    pub unsafe fn isendrecv_replace(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        stag: c_int,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            let (tmp, k, t) = match self.packed_send(buf, count, dt, comm) {
                Ok(p) => p,
                Err(rc) => return rc,
            };
            // The send pending on `t` completes normally once it is freed
            // (MPI-4.0 §5.1.9).
            let rc = self.isendrecv(
                tmp.as_ptr().cast(),
                k,
                t,
                dest,
                stag,
                buf,
                count,
                dt,
                src,
                rtag,
                comm,
                tmp,
                req,
            );
            self.free_packed_bytes(t);
            rc
        }
    }
}
