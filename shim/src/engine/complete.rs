//! Completion: Wait, Test and their any/all/some forms and
//! MPI_Request_get_status, each completing a request of the shim only once
//! it is complete natively *and* in the emulated machine. When that is,
//! and which request of a pass completes, is decided by
//! `loggp_core::lifecycle`; this room asks MPI and delivers.

use super::*;

/// What `take_quick` found of a request.
enum Quick {
    Light(LightTaken),
    General,
    Untracked,
}

impl Engine {
    /// True when some request in `reqs` is tracked by the shim. Every
    /// multiple-completion call starts here, so freed receives are reaped
    /// here too.
    pub(super) unsafe fn any_tracked(&self, reqs: &[Request]) -> bool {
        self.reap_freed();
        let st = self.lock();
        !st.reqs.is_empty() && reqs.iter().any(|r| st.reqs.contains(key(*r)))
    }

    /// `RecvGate::ready_at` of a message from `src` (MPI_COMM_WORLD rank)
    /// with the knobs of its pair.
    pub(super) fn ready_at(&self, gate: &RecvGate, d: u64, src: u32, l: u64, bytes: u64) -> u64 {
        let k = self.recv_knobs(src, l);
        gate.ready_at_for(src, d, bytes, Seen::Unknown, k.as_ref())
    }

    /// For a natively complete tracked request (status `st`): the time at
    /// which it may complete in the emulated machine.
    pub(super) unsafe fn ready_time(&self, e: &Taken, st: &Status, gate: &RecvGate) -> u64 {
        unsafe {
            let native = self.native_of(e.kind(), st);
            e.ready_time(native, |_, p| self.delivery_time(p, st, gate))
        }
    }

    /// What a natively complete request's status says for its life cycle.
    /// Only a nonblocking receive is asked whether it was cancelled.
    unsafe fn native_of(&self, kind: Kind, st: &Status) -> Native {
        unsafe {
            match kind {
                // A receive (persistent or not) can be cancelled only once the
                // application has called MPI_Cancel: until then no call.
                Kind::Recv | Kind::PRecv => {
                    let mut cancelled: c_int = 0;
                    if cancels_seen() {
                        PMPI_Test_cancelled(st, &mut cancelled);
                    }
                    Native {
                        cancelled: cancelled != 0,
                        from_null: st.source() == abi::PROC_NULL,
                    }
                }
                _ => Native::default(),
            }
        }
    }

    /// When the message of a natively complete receive (status `st`)
    /// passes the gate.
    unsafe fn delivery_time(&self, p: &Pending, st: &Status, gate: &RecvGate) -> u64 {
        unsafe {
            match p {
                Pending::FromStash { msg, .. } => {
                    self.ready_at(gate, msg.d, msg.src, msg.l, msg.payload().len() as u64)
                }
                Pending::Recv(wire) => {
                    let payload = wire.payload_len(status_bytes(st, self.c.byte)) as u64;
                    let h = wire.header();
                    self.ready_at(gate, h.d, h.src(), h.l(), payload)
                }
                Pending::PRecv {
                    served: Some(s), ..
                } => self.ready_at(
                    gate,
                    s.msg.d,
                    s.msg.src,
                    s.msg.l,
                    s.msg.payload().len() as u64,
                ),
                Pending::PRecv {
                    hdr, split, recv, ..
                } => {
                    let at = if recv.stage.is_null() {
                        std::ptr::addr_of!(**hdr).cast::<u8>()
                    } else {
                        recv.stage.cast_const()
                    };
                    let got = status_bytes(st, self.c.byte);
                    let payload = match split {
                        Split::Done { bytes, .. } => *bytes,
                        _ => got.saturating_sub(hdr_len(at, got)),
                    } as u64;
                    let h = Header::read_from(at);
                    self.ready_at(gate, h.d, h.src(), h.l(), payload)
                }
                _ => 0,
            }
        }
    }

    /// Finishes a tracked request that MPI has completed (status `st`):
    /// waits for its emulated completion when `block`, then delivers.
    pub(super) unsafe fn finish(
        &self,
        e: &mut Taken,
        st: &mut Status,
        block: bool,
        rc: c_int,
    ) -> c_int {
        unsafe {
            if matches!(e.kind(), Kind::Send | Kind::PSend) {
                match e.data_mut() {
                    Some(Pending::Send {
                        header: Some(h), ..
                    })
                    | Some(Pending::PSend {
                        split:
                            Some(PSplit {
                                header: Some(h), ..
                            }),
                        ..
                    }) => {
                        // A split send's header: sent before its payload,
                        // which has arrived (this request), so this returns
                        // at once.
                        PMPI_Wait(h, status_ignore());
                    }
                    _ => {}
                }
                if block {
                    self.hold_until(e.complete_at());
                }
                return abi::SUCCESS;
            }
            match e.data_mut() {
                Some(Pending::Coll { k }) => jobs::finish(*k, st),
                Some(Pending::Recv(wire)) => self.finish_recv(wire, st, block, rc),
                Some(Pending::PRecv {
                    served: Some(s), ..
                }) => self.deliver_stashed(&s.msg, s.n, s.truncated, st, block),
                Some(Pending::PRecv {
                    hdr,
                    recv,
                    split,
                    placed,
                    ..
                }) => {
                    let mut w = Self::precv_wire(hdr, recv, *split, *placed);
                    self.finish_recv(&mut w, st, block, rc)
                }
                Some(Pending::FromStash { msg, n, truncated }) => {
                    self.deliver_stashed(msg, *n, *truncated, st, block)
                }
                _ => abi::SUCCESS,
            }
        }
    }

    /// Where a started persistent receive's message landed, as the wire of
    /// a nonblocking receive: the request's own buffer when staged
    /// (`PRecvArgs::stage`), else the struct datatype's header (a copy of
    /// `hdr`) and the application's buffer.
    fn precv_wire(hdr: &Header, recv: &PRecvArgs, split: Split, placed: bool) -> Wire {
        match recv.stage() {
            Some(stage) => Wire::Staged {
                stage,
                buf: recv.buf.cast(),
                cap: recv.cap,
                placed,
                comm: recv.comm,
            },
            None => Wire::Struct {
                hdr: HdrMem::own(*hdr),
                // The request's own duplicate, freed with it.
                into: Landing::Typed {
                    buf: recv.buf,
                    count: recv.count,
                    dt: recv.dt,
                    owned: false,
                },
                split,
                comm: recv.comm,
            },
        }
    }

