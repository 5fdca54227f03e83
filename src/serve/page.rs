//! The page at `/`: each target's current verdict — the status, "where the time
//! goes", its findings — and the last changes. Server-side HTML, no script, every
//! text a server sent escaped as the report escapes it.

use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::redact::redact_urls;
use crate::report::html::esc;

use super::state::{failure, State};

/// A time as `2026-11-27 16:05:09Z`.
fn when(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    format!("{}Z", crate::units::utc(ms))
}

/// Each check's fresh TTFB median over the last day as a small inline SVG line,
/// its range written beside it; "—" before two checks.
fn chart(series: &std::collections::VecDeque<(SystemTime, f64)>) -> String {
    let (Some(first), Some(last)) = (series.front(), series.back()) else {
        return "—".into();
    };
    if series.len() < 2 {
        return "—".into();
    }
    let (w, hgt) = (240.0, 48.0);
    let span = last
        .0
        .duration_since(first.0)
        .unwrap_or_default()
        .as_secs_f64()
        .max(1e-9);
    let top = series.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9);
    let low = series.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let points: Vec<String> = series
        .iter()
        .map(|(t, v)| {
            let x = t.duration_since(first.0).unwrap_or_default().as_secs_f64() / span * w;
            let y = hgt - v / top * (hgt - 2.0) - 1.0;
            format!("{x:.1},{y:.1}")
        })
        .collect();
    format!(
        "<svg class=chart width={w} height={hgt} viewBox=\"0 0 {w} {hgt}\" role=img aria-label=\"fresh TTFB {low:.1} to {top:.1} ms\">\
         <polyline fill=none stroke=#36c stroke-width=1.5 points=\"{}\"/></svg><br><small>{low:.1} – {top:.1} ms, {} checks</small>",
        points.join(" "),
        series.len()
    )
}

/// The whole page.
pub fn render(state: &State) -> String {
    let mut h = String::from(
        "<!doctype html><html lang=en><head><meta charset=utf-8>\
         <meta http-equiv=refresh content=30><title>latscope serve</title><style>\
         body{font:15px/1.4 system-ui,sans-serif;margin:2em;max-width:70em}\
         table{border-collapse:collapse}td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\
         .ok{color:#070}.fail{color:#b00}.warn{color:#a60}.crit{color:#b00}.info{color:#555}\
         </style></head><body><h1>latscope serve</h1>",
    );
    if state.targets.is_empty() {
        h.push_str("<p>No targets are scheduled: give <code>--config FILE</code>. <code>/probe?target=URL</code> answers meanwhile.</p>");
    } else {
        h.push_str("<table id=targets><tr><th>target</th><th>status</th><th>where the time goes</th><th>findings</th><th>fresh TTFB, last day</th><th>last check</th></tr>");
        for (name, t) in &state.targets {
            let (status, class, summary, at) = match &t.last {
                None => (
                    "not checked yet".to_string(),
                    "info",
                    String::new(),
                    String::new(),
                ),
                Some(o) => {
                    let (status, class) = if o.success() {
                        let s = o
                            .result
                            .as_ref()
                            .ok()
                            .and_then(|c| c.probe.status)
                            .unwrap_or(0);
                        (format!("{s} OK"), "ok")
                    } else {
                        (format!("failing: {}", redact_urls(&failure(o))), "fail")
                    };
                    let summary = o
                        .result
                        .as_ref()
                        .ok()
                        .and_then(|c| c.summary.clone())
                        .unwrap_or_default();
                    (status, class, summary, when(o.at))
                }
            };
            let _ = write!(
                h,
                "<tr class=target><td><b>{}</b><br><small>{} · {} every {}</small></td><td class={class}>{}</td><td>{}</td><td>",
                esc(name),
                esc(&redact_urls(&t.target.target.url)),
                t.target.check.name(),
                humantime::format_duration(t.target.interval),
                esc(&status),
                esc(&summary),
            );
            if t.active.is_empty() {
                h.push_str("none");
            }
            for (id, (sev, title)) in &t.active {
                let _ = write!(
                    h,
                    "<div class={sev}><b>{sev}</b> <code>{}</code> {}</div>",
                    esc(id),
                    esc(title)
                );
            }
            let _ = write!(
                h,
                "</td><td>{}</td><td>{at}<br><small>{} checks, {} failed</small></td></tr>",
                chart(&t.series),
                t.checks,
                t.failures
            );
        }
        h.push_str("</table>");
    }
    h.push_str("<h2>Last changes</h2>");
    if state.events.is_empty() {
        h.push_str("<p id=changes>None yet: a change is a finding that appears or goes away, or a target that starts failing or recovers, each confirmed by two checks in a row.</p>");
    } else {
        h.push_str(
            "<table id=changes><tr><th>when</th><th>target</th><th>change</th><th></th></tr>",
        );
        for c in state.events.iter().rev().take(50) {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{} <code>{}</code></td><td>{}</td></tr>",
                when(c.at),
                esc(&c.target),
                c.what.replace('_', " "),
                esc(&c.id),
                esc(&redact_urls(&c.detail))
            );
        }
        h.push_str("</table>");
    }
    h.push_str("<p><small><a href=/metrics>/metrics</a> · <code>/probe?target=URL&amp;module=http_2xx</code> · <code>POST /-/reload</code></small></p></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::finding::{Category, Finding, Severity};
    use crate::serve::check::{Checked, Outcome};

    /// Whatever a server or a targets file chose — a target's name, a finding's title,
    /// "where the time goes", a failure — is escaped on the page, never markup; a
    /// URL's secret query value is redacted.
    #[test]
    fn the_page_escapes_what_servers_and_files_chose() {
        let c = crate::config::serve::ServeConfig::parse(
            "[[target]]\nurl = \"http://127.0.0.1:9/?token=hunter2\"\nname = \"<script>x</script>\"\n\
             [[target]]\nurl = \"http://127.0.0.1:9/b\"\nname = \"down\"\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let mut state = State::default();
        state.set_targets(&c.targets);
        let checked = Checked {
            probe: crate::probe::ProbeResult {
                status: Some(200),
                ..Default::default()
            },
            findings: vec![Finding::new(
                "cdn-cost",
                Category::Cache,
                Severity::Warn,
                "<img src=x onerror=alert(1)>".into(),
            )],
            summary: Some("TTFB <b>1 ms</b>".into()),
            diagnosis: None,
        };
        let ok = || Outcome {
            at: SystemTime::now(),
            duration: std::time::Duration::from_millis(3),
            result: Ok(checked.clone()),
        };
        state.record("<script>x</script>", ok());
        state.record(
            "down",
            Outcome {
                at: SystemTime::now(),
                duration: std::time::Duration::from_millis(3),
                result: Err("refused <iframe>".into()),
            },
        );
        let page = render(&state);
        for raw in ["<script>x", "<img src=x", "<b>1 ms", "<iframe>", "hunter2"] {
            assert!(!page.contains(raw), "{raw} on the page:\n{page}");
        }
        for escaped in ["&lt;script&gt;x", "&lt;img src=x", "&lt;b&gt;1 ms"] {
            assert!(page.contains(escaped), "{escaped} not on the page:\n{page}");
        }
    }
}
