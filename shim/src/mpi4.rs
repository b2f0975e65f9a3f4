//! MPI-4 point-to-point entry points that MPICH 4.0 exports (Open MPI 4.1
//! does not). A message sent through one of them must carry the header like
//! any other, or its receiver would misread it; so each is either routed
//! through the engine or, where the shim cannot emulate it yet, refused with
//! one line while virtual time is on. With virtual time off all pass through.
//!
//! Large-count (`_c`) calls go through the engine's ordinary path: a count
//! that fits in an `int` as it is, a larger one as one element of a
//! temporary datatype of `count` consecutive elements (`as_int`), freed
//! once the call returns (an operation pending on a freed datatype
//! completes normally, MPI-4.0 §5.1.9, and the engine keeps to that). `MPI_Isendrecv(_replace)_c`
//! are an Isend + Irecv pair of the engine's under one request (`coll::nb`);
//! the `int` forms are in `later.rs`, for Open MPI 5 too.
//! Partitioned communication is refused.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use crate::abi::{self, Comm, Count, Datatype, Handle, Message, Request, Status};
use crate::engine::{self, active, Mode};
use crate::log;
use crate::real;
use std::ffi::{c_int, c_void};

/// Stops the job: `what` cannot be emulated.
unsafe fn refuse(what: &str) -> c_int {
    unsafe {
        let msg = format!(
            "{what} is not supported while virtual time is on (a LOGGP_* knob is set); \
         its messages would bypass the emulated network. Stopping."
        );
        log::abort_job(Some(&msg), engine::get().c.comm_world)
    }
}

fn small(n: Count) -> Option<c_int> {
    c_int::try_from(n).ok()
}

/// `count × dt` as an `int` count and a datatype: as they are when the
/// count fits, else 1 × a struct of blocks of 2^30 elements of `dt` laid
/// end to end (the same type map as `count × dt`; only `int` calls, which
/// both MPIs have), which `release` frees.
unsafe fn as_int(count: Count, dt: Datatype) -> Result<(c_int, Datatype, bool), c_int> {
    unsafe {
        if let Some(n) = small(count) {
            return Ok((n, dt, false));
        }
        const CHUNK: Count = 1 << 30;
        let (mut lb, mut ext): (abi::Aint, abi::Aint) = (0, 0);
        let rc = real::PMPI_Type_get_extent(dt, &mut lb, &mut ext);
        if rc != abi::SUCCESS {
            return Err(rc);
        }
        // Beyond any memory: the casts below cannot truncate under this.
        if count > 1 << 50 {
            return Err(refuse("a large-count call with a count above 2^50"));
        }
        let mut lens: Vec<c_int> = Vec::new();
        let mut disps: Vec<abi::Aint> = Vec::new();
        let mut left = count;
        #[allow(clippy::cast_possible_truncation)]
        while left > 0 {
            let n = left.min(CHUNK);
            disps.push((count - left) as abi::Aint * ext);
            lens.push(n as c_int);
            left -= n;
        }
        #[allow(clippy::cast_possible_truncation)]
        let blocks = lens.len() as c_int;
        let types = vec![dt; lens.len()];
        let mut t = dt;
        let rc = real::PMPI_Type_create_struct(
            blocks,
            lens.as_ptr(),
            disps.as_ptr(),
            types.as_ptr(),
            &mut t,
        );
        if rc != abi::SUCCESS {
            return Err(rc);
        }
        let rc = real::PMPI_Type_commit(&mut t);
        if rc != abi::SUCCESS {
            real::PMPI_Type_free(&mut t);
            return Err(rc);
        }
        Ok((1, t, true))
    }
}

/// Frees a datatype `as_int` made.
unsafe fn release(mut t: Datatype, made: bool) {
    unsafe {
        if made {
            real::PMPI_Type_free(&mut t);
        }
    }
}

/// Runs `f` with `count × dt` as an `int` count and a datatype.
unsafe fn with_int(count: Count, dt: Datatype, f: impl FnOnce(c_int, Datatype) -> c_int) -> c_int {
    unsafe {
        match as_int(count, dt) {
            Ok((n, t, made)) => {
                let rc = f(n, t);
                release(t, made);
                rc
            }
            Err(rc) => rc,
        }
    }
}

