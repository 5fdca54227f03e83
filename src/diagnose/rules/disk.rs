//! Disk rules: `disk-tail` (p99.99 above what a database tolerates) and `slow-fsync`
//! (fdatasync p99 over etcd's 10 ms rule for WAL disks).

use super::ms;
use crate::diagnose::facts::DiskFacts;
use crate::diagnose::finding::{Category, Finding, Severity};

/// A database stalls when a single I/O takes longer than this, ms.
const TAIL_MS: f64 = 100.0;
/// etcd's rule: fdatasync p99 under 10 ms.
const FSYNC_MS: f64 = 10.0;

/// `disk-tail`: read or write p99.99 > 100 ms (crit over 1 s).
pub fn disk_tail(d: &DiskFacts) -> Option<Finding> {
    let worst = [d.read_p9999_ms, d.write_p9999_ms]
        .into_iter()
        .flatten()
        .fold(f64::NAN, f64::max);
    if worst.is_nan() || worst <= TAIL_MS {
        return None;
    }
    let which = if d.read_p9999_ms == Some(worst) {
        "read"
    } else {
        "write"
    };
    let p50 = if which == "read" {
        d.read_p50_ms
    } else {
        d.write_p50_ms
    };
    Some(
        Finding::new(
            "disk-tail",
            Category::Disk,
            if worst >= 1000.0 {
                Severity::Crit
            } else {
                Severity::Warn
            },
            format!(
                "{which} p99.99 is {}{}: a database on this volume stalls on 1 in 10,000 I/Os",
                ms(worst),
                p50.map(|p| format!(" (p50 {})", ms(p))).unwrap_or_default()
            ),
        )
        .opt_num("read_p9999_ms", d.read_p9999_ms)
        .opt_num("write_p9999_ms", d.write_p9999_ms)
        .opt_num("read_p50_ms", d.read_p50_ms)
        .opt_num("write_p50_ms", d.write_p50_ms)
        .advice(
            "keep latency-sensitive databases off this volume (use local NVMe or a volume \
             class with guaranteed IOPS), or check for throttling (burst credits, IOPS \
             caps) and noisy neighbours",
        ),
    )
}

/// `slow-fsync`: fdatasync p99 > 10 ms.
pub fn slow_fsync(d: &DiskFacts) -> Option<Finding> {
    let p99 = d.fsync_p99_ms?;
    if p99 <= FSYNC_MS || d.fsync_count == 0 {
        return None;
    }
    Some(
        Finding::new(
            "slow-fsync",
            Category::Disk,
            Severity::Warn,
            format!(
                "fdatasync p99 is {} over {} syncs (etcd asks for < 10 ms)",
                ms(p99),
                d.fsync_count
            ),
        )
        .num("fsync_p99_ms", p99)
        .count("fsyncs", d.fsync_count)
        .num("limit_ms", FSYNC_MS)
        .advice(
            "every commit of a write-ahead log waits for this: put WALs (etcd, \
             PostgreSQL, Kafka) on a disk with fast, power-safe sync (local SSD/NVMe with \
             a capacitor-backed cache), not on this volume",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Story 3: a network volume with a 1.3 s p99.99 is crit; local disk under 10 ms
    /// is quiet.
    #[test]
    fn disk_tail_both_ways() {
        let net = DiskFacts {
            read_p9999_ms: Some(1300.0),
            write_p9999_ms: Some(450.0),
            read_p50_ms: Some(1.2),
            ..DiskFacts::default()
        };
        let f = disk_tail(&net).expect("fires");
        assert_eq!(f.severity, Severity::Crit);
        assert_eq!(f.evidence_f64("read_p9999_ms"), Some(1300.0));
        assert!(f.title.starts_with("read p99.99 is 1.30 s"), "{}", f.title);
        let local = DiskFacts {
            read_p9999_ms: Some(3.8),
            write_p9999_ms: Some(8.0),
            ..DiskFacts::default()
        };
        assert!(disk_tail(&local).is_none());
        assert!(disk_tail(&DiskFacts::default()).is_none());
    }

    /// 25 ms fsync p99 fires; 2 ms does not.
    #[test]
    fn slow_fsync_both_ways() {
        let d = DiskFacts {
            fsync_p99_ms: Some(25.0),
            fsync_count: 1000,
            ..DiskFacts::default()
        };
        assert_eq!(
            slow_fsync(&d).unwrap().evidence_f64("fsync_p99_ms"),
            Some(25.0)
        );
        let d = DiskFacts {
            fsync_p99_ms: Some(2.0),
            fsync_count: 1000,
            ..DiskFacts::default()
        };
        assert!(slow_fsync(&d).is_none());
    }
}
