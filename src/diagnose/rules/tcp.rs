//! TCP-level rules: `syn-retries` (connect times clustered near 1 s / 3 s / 7 s + RTT:
//! the SYN was dropped and retransmitted after Linux's 1 s initial RTO) and the
//! probe's own `retransmits` (from the connection's TCP_INFO).

use super::ms;
use crate::diagnose::facts::{LoadFacts, ProbeFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};

/// SYN retransmission times on Linux (initial RTO 1 s, doubling), ms after the start.
const RETRY_AT_MS: [f64; 3] = [1000.0, 3000.0, 7000.0];

/// Weighted median of (value, count) pairs.
fn weighted_median(values: &[(f64, u64)]) -> Option<f64> {
    let mut v: Vec<(f64, u64)> = values
        .iter()
        .copied()
        .filter(|(x, c)| x.is_finite() && *c > 0)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = v.iter().map(|(_, c)| c).sum();
    let mut seen = 0;
    for (x, c) in v {
        seen += c;
        if seen * 2 >= total {
            return Some(x);
        }
    }
    None
}

/// `syn-retries` over connect times given as (ms, count) pairs.
pub fn syn_retries(values: &[(f64, u64)], source: &str) -> Option<Finding> {
    let base = weighted_median(values)?;
    if base >= 500.0 {
        return None; // connects are slow across the board: not a retry pattern
    }
    let slack = base.max(200.0);
    let mut hits = [0u64; 3];
    for (v, c) in values {
        for (i, at) in RETRY_AT_MS.iter().enumerate() {
            if *v >= at + base - 50.0 && *v <= at + base + slack {
                hits[i] += c;
            }
        }
    }
    let retried: u64 = hits.iter().sum();
    let total: u64 = values.iter().map(|(_, c)| c).sum();
    if retried == 0 {
        return None;
    }
    // A connect whose SYN was resent waited for the retransmission timer: 1 s, 3 s or
    // 7 s more than one that went through.
    let waited = hits
        .iter()
        .zip(RETRY_AT_MS)
        .map(|(n, at)| *n as f64 * at)
        .sum::<f64>()
        / retried as f64;
    Some(
        Finding::new(
            "syn-retries",
            Category::Network,
            Severity::Warn,
            format!(
                "{retried} of {total} connects ({source}) took ≈1 s or ≈3 s more than the \
                 usual {}: the SYN was dropped and retransmitted",
                ms(base)
            ),
        )
        .count("retried", retried)
        .count("connects", total)
        .count("near_1s", hits[0])
        .count("near_3s", hits[1])
        .count("near_7s", hits[2])
        .num("connect_p50_ms", base)
        .text("source", source)
        .saving(waited, waited + base, basis::PER_RETRIED_CONNECT)
        .advice(
            "the server's accept or SYN queue overflows (raise the listen backlog and \
             net.core.somaxconn, accept faster, add workers) or the path drops packets; on \
             the server, ListenOverflows/ListenDrops in /proc/net/netstat confirm it",
        ),
    )
}

/// `syn-retries` over a probe's fresh connects.
pub fn probe_syn_retries(p: &ProbeFacts) -> Option<Finding> {
    let f = p.fresh.as_ref()?;
    let v: Vec<(f64, u64)> = f.connect_ms.iter().map(|c| (*c, 1)).collect();
    syn_retries(&v, "probe")
}

