//! A `--find-max` search as data to keep: its `steps` and `capacity` JSON (a
//! contract, README's "JSON" section), and its steps joined back to back into one
//! timeline with their per-second histograms ([`Joined`], which diagnose's ramp uses
//! too), so `show`, `compare`, `report` and `export` read the search as one run.

use serde_json::{json, Map, Value};

use super::result::ms;
use super::search::{Search, SearchModel};
use super::steps::{Level, Step};
use crate::stats::StoredHistogram;

/// Percentiles (ms) of a histogram as the load JSON writes them.
fn pct(h: &hdrhistogram::Histogram<u64>) -> Value {
    serde_json::to_value(ms(h)).unwrap_or(Value::Null)
}

/// One step as JSON: level, achieved rate, pass/fail and why, per endpoint numbers
/// of the scored window. `t` is where the step starts on the joined timeline.
pub fn step_json(step: &Step, t: u32) -> Value {
    let w = &step.window;
    let r = &step.result;
    let mut endpoints = Map::new();
    for e in &w.endpoints {
        let p = ms(&e.latency);
        endpoints.insert(
            e.name.clone(),
            json!({
                "requests": e.requests, "ok": e.ok,
                "p50_ms": p.p50, "p90_ms": p.p90, "p99_ms": p.p99,
                "latency_ms": pct(&e.latency),
            }),
        );
    }
    let worst = step.worst_failure();
    json!({
        "level": step.plan.level.value(),
        "unit": step.plan.level.unit(),
        "target_rps": match step.plan.level { Level::Rate(r) => Some(r), Level::Connections(_) => None },
        "connections": r.connections,
        "achieved": w.rps(),
        "pass": step.pass(),
        "failed_objective": worst.map(|c| c.verdict.expr.clone()),
        "failed_endpoint": worst.and_then(|c| c.verdict.endpoint.clone()),
        "limited_by": step.shortfall.map(|s| s.by.as_str()),
        "requests": w.requests,
        "ok": w.ok,
        "errors": w.requests - w.ok.min(w.requests),
        "error_rate_pct": w.error_pct(),
        "dropped": w.dropped,
        "incomplete": w.incomplete,
        "latency_ms": pct(&w.latency),
        "endpoints": endpoints,
        "checks": step.checks.iter().map(|c| &c.verdict).collect::<Vec<_>>(),
        "client_cpu_pct": r.client_cpu_pct,
        "client_busy_pct": step.client_busy_pct,
        "client_bound": step.client_bound(),
        "settle_s": step.plan.settle.as_secs_f64(),
        "duration_s": step.plan.length.as_secs_f64(),
        "elapsed_s": r.elapsed.as_secs_f64(),
        "t": t,
        "stopped_early": step.stopped_early.is_some(),
        "early_stop": step.stopped_early.as_ref().map(|e| json!({
            "objective": e.objective,
            "reason": e.reason,
            "planned_s": e.planned.as_secs_f64(),
            "scored_s": e.scored.as_secs_f64(),
        })),
    })
}

/// The `capacity` object: the level found, the bracket, the limiting endpoint, why
/// the search stopped. `answer` is the sentence the terminal shows first.
pub fn capacity_json(s: &Search, answer: &str) -> Value {
    let level = |i: Option<usize>| i.map(|i| s.steps[i].plan.level.value());
    json!({
        "level": level(s.pass),
        "unit": match s.model { SearchModel::Open => "req/s", SearchModel::Closed => "connections" },
        "model": match s.model { SearchModel::Open => "open", SearchModel::Closed => "closed" },
        "objective": s.objectives.iter().map(|o| o.expr.clone()).collect::<Vec<_>>(),
        "bracket": [level(s.pass), level(s.fail)],
        "achieved": s.capacity().map(|c| c.achieved_rps()),
        "limiting_endpoint": s.limiting_endpoint(),
        "precision_pct": s.precision * 100.0,
        "stopped": s.stopped.as_str(),
        "answer": answer,
    })
}

