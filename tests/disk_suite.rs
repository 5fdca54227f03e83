//! `latscope disk PATH` without workload flags — the database suite — on volumes the
//! tests build with known behaviour, each asserting the cause named and the verdict:
//! a RAM-backed loop device as it is (fit; nothing to say), capped by a cgroup v1
//! `blkio.throttle` at 500 IOPS (`disk-iops-cap`) or at 5 MiB/s
//! (`disk-bandwidth-cap`), and ext4 on a loop device over a FUSE file that adds 5 ms
//! to every I/O (`disk-added-latency`; SQLite's own commit latency on it is checked
//! against the predicted one), stalls 1.5 s every 6 s (`disk-tail` crit) or pays
//! 20 ms per cache flush (`disk-flush-cost`). Each volume runs once here; with
//! `LATSCOPE_DISK_RUNS=N` (bench/disk-repeat.sh) N times, and every run must name the
//! same warn/crit findings. tests/repeatability.rs runs the unthrottled and the
//! IOPS-capped volumes three times each under two CPU hogs.
//!
//! Time: each suite run takes 20–30 s (the bandwidth cap's is the longest), about
//! 2.5 min for the module; the runs hold the heavy-test lock (util_wire::lock), since
//! CPU-starved loop and FUSE workers are noise, not the volume.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use crate::findings::{assert_quiet, finding, num};
use crate::util_disk::{disk_json_in, sh_json_in, Capped, LoopDev};
use crate::util_require::{require_ok, BLKIO_HINT, LOOP_HINT};
use crate::util_slowfs::{SlowVolume, Slowness};

/// What the FUSE volumes need (scripts/test.sh installs it).
const FUSE_HINT: &str = "apt-get install fuse3 libfuse3-dev pkg-config gcc (scripts/test.sh does)";

/// The suite's arguments: a 64 MiB test file keeps the layout short.
const SUITE: &str = "--size 64MB";