macro_rules! send_c {
    ($name:ident, $real:ident, $mode:expr) => {
        mpi_fn!($name / $real (
            buf: *const c_void,
            count: Count,
            dt: Datatype,
            dest: c_int,
            tag: c_int,
            comm: Comm,
        ) {
            if !active() || dest == abi::PROC_NULL || engine::refuses(buf, count, dt) {
                return real::$real(buf, count, dt, dest, tag, comm);
            }
            with_int(count, dt, |n, t| engine::get().send($mode, buf, n, t, dest, tag, comm))
        });
    };
}
send_c!(MPI_Send_c, PMPI_Send_c, Mode::Standard);
send_c!(MPI_Bsend_c, PMPI_Bsend_c, Mode::Buffered);
send_c!(MPI_Ssend_c, PMPI_Ssend_c, Mode::Synchronous);
send_c!(MPI_Rsend_c, PMPI_Rsend_c, Mode::Ready);

macro_rules! isend_c {
    ($name:ident, $real:ident, $mode:expr, $method:ident) => {
        mpi_fn!($name / $real (
            buf: *const c_void,
            count: Count,
            dt: Datatype,
            dest: c_int,
            tag: c_int,
            comm: Comm,
            req: *mut Request,
        ) {
            if !active() || dest == abi::PROC_NULL || engine::refuses(buf, count, dt) {
                return real::$real(buf, count, dt, dest, tag, comm, req);
            }
            with_int(count, dt, |n, t| engine::get().$method($mode, buf, n, t, dest, tag, comm, req))
        });
    };
}
isend_c!(MPI_Isend_c, PMPI_Isend_c, Mode::Standard, isend);
isend_c!(MPI_Ibsend_c, PMPI_Ibsend_c, Mode::Buffered, isend);
isend_c!(MPI_Issend_c, PMPI_Issend_c, Mode::Synchronous, isend);
isend_c!(MPI_Irsend_c, PMPI_Irsend_c, Mode::Ready, isend);
isend_c!(MPI_Send_init_c, PMPI_Send_init_c, Mode::Standard, send_init);
isend_c!(
    MPI_Bsend_init_c,
    PMPI_Bsend_init_c,
    Mode::Buffered,
    send_init
);
isend_c!(
    MPI_Ssend_init_c,
    PMPI_Ssend_init_c,
    Mode::Synchronous,
    send_init
);
isend_c!(MPI_Rsend_init_c, PMPI_Rsend_init_c, Mode::Ready, send_init);

mpi_fn!(MPI_Recv_c / PMPI_Recv_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    src: c_int,
    tag: c_int,
    comm: Comm,
    st: *mut Status,) {
    if !active() || src == abi::PROC_NULL || engine::refuses_recv(buf, count, dt) {
        return real::PMPI_Recv_c(buf, count, dt, src, tag, comm, st);
    }
    with_int(count, dt, |n, t| engine::get().recv(buf, n, t, src, tag, comm, None, st))
});

mpi_fn!(MPI_Irecv_c / PMPI_Irecv_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    src: c_int,
    tag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || src == abi::PROC_NULL || engine::refuses_recv(buf, count, dt) {
        return real::PMPI_Irecv_c(buf, count, dt, src, tag, comm, req);
    }
    with_int(count, dt, |n, t| {
        engine::get().recv(buf, n, t, src, tag, comm, Some(req), std::ptr::null_mut())
    })
});

mpi_fn!(MPI_Recv_init_c / PMPI_Recv_init_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    src: c_int,
    tag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || src == abi::PROC_NULL || engine::refuses_recv(buf, count, dt) {
        return real::PMPI_Recv_init_c(buf, count, dt, src, tag, comm, req);
    }
    with_int(count, dt, |n, t| engine::get().recv_init(buf, n, t, src, tag, comm, req))
});

mpi_fn!(MPI_Sendrecv_c / PMPI_Sendrecv_c (sbuf: *const c_void,
    scount: Count,
    sdt: Datatype,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: Count,
    rdt: Datatype,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    st: *mut Status,) {
    if !active()
        || (dest == abi::PROC_NULL && src == abi::PROC_NULL)
        || engine::refuses(sbuf, scount, sdt)
        || engine::refuses_recv(rbuf, rcount, rdt)
    {
        return real::PMPI_Sendrecv_c(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, st,
        );
    }
    with_int(scount, sdt, |s, sdt| {
        with_int(rcount, rdt, |r, rdt| {
            engine::get().sendrecv(sbuf, s, sdt, dest, stag, rbuf, r, rdt, src, rtag, comm, st)
        })
    })
});

