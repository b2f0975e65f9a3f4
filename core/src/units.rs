//! Parsing of the units accepted everywhere (DESIGN.md §1), by the shim's
//! `LOGGP_*` variables and by every flag of the `loggp` command alike:
//! times in `ns`, `us`, `ms`, `s`; bandwidths in `B/s`, `KB/s`, `MB/s`,
//! `GB/s` (decimal) or `KiB/s`, `MiB/s`, `GiB/s`; or G directly as a time
//! per byte; sizes in bytes, `B`, `KB`, `MB`, `GB` (decimal) or `KiB`,
//! `MiB`, `GiB` (binary), the same prefixes as the bandwidths (a bare `K`
//! or `M` is refused: it would be unclear which is meant); comma-separated
//! lists where a bare number takes the unit of the next value that has one.

/// What a time value accepts, for error messages.
pub const TIME_ACCEPTED: &str = "a time such as 5us, 250ns, 1.5ms, 0 (units ns, us, ms, s)";
/// What a G value accepts, for error messages.
pub const G_ACCEPTED: &str = "a bandwidth such as 2GB/s, 500MiB/s (B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s) or a time per byte such as 0.5ns, or 0";

/// What a size accepts, for error messages.
pub const SIZE_ACCEPTED: &str =
    "a number of bytes such as 64, 8KiB, 1MiB (KiB MiB GiB: 1024-based; B KB MB GB: 1000-based)";

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
/// Without raising a floating-point exception: the shim runs this inside the
/// application's threads, whose FP flags it must leave alone. Rust's `as`
/// saturates too, but on x86-64 it converts through `cvttsd2si`, which raises
/// FE_INVALID for NaN, ±∞ and anything from 2^63 up; so only values below 2^63
/// reach it here.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn round_ns(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // Comparisons are quiet (ucomisd, no flag even for NaN).
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    // Half up by truncation (x > 0 here), instead of f64::round, which is
    // a libm call on the message path without SSE4.1.
    let r = x + 0.5;
    if r < TWO_63 {
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

/// Parses a size in bytes: a whole number, optionally followed by `B`,
/// `KB`, `MB`, `GB` (powers of 1000) or `KiB`, `MiB`, `GiB` (powers of
/// 1024). `None` for anything else, a bare `K` included, and on overflow.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(i);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// Parses a positive duration (`--timeout`): a time as [`parse_time_ns`]
/// reads it, above zero.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    parse_time_ns(s)
        .filter(|&ns| ns > 0)
        .map(std::time::Duration::from_nanos)
}

/// Splits a comma-separated list; an empty item is an error naming the
/// list. Sizes are lists of this kind: a bare number is bytes.
pub fn split_list(list: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    if items.iter().any(|t| t.is_empty()) {
        return Err(format!("an empty value in {list:?}"));
    }
    Ok(items)
}

/// Splits a list of times or bandwidths, where a bare number would be
/// refused, and gives each bare number the unit of the next value that
/// carries one: `0,2,5,10us` is `0`, `2us`, `5us`, `10us` and
/// `1,2ms,5,10us` is `1ms`, `2ms`, `5us`, `10us`. A bare `0` keeps no unit
/// (it needs none); a bare number with no unit after it stays bare (and
/// the value's own parser refuses it).
pub fn split_list_with_units(list: &str) -> Result<Vec<String>, String> {
    fn unit_of(t: &str) -> &str {
        let t = t.strip_prefix('+').unwrap_or(t);
        t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
    }
    let tokens = split_list(list)?;
    let mut out = Vec::with_capacity(tokens.len());
    for (i, tok) in tokens.iter().enumerate() {
        let bare = unit_of(tok).is_empty();
        let zero = tok.parse::<f64>().is_ok_and(|v| v == 0.0);
        let next = tokens[i + 1..]
            .iter()
            .map(|t| unit_of(t))
            .find(|u| !u.is_empty());
        let text = match next {
            Some(u) if bare && !zero => format!("{tok}{u}"),
            _ => (*tok).to_string(),
        };
        out.push(text);
    }
    Ok(out)
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
    fn sizes() {
        assert_eq!(parse_bytes("0"), Some(0));
        assert_eq!(parse_bytes("64B"), Some(64));
        assert_eq!(parse_bytes("8KiB"), Some(8192));
        assert_eq!(parse_bytes("8KB"), Some(8000));
        assert_eq!(parse_bytes("1MiB"), Some(1 << 20));
        assert_eq!(parse_bytes("2GiB"), Some(2 << 30));
        assert_eq!(parse_bytes(" 16 "), Some(16));
        for s in [
            "8K",
            "KiB",
            "-1",
            "1.5KiB",
            "8 parsecs",
            "",
            "99999999999999999999GiB",
        ] {
            assert_eq!(parse_bytes(s), None, "{s:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("20s"),
            Some(std::time::Duration::from_secs(20))
        );
        assert_eq!(
            parse_duration("500ms"),
            Some(std::time::Duration::from_millis(500))
        );
        for s in ["0", "300", "0s", "-1s", "5min"] {
            assert_eq!(parse_duration(s), None, "{s:?}");
        }
    }

    #[test]
    fn lists_borrow_the_next_unit() {
        let l = |s: &str| split_list_with_units(s).unwrap();
        assert_eq!(l("0,2,5,10us"), ["0", "2us", "5us", "10us"]);
        assert_eq!(
            l("0,2,5,10,500ns,1,2ms"),
            ["0", "2ns", "5ns", "10ns", "500ns", "1ms", "2ms"]
        );
        assert_eq!(l("1000,100MB/s,0.5ns"), ["1000MB/s", "100MB/s", "0.5ns"]);
        assert_eq!(l("+5,+10us"), ["+5us", "+10us"]);
        assert_eq!(l("1,2"), ["1", "2"]);
        let e = split_list_with_units("1,,2us").unwrap_err();
        assert!(e.contains("empty") && e.contains("\"1,,2us\""), "{e}");
        assert!(split_list_with_units("").is_err());
        // sizes: a bare number is bytes, nothing is borrowed
        assert_eq!(
            split_list(" 8, 1024 ,16KiB").unwrap(),
            ["8", "1024", "16KiB"]
        );
        assert!(split_list("8,").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ns(250.0), "250ns");
        assert_eq!(fmt_ns(5000.0), "5us");
        assert_eq!(fmt_ns(1_500_000.0), "1.5ms");
        assert_eq!(fmt_g(10.0), "100MB/s (10ns/B)");
    }
}
