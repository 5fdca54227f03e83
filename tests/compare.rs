//! `latscope compare` through the binary, on stores filled with realistic runs: load
//! runs with real per-second HdrHistograms and timelines as DESIGN.md describes them,
//! disk runs, and probes with their samples. The runs are built here (known
//! distributions, seeded), so the significance verdicts are known in advance.

use std::path::{Path, PathBuf};

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use latscope::store::{Environment, RunRecord, Store, StoredHistogram};
use serde_json::{json, Value};

use crate::util::latscope;

/// A fresh directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    crate::util::temp_dir(&format!("cmp-{name}"))
}

/// A small seeded generator (xorshift64*) with uniform and normal draws.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform().max(1e-12), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

fn hist() -> Histogram<u64> {
    latscope::stats::new_histogram()
}

fn v2(h: &Histogram<u64>) -> Vec<u8> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).unwrap();
    buf
}

fn pct(h: &Histogram<u64>, unit: latscope::stats::Unit) -> Value {
    serde_json::to_value(latscope::stats::Percentiles::from_histogram(h, unit)).unwrap()
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1e6
}

/// How a load run's latencies are drawn: a log-normal body around `median_ms`, and
/// a tail of `tail_share` of the requests uniformly in `tail_ms`.
#[derive(Clone, Copy)]
pub struct LoadShape {
    pub median_ms: f64,
    pub tail_share: f64,
    pub tail_ms: (f64, f64),
    pub rps: u32,
    pub seconds: u32,
    pub errors_per_s: u32,
}

pub const HEALTHY: LoadShape = LoadShape {
    median_ms: 10.0,
    tail_share: 0.05,
    tail_ms: (40.0, 70.0),
    rps: 200,
    seconds: 10,
    errors_per_s: 1,
};

/// Common fields of a stored run.
pub fn record(id: &str, label: &str, kind: &str, target: &str, summary: Value) -> RunRecord {
    RunRecord {
        id: id.into(),
        kind: kind.into(),
        label: Some(label.into()),
        target: target.into(),
        started_at_ms: 1_795_000_000_000,
        duration_s: 10.0,
        version: "0.1.0".into(),
        config: json!({}),
        env: Environment {
            hostname: "testhost".into(),
            cores: 2,
            ..Default::default()
        },
        summary,
        timeline: Value::Null,
        findings: json!([]),
        text: String::new(),
        histograms: Vec::new(),
    }
}

/// A load run shaped as `latscope load` stores it: summary (DESIGN.md's load JSON),
/// timeline, whole-run, per-endpoint and per-second `latency` histograms.
pub fn load_run(id: &str, label: &str, shape: LoadShape, seed: u64) -> RunRecord {
    let mut rng = Rng::new(seed);
    let endpoints = ["places", "search"];
    let mut total = hist();
    let mut per_ep = [hist(), hist()];
    let mut histograms = Vec::new();
    let mut timeline = Vec::new();
    for t in 0..shape.seconds {
        let mut sec = hist();
        let mut sec_ep = [hist(), hist()];
        for i in 0..shape.rps {
            let v = if rng.uniform() < shape.tail_share {
                shape.tail_ms.0 + rng.uniform() * (shape.tail_ms.1 - shape.tail_ms.0)
            } else {
                shape.median_ms * (0.3 * rng.normal()).exp()
            };
            let ns = (v * 1e6) as u64;
            sec.saturating_record(ns);
            per_ep[(i % 2) as usize].saturating_record(ns);
            sec_ep[(i % 2) as usize].saturating_record(ns);
        }
        // Per endpoint per second, as `latscope load` stores with two endpoints.
        for (name, h) in endpoints.iter().zip(&sec_ep) {
            histograms.push(StoredHistogram {
                name: format!("latency:{name}"),
                second: Some(t),
                v2: v2(h),
            });
        }
        total.add(&sec).unwrap();
        timeline.push(
            json!({"t": t, "requests": shape.rps, "ok": shape.rps - shape.errors_per_s,
            "errors": {"http_5xx": shape.errors_per_s}, "bytes": shape.rps * 512,
            "p50_ms": ms(&sec, 0.5), "p90_ms": ms(&sec, 0.9), "p99_ms": ms(&sec, 0.99),
            "max_ms": sec.max() as f64 / 1e6, "active": 16, "cache_hits": 0, "retrans": 0}),
        );
        histograms.push(StoredHistogram {
            name: "latency".into(),
            second: Some(t),
            v2: v2(&sec),
        });
    }
    histograms.push(StoredHistogram {
        name: "latency".into(),
        second: None,
        v2: v2(&total),
    });
    let mut eps = Vec::new();
    for (name, h) in endpoints.iter().zip(&per_ep) {
        histograms.push(StoredHistogram {
            name: format!("latency:{name}"),
            second: None,
            v2: v2(h),
        });
        eps.push(json!({"name": name, "requests": h.len(), "ok": h.len(),
            "latency_ms": pct(h, latscope::stats::Unit::Millis)}));
    }
    let requests = u64::from(shape.rps * shape.seconds);
    let errors = u64::from(shape.errors_per_s * shape.seconds);
    let summary = json!({"kind": "load", "target": "http://127.0.0.1:8080/places",
        "model": "closed", "requests": requests, "ok": requests - errors, "dropped": 0,
        "errors": {"http_5xx": errors}, "duration_s": f64::from(shape.seconds),
        "rps": requests as f64 / f64::from(shape.seconds), "bytes": requests * 512,
        "latency_ms": pct(&total, latscope::stats::Unit::Millis),
        "connect_ms": {"p50": 0.1}, "incomplete": 0, "client_cpu_pct": 12.0,
        "endpoints": eps, "timeline": timeline.clone(), "thresholds": [], "findings": []});
    let mut r = record(id, label, "load", "http://127.0.0.1:8080/places", summary);
    r.duration_s = f64::from(shape.seconds);
    r.timeline = Value::Array(timeline);
    r.histograms = histograms;
    r
}

