//! The disk document (`latscope disk --json`, the stored summary of a disk run):
//! per-direction IOPS, bandwidth and completion-latency percentiles (µs), fdatasync
//! latency with `--fsync`, the per-second timeline, warnings and findings; and the
//! configuration a disk run is stored with.

use serde::{Deserialize, Serialize};

use crate::diagnose::Finding;
use crate::disk::result::{DirSummary, DiskResult, SecondStats};
use crate::disk::suite::SuiteResult;
use crate::disk::workload::Pattern;
use crate::stats::Percentiles;

const MIB: f64 = 1024.0 * 1024.0;

/// A disk run's document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskDoc {
    /// Fit for a database: `{fit: yes|limited|no, for, because, profiles, …}`
    /// (diagnose::disk_verdict; printed first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<serde_json::Value>,
    pub kind: String,
    pub schema_version: u32,
    /// The directory (or file) asked for.
    pub path: String,
    /// The test file.
    pub file: String,
    /// latscope created the test file (and removed it).
    pub created: bool,
    pub size: u64,
    pub pattern: String,
    /// randrw: the share of reads, percent (null for other patterns).
    pub mix: Option<u8>,
    pub bs: u64,
    pub iodepth: u32,
    pub direct: bool,
    /// `false` without `--fsync`; with it, `{count, lat_us}`.
    pub fsync: Fsync,
    pub engine: String,
    pub duration_s: f64,
    pub interrupted: bool,
    pub laid_out: bool,
    pub read: DirDoc,
    pub write: DirDoc,
    pub timeline: Vec<DiskSecondDoc>,
    pub warnings: Vec<String>,
    pub findings: Vec<Finding>,
    /// `suite` for the database suite (no workload flags); absent for one workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The suite: its workloads, the commit test, the layout, what it left out, and
    /// the time it is bounded to (`read`/`write`/`fsync` above are its 4 KiB reads at
    /// depth 32, its 1 MiB writes and its commits' fdatasync).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workloads: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suite_seconds: Option<u64>,
}

/// `fsync`: off (`false`), or the fdatasyncs made and their latency (µs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fsync {
    Off(bool),
    On { count: u64, lat_us: Percentiles },
}

impl Default for Fsync {
    fn default() -> Fsync {
        Fsync::Off(false)
    }
}

impl Fsync {
    /// The fdatasyncs' count and latency, when `--fsync` was on.
    pub fn measured(&self) -> Option<(u64, &Percentiles)> {
        match self {
            Fsync::On { count, lat_us } => Some((*count, lat_us)),
            Fsync::Off(_) => None,
        }
    }
}

/// One direction over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DirDoc {
    /// Completed I/Os.
    pub ios: u64,
    pub iops: f64,
    pub bw_mib_s: f64,
    /// Completion latency, µs.
    pub lat_us: Percentiles,
}

/// One second of a disk timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskSecondDoc {
    pub t: u32,
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mib_s: f64,
    pub write_mib_s: f64,
    pub read_p50_us: f64,
    pub read_p99_us: f64,
    pub read_max_us: f64,
    pub write_p50_us: f64,
    pub write_p99_us: f64,
    pub write_max_us: f64,
    pub fsyncs: u64,
    pub fsync_p99_us: f64,
}

/// The configuration a disk run is stored with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskConfigDoc {
    pub path: String,
    pub pattern: String,
    pub read_pct: u8,
    pub bs: u64,
    pub iodepth: u32,
    pub size: u64,
    pub duration_s: f64,
    /// "auto", "on" or "off".
    pub direct: String,
    pub fsync: bool,
    pub precondition: bool,
    pub write: bool,
    /// "auto", "uring" or "threads".
    pub engine: String,
}

impl From<&DiskResult> for DiskDoc {
    fn from(r: &DiskResult) -> DiskDoc {
        let o = &r.options;
        DiskDoc {
            kind: "disk".into(),
            schema_version: super::SCHEMA_VERSION,
            path: o.path.display().to_string(),
            file: r.setup.file.display().to_string(),
            created: r.setup.created,
            size: r.setup.size,
            pattern: o.pattern.name().to_string(),
            mix: (o.pattern == Pattern::RandRw).then_some(o.read_pct),
            bs: o.bs,
            iodepth: o.iodepth,
            direct: r.setup.direct,
            fsync: match r.fsync() {
                Some((count, lat)) => Fsync::On {
                    count,
                    lat_us: round_pct(&lat),
                },
                None => Fsync::Off(o.fsync),
            },
            engine: r.setup.engine.name().to_string(),
            duration_s: r2(r.elapsed.as_secs_f64()),
            interrupted: r.interrupted,
            laid_out: r.setup.laid_out,
            read: DirDoc::from(r.read()),
            write: DirDoc::from(r.write()),
            timeline: timeline(r),
            warnings: r.warnings(),
            findings: Vec::new(),
            ..DiskDoc::default()
        }
    }
}

