//! The request table: what the shim keeps per MPI request (`Pending`, the
//! payload of `loggp_core::lifecycle::Table`, which decides the life
//! cycle), generalized requests that stand for the shim's own work, and
//! MPI_Request_free.

use super::*;

/// A staged persistent send's buffer (`Pending::PSend`): header and
/// payload as the request sends them, and where each Start takes the
/// payload from.
pub(super) struct PStage {
    /// `[header][payload]`, the header `COMPACT` or `HDR` bytes (`at`).
    pub buf: Box<[u8]>,
    pub at: usize,
    /// The application's contiguous payload, `n` bytes.
    pub from: *const u8,
    pub n: usize,
}

/// A persistent send above `LOGGP_INLINE_MAX`, sent split as a
/// nonblocking one is (`Engine::isend_split`): the request is its
/// payload's, `MPI_Ssend_init` to the destination's MPI_COMM_WORLD rank on
/// `payload_comm` with the request's own tag `ptag` (`PTags`); every Start
/// sends the header alone from the entry's `hdr`, marked with that tag
/// (`Header::set_ptag`), by `header`, which completion waits for. The
/// payload goes synchronous: a Start may follow only its request's
/// completion, so no two payloads of one request are ever unmatched
/// together, and a receiver that saw two of its headers cannot give the
/// later one's payload to the earlier. (So a standard or ready one goes
/// split only from `PSPLIT_MIN` bytes.)
pub(super) struct PSplit {
    pub ptag: u32,
    pub header: Option<Request>,
}

/// Shim state attached to an MPI request; whether it is active and when a
/// send completes are the table's (`lifecycle::Entry`).
pub(super) enum Pending {
    /// Nonblocking send: keeps the staging buffer or header alive.
    Send {
        _keep: Option<Stage>,
        _hdr: Option<HdrMem>,
        /// A split send (`MAGIC_SPLIT`): the request is its payload's, and
        /// this the header's, which `_keep` holds; completed with it.
        header: Option<Request>,
    },
    Recv(Wire),
    /// A receive satisfied from the stash (Imrecv of a probed message, or an
    /// Irecv matching one); the MPI request is a generalized request. The
    /// payload was placed in the user's buffer when the receive was posted
    /// (`n` bytes; `truncated` when it did not fit), so completion needs
    /// nothing of the datatype.
    FromStash {
        msg: Box<Stashed>,
        n: usize,
        truncated: bool,
    },
    /// Persistent send: the header is rewritten by every Start, in its
    /// compact form where `compact` (the request's datatype then carries
    /// its first `COMPACT` bytes). A small contiguous payload is `staged`:
    /// the request sends the shim's buffer, into which every Start writes
    /// the header and copies the payload (`hdr` is then unused).
    PSend {
        hdr: Box<Header>,
        compact: bool,
        staged: Option<PStage>,
        bytes: u64,
        dest: c_int,
        tag: c_int,
        comm: Comm,
        /// Sent split (above `LOGGP_INLINE_MAX`): `hdr` is the header
        /// sent alone, `compact` false and `staged` none.
        split: Option<PSplit>,
    },
    /// Persistent buffered send: Start runs a buffered send and starts a
    /// PROC_NULL persistent request that stands for it. `dt` is the shim's
    /// own duplicate of the application's datatype, which the application
    /// may free before the request; freed with the request.
    PBsend {
        buf: *const c_void,
        count: c_int,
        dt: Datatype,
        dest: c_int,
        tag: c_int,
        comm: Comm,
    },
    /// Persistent receive. MPI writes each message's header into `hdr`.
    /// The receive itself is kept too (`dt` the shim's duplicate of the
    /// application's datatype, which it may free before the request), for
    /// a Start that finds its message already in the stash (a probe took
    /// it): then the request is not started in MPI, the message is placed
    /// at once and waits in `served` for completion, where MPI reports the
    /// inactive request complete with an empty status.
    PRecv {
        hdr: Box<Header>,
        recv: Box<PRecvArgs>,
        served: Option<Served>,
        /// The payload of a split message (`MAGIC_SPLIT`), this round.
        split: Split,
        /// A staged receive's buffer (`PRecvArgs::stage`), owned by the
        /// live entry (a working copy of `Engine::take` has none); MPI
        /// writes header and payload into it and completion copies the
        /// payload out.
        own: Option<Box<[u8]>>,
        /// A staged receive's payload is in the application's buffer
        /// this round (`MPI_Request_get_status` placed it).
        placed: bool,
    },
    /// A nonblocking collective (`coll::nb`, job `k`); the MPI request is
    /// a PROC_NULL receive.
    Coll {
        k: usize,
    },
}

