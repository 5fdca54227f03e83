//! One way to run a load step and judge it: the `--find-max` search (`search`) and
//! diagnose's ramp both run their steps here. A step is one engine run at one level —
//! an arrival rate in the open model, connections (VUs) in the closed one — made of
//! a settle period that is not scored, then the measured window. The window's seconds
//! (the per-second histograms of the timeline, so nothing is sampled twice) are
//! judged against objectives in the `--threshold` grammar; in the open model the
//! completed rate is also held against the target, and a shortfall says whether
//! latscope itself (its CPU) or the server could not keep up. Nothing here prints.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::engine::Progress;
use super::plan::{default_threads, LoadPlan, Model};
use super::result::LoadResult;
use super::threshold::{Metric, MetricSource, Op, Scope, Threshold, Verdict};
use super::LoadError;
use crate::stats::histogram::new_histogram;

/// A step that completes less than this share of its target rate fails (the share
/// the `rate-not-sustained` rule uses).
pub const SUSTAINED: f64 = 0.9;
/// latscope's worker threads busy (on a CPU or waiting for one) at least this share
/// of the step, percent per thread: the client, not the server, was the limit (the
/// `client-bound` rule's bar).
pub const CLIENT_BUSY_PCT: f64 = 90.0;

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// Open model: requests per second.
    Rate(f64),
    /// Closed model: connections (VUs over HTTP/1.1).
    Connections(u32),
}

impl Level {
    /// The level as a number (req/s or connections).
    pub fn value(self) -> f64 {
        match self {
            Level::Rate(r) => r,
            Level::Connections(c) => f64::from(c),
        }
    }

    /// "req/s" or "connections".
    pub fn unit(self) -> &'static str {
        match self {
            Level::Rate(_) => "req/s",
            Level::Connections(_) => "connections",
        }
    }

    /// A short tag for names of stored histograms: `r210`, `c16`.
    pub fn tag(self) -> String {
        match self {
            Level::Rate(r) => format!("r{}", fmt_level(r)),
            Level::Connections(c) => format!("c{c}"),
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", fmt_level(self.value()), self.unit())
    }
}

