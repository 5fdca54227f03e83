//! The HTML report's section for a diagnose run: one section per URL, verdict first —
//! "where the time goes" and the findings (`html_verdict`) — then the details: the
//! probe (`html_probe`), the cache audit, the origin probe and the load ramp with its
//! timeline (`html_runs`). Everything from the run is escaped.

use crate::diagnose::diagnosis::ProtocolRow;
use crate::record::RunRecord;
use crate::schema::diagnose::{CacheSection, DiagnoseEntry, Http3Doc};
use crate::schema::{DiagnoseDoc, DiagnoseRun, LoadPart, RampDoc, Summary};

use super::compare_text::fmt_value;
use super::html::{esc, table, ReportError};
use super::html_runs::{kv, load_section, text};
use super::html_verdict;
use super::rundata::{self, Histograms};

/// A diagnose run, one section per URL in order: the verdict ("where the time goes",
/// the findings), then the details (probe phases, cache audit, origin, load ramp and
/// timeline). The run's histograms and timeline belong to the first URL whose ramp
/// ran; another URL's ramp shows its steps.
pub(super) fn sections(
    out: &mut String,
    run: &RunRecord,
    hist: &Histograms,
) -> Result<(), ReportError> {
    let Some(doc) = rundata::doc(run) else {
        return Ok(());
    };
    let with_timeline = doc.load().and_then(LoadPart::ramp);
    let all: Vec<Result<&DiagnoseDoc, (&str, &str)>> = match &doc {
        Summary::Diagnose(DiagnoseRun::One(d)) => vec![Ok(&**d)],
        Summary::Diagnose(DiagnoseRun::Several(s)) => s
            .results
            .iter()
            .map(|e| match e {
                DiagnoseEntry::Diagnosed(d) => Ok(&**d),
                DiagnoseEntry::Failed { url, error } => Err((url.as_str(), error.as_str())),
            })
            .collect(),
        _ => Vec::new(),
    };
    for (i, d) in all.iter().enumerate() {
        let anchor = html_verdict::url_anchor(run, i);
        let url = match d {
            Ok(d) => d.target.as_str(),
            Err((url, _)) => *url,
        };
        let url = match url {
            "" => format!("URL {}", i + 1),
            u => u.to_string(),
        };
        out.push_str(&format!(
            "<section class=\"url\" id=\"{}\"><h3>{}{}</h3>\n",
            esc(&anchor),
            if all.len() > 1 {
                format!("{} of {}: ", i + 1, all.len())
            } else {
                String::new()
            },
            esc(&url)
        ));
        let d = match d {
            Ok(d) => d,
            Err((_, error)) => {
                out.push_str(&format!(
                    "<p class=\"note\">Not measured: {}</p></section>\n",
                    esc(error)
                ));
                continue;
            }
        };
        html_verdict::where_the_time_goes(out, &d.probe, d.summary.as_deref());
        html_verdict::findings(out, &d.findings, &format!("{anchor}-findings"));
        out.push_str("<div class=\"details\"><h4>Details</h4>\n");
        out.push_str("<h4>Probe</h4>\n");
        super::html_probe::probe(out, &d.probe)?;
        if let Some(rows) = &d.protocols {
            protocols(out, d.http3.as_ref(), rows);
        }
        cache_audit(out, &d.cache);
        if let Some(o) = &d.origin {
            out.push_str("<h4>Origin (straight, --origin)</h4>\n");
            super::html_probe::probe(out, o)?;
        }
        match &d.load {
            Some(load) if with_timeline.is_some_and(|w| std::ptr::eq(w, load)) => {
                load_section(out, run, LoadPart::Ramp(load), hist)?;
            }
            Some(load) => {
                out.push_str("<h3>Load</h3>\n");
                ramp_table(out, load);
            }
            None => {
                if let Some(reason) = &d.skipped {
                    out.push_str(&format!(
                        "<p class=\"note\">Load: skipped ({}).</p>\n",
                        esc(reason)
                    ));
                }
            }
        }
        out.push_str("</div></section>\n");
    }
    Ok(())
}

