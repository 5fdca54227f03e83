//! Tests of the timing rules (`rules/timing.rs`) on constructed probes.

use super::*;
use crate::diagnose::facts::Headers;
use crate::diagnose::rules::testutil::{far_probe, healthy_probe, set};

/// Story 2's warm request (110 ms RTT of 118 ms) is network-dominated.
#[test]
fn network_dominates_far() {
    let f = time_split(&far_probe(), false).expect("fires");
    assert_eq!(f.id, "network-dominates");
    assert_eq!(f.evidence_f64("min_rtt_ms"), Some(110.0));
    assert_eq!(f.evidence_f64("server_ms"), Some(8.0));
}

/// A 450 ms server behind a 10 ms RTT is server-dominated; behind a CDN it is named
/// "edge → origin + server".
#[test]
fn server_dominates_and_label() {
    let mut p = healthy_probe();
    p.tcp.as_mut().unwrap().min_rtt_ms = 10.0;
    let r = p.reused.as_mut().unwrap();
    set(r, "wait", 460.0);
    set(r, "ttfb", 461.0);
    let f = time_split(&p, false).expect("fires");
    assert_eq!(f.id, "server-dominates");
    assert_eq!(f.evidence_f64("server_ms"), Some(450.0));
    assert!(
        f.title
            .starts_with("server (or whatever is behind it) time 450 ms"),
        "{}",
        f.title
    );
    assert!(f.advice.contains("--origin"), "{}", f.advice);
    let f = time_split(&p, true).unwrap();
    assert!(
        f.title.starts_with("edge → origin + server time"),
        "{}",
        f.title
    );
    assert_eq!(
        f.evidence_str("server_label"),
        Some("edge → origin + server")
    );
}

/// Loopback: 0.28 ms wait of 0.3 ms TTFB is a 93 % server share, but under 100 ms.
#[test]
fn split_quiet_when_fast() {
    assert!(time_split(&healthy_probe(), false).is_none());
}

/// 110 ms over 2,500 km (floor 25 ms) fires; 30 ms over 2,500 km does not.
#[test]
fn physical_floor_both_ways() {
    let f = above_physical_floor(&far_probe(), 2500.0).expect("fires");
    assert_eq!(f.evidence_f64("floor_ms"), Some(25.0));
    assert_eq!(f.evidence_f64("ratio"), Some(4.4));
    let mut p = far_probe();
    p.tcp.as_mut().unwrap().min_rtt_ms = 30.0;
    assert!(above_physical_floor(&p, 2500.0).is_none());
    // Loopback vs 1 km: 0.02 ms RTT, under the floor rule's 10 ms minimum.
    assert!(above_physical_floor(&healthy_probe(), 1.0).is_none());
}

/// Server-Timing of 12 ms against 180 ms of server time fires; a matching one not.
#[test]
fn server_timing_gap_both_ways() {
    let mut p = healthy_probe();
    p.tcp.as_mut().unwrap().min_rtt_ms = 20.0;
    let r = p.reused.as_mut().unwrap();
    set(r, "wait", 200.0);
    set(r, "ttfb", 200.0);
    p.headers = Headers::from_pairs(&[("server-timing", "db;dur=8, render;dur=4")]);
    let f = server_timing_gap(&p, false).expect("fires");
    assert_eq!(f.evidence_f64("explained_ms"), Some(12.0));
    assert_eq!(f.evidence_f64("gap_ms"), Some(168.0));
    p.headers = Headers::from_pairs(&[("server-timing", "db;dur=8, total;dur=175")]);
    assert!(server_timing_gap(&p, false).is_none());
    // `total` is the whole even after `app` (the lab's header order).
    p.headers = Headers::from_pairs(&[("server-timing", "db;dur=150, app;dur=5, total;dur=155")]);
    assert!(server_timing_gap(&p, false).is_none());
    // Fast loopback with a tiny Server-Timing: the gap is under 20 ms.
    let mut p = healthy_probe();
    p.headers = Headers::from_pairs(&[("server-timing", "app;dur=0.01")]);
    assert!(server_timing_gap(&p, false).is_none());
}

/// 120 ms of DNS fires; loopback's 0.05 ms does not.
#[test]
fn slow_dns_both_ways() {
    let mut p = far_probe();
    set(p.fresh.as_mut().unwrap(), "dns", 120.0);
    assert_eq!(slow_dns(&p).unwrap().evidence_f64("dns_ms"), Some(120.0));
    assert!(slow_dns(&far_probe()).is_none());
    assert!(slow_dns(&healthy_probe()).is_none());
}

/// Issue 12.4: a BaseHTTPRequestHandler writing headers and body apart — reused
/// receive 46.9 ms, TTFB 0.40 ms, fresh receive 0.03 ms — is the delayed-ACK
/// stall; a single write (receive 0.02 ms) is quiet; a slow body on a fresh-only
/// probe is a slow body, and a 4 MB download is not judged.
#[test]
fn slow_receive_both_ways() {
    let mut p = healthy_probe();
    p.body_bytes = 26;
    let r = p.reused.as_mut().unwrap();
    set(r, "receive", 46.9);
    set(r, "ttfb", 0.40);
    set(r, "total", 47.6);
    set(p.fresh.as_mut().unwrap(), "receive", 0.03);
    let f = slow_receive(&p).expect("fires");
    assert_eq!(f.evidence_str("cause"), Some("delayed-ack"));
    assert!(f.advice.contains("TCP_NODELAY"), "{}", f.advice);
    assert!(f.title.contains("Nagle"), "{}", f.title);
    let mut q = p.clone();
    q.body_bytes = 4 << 20;
    assert!(slow_receive(&q).is_none());
    let mut q = p.clone();
    q.reused = None;
    let fr = q.fresh.as_mut().unwrap();
    set(fr, "receive", 120.0);
    set(fr, "total", 125.0);
    set(fr, "ttfb", 5.0);
    assert_eq!(
        slow_receive(&q).unwrap().evidence_str("cause"),
        Some("slow-body")
    );
    assert!(slow_receive(&healthy_probe()).is_none());
}