    /// Takes the entry of `r` out of the table for completion; persistent
    /// entries stay (now inactive) and a working copy of what completion
    /// needs is returned (`lifecycle::Table::take`).
    pub(super) fn take(&self, r: Request) -> Option<Taken> {
        let mut st = self.lock();
        Self::unwatch(&mut st, r);
        st.reqs.take(key(r), |p| match p {
            // A watched receive completing is watched no more: its payload
            // is in or waited for here, and its handle may name another
            // request next.
            Pending::PSend {
                hdr,
                compact,
                bytes,
                dest,
                tag,
                comm,
                split,
                ..
            } => Pending::PSend {
                hdr: Box::new(**hdr),
                compact: *compact,
                // Completion does not read it; the live entry keeps it.
                staged: None,
                bytes: *bytes,
                dest: *dest,
                tag: *tag,
                comm: *comm,
                // The header's request moves to the working copy, which
                // completion waits for; the live entry keeps its memory.
                split: split.as_mut().map(|s| PSplit {
                    ptag: s.ptag,
                    header: s.header.take(),
                }),
            },
            // Served from the stash: its message moves to the working copy
            // (the live entry turns inactive).
            Pending::PRecv {
                hdr,
                recv,
                served,
                split,
                placed,
                ..
            } => Pending::PRecv {
                hdr: Box::new(**hdr),
                recv: Box::new(PRecvArgs { ..**recv }),
                served: served.take(),
                split: std::mem::take(split),
                // The live entry keeps the buffer (`recv.stage` names it).
                own: None,
                placed: *placed,
            },
            // A buffered persistent send's completion needs nothing of it
            // (and no other kind is copied).
            _ => Pending::PBsend {
                buf: std::ptr::null(),
                count: 0,
                dt: self.c.byte,
                dest: 0,
                tag: 0,
                comm: self.c.comm_world,
            },
        })
    }

    /// A request completing is watched no more (`watch_split`): its
    /// payload is in or waited for by its completion, and its handle may
    /// name another request next.
    #[inline]
    fn unwatch(st: &mut State, r: Request) {
        if !st.watch.is_empty() {
            st.watch.retain(|&w| w != r);
            jobs::WATCHED.store(st.watch.len(), Ordering::Relaxed);
        }
    }

    /// `take_light`, or else whether the table holds `r` at all.
    #[inline(always)]
    fn take_quick(&self, r: Request) -> Quick {
        let mut st = self.lock();
        if let Some(l) = st.reqs.take_light(key(r)) {
            Self::unwatch(&mut st, r);
            return Quick::Light(l);
        }
        if st.reqs.is_general(key(r)) {
            Quick::General
        } else {
            Quick::Untracked
        }
    }

    /// Takes `r`'s light entry out of the table for completion, if it is
    /// a light request (`lifecycle::Table::take_light`): else `take`.
    #[inline(always)]
    pub(super) fn take_light(&self, r: Request) -> Option<LightTaken> {
        let mut st = self.lock();
        let l = st.reqs.take_light(key(r))?;
        Self::unwatch(&mut st, r);
        Some(l)
    }

    pub unsafe fn wait(&self, req: *mut Request, status: *mut Status) -> c_int {
        unsafe {
            self.reap_freed();
            let r = *req;
            if r == self.c.request_null {
                return PMPI_Wait(req, status);
            }
            let polled = jobs::must_poll();
            if polled {
                // A nonblocking collective alone in flight, and this its
                // request: its steps wait natively.
                jobs::drive(key(r));
                // Nonblocking collectives in flight: wait by polling, so that
                // they progress meanwhile (the request may depend on them).
                let mut patience = Patience::new();
                loop {
                    if self.poll(r).done(|| self.native_done(r)) {
                        break;
                    }
                    jobs::progress_all();
                    patience.pause();
                }
            }
            let mut st = Status::zeroed();
            if !polled && !self.uses_seen {
                // `complete_one`'s first two cases with one look into the
                // table.
                match self.take_quick(r) {
                    Quick::Light(l) => {
                        let rc = PMPI_Wait(req, &mut st);
                        let rc2 = self.finish_light(l, &mut st, rc);
                        if !abi::status_ignored(status) {
                            st.copy_to(status);
                        }
                        return if ok(rc) { rc2 } else { rc };
                    }
                    // Not the shim's (a send that MPI and the emulated
                    // machine completed at creation, a request of the
                    // application's own): MPI's Wait, as `complete_one`'s.
                    Quick::Untracked => return PMPI_Wait(req, status),
                    Quick::General => {}
                }
            }
            let rc = if !polled && self.uses_seen {
                // A blocking native Wait (else the loop above polled): was the
                // request complete already, or did it wait?
                self.complete_with(req, &mut st, |req, st| wait_seen(req, st))
            } else {
                self.complete_one(req, &mut st)
            };
            if self.uses_seen {
                set_waited(NOT_WAITED);
            }
            if !abi::status_ignored(status) {
                st.copy_to(status);
            }
            rc
        }
    }

    /// Completes `reqs[i]` (known complete natively and ready) into `st`.
    pub(super) unsafe fn complete_one(&self, req: *mut Request, st: &mut Status) -> c_int {
        unsafe { self.complete_with(req, st, |req, st| PMPI_Wait(req, st)) }
    }

    /// `complete_one`, completing natively with `native` (a Wait, or a
    /// Test then a Wait).
    #[inline]
    unsafe fn complete_with(
        &self,
        req: *mut Request,
        st: &mut Status,
        native: impl FnOnce(*mut Request, &mut Status) -> c_int,
    ) -> c_int {
        unsafe {
            let r = *req;
            if let Some(l) = self.take_light(r) {
                let rc = native(req, st);
                let rc2 = self.finish_light(l, st, rc);
                return if ok(rc) { rc2 } else { rc };
            }
            match self.take(r) {
                None => native(req, st),
                Some(mut e) => {
                    let rc = native(req, st);
                    if e.kind() == Kind::PRecv {
                        recall_status(r, st, true);
                        self.refresh_header(r, &mut e);
                    }
                    let rc2 = self.finish(&mut e, st, true, rc);
                    self.recycle(&mut e);
                    if ok(rc) {
                        rc2
                    } else {
                        rc
                    }
                }
            }
        }
    }

    /// A persistent receive's working copy (`take`) gets the header MPI
    /// wrote into the live entry.
    fn refresh_header(&self, r: Request, e: &mut Taken) {
        if let Some(Pending::PRecv { hdr, .. }) = e.data_mut() {
            if let Some(Pending::PRecv { hdr: live, .. }) = self.lock().reqs.get(key(r)) {
                **hdr = **live;
            }
        }
    }

    /// Where a request stands for the emulated machine. The clock is read
    /// only for a request of ours that MPI has completed: a Test of
    /// MPI_REQUEST_NULL or of a request the shim does not track (a
    /// polling loop's usual call) reads none.
    pub(super) unsafe fn poll(&self, r: Request) -> Poll {
        unsafe { self.poll_when(r, now) }
    }

    /// `poll` as of time `t`. A pass over several requests (Waitany,
    /// Testsome) judges them all at one `t`: judged each at its own time, a
    /// later message of a channel could be found ready after an earlier one
    /// was found not yet, though the earlier arrives no later (an ordered
    /// channel, or a varied L raised to arrive with the message before it:
    /// `loggp_core::dist::Channels`), and overtake it.
    pub(super) unsafe fn poll_at(&self, r: Request, t: u64) -> Poll {
        unsafe { self.poll_when(r, || t) }
    }

