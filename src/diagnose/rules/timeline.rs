//! Timeline rules: `periodic-spikes` (per-second p99 or max spikes that recur at a
//! regular interval) and `retransmits` (TCP retransmissions during a run, joined to
//! the spike times).

use super::{median, ms, percentile};
use crate::diagnose::facts::{LoadFacts, Second};
use crate::diagnose::finding::{Category, Finding, Severity};

/// A second is a p99 spike when its p99 is ≥ this many times the local p99…
const SPIKE_RATIO: f64 = 3.0;
/// …and at least this much above it, ms.
const SPIKE_FLOOR_MS: f64 = 20.0;
/// A second is a max spike when its max is ≥ this many times the local max…
const MAX_SPIKE_RATIO: f64 = 10.0;
/// …and at least this long, ms. A stall on a fast route holds one request per
/// connection among thousands: p99 barely moves, the second's max does.
const MAX_SPIKE_FLOOR_MS: f64 = 50.0;
/// Half-width of the window whose median is a second's baseline, seconds.
const BASELINE_S: u32 = 5;
/// Fewer onsets than this cannot show a period.
const MIN_SPIKES: usize = 3;

/// The spikes found in a per-second timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Spikes {
    /// Median of the per-second p99s (seconds that completed requests). A second is
    /// judged against the median of the seconds within ±5 s of it (at most twice
    /// their lower quartile).
    pub median_p99_ms: f64,
    /// Median of the per-second maxima of the seconds without a spike (NaN when the
    /// timeline has none): the typical slowest request.
    pub median_max_ms: f64,
    /// Every spike second (a p99 spike, a max spike, or a total stall: no request
    /// completed in a second amid busy ones).
    pub seconds: Vec<u32>,
    /// First second of each run of consecutive spike seconds.
    pub onsets: Vec<u32>,
    /// The largest p99 in a spike second, ms.
    pub max_p99_ms: f64,
    /// The largest max in a spike second, ms (0 when not measured).
    pub max_ms: f64,
    /// Some spike second's p99 spiked.
    pub p99_spiked: bool,
    /// Some spike second's max spiked.
    pub max_spiked: bool,
    /// Regular spacing of the onsets, seconds, when there are ≥ 3 onsets whose
    /// intervals all lie within max(1 s, 25 %) of their median.
    pub period_s: Option<f64>,
}

impl Spikes {
    /// What spiked: "p99", "max" or "p99 and max" ("stall" for empty seconds only).
    pub fn what(&self) -> &'static str {
        match (self.p99_spiked, self.max_spiked) {
            (true, true) => "p99 and max",
            (true, false) => "p99",
            (false, true) => "max",
            (false, false) => "stall",
        }
    }
}

/// The local baseline of a per-second value around second `t`: the median within
/// ±BASELINE_S seconds, capped at twice their lower quartile (a stall every 2 s
/// spikes half of the seconds, which drags the median up to half spike).
fn baseline(active: &[&Second], t: u32, value: impl Fn(&Second) -> f64) -> f64 {
    let around: Vec<f64> = active
        .iter()
        .filter(|o| o.t.abs_diff(t) <= BASELINE_S)
        .map(|o| value(o))
        .collect();
    median(&around).min(2.0 * percentile(&around, 0.25))
}

/// Finds p99 and max spikes and their period in a timeline.
pub fn detect_spikes(timeline: &[Second]) -> Spikes {
    let active: Vec<&Second> = timeline.iter().filter(|s| s.requests > 0).collect();
    let med = median(&active.iter().map(|s| s.p99_ms).collect::<Vec<_>>());
    let with_max: Vec<&Second> = active.iter().copied().filter(|s| s.max_ms > 0.0).collect();
    let med_requests = median(
        &timeline
            .iter()
            .map(|s| s.requests as f64)
            .collect::<Vec<_>>(),
    );
    let (first, last) = (
        active.first().map(|s| s.t).unwrap_or(0),
        active.last().map(|s| s.t).unwrap_or(0),
    );
    let mut seconds = Vec::new();
    let (mut max_p99, mut max_max): (f64, f64) = (0.0, 0.0);
    let (mut p99_spiked, mut max_spiked) = (false, false);
    for s in timeline {
        // The baselines are local, so a ramp whose latency climbs step by step is not
        // mistaken for spikes.
        let base = baseline(&active, s.t, |o| o.p99_ms);
        let spike = s.requests > 0
            && base.is_finite()
            && s.p99_ms >= SPIKE_RATIO * base
            && s.p99_ms - base >= SPIKE_FLOOR_MS;
        let base_max = baseline(&with_max, s.t, |o| o.max_ms);
        // Not the first second (connection set-up, the first handshakes) nor a second
        // of a few stragglers (the grace after a run's end): one slow request there is
        // no spike of the service.
        let max_spike = s.requests > 0
            && s.t != first
            && s.requests as f64 >= 0.25 * med_requests
            && s.max_ms > 0.0
            && base_max.is_finite()
            && s.max_ms >= MAX_SPIKE_RATIO * base_max
            && s.max_ms >= MAX_SPIKE_FLOOR_MS;
        let stall = s.requests == 0 && med_requests >= 5.0 && s.t > first && s.t < last;
        if spike || max_spike || stall {
            seconds.push(s.t);
            max_p99 = max_p99.max(s.p99_ms);
            max_max = max_max.max(s.max_ms);
            p99_spiked |= spike;
            max_spiked |= max_spike;
        }
    }
    let med_max = median(
        &with_max
            .iter()
            .filter(|s| !seconds.contains(&s.t))
            .map(|s| s.max_ms)
            .collect::<Vec<_>>(),
    );
    let onsets: Vec<u32> = seconds
        .iter()
        .copied()
        .filter(|t| *t == 0 || !seconds.contains(&(t - 1)))
        .collect();
    let intervals: Vec<f64> = onsets.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let period_s = if onsets.len() >= MIN_SPIKES {
        let m = median(&intervals);
        let tol = (0.25 * m).max(1.0);
        (m >= 2.0 && intervals.iter().all(|i| (i - m).abs() <= tol)).then_some(m)
    } else {
        None
    };
    Spikes {
        median_p99_ms: med,
        median_max_ms: med_max,
        seconds,
        onsets,
        max_p99_ms: max_p99,
        max_ms: max_max,
        p99_spiked,
        max_spiked,
        period_s,
    }
}