/// A level as people read it: 210, 12.5, 0.3.
pub fn fmt_level(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What one step does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepPlan {
    pub level: Level,
    /// Run first and not scored (whole seconds: the timeline's seconds are whole).
    pub settle: Duration,
    /// The measured window.
    pub length: Duration,
    /// How long requests in flight at the end may still finish before they are
    /// abandoned (counted incomplete); None: the engine's own grace.
    pub grace: Option<Duration>,
}

impl StepPlan {
    /// Settle, window and grace: the longest the step takes.
    pub fn total(&self) -> Duration {
        self.settle + self.length + self.grace.unwrap_or(super::engine::grace(Duration::MAX))
    }
}

/// The settle period for a window of `length`: a fifth of it, 1 to 5 s, whole
/// seconds.
pub fn default_settle(length: Duration) -> Duration {
    Duration::from_secs((length.as_secs_f64() / 5.0).round().clamp(1.0, 5.0) as u64)
}

/// The grace a step's stragglers get: a request still in flight this long after the
/// window has already broken every latency objective (so waiting longer tells
/// nothing), at least 200 ms, at most the engine's 2 s.
pub fn grace_for(objectives: &[Threshold]) -> Duration {
    let slowest = objectives
        .iter()
        .filter(|o| latency_metric(o.metric) && matches!(o.op, Op::Lt | Op::Le))
        .map(|o| o.limit)
        .fold(0.0, f64::max);
    if slowest <= 0.0 {
        return Duration::from_secs(2);
    }
    Duration::from_secs_f64((slowest * 1.5 / 1e3).clamp(0.2, 2.0))
}

fn latency_metric(m: Metric) -> bool {
    matches!(
        m,
        Metric::Quantile(_) | Metric::Min | Metric::Mean | Metric::Max
    )
}

/// The plan of one step: `base` (requests, client settings, threads) at the step's
/// level for settle + window. A rate step opens as many connections as `load --rate`
/// would, unless `base` is an open-model plan, whose pool (`-c`) it keeps.
pub fn plan_for(base: &LoadPlan, step: &StepPlan) -> LoadPlan {
    let mut p = base.clone();
    p.duration = Some(step.settle + step.length);
    p.count = None;
    p.stages = Vec::new();
    p.thresholds = Vec::new();
    p.raw = None;
    match step.level {
        Level::Rate(rate) => {
            p.model = Model::Open { rate };
            // Enough connections for the rate at a one-second latency (as `load
            // --rate` picks); an open-model base keeps its pool (`-c`).
            if base.model == Model::Closed {
                let want = rate.ceil().clamp(16.0, 10_000.0) as u32;
                p.connections = super::limits::fit_fd_limit(want, false).unwrap_or(want);
            }
            p.threads = base.threads.max(1).min(p.connections as usize).max(1);
        }
        Level::Connections(c) => {
            p.model = Model::Closed;
            p.connections = c.max(1);
            p.threads = default_threads()
                .min(base.threads.max(1))
                .min(c.max(1) as usize)
                .max(1);
        }
    }
    p
}

/// The scored part of a step: its seconds after the settle.
#[derive(Debug, Clone)]
pub struct Window {
    /// The window's planned length, seconds (the rate's denominator).
    pub seconds: f64,
    /// Completed requests (ok + errors) in the window, the grace's stragglers included.
    pub requests: u64,
    /// Of them, those completed before the window's planned end (the rate's
    /// numerator: the stragglers finished in time the window does not count).
    pub in_time: u64,
    pub ok: u64,
    /// Open model: arrivals dropped in the window (the backlog was full).
    pub dropped: u64,
    /// Requests abandoned at the end (still in flight after the grace).
    pub incomplete: u64,
    pub latency: Histogram<u64>,
    pub endpoints: Vec<WindowEndpoint>,
}

/// One endpoint in the window.
#[derive(Debug, Clone)]
pub struct WindowEndpoint {
    pub name: String,
    /// Requests and ok answers: the window's with one endpoint; with several, the
    /// whole step's (the timeline keeps no per-endpoint counts per second).
    pub requests: u64,
    pub ok: u64,
    /// The window's latencies (the whole step's beyond 100 endpoints, whose seconds
    /// the timeline does not keep).
    pub latency: Histogram<u64>,
}

impl Window {
    /// Completed requests per second.
    pub fn rps(&self) -> f64 {
        self.in_time as f64 / self.seconds.max(1e-9)
    }

    /// Errors / requests, percent (None when nothing completed).
    pub fn error_pct(&self) -> Option<f64> {
        (self.requests > 0).then(|| {
            (self.requests - self.ok.min(self.requests)) as f64 * 100.0 / self.requests as f64
        })
    }

    /// The window of `r`, a step that settled for `settle` and was measured for
    /// `length`.
    pub fn of(r: &LoadResult, settle: Duration, length: Duration) -> Window {
        let from = settle.as_secs() as u32;
        let end = (settle + length).as_secs_f64().ceil() as u32;
        let in_time = r
            .timeline
            .iter()
            .filter(|s| s.t >= from && s.t < end)
            .map(|s| s.requests)
            .sum();
        let endpoints = r.endpoints.len();
        if from == 0 {
            return Window {
                seconds: length.as_secs_f64(),
                requests: r.requests,
                in_time,
                ok: r.ok,
                dropped: r.dropped,
                incomplete: r.incomplete,
                latency: r.latency.clone(),
                endpoints: r
                    .endpoints
                    .iter()
                    .map(|e| WindowEndpoint {
                        name: e.name.clone(),
                        requests: e.requests,
                        ok: e.ok,
                        latency: e.latency.clone(),
                    })
                    .collect(),
            };
        }
        let mut de = Deserializer::new();
        let mut decode = |b: &[u8]| -> Option<Histogram<u64>> {
            if b.is_empty() {
                return None;
            }
            de.deserialize::<u64, _>(&mut &b[..]).ok()
        };
        let mut latency = new_histogram();
        // Full-range histograms: adding into a small auto-resizing one (as the
        // recorder starts them) lost the values here.
        let mut per_ep: Vec<Histogram<u64>> = if super::recorder::keeps_endpoint_seconds(endpoints)
        {
            (0..endpoints).map(|_| new_histogram()).collect()
        } else {
            Vec::new()
        };
        let (mut requests, mut ok, mut dropped) = (0, 0, 0);
        let mut kept_ep = false;
        for s in r.timeline.iter().filter(|s| s.t >= from) {
            requests += s.requests;
            ok += s.ok;
            dropped += s.dropped;
            if let Some(h) = decode(&s.v2) {
                let _ = latency.add(&h);
            }
            for (i, b) in s.ep_v2.iter().enumerate() {
                kept_ep = true;
                if let (Some(h), Some(acc)) = (decode(b), per_ep.get_mut(i)) {
                    let _ = acc.add(&h);
                }
            }
        }
        per_ep.resize_with(endpoints, new_histogram);
        let endpoints = r
            .endpoints
            .iter()
            .zip(per_ep)
            .map(|(e, h)| {
                if endpoints == 1 {
                    WindowEndpoint {
                        name: e.name.clone(),
                        requests,
                        ok,
                        latency: latency.clone(),
                    }
                } else {
                    WindowEndpoint {
                        name: e.name.clone(),
                        requests: e.requests,
                        ok: e.ok,
                        latency: if kept_ep { h } else { e.latency.clone() },
                    }
                }
            })
            .collect();
        Window {
            seconds: length.as_secs_f64(),
            requests,
            in_time,
            ok,
            dropped,
            incomplete: r.incomplete,
            latency,
            endpoints,
        }
    }
}

/// The numbers one objective is judged on.
struct Source<'a> {
    latency: &'a Histogram<u64>,
    requests: u64,
    ok: u64,
    seconds: f64,
}

