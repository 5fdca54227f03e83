//! Spike detection over a per-second load timeline: which seconds spike (p99, the
//! slowest request that ended, the slowest that started, or nothing completed amid
//! busy seconds) and the period of their onsets, tolerant of a missed or stray
//! spike. The rules that report them are in `timeline.rs`.

use super::{median, percentile};
use crate::diagnose::facts::Second;

/// A second is a p99 spike when its p99 is ≥ this many times the local p99…
const SPIKE_RATIO: f64 = 3.0;
/// …and at least this much above it, ms.
const SPIKE_FLOOR_MS: f64 = 20.0;
/// A second is a max spike when its max is ≥ this many times the local max…
const MAX_SPIKE_RATIO: f64 = 10.0;
/// …and at least this long, ms. A stall on a fast route holds one request per
/// connection among thousands: p99 barely moves, the second's max does.
pub(crate) const MAX_SPIKE_FLOOR_MS: f64 = 50.0;
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

/// A second is a spike beside its neighbours when its p99 is ≥ SPIKE_RATIO times
/// the second before's (and ≥ SPIKE_FLOOR_MS above it) and ≥ this many times the
/// second after's: up and back down. Past a ramp's knee the ±5 s baseline holds
/// seconds of higher levels, so a stall there (0.5 s on a 150 ms queue) stays under
/// 3× it; a level's climb goes up and stays up, never back down.
const NEIGHBOUR_FALL_RATIO: f64 = 1.5;

/// Whether `s` spiked beside the seconds just before and after it (both completed
/// requests; see [`NEIGHBOUR_FALL_RATIO`]).
fn neighbour_spike(timeline: &[Second], s: &Second) -> bool {
    let at = |t: u32| timeline.iter().find(|o| o.t == t && o.requests > 0);
    let (Some(before), Some(after)) = (s.t.checked_sub(1).and_then(at), at(s.t + 1)) else {
        return false;
    };
    s.requests > 0
        && s.p99_ms >= SPIKE_RATIO * before.p99_ms
        && s.p99_ms - before.p99_ms >= SPIKE_FLOOR_MS
        && s.p99_ms >= NEIGHBOUR_FALL_RATIO * after.p99_ms
}

/// A second is a start spike when the slowest request that *started* in it took
/// this many times the local typical slowest-started…
const START_SPIKE_RATIO: f64 = 10.0;