/// A disk run: random reads around `median_us` at `iops` for 10 s, per-second
/// `read` histograms.
pub fn disk_run(id: &str, label: &str, median_us: f64, iops: u32, seed: u64) -> RunRecord {
    let mut rng = Rng::new(seed);
    let mut total = hist();
    let mut histograms = Vec::new();
    for t in 0..10 {
        let mut sec = hist();
        let n = (f64::from(iops) * (1.0 + 0.05 * rng.normal())) as u32;
        for _ in 0..n {
            sec.saturating_record((median_us * 1e3 * (0.4 * rng.normal()).exp()) as u64);
        }
        total.add(&sec).unwrap();
        histograms.push(StoredHistogram {
            name: "read".into(),
            second: Some(t),
            v2: v2(&sec),
        });
    }
    histograms.push(StoredHistogram {
        name: "read".into(),
        second: None,
        v2: v2(&total),
    });
    let summary = json!({"kind": "disk", "path": "/var/lib/db", "pattern": "randread",
        "bs": 4096, "iodepth": 1, "direct": true, "fsync": false, "engine": "threads",
        "read": {"ios": total.len(), "iops": total.len() as f64 / 10.0,
                 "bw_mib_s": total.len() as f64 * 4096.0 / 10.0 / 1048576.0,
                 "lat_us": pct(&total, latscope::stats::Unit::Micros)},
        "timeline": [], "findings": []});
    let mut r = record(id, label, "disk", "/var/lib/db", summary);
    r.histograms = histograms;
    r
}

/// Saves runs in a new store at `dir/runs.db`; returns its path.
pub fn store_with(dir: &Path, runs: &[RunRecord]) -> String {
    let db = dir.join("runs.db");
    let mut store = Store::open(&db).unwrap();
    for r in runs {
        store.save(r).unwrap();
    }
    db.to_str().unwrap().to_string()
}