/// Steps joined back to back: one timeline (rows as the load JSON's, plus `level`,
/// `step` and `scored`) and its per-second histograms, each step's seconds after the
/// previous step's.
#[derive(Debug, Default)]
pub struct Joined {
    /// Where the next step starts, seconds.
    pub offset: u32,
    pub timeline: Vec<Value>,
    /// Per-second histograms (`latency`, `latency:<endpoint>`) on the joined clock.
    pub histograms: Vec<StoredHistogram>,
}

impl Joined {
    /// Appends `step` (index `i`). Its seconds after its planned end (stragglers in
    /// the grace) fold into its last whole second, so steps sit back to back.
    /// Returns where it starts.
    pub fn push(&mut self, i: usize, step: &Step, extra: &[(&str, Value)]) -> u32 {
        let start = self.offset;
        let planned = step.plan.settle + step.plan.length;
        let whole = (planned.as_secs_f64().ceil() as u32).max(1);
        let settle = step.plan.settle.as_secs() as u32;
        let at = |t: u32| start + t.min(whole - 1);
        if let Value::Array(rows) = step.result.timeline_json() {
            for (s, mut row) in step.result.timeline.iter().zip(rows) {
                row["t"] = json!(at(s.t));
                row["level"] = json!(step.plan.level.value());
                row["step"] = json!(i);
                row["scored"] = json!(s.t >= settle);
                for (k, v) in extra {
                    row[*k] = v.clone();
                }
                match self.timeline.last_mut() {
                    Some(last) if last["t"] == row["t"] => merge_row(last, &row),
                    _ => self.timeline.push(row),
                }
            }
        }
        for mut h in step.result.histograms() {
            if let Some(t) = h.second {
                h.second = Some(at(t));
                push_second(&mut self.histograms, h);
            }
        }
        self.offset += whole;
        start
    }
}

/// Folds a row of the same second into `last`: counts add up, percentiles take the
/// worse.
pub fn merge_row(last: &mut Value, row: &Value) {
    for key in [
        "requests",
        "ok",
        "errors",
        "bytes",
        "dropped",
        "cache_hits",
        "retrans",
        "started",
    ] {
        if let (Some(a), Some(b)) = (last[key].as_u64(), row[key].as_u64()) {
            last[key] = json!(a + b);
        }
    }
    for key in ["p50_ms", "p90_ms", "p99_ms", "max_ms", "active"] {
        if let (Some(a), Some(b)) = (last[key].as_f64(), row[key].as_f64()) {
            last[key] = json!(a.max(b));
        }
    }
}

/// Adds a per-second histogram, adding it to one already kept for that second.
pub fn push_second(kept: &mut Vec<StoredHistogram>, h: StoredHistogram) {
    use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
    let same = kept
        .iter_mut()
        .rev()
        .find(|k| k.second == h.second && k.name == h.name);
    let Some(k) = same else {
        kept.push(h);
        return;
    };
    let mut de = Deserializer::new();
    let decoded: Option<(hdrhistogram::Histogram<u64>, hdrhistogram::Histogram<u64>)> = (|| {
        let a = de.deserialize(&mut k.v2.as_slice()).ok()?;
        let b = de.deserialize(&mut h.v2.as_slice()).ok()?;
        Some((a, b))
    })();
    if let Some((mut a, b)) = decoded {
        if a.add(&b).is_ok() {
            let mut buf = Vec::new();
            if V2DeflateSerializer::new().serialize(&a, &mut buf).is_ok() {
                k.v2 = buf;
            }
        }
    }
}

/// A step's scored histograms as stored: `latency@<tag>` and `latency:<endpoint>@<tag>`
/// (`tag` as `r210` or `c16`).
pub fn step_histograms(step: &Step) -> Vec<StoredHistogram> {
    let tag = step.plan.level.tag();
    let v2 = |h: &hdrhistogram::Histogram<u64>| {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut buf = Vec::new();
        let _ = V2DeflateSerializer::new().serialize(h, &mut buf);
        buf
    };
    let mut out = vec![StoredHistogram {
        name: format!("latency@{tag}"),
        second: None,
        v2: v2(&step.window.latency),
    }];
    if step.window.endpoints.len() > 1 {
        for e in &step.window.endpoints {
            out.push(StoredHistogram {
                name: format!("latency:{}@{tag}", e.name),
                second: None,
                v2: v2(&e.latency),
            });
        }
    }
    out
}
