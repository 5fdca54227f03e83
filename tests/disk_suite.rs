//! `latscope disk PATH` without workload flags — the database suite — on volumes the
//! tests build with known behaviour, each asserting the cause named and the verdict:
//! a RAM-backed loop device capped by a cgroup v1 `blkio.throttle` at 5 MiB/s
//! (`disk-bandwidth-cap`), and ext4 on a loop device over a FUSE file that adds 5 ms
//! to every I/O (`disk-added-latency`; SQLite's own commit latency on it is checked
//! against the predicted one), stalls 1.5 s every 6 s (`disk-tail` crit) or pays
//! 20 ms per cache flush (`disk-flush-cost`). The loop device as it is (fit; nothing to
//! say) and capped at 500 IOPS (`disk-iops-cap`) are tests/repeatability.rs' disk
//! cases, three runs each under two CPU hogs, checked the same way
//! (tests/util_suite.rs). Each volume runs once here; with `LATSCOPE_DISK_RUNS=N`
//! (bench/disk-repeat.sh) N times, and every run must name the same warn/crit findings.
//!
//! Time: each suite run takes 20–30 s (the bandwidth cap's is the longest), about
//! 2 min for the module; the runs hold the heavy-test lock (util_wire::lock), since
//! CPU-starved loop and FUSE workers are noise, not the volume.

use std::time::Duration;

use serde_json::Value;

use crate::findings::{assert_quiet, num};
use crate::util_disk::{disk_json_in, sh_json_in, Capped, LoopDev};
use crate::util_require::{require_ok, BLKIO_HINT, LOOP_HINT};
use crate::util_slowfs::{SlowVolume, Slowness};
use crate::util_suite::{check_suite_doc, finding, fit, loud, profile, say, SUITE};

/// What the FUSE volumes need (scripts/test.sh installs it).
const FUSE_HINT: &str = "apt-get install fuse3 libfuse3-dev pkg-config gcc (scripts/test.sh does)";

/// Suite runs per volume: `LATSCOPE_DISK_RUNS` when set (bench/disk-repeat.sh runs
/// every volume 3 times), else `default`: one (each run is 20–30 s under the
/// heavy-test lock).
fn runs(default: usize) -> usize {
    std::env::var("LATSCOPE_DISK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
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
