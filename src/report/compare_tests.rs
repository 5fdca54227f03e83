//! Unit tests of the comparison model on small hand-made runs.

use serde_json::{json, Value};

use super::*;

fn run(id: &str, kind: &str, summary: Value) -> RunRecord {
    RunRecord {
        id: id.into(),
        kind: kind.into(),
        label: None,
        target: "http://127.0.0.1:1/".into(),
        started_at_ms: 0,
        duration_s: 10.0,
        version: String::new(),
        config: Value::Null,
        env: Default::default(),
        summary,
        timeline: Value::Null,
        findings: json!([]),
        text: String::new(),
        histograms: Vec::new(),
    }
}

fn probe(ttfb: &[f64]) -> Value {
    let samples: Vec<Value> = ttfb
        .iter()
        .map(|t| json!({"series": "fresh", "phases_ms": {"ttfb": t, "dns": 0.0}}))
        .collect();
    let p = crate::stats::Percentiles::from_samples(ttfb);
    json!({"kind": "probe", "fresh": {"count": ttfb.len(),
        "phases_ms": {"ttfb": {"p50": p.p50, "p90": p.p90, "p99": p.p99}, "dns": {"p50": 0.0}}},
        "samples": samples})
}

/// Probe sections compare per phase on the samples; all-zero phases are dropped.
#[test]
fn probe_phases_tested_on_samples() {
    let a = run("a", "probe", probe(&[10.0, 11.0, 12.0, 10.5, 11.5, 12.5]));
    let b = run("b", "probe", probe(&[20.0, 21.0, 22.0, 20.5, 21.5, 22.5]));
    let c = run("c", "probe", probe(&[10.2, 11.2, 12.2, 10.7, 11.7, 12.7]));
    let cmp = compare(&[a, b, c]).unwrap();
    assert_eq!(cmp.sections.len(), 1);
    let s = &cmp.sections[0];
    assert_eq!(s.name, "probe: fresh connections");
    assert!(s.rows.iter().all(|r| !r.metric.starts_with("dns")));
    let p50 = s.rows.iter().find(|r| r.metric == "ttfb p50").unwrap();
    assert!((p50.ratios[1].unwrap() - 21.0 / 11.0).abs() < 1e-9);
    let tb = p50.tests[1].as_ref().unwrap();
    assert_eq!(tb.n, [6, 6]);
    assert_eq!(tb.significant, Some(true));
    assert_eq!(p50.tests[2].as_ref().unwrap().significant, Some(false));
    assert!(p50.tests[0].is_none());
}

/// Runs of different kinds share no section; a diagnose run's probe matches a probe.
#[test]
fn sections_match_across_kinds() {
    let a = run("a", "probe", probe(&[1.0, 2.0, 3.0, 4.0]));
    let d = run(
        "d",
        "diagnose",
        json!({"kind": "diagnose", "probe": probe(&[1.5, 2.5, 3.5, 4.5]), "skipped": "public"}),
    );
    let disk = run(
        "x",
        "disk",
        json!({"kind": "disk", "read": {"iops": 100.0, "lat_us": {"p50": 80.0}}}),
    );
    let cmp = compare(&[a, d, disk]).unwrap();
    let names: Vec<&str> = cmp.sections.iter().map(|s| s.name.as_str()).collect();
    // A disk document has both directions (a read-only run's write is all zeros).
    assert_eq!(
        names,
        ["probe: fresh connections", "disk: read", "disk: write"]
    );
    let read = &cmp.sections[1];
    assert_eq!(read.rows[0].values, vec![None, None, Some(80.0)]);
    // Each section is compared with the first run that has it.
    assert_eq!((read.baseline, read.present.clone()), (2, vec![2]));
    let probe = &cmp.sections[0];
    assert_eq!((probe.baseline, probe.present.clone()), (0, vec![0, 1]));
    let ttfb = probe.rows.iter().find(|r| r.metric == "ttfb p50").unwrap();
    assert!(ttfb.ratios[1].is_some() && ttfb.ratios[2].is_none());
    let text = super::super::compare_text::render(&cmp, all_rows());
    assert!(
        text.contains("disk: read") && text.contains("80.0 µs"),
        "{text}"
    );
}

