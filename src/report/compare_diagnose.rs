//! Diagnose runs in `latscope compare`: the load ramp (peak req/s, the knee, and
//! req/s, p50 and p99 at each concurrency step) and the cache audit (hits,
//! freshness, 304s) as sections, and — for every kind of run — which findings
//! appeared and which went away ([`findings_changes`]).
//!
//! A ramp step lasts a few seconds, too few blocks for a per-second test; its
//! latencies are tested on exceedances over its per-second histograms instead (the
//! requests of each run over the lower run's p50 or p99 at that step, see
//! [`super::compare_tail`]), so a step that got 3× faster behind a cache says so.

use std::rc::Rc;

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;

use super::compare::{metric, Better, Metric, RunSections};
use super::compare_tail::TailData;
use super::rundata::{self, num, Histograms};
use crate::record::RunRecord;

/// The ramp and cache sections of a diagnose run (one set per diagnosed URL).
pub(super) fn diagnose_sections(run: &RunRecord, hist: &Histograms) -> RunSections {
    let diagnoses = rundata::diagnoses(run);
    let many = diagnoses.len() > 1;
    let mut out = Vec::new();
    for (i, d) in diagnoses.iter().enumerate() {
        let suffix = if many {
            format!(" (URL {})", i + 1)
        } else {
            String::new()
        };
        if let Some(load) = d.get("load").filter(|l| l.get("ramp").is_some()) {
            // Histograms are stored for the first URL's ramp only.
            let h = (i == 0).then_some(hist);
            out.push((format!("load ramp{suffix}"), ramp_metrics(run, load, h)));
        }
        if let Some(cache) = d.get("cache").filter(|c| c.is_object()) {
            out.push((format!("cache audit{suffix}"), cache_metrics(cache)));
        }
    }
    out
}

/// Connections of each second of the ramp's timeline, by `t`.
fn step_of_second(load: &Value) -> Vec<(u32, u64)> {
    load.get("timeline")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let t = s.get("t")?.as_u64()? as u32;
            let c = s.get("concurrency")?.as_u64()?;
            Some((t, c))
        })
        .collect()
}

fn ramp_metrics(run: &RunRecord, load: &Value, hist: Option<&Histograms>) -> Vec<Metric> {
    let steps: Vec<&Value> = load
        .get("ramp")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let peak = steps
        .iter()
        .filter_map(|s| num(s, &["rps"]))
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let knee = knee_concurrency(run);
    let mut out = vec![
        metric("peak req/s", "req/s", Better::Higher, peak),
        // No knee in the ramp: none to place (the row shows "-").
        metric("knee at (connections)", "", Better::Higher, knee),
    ];
    let of_second = step_of_second(load);
    let seconds = hist.map(|h| h.per_second("latency")).unwrap_or_default();
    let timeline = rundata::timeline(run);
    for s in steps {
        let Some(c) = s.get("connections").and_then(Value::as_u64) else {
            continue;
        };
        let in_step: Vec<u32> = of_second
            .iter()
            .filter(|(_, sc)| *sc == c)
            .map(|(t, _)| *t)
            .collect();
        let step_hists: Vec<Histogram<u64>> = seconds
            .iter()
            .filter(|(t, _)| in_step.contains(t))
            .map(|(_, h)| (*h).clone())
            .collect();
        let tail = (!step_hists.is_empty()).then(|| TailData {
            seconds: Rc::new(step_hists),
            unit_ns: 1e6,
            items: "requests",
        });
        let requests: Vec<f64> = timeline
            .iter()
            .filter(|r| in_step.contains(&r.t))
            .filter_map(|r| r.requests)
            .collect();
        out.push(
            metric(
                &format!("c={c} req/s"),
                "req/s",
                Better::Higher,
                num(s, &["rps"]),
            )
            .blocks(format!("per-second requests at c={c}"), requests),
        );
        for (name, key, q) in [("p50", "p50_ms", 0.5), ("p99", "p99_ms", 0.99)] {
            let mut m = metric(
                &format!("c={c} {name}"),
                "ms",
                Better::Lower,
                num(s, &[key]),
            );
            m.tail = tail.clone().map(|t| (q, t));
            out.push(m);
        }
    }
    let errors = rundata::count(load.get("errors"));
    let err_blocks: Vec<f64> = timeline.iter().filter_map(|s| s.errors).collect();
    out.push(metric("errors", "", Better::Lower, errors).blocks("per-second errors", err_blocks));
    out
}