    /// `poll_at` at the time `t` gives, asked only when a completion is
    /// to be judged.
    #[inline(always)]
    unsafe fn poll_when(&self, r: Request, t: impl FnOnce() -> u64) -> Poll {
        unsafe {
            let k = key(r);
            // Not in the match: its job's progress may take the state.
            let look = self.lock().reqs.look(k);
            match look {
                Look::Untracked => return Poll::Untracked,
                Look::Inactive => return Poll::Inactive,
                Look::Active(Kind::Coll) => {
                    return if jobs::done(k) {
                        Poll::Ready
                    } else {
                        Poll::NotReady
                    };
                }
                Look::Active(_) => {}
            }
            let mut flag: c_int = 0;
            let mut s = Status::zeroed();
            PMPI_Request_get_status(r, &mut flag, &mut s);
            if flag == 0 {
                return Poll::NotReady;
            }
            let mut st = self.lock();
            // A header alone (32 bytes): its payload must be in too.
            let got = status_bytes(&s, self.c.byte);
            if got == HDR {
                if let Some(p) = st.reqs.get_mut(k) {
                    if !self.split_in(p, got) {
                        return Poll::NotReady;
                    }
                }
            }
            st.reqs.promote(k);
            let Some(e) = st.reqs.entry(k) else {
                return Poll::Untracked;
            };
            if e.kind() == Kind::PRecv {
                remember_status(r, &s);
                recall_status(r, &mut s, false);
            }
            let native = self.native_of(e.kind(), &s);
            st.reqs.judge_entry(k, e, t(), native, |_, p| {
                self.delivery_time(p, &s, &st.gate)
            })
        }
    }

    /// Native completion of an untracked request, without freeing it.
    pub(super) unsafe fn native_done(&self, r: Request) -> bool {
        unsafe {
            let mut f: c_int = 0;
            let mut st = Status::zeroed();
            PMPI_Request_get_status(r, &mut f, &mut st);
            f != 0
        }
    }

    pub unsafe fn test(&self, req: *mut Request, flag: *mut c_int, status: *mut Status) -> c_int {
        unsafe {
            self.reap_freed();
            let r = *req;
            if r == self.c.request_null {
                // As `wait`, and as both libraries answer it: at once, with
                // an empty status, without a look into the table or a
                // progress pass (Open MPI 4.1 and MPICH 4.0 progress
                // nothing on a null request either).
                return PMPI_Test(req, flag, status);
            }
            jobs::progress_all();
            match self.poll(r) {
                Poll::Untracked | Poll::Inactive => PMPI_Test(req, flag, status),
                Poll::NotReady => {
                    *flag = 0;
                    abi::SUCCESS
                }
                Poll::Ready => {
                    *flag = 1;
                    let mut st = Status::zeroed();
                    let rc = self.complete_one(req, &mut st);
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    rc
                }
            }
        }
    }

