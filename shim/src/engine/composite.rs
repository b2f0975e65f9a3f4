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
            let post_send = |r: &mut Request| {
                if dest == abi::PROC_NULL {
                    PMPI_Isend(sbuf, scount, sdt, dest, stag, comm, r)
                } else {
                    self.isend(Mode::Standard, sbuf, scount, sdt, dest, stag, comm, r)
                }
            };
            // A send half sure to fail goes first: its failure then leaves
            // no receive posted to take a later message (natively MPI
            // checks both halves before it posts either). Should MPI take
            // it after all, the receive follows; the order of the halves
            // is the shim's own.
            let send_first = self.send_half_fails(dest, stag, comm);
            if send_first {
                let rc = post_send(&mut reqs[0]);
                if !ok(rc) {
                    return Err(rc);
                }
            }
            let rc = if src == abi::PROC_NULL {
                PMPI_Irecv(rbuf, rcount, rdt, src, rtag, comm, &mut reqs[1])
            } else {
                self.irecv(rbuf, rcount, rdt, src, rtag, comm, &mut reqs[1])
            };
            if !ok(rc) {
                return Err(rc);
            }
            if !send_first {
                let rc = post_send(&mut reqs[0]);
                if !ok(rc) {
                    // A failure `send_half_fails` did not foresee (say, an
                    // uncommitted datatype): the receive is withdrawn, so
                    // that it takes no later message. Should it have
                    // matched one already, the cancel fails and the
                    // message is received here (MPI-4.0 §3.8.4).
                    note_cancel();
                    PMPI_Cancel(&mut reqs[1]);
                    self.wait(&mut reqs[1], status_ignore());
                    return Err(rc);
                }
            }
            Ok(reqs)
        }
    }

    /// Whether the send half of a Sendrecv to `dest` with tag `tag` on
    /// `comm` is sure to fail MPI's checks: a tag outside 0..=MPI_TAG_UB,
    /// or a destination that is neither MPI_PROC_NULL nor a rank of `comm`
    /// (of its remote group, for an intercommunicator). Where it cannot
    /// tell (the ranks of `comm` unknown), false. A half it takes wrongly
    /// for failing is only posted first. (A negative count or
    /// MPI_DATATYPE_NULL never reaches the engine: `refuses`.)
    pub(super) unsafe fn send_half_fails(&self, dest: c_int, tag: c_int, comm: Comm) -> bool {
        unsafe {
            if u32::try_from(tag).map_or(true, |t| t > self.tag_ub) {
                return true;
            }
            if dest == abi::PROC_NULL {
                return false;
            }
            let Ok(d) = usize::try_from(dest) else {
                return true;
            };
            if comm == self.c.comm_world {
                return dest >= self.size;
            }
            let n = self.world_ranks_of(&mut self.lock(), comm).len();
            n > 0 && d >= n
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
            if let Some(rc) = self.sendrecv_slots(
                sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, status,
            ) {
                return rc;
            }
            if self.refuses_derived(sbuf, scount.into(), sdt, false)
                || self.refuses_derived(rbuf, rcount.into(), rdt, true)
            {
                return PMPI_Sendrecv(
                    sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, status,
                );
            }
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

    /// MPI_Sendrecv of two small contiguous messages (each within
    /// `slot_max`), a step of the shim's collectives and of most halo
    /// exchanges: both halves staged in slots of the light lane as Irecv
    /// and Isend stage them. Where arrivals are seen (across hosts), they
    /// are posted apart, completed by `waitall_seen` and finished
    /// as `waitall_native_first` finishes them (the send, then the
    /// receive, each past its gate), but outside the request table, since
    /// nothing but this call sees their requests (entering and taking
    /// them cost ~230 of the ~770 instructions of one Sendrecv step at
    /// 8 B, `scripts/bench-instr-coll.sh`). Requests that MPI leaves
    /// incomplete or unknown (an error) are entered in the table as the
    /// general path leaves them. `None`: not that case. Where no arrival
    /// is seen, both slots go by one native MPI_Sendrecv instead
    /// (`sendrecv_one_call`).
    #[inline(always)]
    unsafe fn sendrecv_slots(
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
    ) -> Option<c_int> {
        unsafe {
            // As `irecv` and `waitall_own` choose their light paths: no
            // stashed or freed receives to match first, no nonblocking
            // collective to progress meanwhile, no g_r to order deliveries.
            if dest == abi::PROC_NULL
                || src == abi::PROC_NULL
                || !self.nothing_to_match_first_for(rtag)
                || jobs::must_poll()
                || self.cfg.any_g_r()
            {
                return None;
            }
            let rcap = small_contiguous(rdt, rcount, self.slot_max)?;
            let sn = small_contiguous(sdt, scount, self.slot_max)?;
            if !self.uses_seen {
                return Some(
                    self.sendrecv_one_call(
                        sbuf, sn, dest, stag, rbuf, rcap, src, rtag, comm, status,
                    ),
                );
            }
            // Where the arrival is seen, the general path posts a send half
            // sure to fail first (`post_sendrecv`).
            if self.send_half_fails(dest, stag, comm) {
                return None;
            }
            let mut reqs = [self.c.request_null; 2];
            let rs = match self.post_recv_slot(rbuf.cast(), rcap, src, rtag, comm, &mut reqs[1]) {
                Ok(s) => s,
                Err(rc) => return Some(rc),
            };
            let (ss, ready) =
                match self.post_send_slot(Mode::Standard, sbuf, sn, dest, stag, comm, &mut reqs[0])
                {
                    Ok(s) => s,
                    Err(rc) => {
                        // As the general path leaves it: the receive posted
                        // and entered.
                        drop(self.lock().reqs.track_light(key(reqs[1]), rs, 0));
                        return Some(rc);
                    }
                };
            let keys = reqs;
            let mut sts = [Status::zeroed(); 2];
            // Here `uses_seen`: the one-call path above serves the rest.
            let mut seen = complete::SeenArrays::new(2);
            let rc_native = self.waitall_seen(&mut reqs, &mut sts, &mut seen);
            let absent = &seen.absent;
            let came = now();
            let in_status = rc_native == abi::ERR_IN_STATUS;
            let failed = rc_native != abi::SUCCESS && !in_status;
            let mut rc_all = rc_native;
            // At zero knobs both halves are usually finished here at once
            // (`finish_idle`, as `waitall_light` does), the rest below.
            let mut done = [false; 2];
            if self.finishes_idle(rc_native) {
                let mut g = self.lock();
                done[0] = self.finish_idle(&mut g, ss, &mut sts[0], true);
                done[1] = self.finish_idle(&mut g, rs, &mut sts[1], true);
            }
            for (i, s) in [(0, ss), (1, rs)] {
                if done[i] {
                    continue;
                }
                if failed || (in_status && sts[i].error() == abi::ERR_PENDING) {
                    let mut st = self.lock();
                    if i == 0 {
                        st.track_light_send(key(keys[0]), s, ready);
                    } else {
                        drop(st.reqs.track_light(key(keys[1]), s, 0));
                    }
                    continue;
                }
                let came_i = absent.get(i).copied().unwrap_or(false).then_some(came);
                self.finish_of_waitall(i, &mut sts, in_status, came_i, &mut rc_all, |st, rc| {
                    self.finish_light(s, st, rc)
                });
            }
            if failed {
                return Some(rc_native);
            }
            if !abi::status_ignored(status) {
                sts[1].copy_to(status);
            }
            Some(Self::pair_rc(rc_all, &sts))
        }
    }

    /// `sendrecv_slots` where no arrival is seen (`uses_seen` false): the two
    /// slots go by one native MPI_Sendrecv, no request of ours (the
    /// shim's own instructions per 8-byte exchange ~620 → ~470 on both
    /// MPIs, `OP=x SIZE=8 scripts/bench-instr-coll.sh`; natively MPICH's
    /// Sendrecv also costs less than its Irecv + Isend + Waitall). And MPI
    /// checks both halves' arguments before it posts either, as natively:
    /// a send half that fails after its receive was posted left that
    /// receive to take a later message. The halves are then finished as
    /// `sendrecv_slots` finishes them: the send, then the receive past
    /// its gate.
    #[inline(never)]
    unsafe fn sendrecv_one_call(
        &self,
        sbuf: *const c_void,
        sn: usize,
        dest: c_int,
        stag: c_int,
        rbuf: *mut c_void,
        rcap: usize,
        src: c_int,
        rtag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let rs = self.slot_for_recv(rbuf.cast(), rcap, comm);
            let (ss, _) = self.slot_to_send(sbuf, sn, dest, stag, comm);
            let mut st = Status::zeroed();
            let rc = PMPI_Sendrecv(
                ss.ptr().cast(),
                as_int(ss.slot().len),
                self.c.packed,
                dest,
                stag,
                rs.ptr().cast(),
                as_int(HDR + rcap),
                self.c.packed,
                src,
                rtag,
                comm,
                &mut st,
            );
            if rc != abi::SUCCESS && !is_truncation(rc) {
                // MPI does not say which half failed, nor whether a receive
                // it posted inside the call that failed may still write
                // its slot: both slots stay out of the free lists.
                return rc;
            }
            let want = !abi::status_ignored(status);
            let mut st_send = Status::zeroed();
            let mut done = [false; 2];
            if self.finishes_idle(rc) {
                let mut g = self.lock();
                done[0] = self.finish_idle(&mut g, ss, &mut st_send, false);
                done[1] = self.finish_idle(&mut g, rs, &mut st, want);
            }
            if !done[0] {
                self.finish_light(ss, &mut st_send, abi::SUCCESS);
            }
            let mut rc_all = rc;
            if !done[1] {
                let rc_recv = self.finish_light(rs, &mut st, rc);
                if rc == abi::SUCCESS {
                    rc_all = rc_recv;
                }
            }
            if want {
                st.copy_to(status);
            }
            rc_all
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
