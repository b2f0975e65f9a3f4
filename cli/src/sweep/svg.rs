//! The plot of a sweep (on the shared `crate::svg` writer): one panel per knob, side by side, of the
//! slowdown (%) against the knob's value. Each point shows the median
//! (or the minimum, with `--stat min`: dot, joined by a line), the interquartile range (box) and the min–max
//! of the repeats (whisker); the grey band is the baseline's own min–max,
//! the red dashed line the 10 % threshold, the orange lines the tolerance
//! levels (1, 2, 5 %) with a tick at each tolerance and its interval, the
//! dotted line the fit.

use super::{Curve, Report, THRESHOLD_PCT, TOLERANCE_PCT};
use crate::svg::{esc, label, ticks, Svg};

const PANEL_W: f64 = 420.0;
const PANEL_H: f64 = 320.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 48.0;

fn panel(doc: &mut Svg, r: &Report, c: &Curve, x0: f64) {
    let unit = c.knob.axis.unit();
    let xmax = c
        .points
        .iter()
        .map(|p| p.x)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    // The y range covers the medians, 0 and the threshold, and the spread
    // up to one and a half times that span beyond; a box or whisker
    // reaching further (one wild run) is cut at the edge and marked with
    // an open triangle, so that it does not flatten the curve.
    let all = || {
        c.points
            .iter()
            .chain(std::iter::once(&r.baseline))
            .filter_map(|p| p.slowdown)
    };
    let mut core: Vec<f64> = vec![0.0, THRESHOLD_PCT * 1.2];
    core.extend(all().map(|d| r.stat.of(&d)));
    let cmin = core.iter().copied().fold(f64::INFINITY, f64::min);
    let cmax = core.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lim_lo, lim_hi) = (cmin - 1.5 * (cmax - cmin), cmax + 1.5 * (cmax - cmin));
    let wmin = all().map(|d| d.min.max(lim_lo)).fold(cmin, f64::min);
    let wmax = all().map(|d| d.max.min(lim_hi)).fold(cmax, f64::max);
    let (ymin, ymax) = (wmin - 0.05 * (wmax - wmin), wmax + 0.05 * (wmax - wmin));
    let (pw, ph) = (PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM);
    // a little room either side so that the end boxes are not cut
    let (xlo, xhi) = (-0.04 * xmax, 1.04 * xmax);
    let sx = |x: f64| x0 + LEFT + (x - xlo) / (xhi - xlo) * pw;
    let sy = |y: f64| TOP + (ymax - y) / (ymax - ymin) * ph;
    let clip = |y: f64| y.clamp(lim_lo, lim_hi);

    doc.raw("<g>");
    // title: knob and fit
    let base = r.baseline.time.map(|t| r.stat.of(&t));
    let fit_text = match (c.fit, base) {
        (Some(f), Some(b)) => format!(
            "{:.3} %/{unit}, R² {}",
            100.0 * f.slope / b,
            if f.r2.is_finite() {
                format!("{:.3}", f.r2)
            } else {
                "n/a".into()
            }
        ),
        _ => "no fit".into(),
    };
    let fit_text = match c.sensitivity {
        Some(sv) => {
            let (p, lo, hi) = sv.pct();
            format!("{fit_text}; at 0: {p:.3} %/{unit} [{lo:.3}, {hi:.3}]")
        }
        None => fit_text,
    };
    doc.raw(&format!(
        r##"<text x="{:.1}" y="20" font-size="15" font-weight="bold">{}</text><text x="{:.1}" y="37" font-size="12" fill="#444">{}</text>"##,
        x0 + LEFT,
        esc(&format!("{} ({})", c.knob.name, c.knob.var)),
        x0 + LEFT,
        esc(&fit_text)
    ));
    // grid and axes
    for t in ticks(ymin, ymax, 6) {
        let y = sy(t);
        doc.raw(&format!(
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            sx(xlo),
            sx(xhi),
            sx(xlo) - 6.0,
            y + 4.0,
            label(t)
        ));
    }
    for t in ticks(0.0, xmax, 5) {
        let x = sx(t);
        doc.raw(&format!(
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#e4e4e4"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            TOP,
            TOP + ph,
            TOP + ph + 16.0,
            label(t)
        ));
    }
    doc.raw(&format!(
        r##"<rect x="{:.1}" y="{TOP:.1}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#888"/>"##,
        sx(xlo)
    ));
    doc.raw(&format!(
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{} ({unit})</text>"#,
        sx(xmax / 2.0),
        TOP + ph + 36.0,
        esc(&c.knob.name)
    ));
    doc.raw(&format!(
        r#"<text transform="translate({:.1},{:.1}) rotate(-90)" font-size="12" text-anchor="middle">slowdown (%)</text>"#,
        x0 + 16.0,
        TOP + ph / 2.0
    ));
    // baseline band, zero line, threshold
    if let Some(d) = r.baseline.slowdown {
        doc.raw(&format!(
            r##"<rect x="{:.1}" y="{:.1}" width="{pw:.1}" height="{:.1}" fill="#bbb" fill-opacity="0.35"><title>baseline min–max</title></rect>"##,
            sx(xlo),
            sy(clip(d.max)),
            (sy(clip(d.min)) - sy(clip(d.max))).max(0.5)
        ));
    }
    doc.raw(&format!(
        r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#666"/>"##,
        sx(xlo),
        sx(xhi),
        y = sy(0.0)
    ));
    doc.raw(&format!(
        r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#c33" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#c33" text-anchor="end">+{THRESHOLD_PCT} %</text>"##,
        sx(xlo),
        sx(xhi),
        sx(xhi) - 3.0,
        sy(THRESHOLD_PCT) - 3.0,
        y = sy(THRESHOLD_PCT)
    ));
    // tolerance levels: a thin line each, and where the curve crosses it
    // a tick with the interval as a bar along the level
    for (level, t) in TOLERANCE_PCT.iter().zip(&c.tolerance) {
        let y = sy(*level);
        doc.raw(&format!(
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d80" stroke-width="0.8" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" font-size="9" fill="#b60" text-anchor="start">+{level} %</text>"##,
            sx(xlo),
            sx(xhi),
            sx(xlo) + 3.0,
            y - 2.0
        ));
        if let Some(v) = t.value {
            let lo = t.lo.unwrap_or(v).clamp(xlo, xhi);
            let hi = t.hi.map_or(xhi, |h| h.clamp(xlo, xhi));
            let end = |e: Option<f64>| e.map_or("not reached".to_string(), |e| format!("{e:.3}"));
            doc.raw(&format!(
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d80" stroke-width="3" stroke-opacity="0.6"/><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#b60" stroke-width="1.5"><title>+{level} % at {v:.3} {unit} [{}, {}]</title></line>"##,
                sx(lo),
                sx(hi),
                y - 5.0,
                y + 5.0,
                end(t.lo),
                end(t.hi),
                x = sx(v.min(xhi))
            ));
        }
    }
    // fit line, in slowdown %: 100 (a + b x) / t0 - 100
    if let (Some(f), Some(b)) = (c.fit, base) {
        let y = |x: f64| 100.0 * (f.intercept + f.slope * x) / b - 100.0;
        let (ya, yb) = (y(0.0).clamp(ymin, ymax), y(xmax).clamp(ymin, ymax));
        doc.raw(&format!(
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#36c" stroke-dasharray="2 3"><title>least-squares fit</title></line>"##,
            sx(0.0),
            sy(ya),
            sx(xmax),
            sy(yb)
        ));
    }
    // points: the baseline at x = 0 (grey; joined to the curve only when
    // the knob has no value 0 of its own), then each value
    let has_zero = c.points.iter().any(|p| p.x == 0.0);
    let mut path = Vec::new();
    let pts = std::iter::once((true, &r.baseline)).chain(c.points.iter().map(|p| (false, p)));
    for (is_base, p) in pts {
        let Some(d) = p.slowdown else { continue };
        let x = sx(p.x);
        if !(is_base && has_zero) {
            path.push(format!("{x:.1},{:.1}", sy(r.stat.of(&d))));
        }
        let (lo, hi) = (clip(d.min), clip(d.max));
        doc.raw(&format!(
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><rect x="{:.1}" y="{:.1}" width="8" height="{:.1}" fill="{}" stroke="#333"/><circle cx="{x:.1}" cy="{:.1}" r="3.2" fill="{}"><title>{}: median {:.2} %, IQR {:.2} – {:.2}, min {:.2}, max {:.2}, n {}</title></circle>"##,
            sy(lo),
            sy(hi),
            x - 4.0,
            sy(clip(d.q3)),
            (sy(clip(d.q1)) - sy(clip(d.q3))).max(0.5),
            if is_base { "#ddd" } else { "#9bd" },
            sy(r.stat.of(&d)),
            if is_base { "#777" } else { "#036" },
            esc(&p.label),
            d.median,
            d.q1,
            d.q3,
            d.min,
            d.max,
            d.n
        ));
        for (cut, end, dir) in [(d.max > hi, hi, -1.0), (d.min < lo, lo, 1.0)] {
            if cut {
                let y = sy(end);
                doc.raw(&format!(
                    r##"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="white" stroke="#333"><title>whisker cut: {:.1} %</title></path>"##,
                    x - 4.0,
                    y - dir * 6.0,
                    x + 4.0,
                    y - dir * 6.0,
                    x,
                    y - dir * 12.0,
                    if dir < 0.0 { d.max } else { d.min }
                ));
            }
        }
    }
    if path.len() > 1 {
        doc.raw(&format!(
            r##"<polyline points="{}" fill="none" stroke="#036" stroke-width="1.5"/>"##,
            path.join(" ")
        ));
    }
    doc.raw("</g>");
}

