//! The lab's server-wide options over real loopback sockets: cold start, worker
//! pool, capacity, overload policy, stalls, and the request counters.

use std::time::{Duration, Instant};

use latscope::lab::{self, LabOptions, OverloadPolicy, StallOptions};

use crate::util_lab::{concurrent, connect, get, healthy, p50_ms, Proto};

// ---------------------------------------------------------------------------
// server-wide options

/// /cold is slow (--cold 300ms) on the first request, then fast (p50 of 10).
#[tokio::test]
async fn cold_is_slow_once_then_fast() {
    let lab = lab::spawn(LabOptions {
        cold: Duration::from_millis(300),
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let first = c.get("/cold", &[]).await.unwrap();
    assert!(
        first.elapsed >= Duration::from_millis(295),
        "{:?}",
        first.elapsed
    );
    assert_eq!(first.header("x-lab-cold"), "cold");
    let mut warm = Vec::new();
    for _ in 0..10 {
        let r = c.get("/cold", &[]).await.unwrap();
        assert_eq!(r.header("x-lab-cold"), "warm");
        warm.push(r.elapsed);
    }
    let p50 = p50_ms(warm);
    assert!(p50 < 100.0, "warm p50 {p50} ms");
}

/// Concurrent first requests to /cold all wait for the one warm-up.
#[tokio::test]
async fn cold_concurrent_first_requests_all_wait() {
    let lab = lab::spawn(LabOptions {
        cold: Duration::from_millis(300),
        ..LabOptions::default()
    })
    .unwrap();
    let results = concurrent(lab.addr(), "/cold", 4).await;
    for (status, elapsed) in &results {
        assert_eq!(*status, 200);
        assert!(*elapsed >= Duration::from_millis(250), "{results:?}");
    }
    // One warm-up for all, not four in a row.
    assert!(results[3].1 < Duration::from_millis(900), "{results:?}");
}

/// After --cold-after of idle, /cold is cold again.
#[tokio::test]
async fn cold_again_after_idle() {
    let lab = lab::spawn(LabOptions {
        cold: Duration::from_millis(200),
        cold_after: Duration::from_millis(400),
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    assert_eq!(
        c.get("/cold", &[]).await.unwrap().header("x-lab-cold"),
        "cold"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let r = c.get("/cold", &[]).await.unwrap();
    assert_eq!(r.header("x-lab-cold"), "cold");
    assert!(r.elapsed >= Duration::from_millis(195), "{:?}", r.elapsed);
}

/// --workers 2: six concurrent 200 ms requests are served two at a time (three
/// waves: ≈200, 400, 600 ms).
#[tokio::test]
async fn workers_queue_excess_requests() {
    let lab = lab::spawn(LabOptions {
        workers: Some(2),
        ..LabOptions::default()
    })
    .unwrap();
    let r = concurrent(lab.addr(), "/delay/200ms", 6).await;
    assert!(r.iter().all(|(s, _)| *s == 200), "{r:?}");
    assert!(r[1].1 < Duration::from_millis(500), "first wave {r:?}");
    assert!(r[2].1 >= Duration::from_millis(390), "second wave {r:?}");
    assert!(r[5].1 >= Duration::from_millis(590), "third wave {r:?}");
}

/// --workers 2 --overload 503: of six concurrent requests, two are served and four
/// get 503 at once (counted by the lab).
#[tokio::test]
async fn workers_reject_with_503() {
    let lab = lab::spawn(LabOptions {
        workers: Some(2),
        overload: OverloadPolicy::Reject,
        ..LabOptions::default()
    })
    .unwrap();
    let r = concurrent(lab.addr(), "/delay/400ms", 6).await;
    let rejected: Vec<_> = r.iter().filter(|(s, _)| *s == 503).collect();
    let ok: Vec<_> = r.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!((ok.len(), rejected.len()), (2, 4), "{r:?}");
    assert!(
        rejected
            .iter()
            .all(|(_, d)| *d < Duration::from_millis(300)),
        "{r:?}"
    );
    assert_eq!(lab.stats().overload_rejected, 4);
}

/// --capacity 20: twenty simultaneous requests complete one every 50 ms, so the last
/// takes ≈ 950 ms while the first is immediate.
#[tokio::test]
async fn capacity_paces_requests() {
    let lab = lab::spawn(LabOptions {
        capacity: Some(20.0),
        ..LabOptions::default()
    })
    .unwrap();
    let r = concurrent(lab.addr(), "/status/200", 20).await;
    assert!(r.iter().all(|(s, _)| *s == 200), "{r:?}");
    assert!(r[0].1 < Duration::from_millis(400), "{r:?}");
    assert!(r[19].1 >= Duration::from_millis(850), "{r:?}");
    assert!(r[9].1 >= Duration::from_millis(350), "{r:?}");
}

/// --capacity 20 --overload 503: a burst beyond the small queue is turned away.
#[tokio::test]
async fn capacity_rejects_beyond_the_queue_with_503() {
    let lab = lab::spawn(LabOptions {
        capacity: Some(20.0),
        overload: OverloadPolicy::Reject,
        ..LabOptions::default()
    })
    .unwrap();
    let r = concurrent(lab.addr(), "/status/200", 20).await;
    let ok = r.iter().filter(|(s, _)| *s == 200).count();
    let rejected = r.iter().filter(|(s, _)| *s == 503).count();
    assert_eq!(ok + rejected, 20, "{r:?}");
    // The queue holds about 100 ms of work (two or three requests at 20/s).
    assert!((1..=12).contains(&ok), "{r:?}");
    assert_eq!(lab.stats().overload_rejected as usize, rejected);
}

/// --stall-every 500ms --stall-for 200ms: sequential quick requests over ~1.6 s see a
/// few held up to ≈ 200 ms, while most are fast.
#[tokio::test]
async fn stalls_hold_responses_periodically() {
    let lab = lab::spawn(LabOptions {
        stall: Some(StallOptions {
            every: Duration::from_millis(500),
            length: Duration::from_millis(200),
        }),
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < Duration::from_millis(1600) && samples.len() < 400 {
        samples.push(c.get("/status/200", &[]).await.unwrap().elapsed);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let max = samples.iter().max().copied().unwrap();
    let stalled = samples
        .iter()
        .filter(|d| **d >= Duration::from_millis(50))
        .count();
    assert!(max >= Duration::from_millis(120), "max {max:?}");
    assert!(max <= Duration::from_millis(800), "max {max:?}");
    assert!(stalled >= 2, "{stalled} stalled of {}", samples.len());
    assert!(p50_ms(samples.clone()) < 50.0, "{samples:?}");
}

/// The lab counts what it served: /__lab/stats and RunningLab::stats agree with what
/// was sent, per route family; the stats route itself is not counted.
#[tokio::test]
async fn stats_count_requests_per_route() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    for _ in 0..7 {
        c.get("/delay/0ms", &[]).await.unwrap();
    }
    for _ in 0..3 {
        c.get("/cache/public", &[]).await.unwrap();
    }
    c.get("/nowhere", &[]).await.unwrap();
    let r = c.get("/__lab/stats", &[]).await.unwrap();
    assert_eq!(r.header("content-type"), "application/json");
    let stats: lab::LabStats = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(stats.total, 11);
    assert_eq!(stats.route("delay"), 7);
    assert_eq!(stats.route("cache"), 3);
    assert_eq!(stats.route("not-found"), 1);
    assert_eq!(stats.connections, 1);
    assert_eq!(lab.stats(), stats);
}

/// The stats route is exempt from the gate: it answers at once even when every
/// worker is busy.
#[tokio::test]
async fn stats_route_bypasses_the_gate() {
    let lab = lab::spawn(LabOptions {
        workers: Some(1),
        ..LabOptions::default()
    })
    .unwrap();
    let mut busy = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let hold = tokio::spawn(async move { busy.get("/delay/1s", &[]).await });
    // Wait until the slow request is in (counted), then ask for stats.
    let t = Instant::now();
    while lab.stats().route("delay") == 0 && t.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let r = get(lab.addr(), "/__lab/stats").await;
    assert_eq!(r.status, 200);
    assert!(r.elapsed < Duration::from_millis(500), "{:?}", r.elapsed);
    hold.await.unwrap().unwrap();
}