    pub unsafe fn request_get_status(
        &self,
        r: Request,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            jobs::progress_all();
            match self.poll(r) {
                Poll::Untracked | Poll::Inactive => PMPI_Request_get_status(r, flag, status),
                Poll::NotReady => {
                    *flag = 0;
                    abi::SUCCESS
                }
                Poll::Ready => {
                    // Complete but not freed: deliver the data now (placing is
                    // done once), report a fixed status, keep the request.
                    *flag = 1;
                    let mut st = Status::zeroed();
                    let rc = PMPI_Request_get_status(r, flag, &mut st);
                    recall_status(r, &mut st, false);
                    let mut s = self.lock();
                    if let Some(Pending::PRecv {
                        served: Some(m), ..
                    }) = s.reqs.get(key(r))
                    {
                        // Served from the stash: MPI's status is empty.
                        st.set_source(m.msg.env.source);
                        st.set_tag(m.msg.env.tag);
                        set_status_bytes(&mut st, self.c.byte, m.n as u64);
                    }
                    if let Some(Pending::PRecv {
                        hdr,
                        recv,
                        served: None,
                        split,
                        placed,
                        ..
                    }) = s.reqs.get_mut(key(r))
                    {
                        // Its payload goes to the application's buffer now
                        // (from the request's own, which MPI does not
                        // write again until the next Start, or from the
                        // header's room), and its status counts that.
                        let mut w = Self::precv_wire(hdr, recv, *split, *placed);
                        *placed = true;
                        drop(s);
                        self.peek_recv(&mut w, &mut st);
                        s = self.lock();
                    }
                    if let Some(Pending::Recv(wire)) = s.reqs.get_mut(key(r)) {
                        let mut w = std::mem::replace(wire, Wire::empty(self.c.comm_null));
                        drop(s);
                        self.peek_recv(&mut w, &mut st);
                        s = self.lock();
                        if let Some(Pending::Recv(wire)) = s.reqs.get_mut(key(r)) {
                            *wire = w;
                        }
                    }
                    drop(s);
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    rc
                }
            }
        }
    }

    /// Places a staged receive and fixes its status without delivering it.
    pub(super) unsafe fn peek_recv(&self, wire: &mut Wire, st: &mut Status) {
        unsafe {
            let got = status_bytes(st, self.c.byte);
            let n = if wire.is_compact(got) {
                // Its truncation, if any, is raised at completion.
                match self.place_compact(wire, got) {
                    Ok((n, _)) => n,
                    Err(_) => 0,
                }
            } else {
                wire.place(got);
                wire.payload_len(got)
            };
            set_status_bytes(st, self.c.byte, n as u64);
        }
    }

    pub unsafe fn waitall(&self, n: c_int, reqs: *mut Request, statuses: *mut Status) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            if len == 0 {
                return PMPI_Waitall(n, reqs, statuses);
            }
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            if !self.any_tracked(rs) && !jobs::must_poll() {
                return PMPI_Waitall(n, reqs, statuses);
            }
            if !jobs::must_poll() {
                return self.waitall_native_first(rs, statuses);
            }
            let ignore = abi::statuses_ignored(statuses);
            let mut rc_all = abi::SUCCESS;
            // Complete in the order the emulated machine allows: repeatedly the
            // tracked request with the earliest ready time, untracked ones as
            // MPI completes them.
            // On the stack for a few requests (a Sendrecv's two, watched
            // for a split payload: a calloc/free pair was ~275 of its
            // instructions at 20000 bytes, `OP=x SIZE=20000
            // scripts/bench-instr-coll.sh`).
            let mut done = Small::<bool, 8>::new(false, len);
            let mut patience = Patience::new();
            loop {
                let mut remaining = false;
                let mut progressed = false;
                for i in 0..len {
                    if done[i] {
                        continue;
                    }
                    if rs[i] == self.c.request_null {
                        done[i] = true;
                        if !ignore {
                            let mut st = Status::zeroed();
                            PMPI_Wait(&mut rs[i], &mut st);
                            st.copy_to_all(statuses.add(i));
                        }
                        continue;
                    }
                    let r = rs[i];
                    if self.poll(r).done(|| self.native_done(r)) {
                        let mut st = Status::zeroed();
                        let rc = self.complete_one(&mut rs[i], &mut st);
                        if !ok(rc) {
                            rc_all = abi::ERR_IN_STATUS;
                            st.set_error(rc);
                        }
                        if !ignore {
                            st.copy_to_all(statuses.add(i));
                        }
                        done[i] = true;
                        progressed = true;
                    } else {
                        remaining = true;
                    }
                }
                if !remaining {
                    break;
                }
                if !progressed {
                    jobs::progress_all();
                    patience.pause();
                }
            }
            rc_all
        }
    }

    /// Waitall over requests the engine itself just posted (the halves of
    /// a Sendrecv, a step of the shim's collectives): they are tracked, so
    /// the look into the table that `waitall` starts with (60
    /// instructions for two) is skipped.
    pub(crate) unsafe fn waitall_own(&self, rs: &mut [Request], statuses: *mut Status) -> c_int {
        unsafe {
            if rs.is_empty() {
                return abi::SUCCESS;
            }
            if jobs::must_poll() {
                return self.waitall(as_int(rs.len()), rs.as_mut_ptr(), statuses);
            }
            self.waitall_native_first(rs, statuses)
        }
    }

    /// `waitall_own` for a step of the job that `coll::nb::drive` runs:
    /// that job is the only one, so MPI's own Waitall may wait (unless a
    /// receive whose payload comes apart needs it posted meanwhile).
    pub(crate) unsafe fn waitall_driven(&self, rs: &mut [Request], statuses: *mut Status) -> c_int {
        unsafe {
            if rs.is_empty() {
                return abi::SUCCESS;
            }
            if jobs::WATCHED.load(Ordering::Relaxed) > 0 {
                return self.waitall(as_int(rs.len()), rs.as_mut_ptr(), statuses);
            }
            self.waitall_native_first(rs, statuses)
        }
    }

    /// Waitall when no collective of the shim's needs progress: MPI's own
    /// Waitall completes every request natively (one progress loop, not a
    /// status query per request per sweep, which cost a third of the
    /// message rate), then the shim's requests are delivered in the order
    /// of their emulated readiness, each waiting at the gate as in Wait.
    /// Waitall returns only when all are complete, so the emulated times
    /// are those of completing them one by one.
    unsafe fn waitall_native_first(&self, rs: &mut [Request], statuses: *mut Status) -> c_int {
        unsafe {
            let len = rs.len();
            let keys_kept = Small::<Request, 8>::from_slice(rs, self.c.request_null);
            // The caller's statuses where it wants them (no copy at the
            // end), else our own.
            let ignore = abi::statuses_ignored(statuses);
            let mut sts_kept = if ignore {
                Small::<Status, 8>::new(Status::zeroed(), len)
            } else {
                Small::Heap(Vec::new())
            };
            // As slices once: each access through `Small` would ask where
            // its data is (449 against 442 instructions per message in the
            // receiver's 64-message Waitall, `scripts/bench-instr.sh`).
            let keys: &[Request] = &keys_kept;
            let sts: &mut [Status] = if ignore {
                &mut sts_kept
            } else {
                std::slice::from_raw_parts_mut(statuses, len)
            };
            // Which of ours did the native completion wait for?
            let mut seen = (self.uses_seen && self.may_deliver(keys)).then(|| SeenArrays::new(len));
            let rc_native = if let Some(a) = seen.as_mut() {
                self.waitall_seen(rs, sts, a)
            } else {
                PMPI_Waitall(as_int(len), rs.as_mut_ptr(), sts.as_mut_ptr())
            };
            // The messages it waited for came by the time it returned; the
            // deliveries below may wait, and must not count from later.
            let came = if self.uses_seen { now() } else { NOT_WAITED };
            // On MPI_ERR_IN_STATUS a request whose status says MPI_ERR_PENDING
            // was not completed: it stays as it is, ours included.
            let in_status = rc_native == abi::ERR_IN_STATUS;
            if rc_native != abi::SUCCESS && !in_status {
                return rc_native;
            }
            // The order of deliveries matters only when g_r spaces them;
            // Waitall returns after the last either way. Otherwise each is
            // finished as it is taken, in the order of the array.
            let by_time = self.cfg.any_g_r();
            let mut mine: Vec<(u64, usize, Taken)> = Vec::new();
            let mut rc_all = rc_native;
            // One handle for many requests side by side in the array (Open
            // MPI's shared request of sends complete at creation): with no
            // earlier sends queued, the handle's first `take` took all there
            // was (a lookup less per message; the deliveries below track
            // nothing new). Only the request just taken is compared.
            let repeats_empty = self.lock().reqs.queues_none();
            let mut last = self.c.request_null;
            // When request `i`'s message came, if the native wait waited
            // for it.
            let absent: &[bool] = seen.as_ref().map_or(&[], |a| &a.absent);
            let came_to = |i: usize| absent.get(i).copied().unwrap_or(false).then_some(came);
            // At zero knobs, the light requests at the head of the array
            // in one pass; the loop below goes on from the first request
            // that pass left. (Asked only while some light request is
            // held, so that a Waitall of general requests alone, such as a
            // 2 KiB Sendrecv's, does not call it.)
            // (An idle gate has no g_r: `by_time` is false there.)
            let start = if !self.lock().reqs.has_light() {
                0
            } else if self.finishes_idle(rc_native) {
                self.waitall_light(keys, sts, !ignore, &mut rc_all)
            } else if self.finishes_timed(rc_native) {
                self.waitall_timed(keys, sts, !ignore, &mut rc_all, came_to)
            } else {
                0
            };
            for (i, &k) in keys.iter().enumerate().skip(start) {
                if k == self.c.request_null || (in_status && sts[i].error() == abi::ERR_PENDING) {
                    continue;
                }
                if k == last && repeats_empty {
                    continue;
                }
                last = k;
                if !by_time {
                    if let Some(l) = self.take_light(k) {
                        self.finish_of_waitall(
                            i,
                            sts,
                            in_status,
                            came_to(i),
                            &mut rc_all,
                            |st, rc| self.finish_light(l, st, rc),
                        );
                        continue;
                    }
                }
                let Some(mut p) = self.take(k) else {
                    continue;
                };
                if p.kind() == Kind::PRecv {
                    recall_status(k, &mut sts[i], true);
                    // Persistent receive: the header landed in the live entry.
                    self.refresh_header(k, &mut p);
                }
                if by_time {
                    let t = {
                        let st = self.lock();
                        self.ready_time(&p, &sts[i], &st.gate)
                    };
                    mine.push((t, i, p));
                } else {
                    self.finish_of_waitall(i, sts, in_status, came_to(i), &mut rc_all, |st, rc| {
                        self.finish_taken(&mut p, st, rc)
                    });
                }
            }
            lifecycle::delivery_order(&mut mine);
            for (_, i, mut p) in mine {
                self.finish_of_waitall(i, sts, in_status, came_to(i), &mut rc_all, |st, rc| {
                    self.finish_taken(&mut p, st, rc)
                });
            }
            if let Some(a) = seen.as_mut() {
                a.give_back();
            }
            rc_all
        }
    }

    /// Whether a Waitall of `keys` may deliver a message of the shim's,
    /// whose gate reads what the native wait saw of it (`waitall_seen`):
    /// not where every request is a send of ours or none of ours. A
    /// Waitall of sends alone then goes by MPI's own, without
    /// MPI_Testsome's passes: under `LOGGP_ARM=L` they cost MPICH 4.0's
    /// sender 579 of its instructions per message in a 64-send Waitall,
    /// against 91 at zero knobs (`scripts/bench-instr.sh mpich`).
    fn may_deliver(&self, keys: &[Request]) -> bool {
        let g = self.lock();
        keys.iter().any(|&k| {
            k != self.c.request_null
                && !matches!(
                    g.reqs.kind(key(k)),
                    None | Some(Kind::Send | Kind::PSend | Kind::PBsend)
                )
        })
    }

    /// `waitall_native_first`'s usual case at zero knobs
    /// (`finishes_idle`): its
    /// light requests finished in one pass under one borrow of the state
    /// (`finish_idle`), or where that declines through `finish_light`.
    /// Returns the index of the first request that is not a light one (or
    /// `keys.len()`): the general loop finishes the rest. (Request by
    /// request through that loop, the receiver's Waitall cost 211 of the
    /// shim's instructions per message of a 64-message window,
    /// `scripts/bench-instr.sh`.)
    #[inline(never)]
    unsafe fn waitall_light(
        &self,
        keys: &[Request],
        sts: &mut [Status],
        want_count: bool,
        rc_all: &mut c_int,
    ) -> usize {
        unsafe {
            let mut g = self.lock();
            if !g.watch.is_empty() {
                return 0;
            }
            for (i, &k) in keys.iter().enumerate() {
                if k == self.c.request_null {
                    continue;
                }
                let Some(s) = g.reqs.take_light(key(k)) else {
                    return i;
                };
                let st = &mut sts[i];
                if self.finish_idle(&mut g, s, st, want_count) {
                    continue;
                }
                // A send, a cancel, MPI_PROC_NULL, a truncation, a header
                // alone: `finish_light`'s, the state given back meanwhile.
                drop(g);
                let rc = self.finish_light(s, st, abi::SUCCESS);
                if !ok(rc) {
                    fail_in_status(sts, i, rc, false, rc_all);
                }
                g = self.lock();
                if !g.watch.is_empty() {
                    return i + 1;
                }
            }
            keys.len()
        }
    }

    /// `waitall_light` where the gate decides only by L and G
    /// (`finishes_timed`): one clock read for the whole pass, when MPI
    /// had completed them all, and each delivery reserved at the gate
    /// from then in the state borrowed once, held only where the gate
    /// says so. Request by request through the general loop, each
    /// delivery read the clock, took the state three times and set what
    /// the native wait saw twice: 752 of the shim's instructions per
    /// message in the receiver's Waitall under `LOGGP_ARM=L`, against
    /// 170 at zero knobs (`scripts/bench-instr.sh openmpi`). `came_to(i)`:
    /// when request `i`'s message came, if the native wait waited for it.
    #[inline(never)]
    unsafe fn waitall_timed(
        &self,
        keys: &[Request],
        sts: &mut [Status],
        want_count: bool,
        rc_all: &mut c_int,
        came_to: impl Fn(usize) -> Option<u64>,
    ) -> usize {
        unsafe {
            // Every message MPI completed was there by now: the gate's
            // `now` for them all (the shim's own work in this pass is no
            // time of the emulated machine's).
            let mut t = now();
            let mut g = self.lock();
            if !g.watch.is_empty() {
                return 0;
            }
            for (i, &k) in keys.iter().enumerate() {
                if k == self.c.request_null {
                    continue;
                }
                let Some(s) = g.reqs.take_light(key(k)) else {
                    return i;
                };
                let st = &mut sts[i];
                let slot = s.slot();
                let landed = if slot.recv { self.landed(s, st) } else { None };
                if let Some(at) = landed {
                    let seen = came_to(i).map_or(Seen::Unknown, Seen::CameAt);
                    let r = self.reserve_plain(&mut g, s, at.payload, t, seen);
                    if r > t {
                        drop(g);
                        self.pass_time(r, false);
                        t = r;
                        g = self.lock();
                    }
                    self.deliver_idle(&mut g, s, st, at, want_count);
                    continue;
                }
                if !slot.recv && slot.complete_at <= t {
                    g.slots.give(s);
                    continue;
                }
                // A send still in the emulated machine, a cancel, MPI_PROC_NULL,
                // a truncation, a header alone: `finish_light`'s, the state
                // given back meanwhile.
                drop(g);
                self.finish_of_waitall(i, sts, false, came_to(i), rc_all, |st, rc| {
                    self.finish_light(s, st, rc)
                });
                g = self.lock();
                if !g.watch.is_empty() {
                    return i + 1;
                }
            }
            keys.len()
        }
    }

    /// Whether `waitall_timed` finishes a Waitall's light requests: after
    /// a native completion that succeeded (`rc_native`), no cancel seen,
    /// at a plain gate (`gate_is_plain`).
    #[inline(always)]
    fn finishes_timed(&self, rc_native: c_int) -> bool {
        rc_native == abi::SUCCESS && self.gate_is_plain() && !cancels_seen()
    }

    /// Whether a light request completed natively can be finished in the
    /// state the caller holds (`finish_idle`): at an idle gate, with no
    /// arrivals read and no cancel seen, after a native completion that
    /// succeeded (`rc_native`).
    #[inline(always)]
    pub(super) fn finishes_idle(&self, rc_native: c_int) -> bool {
        rc_native == abi::SUCCESS && self.idle_gate && !self.uses_seen && !cancels_seen()
    }

    /// Finishes light request `s` (status `st`) in the state `g` already
    /// borrowed, where that is all `finish_light` would do
    /// (`finishes_idle`, the caller's condition): a send complete in the
    /// emulated machine (its slot back), or a receive that landed whole
    /// (`deliver_idle`). False for anything else, which the caller hands
    /// to `finish_light` with the state given back.
    #[inline(always)]
    pub(super) unsafe fn finish_idle(
        &self,
        g: &mut State,
        s: LightTaken,
        st: &mut Status,
        want_count: bool,
    ) -> bool {
        unsafe {
            let slot = s.slot();
            if !slot.recv {
                if slot.complete_at == 0 {
                    g.slots.give(s);
                    return true;
                }
                return false;
            }
            let Some(at) = self.landed(s, st) else {
                return false;
            };
            self.deliver_idle(g, s, st, at, want_count);
            true
        }
    }

    /// The native part of `waitall_native_first` where what the receiver
    /// saw of arrivals counts (`uses_seen`): MPI_Testsome (at most two
    /// passes) completes the requests that are complete already,
    /// MPI_Waitall the rest; `arrays.absent` (`SeenArrays::new(len)`)
    /// then says which requests it waited for (`true`). Statuses and the
    /// return code are those of one Waitall over them all.
    /// (Asking each request first, MPI_Request_get_status, ran Open MPI's
    /// progress engine once per incomplete request: ~400 instructions per
    /// message at a 64-message window, `scripts/bench-instr.sh`.)
    pub(super) unsafe fn waitall_seen(
        &self,
        rs: &mut [Request],
        sts: &mut [Status],
        arrays: &mut SeenArrays,
    ) -> c_int {
        unsafe {
            let len = rs.len();
            debug_assert_eq!(arrays.absent.len(), len);
            let SeenArrays {
                absent,
                early,
                idx,
                got,
            } = arrays;
            for (a, &k) in absent.iter_mut().zip(rs.iter()) {
                *a = k != self.c.request_null;
            }
            // `early`: statuses of what the Testsome passes completed, by
            // index.
            let mut e1 = false;
            // Two passes: a Testsome that finds nothing complete may only
            // have driven the progress that completes what has arrived
            // (MPICH 5 over UCX: a message there long before was then
            // taken for one waited for, and held L more).
            for _ in 0..2 {
                let mut out: c_int = 0;
                let rc = PMPI_Testsome(
                    as_int(len),
                    rs.as_mut_ptr(),
                    &mut out,
                    idx.as_mut_ptr(),
                    got.as_mut_ptr(),
                );
                let in_status = rc == abi::ERR_IN_STATUS;
                if rc != abi::SUCCESS && !in_status {
                    return rc;
                }
                if out == abi::UNDEFINED {
                    // Every request null or inactive (now): nothing more.
                    break;
                }
                let done = usize::try_from(out).unwrap_or(0).min(len);
                for (j, &i) in idx[..done].iter().enumerate() {
                    let Some(a) = absent.get_mut(i as usize) else {
                        continue;
                    };
                    *a = false;
                    let mut s = got[j];
                    if !in_status {
                        // A plain success says nothing in MPI_ERROR.
                        s.set_error(abi::SUCCESS);
                    }
                    early[i as usize] = Some(s);
                }
                e1 |= in_status;
                if !absent.iter().any(|&a| a) {
                    break;
                }
            }
            // What is still to come: MPI's Waitall (over the whole array;
            // what the passes completed is null or inactive now).
            let rc2 = if absent.iter().any(|&a| a) {
                PMPI_Waitall(as_int(len), rs.as_mut_ptr(), sts.as_mut_ptr())
            } else {
                abi::SUCCESS
            };
            let e2 = rc2 == abi::ERR_IN_STATUS;
            if rc2 != abi::SUCCESS && !e2 {
                return rc2;
            }
            for (s, e) in sts.iter_mut().zip(early.iter()) {
                match e {
                    Some(e) => *s = *e,
                    // The Waitall's statuses say nothing of errors when it
                    // succeeded.
                    None if !e2 => s.set_error(abi::SUCCESS),
                    None => {}
                }
            }
            if e1 || e2 {
                abi::ERR_IN_STATUS
            } else {
                abi::SUCCESS
            }
        }
    }

    /// Finishes request `i` of a Waitall that MPI completed natively
    /// (`waitall_native_first`): delivery through the gate, its status, and
    /// MPI_ERR_IN_STATUS when it fails. `came`: when the message came, if
    /// the native Waitall waited for it. Inlined into its callers'
    /// loop (left to itself the compiler kept it out of line once
    /// `set_waited` grew a branch: +31 instructions per received message
    /// at zero knobs, `scripts/bench-instr.sh`).
    #[inline(always)]
    pub(super) fn finish_of_waitall(
        &self,
        i: usize,
        sts: &mut [Status],
        in_status: bool,
        came: Option<u64>,
        rc_all: &mut c_int,
        finish: impl FnOnce(&mut Status, c_int) -> c_int,
    ) {
        let rc_i = if in_status {
            sts[i].error()
        } else {
            abi::SUCCESS
        };
        // Only the gate of a configuration that `uses_seen` reads it.
        if self.uses_seen {
            set_waited(came.unwrap_or(NOT_WAITED));
        }
        let rc = finish(&mut sts[i], rc_i);
        if self.uses_seen {
            set_waited(NOT_WAITED);
        }
        if !ok(rc) && ok(rc_i) {
            fail_in_status(sts, i, rc, in_status, rc_all);
        }
    }

    /// `finish` (blocking) and `recycle` of a request taken for completion.
    #[inline]
    unsafe fn finish_taken(&self, p: &mut Taken, st: &mut Status, rc: c_int) -> c_int {
        unsafe {
            let rc = self.finish(p, st, true, rc);
            self.recycle(p);
            rc
        }
    }

    pub unsafe fn testall(
        &self,
        n: c_int,
        reqs: *mut Request,
        flag: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            jobs::progress_all();
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            if !self.any_tracked(rs) {
                return PMPI_Testall(n, reqs, flag, statuses);
            }
            if let Some(rc) = self.testall_light(rs, flag, statuses) {
                return rc;
            }
            for &r in rs.iter() {
                if !self.poll(r).done(|| self.native_done(r)) {
                    *flag = 0;
                    return abi::SUCCESS;
                }
            }
            *flag = 1;
            self.waitall(n, reqs, statuses)
        }
    }

    /// Testall of up to 8 distinct light requests (small sends and
    /// receives staged in slots) while nothing can hold a delivery or a
    /// send (`idle_gate`, `idle_send`: every knob zero, one host): MPI's
    /// own Testall, then each finished as `waitall_native_first` finishes
    /// it. The general path judged each request on its own
    /// (`poll_at`, which promotes a light entry to a general one, then
    /// Waitall): ~1,100 instructions for a nonblocking collective's
    /// two-request step (`NB=1 scripts/bench-instr-coll.sh`). `None`: not
    /// that case, nothing done.
    unsafe fn testall_light(
        &self,
        rs: &mut [Request],
        flag: *mut c_int,
        statuses: *mut Status,
    ) -> Option<c_int> {
        unsafe {
            let len = rs.len();
            if !(self.idle_gate && self.idle_send)
                || self.uses_seen
                || len > 8
                || !self.nothing_to_match_first()
            {
                return None;
            }
            {
                let st = self.lock();
                for (i, &k) in rs.iter().enumerate() {
                    if k == self.c.request_null {
                        continue;
                    }
                    if !st.reqs.is_light(key(k)) || rs[..i].contains(&k) {
                        return None;
                    }
                }
            }
            let keys = Small::<Request, 8>::from_slice(rs, self.c.request_null);
            let ignore = abi::statuses_ignored(statuses);
            let mut own = [Status::zeroed(); 8];
            let sts: &mut [Status] = if ignore {
                &mut own[..len]
            } else {
                std::slice::from_raw_parts_mut(statuses, len)
            };
            let rc_native = PMPI_Testall(as_int(len), rs.as_mut_ptr(), flag, sts.as_mut_ptr());
            // As `waitall_native_first`: an error that is not in the
            // statuses is MPI's to report; with MPI_ERR_IN_STATUS a request
            // whose status says MPI_ERR_PENDING was not completed.
            let in_status = rc_native == abi::ERR_IN_STATUS;
            if (rc_native != abi::SUCCESS && !in_status) || *flag == 0 {
                return Some(rc_native);
            }
            let mut rc_all = rc_native;
            // All at once where they can be (`waitall_light`), else one by one.
            let start = if self.finishes_idle(rc_native) {
                self.waitall_light(&keys, sts, !ignore, &mut rc_all)
            } else {
                0
            };
            for (i, &k) in keys.iter().enumerate().skip(start) {
                if k == self.c.request_null || (in_status && sts[i].error() == abi::ERR_PENDING) {
                    continue;
                }
                if let Some(l) = self.take_light(k) {
                    self.finish_of_waitall(i, sts, in_status, None, &mut rc_all, |st, rc| {
                        self.finish_light(l, st, rc)
                    });
                }
            }
            Some(rc_all)
        }
    }

    /// One pass of Testany: `Some(i)` completed, `Some(UNDEFINED)` nothing
    /// active, `None` nothing ready yet.
    pub(super) unsafe fn any_pass(
        &self,
        rs: &mut [Request],
        st: &mut Status,
    ) -> (Option<c_int>, c_int) {
        unsafe {
            let mut pass = AnyPass::default();
            let mut masked: Vec<Request> = Vec::with_capacity(rs.len());
            let t = now();
            for (i, r) in rs.iter_mut().enumerate() {
                match pass.see(self.poll_at(*r, t)) {
                    AnyStep::Complete => {
                        let rc = self.complete_one(r, st);
                        return (Some(as_int(i)), rc);
                    }
                    AnyStep::Mask => masked.push(self.c.request_null),
                    AnyStep::Native => masked.push(*r),
                }
            }
            let mut native_active = false;
            if pass.ask_native() {
                let mut idx: c_int = abi::UNDEFINED;
                let mut flag: c_int = 0;
                let rc = PMPI_Testany(
                    as_int(masked.len()),
                    masked.as_mut_ptr(),
                    &mut idx,
                    &mut flag,
                    st,
                );
                if flag != 0 && idx != abi::UNDEFINED {
                    rs[usize::try_from(idx).unwrap_or(0)] =
                        masked[usize::try_from(idx).unwrap_or(0)];
                    return (Some(idx), rc);
                }
                native_active = flag == 0;
            }
            match pass.end(native_active) {
                AnyEnd::NotYet => (None, abi::SUCCESS),
                AnyEnd::NoneActive => (Some(abi::UNDEFINED), abi::SUCCESS),
            }
        }
    }

    pub unsafe fn waitany(
        &self,
        n: c_int,
        reqs: *mut Request,
        idx: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            if !self.any_tracked(rs) && !jobs::must_poll() {
                return PMPI_Waitany(n, reqs, idx, status);
            }
            let mut patience = Patience::new();
            loop {
                let mut st = Status::zeroed();
                if let (Some(i), rc) = self.any_pass(rs, &mut st) {
                    *idx = i;
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    return rc;
                }
                jobs::progress_all();
                patience.pause();
            }
        }
    }

    pub unsafe fn testany(
        &self,
        n: c_int,
        reqs: *mut Request,
        idx: *mut c_int,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            jobs::progress_all();
            if !self.any_tracked(rs) {
                return PMPI_Testany(n, reqs, idx, flag, status);
            }
            let mut st = Status::zeroed();
            match self.any_pass(rs, &mut st) {
                (Some(i), rc) => {
                    *flag = 1;
                    *idx = i;
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    rc
                }
                (None, rc) => {
                    *flag = 0;
                    *idx = abi::UNDEFINED;
                    rc
                }
            }
        }
    }

    /// One pass of Testsome; returns the number completed (UNDEFINED when
    /// nothing is active).
    pub(super) unsafe fn some_pass(
        &self,
        rs: &mut [Request],
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> (c_int, c_int) {
        unsafe {
            let ignore = abi::statuses_ignored(statuses);
            let mut pass = SomePass::default();
            let mut rc_all = abi::SUCCESS;
            let t = now();
            #[allow(clippy::needless_range_loop)] // rs[i] is rewritten inside.
            for i in 0..rs.len() {
                let r = rs[i];
                if r == self.c.request_null {
                    continue;
                }
                match pass.see(self.poll_at(r, t)) {
                    SomeStep::Skip => {}
                    SomeStep::Native => {
                        // Untracked: ask MPI about this one alone.
                        let mut one = [r];
                        let mut oc: c_int = 0;
                        let mut ix: [c_int; 1] = [0];
                        let mut st = Status::zeroed();
                        PMPI_Testsome(1, one.as_mut_ptr(), &mut oc, ix.as_mut_ptr(), &mut st);
                        if oc == abi::UNDEFINED {
                            pass.native(None);
                        } else if oc == 0 {
                            pass.native(Some(false));
                        } else {
                            rs[i] = one[0];
                            let out = pass.out();
                            *idx.add(out) = as_int(i);
                            if !ignore {
                                st.copy_to_all(statuses.add(out));
                            }
                            pass.native(Some(true));
                        }
                    }
                    SomeStep::Complete => {
                        let mut st = Status::zeroed();
                        let rc = self.complete_one(&mut rs[i], &mut st);
                        if !ok(rc) {
                            st.set_error(rc);
                            rc_all = abi::ERR_IN_STATUS;
                        }
                        let out = pass.out();
                        *idx.add(out) = as_int(i);
                        if !ignore {
                            st.copy_to_all(statuses.add(out));
                        }
                        pass.completed();
                    }
                }
            }
            match pass.outcount() {
                None => (abi::UNDEFINED, rc_all),
                Some(out) => (as_int(out), rc_all),
            }
        }
    }

    pub unsafe fn waitsome(
        &self,
        n: c_int,
        reqs: *mut Request,
        outcount: *mut c_int,
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            if !self.any_tracked(rs) && !jobs::must_poll() {
                return PMPI_Waitsome(n, reqs, outcount, idx, statuses);
            }
            let mut patience = Patience::new();
            loop {
                let (c, rc) = self.some_pass(rs, idx, statuses);
                if c != 0 {
                    *outcount = c;
                    return rc;
                }
                jobs::progress_all();
                patience.pause();
            }
        }
    }

    pub unsafe fn testsome(
        &self,
        n: c_int,
        reqs: *mut Request,
        outcount: *mut c_int,
        idx: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        unsafe {
            let len = usize::try_from(n).unwrap_or(0);
            let rs = std::slice::from_raw_parts_mut(reqs, len);
            jobs::progress_all();
            if !self.any_tracked(rs) {
                return PMPI_Testsome(n, reqs, outcount, idx, statuses);
            }
            let (c, rc) = self.some_pass(rs, idx, statuses);
            *outcount = c;
            rc
        }
    }
}

