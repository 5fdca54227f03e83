//! Adapter: a disk run's result (one workload, or the database suite) as the facts
//! the rules and the verdict read. Disk results are plain data; this is where
//! diagnosis reads them (not the other way round).

use hdrhistogram::Histogram;

use crate::disk::commit::CommitResult;
use crate::disk::suite::SuiteResult;
use crate::disk::{DiskResult, SecondStats};

use super::facts::{CommitFacts, DiskDirFacts, DiskFacts, WorkloadFacts};

const MIB: f64 = 1024.0 * 1024.0;
/// An I/O this slow, ms, and this many times the median, is a stall (a queue at
/// depth 32 behind a cap makes every I/O wait tens of ms: that is no stall).
const STALL_MS: f64 = 100.0;
const STALL_X_P50: f64 = 4.0;
/// A second in which latscope's threads waited, runnable, for a CPU this share of it
/// or more (their mean) is starved: on a RAM-backed device under other builds such
/// stretches turned 0.07 ms commits into 3–8 ms ones (disk::commit's slices).
const STARVED_PCT: f64 = 25.0;

/// What the finding rules read of a one-workload disk run (ms).
pub fn disk_facts(r: &DiskResult) -> DiskFacts {
    let [read, write, fsync] = r.latencies();
    // Full seconds only: a last second cut short is no measure of a rate.
    let full: Vec<&SecondStats> = r.timeline.iter().filter(|s| s.length_s >= 0.999).collect();
    let dir =
        |h: &Histogram<u64>, iops: fn(&SecondStats) -> f64, max_us: fn(&SecondStats) -> f64| {
            (!h.is_empty()).then(|| {
                // A second in which latscope itself mostly waited for a CPU is the
                // machine's: its slowest I/O is no stall of the volume (issue 29).
                let maxes: Vec<f64> = r
                    .timeline
                    .iter()
                    .filter(|s| !s.cpu_wait_pct.is_some_and(|w| w >= STARVED_PCT))
                    .map(max_us)
                    .collect();
                dir_facts(h, full.iter().map(|s| iops(s)).collect(), &maxes)
            })
        };
    DiskFacts {
        read: dir(read, SecondStats::read_iops, |s| s.read_max_us),
        write: dir(write, SecondStats::write_iops, |s| s.write_max_us),
        iodepth: r.options.iodepth,
        fsync_p99_ms: (!fsync.is_empty()).then(|| fsync.value_at_quantile(0.99) as f64 / 1e6),
        fsync_count: fsync.len(),
        ..DiskFacts::default()
    }
}

/// What the rules and the verdict read of the database suite (ms): each workload,
/// and the commit test. `read`/`write` stay empty (each workload speaks for itself);
/// `fsync_p99_ms` is the commit's fdatasync, what a database's WAL waits.
pub fn suite_facts(s: &SuiteResult) -> DiskFacts {
    let workloads = s
        .runs
        .iter()
        .filter_map(|run| {
            let one = disk_facts(&run.result);
            let writes = run.workload.pattern.writes();
            let dir = if writes { one.write } else { one.read }?;
            let secs = run.result.elapsed.as_secs_f64();
            let iops = if secs > 0.0 {
                dir.ios as f64 / secs
            } else {
                0.0
            };
            let fsync = run.result.latencies()[2];
            let q = |p: f64| (!fsync.is_empty()).then(|| fsync.value_at_quantile(p) as f64 / 1e6);
            Some(WorkloadFacts {
                name: run.workload.name.to_string(),
                bs: run.workload.bs,
                iodepth: run.workload.iodepth,
                iops,
                mib_s: iops * run.workload.bs as f64 / MIB,
                fsync_p50_ms: q(0.5),
                fsync_p99_ms: q(0.99),
                dir,
            })
        })
        .collect();
    let commit = s.commit.as_ref().map(commit_facts);
    DiskFacts {
        iodepth: 0,
        fsync_p99_ms: commit.as_ref().map(|c| c.fsync_p99_ms),
        fsync_count: commit.as_ref().map_or(0, |c| c.commits),
        workloads,
        commit: commit.filter(|c| c.commits > 0),
        ..DiskFacts::default()
    }
}

/// The commit test's facts.
fn commit_facts(c: &CommitResult) -> CommitFacts {
    let ms = |h: &Histogram<u64>, q: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(q) as f64 / 1e6
        }
    };
    let h = &c.steady.commit;
    CommitFacts {
        commits: h.len(),
        mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
        p50_ms: ms(h, 0.5),
        p99_ms: ms(h, 0.99),
        p999_ms: ms(h, 0.999),
        p9999_ms: ms(h, 0.9999),
        max_ms: ms(h, 1.0),
        write_p50_ms: ms(&c.steady.write, 0.5),
        fsync_p50_ms: ms(&c.steady.fsync, 0.5),
        fsync_p99_ms: ms(&c.steady.fsync, 0.99),
        append_commits: c.append.count(),
        append_p50_ms: (c.append.count() > 0).then(|| ms(&c.append.commit, 0.5)),
        segment_ms: c.segment_estimate().as_secs_f64() * 1e3,
        segment_extrapolated: !c.segment_complete(),
        over_100ms: over(h, 100_000_000),
        over_1s: over(h, 1_000_000_000),
        per_second: c.per_second.clone(),
        cpu_pressure_pct: c.cpu_pressure_pct,
        cpu_wait_pct: c.cpu_wait_pct,
        starved_s: c.starved_elapsed.as_secs_f64(),
        starved_kept: c.starved_kept,
    }
}

/// Values above `limit_ns`: the histogram's buckets past its highest equivalent.
fn over(h: &Histogram<u64>, limit_ns: u64) -> u64 {
    h.iter_recorded()
        .filter(|v| h.lowest_equivalent(v.value_iterated_to()) > limit_ns)
        .map(|v| v.count_at_value())
        .sum()
}

/// One direction's facts from its latency histogram (ns), per-second IOPS of the
/// full seconds and each second's largest latency (µs).
fn dir_facts(h: &Histogram<u64>, per_second_iops: Vec<f64>, max_us: &[f64]) -> DiskDirFacts {
    let ms = |ns: u64| ns as f64 / 1e6;
    let p50 = ms(h.value_at_quantile(0.5));
    let stall_seconds = |limit_ms: f64| max_us.iter().filter(|m| **m > limit_ms * 1e3).count();
    DiskDirFacts {
        ios: h.len(),
        mean_ms: h.mean() / 1e6,
        p50_ms: p50,
        p99_ms: ms(h.value_at_quantile(0.99)),
        p999_ms: ms(h.value_at_quantile(0.999)),
        p9999_ms: ms(h.value_at_quantile(0.9999)),
        max_ms: ms(h.max()),
        over_100ms: over(h, 100_000_000),
        over_1s: over(h, 1_000_000_000),
        seconds: max_us.len() as u64,
        stall_seconds: stall_seconds(STALL_MS.max(STALL_X_P50 * p50)) as u64,
        stall_seconds_1s: stall_seconds(1000f64.max(STALL_X_P50 * p50)) as u64,
        per_second_iops,
    }
}
