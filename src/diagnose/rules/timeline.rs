//! Timeline rules: `periodic-spikes` (per-second p99 or max spikes that recur at a
//! regular interval), `lone-spike` (one or two spikes: too few to tell a period) and
//! `retransmits` (TCP retransmissions during a run, joined to the spike times).

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
        if spike || max_spike || stall {
            by_end.push((s, spike, max_spike));
        }
        if start_spike {
            by_start.push((s, false, true));
        }
    }
    let onsets_of = |v: &[(&Second, bool, bool)]| -> Vec<u32> {
        let ts: Vec<u32> = v.iter().map(|x| x.0.t).collect();
        ts.iter()
            .copied()
            .filter(|t| *t == 0 || !ts.contains(&(t - 1)))
            .collect()
    };
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

fn list(ts: &[u32]) -> String {
    ts.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The spikes are SYN retransmission back-off, not a timer: at least half of them
/// begin within 3 s before one of latscope's own connections came up after a
/// resent SYN, or got its first answer after resending the handshake's last ACK
/// and the request (1 s, 3 s, 7 s: the kernel's back-off, which `syn-retries`
/// reports).
fn syn_backoff(l: &LoadFacts, s: &Spikes) -> bool {
    let own = l.client_syn_retrans.unwrap_or(0) + l.client_early_retrans.unwrap_or(0);
    if own == 0 || s.onsets.is_empty() {
        return false;
    }
    let near = |o: u32| {
        l.timeline
            .iter()
            .any(|x| x.client_syn_retrans + x.client_early_retrans > 0 && x.t >= o && x.t <= o + 3)
    };
    s.onsets.iter().filter(|o| near(**o)).count() * 2 >= s.onsets.len()
}

/// What latscope's own connections retransmitted, as a sentence, and the count
/// (None: not watched, the host-wide counter is quoted instead).
fn client_retrans(l: &LoadFacts) -> (String, Option<u64>) {
    match l.client_data_retrans {
        Some(data) => {
            let syn = l.client_syn_retrans.unwrap_or(0) + l.client_early_retrans.unwrap_or(0);
            let n = data + syn;
            let text = if n == 0 {
                "latscope's own connections retransmitted nothing (TCP_INFO): the client \
                 path is clean; the stall is on the server or behind it"
                    .to_string()
            } else {
                format!(
                    "latscope's own connections retransmitted {n} segments ({data} on \
                     established connections, {syn} while connecting): the way to the \
                     server loses packets too (see retransmits, syn-retries)"
                )
            };
            (text, Some(n))
        }
        None => {
            let host: u64 = l.timeline.iter().map(|s| s.retrans).sum();
            let text = if host == 0 {
                "no TCP segment was retransmitted on this host during the run: the \
                 client path is clean; the stall is on the server or behind it"
                    .to_string()
            } else {
                format!(
                    "this host retransmitted {host} TCP segments during the run (a \
                     host-wide counter: latscope's own connections were not watched)"
                )
            };
            (text, None)
        }
    }
}

/// The endpoints that stalled at the spikes and those that did not (scenarios with
/// two or more endpoints). An endpoint stalled at a spike when the slowest of its
/// requests that started within ±1 s of the onset took ≥ 50 ms and ≥ 5× its
/// typical slowest; it is judged only when it ran within ±1 s of at least half of
/// the onsets, and counts as stalled at ≥ 2/3 of those, as spared at ≤ 1/3.
pub fn stalled_endpoints(l: &LoadFacts, onsets: &[u32]) -> (Vec<String>, Vec<String>) {
    let (mut stalled, mut spared) = (Vec::new(), Vec::new());
    if l.endpoints.len() < 2 || onsets.is_empty() {
        return (stalled, spared);
    }
    for (i, name) in l.endpoints.iter().enumerate() {
        let of = |s: &Second| s.endpoints.get(i).copied().unwrap_or((0, 0.0));
        let typical = median(
            &l.timeline
                .iter()
                .map(of)
                .filter(|e| e.0 > 0)
                .map(|e| e.1)
                .collect::<Vec<_>>(),
        );
        if !typical.is_finite() {
            continue;
        }
        let (mut seen, mut hit) = (0usize, 0usize);
        for &o in onsets {
            let window: Vec<(u64, f64)> = l
                .timeline
                .iter()
                .filter(|s| s.t + 1 >= o && s.t <= o + 1)
                .map(of)
                .filter(|e| e.0 > 0)
                .collect();
            if window.is_empty() {
                continue;
            }
            seen += 1;
            let worst = window.iter().map(|e| e.1).fold(0.0, f64::max);
            if worst >= MAX_SPIKE_FLOOR_MS && worst >= 5.0 * typical {
                hit += 1;
            }
        }
        if seen * 2 < onsets.len() {
            continue;
        }
        if hit * 3 >= seen * 2 {
            stalled.push(name.clone());
        } else if hit * 3 <= seen {
            spared.push(name.clone());
        }
    }
    (stalled, spared)
}

/// `periodic-spikes`: per-second p99 or max spikes at a regular period — not SYN
/// back-off steps, which `syn-retries` reports. Says what latscope's own
/// connections retransmitted, and in a scenario which endpoints stalled together.
pub fn periodic_spikes(l: &LoadFacts) -> Option<Finding> {
    let s = detect_spikes(&l.timeline);
    let period = s.period_s?;
    if syn_backoff(l, &s) {
        return None;
    }
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
    let (path, own) = client_retrans(l);
    let (stalled, spared) = stalled_endpoints(l, &s.onsets);
    let mut advice = String::new();
    if !stalled.is_empty() && !spared.is_empty() {
        advice.push_str(&format!(
            "{} stalled at the same seconds; {} did not — look at what they share \
             (database, upstream pool, a lock). ",
            stalled.join(", "),
            spared.join(", ")
        ));
    } else if stalled.len() >= 2 && spared.is_empty() {
        advice.push_str("every endpoint stalled at the same seconds. ");
    }
    advice.push_str(&path);
    advice.push_str(
        ". Something on a timer stalls the requests: GC pauses, cron jobs, log \
         rotation, cache expiry stampedes, database checkpoints, or a link behind the \
         server that drops packets periodically; line the period up with the server's \
         timers and logs",
    );
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
            .opt_num("client_retrans", own.map(|n| n as f64))
            .text("stalled_endpoints", stalled.join(", "))
            .text("unaffected_endpoints", spared.join(", "))
            .advice(advice),
    )
}

