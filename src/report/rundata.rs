//! Reading a stored run back for compare and the reports: its histograms decoded
//! (whole-run and per-second), its summary read as its kind's typed document
//! ([`crate::schema`]: nothing here looks a field up by its name), its load timeline
//! as rows, and a probe's samples by series and phase. A diagnose run holds a probe
//! and a load ramp; a multi-URL probe holds several results.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::probe::ProbeResult;
use crate::record::RunRecord;
use crate::schema::{self, Summary, TimelineRow};
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

/// A run's summary read as its kind's document (`schema`). None when it does not
/// fit (a run is checked when it is saved and when it is imported): a report then
/// shows what the record itself holds.
pub fn doc(run: &RunRecord) -> Option<Summary> {
    Summary::parse(&run.kind, &run.summary).ok()
}

/// The visits a stored page run's document holds (none when it holds none, or the
/// document does not read).
pub fn page_visits(run: &RunRecord) -> Vec<crate::page::model::Visit> {
    match doc(run) {
        Some(Summary::Page(p)) => p.visits,
        _ => Vec::new(),
    }
}

impl From<&TimelineRow> for Second {
    fn from(r: &TimelineRow) -> Second {
        let server = r.server.as_ref().and_then(|s| s.as_deref());
        Second {
            t: r.t,
            requests: Some(r.requests as f64),
            ok: Some(r.ok as f64),
            errors: Some(r.errors as f64),
            bytes: Some(r.bytes as f64),
            p50_ms: Some(r.p50_ms),
            p90_ms: Some(r.p90_ms),
            p99_ms: Some(r.p99_ms),
            max_ms: Some(r.max_ms),
            active: Some(r.active as f64),
            cache_hits: Some(r.cache_hits as f64),
            retrans: r.retrans.map(|v| v as f64),
            server_cpu_pct: server.and_then(|s| s.cpu_pct),
            server_retrans: server.and_then(|s| s.retrans),
        }
    }
}

/// The run's per-second load timeline: `run.timeline` when it holds rows, else the
/// `timeline` of its load part (a load run's summary, a diagnose run's ramp).
pub fn timeline(run: &RunRecord) -> Vec<Second> {
    let stored: Vec<TimelineRow> = match &run.timeline {
        Value::Array(a) if !a.is_empty() => schema::from_value(&run.timeline).unwrap_or_default(),
        _ => Vec::new(),
    };
    if !stored.is_empty() {
        return stored.iter().map(Second::from).collect();
    }
    doc(run)
        .as_ref()
        .and_then(Summary::load)
        .map(|l| l.timeline().iter().map(Second::from).collect())
        .unwrap_or_default()
}

/// Whether the run has a load part: a load run, or a diagnose run whose ramp ran.
pub fn has_load(run: &RunRecord) -> bool {
    match run.kind.as_str() {
        "load" => true,
        "diagnose" => doc(run).is_some_and(|d| d.load().is_some()),
        _ => false,
    }
}

/// The rows whose second falls in `window` ([from, to)).
pub fn in_window<T>(rows: Vec<(u32, T)>, (from, to): (u32, u32)) -> Vec<(u32, T)> {
    rows.into_iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect()
}

/// The phases of a request, in order, as the probe names them.
pub const PHASES: [&str; 8] = [
    "dns", "connect", "tls", "send", "wait", "receive", "ttfb", "total",
];

/// The values of `phase` (ms) over a probe result's samples of `series` (`fresh`,
/// `resumed` or `reused`).
pub fn samples(result: &ProbeResult, series: &str, phase: &str) -> Vec<f64> {
    result
        .samples
        .iter()
        .filter(|s| s.series.name() == series)
        .map(|s| s.phases_ms.get(phase))
        .collect()
}

/// A run's display name: its label, else its id.
pub fn run_name(run: &RunRecord) -> String {
    let name = run.label.as_deref().unwrap_or(&run.id);
    // Charts, logs and tables show it: never a control character (`crate::visible`).
    crate::visible::one_line(name).into_owned()
}

/// Where a merged run came from ("3 of 3 shards from 2 hosts: a, b"), from its
/// config's `merged`; None for a run that was not merged.
pub fn merged_from(run: &RunRecord) -> Option<String> {
    let plan: schema::PlanDoc = schema::from_value(&run.config).ok()?;
    plan.merged.map(|m| m.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(kind: &str, summary: Value) -> RunRecord {
        RunRecord {
            id: "x".into(),
            kind: kind.into(),
            label: None,
            target: String::new(),
            started_at_ms: 0,
            duration_s: 2.0,
            version: String::new(),
            config: Value::Null,
            env: Default::default(),
            summary,
            timeline: Value::Null,
            findings: json!([]),
            text: String::new(),
            histograms: Vec::new(),
        }
    }

    #[test]
    fn timeline_reads_counts_and_error_objects() {
        let run = record(
            "load",
            json!({"timeline": [{"t": 0, "requests": 10, "errors": {"timeout": 2, "reset": 1}},
                                {"t": 1, "requests": 12, "errors": 0, "p99_ms": 4.5}]}),
        );
        let tl = timeline(&run);
        assert_eq!(tl.len(), 2);
        assert_eq!(tl[0].errors, Some(3.0));
        assert_eq!(tl[1].p99_ms, Some(4.5));
        assert_eq!(tl[1].requests, Some(12.0));
    }

    #[test]
    fn samples_by_series_and_phase() {
        let r: ProbeResult = serde_json::from_value(json!({"samples": [
            {"series": "fresh", "t_ms": 0, "phases_ms": {"ttfb": 3.0}},
            {"series": "reused", "t_ms": 5, "phases_ms": {"ttfb": 1.0}},
            {"series": "fresh", "t_ms": 9, "phases_ms": {"ttfb": 4.0, "total": 5.0}}]}))
        .unwrap();
        assert_eq!(samples(&r, "fresh", "ttfb"), vec![3.0, 4.0]);
        assert_eq!(samples(&r, "reused", "ttfb"), vec![1.0]);
        assert_eq!(samples(&r, "fresh", "total"), vec![0.0, 5.0]);
    }

    #[test]
    fn merged_from_reads_the_plan() {
        let mut run = record("load", json!({}));
        assert_eq!(merged_from(&run), None);
        run.config = json!({"merged": {"runs": ["a", "b"], "shards": 2, "of": 2,
                                       "hosts": ["h1", "h2"]}});
        assert_eq!(
            merged_from(&run).as_deref(),
            Some("2 of 2 shards from 2 hosts: h1, h2")
        );
    }
}
