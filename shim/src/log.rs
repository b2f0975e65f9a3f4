//! Messages to standard error with raw write(2), one prefix for all.

/// Writes `loggp-shim: {msg}\n` in one write.
pub fn line(msg: &str) {
    let s = format!("loggp-shim: {msg}\n");
    // SAFETY: valid buffer; a short write to stderr is ignored.
    unsafe { libc::write(2, s.as_ptr().cast(), s.len()) };
}

/// Prints one line and ends the process (before or without MPI).
pub fn fatal_raw(msg: &str) -> ! {
    line(msg);
    // SAFETY: ends the process without unwinding or running atexit.
    unsafe { libc::_exit(1) }
}

/// The rank this process will have, from the launcher's environment, before
/// MPI is initialised (Open MPI, MPICH Hydra, PMIx).
pub fn launcher_rank() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
}

/// Stops an MPI job after MPI_Init: prints `msg` (when given), gives the
/// launcher time to forward it (MPICH's Hydra can tear a job down on
/// MPI_Abort before it has forwarded the aborting rank's standard error),
/// then aborts every rank.
///
/// # Safety
/// MPI must be initialised; `comm_world` is MPI_COMM_WORLD.
pub unsafe fn abort_job(msg: Option<&str>, comm_world: crate::abi::Comm) -> ! {
    unsafe {
        if let Some(m) = msg {
            line(m);
        }
        libc::usleep(200_000);
        crate::real::PMPI_Abort(comm_world, 1);
        libc::_exit(1)
    }
}
