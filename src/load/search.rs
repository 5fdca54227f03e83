//! `latscope load --find-max`: the highest load at which every objective holds.
//! Steps (`steps`) ramp up geometrically from the lowest level until one fails, then
//! the bracket between the last pass and the first fail is narrowed until it is
//! within the precision. Each narrowing step aims where the failing objective is
//! interpolated to reach its limit (or, when the rate fell short, at the rate the
//! server did complete), kept a precision's width inside the bracket, and falls back
//! to the midpoint when a guess did not halve the bracket — so a hockey-stick latency
//! curve takes one or two steps, not five. `--max-time`, the caps and the stop flag
//! end the search with the bracket found so far. Nothing here prints: the caller
//! hears of each step through a callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine::Progress;
use super::plan::LoadPlan;
use super::steps::{self, Level, Step, StepPlan};
use super::threshold::Threshold;
use super::LoadError;

/// What the search varies (`--model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchModel {
    /// Arrival rate, requests per second (latency from the intended send time).
    Open,
    /// Connections (virtual users).
    Closed,
}

/// How to search.
#[derive(Debug, Clone)]
pub struct SearchPlan {
    pub model: SearchModel,
    pub objectives: Vec<Threshold>,
    /// The first level, and the highest one tried.
    pub min: f64,
    pub max: f64,
    /// Stop when (fail − pass) / pass is at most this (0.05 = 5 %).
    pub precision: f64,
    /// Each step's measured window and the settle before it.
    pub step: Duration,
    pub settle: Duration,
    /// No step starts that could not end within this much of the search's start.
    pub max_time: Duration,
    /// End a step as soon as its failure is decided (`early`; off with
    /// `--no-early-stop`).
    pub early_stop: bool,
}

/// The ramp's factor from one level to the next.
pub const FACTOR: f64 = 2.0;

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The bracket is within the precision.
    Precision,
    /// The highest allowed level passed (`--max-rate` / `--max-connections`).
    Cap,
    /// The lowest level already failed.
    LowestFailed,
    /// `--max-time` left no room for another step.
    MaxTime,
    /// The stop flag (Ctrl-C, SIGTERM, the `--max-time` deadline).
    Interrupted,
}

impl Stopped {
    /// The JSON `capacity.stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Precision => "precision",
            Stopped::Cap => "cap",
            Stopped::LowestFailed => "lowest-level-failed",
            Stopped::MaxTime => "max-time",
            Stopped::Interrupted => "interrupted",
        }
    }
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct Search {
    pub model: SearchModel,
    pub objectives: Vec<Threshold>,
    pub precision: f64,
    /// Every judged step, in the order run.
    pub steps: Vec<Step>,
    /// The step the search was in when the stop flag ended it (not judged).
    pub interrupted: Option<Step>,
    /// Index in `steps` of the highest passing level (the capacity).
    pub pass: Option<usize>,
    /// Index in `steps` of the lowest failing level above it.
    pub fail: Option<usize>,
    pub stopped: Stopped,
}

