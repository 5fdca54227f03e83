//! Rules over the server's own metrics (`--watch`, joined to the load timeline per
//! second): `server-cpu-saturated` (p99 rises while the server's CPU is ≥ 90 % busy),
//! `listen-queue-overflow` (the kernel dropped connections because an accept queue
//! was full) and `server-retransmits` (the server's host retransmitted, in step with
//! the latency spikes; when latscope's own connections lost nothing the loss is on
//! the server's connections to what is behind it). Each stays silent without server
//! data.

use super::evidence::{judge, not_enough};
use super::spikes::detect_spikes;
use super::{median, ms};
use crate::diagnose::facts::{LoadFacts, Second};
use crate::diagnose::finding::{Category, Finding, Severity};
use crate::stats::interval::{shift, Method};
use crate::watch::ServerSecond;

/// A second is CPU-saturated at or above this busy share…
pub const SATURATED_PCT: f64 = 90.0;
/// …and calm (a baseline for p99) below this one.
const CALM_PCT: f64 = 75.0;
/// p99 in saturated seconds must be this many times the calm seconds'…
const RISE_RATIO: f64 = 1.5;
/// …and this much above it, ms.
const RISE_FLOOR_MS: f64 = 20.0;
/// Saturated through the whole run (no calm second to compare): p99 at least this, ms.
const SATURATED_P99_FLOOR_MS: f64 = 100.0;
/// Fewer saturated seconds than this say nothing.
const MIN_SATURATED_SECONDS: usize = 2;
/// Fewer dropped connections than this over the run are not reported.
const MIN_LISTEN_DROPS: f64 = 3.0;
/// Fewer server retransmissions than this over the run are not reported.
const MIN_SERVER_RETRANS: f64 = 5.0;

fn with_server(l: &LoadFacts) -> Vec<(&Second, &ServerSecond)> {
    l.timeline
        .iter()
        .filter_map(|s| s.server.as_ref().map(|v| (s, v)))
        .collect()
}

fn sum(v: &[(&Second, &ServerSecond)], f: impl Fn(&ServerSecond) -> Option<f64>) -> f64 {
    v.iter().filter_map(|(_, s)| f(s)).sum()
}

fn med_p99(v: &[&Second]) -> f64 {
    median(&v.iter().map(|s| s.p99_ms).collect::<Vec<_>>())
}

/// `server-cpu-saturated`: seconds in which the watched server's CPU was ≥ 90 % busy
/// carry a higher p99 than the calm ones (< 75 %): ≥ 1.5× and ≥ 20 ms more. When no
/// second was calm (saturated from the start), their p99 must reach 100 ms.
pub fn server_cpu_saturated(l: &LoadFacts) -> Option<Finding> {
    let secs: Vec<(&Second, f64)> = with_server(l)
        .into_iter()
        .filter(|(s, _)| s.requests > 0)
        .filter_map(|(s, v)| v.cpu_pct.map(|c| (s, c)))
        .collect();
    let sat: Vec<&Second> = secs
        .iter()
        .filter(|(_, c)| *c >= SATURATED_PCT)
        .map(|(s, _)| *s)
        .collect();
    if sat.len() < MIN_SATURATED_SECONDS {
        return None;
    }
    let calm: Vec<&Second> = secs
        .iter()
        .filter(|(_, c)| *c < CALM_PCT)
        .map(|(s, _)| *s)
        .collect();
    let p99_sat = med_p99(&sat);
    let mean_cpu = secs.iter().map(|(_, c)| c).sum::<f64>() / secs.len() as f64;
    let mut confidence = None;
    let (title, base) = if calm.len() >= 2 {
        let base = med_p99(&calm);
        // The saturated seconds' p99s against the calm ones' (per-second blocks, as
        // DESIGN.md's comparisons): ≥ 1.5× and ≥ 20 ms more with 95 % confidence.
        let p99s = |v: &[&Second]| v.iter().map(|s| s.p99_ms).collect::<Vec<_>>();
        let judged = judge(
            "p99 of the saturated seconds − the calm seconds', ms",
            shift(&p99s(&calm), &p99s(&sat)),
            p99_sat - base,
            [sat.len(), calm.len()],
            RISE_FLOOR_MS.max((RISE_RATIO - 1.0) * base),
            Method::HodgesLehmann,
        );
        if judged.undecided() {
            return Some(not_enough(
                "server-cpu-saturated",
                Category::Server,
                "does p99 rise while the server's CPU is saturated",
                "ms",
                judged.confidence?,
                "latscope load … --watch … -d 60s (more seconds on each side)",
            ));
        }
        if !judged.fires() {
            return None;
        }
        confidence = judged.confidence;
        (
            format!(
                "p99 {} while the server's CPU was ≥ 90 % busy ({} s), {} while it was \
                 below 75 % ({} s)",
                ms(p99_sat),
                sat.len(),
                ms(base),
                calm.len()
            ),
            Some(base),
        )
    } else {
        if p99_sat < SATURATED_P99_FLOOR_MS || sat.len() * 2 < secs.len() {
            return None;
        }
        (
            format!(
                "the server's CPU was ≥ 90 % busy in {} of {} seconds, with p99 {}",
                sat.len(),
                secs.len(),
                ms(p99_sat)
            ),
            None,
        )
    };
    let f = Finding::new(
        "server-cpu-saturated",
        Category::Server,
        Severity::Warn,
        title,
    )
    .count("saturated_seconds", sat.len() as u64)
    .count("calm_seconds", calm.len() as u64)
    .count("watched_seconds", secs.len() as u64)
    .num("p99_saturated_ms", p99_sat)
    .opt_num("p99_calm_ms", base)
    .num("server_cpu_mean_pct", mean_cpu)
    .opt_num("client_cpu_pct", l.client_cpu_pct);
    let f = match confidence {
        Some(c) => f.confidence(c),
        None => f,
    };
    Some(f.advice(
        "the server ran out of CPU and requests queued for it: profile the hot \
             path, add cores or instances, or cache the answer. If latscope runs on the \
             same host, its own CPU (client_cpu_pct) counts in the server's too",
    ))
}

