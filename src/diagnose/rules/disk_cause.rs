//! What limits a volume, named by its signature across the database suite's
//! workloads (random reads of 4 KiB at queue depth 1 and 32, of 64 KiB at 32; an
//! O_DIRECT log with fdatasync):
//!
//! - `disk-iops-cap`: IOPS the same at 4 KiB and 64 KiB, at a round number, while
//!   latency rises with queue depth — a token bucket on I/Os (a provisioned volume,
//!   a cgroup limit); a device at its own limit wanders off round numbers;
//! - `disk-bandwidth-cap`: MiB/s the same at 4 KiB and 64 KiB (a round number of MiB/s
//!   or MB/s), IOPS falling as blocks grow — a limit on bytes;
//! - `disk-added-latency`: a latency floor that does not move with queue depth or
//!   block size, IOPS growing with queue depth (IOPS ≈ depth / latency) — every I/O
//!   pays a fixed delay (a network volume's round trip), no queue;
//! - `disk-flush-cost`: fdatasync after a write costs far more than the write — a
//!   volatile write cache flushed on every commit.
//!
//! Each needs its ratio and an absolute floor (I/Os wait ≥ 1 ms behind a cap; a
//! latency floor of ≥ 1 ms; a flush of ≥ 1 ms).

use super::disk::{round_cap, round_rate, thousands};
use super::ms;
use crate::diagnose::facts::{DiskFacts, WorkloadFacts};
use crate::diagnose::finding::{Category, Finding, Severity};

const MIB: f64 = 1024.0 * 1024.0;
/// Two rates within this share of the larger are "the same": a cap holds its rate to
/// a few percent at any block size (a CPU-bound device's IOPS at 4 and 64 KiB were
/// 15 % apart).
const FLAT: f64 = 0.07;
/// Mean latency at queue depth 32 at least this many times that at depth 1: I/Os
/// queue (by Little's law, IOPS grew less than 32 / 3 ≈ 11× for 32× the I/Os in
/// flight).
const QUEUES: f64 = 3.0;
/// A cap matters once I/Os wait this long behind it (mean at depth 32), ms.
const CAP_WAIT_MS: f64 = 1.0;
/// A latency floor worth naming, ms (local SSDs answer in ~0.1 ms).
const FLOOR_MS: f64 = 1.0;
/// A floor that makes every random read slow for a database, ms.
const FLOOR_WARN_MS: f64 = 2.0;
/// The floor holds when deeper queues and larger blocks stay within this factor.
const FLOOR_HOLDS: f64 = 1.5;
/// A flush costs at least this many times the write before it, and this long, ms.
const FLUSH_X: f64 = 3.0;
const FLUSH_MS: f64 = 1.0;
/// A commit through the page cache pays the device's flush too: one under this share
/// of the O_DIRECT flush shows that flush was not the device's.
const COMMIT_SHARE: f64 = 0.5;
/// A log loop of writes and flushes runs at a cap when its commits per second times
/// the I/Os of a commit (1 to [`COMMIT_IOS`]) come within this share of the cap.
const AT_CAP: f64 = 0.15;
/// I/Os a commit can cost: the write, the flush, a journal block.
const COMMIT_IOS: u32 = 3;

/// The three read workloads the signatures compare.
struct Reads<'a> {
    qd1: &'a WorkloadFacts,
    qd32: &'a WorkloadFacts,
    big: &'a WorkloadFacts,
}

fn reads(d: &DiskFacts) -> Option<Reads<'_>> {
    Some(Reads {
        qd1: d.workload("read-4k-qd1")?,
        qd32: d.workload("read-4k-qd32")?,
        big: d.workload("read-64k-qd32")?,
    })
}

/// Whether `a` and `b` are within [`FLAT`] of the larger.
fn same(a: f64, b: f64) -> bool {
    let hi = a.max(b);
    hi > 0.0 && (a - b).abs() <= FLAT * hi
}

/// "500 IOPS" or "≈ 500 IOPS (measured 487)": a cap and the rate measured at it.
fn rate_text(cap: f64, measured: f64, unit: &str) -> String {
    if (cap - measured).abs() >= 0.5 {
        format!(
            "≈ {} {unit} (measured {measured:.0})",
            thousands(cap as u64)
        )
    } else {
        format!("{} {unit}", thousands(cap as u64))
    }
}