/// Finds p99 and max spikes and their period in a timeline.
///
/// A second counts when its completed requests' p99 or max spikes, when nothing
/// completed amid busy seconds, or when the requests that *started* in it stalled
/// (an outage holds the requests that start in it; they end, and count, only
/// later, so the outage second itself shows a collapse of completed requests and
/// the next one a pile of stalled ones).
pub fn detect_spikes(timeline: &[Second]) -> Spikes {
    let active: Vec<&Second> = timeline.iter().filter(|s| s.requests > 0).collect();
    let med = median(&active.iter().map(|s| s.p99_ms).collect::<Vec<_>>());
    let with_max: Vec<&Second> = active.iter().copied().filter(|s| s.max_ms > 0.0).collect();
    let with_start: Vec<&Second> = timeline
        .iter()
        .filter(|s| s.started > 0 && s.started_max_ms > 0.0)
        .collect();
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
    let first_started = with_start.first().map(|s| s.t).unwrap_or(0);
    // Seconds judged by the requests that ended in them, and by those that started
    // in them: one stall makes both, one second apart, so each is read on its own
    // (merged, a stall every 2 s would join every second into one run).
    let (mut by_end, mut by_start) = (Vec::new(), Vec::new());
    for s in timeline {
        // The baselines are local, so a ramp whose latency climbs step by step is not
        // mistaken for spikes.
        let base = baseline(&active, s.t, |o| o.p99_ms);
        let spike = s.requests > 0
            && base.is_finite()
            && s.p99_ms >= SPIKE_RATIO * base
            && s.p99_ms - base >= SPIKE_FLOOR_MS;
        let base_max = baseline(&with_max, s.t, |o| o.max_ms);
        // Not the first second (connection set-up, the first handshakes) nor the
        // last second's few stragglers (the grace after a run's end): one slow
        // request there is no spike of the service. A collapse of completed
        // requests inside the run is no reason to look away: it is what a stall
        // looks like.
        let max_spike = s.requests > 0
            && s.t != first
            && (s.requests as f64 >= 0.25 * med_requests || s.t < last)
            && s.max_ms > 0.0
            && base_max.is_finite()
            && s.max_ms >= MAX_SPIKE_RATIO * base_max
            && s.max_ms >= MAX_SPIKE_FLOOR_MS;
        let base_start = baseline(&with_start, s.t, |o| o.started_max_ms);
        let start_spike = s.started > 0
            && s.t != first_started
            && base_start.is_finite()
            && s.started_max_ms >= START_SPIKE_RATIO * base_start
            && s.started_max_ms >= MAX_SPIKE_FLOOR_MS;
        let stall = s.requests == 0 && med_requests >= 5.0 && s.t > first && s.t < last;
        let spike = spike || s.t != first && neighbour_spike(timeline, s);
        if spike || max_spike || stall {
            by_end.push((s, spike, max_spike));
        }
        if start_spike {
            by_start.push((s, false, true));
        }
    }
    let (end_onsets, start_onsets) = (onsets_of(&by_end), onsets_of(&by_start));
    let (chosen, onsets, period_s) = match (find_period(&end_onsets), find_period(&start_onsets)) {
        (Some(p), _) => (by_end, end_onsets, Some(p)),
        (None, Some(p)) => (by_start, start_onsets, Some(p)),
        (None, None) if !end_onsets.is_empty() => (by_end, end_onsets, None),
        (None, None) => (by_start, start_onsets, None),
    };
    let seconds: Vec<u32> = chosen.iter().map(|x| x.0.t).collect();
    let (mut max_p99, mut max_max): (f64, f64) = (0.0, 0.0);
    let (mut p99_spiked, mut max_spiked) = (false, false);
    for (s, spike, max_spike) in &chosen {
        max_p99 = max_p99.max(s.p99_ms);
        max_max = max_max.max(s.max_ms).max(s.started_max_ms);
        p99_spiked |= spike;
        max_spiked |= max_spike;
    }
    let med_max = median(
        &with_max
            .iter()
            .filter(|s| !seconds.contains(&s.t))
            .map(|s| s.max_ms)
            .collect::<Vec<_>>(),
    );
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

/// How high a spike second stands: its p99 when that spiked, else its slowest
/// request (ended, or started for the start-based reading); a second with nothing
/// completed stands highest (an outage: what it held ends later).
fn height(s: &Second, p99_spiked: bool) -> f64 {
    if s.requests == 0 {
        f64::INFINITY
    } else if p99_spiked {
        s.p99_ms
    } else {
        s.max_ms.max(s.started_max_ms)
    }
}

/// The first second of each spike: of each run of consecutive spike seconds (a
/// stall that spills into the next second is one spike), split where a second in
/// the run falls [`NEIGHBOUR_FALL_RATIO`]× below both its neighbours — a valley
/// between two spikes, each of them a stall (CI's stall every 2 s on one connection
/// read p99 415, 192, 423 ms in seconds 2–4: two stalls and the tail of one, not one
/// 3 s spike).
fn onsets_of(v: &[(&Second, bool, bool)]) -> Vec<u32> {
    let mut onsets = Vec::new();
    for (i, (s, p99, _)) in v.iter().enumerate() {
        let after_spike = i > 0 && v[i - 1].0.t + 1 == s.t;
        // A new spike after a valley: the second before fell below this one and the
        // one before it, all three in one run.
        let after_valley = after_spike && i >= 2 && v[i - 2].0.t + 2 == s.t && {
            let valley = height(v[i - 1].0, v[i - 1].1) * NEIGHBOUR_FALL_RATIO;
            valley <= height(v[i - 2].0, v[i - 2].1) && valley <= height(s, *p99)
        };
        if !after_spike || after_valley {
            onsets.push(s.t);
        }
    }
    onsets
}

/// The regular spacing of spike onsets, seconds, tolerating a missed spike (a
/// beat with no onset) and a stray or doubled one (an onset off the beat): the
/// period P ≥ 2 s and phase that put the most onsets within max(1 s, 10 %) of a
/// beat, weighed by the share of beats between the first and last of them that
/// have an onset. Needs ≥ 3 onsets on the beat, ≥ 75 % of all onsets on it, and ≥
/// 60 % of its beats filled (so P/2, which also fits every onset, loses: half of
/// its beats are empty).
pub fn find_period(onsets: &[u32]) -> Option<f64> {
    let o: Vec<f64> = onsets.iter().take(200).map(|t| f64::from(*t)).collect();
    if o.len() < MIN_SPIKES {
        return None;
    }
    let mut candidates: Vec<f64> = Vec::new();
    for i in 0..o.len() {
        for j in i + 1..o.len() {
            for k in 1..=3 {
                let p = (o[j] - o[i]) / f64::from(k);
                if p >= 2.0 && !candidates.iter().any(|c| (c - p).abs() < 0.25) {
                    candidates.push(p);
                }
            }
        }
    }
    // (score, beats filled share, period)
    let mut best: Option<(f64, f64, f64)> = None;
    for p in candidates {
        let tol = (0.1 * p).max(1.0);
        for &anchor in &o {
            // Onsets on the beat, by beat index: the nearest one of each beat (a
            // second onset near the same beat is a stray, not on it).
            let mut on: Vec<(i64, f64, f64)> = Vec::new();
            for &t in &o {
                let k = ((t - anchor) / p).round();
                let off = (t - anchor - k * p).abs();
                if off > tol {
                    continue;
                }
                match on.last_mut() {
                    Some(last) if last.0 == k as i64 => {
                        if off < last.2 {
                            *last = (k as i64, t, off);
                        }
                    }
                    _ => on.push((k as i64, t, off)),
                }
            }
            let (Some(lo), Some(hi)) = (on.first(), on.last()) else {
                continue;
            };
            let beats = on.len();
            let span = (hi.0 - lo.0 + 1) as f64;
            let filled = beats as f64 / span;
            if beats < MIN_SPIKES || (on.len() as f64) < 0.75 * o.len() as f64 || filled < 0.6 {
                continue;
            }
            // The period that the first and last onsets on the beat say.
            let period = (hi.1 - lo.1) / (hi.0 - lo.0) as f64;
            let score = on.len() as f64 * filled;
            let better = match best {
                None => true,
                Some((s, f, q)) => {
                    score > s + 1e-9
                        || ((score - s).abs() <= 1e-9
                            && (filled > f + 1e-9 || ((filled - f).abs() <= 1e-9 && period > q)))
                }
            };
            if better {
                best = Some((score, filled, period));
            }
        }
    }
    best.map(|(_, _, p)| (p * 10.0).round() / 10.0)
}