/// Issue 37 item 5: the same 46.9 ms delayed-ACK stall behind a handler that takes
/// 150 ms (a quarter of the request) still warns, priced as before; a 25 ms slow
/// body in a 400 ms fresh-only request (no signature, under half) is an info; 5 ms
/// of body in it is quiet.
#[test]
fn slow_receive_by_its_absolute_cost() {
    let mut p = healthy_probe();
    p.body_bytes = 26;
    let r = p.reused.as_mut().unwrap();
    set(r, "receive", 46.9);
    set(r, "ttfb", 150.4);
    set(r, "total", 197.6);
    set(p.fresh.as_mut().unwrap(), "receive", 0.03);
    let f = slow_receive(&p).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(f.evidence_str("cause"), Some("delayed-ack"));
    assert!((f.saving_ms.unwrap() - 46.87).abs() < 1e-9);
    let mut q = p.clone();
    q.reused = None;
    let fr = q.fresh.as_mut().unwrap();
    set(fr, "receive", 25.0);
    set(fr, "ttfb", 375.0);
    set(fr, "total", 400.0);
    let f = slow_receive(&q).expect("fires");
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.evidence_str("cause"), Some("slow-body"));
    set(q.fresh.as_mut().unwrap(), "receive", 5.0);
    assert!(slow_receive(&q).is_none());
}

/// Pricing the timing rules:
/// - slow-dns: a caching resolver saves the lookup: 120 ms of the 230 ms fresh
///   TTFB, per new visitor;
/// - above-physical-floor: a kept-alive request crosses the path once, so a route
///   at the floor saves rtt − floor: 110 − 25 = 85 ms of the 118 ms reused TTFB;
/// - slow-receive (delayed ACK): writing the response in one piece leaves the body
///   as fast as on a fresh connection: 46.9 − 0.03 = 46.87 ms of 47.6 ms per
///   kept-alive request; a slow body has no measured fix and stays unpriced;
/// - server-dominates / network-dominates: nothing says what a fix would save.
#[test]
fn pricing_timing_rules() {
    let price = |f: &Finding| {
        (
            f.saving_ms.unwrap(),
            f.saving_of_ms.unwrap(),
            f.saving_basis.clone().unwrap(),
        )
    };
    let mut p = far_probe();
    set(p.fresh.as_mut().unwrap(), "dns", 120.0);
    assert_eq!(
        price(&slow_dns(&p).unwrap()),
        (120.0, 230.0, "fresh".into())
    );
    let f = above_physical_floor(&far_probe(), 2500.0).unwrap();
    assert_eq!(price(&f), (85.0, 118.0, "reused".into()));

    let mut p = healthy_probe();
    p.body_bytes = 26;
    let r = p.reused.as_mut().unwrap();
    set(r, "receive", 46.9);
    set(r, "ttfb", 0.40);
    set(r, "total", 47.6);
    set(p.fresh.as_mut().unwrap(), "receive", 0.03);
    let f = slow_receive(&p).unwrap();
    assert_eq!(price(&f), (46.87, 47.6, "reused".into()));
    let mut q = p.clone();
    q.reused = None;
    let fr = q.fresh.as_mut().unwrap();
    set(fr, "receive", 120.0);
    set(fr, "total", 125.0);
    set(fr, "ttfb", 5.0);
    assert_eq!(slow_receive(&q).unwrap().saving_ms, None);
    assert_eq!(time_split(&far_probe(), false).unwrap().saving_ms, None);
}

/// Issue 29: a server time whose median is 120 ms but whose 8 warm requests spread
/// over 20..220 ms may or may not be over the 100 ms floor: `server-dominates` says
/// it cannot tell (info, the command that would tell), never warns; 120 ± 5 ms
/// decides it, and 60 ± 50 ms is quiet (its interval lies under 100 ms).
#[test]
fn server_dominates_decides_on_the_interval() {
    use crate::diagnose::rules::testutil::spread;
    let mut p = healthy_probe();
    p.tcp.as_mut().unwrap().min_rtt_ms = 1.0;
    let with = |p: &mut ProbeFacts, ms: f64, noise: f64, n: usize| {
        let r = p.reused.as_mut().unwrap();
        r.wait_ms = spread(ms + 1.0, noise, n);
        r.ttfb_ms = r.wait_ms.iter().map(|w| w + 0.1).collect();
        r.p50.wait = ms + 1.0;
        r.p50.ttfb = ms + 1.1;
    };
    with(&mut p, 120.0, 100.0, 8);
    let f = time_split(&p, false).expect("says so");
    assert_eq!(
        (f.id.as_str(), f.severity),
        ("server-dominates", Severity::Info),
        "{}",
        f.title
    );
    assert!(f.title.contains("not enough samples"), "{}", f.title);
    assert!(f.undecided());
    with(&mut p, 120.0, 5.0, 8);
    let f = time_split(&p, false).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(f.confidence.as_ref().unwrap().verdict, "above");
    with(&mut p, 60.0, 30.0, 20);
    assert!(time_split(&p, false).is_none());
}
