//! Sends: departure (o_s, send queue, g_s, G), every mode, blocking,
//! nonblocking, buffered and persistent, and Start.

use super::*;

/// On Open MPI, the largest message (header included) a send stages in one
/// contiguous buffer (`Engine::stages`): below the eager limit of its
/// shared-memory transport (4 KiB in 4.1's vader and 5.0's sm, the
/// fragment's own headers included), so that no single-copy get moves it.
const OMPI_STAGED_MAX: u64 = 4096 - 64;

// The light lane stages every send it takes (`slot_for_send`).
const _: () = assert!(!cfg!(ompi) || (MID_PAYLOAD + HDR) as u64 <= OMPI_STAGED_MAX);

/// Whether a message of `bytes` (and the header) may be sent as one
/// contiguous block of the shim's own (`Engine::stages`): always but on
/// Open MPI, there only up to `OMPI_STAGED_MAX`.
#[inline(always)]
fn one_block_is_safe(bytes: u64) -> bool {
    !cfg!(ompi) || bytes + HDR as u64 <= OMPI_STAGED_MAX
}

/// Bytes between a buffered send's payload and the copy of its header
/// behind it, where it goes as a struct (`Engine::bsend`).
const BSEND_GAP: usize = 64;

impl Mode {
    /// MPI's blocking send of this mode, of a message of the shim's own. A
    /// buffered one's buffering is the shim's (`Engine::bsend`): its
    /// message goes by the standard send. (Each call in line: as a
    /// function pointer, `real`'s wrapper would be a call of its own.)
    #[inline(always)]
    unsafe fn send_own(
        self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            match self {
                Mode::Synchronous => PMPI_Ssend(buf, count, dt, dest, tag, comm),
                Mode::Ready => PMPI_Rsend(buf, count, dt, dest, tag, comm),
                Mode::Standard | Mode::Buffered => PMPI_Send(buf, count, dt, dest, tag, comm),
            }
        }
    }

    /// `send_own`'s nonblocking form.
    #[inline(always)]
    unsafe fn isend_own(
        self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            match self {
                Mode::Synchronous => PMPI_Issend(buf, count, dt, dest, tag, comm, req),
                Mode::Ready => PMPI_Irsend(buf, count, dt, dest, tag, comm, req),
                Mode::Standard | Mode::Buffered => PMPI_Isend(buf, count, dt, dest, tag, comm, req),
            }
        }
    }

    /// `send_own`'s persistent form.
    #[inline(always)]
    unsafe fn send_init_own(
        self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            match self {
                Mode::Synchronous => PMPI_Ssend_init(buf, count, dt, dest, tag, comm, req),
                Mode::Ready => PMPI_Rsend_init(buf, count, dt, dest, tag, comm, req),
                Mode::Standard | Mode::Buffered => {
                    PMPI_Send_init(buf, count, dt, dest, tag, comm, req)
                }
            }
        }
    }

    /// MPI's blocking send of this mode, buffered included: for a call
    /// that goes to MPI unchanged.
    unsafe fn send_native(
        self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            match self {
                Mode::Buffered => PMPI_Bsend(buf, count, dt, dest, tag, comm),
                m => m.send_own(buf, count, dt, dest, tag, comm),
            }
        }
    }

    /// `send_native`'s nonblocking form.
    unsafe fn isend_native(
        self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            match self {
                Mode::Buffered => PMPI_Ibsend(buf, count, dt, dest, tag, comm, req),
                m => m.isend_own(buf, count, dt, dest, tag, comm, req),
            }
        }
    }
}