pub fn plot(r: &Report) -> String {
    let n = r.curves.len().max(1) as f64;
    let (w, h) = (PANEL_W * n, PANEL_H + 34.0);
    let mut d = Svg::new(w, h);
    for (i, c) in r.curves.iter().enumerate() {
        panel(&mut d, r, c, i as f64 * PANEL_W);
    }
    let what = match &r.metric {
        Some(m) => format!("metric /{m}/"),
        None => "wall time".into(),
    };
    let mut cmd = format!("{} ({})", r.command.join(" "), r.mpi);
    // about 68 characters of 10.5 px text per panel
    let fit = r.curves.len().max(1) * 68;
    if cmd.chars().count() > fit {
        cmd = cmd.chars().take(fit.saturating_sub(1)).collect::<String>() + "…";
    }
    let legend = format!(
        "{what} against the baseline (virtual time on, knobs 0); dot: {} of {} runs, box: IQR, whisker: min–max; grey band: baseline min–max; dotted: fit; orange: +1/2/5 % and the tolerance [95 %]",
        r.stat.name(),
        r.repeat
    );
    for (i, line) in [cmd, legend].iter().enumerate() {
        d.text(
            8.0,
            h - 22.0 + 14.0 * i as f64,
            r##"font-size="10.5" fill="#444""##,
            line,
        );
    }
    d.finish()
}
