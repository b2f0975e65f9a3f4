//! `loggp sweep` (being built).

use std::process::ExitCode;

pub fn main(_args: &[String]) -> Result<ExitCode, String> {
    Err("sweep is not built yet".into())
}
