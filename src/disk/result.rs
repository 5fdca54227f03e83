//! The outcome of a disk run: per-direction IOPS, bandwidth and completion-latency
//! percentiles (µs, to p99.99), fdatasync latency on its own, a per-second timeline,
//! and the histograms the store keeps ([`DiskResult::histograms`]); the disk JSON
//! of DESIGN.md is `schema::DiskDoc`. Plain data: `diagnose::from_disk` reads it for the
//! rules.

use std::time::Duration;

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::disk::options::DiskOptions;
use crate::disk::recorder::{Hists, SecondHists};
use crate::disk::Setup;
use crate::stats::counts::supports;
use crate::stats::StoredHistogram;
use crate::stats::{Percentiles, Unit};
use serde_json::{json, Value};

const MIB: f64 = 1024.0 * 1024.0;

/// One direction (reads or writes) over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DirSummary {
    /// Completed I/Os.
    pub ios: u64,
    pub iops: f64,
    /// MiB/s.
    pub bw_mib_s: f64,
    /// Completion latency, µs.
    pub lat_us: Percentiles,
}

/// One second of the timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondStats {
    /// Seconds since the start (this second is `[t, t+1)`).
    pub t: u32,
    /// Length of the second that was measured (less than 1 for a last, cut second).
    pub length_s: f64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub fsyncs: u64,
    /// Block size, to turn I/Os into bandwidth.
    pub bs: u64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub read_max_us: f64,
    pub write_p50_us: f64,
    pub write_p99_us: f64,
    pub write_max_us: f64,
    pub fsync_p99_us: f64,
    /// latscope's CPU in the second, percent of one core (live only: not stored).
    pub cpu_pct: Option<f64>,
    /// Percent of the second latscope's threads waited, runnable, for a CPU (their
    /// mean; live only: not stored). A second starved this way is the machine's.
    pub cpu_wait_pct: Option<f64>,
}

impl SecondStats {
    /// Summarises one closed second.
    pub fn from_hists(s: &SecondHists, bs: u64, length_s: f64) -> SecondStats {
        let h = &s.hists;
        let us = |h: &Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / 1e3
            }
        };
        SecondStats {
            t: s.t,
            length_s,
            read_ios: h.read.len(),
            write_ios: h.write.len(),
            fsyncs: h.fsync.len(),
            bs,
            read_p50_us: us(&h.read, 0.5),
            read_p99_us: us(&h.read, 0.99),
            read_max_us: us(&h.read, 1.0),
            write_p50_us: us(&h.write, 0.5),
            write_p99_us: us(&h.write, 0.99),
            write_max_us: us(&h.write, 1.0),
            fsync_p99_us: us(&h.fsync, 0.99),
            cpu_pct: None,
            cpu_wait_pct: None,
        }
    }

    /// Read I/Os per second.
    pub fn read_iops(&self) -> f64 {
        rate(self.read_ios, self.length_s)
    }

    /// Write I/Os per second.
    pub fn write_iops(&self) -> f64 {
        rate(self.write_ios, self.length_s)
    }
}

/// Everything a disk run measured.
#[derive(Debug, Clone)]
pub struct DiskResult {
    pub options: DiskOptions,
    pub setup: Setup,
    /// Time measured (the duration, or less after Ctrl-C).
    pub elapsed: Duration,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
    /// The per-second timeline.
    pub timeline: Vec<SecondStats>,
    totals: Hists,
    /// Each second's histograms, already serialized.
    per_second: Vec<StoredHistogram>,
}

impl DiskResult {
    pub(crate) fn new(
        options: DiskOptions,
        setup: Setup,
        elapsed: Duration,
        interrupted: bool,
        totals: Hists,
        mut timeline: Vec<SecondStats>,
        per_second: Vec<StoredHistogram>,
    ) -> DiskResult {
        // A last second cut short (Ctrl-C) covers less than a second.
        let el = elapsed.as_secs_f64();
        for s in &mut timeline {
            s.length_s = (el - f64::from(s.t)).clamp(0.001, 1.0);
        }
        DiskResult {
            options,
            setup,
            elapsed,
            interrupted,
            timeline,
            totals,
            per_second,
        }
    }

