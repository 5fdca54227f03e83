//! The verdict on the suite's numbers from real runs (the volumes of
//! tests/disk_suite.rs), and on one workload.

use super::*;
use crate::diagnose::facts::{CommitFacts, WorkloadFacts};
use crate::diagnose::finding::Category;

fn w(name: &str, iops: f64, mib_s: f64, p50: f64, p99: f64) -> WorkloadFacts {
    WorkloadFacts {
        name: name.into(),
        iops,
        mib_s,
        dir: DiskDirFacts {
            ios: 3000,
            p50_ms: p50,
            p99_ms: p99,
            ..DiskDirFacts::default()
        },
        ..WorkloadFacts::default()
    }
}

/// The suite's facts from commit p50/p99 and segment ms, read p50 at depth 1, p99
/// and IOPS at 32, and write MiB/s.
fn facts(commit: (f64, f64, f64), r1: f64, r32: (f64, f64), write: f64) -> DiskFacts {
    DiskFacts {
        workloads: vec![
            w("read-4k-qd1", 1.0 / r1, 0.0, r1, r1 * 2.0),
            w("read-4k-qd32", r32.1, 0.0, r32.0 / 2.0, r32.0),
            w("write-1m-qd8", write, write, 1.0, 2.0),
        ],
        commit: Some(CommitFacts {
            commits: 1000,
            p50_ms: commit.0,
            mean_ms: commit.0 * 1.1,
            p99_ms: commit.1,
            segment_ms: commit.2,
            ..CommitFacts::default()
        }),
        ..DiskFacts::default()
    }
}

fn finding(id: &str, severity: Severity) -> Finding {
    Finding::new(id, Category::Disk, severity, "t".into())
}

/// A RAM-backed volume: fit for every kind of database.
#[test]
fn fast_volume_is_fit() {
    let d = facts((0.03, 0.08, 82.0), 0.013, (3.45, 113_168.0), 5384.0);
    let v = verdict(&d, &[]);
    assert_eq!(v.fit, Fit::Yes);
    assert_eq!(
        v.for_,
        "transactional, read-heavy and write-heavy databases"
    );
    assert_eq!(v.because.len(), 3);
    assert!(
        v.because[0].starts_with("transactional yes: a commit"),
        "{:?}",
        v.because
    );
    assert!(v.commits_per_s.unwrap() > 10_000.0);
}

/// 5 ms per I/O: commits of 10.6 ms and reads of 5.2 ms are "limited"; bulk writes
/// are fine. 5 MiB/s: a 3.2 s segment makes it unfit for transactional and bulk
/// writes. Stalls (crit `disk-tail`) make it unfit for anything.
#[test]
fn limited_and_unfit_volumes() {
    let d = facts((10.6, 21.6, 477.0), 5.24, (12.7, 5487.0), 1284.0);
    let found = [finding("disk-added-latency", Severity::Warn)];
    let v = verdict(&d, &found);
    assert_eq!(v.fit, Fit::Limited);
    assert_eq!(
        v.for_,
        "write-heavy databases; transactional and read-heavy databases at low rates only"
    );
    assert!(v
        .because
        .contains(&"cause: latency added to every I/O (disk-added-latency)".to_string()));

    let d = facts((0.05, 16.0, 3230.0), 0.013, (108.0, 1280.0), 5.0);
    let v = verdict(&d, &[finding("disk-bandwidth-cap", Severity::Warn)]);
    assert_eq!(v.fit, Fit::Limited);
    assert_eq!(
        v.for_,
        "read-heavy databases at low rates only; not transactional or write-heavy databases"
    );

    let d = facts((0.07, 1.9, 38.0), 0.066, (3.4, 13_479.0), 1256.0);
    let v = verdict(&d, &[finding("disk-tail", Severity::Crit)]);
    assert_eq!(v.fit, Fit::No);
    assert!(v.profiles.iter().all(|p| p.fit == Fit::No));
    assert!(v.because.last().unwrap().contains("disk-tail"));
}

/// One workload: graded on what it measured, and the verdict says how to get the
/// database's.
#[test]
fn one_workload_verdict() {
    let d = DiskFacts {
        read: Some(DiskDirFacts {
            ios: 2549,
            p50_ms: 96.0,
            p99_ms: 104.0,
            ..DiskDirFacts::default()
        }),
        iodepth: 32,
        ..DiskFacts::default()
    };
    let v = verdict(&d, &[]);
    assert_eq!(v.fit, Fit::No);
    assert!(v.for_.contains("without workload flags"), "{}", v.for_);
    assert!(
        v.because[0].contains("reads 96.0 ms p50"),
        "{:?}",
        v.because
    );
}

/// A RAM-backed volume on a CPU-starved machine (latscope waited for a CPU through
/// the whole commit test, so the starved commits were kept): commits 4.0 ms p50 and
/// 16 ms p99. The tail is not held against the volume, and the reason says why; with
/// enough unstarved time the same p99 makes it "limited".
#[test]
fn a_starved_machines_commit_tail_is_not_the_volumes() {
    let mut d = facts((4.0, 16.0, 137.0), 0.039, (7.9, 41_011.0), 2816.0);
    {
        let c = d.commit.as_mut().unwrap();
        c.starved_kept = true;
        c.cpu_wait_pct = Some(49.0);
    }
    let v = verdict(&d, &[]);
    assert_eq!(v.fit, Fit::Yes, "{:?}", v.because);
    assert!(
        v.because[0].contains("p99 not held against the volume: latscope waited for a CPU 49 %"),
        "{:?}",
        v.because
    );
    d.commit.as_mut().unwrap().starved_kept = false;
    let v = verdict(&d, &[]);
    assert_eq!(v.profiles[0].fit, Fit::Limited, "{:?}", v.because);
    assert!(!v.because[0].contains("not held"), "{:?}", v.because);
}