/// `syn-retries` over a load run's connect times, with what latscope's own
/// connections retransmitted (TCP_INFO): SYNs only (established connections lost
/// nothing) point at the server's full accept queue or a SYN-dropping firewall,
/// data segments too at the path.
pub fn load_syn_retries(l: &LoadFacts) -> Option<Finding> {
    let syn = l.client_syn_retrans.unwrap_or(0);
    let early = l.client_early_retrans.unwrap_or(0);
    let clean = l.client_data_retrans == Some(0);
    let f = match syn_retries(&l.connect_ms, "load") {
        Some(f) => f,
        // Connects that came up at once, but whose first answer waited for the
        // server's SYN-ACK retransmission: the server dropped the handshake's last
        // ACK (and the request) because its accept queue was full.
        None if early >= 5 && clean => Finding::new(
            "syn-retries",
            Category::Network,
            Severity::Warn,
            format!(
                "{early} segments of new connections were resent before the server \
                 answered them, while established connections lost nothing: the server \
                 did not take the connections"
            ),
        )
        .text("source", "load"),
        None => return None,
    };
    let host_syn: u64 = l.timeline.iter().map(|s| s.syn_retrans).sum();
    let f = f
        .opt_num("client_syn_retrans", l.client_syn_retrans.map(|n| n as f64))
        .count("client_syn_retried_connections", l.client_syn_retried_conns)
        .opt_num(
            "client_before_first_response_retrans",
            l.client_early_retrans.map(|n| n as f64),
        )
        .opt_num(
            "client_data_retrans",
            l.client_data_retrans.map(|n| n as f64),
        )
        .count("host_syn_retrans", host_syn);
    Some(match l.client_data_retrans {
        Some(0) if syn + early > 0 => f.text("cause", "accept-queue").advice(format!(
            "latscope's connections lost only handshakes ({syn} SYNs resent; {early} \
             segments resent before the server answered a new connection) and nothing \
             once established: the server's accept queue is full (or a firewall drops \
             SYNs), not the path. Raise the listen backlog (Python's socketserver \
             listens with 5) and net.core.somaxconn, accept faster or run more workers; \
             on the server, TcpExtListenOverflows in /proc/net/netstat (nstat) confirms it"
        )),
        Some(data) if data > 0 => f.text("cause", "path").advice(format!(
            "established connections lost packets too ({data} data segments \
             retransmitted on latscope's own connections): the path drops packets; check \
             the links, NAT/conntrack tables and MTU between client and server (a full \
             accept queue can drop SYNs as well: TcpExtListenOverflows on the server)"
        )),
        _ => f,
    })
}

