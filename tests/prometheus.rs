//! latscope and Prometheus: `load --out prometheus=URL` streams the per-second series
//! into a real Prometheus (Debian's, remote-write receiver on, started by the test)
//! and the values read back through its HTTP API are the run's own; a Prometheus that
//! is down or stalls never slows the run; `export --format openmetrics` is accepted
//! by promtool's backfill and holds the same numbers.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util;
use crate::util_lab::healthy;
use crate::util_prometheus::{installed, temp_dir, Prometheus};

/// `latscope export RUN --format openmetrics` of a real load run is accepted by
/// `promtool tsdb create-blocks-from openmetrics` (which reports the block it wrote),
/// and the block holds the run's numbers: the last `latscope_requests_total` equals
/// the run's request count and the p99 gauges are the timeline's p99_ms, second by
/// second (`promtool tsdb dump`).
#[test]
fn export_openmetrics_backfills_with_promtool() {
    if !installed("promtool") {
        eprintln!("skipping: promtool is not installed (apt-get install prometheus)");
        return;
    }
    let lab = healthy();
    let dir = temp_dir("export");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let doc = util::run_json(&[
        "load", &lab.url("/"), "-d", "3s", "-c", "4", "--threads", "2", "--db", db,
        "--label", "om-test", "--json",
    ]);
    let file = dir.join("run.om");
    let out = util::run(&[
        "export", "om-test", "--format", "openmetrics", "--db", db, "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let blocks = dir.join("blocks");
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&file)
        .arg(&blocks)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "promtool refused the file: {said}\n{text}");
    assert!(said.contains("BLOCK ULID") && said.contains("NUM SAMPLES"), "{said}");
    // `tsdb dump` wants a wal directory beside the blocks.
    std::fs::create_dir_all(blocks.join("wal")).unwrap();
    let dump = |matcher: &str| -> Vec<(f64, i64)> {
        let out = Command::new("promtool")
            .args(["tsdb", "dump", &format!("--match={matcher}")])
            .arg(&blocks)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut v: Vec<(f64, i64)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut w = l.rsplit(' ');
                let ts = w.next()?.parse().ok()?;
                let value = w.next()?.parse().ok()?;
                Some((value, ts))
            })
            .collect();
        v.sort_by_key(|p| p.1);
        v
    };
    let requests = dump("latscope_requests_total");
    assert_eq!(requests.last().unwrap().0, doc["requests"].as_f64().unwrap());
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(requests.len(), timeline.len());
    for w in requests.windows(2) {
        assert_eq!(w[1].1 - w[0].1, 1000, "one sample a second");
    }
    let p99 = dump(r#"latscope_latency_seconds{quantile="0.99",endpoint="all"}"#);
    let want: Vec<f64> = timeline
        .iter()
        .filter(|s| s["requests"].as_u64() > Some(0))
        .map(|s| s["p99_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(p99.len(), want.len());
    for ((got, _), want) in p99.iter().zip(&want) {
        assert!((got * 1e3 - want).abs() < 1e-6, "p99 {got} s vs {want} ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
