//! Parsing of the units accepted everywhere (DESIGN.md §1): times in `ns`,
//! `us`, `ms`, `s`; bandwidths in `B/s`, `KB/s`, `MB/s`, `GB/s` (decimal) or
//! `KiB/s`, `MiB/s`, `GiB/s`; or G directly as a time per byte.

/// What a time value accepts, for error messages.
pub const TIME_ACCEPTED: &str = "a time such as 5us, 250ns, 1.5ms, 0 (units ns, us, ms, s)";
/// What a G value accepts, for error messages.
pub const G_ACCEPTED: &str = "a bandwidth such as 2GB/s, 500MiB/s (B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s) or a time per byte such as 0.5ns, or 0";

/// Splits `"1.5us"` into `(1.5, "us")`. The number may use a decimal point
/// and an exponent; no sign is accepted here (signs are handled by callers).
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && s[i + 1..].starts_with(|d: char| d.is_ascii_digit())))
        })
        .map_or(s.len(), |(i, _)| i);
    let (num, unit) = s.split_at(end);
    if num.is_empty() || num.starts_with('.') && num.len() == 1 {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}

/// Rounds a non-negative number of nanoseconds to an integer, saturating:
/// negative and NaN give 0, values past `u64::MAX` give `u64::MAX`.
///
/// Without raising a floating-point exception: the shim runs this inside
/// the application's threads, whose FP flags it must leave alone (issue
/// 14). Rust's `as` saturates too, but on x86-64 it converts through
/// `cvttsd2si`, which raises FE_INVALID for NaN, ±∞ and anything from 2^63
/// up; so only values below 2^63 reach it here.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn round_ns(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let r = x.round();
    // Comparisons are quiet (ucomisd, no flag even for NaN).
    if r.is_nan() || r <= 0.0 {
        0
    } else if r < TWO_63 {
        r as u64
    } else if r < 2.0 * TWO_63 {
        (r - TWO_63) as u64 | 1 << 63
    } else {
        u64::MAX
    }
}

/// Parses a non-negative duration and returns nanoseconds (rounded to the
/// nearest ns). A bare `0` is accepted without a unit; any other number needs
/// one, because a silent default unit corrupts an experiment.
pub fn parse_time_ns(s: &str) -> Option<u64> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if v == 0.0 => 0.0,
        _ => return None,
    };
    let ns = v * scale;
    (ns < 1.0e18).then(|| round_ns(ns))
}

/// Parses G, the time per byte, from either a bandwidth (`2GB/s`) or a time
/// (`0.5ns`, meaning per byte). Returns nanoseconds per byte; `0` means
/// "not set".
pub fn parse_g_ns_per_byte(s: &str) -> Option<f64> {
    let (v, unit) = split_number(s)?;
    if v == 0.0 && unit.is_empty() {
        return Some(0.0);
    }
    let bytes_per_s = match unit {
        "B/s" => Some(1.0),
        "KB/s" | "kB/s" => Some(1e3),
        "MB/s" => Some(1e6),
        "GB/s" => Some(1e9),
        "KiB/s" => Some(1024.0),
        "MiB/s" => Some(1024.0 * 1024.0),
        "GiB/s" => Some(1024.0 * 1024.0 * 1024.0),
        _ => None,
    };
    if let Some(scale) = bytes_per_s {
        let bw = v * scale;
        return (bw > 0.0).then(|| 1e9 / bw);
    }
    let per = unit.strip_suffix("/B").unwrap_or(unit);
    let scale = match per {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(v * scale)
}

/// Formats nanoseconds for humans: `250ns`, `5us`, `1.5ms`.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{}s", trim(ns / 1e9))
    } else if ns >= 1e6 {
        format!("{}ms", trim(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{}us", trim(ns / 1e3))
    } else {
        format!("{}ns", trim(ns))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Formats a G value (ns per byte) as a bandwidth in MB/s for humans.
pub fn fmt_g(ns_per_byte: f64) -> String {
    if ns_per_byte <= 0.0 {
        "unset".to_string()
    } else {
        format!(
            "{}MB/s ({}ns/B)",
            trim(1e3 / ns_per_byte),
            trim(ns_per_byte)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_ns_saturates() {
        assert_eq!(round_ns(0.4), 0);
        assert_eq!(round_ns(2.5), 3);
        assert_eq!(round_ns(-7.0), 0);
        assert_eq!(round_ns(f64::NAN), 0);
        assert_eq!(round_ns(f64::NEG_INFINITY), 0);
        assert_eq!(round_ns(f64::INFINITY), u64::MAX);
        assert_eq!(round_ns(1e30), u64::MAX);
        assert_eq!(round_ns(9.2e18), 9_200_000_000_000_000_000);
        assert_eq!(round_ns(1e19), 10_000_000_000_000_000_000);
        assert_eq!(
            round_ns(18_446_744_073_709_549_568.0),
            18_446_744_073_709_549_568
        );
        assert_eq!(round_ns(1e6), 1_000_000);
        assert_eq!(round_ns(4.5e15), 4_500_000_000_000_000);
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_ns("5us"), Some(5_000));
        assert_eq!(parse_time_ns("250ns"), Some(250));
        assert_eq!(parse_time_ns("1.5ms"), Some(1_500_000));
        assert_eq!(parse_time_ns("2s"), Some(2_000_000_000));
        assert_eq!(parse_time_ns("0"), Some(0));
        assert_eq!(parse_time_ns(" 20us "), Some(20_000));
        assert_eq!(parse_time_ns("1e1us"), Some(10_000));
    }

    #[test]
    fn bad_times() {
        for s in [
            "",
            "5",
            "us",
            "5 parsecs",
            "-5us",
            "5uss",
            ".",
            "nan",
            "inf",
            "1e30s",
        ] {
            assert_eq!(parse_time_ns(s), None, "{s:?}");
        }
    }

    #[test]
    fn bandwidths() {
        assert_eq!(parse_g_ns_per_byte("1GB/s"), Some(1.0));
        assert_eq!(parse_g_ns_per_byte("100MB/s"), Some(10.0));
        assert_eq!(parse_g_ns_per_byte("0.5ns"), Some(0.5));
        assert_eq!(parse_g_ns_per_byte("2ns/B"), Some(2.0));
        assert_eq!(parse_g_ns_per_byte("0"), Some(0.0));
        let mib = parse_g_ns_per_byte("1MiB/s").unwrap();
        assert!((mib - 1e9 / 1048576.0).abs() < 1e-9);
        for s in ["0GB/s", "5", "5 bogons/s", "-1GB/s", "GB/s"] {
            assert_eq!(parse_g_ns_per_byte(s), None, "{s:?}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(250.0), "250ns");
        assert_eq!(fmt_ns(5000.0), "5us");
        assert_eq!(fmt_ns(1_500_000.0), "1.5ms");
        assert_eq!(fmt_g(10.0), "100MB/s (10ns/B)");
    }
}