/// Latency rises with queue depth, and I/Os wait ≥ 1 ms at depth 32 — on the means,
/// which are the queue's by Little's law (depth / IOPS). Not on the p50: a throttle
/// that releases I/Os in slices (blkio: 100 ms) lets most of them straight through
/// and holds the rest a whole slice, so the median barely moves — CI's 5 MiB/s
/// volume had p50 0.06 ms at depth 1 and 0.17 ms at 32 (under 3× one run in a few),
/// while the means were 0.78 ms and 25 ms.
fn queues(r: &Reads<'_>) -> bool {
    r.qd32.dir.mean_ms >= QUEUES * r.qd1.dir.mean_ms && r.qd32.dir.mean_ms >= CAP_WAIT_MS
}

/// The suite's reads at an IOPS cap: the same IOPS at 4 KiB and at 64 KiB while
/// latency rises with queue depth, the two workloads' full seconds at a round number
/// ([`round_cap`]: a busy machine starves some seconds and lets others burst past the
/// setting, CI saw both on a 500 IOPS volume). The cap and the two workloads' mean.
fn read_cap(r: &Reads<'_>) -> Option<(f64, f64)> {
    let mean = 0.5 * (r.qd32.iops + r.big.iops);
    if !(same(r.qd32.iops, r.big.iops) && queues(r)) {
        return None;
    }
    let seconds: Vec<f64> = [r.qd32, r.big]
        .iter()
        .flat_map(|w| w.dir.per_second_iops.iter().copied())
        .collect();
    // Too few seconds to judge (a run cut short): the mean alone.
    let cap = if seconds.len() >= 4 {
        round_cap(&seconds, mean)?
    } else {
        round_rate(mean)?
    };
    Some((cap, mean))
}