/// Without a significant shift there is no direction to move against: same
/// samples but for one, every row reads plain "no".
#[test]
fn no_shift_no_moving_against() {
    let a: Vec<f64> = (0..10).map(|i| 10.0 + i as f64).collect();
    let mut b = a.clone();
    b[9] = 30.0;
    let (a, b) = (run("a", "probe", probe(&a)), run("b", "probe", probe(&b)));
    let cmp = compare(&[a, b]).unwrap();
    for row in &cmp.sections[0].rows {
        if let Some(t) = &row.tests[1] {
            assert!(!t.against_test, "{}: {t:?}", row.metric);
            assert_ne!(t.significant, Some(true), "{}: {t:?}", row.metric);
        }
    }
}

/// One test for all of a phase's percentiles: a row that moved against the samples'
/// shift is not "yes" (here the samples got slower, but the baseline's one cold
/// outlier makes its p99 fall).
#[test]
fn a_row_moving_against_the_test_is_not_significant() {
    let mut a: Vec<f64> = (0..9).map(|i| 10.0 + i as f64 / 2.0).collect();
    a.push(2000.0);
    let b: Vec<f64> = (0..10).map(|i| 20.0 + i as f64 / 2.0).collect();
    let (a, b) = (run("a", "probe", probe(&a)), run("b", "probe", probe(&b)));
    let cmp = compare(&[a, b]).unwrap();
    let rows = &cmp.sections[0].rows;
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    let up = row("ttfb p50").tests[1].clone().unwrap();
    assert_eq!(up.significant, Some(true), "{up:?}");
    let down = row("ttfb p99");
    assert!(down.ratios[1].unwrap() < 1.0);
    let t = down.tests[1].clone().unwrap();
    assert!(t.p_value.unwrap() < ALPHA && t.against_test, "{t:?}");
    assert_eq!(t.significant, Some(false));
    assert!(super::super::compare_text::fmt_test(&t).starts_with("no"));
    assert!(moved_with_test(Some(1.0), Some(2.0), 0.9));
    assert!(!moved_with_test(Some(2.0), Some(1.0), 0.9));
    assert!(!moved_with_test(Some(1.0), Some(1.0), 0.9));
}

/// Negative zero (an empty sum of errors is -0.0) never prints as "-0".
#[test]
fn no_negative_zero_in_output() {
    use super::super::compare_text::{fmt_ratio, fmt_value};
    assert_eq!(fmt_value(-0.0, ""), "0");
    assert_eq!(fmt_value(-0.001, ""), "0.00");
    assert!(!fmt_value(-0.0, "ms").starts_with('-'));
    assert!(!fmt_value(-0.0, "req/s").starts_with('-'));
    assert_eq!(fmt_value(-3.0, ""), "-3");
    assert!(!fmt_ratio(-0.0).contains('-'));
    let load = |errors: Value| {
        json!({"kind": "load", "duration_s": 10.0, "rps": 5.0, "errors": errors,
            "latency_ms": {"p50": 1.0}})
    };
    let cmp = compare(&[
        run("a", "load", load(json!({}))),
        run("b", "load", load(json!({}))),
    ])
    .unwrap();
    let text = super::super::compare_text::render(&cmp, all_rows());
    assert!(!text.contains(" -0"), "{text}");
    let errors = cmp.sections[0]
        .rows
        .iter()
        .find(|r| r.metric == "errors")
        .unwrap();
    assert!(errors.values.iter().all(|v| v.unwrap().is_sign_positive()));
}

fn all_rows() -> super::super::compare_text::View {
    super::super::compare_text::View {
        all: true,
        explain: true,
    }
}

