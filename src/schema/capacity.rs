//! A `--find-max` search in the load document: its `steps` (level, achieved rate,
//! pass/fail and why, per-endpoint numbers of the scored window) and `capacity`
//! (the level found, the bracket, the limiting endpoint, why the search stopped) —
//! docs/json.md; and the rows of a joined timeline (a search's steps, or
//! diagnose's ramp, back to back).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::load::{ThresholdDoc, TimelineRow};
use crate::load::capacity::JoinedSecond;
use crate::load::result::ms;
use crate::load::search::{Search, SearchModel};
use crate::load::steps::{Level, Step};
use crate::stats::Percentiles;

/// One step of a search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepDoc {
    pub level: f64,
    /// "req/s" or "connections".
    pub unit: String,
    /// Open model: the rate asked for.
    pub target_rps: Option<f64>,
    pub connections: u32,
    /// Requests per second completed in the window; open model: never above
    /// `target_rps` (what it completed beyond is `backlog_drained_rps`).
    pub achieved: f64,
    /// Open model: requests per second the window completed beyond its rate, a
    /// backlog of earlier arrivals draining (absent when none, and in runs stored
    /// before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backlog_drained_rps: Option<f64>,
    pub pass: bool,
    pub failed_objective: Option<String>,
    pub failed_endpoint: Option<String>,
    /// Why the open model fell short of its rate ("client", "server", …).
    pub limited_by: Option<String>,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub error_rate_pct: Option<f64>,
    pub dropped: u64,
    pub incomplete: u64,
    pub latency_ms: Percentiles,
    pub endpoints: BTreeMap<String, StepEndpoint>,
    pub checks: Vec<ThresholdDoc>,
    pub client_cpu_pct: f64,
    pub client_busy_pct: f64,
    pub client_bound: bool,
    pub settle_s: f64,
    pub duration_s: f64,
    pub elapsed_s: f64,
    /// Where the step starts on the joined timeline, seconds.
    pub t: u32,
    pub stopped_early: bool,
    pub early_stop: Option<EarlyStopDoc>,
}

/// One endpoint in a step's scored window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepEndpoint {
    pub requests: u64,
    pub ok: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub latency_ms: Percentiles,
}

/// Why a step stopped before its planned length.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EarlyStopDoc {
    pub objective: String,
    pub reason: String,
    pub planned_s: f64,
    pub scored_s: f64,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CapacityDoc {
    /// The highest level that passed (None: even the lowest failed).
    pub level: Option<f64>,
    pub unit: String,
    /// "open" or "closed".
    pub model: String,
    pub objective: Vec<String>,
    /// [pass, fail] levels.
    pub bracket: Vec<Option<f64>>,
    pub achieved: Option<f64>,
    pub limiting_endpoint: Option<String>,
    pub precision_pct: f64,
    /// Why the search stopped.
    pub stopped: String,
    /// The sentence the terminal shows first.
    pub answer: String,
}

impl StepDoc {
    /// The step's document; `t` is where it starts on the joined timeline.
    pub fn of(step: &Step, t: u32) -> StepDoc {
        let w = &step.window;
        let r = &step.result;
        let worst = step.worst_failure();
        StepDoc {
            level: step.plan.level.value(),
            unit: step.plan.level.unit().to_string(),
            target_rps: match step.plan.level {
                Level::Rate(r) => Some(r),
                Level::Connections(_) => None,
            },
            connections: r.connections,
            achieved: step.achieved_rps(),
            backlog_drained_rps: step.drained_rps(),
            pass: step.pass(),
            failed_objective: worst.map(|c| c.verdict.expr.clone()),
            failed_endpoint: worst.and_then(|c| c.verdict.endpoint.clone()),
            limited_by: step.shortfall.map(|s| s.by.as_str().to_string()),
            requests: w.requests,
            ok: w.ok,
            errors: w.requests - w.ok.min(w.requests),
            error_rate_pct: w.error_pct(),
            dropped: w.dropped,
            incomplete: w.incomplete,
            latency_ms: ms(&w.latency),
            endpoints: w
                .endpoints
                .iter()
                .map(|e| {
                    let p = ms(&e.latency);
                    (
                        e.name.clone(),
                        StepEndpoint {
                            requests: e.requests,
                            ok: e.ok,
                            p50_ms: p.p50,
                            p90_ms: p.p90,
                            p99_ms: p.p99,
                            latency_ms: p,
                        },
                    )
                })
                .collect(),
            checks: step
                .checks
                .iter()
                .map(|c| ThresholdDoc::from(&c.verdict))
                .collect(),
            client_cpu_pct: r.client_cpu_pct,
            client_busy_pct: step.client_busy_pct,
            client_bound: step.client_bound(),
            settle_s: step.plan.settle.as_secs_f64(),
            duration_s: step.plan.length.as_secs_f64(),
            elapsed_s: r.elapsed.as_secs_f64(),
            t,
            stopped_early: step.stopped_early.is_some(),
            early_stop: step.stopped_early.as_ref().map(|e| EarlyStopDoc {
                objective: e.objective.clone(),
                reason: e.reason.clone(),
                planned_s: e.planned.as_secs_f64(),
                scored_s: e.scored.as_secs_f64(),
            }),
        }
    }
}

impl CapacityDoc {
    /// The search's answer; `answer` is the sentence the terminal shows first.
    pub fn of(s: &Search, answer: &str) -> CapacityDoc {
        let level = |i: Option<usize>| i.map(|i| s.steps[i].plan.level.value());
        CapacityDoc {
            level: level(s.pass),
            unit: match s.model {
                SearchModel::Open => "req/s",
                SearchModel::Closed => "connections",
            }
            .into(),
            model: match s.model {
                SearchModel::Open => "open",
                SearchModel::Closed => "closed",
            }
            .into(),
            objective: s.objectives.iter().map(|o| o.expr.clone()).collect(),
            bracket: vec![level(s.pass), level(s.fail)],
            achieved: s.capacity().map(|c| c.achieved_rps()),
            limiting_endpoint: s.limiting_endpoint(),
            precision_pct: s.precision * 100.0,
            stopped: s.stopped.as_str().to_string(),
            answer: answer.to_string(),
        }
    }
}

impl From<&JoinedSecond> for TimelineRow {
    fn from(j: &JoinedSecond) -> TimelineRow {
        TimelineRow {
            level: Some(j.level),
            step: Some(j.step as u64),
            scored: Some(j.scored),
            concurrency: j.concurrency,
            interrupted: j.interrupted.then_some(true),
            ..TimelineRow::of(&j.second, j.watched)
        }
    }
}

/// The rows of a joined timeline.
pub fn joined_rows(seconds: &[JoinedSecond]) -> Vec<TimelineRow> {
    seconds.iter().map(TimelineRow::from).collect()
}
