//! The HTML report's section for a diagnose run: one section per URL, verdict first —
//! "where the time goes" and the findings (`html_verdict`) — then the details: the
//! probe (`html_probe`), the cache audit, the origin probe and the load ramp with its
//! timeline (`html_runs`). Everything from the run is escaped.

use serde_json::Value;

use crate::record::RunRecord;

use super::compare_text::fmt_value;
use super::html::{esc, table, value_text, ReportError};
use super::html_runs::{kv, load_section, text_at};
use super::html_verdict;
use super::rundata::{self, num, Histograms};

/// A diagnose run, one section per URL in order: the verdict ("where the time goes",
/// the findings), then the details (probe phases, cache audit, origin, load ramp and
/// timeline). The run's histograms and timeline belong to the first URL whose ramp
/// ran; another URL's ramp shows its steps.
pub(super) fn sections(
    out: &mut String,
    run: &RunRecord,
    hist: &Histograms,
) -> Result<(), ReportError> {
    let with_timeline = rundata::load_summary(run);
    let all = rundata::diagnoses(run);
    for (i, d) in all.iter().enumerate() {
        let anchor = html_verdict::url_anchor(run, i);
        let url = text_at(d, &["target"])
            .or_else(|| text_at(d, &["url"]))
            .unwrap_or_else(|| format!("URL {}", i + 1));
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
        if let Some(e) = d.get("error") {
            out.push_str(&format!(
                "<p class=\"note\">Not measured: {}</p></section>\n",
                esc(&value_text(e))
            ));
            continue;
        }
        let probe = d.get("probe").filter(|p| p.is_object());
        let summary = d.get("summary").and_then(Value::as_str);
        match probe {
            Some(p) => html_verdict::where_the_time_goes(out, p, summary),
            None => {
                if let Some(s) = summary {
                    out.push_str(&format!("<p class=\"summary\">{}</p>\n", esc(s)));
                }
            }
        }
        let list = d
            .get("findings")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        html_verdict::findings(out, &list, &format!("{anchor}-findings"));
        out.push_str("<div class=\"details\"><h4>Details</h4>\n");
        if let Some(p) = probe {
            out.push_str("<h4>Probe</h4>\n");
            super::html_probe::probe(out, p)?;
        }
        if let Some(rows) = d.get("protocols").and_then(Value::as_array) {
            protocols(out, d, rows);
        }
        if let Some(c) = d.get("cache").filter(|c| c.is_object()) {
            cache_audit(out, c);
        }
        if let Some(o) = d.get("origin").filter(|o| o.is_object()) {
            out.push_str("<h4>Origin (straight, --origin)</h4>\n");
            super::html_probe::probe(out, o)?;
        }
        match d.get("load").filter(|l| l.is_object()) {
            Some(load) if with_timeline.is_some_and(|w| std::ptr::eq(w, load)) => {
                load_section(out, run, load, hist)?;
            }
            Some(load) => {
                out.push_str("<h3>Load</h3>\n");
                ramp_table(out, load);
            }
            None => {
                if let Some(reason) = d.get("skipped").filter(|r| !r.is_null()) {
                    out.push_str(&format!(
                        "<p class=\"note\">Load: skipped ({}).</p>\n",
                        esc(&value_text(reason))
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
fn protocols(out: &mut String, d: &Value, rows: &[Value]) {
    let offer = text_at(d, &["http3", "https_rr"])
        .map(|r| format!("HTTPS record: {r}"))
        .or_else(|| text_at(d, &["http3", "alt_svc"]).map(|a| format!("Alt-Svc: {a}")))
        .unwrap_or_else(|| "--http3".into());
    out.push_str(&format!(
        "<h4>Protocols ({})</h4>\n<p class=\"note\">fresh: a new connection with a full \
         handshake; over HTTP/3 connect is QUIC's handshake (transport + TLS) and min rtt \
         QUIC's own estimate.</p>\n",
        esc(&offer)
    ));
    let ms = |r: &Value, k: &str| {
        r.get(k)
            .and_then(Value::as_f64)
            .map(|v| fmt_value(v, "ms"))
            .unwrap_or_else(|| "-".into())
    };
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![text_at(r, &["http_version"]).unwrap_or_default()];
            for k in [
                "fresh_ttfb_ms",
                "resumed_ttfb_ms",
                "reused_ttfb_ms",
                "connect_ms",
                "tls_ms",
                "min_rtt_ms",
            ] {
                row.push(ms(r, k));
            }
            row.push(text_at(r, &["error"]).unwrap_or_default());
            row
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
fn cache_audit(out: &mut String, c: &Value) {
    out.push_str("<h4>Cache audit</h4>\n");
    if let Some(e) = c.get("error").filter(|e| !e.is_null()) {
        out.push_str(&format!(
            "<p class=\"note\">Not run: {}</p>\n",
            esc(&value_text(e))
        ));
        return;
    }
    let defaults = c.get("default_caches").and_then(Value::as_object).map(|m| {
        m.iter()
            .map(|(k, v)| format!("{k} {}", value_text(v)))
            .collect::<Vec<_>>()
            .join(" · ")
    });
    let conditional = |key: &str| {
        c.get(key).filter(|v| v.is_object()).map(|v| {
            format!(
                "{} · {} bytes · {}",
                text_at(v, &["status"]).unwrap_or_default(),
                text_at(v, &["body_bytes"]).unwrap_or_default(),
                num(v, &["time_ms"])
                    .map(|t| fmt_value(t, "ms"))
                    .unwrap_or_default()
            )
        })
    };
    kv(
        out,
        vec![
            ("status", text_at(c, &["status"])),
            (
                "shared cache may store it",
                text_at(c, &["shared_cacheable"]),
            ),
            ("why not", text_at(c, &["unstorable"])),
            ("by default", defaults),
            (
                "freshness",
                text_at(c, &["freshness_s"]).map(|f| {
                    format!(
                        "{f} s from {}",
                        text_at(c, &["freshness_source"]).unwrap_or_default()
                    )
                }),
            ),
            ("ETag", text_at(c, &["etag"])),
            ("Last-Modified", text_at(c, &["last_modified"])),
            ("If-None-Match", conditional("if_none_match")),
            ("If-Modified-Since", conditional("if_modified_since")),
            ("repeated GETs", text_at(c, &["repeats"])),
        ],
    );
    if let Some(hops) = c.get("redirects").and_then(Value::as_array) {
        let rows: Vec<Vec<String>> = hops
            .iter()
            .map(|h| {
                vec![
                    text_at(h, &["status"]).unwrap_or_default(),
                    text_at(h, &["location"]).unwrap_or_default(),
                    num(h, &["time_ms"])
                        .map(|t| fmt_value(t, "ms"))
                        .unwrap_or_default(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            table(out, "redirects", &["redirect", "location", "time"], &rows);
        }
    }
}

/// The steps of a diagnose ramp (`load.ramp`).
pub(super) fn ramp_table(out: &mut String, load: &Value) {
    let Some(steps) = load.get("ramp").and_then(Value::as_array) else {
        return;
    };
    let rows: Vec<Vec<String>> = steps
        .iter()
        .map(|s| {
            let n =
                |k: &str, unit: &str| num(s, &[k]).map(|v| fmt_value(v, unit)).unwrap_or_default();
            vec![
                n("connections", ""),
                n("rps", "req/s"),
                n("p50_ms", "ms"),
                n("p99_ms", "ms"),
                n("requests", ""),
                n("errors", ""),
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