impl MetricSource for Source<'_> {
    fn metric(&self, m: Metric) -> Option<f64> {
        let lat = |v: u64| Some(v as f64 / 1e6);
        match m {
            Metric::Requests => Some(self.requests as f64),
            Metric::Rps => Some(self.requests as f64 / self.seconds.max(1e-9)),
            Metric::ErrorRate if self.requests == 0 => None,
            Metric::ErrorRate => Some(
                (self.requests - self.ok.min(self.requests)) as f64 * 100.0 / self.requests as f64,
            ),
            _ if self.latency.is_empty() => None,
            Metric::Min => lat(self.latency.min()),
            Metric::Max => lat(self.latency.max()),
            Metric::Mean => Some(self.latency.mean() / 1e6),
            Metric::Quantile(q) => lat(self.latency.value_at_quantile(q as f64 / 1e6)),
        }
    }
}

/// One objective judged on one scope of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Index of the objective in the list the step was judged against.
    pub objective: usize,
    pub verdict: Verdict,
    /// How hard the value presses on the limit: value / limit for `<` rules, limit /
    /// value for `>` rules; above 1 the rule fails. None when there was no value.
    pub pressure: Option<f64>,
}

/// Judges `objectives` on a window. An objective without an endpoint holds for every
/// endpoint on its own (`p99<1s` means every endpoint's p99), which is stricter than
/// the run as a whole and names the endpoint that fails.
pub fn judge(objectives: &[Threshold], w: &Window) -> Vec<Check> {
    let all = Source {
        latency: &w.latency,
        requests: w.requests,
        ok: w.ok,
        seconds: w.seconds,
    };
    let eps: Vec<Source<'_>> = w
        .endpoints
        .iter()
        .map(|e| Source {
            latency: &e.latency,
            requests: e.requests,
            ok: e.ok,
            seconds: w.seconds,
        })
        .collect();
    let named: Vec<(String, &dyn MetricSource)> = w
        .endpoints
        .iter()
        .zip(&eps)
        .map(|(e, s)| (e.name.clone(), s as &dyn MetricSource))
        .collect();
    let mut out = Vec::new();
    for (i, o) in objectives.iter().enumerate() {
        let rule = if o.scope == Scope::All && named.len() > 1 {
            Threshold {
                scope: Scope::Each,
                ..o.clone()
            }
        } else {
            o.clone()
        };
        for mut v in rule.judge(&all, &named) {
            if o.scope == Scope::All && named.len() == 1 {
                v.endpoint = Some(named[0].0.clone());
            }
            let pressure = v.value.map(|x| match o.op {
                Op::Lt | Op::Le => x / o.limit.max(1e-12),
                Op::Gt | Op::Ge => o.limit / x.max(1e-12),
            });
            out.push(Check {
                objective: i,
                verdict: v,
                pressure,
            });
        }
    }
    out
}

