//! A page run (`latscope page`) in the HTML report: the verdict line, the milestones
//! of the median first and repeat visits, and each one's waterfall as an SVG drawn
//! here — a row per request (queued, DNS/connect/TLS, request and answer; from the
//! browser cache in another colour; render-blocking ones marked), first and largest
//! contentful paint as lines, the full URL and phases on hover — then the origins the
//! first paint waited for with what each one's probe said. Everything a page's
//! servers chose (URLs, types, protocols) is redacted and escaped.

use crate::page::model::{median_visit, Request, Visit, VisitKind};
use crate::redact::redact_urls;
use crate::schema::{PageDoc, PageOrigin};
use crate::units::{fmt_bytes, fmt_ms};

use super::html::{esc, table};

/// At most this many rows in one waterfall (the rest are counted below it).
const MAX_ROWS: usize = 80;
/// The drawing's geometry, px: the label column, the bars, the status column, a row.
const LABEL_W: f64 = 290.0;
const BARS_W: f64 = 560.0;
const STATUS_W: f64 = 110.0;
const ROW_H: f64 = 16.0;
const TOP: f64 = 22.0;

/// A stored page run's verdict line (what its first visit's time went to), which the
/// report puts before the findings.
pub fn verdict(out: &mut String, page: &PageDoc) {
    if !page.verdict.is_empty() {
        out.push_str(&format!(
            "<p class=\"verdict\">{}</p>\n",
            esc(&redact_urls(&page.verdict))
        ));
    }
}

/// A stored page run's milestones and waterfalls (the median first and repeat
/// visits): nothing when it holds no visits (a run stopped before any).
pub fn details(out: &mut String, page: &PageDoc) {
    let shown: Vec<&Visit> = [VisitKind::First, VisitKind::Repeat]
        .into_iter()
        .filter_map(|k| median_visit(&page.visits, k))
        .collect();
    if shown.is_empty() {
        return;
    }
    out.push_str("<h3>Milestones</h3>\n");
    milestones(out, &shown);
    for v in shown {
        out.push_str(&format!(
            "<h3>Waterfall, {} visit #{}</h3>\n",
            v.kind.name(),
            v.index
        ));
        out.push_str(&waterfall(v));
    }
    origins(out, &page.origins);
}

/// The origins the first paint waited for and what each one's probe said.
fn origins(out: &mut String, origins: &[PageOrigin]) {
    if origins.is_empty() {
        return;
    }
    out.push_str("<h3>Origins the first paint waited for, probed</h3>\n");
    let rows: Vec<Vec<String>> = origins
        .iter()
        .map(|o| {
            let said = super::page::origin_said(o, "—");
            vec![
                redact_urls(&o.origin),
                format!("{} {}", o.resource_type.to_lowercase(), redact_urls(&o.url)),
                redact_urls(&said),
                o.findings.join(", "),
            ]
        })
        .collect();
    table(
        out,
        "page-origins",
        &[
            "origin",
            "request probed",
            "where the time goes",
            "warnings",
        ],
        &rows,
    );
}

/// The milestones table: a row per visit shown.
fn milestones(out: &mut String, visits: &[&Visit]) {
    let opt = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "—".into());
    let rows: Vec<Vec<String>> = visits
        .iter()
        .map(|v| {
            let m = &v.milestones;
            let bytes: u64 = v.requests.iter().map(|r| r.encoded_bytes).sum();
            let cached = v.requests.iter().filter(|r| r.from_cache).count();
            vec![
                format!("{} #{}", v.kind.name(), v.index),
                opt(m.ttfb_ms),
                opt(m.fcp_ms),
                opt(m.lcp_ms),
                opt(m.dom_content_loaded_ms),
                opt(m.load_ms),
                v.requests.len().to_string(),
                cached.to_string(),
                fmt_bytes(bytes),
            ]
        })
        .collect();
    table(
        out,
        "page-milestones",
        &[
            "visit",
            "TTFB",
            "FCP",
            "LCP",
            "DOMContentLoaded",
            "load",
            "requests",
            "from cache",
            "bytes",
        ],
        &rows,
    );
}

/// A round step for the time axis: about six ticks over `span` ms.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 6.0).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The last path segment of a URL (or its host), at most 40 characters.
fn label(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit('/').find(|s| !s.is_empty());
    let text = match last {
        Some(l) => format!("{host}/…/{l}"),
        None => format!("{host}/"),
    };
    if text.chars().count() > 40 {
        let tail: String = text
            .chars()
            .rev()
            .take(39)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    } else {
        text
    }
}