/// Issue 37 item 3: the text leads with the verdict; an untested throughput that went
/// up a thousandfold and the hit ratio that explains it (0 % → 100 %) are shown, a
/// p50 that moved 0.02 ms is hidden unless `--all`, the legend only with `--explain`.
#[test]
fn verdict_first_noise_hidden_hit_ratio_shown() {
    use super::super::compare_text::{render, View};
    let load = |rps: f64, p50: f64, hit: f64| {
        json!({"kind": "load", "duration_s": 10.0, "rps": rps, "errors": {},
            "latency_ms": {"p50": p50}, "cache": {"hits": 1, "hit_ratio": hit}})
    };
    let cmp = compare(&[
        run("a", "load", load(10.9, 1.0, 0.0)),
        run("b", "load", load(12518.0, 1.02, 1.0)),
    ])
    .unwrap();
    let rows = &cmp.sections[0].rows;
    let row = |m: &str| rows.iter().find(|r| r.metric == m).unwrap();
    assert_eq!(row("cache hit ratio").notable, vec![false, true]);
    assert_eq!(row("requests/s").notable, vec![false, true]);
    assert_eq!(row("p50").notable, vec![false, false]);
    let text = render(&cmp, View::default());
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("B against A: 2 rows changed"), "{text}");
    let hit = text
        .lines()
        .find(|l| l.contains("cache hit ratio"))
        .unwrap();
    assert!(hit.contains("0 % → 100 %"), "{text}");
    assert!(text.find("requests/s").unwrap() < text.find("Runs:").unwrap());
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("p50 ")),
        "{text}"
    );
    assert!(!text.contains("Mann-Whitney"), "{text}");
    let all = render(
        &cmp,
        View {
            all: true,
            explain: false,
        },
    );
    assert!(
        all.lines().any(|l| l.trim_start().starts_with("p50 ")),
        "{all}"
    );
    assert!(!all.contains("rows hidden"), "{all}");
    let explained = render(
        &cmp,
        View {
            all: false,
            explain: true,
        },
    );
    assert!(explained.contains("Mann-Whitney"), "{explained}");
}

/// A page run's visits as its stored document holds them: `lcp` per first visit
/// (TTFB a tenth of it), one repeat visit, two requests each.
fn page(lcp: &[f64]) -> Value {
    let request = |cached: bool| {
        json!({"url": "http://127.0.0.1:1/app.js", "origin": "http://127.0.0.1:1",
            "method": "GET", "resource_type": "Script", "initiator": "parser",
            "start_ms": 5.0, "end_ms": 9.0, "phases": {"queued": 0.0},
            "protocol": "http/1.1", "status": 200, "encoded_bytes": 2048,
            "from_cache": cached, "render_blocking": "", "connection_id": 1,
            "connection_reused": false, "remote_address": ""})
    };
    let visit = |kind: &str, i: usize, lcp: f64| {
        json!({"kind": kind, "index": i + 1,
            "milestones": {"ttfb_ms": lcp / 10.0, "fcp_ms": lcp, "lcp_ms": lcp,
                "dom_content_loaded_ms": lcp, "load_ms": lcp + 5.0},
            "requests": [request(false), request(kind == "repeat")],
            "started_wall_ms": 0.0, "loaded": true})
    };
    let mut visits: Vec<Value> = lcp
        .iter()
        .enumerate()
        .map(|(i, l)| visit("first", i, *l))
        .collect();
    visits.push(visit("repeat", 0, 50.0));
    json!({"kind": "page", "visits": visits})
}

/// Two page runs: a section per kind of visit; LCP tested on the visits (four each:
/// 100 ms against 200 ms is significant), the requests the same; a repeat visit
/// alone is shown, with too few visits to test.
#[test]
fn page_runs_compare_their_milestones_per_visit() {
    let a = run("a", "page", page(&[100.0, 104.0, 98.0, 102.0]));
    let b = run("b", "page", page(&[200.0, 210.0, 190.0, 205.0]));
    let cmp = compare(&[a, b]).unwrap();
    let names: Vec<&str> = cmp.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["page: first visit", "page: repeat visit"]);
    let first = &cmp.sections[0];
    let lcp = first.rows.iter().find(|r| r.metric == "LCP").unwrap();
    assert_eq!(lcp.values, [Some(100.0), Some(200.0)]);
    let t = lcp.tests[1].as_ref().unwrap();
    assert_eq!(t.n, [4, 4]);
    assert_eq!(t.significant, Some(true));
    let requests = first.rows.iter().find(|r| r.metric == "requests").unwrap();
    assert_eq!(requests.values, [Some(2.0), Some(2.0)]);
    let kib = first
        .rows
        .iter()
        .find(|r| r.metric == "transferred")
        .unwrap();
    assert_eq!(kib.values, [Some(4.0), Some(4.0)]);
    let repeat = &cmp.sections[1];
    let cached = repeat
        .rows
        .iter()
        .find(|r| r.metric == "from the browser cache")
        .unwrap();
    assert_eq!(cached.values, [Some(1.0), Some(1.0)]);
    let lcp = repeat.rows.iter().find(|r| r.metric == "LCP").unwrap();
    assert!(
        lcp.tests[1].as_ref().is_none_or(|t| t.p_value.is_none()),
        "one visit each: no test"
    );
}