/// h1, h2 and h3 side by side (the `protocols` array of the diagnose JSON), when
/// HTTP/3 was offered or asked for.
fn protocols(out: &mut String, http3: Option<&Http3Doc>, rows: &[ProtocolRow]) {
    let offer = http3
        .and_then(|h| h.https_rr.as_ref())
        .map(|r| format!("HTTPS record: {r}"))
        .or_else(|| {
            http3
                .and_then(|h| h.alt_svc.as_ref())
                .map(|a| format!("Alt-Svc: {a}"))
        })
        .unwrap_or_else(|| "--http3".into());
    out.push_str(&format!(
        "<h4>Protocols ({})</h4>\n<p class=\"note\">fresh: a new connection with a full \
         handshake; over HTTP/3 connect is QUIC's handshake (transport + TLS) and min rtt \
         QUIC's own estimate.</p>\n",
        esc(&offer)
    ));
    let ms = |v: Option<f64>| v.map(|v| fmt_value(v, "ms")).unwrap_or_else(|| "-".into());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.http_version.clone(),
                ms(r.fresh_ttfb_ms),
                ms(r.resumed_ttfb_ms),
                ms(r.reused_ttfb_ms),
                ms(r.connect_ms),
                ms(r.tls_ms),
                ms(r.min_rtt_ms),
                r.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        out,
        "protocols",
        &[
            "protocol",
            "fresh TTFB p50",
            "resumed",
            "reused",
            "connect",
            "tls",
            "min rtt",
            "error",
        ],
        &body,
    );
}

/// The cache audit of a diagnosis (the `cache` object of the diagnose JSON).
fn cache_audit(out: &mut String, c: &CacheSection) {
    out.push_str("<h4>Cache audit</h4>\n");
    let (c, redirects) = match c {
        CacheSection::Audited {
            audit, redirects, ..
        } => (audit, redirects),
        CacheSection::Failed { error } => {
            if let Some(e) = error {
                out.push_str(&format!("<p class=\"note\">Not run: {}</p>\n", esc(e)));
            }
            return;
        }
    };
    let defaults = c
        .default_caches
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let conditional = |v: &Option<crate::schema::diagnose::ConditionalDoc>| {
        v.as_ref().map(|v| {
            format!(
                "{} · {} bytes · {}",
                v.status,
                v.body_bytes,
                fmt_value(v.time_ms, "ms")
            )
        })
    };
    kv(
        out,
        vec![
            ("status", text(&c.status)),
            (
                "shared cache",
                Some(format!(
                    "RFC 9111: {}",
                    super::diagnose::rfc_verdict(
                        c.shared_cache.rfc_storable,
                        c.shared_cache.revalidate_every_use,
                        c.shared_cache.fresh_for_s,
                        c.shared_cache.heuristic,
                        &c.shared_cache.reasons,
                    )
                )),
            ),
            (
                "common caches refuse it",
                (!c.unstorable.is_empty()).then(|| c.unstorable.join(", ")),
            ),
            ("by default", Some(defaults)),
            (
                "freshness",
                text(&c.freshness_s).map(|f| format!("{f} s from {}", c.freshness_source)),
            ),
            ("ETag", text(&c.etag)),
            ("Last-Modified", text(&c.last_modified)),
            ("If-None-Match", conditional(&c.if_none_match)),
            ("If-Modified-Since", conditional(&c.if_modified_since)),
            ("repeated GETs", text(&c.repeats)),
        ],
    );
    let rows: Vec<Vec<String>> = redirects
        .iter()
        .map(|h| {
            vec![
                h.status.to_string(),
                h.location.clone(),
                fmt_value(h.time_ms, "ms"),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(out, "redirects", &["redirect", "location", "time"], &rows);
    }
}

/// The steps of a diagnose ramp (`load.ramp`).
pub(super) fn ramp_table(out: &mut String, load: &RampDoc) {
    let rows: Vec<Vec<String>> = load
        .ramp
        .iter()
        .map(|s| {
            vec![
                fmt_value(f64::from(s.connections), ""),
                fmt_value(s.rps, "req/s"),
                fmt_value(s.p50_ms, "ms"),
                fmt_value(s.p99_ms, "ms"),
                fmt_value(s.requests as f64, ""),
                fmt_value(s.errors as f64, ""),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("<h4>Load ramp</h4>\n");
        table(
            out,
            "ramp",
            &["connections", "req/s", "p50", "p99", "requests", "errors"],
            &rows,
        );
    }
}
