//! Receives: posting (staged or zero-copy), reading the header of a
//! completed receive, and the delivery gate (L, g_r, o_r).

use super::*;

impl Engine {
    /// Posts a receive (blocking when `req` is None).
    #[inline(always)]
    pub unsafe fn recv(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            // The usual blocking receive (`recv_any`'s first case when no
            // freed request waits to be reaped), straight from the
            // wrapper: no frame of the general path between them.
            if req.is_none() && self.nothing_to_match_first_for(tag) && !jobs::must_poll() {
                if let Some(cap) = small_contiguous(dt, count, self.slot_max) {
                    return self.recv_slot(buf.cast(), cap, src, tag, comm, status);
                }
            }
            self.recv_any(buf, count, dt, src, tag, comm, req, status)
        }
    }

    /// `recv` past its fast case.
    #[inline(never)]
    unsafe fn recv_any(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            if self.refuses_derived(buf, count.into(), dt, true) {
                return match req {
                    Some(r) => PMPI_Irecv(buf, count, dt, src, tag, comm, r),
                    None => PMPI_Recv(buf, count, dt, src, tag, comm, status),
                };
            }
            self.reap_freed();
            if req.is_none() && jobs::must_poll() {
                // See `send`.
                let mut r = self.c.request_null;
                let rc = self.recv(buf, count, dt, src, tag, comm, Some(&mut r), status);
                if !ok(rc) {
                    return rc;
                }
                return self.wait(&mut r, status);
            }
            if self.stash_may_match(tag) {
                if let Some(rc) = self.recv_stashed(buf, count, dt, src, tag, comm, req, status) {
                    return rc;
                }
            }
            if req.is_none() {
                // The usual blocking receive, before the general checks (with
                // the stash empty, or holding nothing for it that its tag
                // alone rules out: `recv` took those).
                if let Some(cap) = small_contiguous(dt, count, self.slot_max) {
                    return self.recv_slot(buf.cast(), cap, src, tag, comm, status);
                }
            }
            let contig = contiguous_bytes(dt, count, type_size(dt));
            let inline = contig.filter(|&cap| cap as u64 <= self.cfg.inline_max);
            // Small: staged in a slot (the light lane's, when nonblocking).
            if let Some(cap) = inline.filter(|&cap| cap <= self.slot_max) {
                return match req {
                    Some(r) => self.irecv_slot(buf.cast(), cap, src, tag, comm, r),
                    None => self.recv_slot(buf.cast(), cap, src, tag, comm, status),
                };
            }
            // Below `direct_min`, staged through a buffer; from there up to
            // `LOGGP_INLINE_MAX` a struct datatype, as a larger receive,
            // but not watched: like a staged receive, its message comes
            // whole with its header (staged by the sender, or as a struct
            // on Open MPI, `Engine::stages`), or split only when larger
            // than `LOGGP_INLINE_MAX` and so than the receive (a
            // truncation, whose payload the completion receives, as a
            // staged receive's).
            let staged = inline.filter(|&cap| cap < self.direct_min);
            // A struct datatype made with its header, and whether to free it.
            let mut made = None;
            let wire = if let Some(cap) = staged {
                let n = HDR + cap;
                // Blocking receives reuse this thread's buffer; MPI writes it
                // and we read back only the bytes MPI reports as received.
                let mut stage = if req.is_none() {
                    STAGE.with(|c| c.take())
                } else {
                    self.stage_buf()
                };
                stage.clear();
                stage.reserve(n);
                // SAFETY: capacity reserved. MPI writes the received bytes and
                // only those (up to the count MPI reports) are ever read; not
                // zero-filling saves a memset of up to LOGGP_INLINE_MAX bytes.
                #[allow(clippy::uninit_vec)]
                stage.set_len(n);
                Wire::Staged {
                    stage: Stage::Heap(stage),
                    buf: buf.cast(),
                    cap,
                    placed: false,
                    comm,
                }
            } else {
                let into = match self.into(buf, count, dt, contig, req.is_none()) {
                    Ok(i) => i,
                    Err(rc) => return rc,
                };
                // One contiguous block: a kept header and datatype.
                let hdr = match into {
                    Landing::Bytes { buf, bytes } => match self.kept_struct(buf, bytes) {
                        Ok((h, t, free)) => {
                            made = Some((t, free));
                            h
                        }
                        Err(rc) => return rc,
                    },
                    Landing::Typed { .. } => HdrMem::own(Header::default()),
                };
                Wire::Struct {
                    hdr,
                    into,
                    split: Split::Idle,
                    comm,
                }
            };
            let mut st_local = Status::zeroed();
            let mut rc;
            let mut wire = wire;
            match &mut wire {
                Wire::Staged { stage, .. } => {
                    let (p, n) = (stage.as_mut_ptr().cast::<c_void>(), as_int(stage.len()));
                    rc = match req {
                        Some(r) => PMPI_Irecv(p, n, self.c.packed, src, tag, comm, r),
                        None => {
                            self.recv_blocking(p, n, self.c.packed, src, tag, comm, &mut st_local)
                        }
                    };
                }
                Wire::Struct { hdr, .. } => {
                    let (mut t, free) = match made {
                        Some(m) => m,
                        None => match self.struct_type(&**hdr, buf, count, dt) {
                            Ok(t) => (t, true),
                            Err(rc) => return rc,
                        },
                    };
                    let p = abi::BOTTOM as *mut c_void;
                    rc = match req {
                        Some(r) => PMPI_Irecv(p, 1, t, src, tag, comm, r),
                        None => self.recv_blocking(p, 1, t, src, tag, comm, &mut st_local),
                    };
                    if free {
                        PMPI_Type_free(&mut t);
                    }
                }
            }
            match req {
                Some(r) => {
                    if ok(rc) {
                        let watch = matches!(wire, Wire::Struct { .. }) && inline.is_none();
                        let mut st = self.lock();
                        st.reqs.track(key(*r), Kind::Recv, Pending::Recv(wire));
                        if watch {
                            Self::watch_split(&mut st, *r);
                        }
                    }
                    rc
                }
                None => {
                    if rc != abi::SUCCESS && !is_truncation(rc) {
                        return rc;
                    }
                    // A blocking receive cannot have been cancelled, and its
                    // count matters only to a status the caller looks at.
                    let want = !abi::status_ignored(status);
                    let rc2 = self.finish_recv_as(&mut wire, &mut st_local, true, rc, false, want);
                    if self.uses_seen {
                        set_waited(NOT_WAITED);
                    }
                    if rc == abi::SUCCESS {
                        rc = rc2;
                    }
                    if !abi::status_ignored(status) {
                        st_local.copy_to(status);
                    }
                    if let Wire::Staged {
                        stage: Stage::Heap(stage),
                        ..
                    } = wire
                    {
                        STAGE.with(|c| c.replace(stage));
                    }
                    rc
                }
            }
        }
    }

    /// MPI_Irecv. Its usual case, a small receive into a predefined
    /// contiguous type with nothing stashed by probes that it could match
    /// and no freed receive to reap, goes straight to the light lane
    /// (`irecv_slot`); every other is `recv`'s.
    #[inline(always)]
    pub unsafe fn irecv(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            if self.nothing_to_match_first_for(tag) {
                if let Some(cap) = small_contiguous(dt, count, self.slot_max) {
                    return self.irecv_slot(buf.cast(), cap, src, tag, comm, req);
                }
            }
            self.recv(
                buf,
                count,
                dt,
                src,
                tag,
                comm,
                Some(req),
                std::ptr::null_mut(),
            )
        }
    }

    /// A slot for a receive of at most `cap` bytes (`slot_max`) into `buf`
    /// on `comm`: header and payload land in it.
    #[inline(always)]
    pub(super) fn slot_for_recv(&self, buf: *mut u8, cap: usize, comm: Comm) -> SlotRef {
        let s = self.lock().slots.take(cap);
        // SAFETY: the slot was just taken for this receive.
        let slot = unsafe { s.slot() };
        slot.len = HDR + cap;
        slot.buf = buf;
        // At most `slot_max`, itself at most `MID_PAYLOAD`.
        slot.cap = u32::try_from(cap).unwrap_or(u32::MAX);
        slot.comm = comm;
        slot.recv = true;
        s
    }

    /// A nonblocking receive into `cap` contiguous bytes at `buf` (at
    /// most `slot_max`), staged in a slot of the light lane: header
    /// and payload land there, and `finish_light` copies the payload out.
    #[inline(always)]
    unsafe fn irecv_slot(
        &self,
        buf: *mut u8,
        cap: usize,
        src: c_int,
        tag: c_int,
        comm: Comm,
        r: *mut Request,
    ) -> c_int {
        unsafe {
            match self.post_recv_slot(buf, cap, src, tag, comm, r) {
                Ok(s) => {
                    // A stale entry under the handle (completed behind the
                    // table's back) is dropped, as `track` drops one.
                    drop(self.lock().reqs.track_light(key(*r), s, 0));
                    abi::SUCCESS
                }
                Err(rc) => rc,
            }
        }
    }

    /// Posts `irecv_slot`'s receive, its request in `*r`, without entering
    /// it in the request table (`sendrecv_slots` keeps it to itself): the
    /// slot, or MPI's error with the slot given back.
    #[inline(always)]
    pub(super) unsafe fn post_recv_slot(
        &self,
        buf: *mut u8,
        cap: usize,
        src: c_int,
        tag: c_int,
        comm: Comm,
        r: *mut Request,
    ) -> Result<SlotRef, c_int> {
        unsafe {
            let s = self.slot_for_recv(buf, cap, comm);
            let rc = PMPI_Irecv(
                s.ptr().cast(),
                as_int(HDR + cap),
                self.c.packed,
                src,
                tag,
                comm,
                r,
            );
            if ok(rc) {
                Ok(s)
            } else {
                self.lock().slots.give(s);
                Err(rc)
            }
        }
    }

    /// Finishes a light request (a slot, `SlotRef`) that MPI has
    /// completed (status `st`, return code `rc`), blocking: what `finish`
    /// and `recycle` do with its general form.
    #[inline(always)]
    pub(super) unsafe fn finish_light(&self, s: LightTaken, st: &mut Status, rc: c_int) -> c_int {
        unsafe {
            let slot = s.slot();
            if slot.recv {
                return self.finish_slot(s, st, rc, true, true);
            }
            if slot.complete_at > 0 {
                self.hold_until(slot.complete_at);
            }
            self.lock().slots.give(s);
            abi::SUCCESS
        }
    }

    /// Finishes a receive that landed in slot `s` (status `st`, MPI's
    /// return code `rc`) and gives the slot back: `finish_recv_as` of its
    /// `Wire::Staged`, blocking (`may_cancel` and `want_count` as there).
    /// In line, its usual case: a message that fits, with its header, no
    /// cancel seen; the rest out of line
    /// (`finish_slot_rest`), so as not to crowd the inlining of its
    /// callers' loops (in line, it cost the receiver's Waitall 27
    /// instructions per message, `scripts/bench-instr.sh`).
    #[inline(always)]
    unsafe fn finish_slot(
        &self,
        s: SlotRef,
        st: &mut Status,
        rc: c_int,
        may_cancel: bool,
        want_count: bool,
    ) -> c_int {
        unsafe {
            if rc == abi::SUCCESS && !(may_cancel && cancels_seen()) {
                if let Some(at) = self.landed(s, st) {
                    self.deliver_slot(s, st, at, want_count);
                    return abi::SUCCESS;
                }
            }
            self.finish_slot_rest(s, st, rc, may_cancel, want_count)
        }
    }

    /// Where the payload is in slot `s` and its length, as `st` reports the
    /// bytes received, when they are a whole message of the shim's
    /// (`landed_whole`) from a real source (not MPI_PROC_NULL, nor the
    /// empty status of a cancelled receive).
    #[inline(always)]
    pub(super) unsafe fn landed(&self, s: SlotRef, st: &Status) -> Option<Landed> {
        unsafe {
            let src = st.source();
            let got = status_bytes(st, self.c.byte);
            if src == abi::PROC_NULL || src == abi::ANY_SOURCE {
                return None;
            }
            landed_whole(s, got)
        }
    }

    /// Delivers a message that landed whole in slot `s` (`got` bytes with
    /// its header, `landed`), past the gate: the count in `st`
    /// (`want_count`), the copy to the application's buffer, the received
    /// count (at an idle gate `deliver_idle`'s; elsewhere `gate_timed`
    /// keeps it) and the slot's return.
    #[inline(always)]
    unsafe fn deliver_slot(&self, s: SlotRef, st: &mut Status, at: Landed, want_count: bool) {
        unsafe {
            if self.idle_gate {
                self.deliver_idle(&mut self.lock(), s, st, at, want_count);
                return;
            }
            if self.gate_is_plain() {
                self.deliver_plain(s, st, at, want_count);
                return;
            }
            let payload = at.payload;
            if want_count {
                set_status_bytes(st, self.c.byte, payload as u64);
            }
            let hdr = Header::read_from(s.ptr());
            self.gate_timed(hdr.d, hdr.lag, hdr.src(), hdr.l(), payload as u64, true);
            copy_bytes(s.ptr().add(at.at), s.slot().buf, payload);
            self.lock().slots.give(s);
        }
    }

    /// Whether the gate holds by L and G alone (`plain_gate`), for every
    /// pair alike (no targeting), on one host.
    #[inline(always)]
    pub(super) fn gate_is_plain(&self) -> bool {
        self.plain_gate && self.from.is_empty() && !self.hosts
    }

    /// `deliver_slot` at a plain gate (`gate_is_plain`): the reservation
    /// (`reserve_plain`), a hold where it says so, and `deliver_idle`, in
    /// one borrow of the state unless it holds. (`gate_timed` and the
    /// delivery apart took the state twice, and asked for the pair's
    /// knobs, o_r and the hosts' drift.)
    #[inline(never)]
    unsafe fn deliver_plain(&self, s: SlotRef, st: &mut Status, at: Landed, want_count: bool) {
        unsafe {
            let t = now();
            let seen = self.seen_at(t);
            let mut g = self.lock();
            let r = self.reserve_plain(&mut g, s, at.payload, t, seen);
            if r > t {
                drop(g);
                self.pass_time(r, false);
                g = self.lock();
            }
            self.deliver_idle(&mut g, s, st, at, want_count);
        }
    }

    /// At a plain gate (`gate_is_plain`), in the state `g` the caller
    /// holds: reserves the delivery of the message that landed in slot
    /// `s` (`payload` bytes), natively there by `t` (`seen`: what the
    /// native wait saw of it), and counts a hold. Returns when it is due
    /// (after `t`: the caller waits for it).
    #[inline(always)]
    pub(super) unsafe fn reserve_plain(
        &self,
        g: &mut State,
        s: SlotRef,
        payload: usize,
        t: u64,
        seen: Seen,
    ) -> u64 {
        let h = Header::read_from(s.ptr());
        let r = g
            .gate
            .reserve_for(h.src(), t, h.d, h.lag, payload as u64, seen, None);
        if let Seen::CameAt(_) = seen {
            g.came_during_wait += 1;
        }
        if r > t {
            // Under the borrow taken anyway, as in `gate_timed`.
            g.gate_wait_ns += r - t;
            g.gate_holds += 1;
        }
        r
    }

    /// What the blocking wait that completed the message about to be
    /// delivered saw of its arrival (`set_waited`), the time now being
    /// `t`; nothing where nothing is looked at (`uses_seen`).
    #[inline(always)]
    fn seen_at(&self, t: u64) -> Seen {
        if !self.uses_seen {
            return Seen::Unknown;
        }
        match waited() {
            NOT_WAITED => Seen::Unknown,
            CAME_NOW => Seen::CameAt(t),
            came => Seen::CameAt(came),
        }
    }

    /// `deliver_slot` at an idle gate (nothing to wait for), in the state
    /// `g` the caller holds: the count in `st` (`want_count`), the copy,
    /// the received count and the slot's return.
    #[inline(always)]
    pub(super) unsafe fn deliver_idle(
        &self,
        g: &mut State,
        s: SlotRef,
        st: &mut Status,
        at: Landed,
        want_count: bool,
    ) {
        unsafe {
            let payload = at.payload;
            if want_count {
                set_status_bytes(st, self.c.byte, payload as u64);
            }
            copy_bytes(s.ptr().add(at.at), s.slot().buf, payload);
            g.recvs += 1;
            g.bytes_recv += payload as u64;
            g.slots.give(s);
        }
    }

    /// `finish_slot` beyond its usual case: a cancel, a message from
    /// MPI_PROC_NULL, and (through `finish_recv_as`) a header alone, a
    /// truncation, a message without the header.
    #[inline(never)]
    unsafe fn finish_slot_rest(
        &self,
        s: SlotRef,
        st: &mut Status,
        rc: c_int,
        may_cancel: bool,
        want_count: bool,
    ) -> c_int {
        unsafe {
            let slot = s.slot();
            let mut cancelled: c_int = 0;
            if may_cancel && cancels_seen() {
                PMPI_Test_cancelled(st, &mut cancelled);
            }
            let src = st.source();
            if cancelled != 0 || src == abi::PROC_NULL || src == abi::ANY_SOURCE {
                self.lock().slots.give(s);
                return abi::SUCCESS;
            }
            let got = status_bytes(st, self.c.byte);
            if rc == abi::SUCCESS {
                if let Some(at) = landed_whole(s, got) {
                    self.deliver_slot(s, st, at, want_count);
                    return abi::SUCCESS;
                }
            }
            // The cancel was asked above.
            let mut w = Wire::Staged {
                stage: Stage::Slot(s),
                buf: slot.buf,
                cap: slot.cap as usize,
                placed: false,
                comm: slot.comm,
            };
            let rc2 = self.finish_recv_as(&mut w, st, true, rc, false, want_count);
            self.lock().slots.give(s);
            rc2
        }
    }

    /// A blocking receive into `cap` contiguous bytes at `buf` (at most
    /// `slot_max`), staged in a slot for the time of the call.
    #[inline(never)]
    unsafe fn recv_slot(
        &self,
        buf: *mut u8,
        cap: usize,
        src: c_int,
        tag: c_int,
        comm: Comm,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let n = HDR + cap;
            let s = self.slot_for_recv(buf, cap, comm);
            let mut st = Status::zeroed();
            let mut rc = self.recv_blocking(
                s.ptr().cast(),
                as_int(n),
                self.c.packed,
                src,
                tag,
                comm,
                &mut st,
            );
            if rc != abi::SUCCESS && !is_truncation(rc) {
                self.lock().slots.give(s);
                return rc;
            }
            // A blocking receive cannot have been cancelled, and its count
            // matters only to a status the caller looks at.
            let want = !abi::status_ignored(status);
            let rc2 = self.finish_slot(s, &mut st, rc, false, want);
            if self.uses_seen {
                set_waited(NOT_WAITED);
            }
            if rc == abi::SUCCESS {
                rc = rc2;
            }
            if want {
                st.copy_to(status);
            }
            rc
        }
    }

    /// Reads the header of a completed receive, applies the delivery gate
    /// (waiting when `block`), unpacks a staged payload, fixes the count.
    pub(super) unsafe fn finish_recv(
        &self,
        wire: &mut Wire,
        st: &mut Status,
        block: bool,
        rc: c_int,
    ) -> c_int {
        unsafe { self.finish_recv_as(wire, st, block, rc, true, true) }
    }

    /// `finish_recv`, skipping the cancel query where no cancel can have
    /// happened and the count rewrite where no one reads the status.
    pub(super) unsafe fn finish_recv_as(
        &self,
        wire: &mut Wire,
        st: &mut Status,
        block: bool,
        rc: c_int,
        may_cancel: bool,
        want_count: bool,
    ) -> c_int {
        unsafe {
            let mut cancelled: c_int = 0;
            if may_cancel && cancels_seen() {
                PMPI_Test_cancelled(st, &mut cancelled);
            }
            // Cancelled, from MPI_PROC_NULL, or an empty status: no message.
            if cancelled != 0 || st.source() == abi::PROC_NULL || st.source() == abi::ANY_SOURCE {
                return abi::SUCCESS;
            }
            let got = status_bytes(st, self.c.byte);
            let hdr = wire.header();
            if got == HDR && hdr.magic() == MAGIC_SPLIT {
                // The header came alone: its payload follows.
                let (bytes, prc) = self.split_payload(wire, &hdr);
                self.gate(hdr.d, hdr.lag, hdr.src(), hdr.l(), bytes as u64, block);
                if want_count || !ok(prc) {
                    set_status_bytes(st, self.c.byte, bytes as u64);
                }
                if !ok(prc) {
                    return raise(st, wire.comm(), prc);
                }
                return prc;
            }
            if wire.is_compact(got) {
                return self.finish_compact(wire, st, &hdr, got, block, want_count);
            }
            if got < HDR || hdr.magic() != MAGIC {
                if is_truncation(rc) {
                    // MPI may drop a truncated message's bytes (MPICH does for
                    // large ones): no header to read, nothing to deliver.
                    set_status_bytes(st, self.c.byte, got.saturating_sub(HDR) as u64);
                    return rc;
                }
                self.escaped(st);
            }
            let payload = (got - HDR) as u64;
            self.gate(hdr.d, hdr.lag, hdr.src(), hdr.l(), payload, block);
            wire.place(got);
            if want_count {
                set_status_bytes(st, self.c.byte, payload);
            }
            abi::SUCCESS
        }
    }

    /// `finish_recv_as` of a compact or tiny message (`Wire::is_compact`): its
    /// payload moves from the header's room to the receive, and a payload
    /// larger than the receive, which MPI did not see as one (the receive
    /// had room for a full header), is raised as MPI raises a truncation.
    #[cold]
    unsafe fn finish_compact(
        &self,
        wire: &mut Wire,
        st: &mut Status,
        hdr: &Header,
        got: usize,
        block: bool,
        want_count: bool,
    ) -> c_int {
        unsafe {
            let payload = wire.payload_len(got);
            let (n, truncated) = match self.place_compact(wire, got) {
                Ok(placed) => placed,
                Err(rc) => {
                    st.set_error(rc);
                    return rc;
                }
            };
            self.gate(hdr.d, hdr.lag, hdr.src(), hdr.l(), payload as u64, block);
            if want_count || truncated {
                set_status_bytes(st, self.c.byte, n as u64);
            }
            if truncated {
                return raise(st, wire.comm(), abi::ERR_TRUNCATE);
            }
            abi::SUCCESS
        }
    }

    /// Moves a compact message's payload (`got` bytes with its header)
    /// from the header's room to the receive's buffer, at most what the
    /// receive holds (again: the same bytes): the bytes placed, and
    /// whether the payload was larger.
    pub(super) unsafe fn place_compact(
        &self,
        wire: &mut Wire,
        got: usize,
    ) -> Result<(usize, bool), c_int> {
        unsafe {
            // The header's room is the wire's own, apart from every
            // buffer written below.
            let payload = wire.compact_payload(got);
            let payload = std::slice::from_raw_parts(payload.as_ptr(), payload.len());
            match wire {
                Wire::Staged {
                    buf, cap, placed, ..
                } => {
                    let n = payload.len().min(*cap);
                    copy_bytes(payload.as_ptr(), *buf, n);
                    *placed = true;
                    Ok((n, payload.len() > *cap))
                }
                Wire::Struct { into, .. } => match *into {
                    Landing::Bytes { buf, bytes } => {
                        let cap = usize::try_from(bytes).unwrap_or(0);
                        let n = payload.len().min(cap);
                        copy_bytes(payload.as_ptr(), buf.cast(), n);
                        Ok((n, payload.len() > cap))
                    }
                    Landing::Typed { buf, count, dt, .. } => {
                        self.place_bytes(payload, buf, count, dt)
                    }
                },
            }
        }
    }

    /// Where the payload of a split message goes (`Wire::Struct`): a
    /// contiguous block as bytes, else the datatype, which a nonblocking
    /// receive duplicates (the application may free its own meanwhile).
    pub(super) unsafe fn into(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        contig: Option<usize>,
        blocking: bool,
    ) -> Result<Landing, c_int> {
        unsafe {
            if let Some(bytes) = contig.and_then(|n| c_int::try_from(n).ok()) {
                return Ok(Landing::Bytes { buf, bytes });
            }
            if blocking {
                return Ok(Landing::Typed {
                    buf,
                    count,
                    dt,
                    owned: false,
                });
            }
            let mut own = dt;
            let rc = PMPI_Type_dup(dt, &mut own);
            if !ok(rc) {
                return Err(rc);
            }
            Ok(Landing::Typed {
                buf,
                count,
                dt: own,
                owned: true,
            })
        }
    }

    /// The payload of a split message whose header `hdr` landed in `wire`:
    /// received now, or waited for where `poll` posted its receive, or
    /// already in (`Split::Done`). Says its bytes and MPI's return code.
    /// A staged receive gets one only when the message is larger than its
    /// buffer: MPI truncates as it would have.
    pub(super) unsafe fn split_payload(&self, wire: &mut Wire, hdr: &Header) -> (usize, c_int) {
        unsafe {
            let comm = self.payload_comm.0;
            let tag = hdr.payload_tag(self.payload_tags);
            let src = c_int::try_from(hdr.src()).unwrap_or(0);
            let mut ps = Status::zeroed();
            let rc = match wire {
                Wire::Struct { into, split, .. } => match *split {
                    Split::Done { bytes, rc } => return (bytes, rc),
                    Split::Posted(mut r) => PMPI_Wait(&mut r, &mut ps),
                    Split::Idle => {
                        let (b, n, t) = into.args(self.c.byte);
                        PMPI_Recv(b, n, t, src, tag, comm, &mut ps)
                    }
                },
                Wire::Staged {
                    buf, cap, placed, ..
                } => {
                    *placed = true;
                    PMPI_Recv(
                        buf.cast(),
                        as_int(*cap),
                        self.c.byte,
                        src,
                        tag,
                        comm,
                        &mut ps,
                    )
                }
            };
            let bytes = status_bytes(&ps, self.c.byte);
            if let Wire::Struct { split, .. } = wire {
                *split = Split::Done { bytes, rc };
            }
            (bytes, rc)
        }
    }

    /// A natively complete receive whose header came alone: posts its
    /// payload's receive (once) and tests it. False while it is not in, so
    /// that Test and the any/some forms never wait for a payload.
    pub(super) unsafe fn split_in(&self, p: &mut Pending, got: usize) -> bool {
        unsafe {
            if got != HDR {
                return true;
            }
            let (hdr, args, split) = match p {
                Pending::Recv(Wire::Struct {
                    hdr, into, split, ..
                }) => (**hdr, into.args(self.c.byte), split),
                Pending::PRecv {
                    hdr,
                    recv,
                    split,
                    served: None,
                    ..
                } if recv.stage.is_null() => (**hdr, (recv.buf, recv.count, recv.dt), split),
                _ => return true,
            };
            if hdr.magic() != MAGIC_SPLIT {
                return true;
            }
            let mut r = match *split {
                Split::Done { .. } => return true,
                Split::Posted(r) => r,
                Split::Idle => {
                    let mut r = self.c.request_null;
                    let rc = PMPI_Irecv(
                        args.0,
                        args.1,
                        args.2,
                        c_int::try_from(hdr.src()).unwrap_or(0),
                        hdr.payload_tag(self.payload_tags),
                        self.payload_comm.0,
                        &mut r,
                    );
                    if !ok(rc) {
                        *split = Split::Done { bytes: 0, rc };
                        return true;
                    }
                    r
                }
            };
            let mut flag: c_int = 0;
            let mut ps = Status::zeroed();
            let rc = PMPI_Test(&mut r, &mut flag, &mut ps);
            *split = if flag != 0 || !ok(rc) {
                Split::Done {
                    bytes: status_bytes(&ps, self.c.byte),
                    rc,
                }
            } else {
                Split::Posted(r)
            };
            flag != 0 || !ok(rc)
        }
    }

    /// Watches a nonblocking receive whose header may come alone: until
    /// its payload's receive is posted, blocking calls poll, and post it
    /// (`progress_splits`).
    pub(super) fn watch_split(st: &mut State, r: Request) {
        st.watch.push(r);
        jobs::WATCHED.store(st.watch.len(), Ordering::Relaxed);
    }

    /// Posts the payload receive of every watched receive whose header
    /// came alone; forgets those complete, or gone from the table.
    pub fn progress_splits(&self) {
        let mut st = self.lock();
        let mut list = std::mem::take(&mut st.watch);
        list.retain(|&r| {
            let k = key(r);
            if !matches!(st.reqs.kind(k), Some(Kind::Recv | Kind::PRecv)) {
                return false;
            }
            let mut flag: c_int = 0;
            let mut s = Status::zeroed();
            // SAFETY: a live request of the table (tracked under this lock).
            unsafe {
                PMPI_Request_get_status(r, &mut flag, &mut s);
                if flag == 0 {
                    return true;
                }
                if st.reqs.kind(k) == Some(Kind::PRecv) {
                    // MPICH 5 empties a persistent request's status once
                    // asked for it (`poll` keeps it the same way).
                    super::complete::remember_status(r, &s);
                }
                let got = status_bytes(&s, self.c.byte);
                if let Some(p) = st.reqs.get_mut(k) {
                    self.split_in(p, got);
                }
            }
            false
        });
        list.append(&mut st.watch);
        st.watch = list;
        jobs::WATCHED.store(st.watch.len(), Ordering::Relaxed);
    }

    /// The native blocking receive of `recv`. Where what the receiver saw
    /// of the arrival counts (`uses_seen`: an added L or G), it is posted
    /// and completed by `complete::wait_seen`, which tells the gate whether
    /// it waited. A probe before a blocking receive saw the same, at the
    /// price of a second match (Open MPI's MPI_Iprobe builds a request of
    /// its own: ~450 instructions per message, `scripts/bench-instr.sh`),
    /// on the path that calibration times as o_r.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn recv_blocking(
        &self,
        p: *mut c_void,
        n: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        st: &mut Status,
    ) -> c_int {
        unsafe {
            if !self.uses_seen {
                return PMPI_Recv(p, n, dt, src, tag, comm, st);
            }
            self.recv_seen(p, n, dt, src, tag, comm, st)
        }
    }

    /// `recv_blocking` where the arrival is seen, out of line: inline, it
    /// cost the zero-knob path 25 instructions per round trip by code
    /// generation alone (`scripts/bench-instr-pingpong.sh`).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    unsafe fn recv_seen(
        &self,
        p: *mut c_void,
        n: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        st: &mut Status,
    ) -> c_int {
        unsafe {
            let mut r = self.c.request_null;
            let rc = PMPI_Irecv(p, n, dt, src, tag, comm, &mut r);
            if rc != abi::SUCCESS {
                return rc;
            }
            super::complete::wait_seen(&mut r, st)
        }
    }

    /// A message without our header reached a receive: some sender bypassed
    /// the shim. Going on would hand the application shifted bytes.
    pub(super) unsafe fn escaped(&self, st: &Status) -> ! {
        unsafe {
            let msg = format!(
            "rank {} received a message from rank {} (tag {}) without the shim's header: \
             a send bypassed the shim (an unsupported MPI call, or ranks preloaded differently); stopping",
            self.rank,
            st.source(),
            st.tag()
        );
            log::abort_job(Some(&msg), self.c.comm_world)
        }
    }

    /// Reserves the message's delivery time at the gate (one step under
    /// the lock, `RecvGate::reserve`), waits for it when `block`, and
    /// spends o_r. Across hosts the message also tells the gate how the
    /// clocks drift (`lag`: see `Header`).
    #[inline(always)]
    pub(super) fn gate(&self, d: u64, lag: u32, src: u32, l: u64, payload: u64, block: bool) {
        if self.idle_gate {
            // `RecvGate::reserve` would answer `now`: the clock read (a
            // tenth of the shim's cost per message) is not needed.
            let mut st = self.lock();
            st.recvs += 1;
            st.bytes_recv += payload;
            return;
        }
        self.gate_timed(d, lag, src, l, payload, block);
    }

    /// `gate` where some receiver-side knob is set.
    #[inline(never)]
    fn gate_timed(&self, d: u64, lag: u32, src: u32, l: u64, payload: u64, block: bool) {
        let t = now();
        // At zero L and G nothing is looked at: no thread-local access on
        // the message path.
        let seen = self.seen_at(t);
        // Targeting: the knobs of the pair (source's MPI_COMM_WORLD rank
        // from the header, this rank).
        let k = self.recv_knobs(src, l);
        let r = {
            let mut st = self.lock();
            st.recvs += 1;
            st.bytes_recv += payload;
            if self.hosts {
                let at = match seen {
                    Seen::CameAt(c) => c.min(t),
                    Seen::Unknown => t,
                };
                st.gate.observe(at, d, lag, payload);
            }
            let r = st
                .gate
                .reserve_for(src, t, d, lag, payload, seen, k.as_ref());
            if let Seen::CameAt(_) = seen {
                st.came_during_wait += 1;
            }
            if r > t && block {
                // Counted here, under the lock taken anyway: two atomic
                // additions per held message cost more (~10 ns) than the
                // tolerance of the calibration's o_r.
                st.gate_wait_ns += r - t;
                st.gate_holds += 1;
            }
            r
        };
        // The time now, when the hold read it last (else `None`).
        let held = (r > t && block).then(|| self.pass_time(r, false));
        let o_r = match &k {
            Some(k) => self.o_r_spin_from(k),
            None if !self.cfg.o_r_dist.is_fixed() => self.o_r_spin_from(&self.cfg.plain_knobs()),
            None => self.o_r_spin,
        };
        if o_r > 0 {
            self.pass_time(held.unwrap_or_else(now) + o_r, true);
        }
    }
}