/// The hover text of a row: the full URL and where its time went.
fn hover(r: &Request) -> String {
    let p = &r.phases;
    let mut parts = vec![format!("starts {}", fmt_ms(r.start_ms))];
    let mut add = |name: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| *v > 0.0) {
            parts.push(format!("{name} {}", fmt_ms(v)));
        }
    };
    add("queued", Some(p.queued));
    add("DNS", p.dns);
    add("connect", p.connect);
    add("TLS", p.tls);
    add("send", p.send);
    add("wait", p.wait);
    add("receive", p.receive);
    let blocking = if r.render_blocking == "blocking" {
        ", render-blocking"
    } else {
        ""
    };
    format!(
        "{} ({}{blocking}): {}; {}",
        redact_urls(&r.url),
        r.resource_type,
        parts.join(", "),
        fmt_bytes(r.encoded_bytes)
    )
}

/// One visit's waterfall as an SVG.
pub fn waterfall(v: &Visit) -> String {
    let m = &v.milestones;
    let span = super::page::span(v);
    let x = |t: f64| LABEL_W + (t.max(0.0) / span).min(1.0) * BARS_W;
    let rows = v.requests.len().min(MAX_ROWS);
    let width = LABEL_W + BARS_W + STATUS_W;
    let height = TOP + rows as f64 * ROW_H + 8.0;
    let mut s = format!(
        "<svg class=\"waterfall\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" \
         height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" \
         font-size=\"11\" role=\"img\" aria-label=\"waterfall of the {} visit\">\n",
        v.kind.name()
    );
    // The time axis: a tick and a label every step, a faint line down the rows.
    let step = tick_step(span);
    let mut t = 0.0;
    while t <= span {
        s.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{height:.0}\" stroke=\"#eee\"/>\
             <text x=\"{0:.1}\" y=\"14\" text-anchor=\"middle\" fill=\"#666\">{2}</text>\n",
            x(t),
            TOP - 4.0,
            esc(&fmt_ms(t))
        ));
        t += step;
    }
    for (i, r) in v.requests.iter().take(MAX_ROWS).enumerate() {
        let y = TOP + i as f64 * ROW_H;
        let p = &r.phases;
        let setup_at = r.start_ms + p.queued;
        let send_at = setup_at + p.setup();
        let end = r.end_ms.max(r.start_ms);
        let answer = if r.from_cache { "#6aa84f" } else { "#3d78d8" };
        s.push_str(&format!("<g><title>{}</title>", esc(&hover(r))));
        if i % 2 == 1 {
            s.push_str(&format!(
                "<rect x=\"0\" y=\"{y:.0}\" width=\"{width:.0}\" height=\"{ROW_H}\" fill=\"#fafafa\"/>"
            ));
        }
        s.push_str(&format!(
            "<text x=\"4\" y=\"{:.0}\" fill=\"{}\">{}{}</text>",
            y + 12.0,
            if r.blocked { "#999" } else { "#222" },
            if r.render_blocking == "blocking" {
                "▶ "
            } else {
                ""
            },
            esc(&label(&redact_urls(&r.url)))
        ));
        for (from, to, fill) in [
            (r.start_ms, setup_at.min(end), "#d9d9d9"),
            (setup_at.min(end), send_at.min(end), "#f0a030"),
            (send_at.min(end), end, answer),
        ] {
            let w = x(to) - x(from);
            if w > 0.0 {
                s.push_str(&format!(
                    "<rect x=\"{:.1}\" y=\"{:.0}\" width=\"{w:.1}\" height=\"{:.0}\" fill=\"{fill}\"/>",
                    x(from),
                    y + 3.0,
                    ROW_H - 6.0
                ));
            }
        }
        if end <= r.start_ms {
            s.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.0}\" width=\"1\" height=\"{:.0}\" fill=\"{answer}\"/>",
                x(r.start_ms),
                y + 3.0,
                ROW_H - 6.0
            ));
        }
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{:.0}\" fill=\"#444\">{}</text></g>\n",
            LABEL_W + BARS_W + 6.0,
            y + 12.0,
            esc(&super::page::status(r))
        ));
    }
    for (at, name, colour) in [(m.fcp_ms, "FCP", "#2a9d4a"), (m.lcp_ms, "LCP", "#9b3fb5")] {
        if let Some(at) = at.filter(|t| t.is_finite()) {
            s.push_str(&format!(
                "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{height:.0}\" stroke=\"{colour}\" \
                 stroke-dasharray=\"4 3\"><title>{name} {2}</title></line>\n",
                x(at),
                TOP - 2.0,
                esc(&fmt_ms(at))
            ));
        }
    }
    s.push_str("</svg>\n");
    let more = v.requests.len().saturating_sub(MAX_ROWS);
    s.push_str(&format!(
        "<p class=\"note\">grey: queued · orange: DNS, connect and TLS · blue: request and \
         answer (green: from the browser cache) · ▶ render-blocking · dashed: first (green) \
         and largest (purple) contentful paint{}</p>\n",
        if more > 0 {
            format!(" · {more} more requests not drawn")
        } else {
            String::new()
        }
    ));
    s
}

#[cfg(test)]
#[path = "html_page_tests.rs"]
mod tests;
