//! Early stop of a `--find-max` step whose failure is already decided (k6's
//! `abortOnFail` with `delayAbortEval`, made safe): the step's live seconds are
//! watched after the settle period, and once at least [`MIN_SCORED`] of them (and,
//! for an objective, [`MIN_REQUESTS`] completed requests) are in, a step is called failed only
//! when no outcome of the requests still to come could make it pass:
//! - `errors<X%`: the errors already counted exceed X % of the most requests the
//!   whole step could complete (so even if every remaining request succeeded the
//!   error rate would stay over the limit);
//! - `pNN<T` (and `max<T`): more than (100 − NN) % of that most are already slower
//!   than T — the full-length pNN would be over T whatever came next.
//!
//! The most requests a step can complete: in the open model every arrival of the
//! step (settle included) at its target rate, plus 5 % and 10 for the schedule's
//! jitter; in the closed model (no schedule) the requests so far plus the remaining
//! seconds at twice the busiest second seen — a bound the closed model does not
//! guarantee, but an overloaded server does not double its rate, and a step near
//! its limit never fires. Objectives on a named endpoint, on other metrics (mean,
//! rps, `>` rules), and latency objectives with more than 100 endpoints (whose
//! seconds the timeline does not keep per endpoint) never stop a step early. With
//! several endpoints an unscoped objective holds for each endpoint: whole-run
//! counts past the bound mean at least one endpoint is past its own, so the stop
//! stays decided. Nothing here runs load or prints.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::live::LiveSecond;
use super::steps::Level;
use super::threshold::{Metric, Op, Scope, Threshold};
use crate::stats::histogram::new_histogram;

/// Scored time before a step may be stopped early.
pub const MIN_SCORED: Duration = Duration::from_secs(1);
/// Completed scored requests before a step may be stopped early.
pub const MIN_REQUESTS: u64 = 20;

/// Why a step stopped early.
#[derive(Debug, Clone, PartialEq)]
pub struct EarlyStop {
    /// The objective whose failure was decided (its expression).
    pub objective: String,
    /// What decided it, in words: "312 of at most 2110 requests over 100 ms (p99
    /// needs ≤ 21)".
    pub reason: String,
    /// Scored seconds when it stopped.
    pub scored: Duration,
    /// The window the step was planned to measure.
    pub planned: Duration,
    /// Decided on the open model's rate (the step fell short), not on an objective.
    pub shortfall: bool,
}

/// Watches one step's live seconds.
pub struct Watch<'a> {
    objectives: &'a [Threshold],
    level: Level,
    settle: u32,
    length: Duration,
    endpoints: usize,
    /// Scored seconds seen (t ≥ settle).
    scored: u32,
    /// Scored counts and latencies.
    requests: u64,
    ok: u64,
    latency: Histogram<u64>,
    /// Every second's counts (settle included: several endpoints are judged on
    /// the whole step's counts).
    all_requests: u64,
    all_ok: u64,
    all_dropped: u64,
    busiest: u64,
}

