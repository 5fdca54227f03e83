//! `cold-start`: the first request (after a restart or idle) is far slower than the
//! steady state, or the first few requests show a warm-up trend, or the first one
//! alone paid for something set up once (a proxy's upstream connection).

use super::evidence::{judge, not_enough, rerun_diagnose, Judged};
use super::{median, ms, steady, times};
use crate::diagnose::facts::ProbeFacts;
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::stats::interval::{self, Interval, Method};

/// First request must be this many times the steady p50…
const RATIO: f64 = 5.0;
/// …and at least this much slower in absolute terms, ms.
const FLOOR_MS: f64 = 500.0;
/// Warm-up: leading requests this much slower than steady, ms.
const WARMUP_FLOOR_MS: f64 = 100.0;

/// The steady request the first one is compared with: the fresh series' p50 over its
/// later half (not the first request itself, nor a warm-up after it), so first and
/// steady both open a connection; the reused series' p50 only when there is no fresh series to compare.
/// Returns (p50 ms, what it is, the steady samples it is the median of).
fn baseline(p: &ProbeFacts) -> Option<(f64, &'static str, &[f64])> {
    if let Some(f) = p.fresh.as_ref().filter(|f| f.total_ms.len() >= 2) {
        // The later half: a warm-up over the first few requests is not steady.
        let rest = &f.total_ms[1..];
        let later = &rest[rest.len() / 2..];
        return Some((median(later), "fresh p50 of the later requests", later));
    }
    let s = steady(p)?;
    let later = &s.total_ms[s.total_ms.len() / 2..];
    let v = if later.is_empty() {
        s.p50.total
    } else {
        median(later)
    };
    let what = if p.reused.as_ref().is_some_and(|r| r.count > 0) {
        "reused-connection p50"
    } else {
        "fresh p50"
    };
    Some((v, what, later))
}

/// The steady p50's interval: from order statistics with 6 or more samples; with
/// fewer, the range of the samples (the median lies inside it with probability
/// 1 − 2·½ⁿ); with none, the point.
fn steady_interval(point: f64, samples: &[f64]) -> Interval {
    interval::median(samples).unwrap_or_else(|| {
        let finite = samples.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        Interval {
            estimate: point,
            low: if lo.is_finite() { lo } else { point },
            high: if hi.is_finite() { hi } else { point },
            n: [samples.len(), 0],
        }
    })
}

/// The first request (less the time latscope itself waited for a CPU during it) −
/// the steady p50, judged against `threshold` ms: its interval runs from first −
/// the steady p50's upper bound to first − its lower bound.
fn first_extra(first: f64, steady: &Interval, threshold: f64) -> Judged {
    let iv = Interval {
        estimate: first - steady.estimate,
        low: first - steady.high,
        high: first - steady.low,
        n: steady.n,
    };
    judge(
        "first request − steady p50, ms",
        Some(iv),
        iv.estimate,
        iv.n,
        threshold,
        Method::OrderStatistic,
    )
}

/// The first request's time as the server and the path made it, ms: less the time
/// latscope waited for a CPU during it, and less what its DNS lookup took over the
/// repeated lookups' median — a cold resolver cache is `dns-cold`'s, never a cold
/// start of the service (issue 30 item 2).
fn first_request_ms(p: &ProbeFacts) -> Option<f64> {
    let cold_lookup = p
        .dns
        .map_or(0.0, |d| (d.first_ms - d.repeat_p50_ms).max(0.0));
    Some((p.first_total_ms? - p.first_client_wait_ms.unwrap_or(0.0) - cold_lookup).max(0.0))
}

/// `cold-start` over a probe's first request and the order of its samples: the first
/// request (less latscope's own wait for a CPU during it) more than 5× and 500 ms
/// over the steady p50 even at the upper end of that p50's 95 % interval.
pub fn cold_start(p: &ProbeFacts) -> Option<Finding> {
    cold(p).and_then(Result::ok)
}

