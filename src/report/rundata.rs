//! Reading a stored run back into typed pieces for compare and the reports: its
//! histograms decoded (whole-run and per-second), its timeline rows, and the parts
//! of its summary (the kind's `--json` document, DESIGN.md) each report needs. A
//! diagnose run holds a probe and a load; a multi-URL probe holds several results.
//! Fields the summary lacks come back as `None`: a report shows what it has.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::record::{self, RunRecord};
use crate::stats::v2;

/// What can go wrong reading a stored run.
#[derive(Debug, thiserror::Error)]
pub enum RunDataError {
    #[error("run {id}: histogram '{name}'{second} cannot be decoded: {reason}")]
    Histogram {
        id: String,
        name: String,
        second: String,
        reason: String,
    },
}

/// A run's histograms, decoded (values in nanoseconds).
#[derive(Debug, Default)]
pub struct Histograms {
    /// Whole-run histograms by name (`latency`, `latency:<endpoint>`, `read`, …).
    pub totals: BTreeMap<String, Histogram<u64>>,
    /// Per-second histograms by name, then second.
    pub seconds: BTreeMap<String, BTreeMap<u32, Histogram<u64>>>,
}

impl Histograms {
    /// Decodes every histogram of `run`.
    pub fn decode(run: &RunRecord) -> Result<Histograms, RunDataError> {
        let mut out = Histograms::default();
        for h in &run.histograms {
            // Size-capped: a damaged store cannot make a report allocate gigabytes.
            let hist: Histogram<u64> = v2::decode(&h.v2).map_err(|e| RunDataError::Histogram {
                id: run.id.clone(),
                name: h.name.clone(),
                second: h
                    .second
                    .map(|s| format!(" (second {s})"))
                    .unwrap_or_default(),
                reason: e,
            })?;
            match h.second {
                None => {
                    out.totals.insert(h.name.clone(), hist);
                }
                Some(s) => {
                    out.seconds
                        .entry(h.name.clone())
                        .or_default()
                        .insert(s, hist);
                }
            }
        }
        Ok(out)
    }

    /// The per-second histograms called `name`, in time order (empty when none).
    pub fn per_second(&self, name: &str) -> Vec<(u32, &Histogram<u64>)> {
        self.seconds
            .get(name)
            .map(|m| m.iter().map(|(t, h)| (*t, h)).collect())
            .unwrap_or_default()
    }
}

/// One second of a timeline (load: DESIGN.md's `timeline` entries).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    pub t: u32,
    pub requests: Option<f64>,
    pub ok: Option<f64>,
    /// Errors that second (a count, or the sum of an `{kind: count}` object).
    pub errors: Option<f64>,
    pub bytes: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub active: Option<f64>,
    pub cache_hits: Option<f64>,
    pub retrans: Option<f64>,
    /// The watched server's CPU busy %, and its retransmits per second (`--watch`).
    pub server_cpu_pct: Option<f64>,
    pub server_retrans: Option<f64>,
}

/// A number, or the sum of an object's numbers (errors by kind).
pub fn count(v: Option<&Value>) -> Option<f64> {
    match v? {
        // `+ 0.0`: an empty float sum is -0.0, which would print as "-0".
        Value::Object(m) => Some(m.values().filter_map(Value::as_f64).sum::<f64>() + 0.0),
        other => other.as_f64(),
    }
}

/// The run's per-second timeline: `run.timeline` when it is an array, else the
/// `timeline` of the summary (or of a diagnose run's load). Rows without `t` are
/// numbered in order.
pub fn timeline(run: &RunRecord) -> Vec<Second> {
    let rows = run
        .timeline
        .as_array()
        .filter(|a| !a.is_empty())
        .or_else(|| load_summary(run)?.get("timeline")?.as_array())
        .or_else(|| run.summary.get("timeline")?.as_array());
    let Some(rows) = rows else {
        return Vec::new();
    };
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let f = |k: &str| r.get(k).and_then(Value::as_f64);
            Second {
                t: f("t").map(|t| t.max(0.0) as u32).unwrap_or(i as u32),
                requests: f("requests"),
                ok: f("ok"),
                errors: count(r.get("errors")),
                bytes: f("bytes"),
                p50_ms: f("p50_ms"),
                p90_ms: f("p90_ms"),
                p99_ms: f("p99_ms"),
                max_ms: f("max_ms"),
                active: f("active"),
                cache_hits: f("cache_hits"),
                retrans: f("retrans"),
                server_cpu_pct: r.pointer("/server/cpu_pct").and_then(Value::as_f64),
                server_retrans: r.pointer("/server/retrans").and_then(Value::as_f64),
            }
        })
        .collect()
}

/// The load part of a run's summary: the summary of a load run, the `load` of a
/// diagnose run (unless it was skipped).
pub fn load_summary(run: &RunRecord) -> Option<&Value> {
    match run.kind.as_str() {
        "load" => Some(&run.summary),
        "diagnose" => diagnoses(run)
            .into_iter()
            .filter_map(|d| d.get("load"))
            .find(|l| l.is_object() && l.get("skipped").is_none()),
        _ => None,
    }
}

