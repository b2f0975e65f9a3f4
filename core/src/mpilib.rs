//! Which MPI library versions a build of the shim serves.
//!
//! A build is made for one ABI family (Open MPI, or MPICH and the libraries
//! of its ABI) from one version's `mpi.h`. What the shim relies on (the
//! handle types, the predefined handles, the `MPI_Status` layout, the
//! constants `shim/probe/abi_probe.c` prints) was probed with each tested
//! version's headers and found identical within a family: Open MPI 4.1.4
//! (Debian) and 5.0.11 (PyPI), MPICH 4.0.2 (Debian) and 5.0.2 (PyPI). So a
//! build serves the release series it was built from, and any measured
//! series of its family; another series is refused with one line.
//!
//! The version is read at run time from `MPI_Get_library_version`, so that
//! what is printed and recorded is the library actually loaded.

/// Release series whose ABI was measured identical within each family
/// (major version numbers).
pub const MEASURED_OPENMPI: &[u32] = &[4, 5];
/// As above, MPICH's own versions.
pub const MEASURED_MPICH: &[u32] = &[4, 5];

/// A library's identity, read from its version string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// `openmpi` or `mpich`.
    pub family: &'static str,
    /// `[major, minor, release]`.
    pub version: [u32; 3],
}

impl Loaded {
    pub fn version_string(&self) -> String {
        let [a, b, c] = self.version;
        format!("{a}.{b}.{c}")
    }
}

/// Parses `a.b.c` (missing parts are 0; trailing text such as `rc1` is
/// ignored).
pub fn parse_version(s: &str) -> Option<[u32; 3]> {
    let mut v = [0u32; 3];
    let head: String = s
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = head.split('.').filter(|p| !p.is_empty());
    v[0] = parts.next()?.parse().ok()?;
    for slot in v.iter_mut().skip(1) {
        match parts.next() {
            Some(p) => *slot = p.parse().ok()?,
            None => break,
        }
    }
    Some(v)
}

/// Reads the family and version out of `MPI_Get_library_version`'s text:
/// `Open MPI v5.0.11, package: ...` or `MPICH Version:\t4.0.2\n...`.
pub fn parse_library_version(text: &str) -> Option<Loaded> {
    if let Some(rest) = text.split("Open MPI v").nth(1) {
        return Some(Loaded {
            family: "openmpi",
            version: parse_version(rest)?,
        });
    }
    if let Some(rest) = text.split("MPICH Version:").nth(1) {
        return Some(Loaded {
            family: "mpich",
            version: parse_version(rest)?,
        });
    }
    None
}

/// The first line of a library version string, with runs of blanks as one
/// space (for messages and the report).
pub fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn family_name(f: &str) -> &str {
    match f {
        "openmpi" => "Open MPI",
        "mpich" => "MPICH",
        other => other,
    }
}

/// Whether a build for `family` made from version `built` serves the
/// library whose version string is `text`; `Err` is the one line that says
/// why not.
pub fn serves(family: &str, built: &str, text: &str) -> Result<Loaded, String> {
    let Some(loaded) = parse_library_version(text) else {
        return Err(format!(
            "this shim was built for {} {built} but the loaded MPI library says {:?}, which it \
             cannot identify as {}; build the shim for it: MPICC=<its mpicc> scripts/build.sh",
            family_name(family),
            first_line(text),
            family_name(family)
        ));
    };
    if loaded.family != family {
        return Err(format!(
            "this shim was built for {} {built} but the loaded MPI library is {} {}; preload the \
             build for it (loggp shim-path --list) or use loggp run",
            family_name(family),
            family_name(loaded.family),
            loaded.version_string()
        ));
    }
    let b = parse_version(built).unwrap_or([0; 3]);
    let measured = match family {
        "openmpi" => MEASURED_OPENMPI,
        _ => MEASURED_MPICH,
    };
    let same_series = b[..2] == loaded.version[..2];
    let both_measured = measured.contains(&b[0]) && measured.contains(&loaded.version[0]);
    if same_series || both_measured {
        Ok(loaded)
    } else {
        Err(format!(
            "this shim was built for {} {built} but the loaded library is {} {}, whose ABI was not \
             checked against it (measured identical: {} {}); build the shim for it: \
             MPICC=<its mpicc> scripts/build.sh",
            family_name(family),
            family_name(family),
            loaded.version_string(),
            family_name(family),
            measured
                .iter()
                .map(|m| format!("{m}.x"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI5: &str = "Open MPI v5.0.11, package: Open MPI user@localhost Distribution, ident: 5.0.11, repo rev: v5.0.11rc1, Sep 16, 2026";
    const OMPI4: &str =
        "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
    const MPICH5: &str =
        "MPICH Version:      5.0.2\nMPICH Release date: Fri Sep 25 20:45:26 UTC 2026\n";
    const MPICH4: &str = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 2022\n";

    #[test]
    fn reads_the_strings_of_the_tested_libraries() {
        let l = parse_library_version(OMPI5).unwrap();
        assert_eq!((l.family, l.version), ("openmpi", [5, 0, 11]));
        let l = parse_library_version(OMPI4).unwrap();
        assert_eq!((l.family, l.version), ("openmpi", [4, 1, 4]));
        let l = parse_library_version(MPICH5).unwrap();
        assert_eq!((l.family, l.version), ("mpich", [5, 0, 2]));
        let l = parse_library_version(MPICH4).unwrap();
        assert_eq!((l.family, l.version), ("mpich", [4, 0, 2]));
        assert_eq!(parse_library_version("Intel(R) MPI Library 2021.10"), None);
        assert_eq!(parse_version("5.0.11rc1"), Some([5, 0, 11]));
        assert_eq!(parse_version("4.1"), Some([4, 1, 0]));
        assert_eq!(parse_version("x"), None);
        assert_eq!(first_line(MPICH5), "MPICH Version: 5.0.2");
    }

    #[test]
    fn a_build_serves_its_family_within_the_measured_series() {
        assert!(serves("openmpi", "4.1.4", OMPI5).is_ok());
        assert!(serves("openmpi", "5.0.11", OMPI4).is_ok());
        assert!(serves("mpich", "4.0.2", MPICH5).is_ok());
        assert!(serves("mpich", "5.0.2", MPICH4).is_ok());
        // same series, unmeasured: the build's own headers
        assert!(serves("openmpi", "6.1.0", "Open MPI v6.1.2, package").is_ok());
    }

    #[test]
    fn others_are_refused_with_one_line_naming_both() {
        let e = serves("openmpi", "4.1.4", "Open MPI v3.1.6, package: x").unwrap_err();
        assert!(
            e.contains("4.1.4") && e.contains("3.1.6") && !e.contains('\n'),
            "{e}"
        );
        let e = serves("openmpi", "4.1.4", MPICH5).unwrap_err();
        assert!(
            e.contains("Open MPI 4.1.4") && e.contains("MPICH 5.0.2"),
            "{e}"
        );
        let e = serves("mpich", "4.0.2", "Intel(R) MPI Library 2021.10 for Linux").unwrap_err();
        assert!(e.contains("Intel(R) MPI Library 2021.10"), "{e}");
        let e = serves("openmpi", "5.0.11", "Open MPI v6.0.0, package").unwrap_err();
        assert!(e.contains("measured identical: Open MPI 4.x, 5.x"), "{e}");
    }
}
