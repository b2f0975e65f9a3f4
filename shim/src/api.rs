//! The exported entry points of point-to-point, start-up and completion;
//! with the collectives' (`coll/mod.rs`, `coll/large.rs`), `later.rs` and
//! `mpi4.rs` they are every symbol the shim exports, and nothing else. All
//! are listed in one table, `shim/exports.txt`: `mpi_fn!` does not compile a
//! wrapper the table lacks, and `cli/tests/exports.rs` checks the built
//! library against it (and the MPI library against what it forwards to).
//!
//! Each function is exported as `MPI_x` and as `PMPI_x`: Open MPI's Fortran
//! bindings (mpif.h, `use mpi`, `use mpi_f08`) call `PMPI_x` for
//! everything, and MPICH's call `MPI_x` for sends and receives but `PMPI_x`
//! for MPI_Init, Wait/Test, Start and the probes (read off `nm -D` of
//! libmpi_mpifh.so.40 and libmpichfort.so.12). The shim's own calls go to
//! the library through `real`, never through these names.
//!
//! With virtual time off (every knob zero) each wrapper is one relaxed
//! atomic load and a call to the library's own function.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::abi::{self, Comm, Datatype, Message, Request, Status};
use crate::engine::{self, active, Mode};
use crate::init;
use crate::real;
use std::ffi::{c_char, c_int, c_void};

// ------------------------------------------------------------ init / final

mpi_fn!(MPI_Init / PMPI_Init (argc: *mut c_int, argv: *mut *mut *mut c_char) {
    let cfg = init::config_or_exit();
    let rc = real::PMPI_Init(argc, argv);
    if rc == abi::SUCCESS {
        init::after_init(cfg);
    }
    rc
});

mpi_fn!(MPI_Init_thread / PMPI_Init_thread (argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) {
    let cfg = init::config_or_exit();
    let rc = real::PMPI_Init_thread(argc, argv, required, provided);
    if rc == abi::SUCCESS {
        init::after_init(cfg);
    }
    rc
});

mpi_fn!(MPI_Finalize / PMPI_Finalize () {
    init::before_finalize();
    real::PMPI_Finalize()
});

mpi_fn!(MPI_Buffer_detach / PMPI_Buffer_detach (buf: *mut c_void, size: *mut c_int) {
    if active() {
        engine::get().flush_bsends();
    }
    real::PMPI_Buffer_detach(buf, size)
});

// -------------------------------------------------------------------- send

macro_rules! blocking_send {
    ($name:ident / $pname:ident, $real:ident, $mode:expr) => {
        mpi_fn!($name / $pname (buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm) {
            if !active() || dest == abi::PROC_NULL || engine::refuses_plain(count.into(), dt) {
                return real::$real(buf, count, dt, dest, tag, comm);
            }
            engine::get().send($mode, buf, count, dt, dest, tag, comm)
        });
    };
}
blocking_send!(MPI_Send / PMPI_Send, PMPI_Send, Mode::Standard);
blocking_send!(MPI_Bsend / PMPI_Bsend, PMPI_Bsend, Mode::Buffered);
blocking_send!(MPI_Ssend / PMPI_Ssend, PMPI_Ssend, Mode::Synchronous);
blocking_send!(MPI_Rsend / PMPI_Rsend, PMPI_Rsend, Mode::Ready);

macro_rules! nonblocking_send {
    ($name:ident / $pname:ident, $real:ident, $mode:expr) => {
        mpi_fn!($name / $pname (buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request) {
            if !active() || dest == abi::PROC_NULL || engine::refuses_plain(count.into(), dt) {
                return real::$real(buf, count, dt, dest, tag, comm, req);
            }
            engine::get().isend($mode, buf, count, dt, dest, tag, comm, req)
        });
    };
}
nonblocking_send!(MPI_Isend / PMPI_Isend, PMPI_Isend, Mode::Standard);
nonblocking_send!(MPI_Ibsend / PMPI_Ibsend, PMPI_Ibsend, Mode::Buffered);
nonblocking_send!(MPI_Issend / PMPI_Issend, PMPI_Issend, Mode::Synchronous);
nonblocking_send!(MPI_Irsend / PMPI_Irsend, PMPI_Irsend, Mode::Ready);