/// Who could not keep up with a step's target rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// latscope's own threads were busy (CPU or waiting for one).
    Client,
    /// The server: requests queued, timed out or were dropped.
    Server,
}

impl Limit {
    /// "client" or "server" (the JSON `limited_by`).
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Client => "client",
            Limit::Server => "server",
        }
    }
}

/// An open-model step that completed less than [`SUSTAINED`] of its target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shortfall {
    pub target_rps: f64,
    pub achieved_rps: f64,
    pub by: Limit,
}

/// A step that ran, judged.
#[derive(Debug, Clone)]
pub struct Step {
    pub plan: StepPlan,
    /// The whole engine run (settle, window and grace).
    pub result: LoadResult,
    pub window: Window,
    pub checks: Vec<Check>,
    pub shortfall: Option<Shortfall>,
    /// latscope's worker threads: busy share per thread, percent.
    pub client_busy_pct: f64,
    /// Stopped by the caller's stop flag (Ctrl-C, `--max-time`) before its end: not
    /// judged.
    pub interrupted: bool,
}

impl Step {
    /// Every objective held and the rate was sustained (never for an interrupted step).
    pub fn pass(&self) -> bool {
        !self.interrupted && self.shortfall.is_none() && self.checks.iter().all(|c| c.verdict.ok)
    }

    /// Completed requests per second in the window.
    pub fn achieved_rps(&self) -> f64 {
        self.window.rps()
    }

    /// Whether latscope's threads were the busy side.
    pub fn client_bound(&self) -> bool {
        self.client_busy_pct >= CLIENT_BUSY_PCT
    }

    /// The failed check that pressed hardest on its limit (a missing value first).
    pub fn worst_failure(&self) -> Option<&Check> {
        self.checks.iter().filter(|c| !c.verdict.ok).max_by(|a, b| {
            let p = |c: &Check| c.pressure.unwrap_or(f64::INFINITY);
            p(a).total_cmp(&p(b))
        })
    }

    /// The check closest to failing, or failed worst (the limiting endpoint's).
    pub fn tightest(&self) -> Option<&Check> {
        self.checks
            .iter()
            .filter(|c| c.pressure.is_some())
            .max_by(|a, b| {
                a.pressure
                    .unwrap_or(0.0)
                    .total_cmp(&b.pressure.unwrap_or(0.0))
            })
    }
}

