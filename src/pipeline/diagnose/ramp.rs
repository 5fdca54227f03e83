//! Diagnose's short load ramp: closed-model steps at 1, 2, 4, … up to
//! `--max-connections` connections, a few seconds each, stopping early when errors or
//! p99 explode. The steps and their joined per-second timeline feed the load rules
//! (knee, errors under load, periodic spikes, retransmits, client-bound).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::RampPlan;
use crate::diagnose::diagnosis::{Ramp, RampCache};
use crate::diagnose::{LoadFacts, LoadStep};
use crate::load::capacity::Joined;
use crate::load::steps::{Level, StepPlan};
use crate::load::{self, threshold, LoadPlan};
use crate::net::Target;
use crate::net::{ClientOptions, RequestSpec};
use crate::observe::{Observer, Step};
use crate::stats::Percentiles;
use crate::stats::StoredHistogram;
use crate::watch::{ServerSecond, Watched};

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

/// Runs the ramp. Fails only when its first step cannot run at all. `obs` hears each
/// step begin (its connections, of how many levels) and the engine's progress once a
/// second during it.
pub(crate) fn run(
    target: &Target,
    request: &RequestSpec,
    client: &ClientOptions,
    plan: &RampPlan,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer<load::Progress>,
) -> anyhow::Result<Ramp> {
    let mut steps = Vec::new();
    let mut facts = LoadFacts::default();
    let mut joined = Joined::default();
    let mut histograms = Vec::new();
    let mut stopped_early = None;
    let (mut hits, mut answered) = (0u64, 0u64);
    let (mut misses, mut kind) = (0u64, None);
    let mut cpu = Vec::new();
    let mut spans = Vec::new();
    let levels = levels(plan.max_connections);
    // One base plan; each step runs it at its level (load::steps, as --find-max).
    let mut base = LoadPlan::closed(&target.url, plan.max_connections, plan.step)?;
    base.client = client.clone();
    for e in &mut base.endpoints {
        e.method = request.method.clone();
        e.headers = request.headers.clone();
        e.body = request.body.clone();
    }
    for (i, &c) in levels.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            stopped_early = Some("interrupted".to_string());
            break;
        }
        obs.step(&Step {
            index: i,
            of: Some(levels.len()),
            level: format!("{c} connections"),
            connections: Some(c),
        });
        let step_plan = StepPlan {
            level: Level::Connections(c),
            settle: Duration::ZERO,
            length: plan.step,
            grace: None,
        };
        // The ramp's stop rules as objectives: errors, and a p99 that exploded
        // against the first step's.
        let mut objectives = vec![threshold::parse(&format!(
            "error_rate<={}%",
            STOP_ERROR_RATE * 100.0
        ))?];
        if let Some(first) = steps.first() {
            let first: &LoadStep = first;
            let limit = (STOP_P99_RATIO * first.p99_ms).max(1000.0);
            objectives.push(threshold::parse(&format!("p99<={limit}ms"))?);
        }
        let judged =
            load::steps::run(&base, &step_plan, &objectives, stop, &mut |p| obs.second(p))?;
        let failed = |k: usize| {
            judged
                .checks
                .iter()
                .any(|c| c.objective == k && !c.verdict.ok && c.verdict.value.is_some())
        };
        let (too_many_errors, p99_exploded) = (failed(0), failed(1));
        let r = &judged.result;
        let p = Percentiles::from_histogram(&r.latency, crate::stats::Unit::Millis);
        let errors = r.requests - r.ok;
        let step = LoadStep {
            concurrency: c,
            rps: r.requests as f64 / r.elapsed.as_secs_f64().max(1e-9),
            p50_ms: p.p50,
            p99_ms: p.p99,
            requests: r.requests,
            errors,
            p99_interval: crate::stats::interval::histogram_quantile(&r.latency, 0.99)
                .map(|iv| (iv.low, iv.high)),
            p50_interval: crate::stats::interval::histogram_quantile(&r.latency, 0.5)
                .map(|iv| (iv.low, iv.high)),
        };
        steps.push(step);
        hits += r.cache_hits;
        misses += r.cache_misses;
        kind = r.cache_kind.or(kind);
        answered += r.ok;
        cpu.push((r.client_cpu_pct, r.client_wait_pct, r.threads as u32));
        // Requests still in flight when a step ends complete in a short extra second;
        // it belongs to the step's last whole second, so steps sit back to back on the
        // joined timeline and a stall period is not stretched by one second per step.
        let whole = (plan.step.as_secs_f64().ceil() as u32).max(1);
        let offset = joined.offset;
        let at = |t: u32| offset + t.min(whole - 1);
        spans.push((r.started, r.timeline.len(), offset, whole));
        let f = crate::diagnose::from_load::load_facts(r);
        for mut s in f.timeline {
            s.t = at(s.t);
            match facts.timeline.last_mut() {
                Some(last) if last.t == s.t => merge_second(last, &s),
                _ => facts.timeline.push(s),
            }
        }
        joined.push(i, &judged, Some(c), false);
        for h in r.histograms() {
            if h.second.is_none() {
                histograms.push(StoredHistogram {
                    name: format!("{}@c{c}", h.name),
                    ..h
                });
            }
        }
        facts.requests += r.requests;
        facts.errors += errors;
        for (k, v) in &f.errors_by_kind {
            *facts.errors_by_kind.entry(k.clone()).or_default() += v;
        }
        facts.connect_ms.extend(f.connect_ms);
        facts.endpoints = f.endpoints;
        facts.cache_hits += f.cache_hits;
        facts.client_syn_retried_conns += f.client_syn_retried_conns;
        facts.client_syn_retrans = Some(facts.client_syn_retrans.unwrap_or(0) + r.syn_retrans);
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (a, None) => a,
            (a, Some(b)) => Some(a.unwrap_or(0) + b),
        };
        facts.client_data_retrans = add(facts.client_data_retrans, f.client_data_retrans);
        facts.client_early_retrans = add(facts.client_early_retrans, f.client_early_retrans);
        facts.p50_ms = p.p50;
        facts.p99_ms = p.p99;
        facts.p999_ms = p.p999;
        // The same step's latencies, counted (tail-heavy counts them over its
        // threshold).
        facts.latency_ms = f.latency_ms;
        if r.aborted {
            stopped_early = Some("interrupted".to_string());
            break;
        }
        let base = steps[0].p99_ms;
        if too_many_errors && i + 1 < levels.len() {
            // Say which errors: the kinds, and a head over the limit by name.
            let mut kinds: Vec<String> = f
                .errors_by_kind
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            if load::h2_floods() > 0 {
                kinds.push(format!(
                    "{} HTTP/2 connections ended for a control-frame flood (GOAWAY ENHANCE_YOUR_CALM)",
                    load::h2_floods()
                ));
            }
            if load::head_too_large() > 0 {
                kinds.push(format!(
                    "response headers over {} KiB, latscope's limit",
                    crate::net::http::MAX_RESPONSE_HEAD / 1024
                ));
            }
            stopped_early = Some(format!(
                "{:.0}% errors at {c} connections ({})",
                step.error_rate() * 100.0,
                kinds.join(", ")
            ));
            break;
        }
        if p99_exploded && i + 1 < levels.len() {
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
    // Steps run different numbers of threads: client-bound judges the step whose
    // threads were busiest, with that step's thread count.
    let busy = |&(cpu, wait, threads): &(f64, Option<f64>, u32)| {
        crate::diagnose::facts::busy_per_thread(cpu, wait, threads)
    };
    if let Some(&(c, w, t)) = cpu.iter().max_by(|a, b| busy(a).total_cmp(&busy(b))) {
        facts.client_cpu_pct = Some(c);
        facts.client_wait_pct = w;
        facts.threads = t;
    }
    facts.steps = steps.clone();
    // As the load JSON counts it: hits over every answer, once any cache said anything.
    let hit_ratio = (hits + misses > 0 && answered > 0).then(|| hits as f64 / answered as f64);
    histograms.extend(joined.histograms);
    Ok(Ramp {
        steps,
        stopped_early,
        hit_ratio,
        facts,
        timeline: joined.timeline,
        cache: RampCache {
            hits,
            misses,
            answered,
            kind,
        },
        outputs: Vec::new(),
        watch: None,
        histograms,
        spans,
    })
}