/// `listen-queue-overflow`: the server's kernel dropped connections (or their
/// handshake's last ACK) because a listener's accept queue was full — TcpExt
/// ListenOverflows / ListenDrops rose by ≥ 3 during the run.
pub fn listen_queue_overflow(l: &LoadFacts) -> Option<Finding> {
    let v = with_server(l);
    let overflows = sum(&v, |s| s.listen_overflows);
    let drops = sum(&v, |s| s.listen_drops);
    if overflows.max(drops) < MIN_LISTEN_DROPS {
        return None;
    }
    let seconds = v
        .iter()
        .filter(|(_, s)| s.listen_overflows.unwrap_or(0.0) + s.listen_drops.unwrap_or(0.0) > 0.0)
        .count();
    let syn = l.client_syn_retrans.unwrap_or(0) + l.client_early_retrans.unwrap_or(0);
    let mut title = format!(
        "the server's accept queue overflowed: {:.0} connections dropped \
         (ListenOverflows {:.0}, ListenDrops {:.0}) in {seconds} of {} seconds",
        overflows.max(drops),
        overflows,
        drops,
        v.len()
    );
    if syn > 0 {
        title.push_str(&format!(
            "; latscope's connections resent {syn} handshake segments"
        ));
    }
    Some(
        Finding::new(
            "listen-queue-overflow",
            Category::Server,
            Severity::Warn,
            title,
        )
        .num("listen_overflows", overflows)
        .num("listen_drops", drops)
        .count("seconds", seconds as u64)
        .opt_num("client_syn_retrans", l.client_syn_retrans.map(|n| n as f64))
        .opt_num(
            "client_before_first_response_retrans",
            l.client_early_retrans.map(|n| n as f64),
        )
        .advice(
            "connections arrive faster than the server accepts them, and each dropped one \
             waits for a SYN retransmission (1 s, then 3 s): accept faster or run more \
             workers, and raise the listen backlog (listen(2)'s argument; Python's \
             socketserver uses 5, nginx `listen … backlog=`) together with \
             net.core.somaxconn, which caps it",
        ),
    )
}

