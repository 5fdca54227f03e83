//! Unit tests of the server-metric rules on constructed timelines.

use super::*;
use crate::diagnose::facts::{LoadFacts, Second};
use crate::watch::ServerSecond;

/// Ten seconds, p99 and the server's numbers per second from a closure.
fn timeline(f: impl Fn(u32) -> (f64, ServerSecond)) -> LoadFacts {
    LoadFacts {
        timeline: (0..10)
            .map(|t| {
                let (p99, server) = f(t);
                Second {
                    t,
                    requests: 100,
                    p50_ms: 2.0,
                    p99_ms: p99,
                    max_ms: p99,
                    server: Some(server),
                    ..Default::default()
                }
            })
            .collect(),
        client_data_retrans: Some(0),
        client_syn_retrans: Some(0),
        client_early_retrans: Some(0),
        ..Default::default()
    }
}

fn cpu(pct: f64) -> ServerSecond {
    ServerSecond {
        cpu_pct: Some(pct),
        ..Default::default()
    }
}

/// p99 climbs in the seconds the CPU is saturated: fires; the same CPU with a flat
/// small p99, or no server data at all: quiet.
#[test]
fn cpu_saturated_both_ways() {
    let hot = timeline(|t| {
        if t >= 5 {
            (80.0, cpu(97.0))
        } else {
            (8.0, cpu(40.0))
        }
    });
    let f = server_cpu_saturated(&hot).expect("fires");
    assert_eq!(f.evidence_f64("saturated_seconds"), Some(5.0));
    assert!(f.title.contains("≥ 90 %"), "{}", f.title);
    let flat = timeline(|t| (3.0, cpu(if t >= 5 { 97.0 } else { 40.0 })));
    assert!(server_cpu_saturated(&flat).is_none());
    // Saturated throughout: fast answers stay quiet, slow ones fire.
    assert!(server_cpu_saturated(&timeline(|_| (5.0, cpu(99.0)))).is_none());
    let f = server_cpu_saturated(&timeline(|_| (250.0, cpu(99.0)))).expect("fires");
    assert_eq!(f.evidence_f64("calm_seconds"), Some(0.0));
    let mut none = hot.clone();
    none.timeline.iter_mut().for_each(|s| s.server = None);
    assert!(server_cpu_saturated(&none).is_none());
}

/// Overflows during the run fire; none, or fewer than three, stay quiet.
#[test]
fn listen_overflow_both_ways() {
    let over = |n: f64| {
        timeline(move |t| {
            (
                5.0,
                ServerSecond {
                    listen_overflows: Some(if t == 3 { n } else { 0.0 }),
                    listen_drops: Some(if t == 3 { n } else { 0.0 }),
                    ..Default::default()
                },
            )
        })
    };
    let f = listen_queue_overflow(&over(12.0)).expect("fires");
    assert_eq!(f.evidence_f64("listen_overflows"), Some(12.0));
    assert_eq!(f.evidence_f64("seconds"), Some(1.0));
    assert!(listen_queue_overflow(&over(2.0)).is_none());
    assert!(listen_queue_overflow(&over(0.0)).is_none());
}

fn retrans(n: f64) -> ServerSecond {
    ServerSecond {
        retrans: Some(n),
        ..Default::default()
    }
}

/// Server retransmissions in the spike seconds fire and, with latscope's own
/// connections clean, name the server's backend side; with latscope's connections
/// losing data they name the path; retransmissions away from any latency change are
/// info; none at all: quiet.
#[test]
fn server_retransmits_both_ways() {
    let spiky = |t: u32| t % 4 == 2;
    let l = timeline(|t| {
        if spiky(t) {
            (400.0, retrans(6.0))
        } else {
            (5.0, retrans(0.0))
        }
    });
    let f = server_retransmits(&l).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(f.evidence_str("side"), Some("server-backend"));
    assert!(f.advice.contains("database"), "{}", f.advice);
    assert!(f.title.contains("lost nothing"), "{}", f.title);
    let mut lossy_client = l.clone();
    lossy_client.client_data_retrans = Some(7);
    let f = server_retransmits(&lossy_client).expect("fires");
    assert_eq!(f.evidence_str("side"), Some("path"));
    let apart = timeline(|t| (5.0, retrans(if t == 7 { 9.0 } else { 0.0 })));
    let f = server_retransmits(&apart).expect("reported");
    assert_eq!(f.severity, Severity::Info);
    assert!(server_retransmits(&timeline(|_| (5.0, retrans(0.0)))).is_none());
    assert!(server_retransmits(&timeline(|t| (
        5.0,
        retrans(if t == 1 { 3.0 } else { 0.0 })
    )))
    .is_none());
}