/// MPICH 5.0.2: once MPI_Request_get_status has reported a persistent
/// receive complete, later calls and MPI_Wait give an empty status (source
/// MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0; measured natively, MPICH 4.0.2
/// and Open MPI repeat the status). The first full status seen is kept
/// here, by request, until the request completes.
static SEEN: std::sync::Mutex<Vec<(usize, Status)>> = std::sync::Mutex::new(Vec::new());

/// Request `i` of a Waitall failed (`rc`) where MPI completed it: the
/// call returns MPI_ERR_IN_STATUS, and every status says how its request
/// ended.
#[cold]
fn fail_in_status(sts: &mut [Status], i: usize, rc: c_int, in_status: bool, rc_all: &mut c_int) {
    if !in_status && *rc_all != abi::ERR_IN_STATUS {
        for st in sts.iter_mut() {
            st.set_error(abi::SUCCESS);
        }
    }
    *rc_all = abi::ERR_IN_STATUS;
    sts[i].set_error(rc);
}

/// MPI_Wait of `req`, telling the gate whether it waited (`set_waited`):
/// complete at a first or second MPI_Test (the message was there:
/// `NOT_WAITED`), else waited for (it came as the wait ended: `CAME_NOW`).
/// Twice, as `Engine::waitall_seen` does: a Test that finds it incomplete
/// may only have driven the progress that completes it. Inline: its
/// callers are out of line already, and a call of its own cost a blocking
/// receive under L ~20 instructions (`scripts/bench-instr-pingpong.sh`).
#[inline(always)]
pub(super) unsafe fn wait_seen(req: *mut Request, st: &mut Status) -> c_int {
    unsafe {
        for _ in 0..2 {
            let mut flag: c_int = 0;
            let rc = PMPI_Test(req, &mut flag, st);
            if flag != 0 {
                set_waited(NOT_WAITED);
                return rc;
            }
        }
        set_waited(CAME_NOW);
        PMPI_Wait(req, st)
    }
}

