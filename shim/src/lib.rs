//! loggp-shim: an `LD_PRELOAD` library that raises the LogGP parameters of
//! an unmodified MPI program's point-to-point traffic (see DESIGN.md).
//!
//! * `api` — every exported MPI symbol (the only public surface), each a
//!   line of `shim/exports.txt` (`exports`: checked when `mpi_fn!` compiles);
//! * `engine` — point-to-point under virtual time (header, sends,
//!   receives and the gate, probe stash, completion, request table);
//! * `coll` — the collectives over the engine's point-to-point;
//! * `init` — flavour check, configuration, native transit, report;
//! * `abi` — the probed ABI of the MPI this build is for; `real` — the MPI
//!   library's own functions; `clock`, `log`; `alloc` — the shim's heap
//!   (large blocks mapped, so that glibc's malloc stays the application's).
//!
//! The rules of time live in `loggp_core` (pure, unit-tested).
#![deny(unsafe_op_in_unsafe_fn)]

/// Defines an exported MPI function under both its `MPI_` and `PMPI_`
/// names (see `api`); the pair must be a line of `shim/exports.txt` for
/// this build, or the crate does not compile (`exports`).
macro_rules! mpi_fn {
    ($name:ident / $pname:ident ( $($a:ident : $t:ty),* $(,)? ) $body:block) => {
        const _: () = assert!(
            crate::exports::listed(stringify!($name), stringify!($pname)),
            concat!(
                stringify!($name),
                " / ",
                stringify!($pname),
                ": not a pair that shim/exports.txt lists for this build"
            )
        );

        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            // SAFETY: the caller (the application or its MPI's bindings)
            // passes the arguments the C prototype names; the body hands
            // them on to the library or the engine as they came.
            #[allow(unused_unsafe)]
            unsafe { $body }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $pname($($a: $t),*) -> c_int {
            // SAFETY: as above.
            unsafe { $name($($a),*) }
        }
    };
}

mod abi;
mod alloc;
pub mod api;
mod clock;
mod coll;
mod engine;
mod exports;
mod init;
mod later;
mod log;
#[cfg(mpich)]
mod mpi4;
mod real;
