//! `shim/exports.txt` is the one list of the functions the shim exports
//! (each as `MPI_x` and `PMPI_x`). `mpi_fn!` already refuses to compile a
//! wrapper the table lacks (`shim/src/exports.rs`); this test checks the
//! built files:
//! (a) the `MPI_`/`PMPI_` symbols that `nm -D --defined-only` finds in each
//!     built shim are exactly the table's for that build (a listed function
//!     with no wrapper, or one behind the wrong `#[cfg]`, fails here);
//! (b) every function the table lists for a build as one its library has
//!     (`all`, and `mpich` for the MPICH family) is exported, under both
//!     names, by the MPI library that build forwards to (the one a test
//!     program links): `later` ones are looked up only when called; and
//!     so is every other function of the library the shim looks up
//!     (`reals!` in `shim/src/real.rs`) that the table does not list.
//! Debian's Open MPI 4.1 and MPICH 4.0, and Open MPI 5.0 and MPICH 5.0
//! from PyPI.
//!
//! Run: `bash scripts/build.sh && cargo test -p loggp --test exports`

mod common;

use common::Mpi;
use std::collections::BTreeSet;

/// The `PMPI_` names `shim/src/real.rs` looks up (`fn PMPI_x(` in `reals!`).
fn reals() -> Vec<String> {
    let path = common::root().join("shim/src/real.rs");
    let text = std::fs::read_to_string(&path).expect("shim/src/real.rs is readable");
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("fn PMPI_"))
        .filter_map(|l| l.split('(').next())
        .map(|n| format!("PMPI_{n}"))
        .collect()
}

fn both_names(names: impl Iterator<Item = String>) -> BTreeSet<String> {
    names.flat_map(|n| [format!("P{n}"), n]).collect()
}

fn check(mpi: Mpi) {
    let mpich = !mpi.is_ompi();
    let rows = common::exports_table();
    assert!(rows.len() > 80, "shim/exports.txt has {} rows", rows.len());
    let in_build = |b: &str| b == "all" || b == "later" || (b == "mpich" && mpich);
    let want = both_names(
        rows.iter()
            .filter(|(_, b)| in_build(b))
            .map(|(n, _)| n.clone()),
    );

    // (a) the shim exports the table, no more, no less.
    let so = common::shim(mpi).display().to_string();
    let ours: BTreeSet<String> = common::dynamic_symbols(&so)
        .into_iter()
        .filter(|s| s.starts_with("MPI_") || s.starts_with("PMPI_"))
        .collect();
    let unlisted: Vec<&String> = ours.difference(&want).collect();
    let missing: Vec<&String> = want.difference(&ours).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "{so} and shim/exports.txt disagree: exported but not listed {unlisted:?}; \
         listed but not exported {missing:?}"
    );

    // (b) what the shim forwards to is there.
    let lib = common::libmpi(mpi);
    let theirs = common::dynamic_symbols(&lib);
    let forwarded = both_names(
        rows.iter()
            .filter(|(_, b)| b == "all" || (b == "mpich" && mpich))
            .map(|(n, _)| n.clone()),
    );
    let listed: BTreeSet<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let looked_up: Vec<String> = reals()
        .into_iter()
        .filter(|p| !listed.contains(&p[1..]))
        .collect();
    assert!(
        looked_up.len() > 40,
        "{looked_up:?}: is shim/src/real.rs read right?"
    );
    let absent: Vec<&String> = forwarded
        .iter()
        .chain(&looked_up)
        .filter(|n| !theirs.contains(*n))
        .collect();
    assert!(
        absent.is_empty(),
        "shim/exports.txt or shim/src/real.rs has for {} functions that {lib} does not \
         export: {absent:?} (a function newer libraries of the family add is `later`)",
        mpi.name()
    );
    eprintln!(
        "ok: {}: {} symbols exported as listed, {} forwarded to {lib}, {} more looked up there",
        mpi.name(),
        ours.len(),
        forwarded.len(),
        looked_up.len()
    );
}

#[test]
fn exports_match_the_table_openmpi() {
    check(Mpi::OpenMpi);
}

#[test]
fn exports_match_the_table_mpich() {
    check(Mpi::Mpich);
}

#[test]
fn exports_match_the_table_openmpi5() {
    check(Mpi::OpenMpi5);
}

#[test]
fn exports_match_the_table_mpich5() {
    check(Mpi::Mpich5);
}
