//! The HTML report's section for one probe result: connection facts, httpstat-style
//! phase bars, the phase table (fresh connections with full handshakes, new
//! connections resuming TLS sessions, one reused connection), the samples by
//! percentile, and the response headers — escaped, as everything a server sent.

use serde_json::Value;

use super::charts::{self, Bar, Series, PALETTE};
use super::compare_text::fmt_value;
use super::html::{figure, table, value_text, ReportError};
use super::html_runs::{kv, sample_curve, text_at};
use super::rundata::{self, num, PHASES};

/// A probe series' phase medians (or another percentile) as bar segments.
pub fn phase_bar(result: &Value, series: &str, key: &str, label: String) -> Option<Bar> {
    let s = result.get(series)?;
    let segments: Vec<(String, f64)> = PHASES[..6]
        .iter()
        .filter_map(|p| num(s, &["phases_ms", p, key]).map(|v| (p.to_string(), v)))
        .collect();
    (!segments.is_empty()).then_some(Bar { label, segments })
}

pub(super) fn probe(out: &mut String, r: &Value) -> Result<(), ReportError> {
    let ms = |path: &[&str]| num(r, path).map(|v| fmt_value(v, "ms"));
    kv(
        out,
        vec![
            ("target", text_at(r, &["target"])),
            ("addresses", text_at(r, &["addresses"])),
            ("HTTP version", text_at(r, &["http_version"])),
            ("TLS", text_at(r, &["tls", "version"])),
            ("ALPN", text_at(r, &["tls", "alpn"])),
            ("TLS resumed", text_at(r, &["tls", "resumed"])),
            ("first request", ms(&["first_request", "total_ms"])),
            ("kernel RTT", ms(&["tcp", "rtt_ms"])),
            ("kernel min RTT", ms(&["tcp", "min_rtt_ms"])),
            ("retransmits", text_at(r, &["tcp", "total_retrans"])),
            (
                "server time p50",
                ms(&["server_time_ms", "p50"]).map(|v| match text_at(r, &["server_time_label"]) {
                    Some(l) => format!("{v} ({l})"),
                    None => v,
                }),
            ),
        ],
    );
    let bars: Vec<Bar> = [
        ("fresh", "p50"),
        ("fresh", "p99"),
        ("resumed", "p50"),
        ("resumed", "p99"),
        ("reused", "p50"),
        ("reused", "p99"),
    ]
    .iter()
    .filter_map(|(s, k)| phase_bar(r, s, k, format!("{s} {k}")))
    .collect();
    if !bars.is_empty() {
        figure(out, &charts::phase_bars(&bars)?);
    }
    let series_shown: Vec<&str> = ["fresh", "resumed", "reused"]
        .into_iter()
        .filter(|s| r.get(*s).is_some_and(|v| !v.is_null()))
        .collect();
    let mut rows = Vec::new();
    for phase in PHASES {
        let mut row = vec![phase.to_string()];
        for series in &series_shown {
            for k in ["p50", "p90", "p99"] {
                row.push(ms(&[series, "phases_ms", phase, k]).unwrap_or_default());
            }
        }
        if row.iter().skip(1).any(|c| !c.is_empty()) {
            rows.push(row);
        }
    }
    if !rows.is_empty() {
        let mut head = vec!["phase".to_string()];
        for series in &series_shown {
            head.extend(["p50", "p90", "p99"].map(|k| format!("{series} {k}")));
        }
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        table(out, "phases", &head, &rows);
        out.push_str(
            "<p>fresh: a new connection per request (on TLS a full handshake: what a curl \
                 loop or a first visit pays); resumed: a new connection resuming its TLS \
                 session (a returning visitor); reused: the next request over each \
                 fresh connection (one kept-alive connection over HTTP/3).</p>\n",
        );
    }
    let mut curves = Vec::new();
    for (i, (series, phase)) in [
        ("fresh", "ttfb"),
        ("fresh", "total"),
        ("resumed", "ttfb"),
        ("resumed", "total"),
        ("reused", "ttfb"),
        ("reused", "total"),
    ]
    .iter()
    .enumerate()
    {
        let samples = rundata::probe_samples(r, series, phase);
        let s = Series::new(
            format!("{series} {phase}"),
            PALETTE[i / 2],
            sample_curve(&samples),
        );
        curves.push(if i % 2 == 1 { s.dashed() } else { s });
    }
    if curves.iter().any(|c| !c.points.is_empty()) {
        figure(
            out,
            &charts::nines(&curves, "ms", "Probe samples by percentile")?,
        );
    }
    headers(out, r.get("headers"));
    Ok(())
}

/// The response headers, name and value escaped.
fn headers(out: &mut String, h: Option<&Value>) {
    let rows: Vec<Vec<String>> = match h {
        Some(Value::Object(m)) => m
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Array(vs) => vs.iter().map(|v| vec![k.clone(), value_text(v)]).collect(),
                v => vec![vec![k.clone(), value_text(v)]],
            })
            .collect(),
        Some(Value::Array(pairs)) => pairs
            .iter()
            .filter_map(|p| {
                let p = p.as_array()?;
                Some(vec![value_text(p.first()?), value_text(p.get(1)?)])
            })
            .collect(),
        _ => Vec::new(),
    };
    if !rows.is_empty() {
        out.push_str("<h4>Response headers</h4>\n");
        table(out, "headers", &["header", "value"], &rows);
    }
}