/// A request of the table's light lane (`lifecycle::Table::track_light`)
/// is a small staged message in a slot (`SlotRef`): a nonblocking send
/// whose slot holds what it sent, or a nonblocking receive whose slot MPI
/// writes and which says where the payload goes. It stands for
/// `Pending::Send` with a staging buffer and `Pending::Recv` with
/// `Wire::Staged`, finished by `Engine::finish_light` without them; every
/// other use of the table promotes it to that general form first.
impl lifecycle::LightData<Pending> for SlotRef {
    fn kind(&self) -> Kind {
        // SAFETY: the slot belongs to this request.
        if unsafe { self.slot().recv } {
            Kind::Recv
        } else {
            Kind::Send
        }
    }

    fn complete_at(&self) -> u64 {
        // SAFETY: as above.
        unsafe { self.slot().complete_at }
    }

    fn promote(self) -> Pending {
        // SAFETY: as above.
        let s = unsafe { self.slot() };
        if !s.recv {
            return Pending::Send {
                _keep: Some(Stage::Slot(self)),
                _hdr: None,
                header: None,
            };
        }
        Pending::Recv(Wire::Staged {
            stage: Stage::Slot(self),
            buf: s.buf,
            cap: s.cap as usize,
            placed: false,
            comm: s.comm,
        })
    }
}

/// A light request taken out of the table for completion.
pub(super) type LightTaken = SlotRef;

/// The receive of a persistent receive request (`Pending::PRecv`).
pub(super) struct PRecvArgs {
    pub(super) buf: *mut c_void,
    pub(super) count: c_int,
    pub(super) dt: Datatype,
    pub(super) src: c_int,
    pub(super) tag: c_int,
    pub(super) comm: Comm,
    /// Watched for a header that comes alone (`watch_split`) once
    /// started: unless it is one contiguous block of at most
    /// `LOGGP_INLINE_MAX`, which gets one only as a truncation, whose
    /// payload the completion receives (as a nonblocking receive's).
    pub(super) watch: bool,
    /// Staged (a contiguous block of `cap` bytes below `direct_min`, as
    /// a nonblocking receive of that kind): MPI receives `HDR + cap`
    /// bytes into the request's own buffer here (`Pending::PRecv::own`),
    /// not through a struct datatype; null when not staged.
    pub(super) stage: *mut u8,
    pub(super) cap: usize,
}

impl PRecvArgs {
    /// The staged receive's buffer as a wire's stage (`Stage::Fixed`).
    pub(super) fn stage(&self) -> Option<Stage> {
        (!self.stage.is_null()).then_some(Stage::Fixed {
            ptr: self.stage,
            len: HDR + self.cap,
        })
    }
}

/// A stashed message placed in a receive's buffer (`n` bytes, `truncated`
/// when it did not fit), waiting for the receive's completion.
pub(super) struct Served {
    pub(super) msg: Box<Stashed>,
    pub(super) n: usize,
    pub(super) truncated: bool,
}

// SAFETY: raw pointers in Pending point to user buffers that MPI itself
// allows any thread to complete; access is serialised by the state mutex.
unsafe impl Send for Pending {}

/// A request taken out of the table for completion (or a working copy of
/// a persistent one's entry).
pub(super) type Taken = lifecycle::Entry<Pending>;

/// Starts a generalized request (MPI-3.1 §12.2) that stands for work of the
/// shim's: a request handle of its own, unlike a PROC_NULL receive (Open MPI
/// hands out one shared object for all of those, so two in flight would be
/// one key in the request table). Its status is empty; the engine fills in
/// the real one.
pub unsafe fn start_grequest(req: *mut Request) -> c_int {
    unsafe {
        PMPI_Grequest_start(
            grequest_query,
            grequest_free,
            grequest_cancel,
            std::ptr::null_mut(),
            req,
        )
    }
}

pub(super) unsafe extern "C" fn grequest_query(_: *mut c_void, st: *mut Status) -> c_int {
    unsafe {
        if !abi::status_ignored(st) {
            if let Some(e) = get_opt() {
                PMPI_Status_set_elements_x(st, e.c.byte, 0);
            }
            PMPI_Status_set_cancelled(st, 0);
            (*st).set_source(abi::ANY_SOURCE);
            (*st).set_tag(abi::ANY_TAG);
            (*st).set_error(abi::SUCCESS);
        }
        abi::SUCCESS
    }
}

pub(super) unsafe extern "C" fn grequest_free(_: *mut c_void) -> c_int {
    abi::SUCCESS
}

/// Nothing to undo: cancelling a collective is erroneous (MPI-3.1 §5.12),
/// and a receive from the stash already has its message.
pub(super) unsafe extern "C" fn grequest_cancel(_: *mut c_void, _: c_int) -> c_int {
    abi::SUCCESS
}

impl Engine {
    /// Whether `r` is a split send (`MAGIC_SPLIT`), which MPI_Cancel leaves.
    pub fn is_split_send(&self, r: Request) -> bool {
        matches!(
            self.lock().reqs.get(key(r)),
            Some(Pending::Send {
                header: Some(_),
                ..
            }) | Some(Pending::PSend { split: Some(_), .. })
        )
    }

