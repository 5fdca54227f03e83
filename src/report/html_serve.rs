//! `latscope report --serve NAME`: one scheduled target of `latscope serve` over time,
//! from its stored checks (runs labelled `serve:NAME`): a lane per finding, drawn
//! where the checks found it; the failed checks; the fresh TTFB of each check; and
//! the confirmed changes. Self-contained HTML, every stored text escaped.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::html::{esc, table};
use crate::record::RunRecord;

/// One check as the timeline needs it.
struct Check {
    at_ms: i64,
    failed: bool,
    /// Finding id → severity.
    findings: BTreeMap<String, String>,
    ttfb_ms: Option<f64>,
    changes: Vec<(String, String, String)>,
}

fn check(r: &RunRecord) -> Check {
    let findings = r
        .findings
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            Some((
                f["id"].as_str()?.to_string(),
                f["severity"].as_str().unwrap_or("info").to_string(),
            ))
        })
        .collect();
    // A probe check's document is the probe; a diagnose check's holds it; a failed
    // one is a `results` list holding its error.
    let doc = match &r.summary["results"] {
        Value::Array(results) if !results.is_empty() => &results[0],
        _ => &r.summary,
    };
    let probe = if doc["kind"] == "diagnose" {
        &doc["probe"]
    } else {
        doc
    };
    let failed = doc["error"].is_string()
        || probe["status"]
            .as_u64()
            .is_none_or(|s| !(200..400).contains(&s));
    let changes = r.config["serve"]["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("what"), s("id"), s("detail"))
        })
        .collect();
    Check {
        at_ms: r.started_at_ms,
        failed,
        findings,
        ttfb_ms: probe["fresh"]["phases_ms"]["ttfb"]["p50"].as_f64(),
        changes,
    }
}

/// A time as `2026-11-27 16:05:09Z`.
fn when(ms: i64) -> String {
    format!("{}Z", crate::units::utc(ms))
}

fn colour(severity: &str) -> &'static str {
    match severity {
        "crit" => "#c00",
        "warn" => "#d80",
        _ => "#69c",
    }
}