fn is_empty_status(s: &Status) -> bool {
    s.source() == abi::ANY_SOURCE && s.tag() == abi::ANY_TAG
}

/// Keeps the status of a persistent receive that get_status saw complete.
pub(super) fn remember_status(r: Request, s: &Status) {
    if is_empty_status(s) {
        return;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    seen.retain(|(k, _)| *k != key(r));
    seen.push((key(r), *s));
}

/// Replaces an empty status by the one kept for `r` (MPI_ERROR as given);
/// `take` forgets it (the request completed).
fn recall_status(r: Request, s: &mut Status, take: bool) {
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(i) = seen.iter().position(|(k, _)| *k == key(r)) else {
        return;
    };
    if is_empty_status(s) {
        let e = s.error();
        *s = seen[i].1;
        s.set_error(e);
    }
    if take {
        seen.swap_remove(i);
    }
}

/// `Engine::waitall_seen`'s per-request arrays: which requests MPI's
/// Waitall waited for (`absent`), and what its Testsome passes completed
/// (`early`, with their indices and statuses, `idx` and `got`). On the
/// stack for a few requests (`Small`); for more, their heap vectors are
/// kept per thread between calls (`give_back`): taken anew, four
/// malloc/free pairs per Waitall of 64 receives cost ~24 of the
/// receiver's instructions per message under an armed L
/// (`scripts/bench-instr.sh openmpi LOGGP_ARM=L`).
pub(super) struct SeenArrays {
    pub(super) absent: Small<bool, 8>,
    early: Small<Option<Status>, 8>,
    idx: Small<c_int, 8>,
    got: Small<Status, 8>,
}

/// The most requests whose `SeenArrays` vectors a thread keeps.
const SEEN_KEPT_MAX: usize = 4096;

/// The vectors of the last `SeenArrays` given back on this thread.
#[derive(Default)]
struct SeenHeap {
    absent: Vec<bool>,
    early: Vec<Option<Status>>,
    idx: Vec<c_int>,
    got: Vec<Status>,
}

thread_local! {
    static SEEN_HEAP: std::cell::Cell<SeenHeap> = const {
        std::cell::Cell::new(SeenHeap {
            absent: Vec::new(),
            early: Vec::new(),
            idx: Vec::new(),
            got: Vec::new(),
        })
    };
}

/// `v` holding `len` copies of `x`, as a `Small`'s heap.
fn refill<T: Copy, const N: usize>(mut v: Vec<T>, x: T, len: usize) -> Small<T, N> {
    v.clear();
    v.resize(len, x);
    Small::Heap(v)
}

impl SeenArrays {
    /// Arrays for `len` requests: nothing absent, nothing early.
    #[inline(always)]
    pub(super) fn new(len: usize) -> Self {
        if len <= 8 {
            return SeenArrays {
                absent: Small::new(false, len),
                early: Small::new(None, len),
                idx: Small::new(0, len),
                got: Small::new(Status::zeroed(), len),
            };
        }
        Self::kept(len)
    }

    /// `new` beyond the stack's room: the vectors this thread kept.
    #[inline(never)]
    fn kept(len: usize) -> Self {
        // (A thread past its thread-locals' end allocates.)
        let h = SEEN_HEAP.try_with(|c| c.take()).unwrap_or_default();
        SeenArrays {
            absent: refill(h.absent, false, len),
            early: refill(h.early, None, len),
            idx: refill(h.idx, 0, len),
            got: refill(h.got, Status::zeroed(), len),
        }
    }

    /// Keeps the heap vectors for this thread's next `new` (what a
    /// nested call kept meanwhile is dropped), leaving these empty.
    /// (By reference: a move of the arrays, ~500 bytes on the stack for
    /// a Sendrecv's two requests, is a memcpy.)
    pub(super) fn give_back(&mut self) {
        let (Small::Heap(absent), Small::Heap(early), Small::Heap(idx), Small::Heap(got)) = (
            &mut self.absent,
            &mut self.early,
            &mut self.idx,
            &mut self.got,
        ) else {
            return;
        };
        if absent.capacity() > SEEN_KEPT_MAX {
            // A rare huge Waitall: its ~60 bytes per request are not
            // kept for the rest of the run.
            return;
        }
        let (absent, early, idx, got) = (
            std::mem::take(absent),
            std::mem::take(early),
            std::mem::take(idx),
            std::mem::take(got),
        );
        let _ = SEEN_HEAP.try_with(|c| {
            c.set(SeenHeap {
                absent,
                early,
                idx,
                got,
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Up to 8 requests on the stack; beyond, the vectors a thread gave
    /// back are the next ones' (no allocation), filled anew; a huge
    /// Waitall's are not kept.
    #[test]
    fn seen_arrays_reuse_a_threads_vectors() {
        let a = SeenArrays::new(8);
        assert!(matches!(a.absent, Small::Stack(..)));
        assert_eq!(a.absent.len(), 8);
        let mut a = SeenArrays::new(64);
        assert_eq!(
            (a.absent.len(), a.early.len(), a.idx.len(), a.got.len()),
            (64, 64, 64, 64)
        );
        a.absent[3] = true;
        a.early[5] = Some(Status::zeroed());
        let kept = a.early.as_ptr();
        a.give_back();
        let b = SeenArrays::new(40);
        assert_eq!(b.early.as_ptr(), kept, "the kept vector is reused");
        assert_eq!(b.absent.len(), 40);
        assert!(b.absent.iter().all(|&x| !x) && b.early.iter().all(Option::is_none));
        // Another thread has its own.
        let other = std::thread::spawn(|| SeenArrays::new(64).early.as_ptr() as usize)
            .join()
            .unwrap();
        assert_ne!(other, kept as usize);
        let mut huge = SeenArrays::new(SEEN_KEPT_MAX + 1);
        huge.give_back();
        let c = SeenArrays::new(64);
        assert_eq!(c.early.len(), 64);
        let Small::Heap(v) = &c.early else {
            panic!("64 requests on the heap");
        };
        assert!(
            v.capacity() <= SEEN_KEPT_MAX,
            "a huge Waitall's vectors are not kept"
        );
    }
}