/// `server-retransmits`: the watched host retransmitted ≥ 5 TCP segments during the
/// run and they line up with the latency (half the spikes start within a second of
/// a retransmitting second, or the seconds with retransmissions have ≥ 2× the p99 of
/// the others and ≥ 20 ms more). When latscope's own connections retransmitted
/// nothing, the loss is on the server's own connections to what is behind it.
pub fn server_retransmits(l: &LoadFacts) -> Option<Finding> {
    let v = with_server(l);
    let total = sum(&v, |s| s.retrans);
    if total < MIN_SERVER_RETRANS {
        return None;
    }
    let lossy = |s: &ServerSecond| s.retrans.unwrap_or(0.0) >= 0.5;
    let lossy_t: Vec<u32> = v
        .iter()
        .filter(|(_, s)| lossy(s))
        .map(|(t, _)| t.t)
        .collect();
    let spikes = detect_spikes(&l.timeline);
    let joined: Vec<u32> = spikes
        .onsets
        .iter()
        .copied()
        .filter(|o| lossy_t.iter().any(|t| t.abs_diff(*o) <= 1))
        .collect();
    let n = spikes.onsets.len();
    let with: Vec<&Second> = v
        .iter()
        .filter(|(s, x)| s.requests > 0 && lossy(x))
        .map(|(s, _)| *s)
        .collect();
    let without: Vec<&Second> = v
        .iter()
        .filter(|(s, x)| s.requests > 0 && !lossy(x))
        .map(|(s, _)| *s)
        .collect();
    let (p99_with, p99_without) = (med_p99(&with), med_p99(&without));
    // Seconds with retransmissions against those without: ≥ 2× and ≥ 20 ms more p99
    // with 95 % confidence when each side has the seconds for an interval, else on
    // the medians (a warning then also needs the spikes to line up).
    let p99s = |v: &[&Second]| v.iter().map(|s| s.p99_ms).collect::<Vec<_>>();
    let by_p99 = !with.is_empty()
        && without.len() >= 2
        && match shift(&p99s(&without), &p99s(&with)) {
            Some(iv) => iv.low >= RISE_FLOOR_MS.max(p99_without),
            None => p99_with >= 2.0 * p99_without && p99_with - p99_without >= RISE_FLOOR_MS,
        };
    let linked = (n > 0 && joined.len() * 2 >= n) || by_p99;
    let handshake = l.client_syn_retrans.unwrap_or(0) + l.client_early_retrans.unwrap_or(0);
    let side = match l.client_data_retrans {
        Some(0) if handshake == 0 => "server-backend",
        Some(_) => "path",
        None => "unknown",
    };
    let mut title = format!("the server retransmitted {total:.0} TCP segments during the run");
    if linked {
        if n > 0 {
            title.push_str(&format!(
                "; {} of {n} latency spikes coincide with them",
                joined.len()
            ));
        } else {
            title.push_str(&format!(
                "; p99 {} in those seconds, {} in the others",
                ms(p99_with),
                ms(p99_without)
            ));
        }
    }
    if side == "server-backend" {
        title.push_str(", while latscope's own connections lost nothing");
    }
    let advice = match (linked, side) {
        (true, "server-backend") => {
            "the loss is on the server's own connections to what is behind it — its \
             database, an upstream service, a NAT or conntrack table on that path — not \
             between latscope and the server: each lost segment there holds a request \
             for a retransmission timeout (≥ 200 ms). Check the links, NAT/conntrack and \
             MTU between the server and its backends (nstat and ss -ti on the server)"
        }
        (true, "path") => {
            "latscope's own connections lost packets too: the path between latscope and \
             the server drops them (and the server's backends may also); check the links, \
             NAT/conntrack tables and MTU on that path"
        }
        (true, _) => {
            "the latency spikes line up with packet loss on the server's host; whether it \
             is on the path from latscope or behind the server was not measured (latscope \
             reads its own connections' retransmits over HTTP/1.1)"
        }
        _ => {
            "the server's host lost some packets (the counter covers all its connections); \
             they do not line up with the latency"
        }
    };
    Some(
        Finding::new(
            "server-retransmits",
            Category::Network,
            if linked {
                Severity::Warn
            } else {
                Severity::Info
            },
            title,
        )
        .num("server_retrans", total)
        .count("seconds_with_retrans", lossy_t.len() as u64)
        .count("spikes", n as u64)
        .count("spikes_with_retrans", joined.len() as u64)
        .opt_num(
            "p99_with_retrans_ms",
            p99_with.is_finite().then_some(p99_with),
        )
        .opt_num(
            "p99_without_retrans_ms",
            p99_without.is_finite().then_some(p99_without),
        )
        .opt_num(
            "client_data_retrans",
            l.client_data_retrans.map(|n| n as f64),
        )
        .count("client_handshake_retrans", handshake)
        .text("side", side)
        .advice(advice),
    )
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
