//! What the CSV files of the command share: a missing value (no data, a
//! NaN, an infinity) is an empty field, everywhere; a text field is quoted
//! when it holds a comma, a quote or a line break (RFC 4180).

/// A number with full precision; empty when missing.
pub fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// A number with 6 decimals; empty when missing.
pub fn fixed(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.6}")
    } else {
        String::new()
    }
}

/// An optional number; empty when `None` or not finite.
pub fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

/// A text field, quoted when it must be.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_empty_and_text_is_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("plain"), "plain");
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(num(v), "");
            assert_eq!(fixed(v), "");
            assert_eq!(opt(Some(v)), "");
        }
        assert_eq!(opt(None), "");
        assert_eq!(fixed(0.5), "0.500000");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(opt(Some(-1.0)), "-1");
    }
}