fn list(ts: &[u32]) -> String {
    ts.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `periodic-spikes`: per-second p99 or max spikes at a regular period.
pub fn periodic_spikes(l: &LoadFacts) -> Option<Finding> {
    let s = detect_spikes(&l.timeline);
    let period = s.period_s?;
    let n = s.onsets.len();
    let title = if s.p99_spiked || !s.max_spiked {
        format!(
            "p99 spikes every ≈{period:.0} s ({n} spikes, up to {} against a {} median p99)",
            ms(s.max_p99_ms),
            ms(s.median_p99_ms)
        )
    } else {
        format!(
            "latency spikes every ≈{period:.0} s ({n} spikes: the slowest request of a \
             second up to {} against a typical {}; p99 {} stays low, so few requests \
             are hit)",
            ms(s.max_ms),
            ms(s.median_max_ms),
            ms(s.median_p99_ms)
        )
    };
    Some(
        Finding::new("periodic-spikes", Category::Load, Severity::Warn, title)
            .num("period_s", period)
            .count("spikes", n as u64)
            .text("spiked", s.what())
            .num("max_p99_ms", s.max_p99_ms)
            .num("median_p99_ms", s.median_p99_ms)
            .opt_num("max_ms", (s.max_ms > 0.0).then_some(s.max_ms))
            .opt_num(
                "median_max_ms",
                s.median_max_ms.is_finite().then_some(s.median_max_ms),
            )
            .text("spike_times_s", list(&s.onsets))
            .advice(
                "something on a timer stalls every request: GC pauses, cron jobs, log \
                 rotation, cache expiry stampedes, database checkpoints, or a network path \
                 that drops packets periodically (see retransmits); line the period up with \
                 the server's timers and logs",
            ),
    )
}

/// `retransmits` during a load run (≥ 5 segments), joined to the spike seconds: warn
/// when at least half of the spikes had retransmissions within ±1 s.
pub fn retransmits(l: &LoadFacts) -> Option<Finding> {
    let total: u64 = l.timeline.iter().map(|s| s.retrans).sum();
    if total < 5 {
        return None;
    }
    let spikes = detect_spikes(&l.timeline);
    let retrans_near = |t: u32| {
        l.timeline
            .iter()
            .any(|s| s.retrans > 0 && s.t + 1 >= t && s.t <= t + 1)
    };
    let joined: Vec<u32> = spikes
        .onsets
        .iter()
        .copied()
        .filter(|t| retrans_near(*t))
        .collect();
    let n = spikes.onsets.len();
    let linked = n > 0 && joined.len() * 2 >= n;
    let title = if n == 0 {
        format!("{total} TCP segments retransmitted during the run")
    } else {
        format!(
            "{total} TCP segments retransmitted during the run; {} of {n} latency spikes \
             coincide with retransmissions",
            joined.len()
        )
    };
    Some(
        Finding::new(
            "retransmits",
            Category::Network,
            if linked {
                Severity::Warn
            } else {
                Severity::Info
            },
            title,
        )
        .count("total_retrans", total)
        .count("spikes", n as u64)
        .count("spikes_with_retrans", joined.len() as u64)
        .text("spike_times_s", list(&joined))
        .text("source", "load")
        .advice(if linked {
            "the latency spikes line up with packet loss: the path (NAT, bridge, overlay \
             network, a saturated link) drops packets, and each loss costs a timeout; \
             check conntrack tables, MTU and the links between client and server"
        } else {
            "some packets were lost (the counter is host-wide, so other traffic counts \
             too); they do not line up with the latency spikes"
        }),
    )
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
