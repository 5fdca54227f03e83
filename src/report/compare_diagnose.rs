//! Diagnose runs in `latscope compare`: the load ramp (peak req/s, the knee, and
//! req/s, p50 and p99 at each concurrency step) and the cache audit (hits,
//! freshness, 304s) as sections, and — for every kind of run — which findings
//! appeared and which went away ([`findings_changes`]).
//!
//! A ramp step lasts a few seconds, too few blocks for a per-second test; its
//! latencies are tested on exceedances over its per-second histograms instead (the
//! requests of each run over the midpoint of the runs' p50 or p99 at that step, see
//! [`super::compare_tail`]), so a step that got 3× faster behind a cache says so.

use std::rc::Rc;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::compare::{metric, Better, Metric, RunSections};
use super::compare_tail::TailData;
use super::rundata::{self, Histograms};
use crate::diagnose::Finding;
use crate::record::RunRecord;
use crate::schema::diagnose::{CacheDoc, ConditionalDoc, DiagnoseEntry};
use crate::schema::{DiagnoseDoc, DiagnoseRun, RampDoc};

/// The ramp and cache sections of a diagnose run (one set per diagnosed URL).
pub(super) fn diagnose_sections(
    run: &RunRecord,
    doc: &DiagnoseRun,
    hist: &Histograms,
) -> RunSections {
    // Every URL in order, one not measured as None (it counts in the numbering).
    let diagnoses: Vec<Option<&DiagnoseDoc>> = match doc {
        DiagnoseRun::One(d) => vec![Some(&**d)],
        DiagnoseRun::Several(s) => s
            .results
            .iter()
            .map(|e| match e {
                DiagnoseEntry::Diagnosed(d) => Some(&**d),
                DiagnoseEntry::Failed { .. } => None,
            })
            .collect(),
    };
    let many = diagnoses.len() > 1;
    let mut out = Vec::new();
    for (i, d) in diagnoses.iter().enumerate() {
        let Some(d) = d else {
            continue;
        };
        let suffix = if many {
            format!(" (URL {})", i + 1)
        } else {
            String::new()
        };
        if let Some(load) = &d.load {
            // Histograms are stored for the first URL's ramp only.
            let h = (i == 0).then_some(hist);
            out.push((format!("load ramp{suffix}"), ramp_metrics(run, load, h)));
        }
        // An audit that did not run still makes its (empty) section.
        out.push((
            format!("cache audit{suffix}"),
            cache_metrics(d.cache.audit()),
        ));
    }
    out
}

/// Connections of each second of the ramp's timeline, by `t`.
fn step_of_second(load: &RampDoc) -> Vec<(u32, u64)> {
    load.timeline
        .iter()
        .filter_map(|s| Some((s.t, u64::from(s.concurrency?))))
        .collect()
}

fn ramp_metrics(run: &RunRecord, load: &RampDoc, hist: Option<&Histograms>) -> Vec<Metric> {
    let steps = &load.ramp;
    let peak = steps
        .iter()
        .map(|s| s.rps)
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
        let c = u64::from(s.connections);
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
                Some(s.rps),
            )
            .blocks(format!("per-second requests at c={c}"), requests),
        );
        for (name, v, q) in [("p50", s.p50_ms, 0.5), ("p99", s.p99_ms, 0.99)] {
            let mut m = metric(&format!("c={c} {name}"), "ms", Better::Lower, Some(v));
            m.tail = tail.clone().map(|t| (q, t));
            out.push(m);
        }
    }
    let errors = load.errors.values().sum::<u64>() as f64;
    let err_blocks: Vec<f64> = timeline.iter().filter_map(|s| s.errors).collect();
    out.push(
        metric("errors", "", Better::Lower, Some(errors)).blocks("per-second errors", err_blocks),
    );
    out
}

/// The concurrency of the run's `knee` finding, if it has one.
fn knee_concurrency(run: &RunRecord) -> Option<f64> {
    findings_of(run)
        .iter()
        .find(|f| f.id == "knee")
        // Evidence is free-form by design (each rule names its own numbers): the
        // knee rule's is read by its name.
        .and_then(|f| f.evidence.get("knee_concurrency")?.as_f64())
}

/// 1 for true, 0 for false.
fn flag(b: bool) -> Option<f64> {
    Some(f64::from(u8::from(b)))
}

/// Whether a conditional request was answered 304.
fn answered_304(v: &Option<ConditionalDoc>) -> Option<f64> {
    v.as_ref().map(|v| f64::from(u8::from(v.status == 304)))
}

/// The cache audit's rows (every value missing when the audit did not run).
fn cache_metrics(c: Option<&CacheDoc>) -> Vec<Metric> {
    vec![
        metric(
            "hits (of repeats)",
            "",
            Better::Higher,
            c.map(|c| c.hits as f64),
        ),
        metric(
            "repeats",
            "",
            Better::Higher,
            c.map(|c| c.repeats.len() as f64),
        ),
        metric(
            "hit ratio under load",
            "share",
            Better::Higher,
            c.and_then(|c| c.load_hit_ratio),
        ),
        metric(
            "freshness (s)",
            "",
            Better::Higher,
            c.and_then(|c| c.freshness_s).map(|f| f as f64),
        ),
        metric(
            "shared cacheable (1 = yes)",
            "",
            Better::Higher,
            c.and_then(|c| flag(c.shared_cacheable)),
        ),
        metric(
            "validators (1 = yes)",
            "",
            Better::Higher,
            c.and_then(|c| flag(c.validators)),
        ),
        metric(
            "304 to If-None-Match (1 = yes)",
            "",
            Better::Higher,
            c.and_then(|c| answered_304(&c.if_none_match)),
        ),
        metric(
            "304 to If-Modified-Since (1 = yes)",
            "",
            Better::Higher,
            c.and_then(|c| answered_304(&c.if_modified_since)),
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

/// A stored run's findings: the record's, else its summary's.
fn findings_of(run: &RunRecord) -> Vec<Finding> {
    crate::schema::from_value(&run.findings)
        .ok()
        .filter(|f: &Vec<Finding>| !f.is_empty())
        .or_else(|| Some(rundata::doc(run)?.findings().into_iter().cloned().collect()))
        .unwrap_or_default()
}

fn to_ref(f: &Finding) -> FindingRef {
    FindingRef {
        id: f.id.clone(),
        severity: f.severity.to_string(),
        title: f.title.clone(),
        was: None,
    }
}

/// Every run after the first against the first: findings that appeared, went away,
/// or stayed (by rule id). Empty when no run has findings.
pub fn findings_changes(runs: &[RunRecord]) -> Vec<FindingsChange> {
    let refs: Vec<Vec<FindingRef>> = runs
        .iter()
        .map(|r| findings_of(r).iter().map(to_ref).collect())
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
