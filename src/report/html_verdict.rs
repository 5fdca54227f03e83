//! The verdict of the HTML report, which leads each URL's section (as Lighthouse and
//! REDbot do): "where the time goes" as one stacked bar of a request's phases, then
//! the findings — most severe first, within a severity the largest saving first —
//! each with its saving beside the severity; the details follow (`html_runs`). Also
//! the table of contents of multi-URL and multi-run reports.
//!
//! Everything from a run goes through [`esc`]; the bar is plain HTML with inline
//! styles (the page's CSP allows no script, and needs none).

use crate::diagnose::finding::basis_phrase;
use crate::diagnose::{Finding, Severity};
use crate::probe::ProbeResult;
use crate::record::RunRecord;
use crate::schema::diagnose::DiagnoseEntry;
use crate::schema::{DiagnoseRun, Summary};
use crate::units::fmt_ms;

use super::compare_text::letter;
use super::html::{esc, table, value_text};
use super::html_probe::series as probe_series;
use super::html_runs::text;
use super::rundata;

/// One part of the "where the time goes" bar: name, ms, colour.
struct Part {
    name: String,
    ms: f64,
    color: &'static str,
}

/// The series the bar shows, and how the caption names it: fresh connections (what
/// a new visitor pays), else the reused connection.
const BAR_SERIES: [(&str, &str); 2] = [
    ("fresh", "a fresh connection (what a new visitor pays)"),
    ("reused", "a reused, kept-alive connection"),
];

/// The parts of a request of `series`, split as the "where the time goes" paragraph
/// splits its TTFB (`diagnose::summary`): DNS, TCP connect and TLS p50, then the rest
/// of the TTFB p50 as one network round trip (the kernel's min RTT) and the server's
/// part (named as the probe names it: "server", "edge → origin + server" …); then the
/// transfer of the body (receive p50). Without a kernel RTT the rest is one part.
fn parts(result: &ProbeResult, series: &str) -> Vec<Part> {
    let s = probe_series(result, series);
    let p50 = |phase: &str| s.map(|s| s.phases_ms.get(phase).p50).unwrap_or(0.0);
    let before = p50("dns") + p50("connect") + p50("tls");
    let ttfb = p50("ttfb").max(before + p50("send") + p50("wait"));
    let wait = (ttfb - before).max(0.0);
    let label = server_label(result);
    let rtt = result.tcp.map(|t| t.min_rtt_ms).filter(|r| *r > 0.0);
    let mut v = vec![
        Part {
            name: "DNS".into(),
            ms: p50("dns"),
            color: "#8c6d31",
        },
        Part {
            name: "TCP connect".into(),
            ms: p50("connect"),
            color: "#1f77b4",
        },
        Part {
            name: "TLS handshake".into(),
            ms: p50("tls"),
            color: "#9467bd",
        },
    ];
    match rtt {
        Some(r) => {
            let trip = r.min(wait);
            v.push(Part {
                name: "network round trip".into(),
                ms: trip,
                color: "#17becf",
            });
            v.push(Part {
                name: label,
                ms: wait - trip,
                color: "#d62728",
            });
        }
        None => v.push(Part {
            name: format!("request round trip + {label}"),
            ms: wait,
            color: "#d62728",
        }),
    }
    v.push(Part {
        name: "transfer (first → last byte)".into(),
        ms: p50("receive"),
        color: "#2ca02c",
    });
    // What would show as "0.00 ms" is left out.
    v.retain(|p| p.ms.is_finite() && p.ms >= 0.005);
    v
}

/// The transfer on the series the bar does not show, when it is not the bar's: at
/// least twice the bar's and 1 ms more (a reused connection that waits 46 ms for the
/// body while a fresh one takes 0.04 ms — delayed ACKs, a server flushing late).
fn other_transfer(result: &ProbeResult, shown: &str) -> Option<String> {
    let (other, what) = BAR_SERIES.iter().find(|(s, _)| *s != shown)?;
    let receive = |series: &str| {
        probe_series(result, series)
            .filter(|s| s.count > 0)
            .map(|s| (s.phases_ms.get("receive").p50, s.count))
    };
    let (here, _) = receive(shown)?;
    let (there, count) = receive(other)?;
    let differs = (there >= 2.0 * here || here >= 2.0 * there) && (there - here).abs() >= 1.0;
    differs.then(|| {
        format!(
            "On {what} the transfer (first → last byte) took {} (p50 over {count} requests), \
             not {}.",
            fmt_ms(there),
            fmt_ms(here)
        )
    })
}

/// How the probe names the server's part ("server" when it does not say).
fn server_label(result: &ProbeResult) -> String {
    match result.server_time_label.as_str() {
        "" => "server".into(),
        l => l.to_string(),
    }
}

