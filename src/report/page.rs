//! `latscope page` as terminal text: the verdict first ("LCP 2.4 s on a first
//! visit: 1.1 s of it is …"), the milestones of first and repeat visits, a compact
//! waterfall of the median first visit (one line per request, bars scaled to the
//! page), what was not fetched, what each origin the first paint waited for said when
//! probed, then the findings. Presentation only.

use crate::diagnose::rules::page::short_url;
use crate::diagnose::Finding;
use crate::page::model::{PageRun, Request, Visit, VisitKind};
use crate::schema::PageOrigin;
use crate::units::{fmt_bytes, fmt_ms};

/// Bar width of the waterfall, columns.
const WIDTH: usize = 40;
/// The most requests drawn.
const MAX_LINES: usize = 80;

/// The one-sentence verdict on the median first visit (and the repeat visit).
pub fn verdict(run: &PageRun) -> String {
    let Some(v) = run.median(VisitKind::First) else {
        return "no visit finished".to_string();
    };
    let m = &v.milestones;
    let (name, at) = match (m.lcp_ms, m.fcp_ms, m.load_ms) {
        (Some(l), _, _) => ("LCP", l),
        (None, Some(f), _) => ("FCP", f),
        (None, None, Some(l)) => ("load", l),
        _ => return "the page never painted nor loaded within the time bound".to_string(),
    };
    let mut parts = Vec::new();
    let ttfb = m.ttfb_ms.unwrap_or(0.0);
    parts.push(format!(
        "{} of it is the document's first byte",
        fmt_ms(ttfb)
    ));
    // The render-blocking request the paint waited for longest.
    let blocker = v
        .requests
        .iter()
        .filter(|r| r.render_blocking == "blocking" && r.end_ms <= at + 1.0)
        .max_by(|a, b| a.end_ms.total_cmp(&b.end_ms));
    let mut mark = ttfb;
    if let Some(b) = blocker.filter(|b| b.end_ms > ttfb) {
        let setup = b.phases.setup();
        let setup_text = if setup >= 1.0 {
            format!(" ({} of that DNS/connect/TLS)", fmt_ms(setup))
        } else {
            String::new()
        };
        parts.push(format!(
            "{} waiting for the render-blocking {} {}{setup_text}",
            fmt_ms(b.end_ms - ttfb),
            b.resource_type.to_lowercase(),
            short_url(&b.url),
        ));
        mark = b.end_ms;
    }
    if !m.lcp_url.is_empty() && name == "LCP" {
        if let Some(r) = v.requests.iter().find(|r| r.url == m.lcp_url) {
            if r.end_ms > mark {
                parts.push(format!(
                    "{} more until the LCP {} {} arrived",
                    fmt_ms(r.end_ms - mark),
                    r.resource_type.to_lowercase(),
                    short_url(&r.url)
                ));
                mark = r.end_ms;
            }
        }
    }
    if at > mark {
        parts.push(format!("{} to render and paint", fmt_ms(at - mark)));
    }
    let mut s = format!(
        "{name} {} on a first visit: {}",
        fmt_ms(at),
        parts.join(", ")
    );
    if let Some(r) = run.median(VisitKind::Repeat) {
        let cached = r.requests.iter().filter(|x| x.from_cache).count();
        if let Some(l) = r.milestones.lcp_ms.or(r.milestones.fcp_ms) {
            s.push_str(&format!(
                "; {} on a repeat visit ({cached} of {} requests from the browser cache)",
                fmt_ms(l),
                r.requests.len()
            ));
        }
    }
    s
}

fn opt(v: Option<f64>) -> String {
    v.map(fmt_ms).unwrap_or_else(|| "—".into())
}

fn milestones_line(v: &Visit) -> String {
    let m = &v.milestones;
    let bytes: u64 = v.requests.iter().map(|r| r.encoded_bytes).sum();
    format!(
        "  {:<6} #{}: TTFB {}  FCP {}  LCP {}  load {}  ({} requests, {})\n",
        v.kind.name(),
        v.index,
        opt(m.ttfb_ms),
        opt(m.fcp_ms),
        opt(m.lcp_ms),
        opt(m.load_ms),
        v.requests.len(),
        fmt_bytes(bytes)
    )
}

/// One waterfall bar: queued ░, connection setup ▒, request and answer █.
fn bar(r: &Request, scale: f64) -> String {
    let col = |t: f64| ((t / scale).round().max(0.0) as usize).min(WIDTH);
    let p = &r.phases;
    let start = col(r.start_ms);
    let setup_at = r.start_ms + p.queued;
    let send_at = setup_at + p.setup();
    let end = col(r.end_ms).max(start + 1).min(WIDTH);
    let mut s = String::with_capacity(WIDTH * 3);
    for c in 0..WIDTH {
        let t = c as f64 * scale;
        s.push(if c < start || c >= end {
            ' '
        } else if t < setup_at && col(setup_at) > c {
            '░'
        } else if t < send_at && col(send_at) > c {
            '▒'
        } else {
            '█'
        });
    }
    s
}