/// The concurrency of the run's `knee` finding, if it has one.
fn knee_concurrency(run: &RunRecord) -> Option<f64> {
    findings_of(run)
        .iter()
        .find(|f| f.get("id").and_then(Value::as_str) == Some("knee"))
        .and_then(|f| num(f, &["evidence", "knee_concurrency"]))
}

/// 1 for true, 0 for false, a number as itself.
fn flag(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        other => other.as_f64(),
    }
}

/// Whether a conditional request was answered 304: its `status` (or the value
/// itself when it is a status number).
fn answered_304(v: Option<&Value>) -> Option<f64> {
    let v = v.filter(|v| !v.is_null())?;
    let status = v.get("status").unwrap_or(v).as_f64()?;
    Some(f64::from(u8::from(status == 304.0)))
}

fn cache_metrics(c: &Value) -> Vec<Metric> {
    let repeats = c.get("repeats").and_then(Value::as_array);
    vec![
        metric("hits (of repeats)", "", Better::Higher, num(c, &["hits"])),
        metric(
            "repeats",
            "",
            Better::Higher,
            repeats.map(|r| r.len() as f64),
        ),
        metric(
            "hit ratio under load",
            "",
            Better::Higher,
            num(c, &["load_hit_ratio"]),
        ),
        metric(
            "freshness (s)",
            "",
            Better::Higher,
            num(c, &["freshness_s"]),
        ),
        metric(
            "shared cacheable (1 = yes)",
            "",
            Better::Higher,
            flag(c.get("shared_cacheable")),
        ),
        metric(
            "validators (1 = yes)",
            "",
            Better::Higher,
            flag(c.get("validators")),
        ),
        metric(
            "304 to If-None-Match (1 = yes)",
            "",
            Better::Higher,
            answered_304(c.get("if_none_match")),
        ),
        metric(
            "304 to If-Modified-Since (1 = yes)",
            "",
            Better::Higher,
            answered_304(c.get("if_modified_since")),
        ),
    ]
}

/// A finding as the comparison names it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FindingRef {
    pub id: String,
    pub severity: String,
    pub title: String,
    /// The baseline's severity, when it differs (kept findings only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was: Option<String>,
}

/// How one run's findings differ from the baseline's (matched by rule id).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FindingsChange {
    /// Index of the run, and of the run it is compared with (the first run).
    pub run: usize,
    pub baseline: usize,
    /// In this run, not in the baseline.
    pub appeared: Vec<FindingRef>,
    /// In the baseline, not in this run.
    pub gone: Vec<FindingRef>,
    /// In both (with the baseline's severity when it changed).
    pub kept: Vec<FindingRef>,
}

/// A stored run's findings: `findings`, else its summary's.
fn findings_of(run: &RunRecord) -> Vec<&Value> {
    run.findings
        .as_array()
        .filter(|a| !a.is_empty())
        .or_else(|| run.summary.get("findings")?.as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn to_ref(f: &Value) -> Option<FindingRef> {
    let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    f.get("id")?.as_str()?;
    Some(FindingRef {
        id: s("id"),
        severity: s("severity"),
        title: s("title"),
        was: None,
    })
}

/// Every run after the first against the first: findings that appeared, went away,
/// or stayed (by rule id). Empty when no run has findings.
pub fn findings_changes(runs: &[RunRecord]) -> Vec<FindingsChange> {
    let refs: Vec<Vec<FindingRef>> = runs
        .iter()
        .map(|r| findings_of(r).into_iter().filter_map(to_ref).collect())
        .collect();
    if refs.iter().all(Vec::is_empty) {
        return Vec::new();
    }
    let base = &refs[0];
    (1..runs.len())
        .map(|i| {
            let has = |set: &[FindingRef], id: &str| set.iter().find(|f| f.id == id).cloned();
            let appeared = refs[i]
                .iter()
                .filter(|f| has(base, &f.id).is_none())
                .cloned()
                .collect();
            let gone = base
                .iter()
                .filter(|f| has(&refs[i], &f.id).is_none())
                .cloned()
                .collect();
            let kept = refs[i]
                .iter()
                .filter_map(|f| {
                    let b = has(base, &f.id)?;
                    let mut f = f.clone();
                    f.was = (b.severity != f.severity).then_some(b.severity);
                    Some(f)
                })
                .collect();
            FindingsChange {
                run: i,
                baseline: 0,
                appeared,
                gone,
                kept,
            }
        })
        .collect()
}
