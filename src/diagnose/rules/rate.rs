//! `rate-not-sustained`: in the open model, requests arrive at the target rate
//! whatever the server does; when it completes fewer, the rest queue (latency grows
//! second by second) or are dropped.

use super::ms;
use crate::diagnose::facts::LoadFacts;
use crate::diagnose::finding::{Category, Finding, Severity};

/// Completing less than this share of the target rate is not sustaining it…
const SUSTAINED: f64 = 0.9;
/// …when p50 grew from the first to the last second by this factor…
const GROWTH: f64 = 2.0;
/// …and by at least this much, ms.
const GROWTH_FLOOR_MS: f64 = 50.0;

/// `rate-not-sustained`: open model; requests were dropped, or fewer than 90 % of the
/// target rate completed while p50 grew from the first to the last second (≥ 2× and
/// ≥ 50 ms). `crit` when requests were dropped or less than half completed.
pub fn rate_not_sustained(l: &LoadFacts) -> Option<Finding> {
    let target = l.target_rps.filter(|t| *t > 0.0)?;
    // Seconds that carried the run: not the grace's few stragglers at the end, whose
    // p50 is a slow request's and says nothing about a queue.
    let busy = super::median(
        &l.timeline
            .iter()
            .map(|s| s.requests as f64)
            .collect::<Vec<_>>(),
    );
    let active: Vec<_> = l
        .timeline
        .iter()
        .filter(|s| s.requests > 0 && s.requests as f64 >= 0.25 * busy)
        .collect();
    let (first, last) = (active.first()?.p50_ms, active.last()?.p50_ms);
    let share = l.achieved_rps / target;
    let grew = last >= GROWTH * first && last - first >= GROWTH_FLOOR_MS;
    if !(l.dropped > 0 || (share < SUSTAINED && grew)) {
        return None;
    }
    let crit = l.dropped > 0 || share < 0.5;
    let mut what = vec![format!("{:.0} req/s completed", l.achieved_rps)];
    if l.dropped > 0 {
        what.push(format!("{} dropped", l.dropped));
    }
    if l.incomplete > 0 {
        what.push(format!("{} still waiting at the end", l.incomplete));
    }
    Some(
        Finding::new(
            "rate-not-sustained",
            Category::Load,
            if crit { Severity::Crit } else { Severity::Warn },
            format!(
                "the target rate of {target:.0} req/s was not sustained: {} ({:.0}%); p50 \
                 went from {} in the first second to {} in the last",
                what.join(", "),
                share * 100.0,
                ms(first),
                ms(last)
            ),
        )
        .num("target_rps", target)
        .num("achieved_rps", l.achieved_rps)
        .count("dropped", l.dropped)
        .count("incomplete", l.incomplete)
        .num("first_second_p50_ms", first)
        .num("last_second_p50_ms", last)
        .advice(
            "the server completes fewer requests than arrive, so they queue and every \
             later request waits longer: its capacity is below this rate. Lower the rate \
             to find what it sustains (or ramp it with --stages), or raise capacity",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::Second;

    /// An open-model run at `target` req/s completing `achieved`, p50 per second.
    fn open(target: f64, achieved: f64, dropped: u64, p50: &[f64]) -> LoadFacts {
        LoadFacts {
            target_rps: Some(target),
            achieved_rps: achieved,
            dropped,
            incomplete: 400,
            timeline: p50
                .iter()
                .enumerate()
                .map(|(t, p)| Second {
                    t: t as u32,
                    requests: 95,
                    p50_ms: *p,
                    ..Second::default()
                })
                .collect(),
            ..LoadFacts::default()
        }
    }

    /// 400 req/s against a server that completes 95/s: p50 grows by 760 ms a second,
    /// 88 dropped — crit, with the evidence.
    #[test]
    fn overload_fires() {
        let l = open(400.0, 95.0, 88, &[385.0, 1146.0, 1916.0, 2682.0]);
        let f = rate_not_sustained(&l).expect("fires");
        assert_eq!(f.severity, Severity::Crit);
        assert_eq!(f.evidence_f64("target_rps"), Some(400.0));
        assert_eq!(f.evidence_f64("achieved_rps"), Some(95.0));
        assert_eq!(f.evidence_f64("dropped"), Some(88.0));
        assert_eq!(f.evidence_f64("incomplete"), Some(400.0));
        assert_eq!(f.evidence_f64("first_second_p50_ms"), Some(385.0));
        assert_eq!(f.evidence_f64("last_second_p50_ms"), Some(2682.0));
        // Nothing dropped, 80% completed: warn.
        let l = open(100.0, 80.0, 0, &[20.0, 200.0, 400.0]);
        assert_eq!(rate_not_sustained(&l).unwrap().severity, Severity::Warn);
    }

    /// A sustained rate, a short run whose last second is partial (fewer completions,
    /// the same latency), and the closed model are quiet.
    #[test]
    fn sustained_is_quiet() {
        assert!(rate_not_sustained(&open(30.0, 29.5, 0, &[21.0, 20.5, 21.0])).is_none());
        assert!(rate_not_sustained(&open(30.0, 20.0, 0, &[21.0, 20.5, 22.0])).is_none());
        let mut closed = open(30.0, 10.0, 5, &[20.0, 900.0]);
        closed.target_rps = None;
        assert!(rate_not_sustained(&closed).is_none());
    }

    /// 100 req/s kept up with, but 1 % of requests take 3 s: the grace after the run
    /// holds a few stragglers (3 requests, p50 3 s) in its last second. That second is
    /// not the run's, so nothing fires although achieved is 83 % and "last p50" grew.
    #[test]
    fn stragglers_in_the_grace_are_not_a_queue() {
        let mut l = open(100.0, 83.0, 0, &[20.0, 21.0, 20.0, 22.0, 3000.0]);
        l.timeline[4].requests = 3;
        assert!(rate_not_sustained(&l).is_none());
    }
}
