//! The database suite's JSON (`latscope disk PATH` without workload flags), checked
//! the same way by tests/disk_suite.rs and by the disk cases of tests/repeatability.rs:
//! its workloads in order, the commit test, a verdict with a reason per kind of
//! database, and percentiles only where the I/Os support them.

use std::collections::BTreeSet;

use serde_json::Value;

/// The suite's arguments: a 64 MiB test file keeps the layout short.
pub const SUITE: &str = "--size 64MB";

/// The ids of the warn and crit findings.
pub fn loud(v: &Value) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

pub fn fit(v: &Value) -> &str {
    v["verdict"]["fit"].as_str().unwrap()
}

/// The fit of one kind of database in the verdict.
pub fn profile<'a>(v: &'a Value, name: &str) -> &'a str {
    v["verdict"]["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["profile"] == name)
        .unwrap_or_else(|| panic!("no {name} profile in {}", v["verdict"]))["fit"]
        .as_str()
        .unwrap()
}

/// Checks the suite's JSON: its workloads in order, the commit test, a verdict with
/// a reason per kind of database, and percentiles only where the I/Os support them.
pub fn check_suite_doc(v: &Value) {
    assert_eq!(v["kind"], "disk");
    assert_eq!(v["mode"], "suite");
    let names: Vec<&str> = v["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read-4k-qd1",
            "read-4k-qd32",
            "read-64k-qd32",
            "write-1m-qd8",
            "wal-direct"
        ]
    );
    for w in v["workloads"].as_array().unwrap() {
        let dir = if w["pattern"] == "write" {
            "write"
        } else {
            "read"
        };
        let ios = w[dir]["ios"].as_u64().unwrap();
        assert!(ios > 0, "{w}");
        let lat = &w[dir]["lat_us"];
        assert_eq!(lat["p9999"].is_null(), ios < 10_000, "{w}");
        assert_eq!(lat["p999"].is_null(), ios < 1_000, "{w}");
    }
    let c = &v["commit"];
    assert!(c["commits"].as_u64().unwrap() > 0, "{c}");
    assert!(c["append"]["commits"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(c["segment"]["bytes"], 16 * 1024 * 1024);
    // PSI's share, where the kernel has it (this machine's does).
    let busy = c["cpu_pressure_pct"].as_f64();
    assert!(busy.is_some_and(|b| (0.0..=100.0).contains(&b)), "{c}");
    assert!(c["segment"]["ms"].as_f64().unwrap() > 0.0, "{c}");
    assert!(
        ["yes", "limited", "no"].contains(&fit(v)),
        "{}",
        v["verdict"]
    );
    assert!(!v["verdict"]["for"].as_str().unwrap().is_empty());
    assert!(v["verdict"]["because"].as_array().unwrap().len() >= 3);
    for p in ["transactional", "read-heavy", "write-heavy"] {
        profile(v, p);
    }
    assert!(v["verdict"]["commit_p50_ms"].as_f64().unwrap() > 0.0);
}

/// The finding `id` of the suite's document (panics, naming what was found and what
/// the workloads measured, without one).
pub fn finding<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| {
            panic!(
                "no {id} finding in {}\nworkloads: {}",
                v["findings"],
                measured(v)
            )
        })
}

/// Each workload's IOPS and read or write latency (p50, mean, p99 in µs), one line
/// each: what the cause rules judged.
fn measured(v: &Value) -> String {
    let Some(ws) = v["workloads"].as_array() else {
        return "none".into();
    };
    ws.iter()
        .map(|w| {
            let dir = if w["read"]["ios"].as_u64() > Some(0) {
                &w["read"]
            } else {
                &w["write"]
            };
            let l = &dir["lat_us"];
            format!(
                "\n  {} {} IOPS {} MiB/s p50 {} mean {} p99 {} µs",
                w["name"], dir["iops"], dir["bw_mib_s"], l["p50"], l["mean"], l["p99"]
            )
        })
        .collect()
}

/// Says one run's verdict and warn/crit ids on stderr, as a line
/// `disk-repeat <case> <run> fit=<fit> <ids>` for bench/disk-repeat.sh.
pub fn say(case: &str, run: usize, v: &Value) {
    eprintln!("disk-repeat {case} {run} fit={} {:?}", fit(v), loud(v));
}