/// `cold-start`, or (Err) the main rule's "not enough samples to tell".
fn cold(p: &ProbeFacts) -> Option<Result<Finding, Finding>> {
    let (steady_ms, baseline, later) = baseline(p)?;
    if !(steady_ms.is_finite() && steady_ms > 0.0) {
        return None;
    }
    let first = first_request_ms(p)?;
    let iv = steady_interval(steady_ms, later);
    let high = iv.high.max(steady_ms);
    let slow = |v: f64| v > high * 2.0 && v - high > WARMUP_FLOOR_MS;
    let fresh_samples = p
        .fresh
        .as_ref()
        .map(|f| f.total_ms.as_slice())
        .unwrap_or(&[]);
    let warmup = fresh_samples.iter().take_while(|v| slow(**v)).count();
    let ratio = first / steady_ms;
    let finding = |sev, title: String| {
        Finding::new("cold-start", Category::Server, sev, title)
            .num("first_ms", first)
            .num("steady_p50_ms", steady_ms)
            .num("ratio", ratio)
            .text("baseline", baseline)
            .count("warmup_requests", warmup as u64)
            // A warm service answers the first request like the later ones.
            .saving(first - steady_ms, first, basis::FIRST_REQUEST)
    };
    let judged = first_extra(first, &iv, FLOOR_MS.max((RATIO - 1.0) * steady_ms));
    let judged_high = first_extra(first, &iv, FLOOR_MS.max((RATIO - 1.0) * high));
    if judged.fires() && !judged_high.fires() {
        // The point says cold, the interval's upper end does not.
        let c = judged.confidence?;
        return Some(Err(not_enough(
            "cold-start",
            Category::Server,
            "is the first request a cold start",
            "ms",
            c,
            &rerun_diagnose(&p.url, ""),
        )));
    }
    if judged_high.fires() {
        let sev = if first >= 5000.0 {
            Severity::Crit
        } else {
            Severity::Warn
        };
        return Some(Ok(finding(
            sev,
            format!(
                "first request {}, {} the {baseline} ({})",
                ms(first),
                times(ratio),
                ms(steady_ms)
            ),
        )
        .opt_num("first_client_wait_ms", p.first_client_wait_ms)
        .confidence(judged_high.confidence?)
        .advice(
            "the first request after a start or idle period pays for warming up \
                 (process start, JIT, connection pools, caches): keep the service warm \
                 (min instances, a health check that exercises the real path, preloading) \
                 or warm it before taking traffic",
        )));
    }
    if warmup >= 3 {
        return Some(Ok(finding(
            Severity::Info,
            format!(
                "warm-up: the first {warmup} requests were over 2× the {baseline} ({})",
                ms(steady_ms)
            ),
        )
        .advice(
            "caches or pools fill over the first requests: warm them at start-up",
        )));
    }
    None
}

/// First-only: the first request this many times the later ones…
const FIRST_ONLY_RATIO: f64 = 1.8;
/// …and this much slower, ms.
const FIRST_ONLY_FLOOR_MS: f64 = 50.0;

