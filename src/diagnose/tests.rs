//! Tests of the whole engine: healthy facts give no findings, a demo-like set of
//! problems gives each expected finding most severe first, and `client-bound` silences
//! the load rules.

use super::rules::testutil::{far_probe, healthy_probe, set};
use super::*;

fn healthy_cache() -> CacheFacts {
    CacheFacts {
        get: true,
        anonymous: true,
        status: 200,
        headers: Headers::from_pairs(&[
            ("cache-control", "public, max-age=60, s-maxage=300"),
            ("etag", "\"a\""),
        ]),
        if_none_match: Some(ConditionalFacts {
            status: 304,
            body_bytes: 0,
            time_ms: 0.3,
            excess_body: false,
        }),
        ..CacheFacts::default()
    }
}

fn healthy_load() -> LoadFacts {
    LoadFacts {
        steps: (0..5)
            .map(|i| LoadStep {
                concurrency: 1 << i,
                rps: 5000.0 * (i + 1) as f64,
                p50_ms: 0.2,
                p99_ms: 0.3 + i as f64 * 0.4,
                requests: 10_000,
                errors: 0,
                p99_interval: None,
                p50_interval: None,
            })
            .collect(),
        timeline: (0..15)
            .map(|t| Second {
                t,
                requests: 9000,
                p50_ms: 0.2,
                p99_ms: if t % 5 == 0 { 4.0 } else { 0.4 },
                retrans: u64::from(t == 3),
                ..Second::default()
            })
            .collect(),
        p50_ms: 0.3,
        p99_ms: 3.0,
        p999_ms: 9.0,
        requests: 135_000,
        errors: 2,
        connect_ms: vec![(0.1, 64)],
        client_cpu_pct: Some(70.0),
        threads: 2,
        ..LoadFacts::default()
    }
}

/// Everything fast and correct on loopback (noisy ratios included): no findings.
#[test]
fn healthy_gives_nothing() {
    let facts = Facts {
        probe: Some(healthy_probe()),
        cache: Some(healthy_cache()),
        load: Some(healthy_load()),
        disk: Some(DiskFacts {
            read: Some(crate::diagnose::facts::DiskDirFacts {
                ios: 10_000,
                p50_ms: 0.2,
                p9999_ms: 3.8,
                ..Default::default()
            }),
            fsync_p99_ms: Some(1.0),
            fsync_count: 100,
            ..DiskFacts::default()
        }),
        distance_km: Some(1.0),
        ..Facts::default()
    };
    let found = run_rules(&facts);
    assert!(found.is_empty(), "{found:#?}");
}

/// The demo's problems (RTT, cold start, cookies, no validators, saturation, stalls)
/// each produce their finding, sorted most severe first, with a summary.
#[test]
fn demo_problems_all_found() {
    let mut probe = far_probe();
    probe.first_total_ms = Some(2300.0);
    let mut cache = healthy_cache();
    cache.headers = Headers::from_pairs(&[
        ("cache-control", "no-cache"),
        ("set-cookie", "lab_session=1"),
    ]);
    let mut load = healthy_load();
    for (i, s) in load.steps.iter_mut().enumerate() {
        s.rps = 300.0_f64.min(100.0 * (1 << i) as f64);
        s.p99_ms = 30.0 * (1 << i) as f64;
    }
    for s in load.timeline.iter_mut() {
        s.p99_ms = if s.t % 5 == 2 { 900.0 } else { 12.0 };
    }
    load.p50_ms = 12.0;
    load.p99_ms = 900.0;
    let facts = Facts {
        probe: Some(probe),
        cache: Some(cache),
        load: Some(load),
        ..Facts::default()
    };
    let found = run_rules(&facts);
    let ids: Vec<&str> = found.iter().map(|f| f.id.as_str()).collect();
    for want in [
        "cold-start",
        "handshake-dominates",
        "network-dominates",
        "not-shared-cacheable",
        "no-validators",
        "knee",
        "periodic-spikes",
        "tail-heavy",
    ] {
        assert!(ids.contains(&want), "{want} missing from {ids:?}");
    }
    assert!(
        found.windows(2).all(|w| w[0].severity >= w[1].severity),
        "{ids:?}"
    );
    assert_eq!(found.last().unwrap().severity, Severity::Info);
    let s = summary(&facts).unwrap();
    assert!(s.starts_with("TTFB 230 ms"), "{s}");
}

/// When latscope used its CPU up, only `client-bound` speaks for the load run.
#[test]
fn client_bound_silences_load_rules() {
    let mut load = healthy_load();
    load.errors = 5000;
    load.steps.clear();
    load.client_cpu_pct = Some(195.0);
    let facts = Facts {
        load: Some(load.clone()),
        ..Facts::default()
    };
    let ids: Vec<String> = run_rules(&facts).into_iter().map(|f| f.id).collect();
    assert_eq!(ids, ["client-bound"]);
    load.client_cpu_pct = Some(50.0);
    let ids: Vec<String> = run_rules(&Facts {
        load: Some(load),
        ..Facts::default()
    })
    .into_iter()
    .map(|f| f.id)
    .collect();
    assert_eq!(ids, ["errors-under-load"]);
}

/// Behind a CDN (its headers on the probe) the server share is named for the edge.
#[test]
fn proxy_names_the_server_bucket() {
    let mut probe = far_probe();
    probe.headers = Headers::from_pairs(&[("via", "1.1 varnish"), ("x-varnish", "12")]);
    let r = probe.reused.as_mut().unwrap();
    set(r, "wait", 600.0);
    set(r, "ttfb", 600.0);
    let label = |probe: &ProbeFacts| {
        let facts = Facts {
            probe: Some(probe.clone()),
            ..Facts::default()
        };
        let f = run_rules(&facts)
            .into_iter()
            .find(|f| f.id == "server-dominates")
            .unwrap();
        f.evidence_str("server_label").unwrap().to_string()
    };
    assert_eq!(label(&probe), "edge → origin + server");
    // Two X-Varnish ids: a hit, answered by the edge alone.
    probe.headers = Headers::from_pairs(&[("via", "1.1 varnish"), ("x-varnish", "12 34")]);
    assert_eq!(label(&probe), "edge (cache hit)");
}

/// docs/findings.md documents every id the rules emit, and every id it documents
/// exists; the demo and healthy facts only emit known ids.
#[test]
fn every_id_is_documented() {
    let doc = include_str!("../../docs/findings.md");
    for id in rules::IDS {
        assert!(
            doc.contains(&format!("### `{id}`")),
            "{id} is not in docs/findings.md"
        );
    }
    let documented = doc.lines().filter(|l| l.starts_with("### `")).count();
    assert_eq!(documented, rules::IDS.len());
    let ids = "cold-start handshake-dominates network-dominates";
    for id in ids.split(' ') {
        assert!(rules::IDS.contains(&id));
    }
}