/// The ids of the warn and crit findings.
fn loud(v: &Value) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// Suite runs per volume: `LATSCOPE_DISK_RUNS` when set (bench/disk-repeat.sh runs
/// every volume 3 times), else `default`: one (each run is 20–30 s under the
/// heavy-test lock; tests/repeatability.rs runs the unthrottled and the IOPS-capped
/// volumes three times each, under two CPU hogs).
fn runs(default: usize) -> usize {
    std::env::var("LATSCOPE_DISK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
}

/// Says one run's verdict and warn/crit ids on stderr, as a line
/// `disk-repeat <case> <run> fit=<fit> <ids>` for bench/disk-repeat.sh.
fn say(case: &str, run: usize, v: &Value) {
    eprintln!("disk-repeat {case} {run} fit={} {:?}", fit(v), loud(v));
}

/// The suite on `path` (inside `cgroup`) `n` times, each run checked by `check`; every
/// run must name the same warn/crit findings (as `first`'s, when given: a run made
/// before).
fn repeat(
    case: &str,
    cgroup: Option<&Capped>,
    path: &str,
    n: usize,
    first: Option<&Value>,
    check: impl Fn(&Value),
) {
    let mut first = first.map(loud);
    let done = usize::from(first.is_some());
    for run in done..done + n {
        let v = disk_json_in(cgroup, &format!("{path} {SUITE}"));
        check_suite_doc(&v);
        check(&v);
        say(case, run, &v);
        let ids = loud(&v);
        match &first {
            Some(f) => assert_eq!(&ids, f, "{case}, run {run}: {}", v["findings"]),
            None => first = Some(ids),
        }
    }
}

fn fit(v: &Value) -> &str {
    v["verdict"]["fit"].as_str().unwrap()
}

/// The fit of one kind of database in the verdict.
fn profile<'a>(v: &'a Value, name: &str) -> &'a str {
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
fn check_suite_doc(v: &Value) {
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

/// Unthrottled RAM-backed volume (`LATSCOPE_DISK_RUNS` runs): fit for every kind of database, and
/// not one warn or crit (no cap, no stall from a busy machine's single slow I/O, no
/// `slow-fsync` warn from a commit tail the busy machine made: at most its info).
/// The JSON starts with the verdict.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_on_an_unthrottled_volume_is_fit_every_time() {
    let _heavy = crate::util_wire::lock();
    let Some(lo) = require_ok(LoopDev::new("suite-fast", 160), LOOP_HINT) else {
        return;
    };
    let out = crate::util::latscope()
        .args([
            "disk",
            lo.mnt.path(),
            "--size",
            "64MB",
            "--json",
            "--no-save",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(
        raw.starts_with("{\n  \"verdict\": {"),
        "{}",
        &raw[..raw.len().min(200)]
    );
    let check = |v: &Value| {
        assert_eq!(fit(v), "yes", "{}", v["verdict"]);
        assert!(loud(v).is_empty(), "{:?}: {}", loud(v), v["findings"]);
        assert!(
            lo.mnt.entries().iter().all(|e| e == "lost+found"),
            "{:?}",
            lo.mnt.entries()
        );
    };
    let first = serde_json::from_str::<Value>(&raw).unwrap();
    check_suite_doc(&first);
    check(&first);
    say("unthrottled", 0, &first);
    let n = runs(1) - 1;
    repeat("unthrottled", None, lo.mnt.path(), n, Some(&first), check);
}

/// Capped at 500 IOPS (`LATSCOPE_DISK_RUNS` runs): `disk-iops-cap` names 500 every time (the same
/// IOPS at 4 and 64 KiB, latency rising with queue depth), never a bandwidth cap or
/// added latency; the verdict is "limited" and the warn/crit findings are the same
/// in every run.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_names_an_iops_cap_the_same_way_every_time() {
    let _heavy = crate::util_wire::lock();
    let Some(lo) = require_ok(LoopDev::new("suite-iops", 160), LOOP_HINT) else {
        return;
    };
    let Some(capped) = require_ok(Capped::new(lo.rdev(), 500), BLKIO_HINT) else {
        return;
    };
    repeat(
        "iops-cap",
        Some(&capped),
        lo.mnt.path(),
        runs(1),
        None,
        |v| {
            let cap = finding(v, "disk-iops-cap");
            assert_eq!(num(cap, "cap_iops"), 500.0, "{cap}");
            assert_quiet(v, "disk-bandwidth-cap", "an IOPS cap");
            assert_quiet(v, "disk-added-latency", "an IOPS cap");
            // The log runs at the cap (a write and a flush per commit): whichever of
            // the two waits for the tokens, that wait is the cap's, not a flush cost.
            assert_quiet(v, "disk-flush-cost", "an IOPS cap");
            assert_eq!(fit(v), "limited", "{}", v["verdict"]);
            assert_eq!(profile(v, "read-heavy"), "limited", "{}", v["verdict"]);
            let because = v["verdict"]["because"].to_string();
            assert!(because.contains("disk-iops-cap"), "{because}");
        },
    );
}

/// Capped at 5 MiB/s: `disk-bandwidth-cap` (5 MiB/s at 4 and 64 KiB, IOPS falling 16×),
/// not an IOPS cap; a 16 MiB WAL segment takes ~3.2 s, so the volume is unfit for
/// write-heavy and transactional databases (the verdict says so, though no I/O
/// stalled).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_names_a_bandwidth_cap() {
    let _heavy = crate::util_wire::lock();
    let Some(lo) = require_ok(LoopDev::new("suite-bw", 160), LOOP_HINT) else {
        return;
    };
    let Some(capped) = require_ok(Capped::bandwidth(lo.rdev(), 5 << 20), BLKIO_HINT) else {
        return;
    };
    repeat(
        "bandwidth-cap",
        Some(&capped),
        lo.mnt.path(),
        runs(1),
        None,
        |v| {
            let cap = finding(v, "disk-bandwidth-cap");
            assert!((num(cap, "cap_mib_s") - 5.0).abs() < 0.5, "{cap}");
            assert_quiet(v, "disk-iops-cap", "a bandwidth cap");
            assert_quiet(v, "disk-added-latency", "a bandwidth cap");
            let seg = v["commit"]["segment"]["ms"].as_f64().unwrap();
            assert!(
                (2_500.0..6_000.0).contains(&seg),
                "16 MiB at 5 MiB/s: {seg} ms"
            );
            assert_eq!(profile(v, "write-heavy"), "no", "{}", v["verdict"]);
            assert_eq!(profile(v, "transactional"), "no", "{}", v["verdict"]);
            assert_eq!(fit(v), "limited", "{}", v["verdict"]);
        },
    );
}

