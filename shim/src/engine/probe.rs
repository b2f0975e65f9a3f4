//! Probes and the probe stash: a probed message is taken off the
//! network so that its virtual arrival can be read, kept in the stash
//! (`loggp_core::stash` decides which message a receive or probe sees)
//! and delivered to the receive that matches it, Mrecv/Imrecv included.

use super::*;

/// The most messages `Engine::pull` takes off the network in one call on
/// the way to a specific tag: a source that keeps sending other tags does
/// not hold a probe in one call.
const PULL_BATCH: usize = 64;

/// A message taken off the network early by a probe, waiting to be received
/// (the matching rules are `loggp_core::stash`'s).
pub struct Stashed {
    pub(super) env: Envelope,
    pub(super) comm_h: Comm,
    pub(super) d: u64,
    pub(super) lag: u32,
    /// The sender's MPI_COMM_WORLD rank (from the header).
    pub(super) src: u32,
    /// The drawn L (`LOGGP_L_DIST`), from the header.
    pub(super) l: u64,
    /// Virtual arrival, from `d` (fixed once the message is here).
    pub(super) arrival: u64,
    /// The sender's sequence number, from the header; in a job of tiny
    /// headers, when it was taken off the network, in this process's count
    /// (`State::pulled`: `Engine::pull` takes each source's messages in
    /// the order sent there).
    pub(super) seq: u32,
    /// The message as it came: the header, then the payload (`payload`).
    /// Not shifted down over the header: that would move every byte of
    /// the message once more (2 GiB for the largest).
    wire: Vec<u8>,
    /// Where the payload starts in `wire`: behind a full header (`HDR`)
    /// or a compact one (`COMPACT`), as the message came.
    at: usize,
}

impl Stashed {
    /// The application's bytes.
    pub(super) fn payload(&self) -> &[u8] {
        &self.wire[self.at..]
    }
}

impl loggp_core::stash::Stashed for Stashed {
    fn envelope(&self) -> &Envelope {
        &self.env
    }
    fn arrival(&self) -> u64 {
        self.arrival
    }
    fn seq(&self) -> u32 {
        self.seq
    }
}

/// What a receive or probe for `(src, tag)` on `comm` asks of the stash.
pub(super) fn pattern(comm: Comm, src: c_int, tag: c_int) -> Pattern {
    Pattern {
        comm: key(comm),
        source: (src != abi::ANY_SOURCE).then_some(src),
        tag: (tag != abi::ANY_TAG).then_some(tag),
    }
}

/// What a probe found: the status to report and, when taken, the message.
pub(super) type Probed = (Status, Option<Stashed>);

unsafe impl Send for Stashed {}