mpi_fn!(MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    st: *mut Status,) {
    if !active()
        || (dest == abi::PROC_NULL && src == abi::PROC_NULL)
        || engine::refuses(buf, count, dt)
    {
        return real::PMPI_Sendrecv_replace_c(buf, count, dt, dest, stag, src, rtag, comm, st);
    }
    with_int(count, dt, |n, t| {
        engine::get().sendrecv_replace(buf, n, t, dest, stag, src, rtag, comm, st)
    })
});

mpi_fn!(MPI_Mrecv_c / PMPI_Mrecv_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    msg: *mut Message,
    st: *mut Status,) {
    if active() && !engine::refuses_recv(buf, count, dt) {
        let (n, t, made) = match as_int(count, dt) {
            Ok(v) => v,
            Err(rc) => return rc,
        };
        let done = engine::get().mrecv(buf, n, t, msg, None, st);
        release(t, made);
        if let Some(rc) = done {
            return rc;
        }
    }
    real::PMPI_Mrecv_c(buf, count, dt, msg, st)
});

mpi_fn!(MPI_Imrecv_c / PMPI_Imrecv_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    msg: *mut Message,
    req: *mut Request,) {
    if active() && !engine::refuses_recv(buf, count, dt) {
        let (n, t, made) = match as_int(count, dt) {
            Ok(v) => v,
            Err(rc) => return rc,
        };
        let done = engine::get().mrecv(buf, n, t, msg, Some(req), std::ptr::null_mut());
        release(t, made);
        if let Some(rc) = done {
            return rc;
        }
    }
    real::PMPI_Imrecv_c(buf, count, dt, msg, req)
});

mpi_fn!(MPI_Isendrecv_c / PMPI_Isendrecv_c (sbuf: *const c_void,
    scount: Count,
    sdt: Datatype,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: Count,
    rdt: Datatype,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || engine::refuses(sbuf, scount, sdt) || engine::refuses_recv(rbuf, rcount, rdt) {
        return real::PMPI_Isendrecv_c(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, src, rtag, comm, req,
        );
    }
    with_int(scount, sdt, |s, sdt| {
        with_int(rcount, rdt, |r, rdt| {
            engine::get().isendrecv(
                sbuf, s, sdt, dest, stag, rbuf, r, rdt, src, rtag, comm, Vec::new(), req,
            )
        })
    })
});

mpi_fn!(MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c (buf: *mut c_void,
    count: Count,
    dt: Datatype,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    comm: Comm,
    req: *mut Request,) {
    if !active() || engine::refuses(buf, count, dt) {
        return real::PMPI_Isendrecv_replace_c(buf, count, dt, dest, stag, src, rtag, comm, req);
    }
    with_int(count, dt, |n, t| {
        engine::get().isendrecv_replace(buf, n, t, dest, stag, src, rtag, comm, req)
    })
});

mpi_fn!(MPI_Psend_init / PMPI_Psend_init (buf: *const c_void,
    partitions: c_int,
    count: Count,
    dt: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    info: Handle,
    req: *mut Request,) {
    if !active() {
        return real::PMPI_Psend_init(buf, partitions, count, dt, dest, tag, comm, info, req);
    }
    refuse("MPI_Psend_init (partitioned communication)")
});

mpi_fn!(MPI_Precv_init / PMPI_Precv_init (buf: *mut c_void,
    partitions: c_int,
    count: Count,
    dt: Datatype,
    src: c_int,
    tag: c_int,
    comm: Comm,
    info: Handle,
    req: *mut Request,) {
    if !active() {
        return real::PMPI_Precv_init(buf, partitions, count, dt, src, tag, comm, info, req);
    }
    refuse("MPI_Precv_init (partitioned communication)")
});

mpi_fn!(MPI_Buffer_detach_c / PMPI_Buffer_detach_c (buf: *mut c_void, size: *mut Count) {
    if active() {
        engine::get().flush_bsends();
    }
    real::PMPI_Buffer_detach_c(buf, size)
});