/// 5 ms added to every I/O: `disk-added-latency` names a ~5 ms floor that queue
/// depth and block size do not move, no cap; commits and random reads make the
/// volume "limited". A real database agrees with the predicted commit: SQLite in WAL
/// mode with synchronous=FULL commits on the same volume within 30 % of the suite's
/// commit p50 (both write through the page cache and fdatasync; O_DIRECT's write
/// alone would say half).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_names_added_latency_and_predicts_a_real_databases_commit() {
    let _heavy = crate::util_wire::lock();
    let slow = Slowness {
        delay: Duration::from_millis(5),
        ..Slowness::default()
    };
    let Some(vol) = require_ok(SlowVolume::new("delay", 192, slow), FUSE_HINT) else {
        return;
    };
    let check = |v: &Value| {
        let f = finding(v, "disk-added-latency");
        let floor = num(f, "floor_ms");
        assert!((4.5..8.0).contains(&floor), "{f}");
        assert_quiet(v, "disk-iops-cap", "added latency");
        assert_quiet(v, "disk-bandwidth-cap", "added latency");
        assert_eq!(fit(v), "limited", "{}", v["verdict"]);
        assert_eq!(profile(v, "transactional"), "limited", "{}", v["verdict"]);
    };
    let v = disk_json_in(None, &format!("{} {SUITE}", vol.path()));
    check_suite_doc(&v);
    check(&v);
    say("added-latency", 0, &v);
    repeat(
        "added-latency",
        None,
        vol.path(),
        runs(1) - 1,
        Some(&v),
        check,
    );

    let predicted = v["verdict"]["commit_p50_ms"].as_f64().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sqlite_commit.py");
    let db = sh_json_in(None, &format!("python3 {script} {} 150 200", vol.path()));
    let real = db["p50_ms"].as_f64().unwrap();
    let off = (predicted - real).abs() / real;
    assert!(
        off <= 0.30,
        "SQLite commits in {real:.2} ms, latscope predicted {predicted:.2} ms ({:.0} % off)",
        off * 100.0
    );
    // A commit is a write and a flush here: ~2 × 5 ms.
    assert!((8.0..20.0).contains(&predicted), "{predicted}");
}

/// 1.5 s stalls every 6 s: `disk-tail` crit on counts (seconds that held an I/O over
/// 1 s, across the suite), and the volume is unfit for any database.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_finds_rare_stalls() {
    let _heavy = crate::util_wire::lock();
    let slow = Slowness {
        stall_every: Duration::from_secs(6),
        stall_for: Duration::from_millis(1500),
        ..Slowness::default()
    };
    let Some(vol) = require_ok(SlowVolume::new("stalls", 192, slow), FUSE_HINT) else {
        return;
    };
    repeat("rare-stalls", None, vol.path(), runs(1), None, |v| {
        let tail = finding(v, "disk-tail");
        assert_eq!(tail["severity"], "crit", "{tail}");
        assert!(num(tail, "max_ms") >= 1000.0, "{tail}");
        assert!(num(tail, "stalls_1s_per_min_lower") > 0.0, "{tail}");
        assert_eq!(fit(v), "no", "{}", v["verdict"]);
        assert!(v["verdict"]["because"].to_string().contains("disk-tail"));
    });
}

/// 20 ms more per cache flush: `disk-flush-cost` (fdatasync after an O_DIRECT write
/// ≫ the write), and commits over etcd's 10 ms keep the volume from "yes".
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn suite_names_a_costly_flush() {
    let _heavy = crate::util_wire::lock();
    let slow = Slowness {
        fsync_extra: Duration::from_millis(20),
        ..Slowness::default()
    };
    let Some(vol) = require_ok(SlowVolume::new("flush", 192, slow), FUSE_HINT) else {
        return;
    };
    repeat("costly-flush", None, vol.path(), runs(1), None, |v| {
        let f = finding(v, "disk-flush-cost");
        assert!(num(f, "flush_p50_ms") >= 15.0, "{f}");
        assert!(num(f, "write_p50_ms") < 5.0, "{f}");
        assert_quiet(v, "disk-added-latency", "a costly flush");
        // The commits' slow median is the flush's, named above: no tail warning.
        assert!(!loud(v).contains("disk-tail"), "{}", v["findings"]);
        // Slow at the median too: a warn however busy the machine was.
        let slow = finding(v, "slow-fsync");
        assert_eq!(slow["severity"], "warn", "{slow}");
        assert_ne!(profile(v, "transactional"), "yes", "{}", v["verdict"]);
    });
}
