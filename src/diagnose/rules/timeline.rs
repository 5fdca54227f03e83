//! Timeline rules: `periodic-spikes` (per-second p99 or max spikes that recur at a
//! regular interval), `lone-spike` (one or two spikes: too few to tell a period) and
//! `retransmits` (TCP retransmissions during a run, joined to the spike times).

use super::spikes::MAX_SPIKE_FLOOR_MS;
pub use super::spikes::{detect_spikes, find_period, Spikes};
use super::{median, ms};
use crate::diagnose::facts::{LoadFacts, Second};
use crate::diagnose::finding::{Category, Finding, Severity};

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
/// requests that started from 2 s before to 1 s after the onset (a stall shows in
/// the second its requests end, up to two after they started) took ≥ 50 ms and ≥
/// 5× its typical slowest; it is judged only when it ran in that window of at least
/// half of the onsets, and counts as stalled at ≥ 2/3 of those, as spared at ≤ 1/3.
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
                .filter(|s| s.t + 2 >= o && s.t <= o + 1)
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

/// Lone spikes are this slow at least, ms…
const LONE_FLOOR_MS: f64 = 300.0;
/// …and this many times the median per-second p99.
const LONE_RATIO: f64 = 10.0;

/// `lone-spike`: one or two spikes, too few to tell a period — a run must last
/// twice a period to show it. Quiet on SYN back-off (`syn-retries`), under 300 ms
/// and under 10× the median per-second p99.
pub fn lone_spike(l: &LoadFacts) -> Option<Finding> {
    let s = detect_spikes(&l.timeline);
    if s.period_s.is_some() || s.onsets.is_empty() || s.onsets.len() > 2 || syn_backoff(l, &s) {
        return None;
    }
    let worst = s.max_p99_ms.max(s.max_ms);
    // A lone spike must stand far out (10× the typical second's p99): on a busy
    // machine one second of a few hundred ms happens without a cause in the target.
    if worst < LONE_FLOOR_MS || worst < LONE_RATIO * s.median_p99_ms {
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