impl Engine {
    /// Spends o_s, takes a departure slot, waits if the send queue is full,
    /// and gives the header. `dest` is a rank of `comm`: with a targeted
    /// o_s, g_s or G (or L while L is drawn) its pair's values apply
    /// (`set_pairs`); with `LOGGP_L_DIST` the message's L is drawn here and
    /// raised to arrive no earlier than the one before it on the channel
    /// (`dest`, `tag`, `comm`).
    #[inline(always)]
    pub(super) fn depart(
        &self,
        bytes: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> (loggp_core::Departure, Header) {
        if self.idle_send {
            let dep = loggp_core::Departure {
                ready: 0,
                d: 0,
                complete_at: 0,
            };
            let mut st = self.lock();
            st.sends += 1;
            st.bytes_sent += bytes;
            let seq = st.next_seq();
            return (dep, Header::new(&dep, self.rank, 0, seq));
        }
        if self.stamp_send {
            return self.depart_stamp(bytes);
        }
        self.depart_timed(bytes, dest, tag, comm)
    }

    /// `depart` where the sender only stamps (`Config::sender_stamps_only`:
    /// an added L alone, for instance): one clock read, no spin, no wait.
    #[inline(never)]
    fn depart_stamp(&self, bytes: u64) -> (loggp_core::Departure, Header) {
        let t = now();
        let (dep, seq) = {
            let mut st = self.lock();
            st.sends += 1;
            st.bytes_sent += bytes;
            (st.send.stamp(t), st.next_seq())
        };
        (dep, Header::new(&dep, self.rank, 0, seq))
    }

    /// `depart` where some sender-side knob is set.
    #[inline(never)]
    fn depart_timed(
        &self,
        bytes: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> (loggp_core::Departure, Header) {
        let k = if self.send_targeted {
            // SAFETY: `comm` is the application's (or the shim's private)
            // live communicator of this send.
            let w = unsafe { self.world_rank(&mut self.lock(), comm, dest) };
            w.and_then(|w| self.to.get(w as usize).copied())
        } else {
            None
        };
        let varied_o_s = !self.cfg.o_s_dist.is_fixed();
        let spin = match (&k, varied_o_s) {
            (None, false) => self.o_s_spin,
            _ => {
                let o_s = k.map_or(self.cfg.o_s, |k| k.o_s);
                let o_s = if varied_o_s {
                    self.cfg.o_s_dist.draw(o_s, &mut self.lock().rng_o_s)
                } else {
                    o_s
                };
                o_s.saturating_sub(self.own_send_ns)
            }
        };
        let t = if spin > 0 {
            self.pass_time(now() + spin, true)
        } else {
            now()
        };
        let (dep, l, seq) = {
            let mut st = self.lock();
            st.sends += 1;
            st.bytes_sent += bytes;
            let seq = st.next_seq();
            let dep = match &k {
                Some(k) => st.send.depart_with(t, bytes, k.g_s, k.g_big),
                None => st.send.depart(t, bytes),
            };
            let l = if self.cfg.l_dist.is_fixed() {
                0
            } else {
                let mean = k.map_or(self.cfg.l, |k| k.l);
                let drawn = self.cfg.l_dist.draw(mean, &mut st.rng_l);
                st.channels.order((key(comm), dest, tag), dep.d, drawn, t)
            };
            (dep, l, seq)
        };
        if dep.ready > t {
            self.pass_time(dep.ready, false);
            self.counters
                .send_wait_ns
                .fetch_add(dep.ready - t, Ordering::Relaxed);
        }
        (dep, Header::new(&dep, self.rank, l, seq))
    }

    /// Blocking send in any mode.
    #[inline(always)]
    pub unsafe fn send(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            // The usual blocking send, staged in a slot, straight from the
            // wrapper: no frame of the general path between them.
            if mode != Mode::Buffered && !jobs::must_poll() {
                if let Some(n) = small_contiguous(dt, count, self.slot_max) {
                    return self.send_slot(mode, buf, n, dest, tag, comm);
                }
            }
            self.send_any(mode, buf, count, dt, dest, tag, comm)
        }
    }

    /// `send` past its fast case (called by it alone).
    #[inline(never)]
    unsafe fn send_any(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            if self.refuses_derived(buf, count.into(), dt, false) {
                return mode.send_native(buf, count, dt, dest, tag, comm);
            }
            if mode == Mode::Buffered {
                return self.bsend(buf, count, dt, dest, tag, comm);
            }
            if jobs::must_poll() {
                // A blocking send may wait for its receiver, which may wait
                // for a collective this rank must progress.
                let mut r = self.c.request_null;
                let rc = self.isend(mode, buf, count, dt, dest, tag, comm, &mut r);
                if !ok(rc) {
                    return rc;
                }
                return self.wait(&mut r, status_ignore());
            }
            // (Not small and contiguous: `send` took those.)
            let size = type_size(dt);
            let bytes = size * u64::try_from(count).unwrap_or(0);
            let (dep, hdr) = self.depart(bytes, dest, tag, comm);
            let rc = if self.stages(bytes) {
                // Blocking: the buffer is free again when the call returns, so
                // this thread's staging buffer is reused (no allocation).
                STAGE.with(|cell| {
                    let mut v = cell.take();
                    let rc = match self.stage_into(&mut v, size, hdr, buf, count, dt, comm) {
                        Ok(()) => mode.send_own(
                            v.as_ptr().cast(),
                            as_int(v.len()),
                            self.c.packed,
                            dest,
                            tag,
                            comm,
                        ),
                        Err(rc) => rc,
                    };
                    cell.replace(v);
                    rc
                })
            } else if let Some(w) = self.split_above_inline(bytes, dest, tag, comm) {
                let mut r = self.c.request_null;
                match self.isend_split(mode, hdr, buf, count, dt, w, dest, tag, comm, &mut r) {
                    Ok(Pending::Send {
                        _keep: Some(v),
                        header: Some(mut h),
                        ..
                    }) => {
                        let rc = PMPI_Wait(&mut r, status_ignore());
                        PMPI_Wait(&mut h, status_ignore());
                        self.lock().put_back_stage(v);
                        rc
                    }
                    Ok(_) => abi::SUCCESS,
                    Err(rc) => rc,
                }
            } else {
                match self.send_struct(hdr, buf, count, dt, size) {
                    Ok((_h, mut t, free)) => {
                        let rc = mode.send_own(abi::BOTTOM as *const c_void, 1, t, dest, tag, comm);
                        if free {
                            PMPI_Type_free(&mut t);
                        }
                        rc
                    }
                    Err(rc) => rc,
                }
            };
            if dep.complete_at > dep.ready {
                self.hold_until(dep.complete_at);
            }
            rc
        }
    }

    /// A slot holding the message `[hdr][n bytes at buf]` (`n` at most
    /// `slot_max`), for a send whose emulated completion is `complete_at`
    /// (0 for a blocking send: nobody reads it).
    #[inline(always)]
    pub(super) unsafe fn slot_for_send(
        &self,
        hdr: Header,
        complete_at: u64,
        buf: *const c_void,
        n: usize,
    ) -> SlotRef {
        unsafe {
            let s = self.lock().slots.take(n);
            let p = s.ptr();
            // A payload that fits behind a compact header goes so (`COMPACT`).
            let at = if n <= COMPACT_MAX && hdr.compact(self.keep_lag) {
                hdr.write_compact_to(p);
                COMPACT
            } else {
                hdr.write_to(p);
                HDR
            };
            fill_send_slot(&s, at, buf, n, complete_at);
            s
        }
    }