/// "Where the time goes" for one probe result: the stacked bar, the caption that says
/// which series it is, a legend with each part's time and share, and the summary
/// paragraph when there is one.
pub fn where_the_time_goes(out: &mut String, result: &ProbeResult, summary: Option<&str>) {
    out.push_str("<div class=\"where\"><h4>Where the time goes</h4>\n");
    let shown = BAR_SERIES.iter().find_map(|(series, what)| {
        let count = probe_series(result, series).map_or(0.0, |s| s.count as f64);
        let parts = parts(result, series);
        (count > 0.0 && !parts.is_empty()).then_some((*series, *what, count, parts))
    });
    if let Some((series, what, count, parts)) = shown {
        let sum: f64 = parts.iter().map(|p| p.ms).sum();
        out.push_str(&format!(
            "<div class=\"bar\" role=\"img\" aria-label=\"{}\" data-series=\"{series}\">",
            esc(&format!("a request on {what}: {}", fmt_ms(sum)))
        ));
        for p in &parts {
            out.push_str(&format!(
                "<span style=\"width:{:.2}%;background:{}\" title=\"{}\"></span>",
                100.0 * p.ms / sum,
                p.color,
                esc(&format!("{} {}", p.name, fmt_ms(p.ms)))
            ));
        }
        out.push_str("</div>\n<ul class=\"legend\">");
        for p in &parts {
            out.push_str(&format!(
                "<li><span class=\"swatch\" style=\"background:{}\"></span>{} {} ({:.0} %)</li>",
                p.color,
                esc(&p.name),
                esc(&fmt_ms(p.ms)),
                100.0 * p.ms / sum
            ));
        }
        out.push_str("</ul>\n");
        out.push_str(&format!(
            "<p class=\"note\" title=\"the network round trip is the kernel's minimum RTT; \
             the rest of the TTFB after the handshakes is the {}\">A request on {what}: \
             TTFB and phase p50s over {count:.0} requests, {} in all.</p>\n",
            esc(&server_label(result)),
            esc(&fmt_ms(sum)),
        ));
        if let Some(note) = other_transfer(result, series) {
            out.push_str(&format!(
                "<p class=\"note other-series\">{}</p>\n",
                esc(&note)
            ));
        }
    }
    if let Some(s) = summary {
        out.push_str(&format!("<p class=\"summary\">{}</p>\n", esc(s)));
    }
    out.push_str("</div>\n");
}

/// Findings in the verdict's order: most severe first; within a severity the largest
/// `saving_ms` first, unpriced ones after; otherwise as stored (rule order).
pub fn ordered(list: &[Finding]) -> Vec<&Finding> {
    let mut v: Vec<&Finding> = list.iter().collect();
    v.sort_by(|a, b| {
        let s = |f: &Finding| f.saving_ms.unwrap_or(f64::NEG_INFINITY);
        b.severity
            .cmp(&a.severity)
            .then_with(|| s(b).total_cmp(&s(a)))
    });
    v
}

/// The saving of a stored finding as a short badge ("saves ≈40.4 ms") and a phrase
/// ("of 82.1 ms (49 %) per request").
fn saving(f: &Finding) -> Option<(String, String)> {
    let s = f.saving_ms?;
    let mut rest = String::new();
    if let Some(of) = f.saving_of_ms.filter(|o| *o > 0.0) {
        rest.push_str(&format!("of {} ({:.0} %)", fmt_ms(of), 100.0 * s / of));
    }
    if let Some(b) = &f.saving_basis {
        if !rest.is_empty() {
            rest.push(' ');
        }
        rest.push_str(basis_phrase(b));
    }
    Some((format!("saves ≈{}", fmt_ms(s)), rest))
}