/// Runs one step at `step.level` with `base`'s requests and judges its window
/// against `objectives`. `stop` (Ctrl-C) ends it early; the step is then marked
/// interrupted. Fails only when the run cannot start (unresolvable host, TLS setup).
pub fn run(
    base: &LoadPlan,
    step: &StepPlan,
    objectives: &[Threshold],
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Step, LoadError> {
    let plan = plan_for(base, step);
    let own = Arc::new(AtomicBool::new(false));
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let end = step.grace.map(|g| step.settle + step.length + g);
    let result = std::thread::scope(|s| {
        // The caller's stop reaches the engine through the step's own flag, which
        // also ends the grace early when the step sets one.
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) || end.is_some_and(|e| started.elapsed() >= e) {
                    own.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let r = super::run_with_progress(&plan, &own, progress);
        done.store(true, Ordering::Relaxed);
        r
    })?;
    let interrupted = stop.load(Ordering::SeqCst);
    Ok(judge_step(*step, result, objectives, interrupted))
}

/// Judges a finished step run (split from [`run`] so it can be tested on its own).
pub fn judge_step(
    plan: StepPlan,
    result: LoadResult,
    objectives: &[Threshold],
    interrupted: bool,
) -> Step {
    let window = Window::of(&result, plan.settle, plan.length);
    let checks = judge(objectives, &window);
    let client_busy_pct = (result.client_cpu_pct + result.client_wait_pct.unwrap_or(0.0))
        / result.threads.max(1) as f64;
    let shortfall = match plan.level {
        Level::Rate(target) if window.rps() < SUSTAINED * target => Some(Shortfall {
            target_rps: target,
            achieved_rps: window.rps(),
            by: if client_busy_pct >= CLIENT_BUSY_PCT {
                Limit::Client
            } else {
                Limit::Server
            },
        }),
        _ => None,
    };
    Step {
        plan,
        result,
        window,
        checks,
        shortfall,
        client_busy_pct,
        interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::threshold::parse;

    fn window(ms: &[(&str, &[u64])]) -> Window {
        let mut all = new_histogram();
        let endpoints = ms
            .iter()
            .map(|(name, v)| {
                let mut h = new_histogram();
                for x in *v {
                    h.record(x * 1_000_000).unwrap();
                    all.record(x * 1_000_000).unwrap();
                }
                WindowEndpoint {
                    name: name.to_string(),
                    requests: v.len() as u64,
                    ok: v.len() as u64,
                    latency: h,
                }
            })
            .collect::<Vec<_>>();
        Window {
            seconds: 1.0,
            requests: all.len(),
            in_time: all.len(),
            ok: all.len(),
            dropped: 0,
            incomplete: 0,
            latency: all,
            endpoints,
        }
    }

    /// `p99<100ms` without an endpoint holds for each endpoint: the slow one fails
    /// and is named, the fast one passes, and the pressure says by how much.
    #[test]
    fn unscoped_objectives_hold_per_endpoint() {
        let w = window(&[("/fast", &[5; 100]), ("/slow", &[200; 100])]);
        let c = judge(&[parse("p99<100ms").unwrap()], &w);
        assert_eq!(c.len(), 2);
        assert!(c[0].verdict.ok);
        assert!(!c[1].verdict.ok);
        assert_eq!(c[1].verdict.endpoint.as_deref(), Some("/slow"));
        assert!((c[1].pressure.unwrap() - 2.0).abs() < 0.01);
        // A named endpoint is judged alone.
        let c = judge(&[parse("/fast:p99<100ms").unwrap()], &w);
        assert!(c.len() == 1 && c[0].verdict.ok);
        // One endpoint: the verdict still names it.
        let w = window(&[("/", &[5; 100])]);
        let c = judge(&[parse("p99<100ms").unwrap()], &w);
        assert_eq!(c[0].verdict.endpoint.as_deref(), Some("/"));
    }

    /// Settle: a fifth of the window, whole seconds from 1 to 5; the grace follows
    /// the slowest latency objective.
    #[test]
    fn settle_and_grace() {
        assert_eq!(
            default_settle(Duration::from_secs(2)),
            Duration::from_secs(1)
        );
        assert_eq!(
            default_settle(Duration::from_secs(10)),
            Duration::from_secs(2)
        );
        assert_eq!(
            default_settle(Duration::from_secs(120)),
            Duration::from_secs(5)
        );
        let g = grace_for(&[parse("p99<100ms").unwrap(), parse("errors<1%").unwrap()]);
        assert_eq!(g, Duration::from_millis(200));
        assert_eq!(
            grace_for(&[parse("p99<1s").unwrap()]),
            Duration::from_millis(1500)
        );
        assert_eq!(
            grace_for(&[parse("errors<1%").unwrap()]),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn levels_print_and_tag() {
        assert_eq!(Level::Rate(210.0).to_string(), "210 req/s");
        assert_eq!(Level::Rate(12.5).tag(), "r12.5");
        assert_eq!(Level::Connections(16).to_string(), "16 connections");
    }
}