/// The report of target `name` from its checks (any order).
pub fn render(name: &str, runs: &[RunRecord]) -> String {
    let mut checks: Vec<Check> = runs.iter().map(check).collect();
    checks.sort_by_key(|c| c.at_ms);
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    let _ = write!(
        h,
        "<title>latscope serve: {}</title><style>body{{font:15px/1.4 system-ui,sans-serif;margin:2em;max-width:75em}}\
         td,th{{padding:.2em .6em;text-align:left;border-bottom:1px solid #ddd}}table{{border-collapse:collapse}}</style></head><body>\
         <h1>latscope serve: {}</h1>",
        esc(name),
        esc(name)
    );
    let (Some(first), Some(last)) = (checks.first(), checks.last()) else {
        h.push_str("<p>No stored checks.</p></body></html>\n");
        return h;
    };
    let _ = write!(
        h,
        "<p>{} checks from {} to {} (UTC), {} failed.</p>",
        checks.len(),
        when(first.at_ms),
        when(last.at_ms),
        checks.iter().filter(|c| c.failed).count()
    );
    // The lanes: each finding seen, then the failures.
    let mut lanes: BTreeMap<String, String> = BTreeMap::new();
    for c in &checks {
        for (id, sev) in &c.findings {
            lanes.entry(id.clone()).or_insert_with(|| sev.clone());
        }
    }
    let span = (last.at_ms - first.at_ms).max(1) as f64;
    let (left, width, lane) = (190.0, 760.0, 18.0);
    let x = |ms: i64| left + (ms - first.at_ms) as f64 / span * width;
    // Each check owns the time up to the next one (the last one a sliver).
    let end = |i: usize| {
        checks
            .get(i + 1)
            .map_or(x(checks[i].at_ms) + 2.0, |n| x(n.at_ms))
    };
    let rows = lanes.len() + 1;
    let height = rows as f64 * lane + 24.0;
    let _ = write!(
        h,
        "<h2>Findings over time</h2><svg id=timeline width=\"{}\" height=\"{height}\" role=img aria-label=\"findings over time\">",
        left + width + 10.0
    );
    let lane_row = |h: &mut String,
                    row: usize,
                    label: &str,
                    fill: &str,
                    on: &dyn Fn(&Check) -> bool| {
        let y = row as f64 * lane;
        let _ = write!(
            h,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">{}</text>",
            y + 13.0,
            esc(label)
        );
        for (i, c) in checks.iter().enumerate() {
            if on(c) {
                let _ = write!(
                    h,
                    "<rect class=\"on\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{}\" fill=\"{fill}\"/>",
                    x(c.at_ms),
                    y + 2.0,
                    (end(i) - x(c.at_ms)).max(1.0),
                    lane - 4.0
                );
            }
        }
    };
    for (row, (id, sev)) in lanes.iter().enumerate() {
        lane_row(&mut h, row, id, colour(sev), &|c: &Check| {
            c.findings.contains_key(id)
        });
    }
    lane_row(&mut h, lanes.len(), "check failed", "#000", &|c: &Check| {
        c.failed
    });
    let _ = write!(
        h,
        "<text x=\"{left}\" y=\"{}\" font-size=\"11\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text></svg>",
        height - 4.0,
        when(first.at_ms),
        left + width,
        height - 4.0,
        when(last.at_ms)
    );
    // The fresh TTFB per check.
    let top = checks
        .iter()
        .filter_map(|c| c.ttfb_ms)
        .fold(0.0_f64, f64::max);
    if top > 0.0 {
        let hgt = 120.0;
        let points: Vec<String> = checks
            .iter()
            .filter_map(|c| {
                Some(format!(
                    "{:.1},{:.1}",
                    x(c.at_ms),
                    hgt - c.ttfb_ms? / top * (hgt - 4.0) - 2.0
                ))
            })
            .collect();
        let _ = write!(
            h,
            "<h2>Fresh TTFB per check</h2><svg id=ttfb width=\"{}\" height=\"{hgt}\" role=img aria-label=\"fresh TTFB up to {top:.1} ms\">\
             <text x=\"0\" y=\"12\" font-size=\"11\">{top:.1} ms</text><polyline fill=none stroke=\"#36c\" points=\"{}\"/></svg>",
            left + width + 10.0,
            points.join(" ")
        );
    }
    // The changes.
    let changes: Vec<Vec<String>> = checks
        .iter()
        .flat_map(|c| {
            c.changes.iter().map(move |(what, id, detail)| {
                vec![
                    when(c.at_ms),
                    what.replace('_', " "),
                    id.clone(),
                    detail.clone(),
                ]
            })
        })
        .collect();
    h.push_str("<h2>Changes</h2>");
    if changes.is_empty() {
        h.push_str("<p id=changes>None: no finding appeared or went away, the target never started failing or recovered, its TTFB never moved (each confirmed by two checks).</p>");
    } else {
        table(
            &mut h,
            "changes",
            &["when (UTC)", "change", "id", "what"],
            &changes,
        );
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(at: i64, status: u64, ids: &[&str], changes: Value) -> RunRecord {
        RunRecord {
            id: format!("r{at}"),
            kind: "probe".into(),
            label: Some("serve:blog".into()),
            target: "http://x/".into(),
            started_at_ms: at,
            duration_s: 0.1,
            version: String::new(),
            config: json!({"serve": {"changes": changes}}),
            env: Default::default(),
            summary: json!({"kind": "probe", "status": status, "fresh": {"phases_ms": {"ttfb": {"p50": 12.5}}}}),
            timeline: Value::Null,
            findings: Value::Array(
                ids.iter()
                    .map(|i| json!({"id": i, "severity": "warn"}))
                    .collect(),
            ),
            text: String::new(),
            histograms: Vec::new(),
        }
    }

    /// A finding found in the last two of four checks is one lane with two bars; a
    /// failed check is a bar in its lane; the change is listed, escaped.
    #[test]
    fn a_lane_per_finding_and_the_changes() {
        let runs = vec![
            run(1000, 200, &[], json!([])),
            RunRecord {
                summary: json!({"kind": "probe", "results": [{"url": "http://x/", "error": "refused"}]}),
                ..run(2000, 503, &[], json!([]))
            },
            run(3000, 200, &["no-cache"], json!([])),
            run(
                4000,
                200,
                &["no-cache"],
                json!([{"what": "finding_appeared", "id": "no-cache", "detail": "<b>x</b>"}]),
            ),
        ];
        let h = render("blog", &runs);
        assert_eq!(h.matches("<rect class=\"on\"").count(), 3, "{h}");
        assert!(
            h.contains(">no-cache</text>") && h.contains(">check failed</text>"),
            "{h}"
        );
        assert!(
            h.contains("finding appeared") && h.contains("&lt;b&gt;x&lt;/b&gt;"),
            "{h}"
        );
        assert!(h.contains("4 checks") && h.contains("1 failed"), "{h}");
    }
}