/// The time a visit's waterfall spans, ms: to its last byte, LCP or load, whichever
/// came last (at least 1 ms).
pub fn span(v: &Visit) -> f64 {
    let m = &v.milestones;
    v.requests
        .iter()
        .map(|r| r.end_ms)
        .chain([m.lcp_ms, m.load_ms].into_iter().flatten())
        .filter(|t| t.is_finite())
        .fold(1.0, f64::max)
}

/// What a waterfall row says of how a request ended: "200 h2", "200 cache",
/// "blocked", "unfinished", "failed".
pub fn status(r: &Request) -> String {
    if r.blocked {
        "blocked".to_string()
    } else if r.error.starts_with("unfinished") {
        "unfinished".to_string()
    } else if !r.error.is_empty() {
        "failed".to_string()
    } else if r.from_cache {
        format!("{} cache", r.status)
    } else {
        format!("{} {}", r.status, r.protocol)
    }
}

/// The waterfall of one visit.
pub fn waterfall(v: &Visit) -> String {
    let m = &v.milestones;
    let span = span(v);
    let scale = span / WIDTH as f64;
    let mut out = format!(
        "\n  waterfall, {} visit #{} (0 .. {}; ░ queued  ▒ DNS/connect/TLS  █ request and answer; B render-blocking):\n",
        v.kind.name(),
        v.index,
        fmt_ms(span)
    );
    for r in v.requests.iter().take(MAX_LINES) {
        let status = status(r);
        out.push_str(&format!(
            "  {:>7} {:>8} │{}│ {} {:<13} {:<10} {}\n",
            fmt_ms(r.start_ms),
            fmt_ms((r.end_ms - r.start_ms).max(0.0)),
            bar(r, scale),
            if r.render_blocking == "blocking" {
                "B"
            } else {
                " "
            },
            status,
            r.resource_type.to_lowercase(),
            short_url(&r.url)
        ));
    }
    if v.requests.len() > MAX_LINES {
        out.push_str(&format!(
            "  … {} more requests\n",
            v.requests.len() - MAX_LINES
        ));
    }
    let mut marks = vec![' '; WIDTH];
    for (t, c) in [(m.fcp_ms, 'F'), (m.lcp_ms, 'L')] {
        if let Some(t) = t {
            let i = ((t / scale).round() as usize).min(WIDTH - 1);
            marks[i] = c;
        }
    }
    out.push_str(&format!(
        "  {:>7} {:>8} {}  F first contentful paint, L largest contentful paint\n",
        "",
        "",
        marks.into_iter().collect::<String>()
    ));
    out
}

/// The whole text of a page run.
pub fn render(run: &PageRun, origins: &[PageOrigin], findings: &[Finding]) -> String {
    let mut out = format!("{}\n\n", verdict(run));
    out.push_str(&format!(
        "  page {}  ({}; {} visit(s) each, {:.1} s)\n",
        run.url,
        if run.browser.is_empty() {
            "Chromium"
        } else {
            &run.browser
        },
        run.of(VisitKind::First).count(),
        run.elapsed_s
    ));
    for v in &run.visits {
        out.push_str(&milestones_line(v));
    }
    if let Some(why) = &run.stopped {
        out.push_str(&format!("  stopped early: {why}\n"));
    }
    if let Some(v) = run.median(VisitKind::First) {
        out.push_str(&waterfall(v));
        let blocked: Vec<&Request> = v.requests.iter().filter(|r| r.blocked).collect();
        if !blocked.is_empty() {
            out.push_str(&format!(
                "\n  not fetched ({} request(s) to origins not allowed; --allow-origin ORIGIN lets them through):\n",
                blocked.len()
            ));
            for r in blocked.iter().take(10) {
                out.push_str(&format!("    {}\n", r.url));
            }
        }
    }
    out.push_str(&origins_text(origins));
    out.push('\n');
    out.push_str(&crate::report::findings::render(findings));
    out
}

/// What an origin's probe said: why it could not be probed, else where the time
/// goes, else `none`.
pub fn origin_said(o: &PageOrigin, none: &str) -> String {
    match (&o.error, &o.summary) {
        (Some(e), _) => format!("not probed: {e}"),
        (None, Some(s)) => s.clone(),
        (None, None) => none.to_string(),
    }
}

/// The origins the first paint waited for, each with what its probe said.
pub fn origins_text(origins: &[PageOrigin]) -> String {
    if origins.is_empty() {
        return String::new();
    }
    let mut out = "\n  origins the first paint waited for, probed:\n".to_string();
    for o in origins {
        let said = origin_said(o, "measured, too little to say where the time goes");
        out.push_str(&format!(
            "    {} ({} {}): {said}\n",
            o.origin,
            o.resource_type.to_lowercase(),
            short_url(&o.url)
        ));
    }
    out
}