macro_rules! persistent_send {
    ($name:ident / $pname:ident, $real:ident, $mode:expr) => {
        mpi_fn!($name / $pname (buf: *const c_void, count: c_int, dt: Datatype, dest: c_int, tag: c_int, comm: Comm, req: *mut Request) {
            if !active() || dest == abi::PROC_NULL || engine::refuses(buf, count.into(), dt) {
                return real::$real(buf, count, dt, dest, tag, comm, req);
            }
            engine::get().send_init($mode, buf, count, dt, dest, tag, comm, req)
        });
    };
}
persistent_send!(
    MPI_Send_init / PMPI_Send_init,
    PMPI_Send_init,
    Mode::Standard
);
persistent_send!(
    MPI_Bsend_init / PMPI_Bsend_init,
    PMPI_Bsend_init,
    Mode::Buffered
);
persistent_send!(
    MPI_Ssend_init / PMPI_Ssend_init,
    PMPI_Ssend_init,
    Mode::Synchronous
);
persistent_send!(
    MPI_Rsend_init / PMPI_Rsend_init,
    PMPI_Rsend_init,
    Mode::Ready
);

// ----------------------------------------------------------------- receive

mpi_fn!(MPI_Recv / PMPI_Recv (buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, st: *mut Status) {
    if !active() || src == abi::PROC_NULL || engine::refuses_plain(count.into(), dt) {
        return real::PMPI_Recv(buf, count, dt, src, tag, comm, st);
    }
    engine::get().recv(buf, count, dt, src, tag, comm, None, st)
});

mpi_fn!(MPI_Irecv / PMPI_Irecv (buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request) {
    if !active() || src == abi::PROC_NULL || engine::refuses_plain(count.into(), dt) {
        return real::PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    }
    engine::get().irecv(buf, count, dt, src, tag, comm, req)
});

mpi_fn!(MPI_Recv_init / PMPI_Recv_init (buf: *mut c_void, count: c_int, dt: Datatype, src: c_int, tag: c_int, comm: Comm, req: *mut Request) {
    if !active() || src == abi::PROC_NULL || engine::refuses_recv(buf, count.into(), dt) {
        return real::PMPI_Recv_init(buf, count, dt, src, tag, comm, req);
    }
    engine::get().recv_init(buf, count, dt, src, tag, comm, req)
});

mpi_fn!(MPI_Sendrecv / PMPI_Sendrecv (sbuf: *const c_void, scount: c_int, sdt: Datatype, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: c_int, rdt: Datatype, src: c_int, rtag: c_int, comm: Comm, st: *mut Status) {
    if !active()
        || (dest == abi::PROC_NULL && src == abi::PROC_NULL)
        || engine::refuses_plain(scount.into(), sdt)
        || engine::refuses_plain(rcount.into(), rdt)
    {
        return real::PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, st);
    }
    engine::get().sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, st)
});

mpi_fn!(MPI_Sendrecv_replace / PMPI_Sendrecv_replace (buf: *mut c_void, count: c_int, dt: Datatype, dest: c_int, stag: c_int, src: c_int, rtag: c_int, comm: Comm, st: *mut Status) {
    if !active()
        || (dest == abi::PROC_NULL && src == abi::PROC_NULL)
        || engine::refuses(buf, count.into(), dt)
    {
        return real::PMPI_Sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, st);
    }
    engine::get().sendrecv_replace(buf, count, dt, dest, stag, src, rtag, comm, st)
});

// ------------------------------------------------------------------ probes

mpi_fn!(MPI_Probe / PMPI_Probe (src: c_int, tag: c_int, comm: Comm, st: *mut Status) {
    if !active() {
        return real::PMPI_Probe(src, tag, comm, st);
    }
    engine::get().probe(src, tag, comm, st)
});

mpi_fn!(MPI_Iprobe / PMPI_Iprobe (src: c_int, tag: c_int, comm: Comm, flag: *mut c_int, st: *mut Status) {
    if !active() {
        return real::PMPI_Iprobe(src, tag, comm, flag, st);
    }
    engine::get().iprobe(src, tag, comm, flag, st)
});

mpi_fn!(MPI_Mprobe / PMPI_Mprobe (src: c_int, tag: c_int, comm: Comm, msg: *mut Message, st: *mut Status) {
    if !active() {
        return real::PMPI_Mprobe(src, tag, comm, msg, st);
    }
    engine::get().mprobe(src, tag, comm, msg, st)
});

mpi_fn!(MPI_Improbe / PMPI_Improbe (src: c_int, tag: c_int, comm: Comm, flag: *mut c_int, msg: *mut Message, st: *mut Status) {
    if !active() {
        return real::PMPI_Improbe(src, tag, comm, flag, msg, st);
    }
    engine::get().improbe(src, tag, comm, flag, msg, st)
});

mpi_fn!(MPI_Mrecv / PMPI_Mrecv (buf: *mut c_void, count: c_int, dt: Datatype, msg: *mut Message, st: *mut Status) {
    if active() && !engine::refuses_recv(buf, count.into(), dt) {
        if let Some(rc) = engine::get().mrecv(buf, count, dt, msg, None, st) {
            return rc;
        }
    }
    real::PMPI_Mrecv(buf, count, dt, msg, st)
});