/// Lone spikes are this slow at least, ms.
const LONE_FLOOR_MS: f64 = 300.0;

/// `lone-spike`: one or two spikes, too few to tell a period — a run must last
/// twice a period to show it. Quiet on SYN back-off (`syn-retries`) and under
/// 300 ms.
pub fn lone_spike(l: &LoadFacts) -> Option<Finding> {
    let s = detect_spikes(&l.timeline);
    if s.period_s.is_some() || s.onsets.is_empty() || s.onsets.len() > 2 || syn_backoff(l, &s) {
        return None;
    }
    let worst = s.max_p99_ms.max(s.max_ms);
    if worst < LONE_FLOOR_MS {
        return None;
    }
    let length = l.timeline.last().map_or(0, |x| x.t + 1);
    let typical = if s.median_max_ms.is_finite() {
        s.median_max_ms
    } else {
        s.median_p99_ms
    };
    let what = match s.onsets.as_slice() {
        [t] => format!("one latency spike, at {t} s"),
        [a, b] => format!("two latency spikes, at {a} s and {b} s"),
        _ => unreachable!("one or two onsets"),
    };
    let (path, own) = client_retrans(l);
    Some(
        Finding::new(
            "lone-spike",
            Category::Load,
            Severity::Info,
            format!(
                "{what} (up to {} against a typical {}) in a {length} s run: too few to \
                 tell whether they recur",
                ms(worst),
                ms(typical)
            ),
        )
        .count("spikes", s.onsets.len() as u64)
        .text("spike_times_s", list(&s.onsets))
        .num("max_ms", worst)
        .num("typical_ms", typical)
        .count("run_s", u64::from(length))
        .opt_num("client_retrans", own.map(|n| n as f64))
        .advice(format!(
            "a stall that recurs every P seconds shows as a period only in a run of at \
             least 2P: run longer (`latscope load -d 60s`, or diagnose with a longer \
             --step) to see whether it comes back; {path}"
        )),
    )
}

/// `retransmits` during a load run (≥ 5 data segments: SYN retransmissions are
/// `syn-retries`' business), joined to the spike seconds: warn when at least half of
/// the spikes had retransmissions within ±1 s — unless latscope's own connections
/// retransmitted nothing, when the host-wide counter caught someone else's losses.
/// Quiet when latscope's connections lost only handshakes (SYNs, or what they sent
/// before the server took them) and nothing once established: `syn-retries`.
pub fn retransmits(l: &LoadFacts) -> Option<Finding> {
    let total: u64 = l.timeline.iter().map(|s| s.retrans).sum();
    let syn: u64 = l.timeline.iter().map(|s| s.syn_retrans).sum();
    let data = total.saturating_sub(syn);
    if data < 5 {
        return None;
    }
    let spikes = detect_spikes(&l.timeline);
    let retrans_near = |t: u32| {
        l.timeline
            .iter()
            .any(|s| s.retrans > s.syn_retrans && s.t + 1 >= t && s.t <= t + 1)
    };
    let joined: Vec<u32> = spikes
        .onsets
        .iter()
        .copied()
        .filter(|t| retrans_near(*t))
        .collect();
    let n = spikes.onsets.len();
    let handshake = l.client_syn_retrans.unwrap_or(0) + l.client_early_retrans.unwrap_or(0);
    let own = l.client_data_retrans.map(|d| d + handshake);
    if l.client_data_retrans == Some(0) && handshake > 0 {
        // latscope lost only handshakes (SYNs, or the last ACK and the request of a
        // connection the server had not taken): syn-retries says why.
        return None;
    }
    let not_ours = own == Some(0);
    let linked = n > 0 && joined.len() * 2 >= n && !not_ours;
    let mut title = if n == 0 {
        format!("{data} TCP segments retransmitted during the run")
    } else {
        format!(
            "{data} TCP segments retransmitted during the run; {} of {n} latency spikes \
             coincide with retransmissions",
            joined.len()
        )
    };
    if not_ours {
        title.push_str(", none of them on latscope's own connections");
    }
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
        .count("total_retrans", data)
        .count("syn_retrans", syn)
        .opt_num("client_retrans", own.map(|n| n as f64))
        .count("spikes", n as u64)
        .count("spikes_with_retrans", joined.len() as u64)
        .text("spike_times_s", list(&joined))
        .text("source", "load")
        .advice(if not_ours {
            "the counter is host-wide and latscope's own connections lost nothing: \
             another connection on this host lost these packets (a server running here, \
             talking to its database or upstream?) — not the path to the target"
        } else if linked {
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
