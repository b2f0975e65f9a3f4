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
                self.recv(
                    rbuf,
                    rcount,
                    rdt,
                    src,
                    rtag,
                    comm,
                    Some(&mut reqs[1]),
                    std::ptr::null_mut(),
                )
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
            let rc = self.waitall(2, reqs.as_mut_ptr(), sts.as_mut_ptr());
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

    /// A packed copy of `count × dt` at `buf`, for the *_replace forms,
    /// whose receive overwrites the data they send.
    pub(super) unsafe fn packed_copy(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        comm: Comm,
    ) -> Result<Vec<u8>, c_int> {
        unsafe {
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
            let tmp = match self.packed_copy(buf, count, dt, comm) {
                Ok(v) => v,
                Err(rc) => return rc,
            };
            self.sendrecv(
                tmp.as_ptr().cast(),
                as_int(tmp.len()),
                self.c.packed,
                dest,
                stag,
                buf,
                count,
                dt,
                src,
                rtag,
                comm,
                status,
            )
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
            let tmp = match self.packed_copy(buf, count, dt, comm) {
                Ok(v) => v,
                Err(rc) => return rc,
            };
            self.isendrecv(
                tmp.as_ptr().cast(),
                as_int(tmp.len()),
                self.c.packed,
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
            )
        }
    }
}