mpi_fn!(MPI_Imrecv / PMPI_Imrecv (buf: *mut c_void, count: c_int, dt: Datatype, msg: *mut Message, req: *mut Request) {
    if active() && !engine::refuses_recv(buf, count.into(), dt) {
        if let Some(rc) = engine::get().mrecv(buf, count, dt, msg, Some(req), std::ptr::null_mut()) {
            return rc;
        }
    }
    real::PMPI_Imrecv(buf, count, dt, msg, req)
});

// -------------------------------------------------------------- completion

mpi_fn!(MPI_Start / PMPI_Start (req: *mut Request) {
    if !active() {
        return real::PMPI_Start(req);
    }
    engine::get().start(req)
});

mpi_fn!(MPI_Startall / PMPI_Startall (n: c_int, reqs: *mut Request) {
    if !active() {
        return real::PMPI_Startall(n, reqs);
    }
    let e = engine::get();
    for i in 0..usize::try_from(n).unwrap_or(0) {
        let rc = e.start(reqs.add(i));
        if rc != abi::SUCCESS {
            return rc;
        }
    }
    abi::SUCCESS
});

mpi_fn!(MPI_Wait / PMPI_Wait (req: *mut Request, st: *mut Status) {
    if !active() {
        return real::PMPI_Wait(req, st);
    }
    engine::get().wait(req, st)
});

mpi_fn!(MPI_Test / PMPI_Test (req: *mut Request, flag: *mut c_int, st: *mut Status) {
    if !active() {
        return real::PMPI_Test(req, flag, st);
    }
    engine::get().test(req, flag, st)
});

mpi_fn!(MPI_Waitany / PMPI_Waitany (n: c_int, reqs: *mut Request, idx: *mut c_int, st: *mut Status) {
    if !active() {
        return real::PMPI_Waitany(n, reqs, idx, st);
    }
    engine::get().waitany(n, reqs, idx, st)
});

mpi_fn!(MPI_Testany / PMPI_Testany (n: c_int, reqs: *mut Request, idx: *mut c_int, flag: *mut c_int, st: *mut Status) {
    if !active() {
        return real::PMPI_Testany(n, reqs, idx, flag, st);
    }
    engine::get().testany(n, reqs, idx, flag, st)
});

mpi_fn!(MPI_Waitall / PMPI_Waitall (n: c_int, reqs: *mut Request, sts: *mut Status) {
    if !active() {
        return real::PMPI_Waitall(n, reqs, sts);
    }
    engine::get().waitall(n, reqs, sts)
});

mpi_fn!(MPI_Testall / PMPI_Testall (n: c_int, reqs: *mut Request, flag: *mut c_int, sts: *mut Status) {
    if !active() {
        return real::PMPI_Testall(n, reqs, flag, sts);
    }
    engine::get().testall(n, reqs, flag, sts)
});

mpi_fn!(MPI_Waitsome / PMPI_Waitsome (n: c_int, reqs: *mut Request, outcount: *mut c_int, idx: *mut c_int, sts: *mut Status) {
    if !active() {
        return real::PMPI_Waitsome(n, reqs, outcount, idx, sts);
    }
    engine::get().waitsome(n, reqs, outcount, idx, sts)
});

mpi_fn!(MPI_Testsome / PMPI_Testsome (n: c_int, reqs: *mut Request, outcount: *mut c_int, idx: *mut c_int, sts: *mut Status) {
    if !active() {
        return real::PMPI_Testsome(n, reqs, outcount, idx, sts);
    }
    engine::get().testsome(n, reqs, outcount, idx, sts)
});

mpi_fn!(MPI_Request_get_status / PMPI_Request_get_status (req: Request, flag: *mut c_int, st: *mut Status) {
    if !active() {
        return real::PMPI_Request_get_status(req, flag, st);
    }
    engine::get().request_get_status(req, flag, st)
});

mpi_fn!(MPI_Request_free / PMPI_Request_free (req: *mut Request) {
    if !active() {
        return real::PMPI_Request_free(req);
    }
    engine::get().request_free(req)
});

// A cancelled tracked request completes through Wait/Test, where the engine
// asks MPI_Test_cancelled and skips delivery: only once the application has
// cancelled something (a call less per received message until then).
// A split send is not cancelled: its header may already be matched, and a
// receiver would then wait for a payload that never comes. MPI allows a
// cancel to fail (MPI-4.0 §3.8.4): the send completes as usual.
mpi_fn!(MPI_Cancel / PMPI_Cancel (req: *mut Request) {
    engine::note_cancel();
    if active() && !req.is_null() && engine::get().is_split_send(*req) {
        return abi::SUCCESS;
    }
    real::PMPI_Cancel(req)
});

// ------------------------------------------- MPI-4 entry points (MPICH 4.0)

pub use crate::later::*;
#[cfg(mpich)]
pub use crate::mpi4::*;