    /// A blocking send of `n` contiguous bytes (at most `slot_max`) staged
    /// in a slot for the time of the call, sent by MPI's send of `mode`
    /// (not buffered: `bsend`).
    #[inline(never)]
    unsafe fn send_slot(
        &self,
        mode: Mode,
        buf: *const c_void,
        n: usize,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            let t = self.c.packed;
            if self.idle_compact(n) {
                let s = self.slot_idle(buf, n);
                let rc = mode.send_own(s.ptr().cast(), as_int(s.slot().len), t, dest, tag, comm);
                self.lock().slots.give(s);
                return rc;
            }
            let (s, dep) = if self.stamp_compact(n) {
                self.slot_stamped(buf, n)
            } else {
                let (dep, hdr) = self.depart(n as u64, dest, tag, comm);
                (self.slot_for_send(hdr, 0, buf, n), dep)
            };
            let rc = mode.send_own(s.ptr().cast(), as_int(s.slot().len), t, dest, tag, comm);
            self.lock().slots.give(s);
            if dep.complete_at > dep.ready {
                self.hold_until(dep.complete_at);
            }
            rc
        }
    }

    /// Whether a send above `LOGGP_INLINE_MAX` goes split (`MAGIC_SPLIT`),
    /// and then its destination's MPI_COMM_WORLD rank, which receives the
    /// payload on `payload_comm`. Not for a destination outside this
    /// MPI_COMM_WORLD (spawned, connected) or MPI_PROC_NULL, nor a tag MPI
    /// would refuse (the header's send would fail after the payload's).
    pub(super) unsafe fn split_to(&self, dest: c_int, tag: c_int, comm: Comm) -> Option<c_int> {
        unsafe {
            if !self.cfg.split
                || self.payload_comm.0 == self.c.comm_null
                || tag < 0
                || u32::try_from(tag).ok()? > self.payload_tags
            {
                return None;
            }
            let w = self.world_rank(&mut self.lock(), comm, dest)?;
            c_int::try_from(w).ok()
        }
    }

    /// `split_to` for a send above `LOGGP_INLINE_MAX`; none for others.
    unsafe fn split_above_inline(
        &self,
        bytes: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> Option<c_int> {
        if bytes <= self.cfg.inline_max {
            return None;
        }
        unsafe { self.split_to(dest, tag, comm) }
    }

    /// Whether a send of `bytes` may go staged, `[header][payload]` in one
    /// contiguous buffer: up to `LOGGP_INLINE_MAX`, below
    /// `LOGGP_DIRECT_MIN` (from there it goes as the struct `{header,
    /// buffer}`, as a receive with that room lands: staged, MPICH 4.0's
    /// 16 KiB stream moved 0.66x native, as the struct 0.76x,
    /// `bench-compare.sh`'s bw_16k, and windows of distinct buffers
    /// 0.85x against 1.17x, `bench-midsize.sh`), and on Open MPI only
    /// while it goes by the eager protocol (`OMPI_STAGED_MAX`). Open MPI
    /// 4.1 and 5.0 move a larger contiguous message by a single-copy get
    /// that, when the receive is smaller (a truncation), writes the whole
    /// message past the receive buffer (natively too: the application's
    /// own memory): into a receiving shim's slot or staging buffer, the
    /// shim's state. Sent from a non-contiguous datatype, the message goes
    /// by copies that stop at the receive's end.
    #[inline(always)]
    pub(super) fn stages(&self, bytes: u64) -> bool {
        bytes <= self.cfg.inline_max && bytes < self.direct_min as u64 && one_block_is_safe(bytes)
    }

    /// Posts a split send: the payload as it is to world rank `w` on
    /// `payload_comm` (its request is `req`), then the header alone on the
    /// application's envelope in the send's mode, which the returned entry
    /// keeps with its request. The payload goes first: an error in the
    /// application's buffer or datatype then stops the send before any
    /// header announces it.
    pub(super) unsafe fn isend_split(
        &self,
        mode: Mode,
        mut hdr: Header,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        w: c_int,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> Result<Pending, c_int> {
        unsafe {
            hdr.set_magic(MAGIC_SPLIT);
            let ptag = hdr.payload_tag(self.payload_tags);
            // The application's request is the payload's: in synchronous
            // mode it too completes only once received into (its receive is
            // posted once the header matched), else an eager payload would
            // complete an Issend before any receive matched it.
            let payload_send = if mode == Mode::Synchronous {
                PMPI_Issend
            } else {
                PMPI_Isend
            };
            let rc = payload_send(buf, count, dt, w, ptag, self.payload_comm.0, req);
            if !ok(rc) {
                return Err(rc);
            }
            let mut v = self.stage_buf();
            v.clear();
            v.resize(HDR, 0);
            hdr.write_to(v.as_mut_ptr());
            let mut h = self.c.request_null;
            let rc = mode.isend_own(
                v.as_ptr().cast(),
                HDR_INT,
                self.c.packed,
                dest,
                tag,
                comm,
                &mut h,
            );
            if !ok(rc) {
                // Nobody will ask for the payload.
                PMPI_Cancel(req);
                PMPI_Request_free(req);
                return Err(rc);
            }
            self.counters.split.fetch_add(1, Ordering::Relaxed);
            Ok(Pending::Send {
                _keep: Some(Stage::Heap(v)),
                _hdr: None,
                header: Some(h),
            })
        }
    }

    pub(super) fn hold_until(&self, t: u64) {
        if t == 0 {
            // Nothing to hold (a departure `depart` did not time: every
            // sender-side knob is zero): no clock read.
            return;
        }
        let n = now();
        if t > n {
            self.pass_time(t, false);
            self.counters
                .send_wait_ns
                .fetch_add(t - n, Ordering::Relaxed);
        }
    }

    /// Buffered send under virtual time: the shim buffers the message itself
    /// (a staged copy sent with Isend) instead of using the attached buffer,
    /// whose size the application computed without our 32-byte header.
    pub(super) unsafe fn bsend(
        &self,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> c_int {
        unsafe {
            let size = type_size(dt);
            let bytes = size * u64::try_from(count).unwrap_or(0);
            let (_, hdr) = self.depart(bytes, dest, tag, comm);
            let mut v = match self.stage(size, hdr, buf, count, dt, comm) {
                Ok(v) => v,
                Err(rc) => return rc,
            };
            let mut req = self.c.request_null;
            // Any size: a buffered send is always staged (its buffer is
            // the application's again on return).
            let rc = if one_block_is_safe(bytes) {
                PMPI_Isend(
                    v.as_ptr().cast(),
                    as_int(v.len()),
                    self.c.packed,
                    dest,
                    tag,
                    comm,
                    &mut req,
                )
            } else {
                // Not as one contiguous block (`stages`, Open MPI): the header again
                // behind the payload, past a gap (adjacent blocks would be
                // merged into one), and the two sent as a struct.
                // Far above `COMPACT_MAX`: staged behind a full header.
                debug_assert!(bytes > COMPACT_MAX as u64);
                let n = v.len() - HDR;
                v.resize(HDR + n + BSEND_GAP + HDR, 0);
                let p = v.as_mut_ptr();
                std::ptr::copy_nonoverlapping(p, p.add(HDR + n + BSEND_GAP), HDR);
                match self.struct_type(
                    p.add(HDR + n + BSEND_GAP).cast::<Header>(),
                    p.add(HDR).cast(),
                    as_int(n),
                    self.c.byte,
                ) {
                    Ok(mut t) => {
                        let rc = PMPI_Isend(
                            abi::BOTTOM as *const c_void,
                            1,
                            t,
                            dest,
                            tag,
                            comm,
                            &mut req,
                        );
                        PMPI_Type_free(&mut t);
                        rc
                    }
                    Err(rc) => rc,
                }
            };
            if ok(rc) {
                let mut st = self.lock();
                st.bsends.push((req, v));
                Self::reap_bsends(&mut st, false);
            }
            rc
        }
    }

    /// Frees buffered sends that have completed (all of them when `all`).
    pub(super) fn reap_bsends(st: &mut State, all: bool) {
        st.bsends.retain_mut(|(req, _)| {
            let mut flag: c_int = 0;
            // SAFETY: req is a live request from PMPI_Isend.
            unsafe {
                if all {
                    PMPI_Wait(
                        req,
                        std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE),
                    );
                    flag = 1;
                } else {
                    PMPI_Test(
                        req,
                        &mut flag,
                        std::ptr::null_mut::<Status>().wrapping_byte_add(abi::STATUS_IGNORE),
                    );
                }
            }
            flag == 0
        });
    }

    /// Completes every buffered send (Buffer_detach, Finalize).
    pub fn flush_bsends(&self) {
        // SAFETY: freed receives are live requests of ours.
        unsafe { self.reap_freed_now(true) };
        let mut st = self.lock();
        Self::reap_bsends(&mut st, true);
    }

    /// A request that is already complete, standing for work the shim did
    /// itself: a receive from MPI_PROC_NULL.
    pub(super) unsafe fn done_request(&self, req: *mut Request) -> c_int {
        unsafe {
            let rc = start_grequest(req);
            if ok(rc) {
                PMPI_Grequest_complete(*req)
            } else {
                rc
            }
        }
    }

    /// Nonblocking send in any mode. Its usual case, a small message of a
    /// predefined contiguous type (not buffered), is staged in a slot of
    /// the light lane here; every other is `isend_general`'s.
    #[inline(always)]
    pub unsafe fn isend(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            if mode != Mode::Buffered {
                if let Some(n) = small_contiguous(dt, count, self.slot_max) {
                    if self.idle_compact(n) {
                        let s = self.slot_idle(buf, n);
                        return self.isend_slot(mode, s, 0, dest, tag, comm, req);
                    }
                    if self.stamp_compact(n) {
                        let (s, dep) = self.slot_stamped(buf, n);
                        return self.isend_slot(mode, s, dep.ready, dest, tag, comm, req);
                    }
                    let (dep, hdr) = self.depart(n as u64, dest, tag, comm);
                    let s = self.slot_for_send(hdr, dep.complete_at, buf, n);
                    return self.isend_slot(mode, s, dep.ready, dest, tag, comm, req);
                }
            }
            self.isend_general(mode, buf, count, dt, dest, tag, comm, req)
        }
    }

    /// Whether a send of `n` contiguous bytes departs by `slot_idle`: an
    /// idle sender (`idle_send`: its departure is 0 and nobody reads
    /// it) and a message its compact header carries whole
    /// (`Header::compact`: no L of its own, no lag, one host).
    #[inline(always)]
    fn idle_compact(&self, n: usize) -> bool {
        self.idle_send && n <= COMPACT_MAX && self.compact_src
    }

    /// `depart` and `slot_for_send` of an idle sender (`idle_compact`) in
    /// one borrow of the state: the slot holds `[compact header][n bytes
    /// at buf]`, the header written from the rank and the sequence number
    /// alone (what `Header::new` of a departure at 0 and
    /// `write_compact_to` give); in a job of idle gates (`tiny`) up to
    /// `TINY_MAX` bytes go behind the tiny header instead.
    #[inline(always)]
    pub(super) unsafe fn slot_idle(&self, buf: *const c_void, n: usize) -> SlotRef {
        unsafe {
            let (s, seq) = {
                let mut st = self.lock();
                st.sends += 1;
                st.bytes_sent += n as u64;
                let seq = st.next_seq();
                (st.slots.take(n), seq)
            };
            if self.tiny && n <= TINY_MAX {
                write_tiny(s.ptr());
                fill_send_slot(&s, TINY, buf, n, 0);
                return s;
            }
            write_compact(s.ptr(), self.compact_head, seq, 0);
            fill_send_slot(&s, COMPACT, buf, n, 0);
            s
        }
    }

    /// Whether a send of `n` contiguous bytes departs by `slot_stamped`:
    /// a sender that only stamps its departures (`stamp_send`, an added
    /// L alone for instance), on one host, and a message its compact
    /// header carries whole.
    #[inline(always)]
    fn stamp_compact(&self, n: usize) -> bool {
        self.stamp_compact && n <= COMPACT_MAX
    }

    /// `depart_stamp` and `slot_for_send` of a sender that only stamps
    /// (`stamp_compact`) in one borrow of the state, as `slot_idle` is
    /// for an idle sender: the slot holds `[compact header][n bytes at
    /// buf]`, the header written from the rank, the sequence number and
    /// the departure alone, its emulated completion the departure. (Through
    /// `depart` and `slot_for_send`, the header built whole, checked for
    /// the compact form and written, cost the L sweep's sender ~60 of its
    /// instructions per message, `scripts/bench-instr.sh openmpi
    /// LOGGP_ARM=L`.)
    #[inline(never)]
    pub(super) unsafe fn slot_stamped(
        &self,
        buf: *const c_void,
        n: usize,
    ) -> (SlotRef, loggp_core::Departure) {
        unsafe {
            let t = now();
            let (s, seq, dep) = {
                let mut st = self.lock();
                st.sends += 1;
                st.bytes_sent += n as u64;
                let seq = st.next_seq();
                (st.slots.take(n), seq, st.send.stamp(t))
            };
            // As `Header::new` writes it (in the job's time base where
            // start-up has synchronised hosts' clocks).
            write_compact(s.ptr(), self.compact_head, seq, crate::clock::stamp(dep.d));
            fill_send_slot(&s, COMPACT, buf, n, dep.complete_at);
            (s, dep)
        }
    }

    /// A slot holding the send of `n` contiguous bytes at `buf` (at most
    /// `slot_max`) to `dest`, departed (`slot_idle` for an idle sender,
    /// `slot_stamped` for one that only stamps, else `depart` and
    /// `slot_for_send`), its emulated completion set; and when the sender
    /// was ready to send it (`Departure::ready`, 0 for an idle sender).
    #[inline(always)]
    pub(super) unsafe fn slot_to_send(
        &self,
        buf: *const c_void,
        n: usize,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    ) -> (SlotRef, u64) {
        unsafe {
            if self.idle_compact(n) {
                return (self.slot_idle(buf, n), 0);
            }
            if self.stamp_compact(n) {
                let (s, dep) = self.slot_stamped(buf, n);
                return (s, dep.ready);
            }
            let (dep, hdr) = self.depart(n as u64, dest, tag, comm);
            (self.slot_for_send(hdr, dep.complete_at, buf, n), dep.ready)
        }
    }

    /// MPI's nonblocking send (by `mode`) of the message staged in `s`.
    #[inline(always)]
    unsafe fn isend_staged(
        &self,
        mode: Mode,
        s: &SlotRef,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            let len = as_int(s.slot().len);
            mode.isend_own(s.ptr().cast(), len, self.c.packed, dest, tag, comm, req)
        }
    }

    /// A nonblocking send of the message staged in `s` (a slot of the
    /// light lane, which keeps it until completion), emulated ready at
    /// `ready`: entered in the request table, or its slot given back where
    /// MPI refused it.
    #[inline(always)]
    unsafe fn isend_slot(
        &self,
        mode: Mode,
        s: SlotRef,
        ready: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            let rc = self.isend_staged(mode, &s, dest, tag, comm, req);
            let mut st = self.lock();
            if ok(rc) {
                st.track_light_send(key(*req), s, ready);
            } else {
                st.slots.give(s);
            }
            rc
        }
    }

    /// Departs and posts the nonblocking send of `n` contiguous bytes (at
    /// most `slot_max`; `slot_to_send`), its request in `*req`, without
    /// entering it in the request table (`sendrecv_slots` keeps it to
    /// itself): the slot and when the sender was ready to send it, or
    /// MPI's error with the slot given back.
    #[inline(always)]
    pub(super) unsafe fn post_send_slot(
        &self,
        mode: Mode,
        buf: *const c_void,
        n: usize,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> Result<(SlotRef, u64), c_int> {
        unsafe {
            let (s, ready) = self.slot_to_send(buf, n, dest, tag, comm);
            let rc = self.isend_staged(mode, &s, dest, tag, comm, req);
            if ok(rc) {
                Ok((s, ready))
            } else {
                self.lock().slots.give(s);
                Err(rc)
            }
        }
    }

    /// Nonblocking send in any mode (`isend`).
    pub unsafe fn isend_general(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            if self.refuses_derived(buf, count.into(), dt, false) {
                return mode.isend_native(buf, count, dt, dest, tag, comm, req);
            }
            if mode == Mode::Buffered {
                let rc = self.bsend(buf, count, dt, dest, tag, comm);
                if !ok(rc) {
                    return rc;
                }
                return PMPI_Isend(
                    std::ptr::null(),
                    0,
                    self.c.byte,
                    abi::PROC_NULL,
                    tag,
                    comm,
                    req,
                );
            }
            let size = type_size(dt);
            let bytes = size * u64::try_from(count).unwrap_or(0);
            let (dep, hdr) = self.depart(bytes, dest, tag, comm);
            if bytes <= self.cfg.inline_max {
                if let Some(n) = contiguous_bytes(dt, count, size).filter(|&n| n <= self.slot_max) {
                    // A derived type that is one contiguous block.
                    let s = self.slot_for_send(hdr, dep.complete_at, buf, n);
                    return self.isend_slot(mode, s, dep.ready, dest, tag, comm, req);
                }
            }
            let (rc, pending) = if self.stages(bytes) {
                match self.stage(size, hdr, buf, count, dt, comm) {
                    Ok(v) => {
                        let rc = mode.isend_own(
                            v.as_ptr().cast(),
                            as_int(v.len()),
                            self.c.packed,
                            dest,
                            tag,
                            comm,
                            req,
                        );
                        (
                            rc,
                            Pending::Send {
                                _keep: Some(Stage::Heap(v)),
                                _hdr: None,
                                header: None,
                            },
                        )
                    }
                    Err(rc) => return rc,
                }
            } else if let Some(w) = self.split_above_inline(bytes, dest, tag, comm) {
                match self.isend_split(mode, hdr, buf, count, dt, w, dest, tag, comm, req) {
                    Ok(p) => (abi::SUCCESS, p),
                    Err(rc) => return rc,
                }
            } else {
                match self.send_struct(hdr, buf, count, dt, size) {
                    Ok((h, mut t, free)) => {
                        let rc = mode.isend_own(
                            abi::BOTTOM as *const c_void,
                            1,
                            t,
                            dest,
                            tag,
                            comm,
                            req,
                        );
                        if free {
                            PMPI_Type_free(&mut t);
                        }
                        (
                            rc,
                            Pending::Send {
                                _keep: None,
                                _hdr: Some(h),
                                header: None,
                            },
                        )
                    }
                    Err(rc) => return rc,
                }
            };
            if ok(rc) {
                self.lock()
                    .track_send(key(*req), pending, dep.complete_at, dep.ready);
            }
            rc
        }
    }

    /// Persistent send (standard, synchronous, ready, buffered).
    pub unsafe fn send_init(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> c_int {
        unsafe {
            if mode == Mode::Buffered {
                let mut own = dt;
                let rc = PMPI_Type_dup(dt, &mut own);
                if !ok(rc) {
                    return rc;
                }
                let rc = PMPI_Send_init(
                    std::ptr::null(),
                    0,
                    self.c.byte,
                    abi::PROC_NULL,
                    tag,
                    comm,
                    req,
                );
                if !ok(rc) {
                    PMPI_Type_free(&mut own);
                } else {
                    self.lock().reqs.track(
                        key(*req),
                        Kind::PBsend,
                        Pending::PBsend {
                            buf,
                            count,
                            dt: own,
                            dest,
                            tag,
                            comm,
                        },
                    );
                }
                return rc;
            }
            let size = type_size(dt);
            let bytes = size * u64::try_from(count).unwrap_or(0);
            if let Some(rc) =
                self.send_init_split(mode, buf, count, dt, bytes, dest, tag, comm, req)
            {
                return rc;
            }
            let h = Box::new(Header::placeholder(self.rank));
            // Compact at every Start: a tiny payload, and no header field
            // the compact form leaves out (no drawn L; no lag that must
            // travel, `Engine::keep_lag`). Decided once: the datatype is
            // fixed.
            let compact = bytes <= COMPACT_MAX as u64
                && self.cfg.l_dist.is_fixed()
                && !self.keep_lag
                && h.compact(false);
            // A small contiguous payload: staged as a slot's send is (one
            // contiguous message; MPICH 4.0 sends an 8-byte struct
            // datatype ~500 ns slower), copied in at every Start.
            let staged = contiguous_bytes(dt, count, size)
                .filter(|&n| n <= self.slot_max)
                .map(|n| {
                    let at = if compact { COMPACT } else { HDR };
                    PStage {
                        buf: vec![0u8; at + n].into_boxed_slice(),
                        at,
                        from: buf.cast(),
                        n,
                    }
                });
            let rc = if let Some(p) = &staged {
                mode.send_init_own(
                    p.buf.as_ptr().cast(),
                    as_int(p.buf.len()),
                    self.c.packed,
                    dest,
                    tag,
                    comm,
                    req,
                )
            } else {
                let hdr_len = if compact { COMPACT_INT } else { HDR_INT };
                let mut t = match self.struct_type_with(&*h, hdr_len, buf, count, dt) {
                    Ok(t) => t,
                    Err(rc) => return rc,
                };
                let rc =
                    mode.send_init_own(abi::BOTTOM as *const c_void, 1, t, dest, tag, comm, req);
                PMPI_Type_free(&mut t);
                rc
            };
            if ok(rc) {
                self.lock().reqs.track(
                    key(*req),
                    Kind::PSend,
                    Pending::PSend {
                        hdr: h,
                        compact,
                        staged,
                        bytes,
                        dest,
                        tag,
                        comm,
                        split: None,
                    },
                );
            }
            rc
        }
    }

    /// A persistent send above `LOGGP_INLINE_MAX` set up split (`PSplit`),
    /// when it may go so and a payload tag is free; `None` to set it up
    /// whole (by a struct datatype). Its payload goes synchronous, so a
    /// standard or ready one goes split only from `PSPLIT_MIN` bytes.
    unsafe fn send_init_split(
        &self,
        mode: Mode,
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        bytes: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        req: *mut Request,
    ) -> Option<c_int> {
        unsafe {
            if mode != Mode::Synchronous && bytes < PSPLIT_MIN {
                return None;
            }
            let w = self.split_above_inline(bytes, dest, tag, comm)?;
            let ptag = {
                let limit = persistent_tags(self.payload_tags);
                self.lock().ptags.take(limit)?
            };
            let rc = PMPI_Ssend_init(
                buf,
                count,
                dt,
                w,
                c_int::try_from(ptag).unwrap_or(1),
                self.payload_comm.0,
                req,
            );
            if !ok(rc) {
                self.lock().ptags.give(ptag);
                return Some(rc);
            }
            self.lock().reqs.track(
                key(*req),
                Kind::PSend,
                Pending::PSend {
                    hdr: Box::new(Header::placeholder(self.rank)),
                    compact: false,
                    staged: None,
                    bytes,
                    dest,
                    tag,
                    comm,
                    split: Some(PSplit { ptag, header: None }),
                },
            );
            Some(rc)
        }
    }

    pub unsafe fn recv_init(
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
            let h = Box::new(Header::default());
            let contig = contiguous_bytes(dt, count, type_size(dt));
            // Staged as a nonblocking receive of its kind is (`recv`): MPI
            // receives header and payload into the request's own buffer,
            // each completion copies the payload out.
            let staged =
                contig.filter(|&cap| cap as u64 <= self.cfg.inline_max && cap < self.direct_min);
            let mut own = staged.map(|cap| vec![0u8; HDR + cap].into_boxed_slice());
            let rc = if let Some(own) = own.as_mut() {
                let n = as_int(own.len());
                PMPI_Recv_init(
                    own.as_mut_ptr().cast(),
                    n,
                    self.c.packed,
                    src,
                    tag,
                    comm,
                    req,
                )
            } else {
                let mut t = match self.struct_type(&*h, buf, count, dt) {
                    Ok(t) => t,
                    Err(rc) => return rc,
                };
                let rc = PMPI_Recv_init(abi::BOTTOM as *mut c_void, 1, t, src, tag, comm, req);
                PMPI_Type_free(&mut t);
                rc
            };
            if !ok(rc) {
                return rc;
            }
            // For a Start served from the stash (`start`).
            let mut dup = dt;
            let rc = PMPI_Type_dup(dt, &mut dup);
            if !ok(rc) {
                PMPI_Request_free(req);
                return rc;
            }
            let watch = contig.is_none_or(|cap| cap as u64 > self.cfg.inline_max);
            let recv = Box::new(PRecvArgs {
                watch,
                buf,
                count,
                dt: dup,
                src,
                tag,
                comm,
                stage: own
                    .as_mut()
                    .map_or(std::ptr::null_mut(), |o| o.as_mut_ptr()),
                cap: staged.unwrap_or(0),
            });
            self.lock().reqs.track(
                key(*req),
                Kind::PRecv,
                Pending::PRecv {
                    hdr: h,
                    recv,
                    served: None,
                    split: Split::Idle,
                    own,
                    placed: false,
                },
            );
            rc
        }
    }

    /// Start of one request: tracked persistent requests get their header
    /// (departure) and overheads here.
    pub unsafe fn start(&self, req: *mut Request) -> c_int {
        unsafe {
            enum Started {
                /// The header's box, compact, the staged buffer (start,
                /// header length, payload's source and length), bytes,
                /// destination, tag, communicator.
                Send(
                    *mut Header,
                    bool,
                    Option<(*mut u8, usize, *const u8, usize)>,
                    u64,
                    c_int,
                    c_int,
                    Comm,
                ),
                Bsend(*const c_void, c_int, Datatype, c_int, c_int, Comm),
                /// A split one (`PSplit`): the header's box, payload tag
                /// and earlier header request, bytes, destination, tag,
                /// communicator.
                Split(*mut Header, u32, Option<Request>, u64, c_int, c_int, Comm),
                Recv(*const PRecvArgs),
                Other,
            }
            let started = {
                let mut st = self.lock();
                match st.reqs.start(key(*req)) {
                    Some((
                        _,
                        Pending::PSend {
                            hdr,
                            split: Some(sp),
                            bytes,
                            dest,
                            tag,
                            comm,
                            ..
                        },
                    )) => Started::Split(
                        &mut **hdr,
                        sp.ptag,
                        sp.header.take(),
                        *bytes,
                        *dest,
                        *tag,
                        *comm,
                    ),
                    Some((
                        _,
                        Pending::PSend {
                            hdr,
                            compact,
                            staged,
                            bytes,
                            dest,
                            tag,
                            comm,
                            split: None,
                        },
                    )) => Started::Send(
                        &mut **hdr,
                        *compact,
                        staged
                            .as_mut()
                            .map(|p| (p.buf.as_mut_ptr(), p.at, p.from, p.n)),
                        *bytes,
                        *dest,
                        *tag,
                        *comm,
                    ),
                    Some((
                        _,
                        Pending::PBsend {
                            buf,
                            count,
                            dt,
                            dest,
                            tag,
                            comm,
                        },
                    )) => Started::Bsend(*buf, *count, *dt, *dest, *tag, *comm),
                    Some((_, Pending::PRecv { recv, .. })) if self.stash_may_match(recv.tag) => {
                        Started::Recv(&**recv)
                    }
                    _ => Started::Other,
                }
            };
            match started {
                Started::Send(hdr, compact, staged, bytes, dest, tag, comm) => {
                    let (dep, h) = self.depart(bytes, dest, tag, comm);
                    // The header lives in the pending entry (boxed, stable) and
                    // is not in flight: the request was inactive. So does a
                    // staged buffer, which MPI reads only once started.
                    if let Some((p, at, from, n)) = staged {
                        if at == COMPACT {
                            debug_assert!(h.compact(self.hosts));
                            h.write_compact_to(p);
                        } else {
                            h.write_to(p);
                        }
                        copy_bytes(from, p.add(at), n);
                    } else if compact {
                        // `send_init` checked what this form needs of it.
                        debug_assert!(h.compact(self.hosts));
                        h.write_compact_to(hdr.cast());
                    } else {
                        *hdr = h;
                    }
                    self.lock().reqs.set_complete_at(key(*req), dep.complete_at);
                    PMPI_Start(req)
                }
                Started::Split(p, ptag, earlier, bytes, dest, tag, comm) => {
                    if let Some(mut h) = earlier {
                        // Not waited for by a completion (none reads the
                        // header before it rewrites it): done long since.
                        PMPI_Wait(&mut h, status_ignore());
                    }
                    // The box is stable and not in flight (the request was
                    // inactive, its last header waited for).
                    let (dep, mut h) = self.depart(bytes, dest, tag, comm);
                    h.set_magic(MAGIC_SPLIT);
                    h.set_ptag(ptag);
                    *p = h;
                    self.lock().reqs.set_complete_at(key(*req), dep.complete_at);
                    // The payload first, as `isend_split` sends it.
                    let rc = PMPI_Start(req);
                    if !ok(rc) {
                        return rc;
                    }
                    let mut hr = self.c.request_null;
                    let rc = PMPI_Isend(
                        p.cast_const().cast(),
                        HDR_INT,
                        self.c.packed,
                        dest,
                        tag,
                        comm,
                        &mut hr,
                    );
                    if !ok(rc) {
                        // Nobody will ask for the payload.
                        PMPI_Cancel(req);
                        PMPI_Wait(req, status_ignore());
                        return rc;
                    }
                    if let Some(Pending::PSend {
                        split: Some(sp), ..
                    }) = self.lock().reqs.get_mut(key(*req))
                    {
                        sp.header = Some(hr);
                    }
                    self.counters.split.fetch_add(1, Ordering::Relaxed);
                    abi::SUCCESS
                }
                Started::Bsend(buf, count, dt, dest, tag, comm) => {
                    let rc = self.bsend(buf, count, dt, dest, tag, comm);
                    if !ok(rc) {
                        return rc;
                    }
                    PMPI_Start(req)
                }
                Started::Recv(a) => {
                    // The boxed arguments stay put while the request lives.
                    let a = &*a;
                    match self.serve_from_stash(a) {
                        Ok(None) => self.start_recv(req),
                        Ok(Some(served)) => {
                            // Not started in MPI: the message is here. MPI
                            // completes the inactive request at once; the
                            // table (active) completes it in the emulated
                            // machine, from `served`.
                            if let Some(Pending::PRecv { served: s, .. }) =
                                self.lock().reqs.get_mut(key(*req))
                            {
                                *s = Some(served);
                            }
                            abi::SUCCESS
                        }
                        Err(rc) => {
                            self.take(*req);
                            rc
                        }
                    }
                }
                Started::Other => {
                    if self.lock().reqs.kind(key(*req)) == Some(Kind::PRecv) {
                        self.start_recv(req)
                    } else {
                        PMPI_Start(req)
                    }
                }
            }
        }
    }

    /// Starts a persistent receive in MPI, watched (`watch_split`) where
    /// its arguments say so (`PRecvArgs::watch`).
    unsafe fn start_recv(&self, req: *mut Request) -> c_int {
        unsafe {
            let rc = PMPI_Start(req);
            if ok(rc) {
                let mut st = self.lock();
                let watch = match st.reqs.get_mut(key(*req)) {
                    Some(Pending::PRecv { recv, placed, .. }) => {
                        *placed = false;
                        recv.watch
                    }
                    _ => true,
                };
                if watch {
                    Self::watch_split(&mut st, *req);
                }
            }
            rc
        }
    }

    /// A persistent receive's Start: the message it would get, when a
    /// probe already took it off the network into the stash, placed in
    /// its buffer now (as `recv` does for a receive that finds it there).
    unsafe fn serve_from_stash(&self, a: &PRecvArgs) -> Result<Option<Served>, c_int> {
        unsafe {
            let Some(msg) = self.take_stashed(a.src, a.tag, a.comm)? else {
                return Ok(None);
            };
            let (n, truncated) = self.place_stashed(&msg, a.buf, a.count, a.dt)?;
            Ok(Some(Served {
                msg: Box::new(msg),
                n,
                truncated,
            }))
        }
    }
}

/// The tail of every staged send: `n` bytes at `buf` copied behind the
/// header (`at` bytes) already in `s`, and the slot's fields set.
#[inline(always)]
unsafe fn fill_send_slot(s: &SlotRef, at: usize, buf: *const c_void, n: usize, complete_at: u64) {
    unsafe {
        copy_bytes(buf.cast(), s.ptr().add(at), n);
        let slot = s.slot();
        slot.len = at + n;
        slot.recv = false;
        slot.complete_at = complete_at;
    }
}
