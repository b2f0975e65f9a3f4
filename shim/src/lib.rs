//! loggp-shim: an `LD_PRELOAD` library that raises the LogGP parameters of
//! an unmodified MPI program's point-to-point traffic (see DESIGN.md).
//!
//! * `api` — every exported MPI symbol (the only public surface);
//! * `engine` — piggyback, request table, virtual-time gates;
//! * `init` — flavour check, configuration, native transit, report;
//! * `abi` — the probed ABI of the MPI this build is for; `real` — the MPI
//!   library's own functions; `clock`, `log`.
//!
//! The rules of time live in `loggp_core` (pure, unit-tested).

mod abi;
pub mod api;
mod clock;
mod engine;
mod init;
mod log;
#[cfg(mpich)]
mod mpi4;
mod real;