/// Joins `--watch`'s scrapes to the ramp's joined timeline (facts and JSON rows) and
/// sets the `watch` summary of its `load` object.
pub(crate) fn join_watched(watched: &Watched, ramp: &mut Ramp) {
    let mut joined: Vec<Option<ServerSecond>> = Vec::new();
    for &(started, n, offset, whole) in &ramp.spans {
        for (t, s) in watched.seconds(started, n).into_iter().enumerate() {
            let at = (offset + (t as u32).min(whole.max(1) - 1)) as usize;
            if joined.len() <= at {
                joined.resize(at + 1, None);
            }
            if joined[at].is_none() {
                joined[at] = s;
            }
        }
    }
    for s in &mut ramp.facts.timeline {
        s.server = joined.get(s.t as usize).cloned().flatten();
    }
    for row in &mut ramp.timeline {
        row.watched = true;
        row.second.server = joined.get(row.second.t as usize).cloned().flatten();
    }
    ramp.watch = Some(watched.summary(&joined));
}

/// Folds `s` into `last` (the same second): counts add up, percentiles take the worse.
fn merge_second(last: &mut crate::diagnose::Second, s: &crate::diagnose::Second) {
    last.requests += s.requests;
    last.errors += s.errors;
    last.retrans += s.retrans;
    last.syn_retrans += s.syn_retrans;
    last.client_syn_retrans += s.client_syn_retrans;
    last.client_early_retrans += s.client_early_retrans;
    last.started += s.started;
    last.started_max_ms = last.started_max_ms.max(s.started_max_ms);
    if last.endpoints.len() < s.endpoints.len() {
        last.endpoints.resize(s.endpoints.len(), (0, 0.0));
    }
    for (a, b) in last.endpoints.iter_mut().zip(&s.endpoints) {
        a.0 += b.0;
        a.1 = a.1.max(b.1);
    }
    last.p50_ms = last.p50_ms.max(s.p50_ms);
    last.p99_ms = last.p99_ms.max(s.p99_ms);
    last.max_ms = last.max_ms.max(s.max_ms);
    if last.server.is_none() {
        last.server = s.server.clone();
    }
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