fn compare_json(db: &str, runs: &[&str]) -> Value {
    let out = latscope()
        .arg("compare")
        .args(runs)
        .args(["--json", "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn row<'a>(cmp: &'a Value, section: &str, metric: &str) -> &'a Value {
    let s = cmp["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == section)
        .unwrap_or_else(|| panic!("no section {section} in {cmp:#}"));
    s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {s:#}"))
}

/// Two load runs whose p99s are clearly apart (a tail at 40-70 ms against one at
/// 150-200 ms) are called different on the p99 (exceedances), while their p50s
/// (same body) are not; two runs drawn from the same distribution are not called
/// different anywhere.
#[test]
fn load_significance_fires_only_on_separated_runs() {
    let dir = temp_dir("load");
    let slow_tail = LoadShape {
        tail_ms: (150.0, 200.0),
        ..HEALTHY
    };
    let db = store_with(
        &dir,
        &[
            load_run("aaaa000001", "before", HEALTHY, 1),
            load_run("aaaa000002", "after", slow_tail, 2),
            load_run("aaaa000003", "again", HEALTHY, 3),
        ],
    );
    let cmp = compare_json(&db, &["before", "after", "again"]);
    assert_eq!(cmp["runs"][1]["label"], "after");
    assert!(cmp["test"].as_str().unwrap().contains("Mann-Whitney U"));
    let p99 = row(&cmp, "load: all endpoints", "p99");
    let t = &p99["tests"][1];
    // A tail row: tested on the requests over the midpoint of both p99s, second by
    // second.
    assert_eq!(
        t["basis"], "requests over the midpoint of both runs' p99",
        "{p99:#}"
    );
    assert_eq!(t["n"], json!([10, 10]));
    assert_eq!(t["significant"], true, "{p99:#}");
    assert!(t["p_value"].as_f64().unwrap() < 0.001);
    let over = &t["over"];
    assert!(
        over[1].as_u64().unwrap() > 3 * over[0].as_u64().unwrap(),
        "{t:#}"
    );
    assert_eq!(t["of"], json!([2000, 2000]));
    let ratio = p99["ratios"][1].as_f64().unwrap();
    assert!(ratio > 2.0 && ratio < 4.0, "{p99:#}");
    // Same distribution, other seed: no difference.
    assert_eq!(p99["tests"][2]["significant"], false, "{p99:#}");
    let p50 = row(&cmp, "load: all endpoints", "p50");
    assert_eq!(p50["tests"][1]["significant"], false, "{p50:#}");
    assert_eq!(p50["tests"][2]["significant"], false, "{p50:#}");
    // Throughput and errors are identical per second: not different.
    let rps = row(&cmp, "load: all endpoints", "requests/s");
    assert_eq!(rps["values"], json!([200.0, 200.0, 200.0]));
    assert_eq!(rps["tests"][1]["significant"], false);
    assert_eq!(
        row(&cmp, "load: all endpoints", "errors")["values"][0],
        10.0
    );
    // Per endpoint: tested on the endpoint's own per-second histograms.
    let ep = row(&cmp, "load endpoint: search", "p99");
    assert!(ep["ratios"][1].as_f64().unwrap() > 2.0, "{ep:#}");
    assert_eq!(ep["tests"][1]["significant"], true, "{ep:#}");
    assert_eq!(ep["tests"][1]["of"], json!([1000, 1000]), "{ep:#}");
    assert_eq!(ep["tests"][2]["significant"], false, "{ep:#}");
    let ep50 = row(&cmp, "load endpoint: search", "p50");
    assert_eq!(ep50["tests"][1]["basis"], "per-second p50", "{ep50:#}");
    assert_eq!(ep50["tests"][1]["significant"], false, "{ep50:#}");
    assert_eq!(
        row(&cmp, "load endpoint: search", "errors")["values"][1],
        0.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The terminal table names the runs, the ratio, the verdict and the test (the test
/// with `--explain`, the unchanged p50 with `--all`); by default the verdict leads
/// and names the p99 that changed.
#[test]
fn compare_text_names_test_and_verdicts() {
    let dir = temp_dir("text");
    let slow = LoadShape {
        tail_ms: (150.0, 200.0),
        ..HEALTHY
    };
    let db = store_with(
        &dir,
        &[
            load_run("bbbb000001", "nginx", HEALTHY, 11),
            load_run("bbbb000002", "apache", slow, 12),
        ],
    );
    let text = |extra: &[&str]| {
        let out = latscope()
            .args(["compare", "nginx", "apache", "--db", &db])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let default = text(&[]);
    assert!(
        default.starts_with("B (apache) against A (nginx): "),
        "{default}"
    );
    let headline = default.split("\nRuns:").next().unwrap();
    assert!(
        headline.contains("load: all endpoints: p99") && headline.contains("worse"),
        "{default}"
    );
    assert!(!default.contains("Mann-Whitney"), "{default}");
    let text = text(&["--all", "--explain"]);
    assert!(text.contains("load: all endpoints"), "{text}");
    assert!(text.contains("Mann-Whitney U"), "{text}");
    assert!(text.contains("per-second blocks"), "{text}");
    let p99 = text
        .lines()
        .find(|l| l.trim_start().starts_with("p99 "))
        .unwrap();
    assert!(p99.contains("yes p<0.001") && p99.contains('×'), "{p99}");
    let p50 = text
        .lines()
        .find(|l| l.trim_start().starts_with("p50 "))
        .unwrap();
    assert!(
        p50.contains("no p=") || p50.contains("no, too small"),
        "{p50}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Story 3: a network volume with 6× fewer IOPS and higher latency than a local
/// disk differs significantly in IOPS and latency; two local runs do not.
#[test]
fn disk_runs_compare_per_direction() {
    let dir = temp_dir("disk");
    let db = store_with(
        &dir,
        &[
            disk_run("cccc000001", "local", 90.0, 6000, 21),
            disk_run("cccc000002", "network", 600.0, 1000, 22),
            disk_run("cccc000003", "local2", 90.0, 6000, 23),
        ],
    );
    let cmp = compare_json(&db, &["local", "network", "local2"]);
    let iops = row(&cmp, "disk: read", "IOPS");
    assert_eq!(iops["tests"][1]["significant"], true, "{iops:#}");
    assert_eq!(iops["tests"][1]["basis"], "per-second I/Os");
    assert!(iops["ratios"][1].as_f64().unwrap() < 0.25);
    let p99 = row(&cmp, "disk: read", "p99");
    assert_eq!(p99["unit"], "µs");
    assert_eq!(p99["tests"][1]["significant"], true);
    assert_eq!(p99["tests"][2]["significant"], false, "{p99:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input: one run, an unknown run, the same run twice are usage errors (exit 2).
#[test]
fn compare_usage_errors() {
    let dir = temp_dir("usage");
    let db = store_with(&dir, &[load_run("dddd000001", "one", HEALTHY, 5)]);
    for args in [
        vec!["compare", "one"],
        vec!["compare", "one", "nosuchrun"],
        vec!["compare", "one", "dddd"],
    ] {
        let out = latscope().args(&args).args(["--db", &db]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