/// The workloads' per-second IOPS as evidence: "500 500 500 | 549 520 480".
fn seconds_text(ws: &[&WorkloadFacts]) -> String {
    ws.iter()
        .map(|w| {
            w.dir
                .per_second_iops
                .iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `disk-iops-cap` from the suite: the same IOPS at 4 KiB and at 64 KiB while
/// latency rises with queue depth.
pub fn iops_cap(d: &DiskFacts) -> Option<Finding> {
    let r = reads(d)?;
    let (cap, mean) = read_cap(&r)?;
    Some(
        Finding::new(
            "disk-iops-cap",
            Category::Disk,
            Severity::Warn,
            format!(
                "IOPS cap: {} whatever the block size ({:.0} at 4 KiB, {:.0} at 64 KiB, 32 in \
                 flight) while latency rises with queue depth (mean {} at depth 1, {} at 32): \
                 I/Os wait for the cap, not for the device",
                rate_text(cap, mean, "IOPS"),
                r.qd32.iops,
                r.big.iops,
                ms(r.qd1.dir.mean_ms),
                ms(r.qd32.dir.mean_ms),
            ),
        )
        .text("direction", "read")
        .num("cap_iops", cap)
        .num("mean_iops", mean)
        .text("per_second_iops", seconds_text(&[r.qd32, r.big]))
        .num("iops_4k_qd32", r.qd32.iops)
        .num("iops_64k_qd32", r.big.iops)
        .num("iops_4k_qd1", r.qd1.iops)
        .num("p50_qd1_ms", r.qd1.dir.p50_ms)
        .num("p50_qd32_ms", r.qd32.dir.p50_ms)
        .num("mean_qd1_ms", r.qd1.dir.mean_ms)
        .num("mean_qd32_ms", r.qd32.dir.mean_ms)
        .count("iodepth", 32)
        .num("expected_wait_ms", 1000.0 * 32.0 / cap.max(1e-9))
        .advice(
            "the volume (or a cgroup io.max / blkio limit) admits only this many I/Os per \
             second, so latency is queueing behind the cap, not the device: provision more \
             IOPS (a gp3/io2 IOPS setting, a larger Azure or GCP disk), spread the data over \
             several volumes, or keep fewer I/Os in flight (at the cap, more only wait longer)",
        ),
    )
}

/// `disk-bandwidth-cap`: the same MiB/s at 4 KiB and at 64 KiB, IOPS falling as
/// blocks grow, while I/Os queue.
pub fn bandwidth_cap(d: &DiskFacts) -> Option<Finding> {
    let r = reads(d)?;
    let falls = r.big.iops <= r.qd32.iops / 4.0;
    let cap = 0.5 * (r.qd32.mib_s + r.big.mib_s);
    // Round in MiB/s (5 MiB/s) or in MB/s (a cloud's 240 MB/s).
    let round = round_rate(cap).is_some() || round_rate(cap * MIB / 1e6).is_some();
    if !(same(r.qd32.mib_s, r.big.mib_s) && falls && queues(&r) && round) {
        return None;
    }
    let writes = d
        .workload("write-1m-qd8")
        .map(|w| format!("; sequential 1 MiB writes {:.1} MiB/s", w.mib_s))
        .unwrap_or_default();
    let segment = d
        .commit
        .as_ref()
        .filter(|c| c.segment_ms >= 100.0)
        .map(|c| {
            format!(
                "; a 16 MiB WAL segment takes {} to create",
                ms(c.segment_ms)
            )
        })
        .unwrap_or_default();
    Some(
        Finding::new(
            "disk-bandwidth-cap",
            Category::Disk,
            Severity::Warn,
            format!(
                "bandwidth cap: reads at {:.1} MiB/s whatever the block size ({:.1} MiB/s = \
                 {:.0} IOPS at 4 KiB, {:.1} MiB/s = {:.0} IOPS at 64 KiB){writes}{segment}",
                cap, r.qd32.mib_s, r.qd32.iops, r.big.mib_s, r.big.iops,
            ),
        )
        .text("direction", "read")
        .num("cap_mib_s", cap)
        .num("mib_s_4k_qd32", r.qd32.mib_s)
        .num("mib_s_64k_qd32", r.big.mib_s)
        .num("iops_4k_qd32", r.qd32.iops)
        .num("iops_64k_qd32", r.big.iops)
        .num("mean_qd1_ms", r.qd1.dir.mean_ms)
        .num("mean_qd32_ms", r.qd32.dir.mean_ms)
        .opt_num("write_mib_s", d.workload("write-1m-qd8").map(|w| w.mib_s))
        .opt_num("segment_ms", d.commit.as_ref().map(|c| c.segment_ms))
        .advice(
            "the volume (or a cgroup limit) admits only this many bytes per second: every \
             large read or write, checkpoint and new WAL segment waits for it; provision \
             more throughput (gp3 throughput, a larger disk), or move the WAL and bulk \
             loads to a faster volume",
        ),
    )
}

/// `disk-added-latency`: a latency floor of ≥ 1 ms that deeper queues and larger
/// blocks barely move, while IOPS grow with queue depth.
pub fn added_latency(d: &DiskFacts) -> Option<Finding> {
    let r = reads(d)?;
    let floor = r.qd1.dir.p50_ms;
    let holds = r.qd32.dir.p50_ms <= FLOOR_HOLDS * floor && r.big.dir.p50_ms <= FLOOR_HOLDS * floor;
    let scales = r.qd32.iops >= 4.0 * r.qd1.iops;
    if floor < FLOOR_MS || !holds || !scales {
        return None;
    }
    let severity = if floor >= FLOOR_WARN_MS {
        Severity::Warn
    } else {
        Severity::Info
    };
    let commit = d
        .commit
        .as_ref()
        .map(|c| format!("; a commit (write + fdatasync) {}", ms(c.p50_ms)))
        .unwrap_or_default();
    Some(
        Finding::new(
            "disk-added-latency",
            Category::Disk,
            severity,
            format!(
                "every I/O takes at least {}: p50 {} at depth 1, {} at 32, {} for 64 KiB — \
                 added per I/O (a network volume's round trip), not a queue: IOPS grow with \
                 depth ({:.0} → {:.0}){commit}",
                ms(floor),
                ms(r.qd1.dir.p50_ms),
                ms(r.qd32.dir.p50_ms),
                ms(r.big.dir.p50_ms),
                r.qd1.iops,
                r.qd32.iops,
            ),
        )
        .num("floor_ms", floor)
        .num("p50_4k_qd1_ms", r.qd1.dir.p50_ms)
        .num("p50_4k_qd32_ms", r.qd32.dir.p50_ms)
        .num("p50_64k_qd32_ms", r.big.dir.p50_ms)
        .num("iops_4k_qd1", r.qd1.iops)
        .num("iops_4k_qd32", r.qd32.iops)
        .opt_num("commit_p50_ms", d.commit.as_ref().map(|c| c.p50_ms))
        .advice(
            "each I/O pays this delay however few run at once: a database doing one read \
             or one commit at a time is held to 1 / latency per second; keep the working \
             set in memory, use more connections (or group commit), or a local disk for \
             the WAL",
        ),
    )
}

/// Whether the O_DIRECT log ran at the volume's IOPS cap: its commits per second times
/// the I/Os of one commit (the write, the flush, perhaps a journal block) is the cap.
/// Every I/O then waits for a token of the cap, and the throttle decides whether the
/// write or the flush does the waiting (blkio releases I/Os in slices: one run puts
/// the wait on the writes' p99, the next on the flushes' p50) — the cap's cost, named
/// by `disk-iops-cap`, not the device's flush.
fn log_at_cap(d: &DiskFacts, log: &WorkloadFacts) -> bool {
    let Some((cap, _)) = reads(d).and_then(|r| read_cap(&r)) else {
        return false;
    };
    (1..=COMMIT_IOS).any(|k| (f64::from(k) * log.iops - cap).abs() <= AT_CAP * cap)
}

/// Whether the commits through the page cache contradict a costly flush: each of them
/// (an 8 KiB write, then fdatasync) asks the device for the same cache flush as the
/// O_DIRECT log, so a device whose flush costs `flush` ms cannot commit in under half
/// of it. When it does, the O_DIRECT fdatasync waited for something else — on a busy
/// machine, a kernel worker that got a CPU only at the next scheduler tick (4 ms at
/// 250 Hz: CI saw fdatasync 3.95 ms p50 on a RAM-backed loop device whose commits took
/// 0.03 ms).
fn commits_contradict(d: &DiskFacts, flush: f64) -> bool {
    d.commit
        .as_ref()
        .is_some_and(|c| c.p50_ms < COMMIT_SHARE * flush)
}

/// `disk-flush-cost`: after an 8 KiB O_DIRECT write, fdatasync takes ≥ 3× the write
/// and ≥ 1 ms — the flush of a volatile write cache, paid by every commit — unless
/// the log ran at the volume's IOPS cap, where the flush's wait is the cap's, or the
/// commits through the page cache, which pay the same flush, were far faster.
pub fn flush_cost(d: &DiskFacts) -> Option<Finding> {
    let w = d.workload("wal-direct")?;
    let flush = w.fsync_p50_ms?;
    let write = w.dir.p50_ms;
    if flush < FLUSH_MS
        || flush < FLUSH_X * write
        || log_at_cap(d, w)
        || commits_contradict(d, flush)
    {
        return None;
    }
    let commit = d
        .commit
        .as_ref()
        .map(|c| {
            format!(
                "; a commit through the page cache (8 KiB + fdatasync) {} p50",
                ms(c.p50_ms)
            )
        })
        .unwrap_or_default();
    Some(
        Finding::new(
            "disk-flush-cost",
            Category::Disk,
            Severity::Warn,
            format!(
                "cache flush costs {}: fdatasync after an 8 KiB O_DIRECT write takes {} p50, \
                 the write itself {}{commit}",
                ms(flush),
                ms(flush),
                ms(write),
            ),
        )
        .num("flush_p50_ms", flush)
        .opt_num("flush_p99_ms", w.fsync_p99_ms)
        .num("write_p50_ms", write)
        .opt_num("commit_p50_ms", d.commit.as_ref().map(|c| c.p50_ms))
        .advice(
            "the device acknowledges writes into a volatile cache and pays for it on every \
             flush, which every commit asks for: use a device with power-loss protection \
             (enterprise SSD, a cloud volume) for the WAL; never turn flushes off \
             (fsync=off, barrier=0) on a database you want back after a power cut",
        ),
    )
}

#[cfg(test)]
#[path = "disk_cause_tests.rs"]
mod tests;