/// `retransmits` seen by the probe's own connection (TCP_INFO), so not polluted by
/// other traffic on the host.
pub fn probe_retransmits(p: &ProbeFacts) -> Option<Finding> {
    let tcp = p.tcp?;
    if tcp.total_retrans == 0 {
        return None;
    }
    Some(
        Finding::new(
            "retransmits",
            Category::Network,
            Severity::Info,
            format!(
                "the probe's connection retransmitted {} segments (RTT {}): packets are \
                 lost on the path",
                tcp.total_retrans,
                ms(tcp.rtt_ms)
            ),
        )
        .count("total_retrans", tcp.total_retrans)
        .num("rtt_ms", tcp.rtt_ms)
        .text("source", "probe")
        .advice(
            "each loss costs at least a round trip and often a 200 ms+ timeout: look for \
             a lossy link, an overloaded NAT or bridge, or a shaper on the path",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    /// Two of ten connects at 1.11 s and one at 3.1 s with a 110 ms RTT fire.
    #[test]
    fn syn_retries_fire() {
        let mut p = far_probe();
        let c = &mut p.fresh.as_mut().unwrap().connect_ms;
        c[2] = 1110.0;
        c[5] = 1112.0;
        c[7] = 3111.0;
        let f = probe_syn_retries(&p).expect("fires");
        assert_eq!(f.evidence_f64("retried"), Some(3.0));
        assert_eq!(f.evidence_f64("near_1s"), Some(2.0));
        assert_eq!(f.evidence_f64("near_3s"), Some(1.0));
        assert_eq!(f.evidence_f64("connect_p50_ms"), Some(110.0));
        let load = LoadFacts {
            connect_ms: vec![(0.1, 5000), (1000.2, 12)],
            ..LoadFacts::default()
        };
        assert_eq!(
            load_syn_retries(&load).unwrap().evidence_f64("retried"),
            Some(12.0)
        );
    }

    /// Issue 12.3: SYNs (and pre-answer segments) resent while established
    /// connections lost nothing is the accept queue; data lost once established is
    /// the path; first answers that waited for the server's SYN-ACK retransmission
    /// fire even when connects came up at once.
    #[test]
    fn load_syn_retries_tells_queue_from_path() {
        let mut l = LoadFacts {
            connect_ms: vec![(0.04, 5000), (1000.1, 40)],
            client_syn_retrans: Some(41),
            client_syn_retried_conns: 40,
            client_early_retrans: Some(12),
            client_data_retrans: Some(0),
            ..LoadFacts::default()
        };
        let f = load_syn_retries(&l).expect("fires");
        assert_eq!(f.evidence_str("cause"), Some("accept-queue"));
        assert!(f.advice.contains("listen backlog"), "{}", f.advice);
        l.client_data_retrans = Some(30);
        let f = load_syn_retries(&l).expect("fires");
        assert_eq!(f.evidence_str("cause"), Some("path"));
        // Fast connects, first answers after the server resent its SYN-ACK.
        let l = LoadFacts {
            connect_ms: vec![(0.04, 5000)],
            client_syn_retrans: Some(0),
            client_early_retrans: Some(25),
            client_data_retrans: Some(0),
            ..LoadFacts::default()
        };
        let f = load_syn_retries(&l).expect("fires");
        assert_eq!(f.evidence_str("cause"), Some("accept-queue"));
        // Nothing resent: quiet.
        let l = LoadFacts {
            connect_ms: vec![(0.04, 5000)],
            client_syn_retrans: Some(0),
            client_early_retrans: Some(0),
            client_data_retrans: Some(0),
            ..LoadFacts::default()
        };
        assert!(load_syn_retries(&l).is_none());
    }

    /// Steady connects, noisy loopback connects and a uniformly slow link stay quiet.
    #[test]
    fn syn_retries_quiet() {
        assert!(probe_syn_retries(&far_probe()).is_none());
        assert!(probe_syn_retries(&healthy_probe()).is_none());
        // 600 ms everywhere (satellite?) with one at 1.6 s: not a retry pattern.
        assert!(syn_retries(&[(600.0, 10), (1600.0, 1)], "probe").is_none());
        // 400 ms, not 1 s: a slow connect, not a retransmitted SYN.
        assert!(syn_retries(&[(0.2, 100), (400.0, 3)], "probe").is_none());
    }

    /// Retransmissions on the probe connection fire; none keeps it quiet.
    #[test]
    fn probe_retransmits_both_ways() {
        let mut p = far_probe();
        p.tcp.as_mut().unwrap().total_retrans = 4;
        assert_eq!(
            probe_retransmits(&p).unwrap().evidence_f64("total_retrans"),
            Some(4.0)
        );
        assert!(probe_retransmits(&healthy_probe()).is_none());
    }

    /// Pricing `syn-retries`: a connect whose SYN was resent waited for Linux's
    /// retransmission timer; two near 1 s and one near 3 s waited (2 × 1000 +
    /// 3000) / 3 ≈ 1666.7 ms each, of 1666.7 + 110 ms, per retried connect. The
    /// probe's `retransmits` says nothing about what a fix saves and stays unpriced.
    #[test]
    fn pricing_syn_retries() {
        let mut p = far_probe();
        let c = &mut p.fresh.as_mut().unwrap().connect_ms;
        c[2] = 1110.0;
        c[5] = 1112.0;
        c[7] = 3111.0;
        let f = probe_syn_retries(&p).unwrap();
        assert_eq!(f.saving_ms, Some(1666.667));
        assert_eq!(f.saving_of_ms, Some(1776.667));
        assert_eq!(f.saving_basis.as_deref(), Some("per retried connect"));
        let mut p = healthy_probe();
        p.tcp.as_mut().unwrap().total_retrans = 3;
        assert_eq!(probe_retransmits(&p).unwrap().saving_ms, None);
    }
}
