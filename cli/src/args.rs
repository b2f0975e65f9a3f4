//! The one grammar of the command line: clap (derive) gives every
//! subcommand its structure and `--help`; the values are read by the
//! parsers of `loggp_core::units`, the same the shim applies to its
//! `LOGGP_*` variables. `--help` exits 0; a mistake exits 2 with one line
//! naming the flag, the value and what is accepted.

use crate::launch::Mpi;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use loggp_core::units::{self, SIZE_ACCEPTED};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// What a `--timeout` accepts.
pub const DURATION_ACCEPTED: &str = "a time above 0 such as 90s, 500ms, 2s (units ns, us, ms, s)";

/// `--timeout`: a time with its unit, above zero.
pub fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).ok_or_else(|| format!("expected {DURATION_ACCEPTED}"))
}

/// A size in bytes (`8`, `8KiB`, `1MB`).
pub fn bytes(s: &str) -> Result<u64, String> {
    units::parse_bytes(s).ok_or_else(|| format!("expected {SIZE_ACCEPTED}"))
}

/// `--mpi`.
pub fn mpi(s: &str) -> Result<Mpi, String> {
    Mpi::parse(s).map_err(|_| {
        format!(
            "expected {}",
            crate::launch::accepted_names(&crate::launch::builds())
        )
    })
}

/// A whole number in `min..=max`.
pub fn whole(min: u32, max: u32) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("expected a whole number from {min} to {max}"))
    }
}

/// The value of the `LOGGP_*` variable `var`, checked by the shim's own
/// configuration parser.
pub fn knob(var: &'static str) -> impl Fn(&str) -> Result<String, String> + Clone {
    move |s: &str| {
        loggp_core::Config::from_vars([(var, s)])
            .map(|_| s.to_string())
            .map_err(|e| format!("expected {} (as {var})", e.accepted))
    }
}

/// Prints what a clap error calls for and gives the exit code.
pub fn exit(e: &clap::Error, what: &str) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // A closed pipe (loggp --help | head) is not an error.
            let _ = write!(std::io::stdout(), "{}", e.render());
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{what}: {}", one_line(e, what));
            ExitCode::from(2)
        }
    }
}

fn context(e: &clap::Error, k: ContextKind) -> Option<String> {
    match e.get(k)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => Some(v.join(", ")),
        other => Some(other.to_string()),
    }
}

/// A clap error as one line: `--flag "value" is not accepted: expected
/// ...` for a bad value, else clap's own sentence.
pub fn one_line(e: &clap::Error, what: &str) -> String {
    // "--timeout <TIME>" -> "--timeout"
    let flag = context(e, ContextKind::InvalidArg)
        .map(|a| a.split_whitespace().next().unwrap_or_default().to_string());
    let value = context(e, ContextKind::InvalidValue);
    match (e.kind(), flag, value) {
        (ErrorKind::ValueValidation, Some(flag), Some(value)) => {
            let why = std::error::Error::source(e)
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{flag} {value:?} is not accepted: {why}")
        }
        (ErrorKind::InvalidValue, Some(flag), Some(value)) if value.is_empty() => {
            format!("{flag} needs a value")
        }
        (ErrorKind::UnknownArgument, Some(arg), _) => {
            format!("unknown argument {arg:?} (a program goes after --; see {what} --help)")
        }
        _ => {
            // the first paragraph; then come tips and the usage
            let text = e.render().to_string();
            let first = text.split("\n\n").next().unwrap_or_default();
            let line = first.split_whitespace().collect::<Vec<_>>().join(" ");
            line.strip_prefix("error: ").unwrap_or(&line).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[arg(long, value_parser = duration)]
        timeout: Option<Duration>,
        #[arg(long, value_parser = bytes)]
        size: Option<u64>,
        #[arg(long, value_parser = whole(1, 9))]
        n: Option<u32>,
        #[arg(long = "L", value_parser = knob("LOGGP_L"))]
        l: Option<String>,
        #[arg(long)]
        need: Option<String>,
    }

    fn err(args: &[&str]) -> (ErrorKind, String) {
        let argv: Vec<&str> = std::iter::once("t").chain(args.iter().copied()).collect();
        let e = T::try_parse_from(argv).unwrap_err();
        (e.kind(), one_line(&e, "loggp t"))
    }

    #[test]
    fn values_use_the_shared_units() {
        let t = T::try_parse_from(["t", "--timeout", "90s", "--size=8KiB", "--L", "+5us"]).unwrap();
        assert_eq!(t.timeout, Some(Duration::from_secs(90)));
        assert_eq!(t.size, Some(8192));
        assert_eq!(t.l.as_deref(), Some("+5us"));
    }

    #[test]
    fn a_bad_value_is_one_line_with_flag_value_and_accepted() {
        let (k, e) = err(&["--timeout", "300"]);
        assert_eq!(k, ErrorKind::ValueValidation);
        assert_eq!(
            e,
            format!("--timeout \"300\" is not accepted: expected {DURATION_ACCEPTED}")
        );
        let (_, e) = err(&["--size", "8K"]);
        assert!(
            e.starts_with("--size \"8K\" is not accepted: expected a number of bytes"),
            "{e}"
        );
        let (_, e) = err(&["--n", "0"]);
        assert_eq!(
            e,
            "--n \"0\" is not accepted: expected a whole number from 1 to 9"
        );
        let (_, e) = err(&["--L", "5parsecs"]);
        assert!(
            e.starts_with("--L \"5parsecs\" is not accepted: expected a time"),
            "{e}"
        );
        assert!(e.contains("LOGGP_L"), "{e}");
    }

    #[test]
    fn other_mistakes_are_one_line_too() {
        for (args, kind, want) in [
            (
                &["--bogus"][..],
                ErrorKind::UnknownArgument,
                "unknown argument \"--bogus\"",
            ),
            (
                &["--need"][..],
                ErrorKind::InvalidValue,
                "--need needs a value",
            ),
            (
                &["--n", "1", "--n", "2"][..],
                ErrorKind::ArgumentConflict,
                "--n",
            ),
        ] {
            let (k, e) = err(args);
            assert_eq!(k, kind, "{args:?}: {e}");
            assert!(e.contains(want), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{args:?}: {e:?}");
        }
    }

    #[test]
    fn help_is_not_a_mistake() {
        let e = T::try_parse_from(["t", "--help"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DisplayHelp);
        assert!(e.render().to_string().contains("--timeout"));
    }
}
