//! Every entry point through which a message can leave or enter a rank is
//! the shim's (DESIGN.md §2): the MPI library's exported `MPI_` functions
//! that send, receive, probe, complete or run a collective, read with `nm
//! -D` from the library a test program links, must each be exported by the
//! shim built for that MPI, or be named below as left to the library, with
//! the reason. A library that adds an entry point (a new MPI version) fails
//! this test until the shim wraps it or the list says why not. Checked for
//! Debian's Open MPI 4.1 and MPICH 4.0 and for Open MPI 5.0 and MPICH 5.0
//! from PyPI, each with the shim built from its own headers.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test symbols`

mod common;

use common::Mpi;
use std::collections::BTreeSet;

/// Names that match the message-moving words below but move nothing.
const NOT_MESSAGES: &[&str] = &[
    "MPI_Comm_test_inter",
    "MPI_Dist_graph_neighbors",
    "MPI_Dist_graph_neighbors_count",
    "MPI_Graph_neighbors",
    "MPI_Graph_neighbors_count",
    "MPI_Topo_test",
    "MPI_Finalized",
    "MPI_Initialized",
    "MPI_Session_finalize",
    "MPI_T_finalize",
    "MPI_T_pvar_start",
    "MPI_Grequest_start",
    "MPI_Status_set_cancelled",
    "MPI_Test_cancelled",
    // A local operation: no message.
    "MPI_Reduce_local",
    "MPI_Reduce_local_c",
    // Cancels the library's request; the shim sees the outcome in Wait/Test.
    "MPI_Cancel",
];

/// Exported by every build for the newer libraries of its family that it
/// serves (shim/src/later.rs): the `later` lines of shim/exports.txt, e.g.
/// MPI-4.0's nonblocking Sendrecv forms (not in Open MPI 4.1) and MPI-4.1's
/// Request_get_status forms (MPICH 5.0 only).
fn later() -> BTreeSet<String> {
    common::exports_table()
        .into_iter()
        .filter(|(_, builds)| builds == "later")
        .map(|(name, _)| name)
        .collect()
}

/// Left to the library on purpose (README, "Known limits"), by rule:
/// (what the name ends with or starts with, why).
fn left_native(name: &str) -> Option<&'static str> {
    if name.ends_with("_init") || name.ends_with("_init_c") {
        return Some("persistent (MPI-4) collectives stay native");
    }
    if name.starts_with("MPI_Win_") {
        return Some("RMA synchronisation: one-sided traffic is not perturbed");
    }
    if name.starts_with("MPI_Pready") || name == "MPI_Parrived" {
        return Some("partitioned communication is refused at MPI_Psend_init/MPI_Precv_init");
    }
    if name.ends_with("v_c")
        || name.ends_with("w_c")
        || name == "MPI_Reduce_scatter_c"
        || name == "MPI_Ireduce_scatter_c"
        || (name.contains("eighbor_") && name.ends_with("_c"))
    {
        return Some("MPICH's vector and neighbourhood large-count collectives stay native");
    }
    None
}

/// True for a name that sends, receives, probes, completes a request or
/// runs a collective.
fn moves_messages(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "send",
        "recv",
        "probe",
        "start",
        "wait",
        "test",
        "bcast",
        "reduce",
        "gather",
        "scatter",
        "alltoall",
        "barrier",
        "scan",
        "neighbor",
        "request_free",
        "request_get_status",
        "cancel",
        "pready",
        "parrived",
        "buffer_detach",
        "finalize",
    ];
    let l = name.to_ascii_lowercase();
    l == "mpi_init" || l == "mpi_init_thread" || WORDS.iter().any(|w| l.contains(w))
}

/// The `MPI_` names `lib` defines.
fn exported(lib: &str) -> BTreeSet<String> {
    common::dynamic_symbols(lib)
        .into_iter()
        .filter(|s| s.starts_with("MPI_"))
        .collect()
}

fn check(mpi: Mpi) {
    let lib = common::libmpi(mpi);
    let theirs = exported(&lib);
    let ours = exported(&common::shim(mpi).display().to_string());
    let candidates: Vec<&String> = theirs.iter().filter(|n| moves_messages(n)).collect();
    assert!(
        candidates.len() >= 90,
        "only {} message-moving names in {lib}: is it an MPI library?",
        candidates.len()
    );
    let missing: Vec<&String> = candidates
        .iter()
        .copied()
        .filter(|n| !ours.contains(*n))
        .filter(|n| !NOT_MESSAGES.contains(&n.as_str()) && left_native(n).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "{lib} exports {} function(s) that move messages and that the shim for {} neither \
         wraps nor lists as left native: {missing:?}",
        missing.len(),
        mpi.name()
    );
    // Nothing the shim exports is unknown to the library (a typo would
    // export a symbol nobody calls), but for the entry points of newer
    // libraries that every build exports (shim/src/later.rs).
    let later = later();
    let extra: Vec<&String> = ours
        .iter()
        .filter(|n| !theirs.contains(*n) && !later.contains(*n))
        .collect();
    assert!(
        extra.is_empty(),
        "the shim for {} exports MPI names {lib} does not: {extra:?}",
        mpi.name()
    );
    eprintln!(
        "ok: {}: {} message-moving names in {lib}, {} wrapped by the shim",
        mpi.name(),
        candidates.len(),
        candidates.iter().filter(|n| ours.contains(**n)).count()
    );
}

#[test]
fn every_message_entry_point_is_wrapped_openmpi() {
    check(Mpi::OpenMpi);
}

#[test]
fn every_message_entry_point_is_wrapped_mpich() {
    check(Mpi::Mpich);
}

#[test]
fn every_message_entry_point_is_wrapped_openmpi5() {
    check(Mpi::OpenMpi5);
}

#[test]
fn every_message_entry_point_is_wrapped_mpich5() {
    check(Mpi::Mpich5);
}
