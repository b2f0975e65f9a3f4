//! The one SVG writer of the command: a drawing on white with the few
//! elements the plots use, text escaped on the way in, and the axis
//! helpers (tick positions, tick labels) every plot shares. The plots
//! themselves (`sweep.svg`, the calibration's `plot-*.svg` and `fit.svg`,
//! `coll.svg`) only decide what goes where.

use std::fmt::Write as _;

/// An SVG document being written.
pub struct Svg {
    s: String,
}

impl Svg {
    /// A `w` × `h` drawing on a white background; text is sans-serif, 12 px
    /// unless an element says otherwise.
    pub fn new(w: f64, h: f64) -> Svg {
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="sans-serif" font-size="12">"#
        );
        s.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        Svg { s }
    }

    /// A line from `a` to `b`; `attrs` are further attributes
    /// (`stroke="black"`).
    pub fn line(&mut self, a: (f64, f64), b: (f64, f64), attrs: &str) {
        let _ = writeln!(
            self.s,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" {attrs}/>"#,
            a.0, a.1, b.0, b.1
        );
    }

    /// A rectangle with its top-left corner at `(x, y)`.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let _ = writeln!(
            self.s,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" {attrs}/>"#
        );
    }

    /// A circle of radius `r` at `(x, y)`.
    pub fn circle(&mut self, x: f64, y: f64, r: f64, attrs: &str) {
        let _ = writeln!(
            self.s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" {attrs}/>"#
        );
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], attrs: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(self.s, r#"<polyline points="{}" {attrs}/>"#, pts.join(" "));
    }

    /// `text` (escaped here) anchored at `(x, y)`.
    pub fn text(&mut self, x: f64, y: f64, attrs: &str, text: &str) {
        let _ = writeln!(
            self.s,
            r#"<text x="{x:.1}" y="{y:.1}" {attrs}>{}</text>"#,
            esc(text)
        );
    }

    /// `text` rotated a quarter turn anticlockwise about `(x, y)`, for a
    /// y axis label.
    pub fn vtext(&mut self, x: f64, y: f64, attrs: &str, text: &str) {
        let _ = writeln!(
            self.s,
            r#"<text transform="translate({x:.1},{y:.1}) rotate(-90)" text-anchor="middle" {attrs}>{}</text>"#,
            esc(text)
        );
    }

    /// An element the helpers above do not cover, written as given (its
    /// text must already be escaped with [`esc`]).
    pub fn raw(&mut self, element: &str) {
        self.s.push_str(element);
        self.s.push('\n');
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.s.push_str("</svg>\n");
        self.s
    }
}

/// Text made safe for SVG content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick positions covering [lo, hi]: steps of 1, 2 or 5 × 10^k.
pub fn ticks(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    let span = (hi - lo).abs().max(1e-12);
    let raw = span / want.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut out = Vec::new();
    let mut k = 0.0;
    while first + k * step <= hi + step * 1e-9 {
        let v = first + k * step;
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        k += 1.0;
    }
    out
}

/// A tick label: at most 3 decimals, no trailing zeros, no `-0`.
pub fn label(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A tick label for axes spanning decades: scientific outside 0.01–10⁶.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 || (a < 1e-2 && a > 0.0) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks() {
        assert_eq!(ticks(0.0, 100.0, 5), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(0.0, 1.0, 4), [0.0, 0.5, 1.0]);
        assert_eq!(ticks(-3.0, 12.0, 6), [0.0, 5.0, 10.0]);
        assert_eq!(ticks(-12.0, 3.0, 6), [-10.0, -5.0, 0.0]);
    }

    #[test]
    fn labels() {
        assert_eq!(label(-0.0001), "0");
        assert_eq!(label(2.5), "2.5");
        assert_eq!(short(2.5e7), "2.5e7");
        assert_eq!(short(0.001), "1.0e-3");
        assert_eq!(short(150.0), "150");
        assert_eq!(short(1.5), "1.50");
    }

    #[test]
    fn a_document_is_well_formed_and_escaped() {
        let mut d = Svg::new(100.0, 50.0);
        d.line((0.0, 0.0), (10.0, 10.0), r#"stroke="black""#);
        d.rect(1.0, 2.0, 3.0, 4.0, r#"fill="none""#);
        d.circle(5.0, 5.0, 3.5, r#"fill="red""#);
        d.polyline(&[(0.0, 1.0), (2.0, 3.0)], r#"fill="none""#);
        d.text(1.0, 2.0, "", "a<b & \"c\"");
        d.vtext(1.0, 2.0, "", "y");
        let s = d.finish();
        assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\""));
        assert!(s.trim_end().ends_with("</svg>"));
        assert!(s.contains("a&lt;b &amp; &quot;c&quot;") && !s.contains("a<b"));
        assert!(s.contains(r#"points="0.0,1.0 2.0,3.0""#));
        // every element opened is closed
        assert_eq!(s.matches('<').count(), s.matches('>').count());
    }
}