/// The findings block: a `div.findings` with `id`, the order stated, each finding with
/// severity, saving, id, category, title, evidence and advice.
pub fn findings(out: &mut String, list: &[Finding], id: &str) {
    out.push_str(&format!(
        "<div class=\"findings\" id=\"{}\"><h4>Findings <span class=\"note\">(most \
         severe first; within a severity, the largest saving first)</span></h4>\n",
        esc(id)
    ));
    if list.is_empty() {
        out.push_str("<p class=\"note\">No findings.</p></div>\n");
        return;
    }
    for f in ordered(list) {
        let severity = text(&f.severity).unwrap_or_default();
        let class = match severity.as_str() {
            "crit" | "warn" | "info" => severity.as_str(),
            _ => "",
        };
        let (badge, phrase) = match saving(f) {
            Some((badge, phrase)) => (
                format!(" <span class=\"saving\">{}</span>", esc(&badge)),
                phrase,
            ),
            None => (String::new(), String::new()),
        };
        out.push_str(&format!(
            "<div class=\"finding {class}\"><span class=\"sev\">{}</span>{badge} \
             <span class=\"id\">{}</span> <span class=\"cat\">({})</span>\
             <p class=\"title\">{}</p>\n",
            esc(&severity),
            esc(&f.id),
            esc(&text(&f.category).unwrap_or_default()),
            esc(&f.title)
        ));
        if !badge.is_empty() {
            out.push_str(&format!(
                "<p class=\"saving-of\">Fixing it {} {}.</p>\n",
                esc(&saving(f).map(|b| b.0).unwrap_or_default()),
                esc(&phrase)
            ));
        }
        for a in &f.advice_stack {
            out.push_str(&format!(
                "<p class=\"advice stack\"><b>{}</b>: {} <span class=\"note\">({})</span></p>\n",
                esc(&a.name),
                esc(&a.advice),
                esc(&a.source)
            ));
        }
        if !f.advice.is_empty() {
            out.push_str(&format!("<p class=\"advice\">{}</p>\n", esc(&f.advice)));
        }
        // Evidence stays JSON: each rule names its own numbers (free-form by design).
        let rows: Vec<Vec<String>> = f
            .evidence
            .iter()
            .map(|(k, v)| vec![k.clone(), value_text(v)])
            .collect();
        if !rows.is_empty() {
            out.push_str("<details><summary>evidence</summary>");
            table(out, "kv evidence", &["evidence", "value"], &rows);
            out.push_str("</details>\n");
        }
        out.push_str("</div>\n");
    }
    out.push_str("</div>\n");
}

/// The anchor of a run's section.
pub fn run_anchor(run: &RunRecord) -> String {
    format!("run-{}", run.id)
}

/// The anchor of URL `i` (0-based) of a run.
pub fn url_anchor(run: &RunRecord, i: usize) -> String {
    format!("run-{}-url-{}", run.id, i + 1)
}

/// The URLs a run holds, as (label, findings) — a diagnose run's diagnoses, a URL
/// that was not measured with none; no entry for a run of another kind.
fn entries(run: &RunRecord) -> Vec<(String, Vec<Finding>)> {
    let Some(Summary::Diagnose(d)) = rundata::doc(run) else {
        return Vec::new();
    };
    match d {
        DiagnoseRun::One(d) => vec![(d.target, d.findings)],
        DiagnoseRun::Several(s) => s
            .results
            .into_iter()
            .map(|e| match e {
                DiagnoseEntry::Diagnosed(d) => (d.target, d.findings),
                DiagnoseEntry::Failed { url, .. } => (url, Vec::new()),
            })
            .collect(),
    }
}

/// What a run's heading names: its target, or "of N URLs" for a diagnosis of
/// several (each has its own section, and the run list names them all).
pub fn run_heading_target(run: &RunRecord) -> String {
    match entries(run).len() {
        n if n > 1 => format!("of {n} URLs"),
        _ => run.target.clone(),
    }
}

/// "2 warn, 1 info" (or "no findings").
fn tally(findings: &[Finding]) -> String {
    let n = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let parts: Vec<String> = [
        (Severity::Crit, "crit"),
        (Severity::Warn, "warn"),
        (Severity::Info, "info"),
    ]
    .iter()
    .filter(|(s, _)| n(*s) > 0)
    .map(|(s, name)| format!("{} {name}", n(*s)))
    .collect();
    if parts.is_empty() {
        "no findings".into()
    } else {
        parts.join(", ")
    }
}

/// Whether the report needs a table of contents: several runs, or a run of several
/// URLs.
pub fn wants_toc(runs: &[RunRecord]) -> bool {
    runs.len() > 1 || runs.iter().any(|r| entries(r).len() > 1)
}

