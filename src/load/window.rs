//! The scored window of a load step (its seconds after the settle period, read from
//! the run's per-second histograms) and the judging of objectives on it: an
//! objective without an endpoint holds for every endpoint on its own, and each
//! verdict says how hard it pressed on its limit (what the `--find-max` search
//! interpolates on). Used by `steps`; nothing here runs load or prints.

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::result::LoadResult;
use super::threshold::{Metric, MetricSource, Op, Scope, Threshold, Verdict};
use crate::stats::histogram::new_histogram;
use std::time::Duration;

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
            // Checks are judged on the whole run, not on a window.
            Metric::Checks => None,
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
}
