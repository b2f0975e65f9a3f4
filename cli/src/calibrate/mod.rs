//! `loggp calibrate` (being built).

use std::process::ExitCode;

pub fn main(_args: &[String]) -> Result<ExitCode, String> {
    Err("calibrate is not built yet".into())
}