/// `cold-start` as `info` when only the first request paid for something set up
/// once (≥ 50 ms over the fresh p50 of the later requests and ≥ 1.8× it — or, with
/// `--origin`, 0.6–2.5 round trips to the origin — under the main rule's 5× /
/// 500 ms): typically a proxy opening its upstream connection (a cold upstream,
/// then kept alive), a connection pool or a cache filling.
pub fn first_only(p: &ProbeFacts, origin: Option<&ProbeFacts>) -> Option<Finding> {
    match cold(p) {
        Some(Ok(_)) => return None,
        Some(Err(unsure)) => return Some(unsure),
        None => {}
    }
    let (steady_ms, baseline, later) = baseline(p)?;
    let first = first_request_ms(p)?;
    let extra = first - steady_ms;
    // The first request must stand out even from the upper end of the steady p50's
    // interval (and from the time latscope waited for a CPU during it).
    let high = steady_interval(steady_ms, later).high.max(steady_ms);
    // (NaN, from no steady samples, counts as not standing out.)
    if (first - high).is_nan() || first - high < FIRST_ONLY_FLOOR_MS {
        return None;
    }
    // Round trips of the edge's own RTT to the origin where it can be estimated
    // (issue 30 item 4: `edge_hop`), else of ours.
    let edge_origin_rtt = origin
        .and_then(|o| super::edge_hop::split(p, o))
        .and_then(|s| s.estimate)
        .map(|e| e.rtt_ms);
    let our_origin_rtt = origin.and_then(|o| o.tcp).map(|t| t.min_rtt_ms);
    let origin_rtt = edge_origin_rtt.or(our_origin_rtt).filter(|r| *r >= 1.0);
    let whose = if edge_origin_rtt.is_some() {
        "the edge's own RTT to it"
    } else {
        "our RTT to it"
    };
    let trips = origin_rtt.map(|r| extra / r);
    // One or two round trips to a known origin is a cold upstream even when the
    // origin's own time keeps the ratio low.
    let upstream = trips.is_some_and(|n| (0.6..=2.5).contains(&n));
    if !(steady_ms > 0.0
        && extra >= FIRST_ONLY_FLOOR_MS
        && (first >= FIRST_ONLY_RATIO * steady_ms || upstream))
    {
        return None;
    }
    let why = match trips {
        Some(n) if (0.6..=2.5).contains(&n) => format!(
            "{n:.1} round trips to the origin ({} each, {whose}): the proxy opened its \
             upstream connection on the first request and kept it for the later ones",
            ms(origin_rtt.unwrap_or(0.0))
        ),
        _ => "the first request alone paid for something set up once: a proxy opening its \
              upstream connection, a connection pool or a cache filling"
            .to_string(),
    };
    Some(
        Finding::new(
            "cold-start",
            Category::Server,
            Severity::Info,
            format!(
                "first request {}, {} the {baseline} ({}): {} more — {why}",
                ms(first),
                times(first / steady_ms),
                ms(steady_ms),
                ms(extra)
            ),
        )
        .num("first_ms", first)
        .num("steady_p50_ms", steady_ms)
        .num("ratio", first / steady_ms)
        .text("baseline", baseline)
        .count("warmup_requests", 0)
        .text("kind", "first-only")
        .opt_num("origin_rtt_ms", our_origin_rtt.filter(|r| *r >= 1.0))
        .opt_num("edge_origin_rtt_ms", edge_origin_rtt)
        .opt_num("origin_round_trips", trips)
        .saving(extra, first, basis::FIRST_REQUEST)
        .advice(
            "every first visitor after a start or idle period pays this: open upstream \
             connections ahead (a health check that goes through the proxy to the real \
             path, or a warm-up request after each deploy and reload), and keep them \
             alive longer than the idle gaps (nginx: `keepalive_timeout` in the upstream \
             block)",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    /// Story 1: an 8.2 s first request against a 70 ms steady state fires, crit.
    #[test]
    fn fires_on_slow_first_request() {
        let mut p = healthy_probe();
        p.fresh = None;
        p.reused.as_mut().unwrap().total_ms = vec![70.0; 20];
        p.first_total_ms = Some(8200.0);
        let f = cold_start(&p).expect("fires");
        assert_eq!(f.severity, Severity::Crit);
        assert_eq!(f.evidence_f64("first_ms"), Some(8200.0));
        assert_eq!(f.evidence_f64("steady_p50_ms"), Some(70.0));
        assert!(f.title.contains("117×"), "{}", f.title);
        assert_eq!(f.evidence_str("baseline"), Some("reused-connection p50"));
    }

    /// The first request is compared with the fresh series without it (as the probe's
    /// first-request line does), not with the cheaper reused p50: 700 ms first, fresh
    /// 36 ms after it, reused 18 ms → 19×, not 38×.
    #[test]
    fn compares_with_the_fresh_p50_without_the_first() {
        let mut p = healthy_probe();
        p.fresh.as_mut().unwrap().total_ms = vec![700.0, 36.0, 35.0, 37.0, 36.0, 36.0];
        p.reused.as_mut().unwrap().total_ms = vec![18.0; 10];
        p.first_total_ms = Some(700.0);
        let f = cold_start(&p).expect("fires");
        assert_eq!(f.evidence_f64("steady_p50_ms"), Some(36.0));
        assert_eq!(
            f.evidence_str("baseline"),
            Some("fresh p50 of the later requests")
        );
        assert!(
            f.title
                .contains("19× the fresh p50 of the later requests (36.0 ms)"),
            "{}",
            f.title
        );
    }

    /// A warm-up over the first requests is not part of the baseline: with -n 5,
    /// [400, 300, 250, 20, 20] compares with 20 ms (not 135 ms), so all three slow
    /// requests count.
    #[test]
    fn a_short_warmup_is_not_the_baseline() {
        let mut p = healthy_probe();
        p.fresh.as_mut().unwrap().total_ms = vec![400.0, 300.0, 250.0, 20.0, 20.0];
        p.first_total_ms = Some(400.0);
        let f = cold_start(&p).expect("fires");
        assert_eq!(f.evidence_f64("steady_p50_ms"), Some(20.0));
        assert_eq!(f.evidence_f64("warmup_requests"), Some(3.0));
    }

    /// A warm-up trend over the first fresh requests fires as info.
    #[test]
    fn fires_on_warmup_trend() {
        let mut p = healthy_probe();
        p.fresh.as_mut().unwrap().total_ms = vec![400.0, 300.0, 250.0, 20.0, 20.0, 21.0];
        p.reused.as_mut().unwrap().total_ms = vec![20.0; 10];
        p.first_total_ms = Some(400.0);
        let f = cold_start(&p).expect("fires");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.evidence_f64("warmup_requests"), Some(3.0));
    }

    /// Issue 29: a 700 ms first request against later requests of 36..150 ms is 5×
    /// their median but not 5× the upper end of its interval: not enough samples to
    /// tell, info, never a warning. A first request that spent 450 ms of its 800 ms
    /// waiting for a CPU on this machine is not a cold start of the server.
    #[test]
    fn decides_on_the_steady_interval() {
        let mut p = healthy_probe();
        p.reused = None;
        p.fresh.as_mut().unwrap().total_ms = vec![700.0, 36.0, 37.0, 150.0, 38.0, 40.0];
        p.first_total_ms = Some(700.0);
        assert!(cold_start(&p).is_none());
        let f = first_only(&p, None).expect("says so");
        assert_eq!(f.severity, Severity::Info);
        assert!(f.title.contains("not enough samples"), "{}", f.title);
        p.fresh.as_mut().unwrap().total_ms = vec![700.0, 36.0, 37.0, 39.0, 38.0, 40.0];
        let f = cold_start(&p).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.confidence.as_ref().unwrap().verdict, "above");
        p.first_total_ms = Some(800.0);
        p.first_client_wait_ms = Some(450.0);
        assert!(cold_start(&p).is_none());
    }

    /// Healthy and noisy-fast (3 ms first vs 0.3 ms steady = 10×) stay quiet, and so
    /// does a far but steady site.
    #[test]
    fn quiet_when_healthy() {
        assert!(cold_start(&healthy_probe()).is_none());
        assert!(cold_start(&far_probe()).is_none());
        let mut p = far_probe();
        p.first_total_ms = Some(600.0); // 5× but not 500 ms more
        assert!(cold_start(&p).is_none());
    }

    /// Issue 12.5: nginx with upstream keep-alive in front of an origin 80 ms away:
    /// the first request opens the upstream connection (167 ms), later ones reuse it
    /// (85 ms). `info`, one round trip to the origin; the steady site stays quiet.
    #[test]
    fn first_only_is_a_cold_upstream() {
        let mut p = healthy_probe();
        p.fresh.as_mut().unwrap().total_ms = vec![167.0, 85.0, 85.1, 84.9, 85.0, 85.2];
        p.first_total_ms = Some(167.0);
        let mut o = far_probe();
        o.tcp.as_mut().unwrap().min_rtt_ms = 80.0;
        let f = first_only(&p, Some(&o)).expect("fires");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.evidence_str("kind"), Some("first-only"));
        let n = f.evidence_f64("origin_round_trips").unwrap();
        assert!((0.9..=1.1).contains(&n), "{n}");
        assert!(f.title.contains("upstream connection"), "{}", f.title);
        assert!(first_only(&p, None).is_some());
        p.first_total_ms = Some(90.0);
        assert!(first_only(&p, Some(&o)).is_none());
        assert!(first_only(&healthy_probe(), None).is_none());
        assert!(first_only(&far_probe(), None).is_none());
    }

    /// Issue 30 item 4: an edge 20 ms from us, its origin 100 ms behind it (120 ms
    /// from us), kept-alive upstream: the first request's extra 102 ms is one round
    /// trip of the edge's own RTT to the origin (estimated from the hop: 125 − 20 − 5
    /// = 100 ms), not 0.85 of ours.
    #[test]
    fn first_only_counts_the_edges_round_trips() {
        let mut p = far_probe();
        p.tcp.as_mut().unwrap().min_rtt_ms = 20.0;
        let f = p.fresh.as_mut().unwrap();
        f.p50.connect = 20.0;
        f.p50.wait = 125.0;
        f.p50.ttfb = 145.0;
        f.total_ms = vec![247.0, 145.0, 145.2, 144.9, 145.1, 145.0];
        p.reused.as_mut().unwrap().p50.wait = 125.0;
        p.first_total_ms = Some(247.0);
        let mut o = far_probe();
        o.tcp.as_mut().unwrap().min_rtt_ms = 120.0;
        o.fresh.as_mut().unwrap().p50.wait = 125.0;
        o.reused.as_mut().unwrap().p50.wait = 125.0;
        let f = first_only(&p, Some(&o)).expect("fires");
        assert_eq!(f.evidence_f64("edge_origin_rtt_ms"), Some(100.0));
        assert_eq!(f.evidence_f64("origin_rtt_ms"), Some(120.0));
        let n = f.evidence_f64("origin_round_trips").unwrap();
        assert!((0.95..=1.1).contains(&n), "{n}");
        assert!(f.title.contains("the edge's own RTT to it"), "{}", f.title);
    }

    /// Pricing `cold-start`: a warm service answers the first request like the later
    /// ones, so it saves first − steady, once: 8200 − 70 = 8130 ms of 8200 ms; the
    /// cold upstream of issue 12.5 saves 167 − 85 = 82 ms of 167 ms.
    #[test]
    fn pricing_cold_start() {
        let mut p = healthy_probe();
        p.fresh = None;
        p.reused.as_mut().unwrap().total_ms = vec![70.0; 20];
        p.first_total_ms = Some(8200.0);
        let f = cold_start(&p).unwrap();
        assert_eq!(f.saving_ms, Some(8130.0));
        assert_eq!(f.saving_of_ms, Some(8200.0));
        assert_eq!(f.saving_basis.as_deref(), Some("first request"));
        let mut p = healthy_probe();
        p.fresh.as_mut().unwrap().total_ms = vec![167.0, 85.0, 85.1, 84.9, 85.0, 85.2];
        p.first_total_ms = Some(167.0);
        let f = first_only(&p, None).unwrap();
        assert_eq!(f.saving_ms, Some(82.0));
        assert_eq!(f.saving_of_ms, Some(167.0));
    }
}
