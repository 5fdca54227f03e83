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

use super::early::{EarlyStop, Watch};
use super::engine::Progress;
use super::plan::{default_threads, LoadPlan, Model};
use super::result::LoadResult;
use super::threshold::{Metric, Op, Threshold};
pub use super::window::{judge, Check, Window, WindowEndpoint};
use super::LoadError;

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
    /// Ended before its planned length because an objective's failure was already
    /// decided (`early`); the plan's `length` is then the scored time it ran.
    pub stopped_early: Option<EarlyStop>,
}

impl Step {
    /// Every objective held and the rate was sustained (never for an interrupted
    /// or early-stopped step).
    pub fn pass(&self) -> bool {
        !self.interrupted
            && self.stopped_early.is_none()
            && self.shortfall.is_none()
            && self.checks.iter().all(|c| c.verdict.ok)
    }

    /// Completed requests per second in the window; an open-model step's never
    /// above its rate (see [`achieved`]).
    pub fn achieved_rps(&self) -> f64 {
        achieved(self.plan.level, self.window.rps()).0
    }

    /// Open model: requests per second the window completed beyond its rate (a
    /// backlog from the settle drained; see [`achieved`]).
    pub fn drained_rps(&self) -> Option<f64> {
        achieved(self.plan.level, self.window.rps()).1
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

/// The achieved rate of a step whose window completed `completed_rps`, and what it
/// completed beyond the rate asked for. An open model sends at its rate: a window
/// that completes more drains a backlog of arrivals due before it (a slow settle,
/// a stall), which is not rate achieved; an early-stopped step, whose window is a
/// second or two, showed 1147/s at 704 (issue 29). Closed model: as measured.
pub fn achieved(level: Level, completed_rps: f64) -> (f64, Option<f64>) {
    match level {
        Level::Rate(target) if completed_rps > target => (target, Some(completed_rps - target)),
        _ => (completed_rps, None),
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
    run_watched(base, step, objectives, false, stop, progress)
}

/// [`run`], and with `early` the step also ends as soon as an objective's failure
/// is decided (see `early`): it is then judged on the seconds it scored and marked
/// `stopped_early`.
pub fn run_watched(
    base: &LoadPlan,
    step: &StepPlan,
    objectives: &[Threshold],
    early: bool,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Step, LoadError> {
    let plan = plan_for(base, step);
    let own = Arc::new(AtomicBool::new(false));
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let end = step.grace.map(|g| step.settle + step.length + g);
    let mut watch = early.then(|| {
        Watch::new(
            objectives,
            step.level,
            step.settle,
            step.length,
            plan.endpoints.len(),
        )
    });
    let mut decided: Option<EarlyStop> = None;
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
        let r = super::run_with_progress(&plan, &own, &mut |p: &Progress| {
            if let Some(w) = watch.as_mut() {
                if decided.is_none() && !p.finished {
                    if let Some(e) = w.push(&p.seconds) {
                        decided = Some(e);
                        own.store(true, Ordering::SeqCst);
                    }
                }
            }
            progress(p)
        });
        done.store(true, Ordering::Relaxed);
        r
    })?;
    let interrupted = stop.load(Ordering::SeqCst);
    if interrupted {
        return Ok(judge_step(*step, result, objectives, true));
    }
    match decided {
        Some(e) => {
            let scored = StepPlan {
                length: e.scored,
                ..*step
            };
            let mut judged = judge_step(scored, result, objectives, false);
            if e.shortfall && judged.shortfall.is_none() {
                // Decided for the whole window, whatever the seconds scored show.
                judged.shortfall = Some(Shortfall {
                    target_rps: step.level.value(),
                    achieved_rps: judged.achieved_rps(),
                    by: if judged.client_bound() {
                        Limit::Client
                    } else {
                        Limit::Server
                    },
                });
            }
            judged.stopped_early = Some(e);
            Ok(judged)
        }
        None => Ok(judge_step(*step, result, objectives, false)),
    }
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
        stopped_early: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::threshold::parse;

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

    /// Issue 29: an open-model step never achieves more than its rate (what it
    /// completed beyond is a drained backlog, said apart); below its rate, and in
    /// the closed model, the measured rate stands.
    #[test]
    fn achieved_never_exceeds_an_open_steps_rate() {
        assert_eq!(achieved(Level::Rate(704.0), 1147.0), (704.0, Some(443.0)));
        assert_eq!(achieved(Level::Rate(704.0), 650.0), (650.0, None));
        assert_eq!(achieved(Level::Rate(704.0), 704.0), (704.0, None));
        assert_eq!(achieved(Level::Connections(8), 1147.0), (1147.0, None));
    }

    #[test]
    fn levels_print_and_tag() {
        assert_eq!(Level::Rate(210.0).to_string(), "210 req/s");
        assert_eq!(Level::Rate(12.5).tag(), "r12.5");
        assert_eq!(Level::Connections(16).to_string(), "16 connections");
    }
}
