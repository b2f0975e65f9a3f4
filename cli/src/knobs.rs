//! Knob names and variables. Each flag of `loggp run` means exactly what
//! its variable means (`--L +5us` is `LOGGP_L=+5us`); values are checked by
//! the same parser the shim uses, so a bad value stops here.

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
