//! A stored load run's timeline as OpenMetrics text with timestamps (`latscope
//! export RUN --format openmetrics`), for `promtool tsdb create-blocks-from
//! openmetrics FILE DIR`: the same series, names and labels as `--out prometheus`
//! writes while a run goes ([`super::series`]), each family's samples together and
//! in time order, timestamps in seconds, ended by `# EOF`
//! (<https://prometheus.io/docs/specs/om/open_metrics_spec/>). The per-second
//! service time of the open model is not stored with a run, so it is not exported.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::series::{self, Counters, Sample, Series};
use crate::load::result::SecondResult;
use crate::record::RunRecord;
use crate::schema::TimelineRow;

/// The OpenMetrics text of a stored load run; the error says why a run has none.
pub fn run_text(run: &RunRecord) -> Result<String, String> {
    if run.kind != "load" {
        return Err(format!(
            "run {} is a {} run; --format openmetrics exports a load run's timeline",
            run.id, run.kind
        ));
    }
    let rows: Vec<TimelineRow> = crate::schema::from_value(&run.timeline).unwrap_or_default();
    // Per-second histograms: `latency` for the whole run, `latency:<name>` per
    // endpoint (kept for runs with 2 to 100 endpoints).
    let mut all: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut per_ep: BTreeMap<String, BTreeMap<u32, Vec<u8>>> = BTreeMap::new();
    for h in &run.histograms {
        let Some(t) = h.second else { continue };
        if h.name == "latency" {
            all.insert(t, h.v2.clone());
        } else if let Some(name) = h.name.strip_prefix("latency:") {
            per_ep
                .entry(name.to_string())
                .or_default()
                .insert(t, h.v2.clone());
        }
    }
    let names: Vec<String> = per_ep.keys().cloned().collect();
    let series = Series::new(
        &run.id,
        run.label.as_deref(),
        &host_port(&run.target),
        &[],
        names.clone(),
    );
    let mut counters = Counters::default();
    let mut samples = Vec::new();
    for row in &rows {
        let s = second_of(row, &all, &names, &per_ep);
        samples.extend(series.samples(&counters.add(&s, run.started_at_ms, None)));
    }
    Ok(text(&samples))
}

/// A stored timeline row back as the second it was (the fields the series export).
fn second_of(
    row: &TimelineRow,
    all: &BTreeMap<u32, Vec<u8>>,
    names: &[String],
    per_ep: &BTreeMap<String, BTreeMap<u32, Vec<u8>>>,
) -> SecondResult {
    let t = row.t;
    SecondResult {
        t,
        server: row.server.clone().flatten().map(|s| *s),
        requests: row.requests,
        errors: row.errors,
        errors_by_kind: row.error_kinds.clone(),
        dropped: row.dropped,
        active: row.active,
        p50_ms: row.p50_ms,
        p90_ms: row.p90_ms,
        p99_ms: row.p99_ms,
        max_ms: row.max_ms,
        checks: row.checks,
        checks_failed: row.checks_failed,
        v2: all.get(&t).cloned().unwrap_or_default(),
        ep_v2: names
            .iter()
            .map(|e| per_ep[e].get(&t).cloned().unwrap_or_default())
            .collect(),
        ..Default::default()
    }
}

