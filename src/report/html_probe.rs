//! The HTML report's section for one probe result: connection facts, httpstat-style
//! phase bars, the phase table (fresh connections with full handshakes, new
//! connections resuming TLS sessions, one reused connection), the samples by
//! percentile, and the response headers — escaped, as everything a server sent.

use crate::probe::sample::{PhaseStats, SeriesSummary};
use crate::probe::ProbeResult;

use super::charts::{self, Bar, Series, PALETTE};
use super::compare_text::fmt_value;
use super::html::{figure, table, ReportError};
use super::html_runs::{kv, sample_curve, text};
use super::rundata::{self, PHASES};

/// A probe series by name (`fresh`, `resumed`, `reused`), when it was measured.
pub fn series<'a>(r: &'a ProbeResult, name: &str) -> Option<&'a SeriesSummary> {
    match name {
        "fresh" => Some(&r.fresh),
        "resumed" => r.resumed.as_ref(),
        _ => r.reused.as_ref(),
    }
}

/// A phase statistic by name (`p50`, `p90`, `p99`, …).
pub fn stat(s: &PhaseStats, key: &str) -> f64 {
    match key {
        "min" => s.min,
        "p50" => s.p50,
        "p90" => s.p90,
        "max" => s.max,
        "mean" => s.mean,
        _ => s.p99,
    }
}

/// A probe series' phase medians (or another percentile) as bar segments.
pub fn phase_bar(result: &ProbeResult, series_name: &str, key: &str, label: String) -> Option<Bar> {
    let s = series(result, series_name)?;
    let segments: Vec<(String, f64)> = PHASES[..6]
        .iter()
        .map(|p| (p.to_string(), stat(s.phases_ms.get(p), key)))
        .collect();
    Some(Bar { label, segments })
}

pub(super) fn probe(out: &mut String, r: &ProbeResult) -> Result<(), ReportError> {
    let ms = |v: Option<f64>| v.map(|v| fmt_value(v, "ms"));
    let tls = r.tls.as_ref();
    kv(
        out,
        vec![
            ("target", text(&r.target)),
            ("addresses", text(&r.addresses)),
            ("HTTP version", text(&r.http_version)),
            ("TLS", tls.and_then(|t| text(&t.version))),
            ("ALPN", tls.and_then(|t| text(&t.alpn))),
            ("TLS resumed", tls.and_then(|t| text(&t.resumed))),
            ("first request", ms(r.first_request.map(|f| f.total_ms))),
            ("kernel RTT", ms(r.tcp.map(|t| t.rtt_ms))),
            ("kernel min RTT", ms(r.tcp.map(|t| t.min_rtt_ms))),
            ("retransmits", r.tcp.and_then(|t| text(&t.total_retrans))),
            (
                "server time p50",
                ms(r.server_time_ms.map(|s| s.p50))
                    .map(|v| format!("{v} ({})", r.server_time_label)),
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
    let series_shown: Vec<(&str, &SeriesSummary)> = ["fresh", "resumed", "reused"]
        .into_iter()
        .filter_map(|s| Some((s, series(r, s)?)))
        .collect();
    let mut rows = Vec::new();
    for phase in PHASES {
        let mut row = vec![phase.to_string()];
        for (_, s) in &series_shown {
            for k in ["p50", "p90", "p99"] {
                row.push(fmt_value(stat(s.phases_ms.get(phase), k), "ms"));
            }
        }
        if row.iter().skip(1).any(|c| !c.is_empty()) {
            rows.push(row);
        }
    }
    if !rows.is_empty() {
        let mut head = vec!["phase".to_string()];
        for (series, _) in &series_shown {
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
        let samples = rundata::samples(r, series, phase);
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
    let rows: Vec<Vec<String>> = r
        .headers
        .iter()
        .map(|(k, v)| vec![k.clone(), v.clone()])
        .collect();
    if !rows.is_empty() {
        out.push_str("<h4>Response headers</h4>\n");
        table(out, "headers", &["header", "value"], &rows);
    }
    Ok(())
}
