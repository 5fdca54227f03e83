//! Adapter: a disk run's result as the facts the rules read. Disk results are plain
//! data; this is where diagnosis reads them (not the other way round).

use hdrhistogram::Histogram;

use crate::disk::{DiskResult, SecondStats};

use super::facts::{DiskDirFacts, DiskFacts};

/// What the finding rules read of a disk run (ms).
pub fn disk_facts(r: &DiskResult) -> DiskFacts {
    let [read, write, fsync] = r.latencies();
    // Full seconds only: a last second cut short is no measure of a rate.
    let full: Vec<&SecondStats> = r.timeline.iter().filter(|s| s.length_s >= 0.999).collect();
    let dir = |h: &Histogram<u64>, iops: fn(&SecondStats) -> f64| {
        (!h.is_empty()).then(|| dir_facts(h, full.iter().map(|s| iops(s)).collect()))
    };
    DiskFacts {
        read: dir(read, SecondStats::read_iops),
        write: dir(write, SecondStats::write_iops),
        iodepth: r.options.iodepth,
        fsync_p99_ms: (!fsync.is_empty()).then(|| fsync.value_at_quantile(0.99) as f64 / 1e6),
        fsync_count: fsync.len(),
    }
}

/// One direction's facts from its latency histogram (ns) and per-second IOPS.
fn dir_facts(h: &Histogram<u64>, per_second_iops: Vec<f64>) -> DiskDirFacts {
    let ms = |ns: u64| ns as f64 / 1e6;
    // Values above a limit: the histogram's buckets past its highest equivalent.
    let over = |limit_ns: u64| {
        h.iter_recorded()
            .filter(|v| h.lowest_equivalent(v.value_iterated_to()) > limit_ns)
            .map(|v| v.count_at_value())
            .sum()
    };
    DiskDirFacts {
        ios: h.len(),
        mean_ms: h.mean() / 1e6,
        p50_ms: ms(h.value_at_quantile(0.5)),
        p999_ms: ms(h.value_at_quantile(0.999)),
        p9999_ms: ms(h.value_at_quantile(0.9999)),
        max_ms: ms(h.max()),
        over_100ms: over(100_000_000),
        over_1s: over(1_000_000_000),
        per_second_iops,
    }
}