impl From<&SuiteResult> for DiskDoc {
    /// The database suite's document: the one-workload fields hold its 4 KiB random
    /// reads at depth 32 (`read`, `bs`, `iodepth`, `timeline`), its sequential 1 MiB
    /// writes (`write`) and its commits' fdatasync (`fsync`); `mode`, `workloads`,
    /// `commit`, `layout`, `notes` and `suite_seconds` the rest.
    fn from(s: &SuiteResult) -> DiskDoc {
        let v = s.to_json();
        let mut doc = s.run("read-4k-qd32").map(DiskDoc::from).unwrap_or_default();
        doc.kind = "disk".into();
        doc.schema_version = super::SCHEMA_VERSION;
        doc.path = v["path"].as_str().unwrap_or_default().to_string();
        doc.file = s.setup.file.display().to_string();
        doc.created = s.setup.created;
        doc.size = s.setup.size;
        doc.pattern = "suite".into();
        doc.mix = None;
        doc.bs = 4096;
        doc.iodepth = 32;
        doc.direct = s.setup.direct;
        doc.engine = s.setup.engine.name().to_string();
        doc.write = s
            .run("write-1m-qd8")
            .map(|r| DirDoc::from(r.write()))
            .unwrap_or_default();
        doc.fsync = match &s.commit {
            Some(c) => Fsync::On {
                count: c.steady.fsync.len(),
                lat_us: round_pct(&Percentiles::from_histogram(
                    &c.steady.fsync,
                    crate::stats::Unit::Micros,
                )),
            },
            None => Fsync::Off(false),
        };
        doc.duration_s = r2(s.elapsed.as_secs_f64());
        doc.interrupted = s.interrupted;
        doc.laid_out = s.setup.laid_out;
        doc.warnings = s
            .runs
            .first()
            .map(|r| r.result.warnings())
            .unwrap_or_default();
        doc.mode = Some("suite".into());
        doc.workloads = Some(v["workloads"].clone());
        doc.commit = Some(v["commit"].clone()).filter(|c| !c.is_null());
        doc.layout = Some(v["layout"].clone()).filter(|c| !c.is_null());
        doc.notes = s.notes.clone();
        doc.suite_seconds = Some(crate::disk::suite::SUITE_SECONDS);
        doc
    }
}

impl From<DirSummary> for DirDoc {
    fn from(d: DirSummary) -> DirDoc {
        DirDoc {
            ios: d.ios,
            iops: r1(d.iops),
            bw_mib_s: r2(d.bw_mib_s),
            lat_us: round_pct(&d.lat_us),
        }
    }
}

impl From<&SecondStats> for DiskSecondDoc {
    fn from(s: &SecondStats) -> DiskSecondDoc {
        let mib = |ios: u64| r2(rate(ios, s.length_s) * s.bs as f64 / MIB);
        DiskSecondDoc {
            t: s.t,
            read_iops: r1(s.read_iops()),
            write_iops: r1(s.write_iops()),
            read_mib_s: mib(s.read_ios),
            write_mib_s: mib(s.write_ios),
            read_p50_us: r1(s.read_p50_us),
            read_p99_us: r1(s.read_p99_us),
            read_max_us: r1(s.read_max_us),
            write_p50_us: r1(s.write_p50_us),
            write_p99_us: r1(s.write_p99_us),
            write_max_us: r1(s.write_max_us),
            fsyncs: s.fsyncs,
            fsync_p99_us: r1(s.fsync_p99_us),
        }
    }
}

/// A result's timeline rows (also stored on their own with the run).
pub fn timeline(r: &DiskResult) -> Vec<DiskSecondDoc> {
    r.timeline.iter().map(DiskSecondDoc::from).collect()
}

impl DiskConfigDoc {
    /// The configuration of a run with these options on this file size.
    pub fn of(o: &crate::disk::options::DiskOptions, size: u64) -> DiskConfigDoc {
        DiskConfigDoc {
            path: o.path.display().to_string(),
            pattern: o.pattern.name().to_string(),
            read_pct: o.read_pct,
            bs: o.bs,
            iodepth: o.iodepth,
            size,
            duration_s: o.duration.as_secs_f64(),
            direct: format!("{:?}", o.direct).to_lowercase(),
            fsync: o.fsync,
            precondition: o.precondition,
            write: o.allow_write,
            engine: format!("{:?}", o.engine).to_lowercase(),
        }
    }
}

fn round_pct(p: &Percentiles) -> Percentiles {
    Percentiles {
        min: r1(p.min),
        mean: r1(p.mean),
        p50: r1(p.p50),
        p90: r1(p.p90),
        p99: r1(p.p99),
        p999: r1(p.p999),
        p9999: r1(p.p9999),
        max: r1(p.max),
    }
}

fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