impl<'a> Watch<'a> {
    /// A watch for a step at `level` with `settle` unscored and a `length` window,
    /// on a plan of `endpoints` endpoints.
    pub fn new(
        objectives: &'a [Threshold],
        level: Level,
        settle: Duration,
        length: Duration,
        endpoints: usize,
    ) -> Watch<'a> {
        Watch {
            objectives,
            level,
            settle: settle.as_secs() as u32,
            length,
            endpoints: endpoints.max(1),
            scored: 0,
            requests: 0,
            ok: 0,
            latency: new_histogram(),
            all_requests: 0,
            all_ok: 0,
            all_dropped: 0,
            busiest: 0,
        }
    }

    /// Adds the seconds a progress call brought; returns the decided failure, if any.
    pub fn push(&mut self, seconds: &[LiveSecond]) -> Option<EarlyStop> {
        for s in seconds {
            self.all_requests += s.second.requests;
            self.all_ok += s.second.ok;
            self.all_dropped += s.second.dropped;
            if s.second.t < self.settle {
                continue;
            }
            // Only whole seconds of the window (the last, partial one comes when the
            // step ends anyway).
            if f64::from(s.second.t) >= f64::from(self.settle) + self.length.as_secs_f64() {
                continue;
            }
            self.scored += 1;
            self.requests += s.second.requests;
            self.ok += s.second.ok;
            self.busiest = self.busiest.max(s.second.requests);
            let _ = self.latency.add(&s.latency);
        }
        self.decide()
    }

    /// The most requests the window (`all`: the whole step) could complete.
    fn most(&self, now: u64, all: bool) -> u64 {
        let step = f64::from(self.settle) + self.length.as_secs_f64();
        match self.level {
            Level::Rate(r) => (r * step * 1.05).ceil() as u64 + 10,
            Level::Connections(_) => {
                let left = (step - f64::from(self.settle + self.scored)).max(0.0);
                let left = if all {
                    left
                } else {
                    left.min(self.length.as_secs_f64())
                };
                now + (left * 2.0 * self.busiest as f64).ceil() as u64
            }
        }
    }

    fn decide(&self) -> Option<EarlyStop> {
        let scored = Duration::from_secs(u64::from(self.scored));
        if scored < MIN_SCORED || scored >= self.length {
            return None;
        }
        let several = self.endpoints > 1;
        if let Level::Rate(rate) = self.level {
            // Arrivals left for the window: the most, less the dropped and those the
            // settle's seconds completed.
            let settled = self.all_requests.saturating_sub(self.requests);
            let left = self
                .most(0, true)
                .saturating_sub(self.all_dropped + settled);
            let need = super::steps::SUSTAINED * rate * self.length.as_secs_f64();
            if (left as f64) < need {
                return Some(EarlyStop {
                    objective: format!("rate {} req/s", super::steps::fmt_level(rate)),
                    reason: format!(
                        "{} arrivals dropped: at most {left} can complete in the window, \
                         {} needed",
                        self.all_dropped,
                        need.ceil()
                    ),
                    scored,
                    planned: self.length,
                    shortfall: true,
                });
            }
        }
        // The objectives need evidence from answers; the rate's is arithmetic.
        if self.requests < MIN_REQUESTS {
            return None;
        }
        for o in self.objectives {
            if matches!(o.scope, Scope::Endpoint(_)) || !matches!(o.op, Op::Lt | Op::Le) {
                continue;
            }
            let found = match o.metric {
                Metric::ErrorRate => {
                    // Several endpoints: each is judged on its whole-step counts.
                    let (n, ok) = if several {
                        (self.all_requests, self.all_ok)
                    } else {
                        (self.requests, self.ok)
                    };
                    let errors = n - ok.min(n);
                    let most = self.most(n, several);
                    let room = o.limit / 100.0 * most as f64;
                    (errors as f64 > room).then(|| {
                        format!(
                            "{errors} errors of at most {most} requests (under {} % allows {})",
                            o.limit,
                            room.floor()
                        )
                    })
                }
                Metric::Quantile(_) | Metric::Max if self.endpoints <= 100 => {
                    let q = match o.metric {
                        Metric::Quantile(q) => q as f64 / 1e6,
                        _ => 1.0,
                    };
                    let limit_ns = (o.limit * 1e6) as u64;
                    // Values in the limit's own bucket count as under it.
                    let under = self.latency.count_between(0, limit_ns);
                    let over = self.latency.len().saturating_sub(under);
                    let most = self.most(self.latency.len(), false);
                    let room = (1.0 - q) * most as f64;
                    (over > 0 && over as f64 > room).then(|| {
                        format!(
                            "{over} of at most {most} requests over {} ms (allows {})",
                            o.limit,
                            room.floor()
                        )
                    })
                }
                _ => None,
            };
            if let Some(reason) = found {
                return Some(EarlyStop {
                    objective: o.expr.clone(),
                    reason,
                    scored,
                    planned: self.length,
                    shortfall: false,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::result::SecondResult;
    use crate::load::threshold::parse;

    fn second(t: u32, ok: u64, errors: u64, ms: u64) -> LiveSecond {
        let mut latency = new_histogram();
        for _ in 0..ok + errors {
            latency.record(ms * 1_000_000).unwrap();
        }
        LiveSecond {
            second: SecondResult {
                t,
                requests: ok + errors,
                ok,
                errors,
                ..Default::default()
            },
            latency,
            service: None,
        }
    }

    /// 100 req/s for 1 s settle + 10 s: at most 1165 requests. Errors: 100 of 100
    /// in the first scored second decide `errors<1%` (1 % of 1165 is 11); 5
    /// errors do not. p99: 100 slow requests decide `p99<100ms` (room 11), 10 do
    /// not; nothing fires before a whole scored second, or in the settle.
    #[test]
    fn fires_only_when_decided() {
        let obj = [parse("p99<100ms").unwrap(), parse("errors<1%").unwrap()];
        let mk = || {
            Watch::new(
                &obj,
                Level::Rate(100.0),
                Duration::from_secs(1),
                Duration::from_secs(10),
                1,
            )
        };
        let mut w = mk();
        assert_eq!(
            w.push(&[second(0, 0, 100, 5)]),
            None,
            "settle is not scored"
        );
        let e = w.push(&[second(1, 0, 100, 5)]).unwrap();
        assert_eq!(e.objective, "errors<1%");
        assert_eq!(e.scored, Duration::from_secs(1));
        let mut w = mk();
        assert_eq!(w.push(&[second(1, 95, 5, 5)]), None);
        let mut w = mk();
        let e = w.push(&[second(1, 100, 0, 500)]).unwrap();
        assert_eq!(e.objective, "p99<100ms");
        let mut w = mk();
        assert_eq!(w.push(&[second(1, 90, 0, 5), second(2, 10, 0, 500)]), None);
        // Arrivals dropped past what the window needs decide the rate: 1165 less
        // 300 dropped is under 900 (90 % of 1000); 100 dropped is not.
        let mut w = mk();
        let mut s = second(1, 100, 0, 5);
        s.second.dropped = 300;
        let e = w.push(&[s]).unwrap();
        assert!(e.shortfall && e.objective == "rate 100 req/s", "{e:?}");
        let mut w = mk();
        let mut s = second(1, 100, 0, 5);
        s.second.dropped = 100;
        assert_eq!(w.push(&[s]), None);
        // A passing step never fires, however long it runs.
        let mut w = mk();
        for t in 1..11 {
            assert_eq!(w.push(&[second(t, 100, 0, 50)]), None);
        }
    }

    /// Named-endpoint objectives and `>` rules never stop a step.
    #[test]
    fn only_decidable_objectives() {
        let obj = [
            parse("/a:errors<1%").unwrap(),
            parse("rps>1000").unwrap(),
            parse("mean<1ms").unwrap(),
        ];
        let mut w = Watch::new(
            &obj,
            Level::Connections(4),
            Duration::from_secs(1),
            Duration::from_secs(10),
            1,
        );
        assert_eq!(
            w.push(&[second(1, 0, 100, 500), second(2, 0, 100, 500)]),
            None
        );
    }
}
