//! Knob names and variables. Each flag of `loggp run` means exactly what
//! its variable means (`--L +5us` is `LOGGP_L=+5us`); values are checked by
//! the same parser the shim uses, so a bad value stops here.

use loggp_core::config::{ARM_G, ARM_G_R, ARM_G_S, ARM_L, ARM_NAMES};
use loggp_core::Config;

/// Knob names as used by `--knob` lists (`L`, `o_s`, ...) to variables.
pub fn knob_var(name: &str) -> Option<&'static str> {
    Some(match name {
        "L" => "LOGGP_L",
        "o_s" => "LOGGP_O_S",
        "o_r" => "LOGGP_O_R",
        "g_s" => "LOGGP_G_S",
        "g_r" => "LOGGP_G_R",
        "G" => "LOGGP_G",
        _ => return None,
    })
}

/// The knobs a sweep arms (`LOGGP_ARM`) when it sweeps them, as
/// `LOGGP_ARM`'s bits: those whose timed paths cost what no value absorbs.
/// `o_s` and `o_r` are not among them: their spins are shortened by the
/// shim's own cost per call, learned at start-up through the same paths
/// (`set_own_costs`), so that a value is over the native call already;
/// armed, a baseline would carry that cost unspent. (`loggp sweep` and
/// `loggp calibrate` both arm by it.)
pub const ARMED_WHEN_SWEPT: u8 = ARM_L | ARM_G_S | ARM_G_R | ARM_G;

/// Knob `name`'s `LOGGP_ARM` bit where a sweep of it arms it
/// (`ARMED_WHEN_SWEPT`), else 0.
pub fn armed_when_swept(name: &str) -> u8 {
    ARM_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |&(_, b)| b & ARMED_WHEN_SWEPT)
}

/// Merges `LOGGP_*` variables already in the environment with the flags
/// (flags win) and validates the result as the shim will.
pub fn resolve(flags: &[(String, String)]) -> Result<Vec<(String, String)>, String> {
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("LOGGP_") && loggp_core::config::VARIABLES.iter().any(|v| v.0 == k)
        })
        .collect();
    for (k, v) in flags {
        vars.retain(|(k2, _)| k2 != k);
        vars.push((k.clone(), v.clone()));
    }
    Config::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| e.to_string())?;
    Ok(vars)
}

/// The `LOGGP_LOG` level among resolved variables (off when unset).
pub fn log_level(vars: &[(String, String)]) -> loggp_core::config::LogLevel {
    Config::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map(|c| c.log)
        .unwrap_or(loggp_core::config::LogLevel::Off)
}