/// What the caller hears while the search runs.
pub enum Event<'a> {
    /// Step `index` (0-based) is about to run at `level`.
    Start { index: usize, level: Level },
    /// A second of the running step.
    Progress(&'a Progress),
    /// A step ended and was judged.
    Done(&'a Step),
}

impl Search {
    /// The capacity step (highest pass).
    pub fn capacity(&self) -> Option<&Step> {
        self.pass.map(|i| &self.steps[i])
    }

    /// The first failing step above the capacity.
    pub fn failed(&self) -> Option<&Step> {
        self.fail.map(|i| &self.steps[i])
    }

    /// The endpoint that limits capacity: the one whose objective failed worst at
    /// the first failing level; when that level failed on its rate alone, the one
    /// closest to its limit there.
    pub fn limiting_endpoint(&self) -> Option<String> {
        let step = self.failed().or(self.capacity())?;
        step.worst_failure()
            .filter(|c| c.verdict.endpoint.is_some())
            .or_else(|| step.tightest())
            .and_then(|c| c.verdict.endpoint.clone())
    }
}

/// Runs the search. Fails only when a step cannot start at all.
pub fn run(
    base: &LoadPlan,
    plan: &SearchPlan,
    stop: &Arc<AtomicBool>,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Search, LoadError> {
    let start = Instant::now();
    let integer = plan.model == SearchModel::Closed;
    let grace = steps::grace_for(&plan.objectives);
    let mut out = Search {
        model: plan.model,
        objectives: plan.objectives.clone(),
        precision: plan.precision,
        steps: Vec::new(),
        interrupted: None,
        pass: None,
        fail: None,
        stopped: Stopped::Interrupted,
    };
    let mut level = plan.min;
    // Whether the next narrowing step may use a guess (false after a guess that did
    // not halve the bracket).
    let mut guess_ok = true;
    // A pause before the next step, for the server to work off what the last one
    // left queued.
    let mut cool = Duration::ZERO;
    loop {
        pause(cool, stop);
        if stop.load(Ordering::SeqCst) {
            out.stopped = Stopped::Interrupted;
            break;
        }
        let step_plan = StepPlan {
            level: match plan.model {
                SearchModel::Open => Level::Rate(level),
                SearchModel::Closed => Level::Connections(level.round().max(1.0) as u32),
            },
            settle: plan.settle,
            length: plan.step,
            grace: Some(grace),
        };
        if start.elapsed() + step_plan.total() > plan.max_time {
            // (The cool-down before it already counted.)
            out.stopped = Stopped::MaxTime;
            break;
        }
        on(Event::Start {
            index: out.steps.len(),
            level: step_plan.level,
        });
        let step = steps::run_watched(
            base,
            &step_plan,
            &plan.objectives,
            plan.early_stop,
            stop,
            &mut |p| on(Event::Progress(p)),
        )?;
        if step.interrupted {
            out.interrupted = Some(step);
            out.stopped = Stopped::Interrupted;
            break;
        }
        on(Event::Done(&step));
        let passed = step.pass();
        cool = if passed {
            Duration::ZERO
        } else {
            cool_down(&step)
        };
        let width_before = bracket(&out).map(|(lo, hi)| hi - lo);
        let was_guess = out.fail.is_some();
        out.steps.push(step);
        let i = out.steps.len() - 1;
        if passed {
            out.pass = Some(i);
        } else {
            out.fail = Some(i);
        }
        if was_guess {
            let after = bracket(&out).map(|(lo, hi)| hi - lo);
            guess_ok = match (width_before, after) {
                (Some(b), Some(a)) => a <= 0.5 * b,
                _ => true,
            };
        }
        let Some((lo, hi)) = bracket(&out) else {
            if out.pass.is_none() {
                // The lowest level failed.
                out.stopped = Stopped::LowestFailed;
                break;
            }
            // Still ramping: every level so far passed.
            if level >= plan.max {
                out.stopped = Stopped::Cap;
                break;
            }
            level = round_level((level * FACTOR).min(plan.max), integer).min(plan.max);
            continue;
        };
        if within(lo, hi, plan.precision, integer) {
            out.stopped = Stopped::Precision;
            break;
        }
        let guess = if guess_ok { guess(&out, lo, hi) } else { None };
        match next_level(lo, hi, guess, plan.precision, integer) {
            Some(next) => level = next,
            None => {
                out.stopped = Stopped::Precision;
                break;
            }
        }
    }
    Ok(out)
}

/// How long the server needs to work off a failed step: the requests it still held
/// at the end (abandoned by latscope, but served or queued by the server all the
/// same) at the rate it completed them, at most the step's own length.
pub fn cool_down(step: &Step) -> Duration {
    let held = step.result.incomplete as f64;
    if held == 0.0 {
        return Duration::ZERO;
    }
    let secs = held / step.achieved_rps().max(1.0);
    let cap = (step.plan.settle + step.plan.length).as_secs_f64();
    Duration::from_secs_f64(secs.min(cap))
}

/// Sleeps `d`, ending early when `stop` is set.
fn pause(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The levels of the highest pass and the lowest fail, once both exist.
fn bracket(s: &Search) -> Option<(f64, f64)> {
    let lo = s.steps[s.pass?].plan.level.value();
    let hi = s.steps[s.fail?].plan.level.value();
    Some((lo, hi))
}

/// Whether the bracket `lo..hi` is narrow enough.
pub fn within(lo: f64, hi: f64, precision: f64, integer: bool) -> bool {
    (integer && hi - lo <= 1.0) || (hi - lo) / lo.max(1e-9) <= precision + 1e-9
}

/// Where the failing objective is interpolated to reach its limit between the pass
/// and the fail step; when the fail step fell short of its rate on no objective, the
/// rate it did complete.
fn guess(s: &Search, lo: f64, hi: f64) -> Option<f64> {
    let (pass, fail) = (&s.steps[s.pass?], &s.steps[s.fail?]);
    if let Some(worst) = fail.worst_failure() {
        let same = pass.checks.iter().find(|c| {
            c.objective == worst.objective && c.verdict.endpoint == worst.verdict.endpoint
        })?;
        let (p, f) = (same.pressure?, worst.pressure?);
        if !(f > p && p < 1.0) {
            return None;
        }
        // In the open model, a failing step that still completed its rate is below
        // saturation, where waiting grows as 1 / (1 − rate / service rate): fit that
        // curve through both steps. Past saturation (the rate fell short) the queue
        // grows with time instead, and the straight line is the better guess.
        let unsaturated =
            matches!(fail.plan.level, Level::Rate(t) if fail.achieved_rps() >= 0.97 * t);
        if unsaturated {
            if let Some(x) = queue_guess((lo, p), (hi, f)) {
                return Some(x);
            }
        }
        return Some(lo + (hi - lo) * (1.0 - p) / (f - p));
    }
    fail.shortfall.map(|s| s.achieved_rps)
}

/// Where a queue's waiting time reaches the limit (pressure 1), from two points
/// (rate, pressure) of `w = a / (1 − rate / mu)`: `mu` and `a` from the two points,
/// then `rate = mu (1 − a)`. None when the points do not fit such a curve.
pub fn queue_guess((l1, p1): (f64, f64), (l2, p2): (f64, f64)) -> Option<f64> {
    let mu = (p2 * l2 - p1 * l1) / (p2 - p1);
    if !mu.is_finite() || mu <= l2 {
        return None;
    }
    let a = p1 * (1.0 - l1 / mu);
    let x = mu * (1.0 - a);
    (x.is_finite() && x > l1 && x < l2).then_some(x)
}

/// The next level inside `lo..hi` (pass..fail): the guess, or the midpoint, kept at
/// least a precision's width from either end (so a fail just above the pass, or a
/// pass just below the fail, ends the search); None when no level fits between.
pub fn next_level(
    lo: f64,
    hi: f64,
    guess: Option<f64>,
    precision: f64,
    integer: bool,
) -> Option<f64> {
    let mid = (lo + hi) / 2.0;
    let (lo_edge, hi_edge) = (lo * (1.0 + precision), hi / (1.0 + precision));
    let x = match guess.filter(|g| g.is_finite()) {
        _ if lo_edge >= hi_edge => mid,
        Some(g) => g.clamp(lo_edge, hi_edge),
        None => mid,
    };
    let x = round_level(x, integer);
    (x > lo && x < hi).then_some(x).or_else(|| {
        // Rounding pushed it onto an end: the midpoint, unrounded for rates.
        let m = if integer { mid.floor() } else { mid };
        (m > lo && m < hi).then_some(m)
    })
}

/// Rates ≥ 20 req/s to whole numbers, lower ones to tenths; connections to whole
/// numbers.
fn round_level(x: f64, integer: bool) -> f64 {
    if integer || x >= 20.0 {
        x.round()
    } else {
        (x * 10.0).round() / 10.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bracket narrows to the precision: 5 % of the pass, or one connection.
    #[test]
    fn within_precision() {
        assert!(within(200.0, 210.0, 0.05, false));
        assert!(!within(200.0, 211.0, 0.05, false));
        assert!(within(19.0, 20.0, 0.05, true));
        assert!(!within(18.0, 20.0, 0.05, true));
    }

    /// A guess near the pass end probes a precision above it (a fail there ends the
    /// search); no guess bisects; integers stay strictly inside.
    #[test]
    fn next_levels() {
        assert_eq!(
            next_level(200.0, 400.0, Some(201.0), 0.05, false),
            Some(210.0)
        );
        assert_eq!(next_level(200.0, 400.0, None, 0.05, false), Some(300.0));
        assert_eq!(
            next_level(200.0, 400.0, Some(399.0), 0.05, false),
            Some(381.0)
        );
        assert_eq!(
            next_level(200.0, 400.0, Some(260.0), 0.05, false),
            Some(260.0)
        );
        assert_eq!(next_level(16.0, 32.0, Some(20.0), 0.05, true), Some(20.0));
        assert_eq!(next_level(19.0, 21.0, Some(20.4), 0.05, true), Some(20.0));
        assert_eq!(next_level(19.0, 20.0, None, 0.05, true), None);
        assert_eq!(next_level(5.0, 10.0, None, 0.05, false), Some(7.5));
    }

    /// The queue curve through (100 req/s, p99 24.8 ms) and (200 req/s, 109 ms) —
    /// a 4-worker, 20 ms pool measured at a 100 ms objective — reaches the limit at
    /// ≈ 197 req/s (the pool's 200 in theory); points that fit no such curve give None.
    #[test]
    fn queue_curve_guess() {
        let x = queue_guess((100.0, 0.248), (200.0, 1.09)).unwrap();
        assert!((x - 197.4).abs() < 0.5, "{x}");
        assert_eq!(queue_guess((100.0, 0.5), (200.0, 0.6)), None);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_level(206.4, false), 206.0);
        assert_eq!(round_level(12.34, false), 12.3);
        assert_eq!(round_level(2.6, true), 3.0);
    }
}
