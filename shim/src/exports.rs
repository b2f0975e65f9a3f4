//! The table of every function the shim exports (`shim/exports.txt`, read
//! by `build.rs`): `mpi_fn!` asks [`listed`] at compile time, so a wrapper
//! that the table lacks, or lists for other builds only, does not compile.
//! The other direction (a listed function with no wrapper) and the MPI
//! library's side are checked on the built files by `cli/tests/exports.rs`.

/// Which builds export a function (the second column of `exports.txt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builds {
    /// Every build; every library a build serves has it.
    All,
    /// Builds for the MPICH family only (`#[cfg(mpich)]`).
    Mpich,
    /// Every build, though older libraries of a family lack it (`later.rs`).
    Later,
}

include!(concat!(env!("OUT_DIR"), "/exports_gen.rs"));

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// True when `pname` is `P` + `name` and the table lists `name` for this
/// build (evaluated at compile time by `mpi_fn!`).
pub const fn listed(name: &str, pname: &str) -> bool {
    let (n, p) = (name.as_bytes(), pname.as_bytes());
    if p.len() != n.len() + 1 || p[0] != b'P' {
        return false;
    }
    let mut i = 0;
    while i < n.len() {
        if p[i + 1] != n[i] {
            return false;
        }
        i += 1;
    }
    let mut k = 0;
    while k < EXPORTS.len() {
        let (e, builds) = EXPORTS[k];
        if same(e.as_bytes(), n) {
            return !matches!(builds, Builds::Mpich) || cfg!(mpich);
        }
        k += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_of_the_table_for_this_build() {
        assert!(listed("MPI_Send", "PMPI_Send"));
        assert!(listed("MPI_Isendrecv", "PMPI_Isendrecv"));
        assert!(!listed("MPI_Send", "PMPI_Recv"));
        assert!(!listed("MPI_Send", "MPI_Send"));
        assert!(!listed("MPI_Comm_rank", "PMPI_Comm_rank"));
        assert_eq!(listed("MPI_Send_c", "PMPI_Send_c"), cfg!(mpich));
        assert!(EXPORTS.len() > 80);
        assert!(EXPORTS.iter().all(|(n, _)| n.starts_with("MPI_")));
    }
}