/// Fails a receive with `rc` as MPI would: the status says so and the
/// communicator's error handler is called (it returns only where the
/// handler does).
pub(super) unsafe fn raise(st: &mut Status, comm: Comm, rc: c_int) -> c_int {
    unsafe {
        st.set_error(rc);
        PMPI_Comm_call_errhandler(comm, rc);
        rc
    }
}

/// Where a whole message's payload lies in its slot: `payload` bytes at
/// offset `at` (behind a full or a compact header).
#[derive(Clone, Copy)]
pub(super) struct Landed {
    pub(super) at: usize,
    pub(super) payload: usize,
}

/// Where the payload is when `got` bytes received into slot `s` are a
/// whole message of the shim's: its header (by its magic, full, compact
/// or tiny) and a payload that fits, empty included (a Barrier's
/// messages; a header that came alone has the other magic,
/// `MAGIC_SPLIT`). A compact message whose payload exceeds the receive
/// (a truncation that MPI, seeing the room for a full header, did not
/// report) is not whole: `finish_recv_as` raises it.
#[inline(always)]
unsafe fn landed_whole(s: SlotRef, got: usize) -> Option<Landed> {
    // SAFETY: the slot belongs to the receive being finished; its buffer
    // holds at least a header's bytes.
    unsafe {
        let p = s.ptr();
        let slot = s.slot();
        if got >= HDR && got <= slot.len && p.cast::<u32>().read_unaligned() == MAGIC {
            return Some(Landed {
                at: HDR,
                payload: got - HDR,
            });
        }
        if got <= TINY + TINY_MAX {
            if got >= TINY && is_tiny(p) && got - TINY <= slot.cap as usize {
                return Some(Landed {
                    at: TINY,
                    payload: got - TINY,
                });
            }
            return None;
        }
        if hdr_len(p, got) == COMPACT && got - COMPACT <= slot.cap as usize {
            return Some(Landed {
                at: COMPACT,
                payload: got - COMPACT,
            });
        }
        None
    }
}