    pub unsafe fn request_free(&self, req: *mut Request) -> c_int {
        unsafe {
            let r = *req;
            let Some(e) = self.lock().reqs.untrack(key(r)) else {
                return PMPI_Request_free(req);
            };
            let idle = e.kind().persistent() && !e.active();
            match e.into_data() {
                Some(Pending::Coll { k }) => {
                    jobs::orphan(k);
                    return PMPI_Request_free(req);
                }
                Some(Pending::PBsend { mut dt, .. }) => {
                    // Its buffered sends are already on their own: only the
                    // duplicate datatype is ours to free.
                    PMPI_Type_free(&mut dt);
                    return PMPI_Request_free(req);
                }
                Some(Pending::PRecv {
                    hdr,
                    mut recv,
                    served,
                    split,
                    own,
                    placed,
                }) => {
                    if let Split::Posted(mut p) = split {
                        // Its payload's receive: MPI finishes it alone.
                        PMPI_Request_free(&mut p);
                    }
                    PMPI_Type_free(&mut recv.dt);
                    if !idle && served.is_none() {
                        if let Some(own) = own {
                            // Started in MPI, staged: only we can copy its
                            // payload to the application's buffer, as for
                            // a staged nonblocking receive (`reap_freed`
                            // then frees the inactive request).
                            let wire = Wire::Staged {
                                stage: Stage::Heap(own.into_vec()),
                                buf: recv.buf.cast(),
                                cap: recv.cap,
                                placed,
                                comm: recv.comm,
                            };
                            let mut st = self.lock();
                            st.freed.push((r, wire));
                            self.freed_len.store(st.freed.len(), Ordering::Relaxed);
                            *req = self.c.request_null;
                            return abi::SUCCESS;
                        }
                        // Started in MPI: it may still write the header.
                        std::mem::forget(hdr);
                    }
                    return PMPI_Request_free(req);
                }
                Some(Pending::Send {
                    _keep: Some(Stage::Heap(v)),
                    header: Some(h),
                    ..
                }) => {
                    // A split send: its header's request and buffer wait
                    // with the buffered sends (`reap_bsends`).
                    self.lock().bsends.push((h, v));
                    return PMPI_Request_free(req);
                }
                Some(Pending::Recv(wire)) => {
                    // Its payload lands in our stage, and only we can copy it
                    // to the application's buffer; or its header came alone,
                    // and only we receive the payload: keep the request and
                    // do so once it completes (`reap_freed`). For the
                    // application the request is gone.
                    let mut st = self.lock();
                    st.freed.push((r, wire));
                    self.freed_len.store(st.freed.len(), Ordering::Relaxed);
                    *req = self.c.request_null;
                    return abi::SUCCESS;
                }
                Some(Pending::PSend {
                    split: Some(PSplit { ptag, .. }),
                    ..
                }) if idle => {
                    // Completed (its header waited for): the tag is free.
                    self.lock().ptags.give(ptag);
                }
                Some(p) if !idle => {
                    // MPI completes it in the background and may still write
                    // the header or read the staging buffer: keep them alive
                    // (a split one keeps its payload tag: `PTags`).
                    std::mem::forget(p);
                }
                Some(_) | None => {}
            }
            PMPI_Request_free(req)
        }
    }

    /// Completes the staged receives the application freed while active
    /// whose messages have arrived: places their data (no waiting at the
    /// gate: nobody waits for them). Called on entry to the receive,
    /// probe and completion calls and at MPI_Finalize; one relaxed load
    /// when there are none.
    #[inline]
    pub fn reap_freed(&self) {
        if self.freed_len.load(Ordering::Relaxed) > 0 {
            // SAFETY: the requests are live receive requests of ours.
            unsafe { self.reap_freed_now(false) }
        }
    }

    /// As `reap_freed`; with `all`, waits for every one (MPI_Finalize).
    pub unsafe fn reap_freed_now(&self, all: bool) {
        unsafe {
            let mut list = std::mem::take(&mut self.lock().freed);
            list.retain_mut(|(r, wire)| {
                let mut flag: c_int = 0;
                let mut st = Status::zeroed();
                let rc = if all {
                    flag = 1;
                    PMPI_Wait(r, &mut st)
                } else {
                    PMPI_Test(r, &mut flag, &mut st)
                };
                if flag != 0 {
                    if *r != self.c.request_null {
                        // A persistent receive's, inactive now.
                        PMPI_Request_free(r);
                    }
                    self.finish_recv(wire, &mut st, false, rc);
                    if let Wire::Staged { stage, .. } = wire {
                        self.lock().put_back_stage(std::mem::take(stage));
                    }
                }
                flag == 0
            });
            let mut st = self.lock();
            st.freed.append(&mut list);
            self.freed_len.store(st.freed.len(), Ordering::Relaxed);
        }
    }
}
