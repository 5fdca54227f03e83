//! The diagnose command's short load ramp: closed-model steps at 1, 2, 4, … up to
//! `--max-connections` connections, a few seconds each, stopping early when errors or
//! p99 explode. The steps and their joined per-second timeline feed the load rules
//! (knee, errors under load, periodic spikes, retransmits, client-bound).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::http::{ClientOptions, RequestSpec};
use crate::diagnose::diagnosis::Ramp;
use crate::diagnose::{LoadFacts, LoadStep};
use crate::load::{self, LoadPlan};
use crate::net::Target;
use crate::stats::Percentiles;

/// How far and how long the ramp goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RampPlan {
    pub max_connections: u32,
    pub step: Duration,
}

/// A step whose error rate passes this ends the ramp.
const STOP_ERROR_RATE: f64 = 0.2;
/// A step whose p99 passes this many times the first step's (and 1 s) ends the ramp.
const STOP_P99_RATIO: f64 = 50.0;

/// Concurrency levels: 1, 2, 4, … capped at `max`, which is always the last.
pub(crate) fn levels(max: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut c = 1;
    while c < max {
        v.push(c);
        c *= 2;
    }
    v.push(max);
    v
}

/// Runs the ramp. Fails only when its first step cannot run at all.
pub(crate) fn run(
    target: &Target,
    request: &RequestSpec,
    client: &ClientOptions,
    plan: &RampPlan,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<Ramp> {
    let mut steps = Vec::new();
    let mut facts = LoadFacts::default();
    let mut timeline_json = Vec::new();
    let mut histograms = Vec::new();
    let mut stopped_early = None;
    let (mut hits, mut answered) = (0u64, 0u64);
    let mut offset = 0u32;
    let mut cpu = Vec::new();
    let levels = levels(plan.max_connections);
    for (i, &c) in levels.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            stopped_early = Some("interrupted".to_string());
            break;
        }
        progress(c);
        let mut lp = LoadPlan::closed(&target.url, c, plan.step)?;
        lp.client = client.clone();
        for e in &mut lp.endpoints {
            e.method = request.method.clone();
            e.headers = request.headers.clone();
            e.body = request.body.clone();
        }
        lp.threads = lp.threads.min(c as usize).max(1);
        let r = load::run(&lp, stop)?;
        let p = Percentiles::from_histogram(&r.latency, crate::stats::Unit::Millis);
        let errors = r.requests - r.ok;
        let step = LoadStep {
            concurrency: c,
            rps: r.requests as f64 / r.elapsed.as_secs_f64().max(1e-9),
            p50_ms: p.p50,
            p99_ms: p.p99,
            requests: r.requests,
            errors,
        };
        steps.push(step);
        hits += r.cache_hits;
        answered += r.ok;
        cpu.push(r.client_cpu_pct);
        let f = r.facts();
        for mut s in f.timeline {
            s.t += offset;
            facts.timeline.push(s);
        }
        for s in &r.timeline {
            timeline_json.push(json!({
                "t": s.t + offset, "concurrency": c, "requests": s.requests, "ok": s.ok,
                "errors": s.errors, "bytes": s.bytes, "p50_ms": s.p50_ms, "p90_ms": s.p90_ms,
                "p99_ms": s.p99_ms, "max_ms": s.max_ms, "active": s.active,
                "cache_hits": s.cache_hits, "retrans": s.retrans,
            }));
        }
        for mut h in r.histograms() {
            if h.second.is_none() {
                h.name = format!("{}@c{c}", h.name);
            } else {
                h.second = h.second.map(|t| t + offset);
            }
            histograms.push(h);
        }
        offset += r.timeline.len() as u32;
        facts.requests += r.requests;
        facts.errors += errors;
        for (k, v) in &f.errors_by_kind {
            *facts.errors_by_kind.entry(k.clone()).or_default() += v;
        }
        facts.connect_ms.extend(f.connect_ms);
        facts.threads = facts.threads.max(f.threads);
        facts.p50_ms = p.p50;
        facts.p99_ms = p.p99;
        facts.p999_ms = p.p999;
        if r.aborted {
            stopped_early = Some("interrupted".to_string());
            break;
        }
        let base = steps[0].p99_ms;
        if step.error_rate() > STOP_ERROR_RATE && i + 1 < levels.len() {
            stopped_early = Some(format!(
                "{:.0}% errors at {c} connections",
                step.error_rate() * 100.0
            ));
            break;
        }
        if step.p99_ms > 1000.0 && step.p99_ms > STOP_P99_RATIO * base && i + 1 < levels.len() {
            stopped_early = Some(format!(
                "p99 {:.0} ms at {c} connections, {:.0}× the first step's",
                step.p99_ms,
                step.p99_ms / base.max(1e-9)
            ));
            break;
        }
    }
    if steps.is_empty() {
        anyhow::bail!("interrupted before the first step");
    }
    facts.client_cpu_pct = cpu.iter().copied().reduce(f64::max);
    facts.steps = steps.clone();
    let hit_ratio = (hits > 0 && answered > 0).then(|| hits as f64 / answered as f64);
    let json = json!({
        "kind": "load",
        "model": "closed",
        "ramp": steps.iter().map(|s| json!({
            "connections": s.concurrency, "rps": s.rps, "p50_ms": s.p50_ms,
            "p99_ms": s.p99_ms, "requests": s.requests, "errors": s.errors,
        })).collect::<Vec<Value>>(),
        "requests": facts.requests,
        "errors": facts.errors_by_kind,
        "client_cpu_pct": facts.client_cpu_pct,
        "cache_hit_ratio": hit_ratio,
        "stopped_early": stopped_early,
        "timeline": timeline_json,
    });
    Ok(Ramp {
        steps,
        stopped_early,
        hit_ratio,
        facts,
        json,
        histograms,
    })
}

#[cfg(test)]
mod tests {
    use super::levels;

    #[test]
    fn levels_double_up_to_the_cap() {
        assert_eq!(levels(64), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(levels(10), vec![1, 2, 4, 8, 10]);
        assert_eq!(levels(1), vec![1]);
    }
}