    fn summary(&self, h: &Histogram<u64>) -> DirSummary {
        let ios = h.len();
        let secs = self.elapsed.as_secs_f64();
        DirSummary {
            ios,
            iops: rate(ios, secs),
            bw_mib_s: rate(ios, secs) * self.options.bs as f64 / MIB,
            lat_us: Percentiles::from_histogram(h, Unit::Micros),
        }
    }

    /// Reads over the whole run.
    pub fn read(&self) -> DirSummary {
        self.summary(&self.totals.read)
    }

    /// Writes over the whole run.
    pub fn write(&self) -> DirSummary {
        self.summary(&self.totals.write)
    }

    /// fdatasync count and latency (µs), with `--fsync`.
    pub fn fsync(&self) -> Option<(u64, Percentiles)> {
        self.options.fsync.then(|| {
            (
                self.totals.fsync.len(),
                Percentiles::from_histogram(&self.totals.fsync, Unit::Micros),
            )
        })
    }

    /// Warnings for the user (O_DIRECT fallback, sparse file, io_uring fallback).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.setup.warnings.clone();
        w.extend(self.setup.engine_note.clone());
        w
    }

    /// Completion latencies of the whole run, ns: reads, writes, fdatasyncs.
    pub fn latencies(&self) -> [&Histogram<u64>; 3] {
        [&self.totals.read, &self.totals.write, &self.totals.fsync]
    }

    /// `read`, `write`, `fsync` for the whole run and for each second (V2 deflate),
    /// leaving out empty ones.
    pub fn histograms(&self) -> Vec<StoredHistogram> {
        let mut out = stored(&self.totals, None);
        out.extend(self.per_second.iter().cloned());
        out
    }
}

/// The non-empty histograms of a set, serialized (V2 deflate) under the store's
/// disk names: `read`, `write`, `fsync`.
pub(crate) fn stored(h: &Hists, second: Option<u32>) -> Vec<StoredHistogram> {
    let mut out = Vec::new();
    for (name, h) in [("read", &h.read), ("write", &h.write), ("fsync", &h.fsync)] {
        if h.is_empty() {
            continue;
        }
        let mut v2 = Vec::new();
        if V2DeflateSerializer::new().serialize(h, &mut v2).is_ok() {
            out.push(StoredHistogram {
                name: name.to_string(),
                second,
                v2,
            });
        }
    }
    out
}

/// One direction as JSON: `{ios, iops, bw_mib_s, lat_us}`.
pub(crate) fn dir_json(d: DirSummary) -> Value {
    json!({
        "ios": d.ios,
        "iops": r1(d.iops),
        "bw_mib_s": r2(d.bw_mib_s),
        "lat_us": lat_json(&d.lat_us, d.ios),
    })
}

/// Latency percentiles as JSON, each only where `n` values support it (p99.9 from
/// 1,000, p99.99 from 10,000; null below: that "percentile" would be the maximum).
pub(crate) fn lat_json(p: &Percentiles, n: u64) -> Value {
    let q = |v: f64, q: f64| {
        if supports(n, q) {
            json!(r1(v))
        } else {
            Value::Null
        }
    };
    json!({
        "min": r1(p.min), "mean": r1(p.mean), "p50": r1(p.p50), "p90": q(p.p90, 0.9),
        "p99": q(p.p99, 0.99), "p999": q(p.p999, 0.999), "p9999": q(p.p9999, 0.9999),
        "max": r1(p.max),
    })
}

pub(crate) fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

pub(crate) fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

pub(crate) fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    /// Stored histograms read back (V2 deflate) with their counts; empty ones are
    /// left out.
    #[test]
    fn stored_histograms_round_trip() {
        let mut h = Hists::small();
        for us in [50u64, 80, 120, 30_000] {
            h.read.record(us * 1000).unwrap();
        }
        h.fsync.record(2_000_000).unwrap();
        let out = stored(&h, Some(3));
        let names: Vec<_> = out.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["read", "fsync"]);
        assert!(out.iter().all(|s| s.second == Some(3)));
        let back: Histogram<u64> = Deserializer::new()
            .deserialize(&mut out[0].v2.as_slice())
            .unwrap();
        assert_eq!(back.len(), 4);
        let max_us = back.value_at_quantile(1.0) as f64 / 1000.0;
        assert!((max_us - 30_000.0).abs() < 30.0, "{max_us}");
    }
}
