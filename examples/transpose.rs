//! transpose.rs: distributed transpose of an N x N matrix of f64 with
//! `MPI_Alltoall`, written in Rust against the MPI C ABI with no crate:
//! it declares the eight MPI functions it calls and links `-lmpi` (Open MPI,
//! build with `--cfg openmpi`) or `-lmpich` (MPICH, `--cfg mpich`); the
//! handles differ between the two ABIs, everything else is the same.
//! Bandwidth-bound: each step moves the whole matrix once, so it is the
//! example for G. While a knob is set the shim runs `MPI_Alltoall` over its
//! own perturbed point-to-point, so every block feels the knobs.
//!
//!   mpirun -np 2 ./transpose [N=1024] [steps=20]
//!
//! Checks: element (i, j) starts as i*N + j; after each transpose every
//! element (i, j) must hold j*N + i (and the original after two). Prints:
//!   transpose: 1024x1024 f64, 2 ranks, 20 transposes in 0.123456 s (1.36 GB/s per rank) OK

use std::ffi::{c_char, c_double, c_int, c_void};
use std::process::ExitCode;

#[cfg(not(any(openmpi, mpich)))]
compile_error!("build with --cfg openmpi or --cfg mpich");

#[cfg(mpich)]
mod abi {
    //! MPICH 4 handles are integers (mpi.h: `#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)`).
    pub type Comm = std::ffi::c_int;
    pub type Datatype = std::ffi::c_int;
    pub type Op = std::ffi::c_int;
    pub fn comm_world() -> Comm {
        0x4400_0000
    }
    pub fn double() -> Datatype {
        0x4c00_080b
    }
    pub fn max() -> Op {
        0x5800_0001
    }
}

#[cfg(openmpi)]
mod abi {
    //! Open MPI handles are addresses of predefined objects
    //! (mpi.h: `#define MPI_COMM_WORLD OMPI_PREDEFINED_GLOBAL(MPI_Comm, ompi_mpi_comm_world)`).
    use std::ffi::c_void;
    pub type Comm = *const c_void;
    pub type Datatype = *const c_void;
    pub type Op = *const c_void;
    extern "C" {
        static ompi_mpi_comm_world: u8;
        static ompi_mpi_double: u8;
        static ompi_mpi_op_max: u8;
    }
    // Taking the address of an extern static is safe; reading it would not be.
    pub fn comm_world() -> Comm {
        std::ptr::addr_of!(ompi_mpi_comm_world).cast()
    }
    pub fn double() -> Datatype {
        std::ptr::addr_of!(ompi_mpi_double).cast()
    }
    pub fn max() -> Op {
        std::ptr::addr_of!(ompi_mpi_op_max).cast()
    }
}

use abi::{Comm, Datatype, Op};

extern "C" {
    fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
    fn MPI_Finalize() -> c_int;
    fn MPI_Comm_rank(comm: Comm, rank: *mut c_int) -> c_int;
    fn MPI_Comm_size(comm: Comm, size: *mut c_int) -> c_int;
    fn MPI_Wtime() -> c_double;
    #[allow(clippy::too_many_arguments)]
    fn MPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Datatype,
        comm: Comm,
    ) -> c_int;
    fn MPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Datatype,
        op: Op,
        comm: Comm,
    ) -> c_int;
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .map_or(default, |s| s.parse().unwrap_or(0))
}

/// One distributed transpose: `a` holds rows `[rank*b, (rank+1)*b)` of an
/// n x n matrix; afterwards `a` holds the same rows of the transpose.
fn transpose(a: &mut [f64], pack: &mut [f64], recv: &mut [f64], n: usize, p: usize) {
    let b = n / p;
    // pack: block for rank q is my rows x columns [q*b, (q+1)*b), transposed
    for q in 0..p {
        let blk = &mut pack[q * b * b..(q + 1) * b * b];
        for i in 0..b {
            for j in 0..b {
                blk[j * b + i] = a[i * n + q * b + j];
            }
        }
    }
    let count = c_int::try_from(b * b).expect("block fits in an int");
    // SAFETY: both buffers hold p blocks of b*b doubles, as the counts say.
    let rc = unsafe {
        MPI_Alltoall(
            pack.as_ptr().cast(),
            count,
            abi::double(),
            recv.as_mut_ptr().cast(),
            count,
            abi::double(),
            abi::comm_world(),
        )
    };
    assert_eq!(rc, 0, "MPI_Alltoall failed");
    // unpack: block from rank q is rows (of the transpose) mine x columns q's
    for q in 0..p {
        let blk = &recv[q * b * b..(q + 1) * b * b];
        for i in 0..b {
            a[i * n + q * b..i * n + (q + 1) * b].copy_from_slice(&blk[i * b..(i + 1) * b]);
        }
    }
}

fn main() -> ExitCode {
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: MPI-2 allows null argc/argv; the out-pointers are valid.
    unsafe {
        MPI_Init(std::ptr::null_mut(), std::ptr::null_mut());
        MPI_Comm_rank(abi::comm_world(), &mut rank);
        MPI_Comm_size(abi::comm_world(), &mut size);
    }
    let (rank, p) = (
        usize::try_from(rank).unwrap_or(0),
        usize::try_from(size).unwrap_or(1),
    );
    let n = arg(1, 1024);
    let steps = arg(2, 20);
    if n == 0 || steps == 0 || n % p != 0 {
        if rank == 0 {
            eprintln!(
                "transpose: N must be a positive multiple of the number of ranks ({p}), steps >= 1"
            );
        }
        // every rank sees the same arguments: leave cleanly
        // SAFETY: plain call.
        unsafe { MPI_Finalize() };
        return ExitCode::from(2);
    }
    let b = n / p;
    let value = |i: usize, j: usize| (i * n + j) as f64;
    let mut a: Vec<f64> = (0..b * n).map(|k| value(rank * b + k / n, k % n)).collect();
    let mut pack = vec![0.0; b * n];
    let mut recv = vec![0.0; b * n];
    // SAFETY: plain call.
    let t0 = unsafe { MPI_Wtime() };
    for _ in 0..steps {
        transpose(&mut a, &mut pack, &mut recv, n, p);
    }
    // SAFETY: plain call.
    let t = unsafe { MPI_Wtime() } - t0;
    let transposed = steps % 2 == 1;
    let bad = (0..b * n)
        .filter(|&k| {
            let (i, j) = (rank * b + k / n, k % n);
            a[k] != if transposed { value(j, i) } else { value(i, j) }
        })
        .count() as f64;
    let mine = [t, bad];
    let mut all = [0.0f64; 2];
    // SAFETY: two doubles in, two doubles out.
    unsafe {
        MPI_Allreduce(
            mine.as_ptr().cast(),
            all.as_mut_ptr().cast(),
            2,
            abi::double(),
            abi::max(),
            abi::comm_world(),
        );
    }
    let ok = all[1] == 0.0;
    if rank == 0 {
        let bytes = (b * n * 8) as f64 * steps as f64;
        println!(
            "transpose: {n}x{n} f64, {p} ranks, {steps} transposes in {:.6} s ({:.2} GB/s per rank) {}",
            all[0],
            bytes / all[0] / 1e9,
            if ok { "OK" } else { "FAILED" }
        );
    }
    // SAFETY: plain call.
    unsafe { MPI_Finalize() };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