/// A `--find-max` run's capacity step on its joined timeline: the seconds of its
/// scored window, [from, to). None for other runs.
pub fn capacity_window(load: &Value) -> Option<(u32, u32)> {
    let level = load.get("capacity")?.get("level")?.as_f64()?;
    let step = load.get("steps")?.as_array()?.iter().find(|s| {
        s.get("level").and_then(Value::as_f64) == Some(level)
            && s.get("pass").and_then(Value::as_bool) == Some(true)
    })?;
    let f = |k: &str| step.get(k).and_then(Value::as_f64);
    let from = f("t")? + f("settle_s").unwrap_or(0.0);
    let to = from + f("duration_s")?.floor();
    Some((from as u32, to as u32))
}

/// The rows whose second falls in `window` ([from, to)).
pub fn in_window<T>(rows: Vec<(u32, T)>, (from, to): (u32, u32)) -> Vec<(u32, T)> {
    rows.into_iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect()
}

/// The diagnoses of a diagnose run: its `results` (several URLs, the demo) or itself.
pub fn diagnoses(run: &RunRecord) -> Vec<&Value> {
    match run.summary.get("results").and_then(Value::as_array) {
        Some(results) => results.iter().collect(),
        None => vec![&run.summary],
    }
}

/// The probe results of a run: one per URL (a diagnose run has one).
pub fn probe_results(run: &RunRecord) -> Vec<&Value> {
    let probe = match run.kind.as_str() {
        "probe" => &run.summary,
        "diagnose" => {
            return diagnoses(run)
                .into_iter()
                .filter_map(|d| d.get("probe"))
                .collect()
        }
        _ => return Vec::new(),
    };
    match probe.get("results").and_then(Value::as_array) {
        Some(results) => results.iter().filter(|r| record::measured(r)).collect(),
        None => vec![probe],
    }
}

/// The disk part of a run's summary.
pub fn disk_summary(run: &RunRecord) -> Option<&Value> {
    (run.kind == "disk").then_some(&run.summary)
}

/// The phases of a request, in order, as the probe names them.
pub const PHASES: [&str; 8] = [
    "dns", "connect", "tls", "send", "wait", "receive", "ttfb", "total",
];

/// The values of `phase` (ms) over a probe result's samples of `series` (`fresh` or
/// `reused`). Samples carry their phases under `phases_ms`, or flat as `<phase>` /
/// `<phase>_ms`.
pub fn probe_samples(result: &Value, series: &str, phase: &str) -> Vec<f64> {
    let Some(samples) = result.get("samples").and_then(Value::as_array) else {
        return Vec::new();
    };
    samples
        .iter()
        .filter(|s| s.get("series").and_then(Value::as_str) == Some(series))
        .filter_map(|s| {
            s.get("phases_ms")
                .and_then(|p| p.get(phase))
                .or_else(|| s.get(phase))
                .or_else(|| s.get(format!("{phase}_ms")))
                .and_then(Value::as_f64)
        })
        .collect()
}

/// A number at `path` inside `v`.
pub fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

/// A run's display name: its label, else its id.
pub fn run_name(run: &RunRecord) -> String {
    let name = run.label.as_deref().unwrap_or(&run.id);
    // Charts, logs and tables show it: never a control character (`crate::visible`).
    crate::visible::one_line(name).into_owned()
}

/// Where a merged run came from ("3 of 3 shards from 2 hosts: a, b"), from its
/// config's `merged` object; None for a run that was not merged.
pub fn merged_from(run: &RunRecord) -> Option<String> {
    let m = run.config.get("merged")?;
    let shards = m["shards"].as_u64()?;
    let of = m["of"]
        .as_u64()
        .map(|n| format!(" of {n}"))
        .unwrap_or_default();
    let hosts: Vec<&str> = m["hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_str())
        .collect();
    let s = if hosts.len() == 1 { "" } else { "s" };
    Some(format!(
        "{shards}{of} shards from {} host{s}: {}",
        hosts.len(),
        hosts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timeline_reads_counts_and_error_objects() {
        let run = RunRecord {
            id: "x".into(),
            kind: "load".into(),
            label: None,
            target: String::new(),
            started_at_ms: 0,
            duration_s: 2.0,
            version: String::new(),
            config: Value::Null,
            env: Default::default(),
            summary: json!({"timeline": [{"t": 0, "requests": 10, "errors": {"timeout": 2, "reset": 1}},
                                         {"t": 1, "requests": 12, "errors": 0, "p99_ms": 4.5}]}),
            timeline: Value::Null,
            findings: json!([]),
            text: String::new(),
            histograms: Vec::new(),
        };
        let tl = timeline(&run);
        assert_eq!(tl.len(), 2);
        assert_eq!(tl[0].errors, Some(3.0));
        assert_eq!(tl[1].p99_ms, Some(4.5));
        assert_eq!(tl[1].requests, Some(12.0));
    }

    #[test]
    fn probe_samples_nested_or_flat() {
        let r = json!({"samples": [
            {"series": "fresh", "t_ms": 0, "phases_ms": {"ttfb": 3.0}},
            {"series": "reused", "t_ms": 5, "ttfb": 1.0},
            {"series": "fresh", "t_ms": 9, "ttfb_ms": 4.0}]});
        assert_eq!(probe_samples(&r, "fresh", "ttfb"), vec![3.0, 4.0]);
        assert_eq!(probe_samples(&r, "reused", "ttfb"), vec![1.0]);
    }
}