/// host:port of a stored target URL (the path and query stay out of labels).
fn host_port(target: &str) -> String {
    match crate::net::Target::parse(target) {
        Ok(t) => super::target_label(&t),
        Err(_) => target
            .split("://")
            .nth(1)
            .unwrap_or(target)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or("")
            .rsplit('@')
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

/// The family (metric name without `_total`) and type of a series name.
fn family(name: &str) -> (&str, &'static str) {
    match name.strip_suffix("_total") {
        Some(f) => (f, "counter"),
        None => (name, "gauge"),
    }
}

fn help(name: &str) -> &'static str {
    match name {
        series::REQUESTS => "Requests completed (ok and errors) since the run started.",
        series::ERRORS => "Requests that failed since the run started, by kind.",
        series::DROPPED => "Open model: arrivals dropped for want of a connection.",
        series::CHECKS => "A scenario's checks judged since the run started, by result.",
        series::ACTIVE => "Connections (virtual users) in flight.",
        series::LATENCY => "HDR latency percentiles of that second.",
        series::SERVICE_TIME => "Open model: HDR service-time percentiles of that second.",
        _ => "",
    }
}

/// Escapes a label value (backslash, double quote, newline).
pub fn escape(v: &str) -> String {
    // An imported run's label may carry escape codes: shown, never passed on.
    crate::visible::visible(v)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Samples as OpenMetrics text: families in [`series::METRIC_NAMES`] order, each
/// label set's samples together in time order, `# EOF` at the end.
pub fn text(samples: &[Sample]) -> String {
    let mut out = String::new();
    for name in series::METRIC_NAMES {
        let mut sets: Vec<&[(String, String)]> = Vec::new();
        for s in samples.iter().filter(|s| s.name == *name) {
            if !sets.contains(&s.labels.as_slice()) {
                sets.push(&s.labels);
            }
        }
        if sets.is_empty() {
            continue;
        }
        let (fam, kind) = family(name);
        let _ = writeln!(out, "# TYPE {fam} {kind}");
        let _ = writeln!(out, "# HELP {fam} {}", help(name));
        for set in sets {
            let labels: Vec<String> = set
                .iter()
                .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
                .collect();
            let mut points: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.name == *name && s.labels.as_slice() == set)
                .collect();
            points.sort_by_key(|s| s.ts_ms);
            for s in points {
                let _ = writeln!(
                    out,
                    "{name}{{{}}} {} {}.{:03}",
                    labels.join(","),
                    number(s.value),
                    s.ts_ms.div_euclid(1000),
                    s.ts_ms.rem_euclid(1000)
                );
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

/// A value as OpenMetrics writes numbers (integers without a fraction).
pub fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn run(timeline: Value) -> RunRecord {
        RunRecord {
            id: "abc123".into(),
            kind: "load".into(),
            label: Some("base \"1\"".into()),
            target: "http://127.0.0.1:8080/x?token=secret".into(),
            started_at_ms: 1_700_000_000_500,
            duration_s: 2.0,
            version: "0".into(),
            config: Value::Null,
            env: Default::default(),
            summary: serde_json::json!({}),
            timeline,
            findings: serde_json::json!([]),
            text: String::new(),
            histograms: vec![],
        }
    }

    /// Counters are cumulative with `_total` and a `counter` family without it;
    /// timestamps are seconds with milliseconds; label values are escaped; the target
    /// keeps no path or query; the text ends with `# EOF`; a second without a
    /// latency histogram has no latency gauges.
    #[test]
    fn a_timeline_becomes_openmetrics() {
        let t = serde_json::json!([
            {"t": 0, "requests": 10, "errors": 1, "error_kinds": {"timeout": 1}, "dropped": 0, "active": 4,
             "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0, "max_ms": 4.0},
            {"t": 1, "requests": 5, "errors": 0, "error_kinds": {}, "dropped": 0, "active": 4,
             "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0, "max_ms": 4.0,
             "checks": 10, "checks_failed": 3},
        ]);
        let text = run_text(&run(t)).unwrap();
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains("# TYPE latscope_requests counter\n"));
        // No per-second histogram stored: no latency gauges (a 0 s p99 would be a lie).
        assert!(!text.contains("latscope_latency_seconds"), "{text}");
        let req: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("latscope_requests_total{"))
            .collect();
        assert_eq!(
            req,
            [
                r#"latscope_requests_total{endpoint="all",label="base \"1\"",run="abc123",target="127.0.0.1:8080"} 10 1700000001.500"#,
                r#"latscope_requests_total{endpoint="all",label="base \"1\"",run="abc123",target="127.0.0.1:8080"} 15 1700000002.500"#,
            ]
        );
        assert!(text.contains(r#"kind="timeout",label="base \"1\"",run="abc123",target="127.0.0.1:8080"} 1 1700000002.500"#));
        // A scenario's checks, from the second they were first judged.
        assert!(text.contains(r#"latscope_scenario_checks_total{endpoint="all",label="base \"1\"",result="failed",run="abc123",target="127.0.0.1:8080"} 3 1700000002.500"#), "{text}");
        assert!(
            text.contains(
                r#"result="passed",run="abc123",target="127.0.0.1:8080"} 7 1700000002.500"#
            ),
            "{text}"
        );
        assert!(!text.contains("secret"));
    }

    /// Other kinds of run have no request timeline: a clear error.
    #[test]
    fn only_load_runs() {
        let mut r = run(Value::Null);
        r.kind = "disk".into();
        assert!(run_text(&r).unwrap_err().contains("disk run"));
    }
}
