//! The findings that need distance or loss, planted on the lab's wire (issue 6): root
//! only, one at a time under `util_wire::lock()`, skipped with a note otherwise. Their
//! healthy side (loopback, where none of them fires) is in tests/findings.rs.

use std::time::{Duration, Instant};

use latscope::lab::wire::{Outage, Wire, WireOptions};
use latscope::lab::{self, LabOptions};
use serde_json::Value;

use crate::findings::{assert_in, assert_quiet, diagnose, finding, ids, num, run_ok, text};
use crate::util_require::require_tun;
use crate::util_wire::{lock, start_lab};

/// Over `--rtt 40ms` to `/`: the round trip is the whole warm TTFB
/// (`network-dominates`), 40× the 1 ms floor of 100 km (`above-physical-floor`, but
/// not for 3000 km, whose floor is 30 ms), a new connection costs one more round trip
/// (`handshake-dominates`), and a 4 MB body over a fresh connection waits for TCP's
/// slow start (`slow-start`). Priced: a route at the floor saves rtt − floor per
/// kept-alive request (≈39 ms), a reused connection one round trip per new visitor,
/// a warm connection fresh − warm download time.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn distance_findings_on_a_40ms_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_lab, url) = start_lab(&["--listen", "127.0.0.1:0", "--rtt", "40ms"]);
    let v = diagnose(&[&url, "--no-load", "--distance-km", "100"]);
    let f = finding(&v, "network-dominates");
    assert_in("min RTT", num(f, "min_rtt_ms"), 30.0, 60.0);
    assert_in("share", num(f, "share"), 0.5, 1.0);
    let f = finding(&v, "above-physical-floor");
    assert_eq!(num(f, "floor_ms"), 1.0);
    assert_eq!(num(f, "distance_km"), 100.0);
    assert!(num(f, "ratio") >= 25.0, "{f}");
    assert_eq!(f["severity"], "warn");
    let saving = f["saving_ms"]
        .as_f64()
        .expect("above-physical-floor is priced");
    assert!((saving - (num(f, "min_rtt_ms") - 1.0)).abs() < 0.01, "{f}");
    assert_eq!(f["saving_basis"], "reused", "{f}");
    let f = finding(&v, "handshake-dominates");
    assert_in("handshake", num(f, "handshake_ms"), 25.0, 80.0);
    assert_in("round trips", num(f, "round_trips"), 0.6, 1.6);
    assert_eq!(f["saving_ms"].as_f64(), Some(num(f, "handshake_ms")), "{f}");
    assert_eq!(f["saving_basis"], "fresh", "{f}");
    assert_quiet(&v, "server-dominates", "/ over a 40 ms wire");

    let v = diagnose(&[&url, "--no-load", "--distance-km", "3000"]);
    assert_quiet(
        &v,
        "above-physical-floor",
        "40 ms for 3000 km (floor 30 ms)",
    );

    let v = run_ok(&[
        "probe",
        "--json",
        "--no-save",
        "-n",
        "3",
        &format!("{url}bytes/4MB"),
    ]);
    let f = finding(&v, "slow-start");
    eprintln!("slow-start over 40 ms: {}", f["evidence"]);
    assert_eq!(num(f, "body_bytes"), (4u64 << 20) as f64);
    assert!(num(f, "fresh_ms") - num(f, "warm_ms") >= 50.0, "{f}");
    assert!(num(f, "fresh_ms") >= 1.5 * num(f, "warm_ms"), "{f}");
    let saving = f["saving_ms"].as_f64().expect("slow-start is priced");
    assert!(
        (saving - (num(f, "fresh_ms") - num(f, "warm_ms"))).abs() < 0.01,
        "{f}"
    );
}

/// `--loss 3%` under a load ramp of uploads: the client's retransmissions show up in
/// the timeline and the load `retransmits` finding counts them.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn retransmits_on_a_lossy_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_lab, url) = start_lab(&[
        "--listen",
        "127.0.0.1:0",
        "--rtt",
        "10ms",
        "--loss",
        "3%",
        "--loss-seed",
        "7",
    ]);
    // A 6 KB request body: several client segments per request, so the client's own
    // retransmissions (the host counter) are many, not a handful.
    let body = "x".repeat(6000);
    let v = diagnose(&[
        &url,
        "-X",
        "POST",
        "--data",
        &body,
        "--step",
        "1s",
        "--max-connections",
        "4",
    ]);
    assert_eq!(v["load"]["errors"], serde_json::json!({}), "{}", v["load"]);
    let load: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "retransmits" && f["evidence"]["source"] == "load")
        .collect();
    let f = load
        .first()
        .unwrap_or_else(|| panic!("no load retransmits; found {:?}; {}", ids(&v), v["load"]));
    eprintln!("retransmits under --loss 3%: {}", f["evidence"]);
    assert!(num(f, "total_retrans") >= 5.0, "{f}");
    assert_eq!(text(f, "source"), "load");
}

/// Sleeps until `t` (a scheduled start, lined up with the wire's outage windows).
fn wait_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// `--outage-every 2s --outage-for 1s` over `--rtt 10ms`: a probe started 150 ms into
/// an outage sends its first SYN into it; Linux resends it after 1 s, when the wire
/// is clear again, so one connect takes ≈ 1 s against a ≈ 10 ms median. A probe
/// started between outages connects at once every time.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn syn_retries_when_a_syn_falls_into_an_outage() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let outage = Outage {
        every: Duration::from_secs(2),
        length: Duration::from_secs(1),
    };
    let wire = Wire::start(WireOptions {
        rtt: Duration::from_millis(10),
        outage: Some(outage),
        ..WireOptions::default()
    })
    .expect("wire starts");
    let listener = wire.bind_listener(0).expect("binds inside the namespace");
    let lab = lab::spawn_on(listener, LabOptions::default()).expect("lab starts");
    let probe = |at: Instant| {
        wait_until(at);
        let v = run_ok(&["probe", "--json", "--no-save", "-n", "4", &lab.url("/")]);
        (v, Instant::now())
    };
    // Outages: [2 s, 3 s), [4 s, 5 s), … after the wire's start.
    let start = wire.started() + outage.every + Duration::from_millis(150);
    let (v, done) = probe(start);
    assert!(wire.in_outage(start));
    eprintln!(
        "probe from {:?} to {:?} after the wire's start",
        start - wire.started(),
        done - wire.started()
    );
    let f = finding(&v, "syn-retries");
    eprintln!("syn-retries: {}", f["evidence"]);
    assert!(num(f, "retried") >= 1.0, "{f}");
    assert!(num(f, "near_1s") >= 1.0, "{f}");
    assert_in("connect p50", num(f, "connect_p50_ms"), 5.0, 60.0);
    assert_eq!(text(f, "source"), "probe");
    // Between outages ([5 s, 6 s) is clear): no SYN is lost.
    let clear = wire.started() + outage.every * 2 + outage.length + Duration::from_millis(50);
    let (v, done) = probe(clear);
    if !wire.in_outage(done) && done - wire.started() < outage.every * 3 {
        assert_quiet(&v, "syn-retries", "a probe between outages");
    } else {
        eprintln!("note: the clear probe ran into the next outage; not judged");
    }
}