impl Engine {
    /// Places a stashed message's payload in the receive buffer, now:
    /// MPI lets it be written any time before completion, and the datatype
    /// may be freed before then. Contiguous types take a copy; any other is
    /// filled by MPI itself, from a message to ourselves on a private
    /// duplicate of MPI_COMM_SELF (data sent as MPI_PACKED may be received
    /// with any datatype, MPI-4.0 §5.2.1), so that the basic elements of a
    /// partial last element land exactly as from the network. Returns the
    /// bytes placed and whether the message was truncated.
    pub(super) unsafe fn place_stashed(
        &self,
        m: &Stashed,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<(usize, bool), c_int> {
        unsafe { self.place_bytes(m.payload(), buf, count, dt) }
    }

    /// `place_stashed` of the bytes `payload`.
    pub(super) unsafe fn place_bytes(
        &self,
        payload: &[u8],
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
    ) -> Result<(usize, bool), c_int> {
        unsafe {
            let size = type_size(dt);
            let cap =
                usize::try_from(size * u64::try_from(count).unwrap_or(0)).unwrap_or(usize::MAX);
            let n = payload.len().min(cap);
            let truncated = payload.len() > cap;
            if n == 0 {
                return Ok((0, truncated));
            }
            if contiguous_bytes(dt, count, size).is_some() {
                std::ptr::copy_nonoverlapping(payload.as_ptr(), buf.cast::<u8>(), n);
                return Ok((n, truncated));
            }
            // Whole elements: unpacked (no message, so no other thread's
            // Sendrecv to self can match it).
            let whole = u64::try_from(n).unwrap_or(u64::MAX) / size.max(1);
            if u64::try_from(n).ok() == Some(whole * size) {
                if let (Ok(insize), Ok(outcount)) = (c_int::try_from(n), c_int::try_from(whole)) {
                    let mut pos: c_int = 0;
                    let rc = PMPI_Unpack(
                        payload.as_ptr().cast(),
                        insize,
                        &mut pos,
                        buf,
                        outcount,
                        dt,
                        self.self_comm.0,
                    );
                    return if ok(rc) { Ok((n, truncated)) } else { Err(rc) };
                }
            }
            // A partial last element: MPI places its basic elements.
            let (k, t) = self.packed_bytes(n)?;
            let rc = PMPI_Sendrecv(
                payload.as_ptr().cast(),
                k,
                t,
                0,
                0,
                buf,
                count,
                dt,
                0,
                0,
                self.self_comm.0,
                status_ignore(),
            );
            self.free_packed_bytes(t);
            if ok(rc) {
                Ok((n, truncated))
            } else {
                Err(rc)
            }
        }
    }

    /// The stashed message a receive for `(src, tag)` on `comm` takes, if
    /// any, out of the stash. A wildcard tag: the stashed match's source
    /// may still have an older message inside MPI; it joins the stash
    /// first (`settle`). Inlined: its ~100-byte result is not moved
    /// through one more frame on a receive's path.
    #[inline(always)]
    pub(super) unsafe fn take_stashed(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
    ) -> Result<Option<Stashed>, c_int> {
        unsafe {
            let p = pattern(comm, src, tag);
            // In a job of tiny headers MPI holds nothing of a source older
            // than the stash holds of it (`pull`).
            let check = if self.tiny {
                None
            } else {
                self.lock().stash.source_to_check(&p)
            };
            if let Some(source) = check {
                self.settle(source, comm)?;
            }
            let taken = self.lock().stash.take_for_recv(&p, self.tiny);
            if taken.is_some() {
                self.stash_len.fetch_sub(1, Ordering::Relaxed);
            }
            Ok(taken)
        }
    }

    /// A receive while the probe stash holds messages: the stashed match,
    /// delivered (`Some` of its return code), or `None` when the stash has
    /// nothing for it and the receive goes to MPI as usual.
    #[inline(never)]
    pub(super) unsafe fn recv_stashed(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        src: c_int,
        tag: c_int,
        comm: Comm,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> Option<c_int> {
        unsafe {
            match self.take_stashed(src, tag, comm) {
                Ok(Some(m)) => Some(self.deliver_from_stash(m, buf, count, dt, req, status)),
                Ok(None) => None,
                Err(rc) => Some(rc),
            }
        }
    }

    /// Delivers a stashed message to a receive.
    pub(super) unsafe fn deliver_from_stash(
        &self,
        m: Stashed,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            let (n, truncated) = match self.place_stashed(&m, buf, count, dt) {
                Ok(placed) => placed,
                Err(rc) => return rc,
            };
            match req {
                Some(r) => {
                    let rc = self.done_request(r);
                    if ok(rc) {
                        self.lock().reqs.track(
                            key(*r),
                            Kind::FromStash,
                            Pending::FromStash {
                                msg: Box::new(m),
                                n,
                                truncated,
                            },
                        );
                    }
                    rc
                }
                None => {
                    let mut st = Status::zeroed();
                    let rc = self.deliver_stashed(&m, n, truncated, &mut st, true);
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    self.give_back(m.wire);
                    rc
                }
            }
        }
    }

    /// Completes the delivery of a placed stashed message: the gate, the
    /// status, the truncation error.
    pub(super) unsafe fn deliver_stashed(
        &self,
        m: &Stashed,
        n: usize,
        truncated: bool,
        st: &mut Status,
        block: bool,
    ) -> c_int {
        unsafe {
            self.gate(m.d, m.lag, m.src, m.l, m.payload().len() as u64, block);
            st.set_source(m.env.source);
            st.set_tag(m.env.tag);
            set_status_bytes(st, self.c.byte, n as u64);
            if truncated {
                return super::recv::raise(st, m.comm_h, abi::ERR_TRUNCATE);
            }
            st.set_error(abi::SUCCESS);
            abi::SUCCESS
        }
    }

    /// `n` bytes as an `int` count and a datatype: `n` × MPI_PACKED, or
    /// above 2^31-1 bytes (a message above 2 GiB) one element of an
    /// hindexed type of 2^30-byte blocks, for `free_packed_bytes`. Not a
    /// struct: Open MPI 4.1's MPI_Type_size_x says MPI_UNDEFINED for a
    /// struct above 2^31-1 bytes (an hindexed one it counts), and the
    /// engine sizes what it sends by it (`packed_copy`'s large case).
    pub(super) unsafe fn packed_bytes(&self, n: usize) -> Result<(c_int, Datatype), c_int> {
        unsafe {
            if let Ok(k) = c_int::try_from(n) {
                return Ok((k, self.c.packed));
            }
            const CHUNK: usize = 1 << 30;
            let mut lens: Vec<c_int> = Vec::new();
            let mut disps: Vec<abi::Aint> = Vec::new();
            let mut at = 0;
            while at < n {
                let k = (n - at).min(CHUNK);
                lens.push(as_int(k));
                disps.push(abi::Aint::try_from(at).unwrap_or(abi::Aint::MAX));
                at += k;
            }
            let mut t = self.c.packed;
            let rc = PMPI_Type_create_hindexed(
                as_int(lens.len()),
                lens.as_ptr(),
                disps.as_ptr(),
                self.c.packed,
                &mut t,
            );
            if !ok(rc) {
                return Err(rc);
            }
            let rc = PMPI_Type_commit(&mut t);
            if !ok(rc) {
                PMPI_Type_free(&mut t);
                return Err(rc);
            }
            Ok((1, t))
        }
    }

    pub(super) unsafe fn free_packed_bytes(&self, mut t: Datatype) {
        unsafe {
            if t != self.c.packed {
                PMPI_Type_free(&mut t);
            }
        }
    }

    /// Before a wildcard-tag receive or probe takes a stashed message of
    /// `source`: MPI's oldest message of that source joins the stash when
    /// it may be older (`Stash::may_be_older`), so that the stash's order
    /// decides (MPI-4.0 §3.5).
    pub(super) unsafe fn settle(&self, source: c_int, comm: Comm) -> Result<(), c_int> {
        unsafe {
            let mut flag: c_int = 0;
            let mut st = Status::zeroed();
            let rc = PMPI_Iprobe(source, abi::ANY_TAG, comm, &mut flag, &mut st);
            if !ok(rc) {
                return Err(rc);
            }
            if flag != 0 && self.lock().stash.may_be_older(key(comm), source, st.tag()) {
                self.pull(source, abi::ANY_TAG, comm)?;
            }
            Ok(())
        }
    }

    /// Takes a matching message off the network into the stash, if one
    /// has come; says from which source. The stash orders each source's
    /// messages by the sender's sequence number (`Header::seq`), and a
    /// wildcard-tag receive first takes in MPI's oldest of the source
    /// where it may be older (`settle`). A tiny header carries no
    /// sequence number (`wire::TINY`): in a job whose small messages go
    /// tiny (`Engine::tiny`), a probe for a specific tag takes the
    /// source's older messages of other tags off before its match instead,
    /// in the order sent (at most `PULL_BATCH` in a call; the match then
    /// in a later one), and the stash numbers messages as it takes them
    /// (`State::pulled`): it holds each source's in send order, and MPI
    /// holds none older. Not in other jobs: a probe of the last of a
    /// burst would take the whole burst through the stash (the
    /// calibration's gr_burst: 4553 -> 15643 of the shim's instructions
    /// per 16-message burst on its receiver outside the probe's polling,
    /// `OP=g scripts/bench-instr-coll.sh openmpi`, while the timed
    /// receives got cheaper: the calibration's g_r would read low).
    pub(super) unsafe fn pull(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
    ) -> Result<Option<c_int>, c_int> {
        unsafe {
            if tag == abi::ANY_TAG || !self.tiny {
                return Ok(self.pull_one(src, tag, comm)?.map(|(source, _)| source));
            }
            let source = if src == abi::ANY_SOURCE {
                let mut flag: c_int = 0;
                let mut st = Status::zeroed();
                let rc = PMPI_Iprobe(src, tag, comm, &mut flag, &mut st);
                if !ok(rc) {
                    return Err(rc);
                }
                if flag == 0 {
                    return Ok(None);
                }
                st.source()
            } else {
                src
            };
            let mut pulled = None;
            for _ in 0..PULL_BATCH {
                let Some((s, t)) = self.pull_one(source, abi::ANY_TAG, comm)? else {
                    break;
                };
                pulled = Some(s);
                if t == tag {
                    break;
                }
            }
            Ok(pulled)
        }
    }

    /// Takes the oldest message of `src` (or of any source) and `tag` (or
    /// any tag) that has come off the network into the stash, if any;
    /// says its source and tag.
    unsafe fn pull_one(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
    ) -> Result<Option<(c_int, c_int)>, c_int> {
        unsafe {
            let mut flag: c_int = 0;
            let mut msg: Message = self.c.message_null;
            let mut st = Status::zeroed();
            let rc = PMPI_Improbe(src, tag, comm, &mut flag, &mut msg, &mut st);
            if !ok(rc) {
                return Err(rc);
            }
            if flag == 0 {
                return Ok(None);
            }
            if msg == self.c.message_no_proc {
                return Ok(None);
            }
            let bytes = status_bytes(&st, self.c.byte);
            // From the staging pool: a blocking receive of the message
            // gives it back (`deliver_from_stash`), so that a probe and a
            // receive allocate nothing (calibrate's or_call and gr_burst).
            let mut v = self.scratch(bytes);
            // SAFETY: capacity reserved; Mrecv receives the very message the
            // probe matched and measured, so MPI writes all `bytes` bytes
            // before any is read.
            #[allow(clippy::uninit_vec)]
            v.set_len(bytes);
            let mut st2 = Status::zeroed();
            let (k, t) = self.packed_bytes(bytes)?;
            let rc = PMPI_Mrecv(v.as_mut_ptr().cast(), k, t, &mut msg, &mut st2);
            self.free_packed_bytes(t);
            if !ok(rc) {
                return Err(rc);
            }
            let mut at = hdr_len(v.as_ptr(), v.len());
            let h = if v.len() < at {
                Header::default()
            } else {
                Header::read_from(v.as_ptr())
            };
            if v.len() == HDR && h.magic() == MAGIC_SPLIT {
                // The header came alone: its payload joins it here.
                self.pull_payload(&h, &mut v)?;
                at = HDR;
            } else if v.len() < at || h.magic() != MAGIC {
                self.escaped(&st);
            }
            // A compact header stays in front of its payload (`at`): it was
            // widened to a full one here before, which moved the payload
            // and grew the buffer (~450 instructions and a realloc per
            // probed 8-byte message, `OP=p scripts/bench-instr-coll.sh`).
            let payload = (v.len() - at) as u64;
            self.counters.probed.fetch_add(1, Ordering::Relaxed);
            let mut s = self.lock();
            if self.hosts {
                s.gate.observe(now(), h.d, h.lag, payload);
            }
            let k = self.recv_knobs(h.src(), h.l());
            let arrival = s
                .gate
                .arrival_for(h.src(), h.d, payload, Seen::Unknown, k.as_ref());
            let seq = if self.tiny {
                s.pulled = s.pulled.wrapping_add(1);
                s.pulled
            } else {
                h.seq
            };
            s.stash.push(Stashed {
                env: Envelope {
                    comm: key(comm),
                    source: st.source(),
                    tag: st.tag(),
                },
                comm_h: comm,
                d: h.d,
                lag: h.lag,
                src: h.src(),
                l: h.l(),
                arrival,
                seq,
                wire: v,
                at,
            });
            self.stash_tags.store(s.stash.tag_bits(), Ordering::Relaxed);
            self.stash_len.fetch_add(1, Ordering::Relaxed);
            Ok(Some((st.source(), st.tag())))
        }
    }

    /// Receives the payload of the split message whose header `h` is `v`,
    /// behind it.
    unsafe fn pull_payload(&self, h: &Header, v: &mut Vec<u8>) -> Result<(), c_int> {
        unsafe {
            let mut msg: Message = self.c.message_null;
            let mut st = Status::zeroed();
            let src = c_int::try_from(h.src()).unwrap_or(0);
            let tag = h.payload_tag(self.payload_tags);
            let rc = PMPI_Mprobe(src, tag, self.payload_comm.0, &mut msg, &mut st);
            if !ok(rc) {
                return Err(rc);
            }
            let bytes = status_bytes(&st, self.c.byte);
            v.reserve_exact(bytes);
            let (k, t) = self.packed_bytes(bytes)?;
            let rc = PMPI_Mrecv(v.as_mut_ptr().add(HDR).cast(), k, t, &mut msg, &mut st);
            self.free_packed_bytes(t);
            if !ok(rc) {
                return Err(rc);
            }
            // SAFETY: MPI wrote the `bytes` bytes it measured behind the header.
            v.set_len(HDR + bytes);
            Ok(())
        }
    }

    /// Iprobe/Improbe: a message is reported only once it has virtually
    /// arrived. With `take`, the message is removed and returned.
    pub(super) unsafe fn probe_once(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        take: bool,
    ) -> Result<Option<Probed>, c_int> {
        unsafe {
            if src == abi::PROC_NULL {
                return Ok(None);
            }
            self.reap_freed();
            let p = pattern(comm, src, tag);
            // Sources whose oldest message inside MPI has joined the stash
            // since this call began (`Pattern::unsure`).
            let mut checked: Vec<c_int> = Vec::new();
            let mut pulled = false;
            loop {
                // An empty stash has nothing to find: no lock, no clock read
                // (a blocking probe polls here until its message comes).
                let unsure = if self.stash_len.load(Ordering::Relaxed) == 0 {
                    None
                } else {
                    let mut s = self.lock();
                    match s.stash.find_for_probe(&p, now(), self.tiny) {
                        Some((_, m))
                            if p.unsure() && !self.tiny && !checked.contains(&m.env.source) =>
                        {
                            Some(m.env.source)
                        }
                        Some((i, m)) => {
                            let mut st = Status::zeroed();
                            st.set_source(m.env.source);
                            st.set_tag(m.env.tag);
                            st.set_error(abi::SUCCESS);
                            set_status_bytes(&mut st, self.c.byte, m.payload().len() as u64);
                            let taken = if take {
                                self.stash_len.fetch_sub(1, Ordering::Relaxed);
                                Some(s.stash.remove(i))
                            } else {
                                None
                            };
                            return Ok(Some((st, taken)));
                        }
                        None => None,
                    }
                };
                match unsure {
                    // MPI may still hold an older message of this source.
                    Some(source) => {
                        checked.push(source);
                        self.settle(source, comm)?;
                    }
                    None if pulled => break,
                    None => {
                        let Some(source) = self.pull(src, tag, comm)? else {
                            break;
                        };
                        pulled = true;
                        if tag == abi::ANY_TAG {
                            // MPI's oldest of its source: nothing older left.
                            checked.push(source);
                        }
                    }
                }
            }
            Ok(None)
        }
    }

    pub unsafe fn iprobe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            jobs::progress_all();
            if src == abi::PROC_NULL {
                return PMPI_Iprobe(src, tag, comm, flag, status);
            }
            match self.probe_once(src, tag, comm, false) {
                Err(rc) => rc,
                Ok(None) => {
                    *flag = 0;
                    abi::SUCCESS
                }
                Ok(Some((st, _))) => {
                    *flag = 1;
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    abi::SUCCESS
                }
            }
        }
    }

    pub unsafe fn probe(&self, src: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int {
        unsafe {
            if src == abi::PROC_NULL {
                return PMPI_Probe(src, tag, comm, status);
            }
            let mut patience = Patience::new();
            loop {
                let mut flag: c_int = 0;
                let rc = self.iprobe(src, tag, comm, &mut flag, status);
                if !ok(rc) || flag != 0 {
                    return rc;
                }
                patience.pause();
            }
        }
    }

    pub unsafe fn improbe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        flag: *mut c_int,
        msg: *mut Message,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            jobs::progress_all();
            if src == abi::PROC_NULL {
                return PMPI_Improbe(src, tag, comm, flag, msg, status);
            }
            match self.probe_once(src, tag, comm, true) {
                Err(rc) => rc,
                Ok(None) => {
                    *flag = 0;
                    abi::SUCCESS
                }
                Ok(Some((st, m))) => {
                    *flag = 1;
                    *msg = self.fake_message(m.expect("taken"));
                    if !abi::status_ignored(status) {
                        st.copy_to(status);
                    }
                    abi::SUCCESS
                }
            }
        }
    }

    pub unsafe fn mprobe(
        &self,
        src: c_int,
        tag: c_int,
        comm: Comm,
        msg: *mut Message,
        status: *mut Status,
    ) -> c_int {
        unsafe {
            if src == abi::PROC_NULL {
                return PMPI_Mprobe(src, tag, comm, msg, status);
            }
            let mut patience = Patience::new();
            loop {
                let mut flag: c_int = 0;
                let rc = self.improbe(src, tag, comm, &mut flag, msg, status);
                if !ok(rc) || flag != 0 {
                    return rc;
                }
                patience.pause();
            }
        }
    }

    /// An MPI_Message handle for a stashed message. Open MPI handles are
    /// pointers: we use our own heap address, which no live MPI object can
    /// share. MPICH handles are ints whose top two bits give the kind; kind
    /// 0 is invalid in MPICH, so values below 2^30 are never MPICH's.
    pub(super) fn fake_message(&self, m: Stashed) -> Message {
        let m = Box::new(m);
        let mut s = self.lock();
        #[cfg(ompi)]
        let h: Message = (&*m as *const Stashed).cast_mut().cast();
        #[cfg(mpich)]
        let h: Message = {
            s.next_message = (s.next_message + 1) % (1 << 26);
            0x0d00_0000 | c_int::try_from(s.next_message).unwrap_or(1)
        };
        s.messages.insert(key(h), m);
        h
    }

    /// Mrecv/Imrecv. `None` when the handle is not ours (MESSAGE_NO_PROC).
    pub unsafe fn mrecv(
        &self,
        buf: *mut c_void,
        count: c_int,
        dt: Datatype,
        msg: *mut Message,
        req: Option<*mut Request>,
        status: *mut Status,
    ) -> Option<c_int> {
        unsafe {
            let m = self.lock().messages.remove(&key(*msg))?;
            *msg = self.c.message_null;
            Some(self.deliver_from_stash(*m, buf, count, dt, req, status))
        }
    }
}