/// The table of contents: each run, and under a diagnose run each URL with its
/// findings counted by severity, linked to their sections; then the overlay of
/// several runs, which follows them.
pub fn toc(out: &mut String, runs: &[RunRecord]) {
    out.push_str("<nav class=\"toc\"><h2>Contents</h2><ol>\n");
    for (i, run) in runs.iter().enumerate() {
        out.push_str(&format!(
            "<li><a href=\"#{}\">{} · {} · {}</a>",
            esc(&run_anchor(run)),
            letter(i),
            esc(&super::rundata::run_name(run)),
            esc(&run.kind)
        ));
        let urls = entries(run);
        if !urls.is_empty() {
            out.push_str("<ol>");
            for (j, (url, findings)) in urls.iter().enumerate() {
                out.push_str(&format!(
                    "<li><a href=\"#{}\">{}</a> — {}</li>",
                    esc(&url_anchor(run, j)),
                    esc(url),
                    esc(&tally(findings))
                ));
            }
            out.push_str("</ol>");
        }
        out.push_str("</li>\n");
    }
    if runs.len() > 1 {
        out.push_str("<li><a href=\"#overlay\">All runs overlaid</a></li>\n");
    }
    out.push_str("</ol></nav>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The bar of a fresh request behind a 40 ms RTT, split as the summary splits it:
    /// connect 40.4 ms, then TTFB 81.2 − 40.4 = 40.8 ms as a 40.2 ms round trip and
    /// 0.60 ms of server, 0.1 ms of transfer; the caption names the series; what a
    /// server sent is escaped.
    #[test]
    fn bar_splits_the_wait_and_names_the_series() {
        let phases = |c: f64, w: f64| {
            json!({"dns": {"p50": 0.0}, "connect": {"p50": c}, "tls": {"p50": 0.0},
                "send": {"p50": 0.1}, "wait": {"p50": w}, "receive": {"p50": 0.1},
                "ttfb": {"p50": c + w + 0.2}})
        };
        let r = json!({"fresh": {"count": 5, "phases_ms": phases(40.4, 40.6)},
            "reused": {"count": 5, "phases_ms": phases(0.0, 40.6)},
            "tcp": {"min_rtt_ms": 40.2}, "server_time_label": "server"});
        let r: ProbeResult = serde_json::from_value(r).unwrap();
        let mut out = String::new();
        where_the_time_goes(&mut out, &r, Some("TTFB <b>81 ms</b>"));
        assert!(out.contains("data-series=\"fresh\""), "{out}");
        assert!(out.contains("TCP connect 40.4 ms (50 %)"), "{out}");
        assert!(out.contains("network round trip 40.2 ms"), "{out}");
        assert!(out.contains("server 0.60 ms"), "{out}");
        assert!(
            out.contains("a fresh connection (what a new visitor pays)"),
            "{out}"
        );
        assert!(out.contains("TTFB &lt;b&gt;81 ms&lt;/b&gt;"), "{out}");
        assert!(!out.contains("DNS"), "a zero part is left out: {out}");
        assert!(!out.contains("other-series"), "the same transfer: {out}");
    }

    /// One truth per number, labelled with its series (issue 37): the bar shows a
    /// fresh connection's 0.04 ms transfer; reused requests that waited 46 ms for
    /// their body say so under it.
    #[test]
    fn a_different_transfer_on_the_other_series_is_said() {
        let phases = |receive: f64| {
            json!({"connect": {"p50": 0.1}, "send": {"p50": 0.01}, "wait": {"p50": 0.2},
                "receive": {"p50": receive}, "ttfb": {"p50": 0.3}})
        };
        let r = json!({"fresh": {"count": 10, "phases_ms": phases(0.04)},
            "reused": {"count": 10, "phases_ms": phases(46.0)}});
        let r: ProbeResult = serde_json::from_value(r).unwrap();
        let mut out = String::new();
        where_the_time_goes(&mut out, &r, None);
        assert!(out.contains("data-series=\"fresh\""), "{out}");
        assert!(
            out.contains("On a reused, kept-alive connection the transfer (first → last byte) took 46.0 ms (p50 over 10 requests), not 0.04 ms."),
            "{out}"
        );
    }

    /// Findings order: crit, then warn by saving (40 before 2, unpriced last), then
    /// info; the saving shows beside the severity with its share and basis.
    #[test]
    fn findings_in_verdict_order_with_savings() {
        let f = |id: &str, sev: &str, saving: Option<f64>| {
            json!({"id": id, "category": "connection", "severity": sev, "title": id,
                "evidence": {}, "advice": "", "saving_ms": saving,
                "saving_basis": saving.map(|_| "per request"),
                "saving_of_ms": saving.map(|_| 82.0)})
        };
        let list: Vec<Finding> = [
            f("w-none", "warn", None),
            f("i-big", "info", Some(70.0)),
            f("w-small", "warn", Some(2.0)),
            f("c", "crit", None),
            f("w-big", "warn", Some(40.0)),
        ]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
        let mut out = String::new();
        findings(&mut out, &list, "x-findings");
        let pos = |id: &str| {
            out.find(&format!("<span class=\"id\">{id}</span>"))
                .unwrap()
        };
        assert!(pos("c") < pos("w-big"));
        assert!(pos("w-big") < pos("w-small"));
        assert!(pos("w-small") < pos("w-none"));
        assert!(pos("w-none") < pos("i-big"));
        assert!(
            out.contains(
                "<span class=\"sev\">warn</span> <span class=\"saving\">saves ≈40.0 ms</span>"
            ),
            "{out}"
        );
        assert!(out.contains("of 82.0 ms (49 %) per request"), "{out}");
    }
}
