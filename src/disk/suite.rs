//! The database suite `latscope disk PATH` runs when no workload flag is given: a
//! small, fixed set of workloads that together tell a volume's limits apart — an
//! IOPS cap (IOPS flat across block sizes and queue depths), a bandwidth cap (MiB/s
//! flat across block sizes), added per-I/O latency (a latency floor that does not
//! move with queue depth), rare stalls, a costly cache flush — and what a database
//! would see: random reads at queue depth 1 and 32, sustained writes, and its commit
//! ([`crate::disk::commit`]). Bounded: about 25 s in all on any volume
//! ([`SUITE_SECONDS`]).
//!
//! One test file, laid out for at most [`SUITE_LAYOUT_BUDGET`]; each workload runs on
//! it after a short warm-up that is not recorded. On an existing file only the read
//! workloads run (nothing is written without a directory to write in).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::disk::commit::{self, CommitOptions, CommitResult};
use crate::disk::options::{DiskError, DiskOptions, SUITE_LAYOUT_BUDGET};
use crate::disk::workload::Pattern;
use crate::disk::{file, measure, setup_of, DiskResult, Observer, Setup};

/// Completions in the first part of each workload are not recorded (a throttle lets
/// a burst through when a cgroup starts; queues fill).
pub const WARMUP: Duration = Duration::from_millis(300);
/// What the suite takes on a volume that is not extremely slow, stated in the output.
pub const SUITE_SECONDS: u64 = 25;

/// One workload of the suite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Its name in the output and the JSON (`read-4k-qd1`, …).
    pub name: &'static str,
    pub pattern: Pattern,
    pub bs: u64,
    pub iodepth: u32,
    /// fdatasync after each write.
    pub fsync: bool,
    /// Measured for this long (after [`WARMUP`]).
    pub duration: Duration,
    /// What it stands for, in a database's terms.
    pub what: &'static str,
}

const fn secs(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The suite's O_DIRECT workloads, in the order they run.
pub const WORKLOADS: [Workload; 5] = [
    Workload {
        name: "read-4k-qd1",
        pattern: Pattern::RandRead,
        bs: 4096,
        iodepth: 1,
        fsync: false,
        duration: secs(3000),
        what: "an index lookup: one random 4 KiB read at a time",
    },
    Workload {
        name: "read-4k-qd32",
        pattern: Pattern::RandRead,
        bs: 4096,
        iodepth: 32,
        fsync: false,
        duration: secs(3000),
        what: "many queries at once: 32 random 4 KiB reads in flight",
    },
    Workload {
        name: "read-64k-qd32",
        pattern: Pattern::RandRead,
        bs: 65536,
        iodepth: 32,
        fsync: false,
        duration: secs(3000),
        what: "scans: 32 random 64 KiB reads in flight",
    },
    Workload {
        name: "write-1m-qd8",
        pattern: Pattern::Write,
        bs: 1 << 20,
        iodepth: 8,
        fsync: false,
        duration: secs(3000),
        what: "bulk loads, checkpoints, compaction: sequential 1 MiB writes",
    },
    Workload {
        name: "wal-direct",
        pattern: Pattern::Write,
        bs: 8192,
        iodepth: 1,
        fsync: true,
        duration: secs(2000),
        what: "a log written with O_DIRECT: 8 KiB writes, fdatasync after each",
    },
];

/// The commit test's parts.
pub fn commit_options(dir: &std::path::Path) -> CommitOptions {
    CommitOptions {
        dir: dir.to_path_buf(),
        append_for: secs(1000),
        segment_budget: secs(5000),
        commit_for: secs(3000),
    }
}

/// One workload's result.
#[derive(Debug, Clone)]
pub struct WorkloadRun {
    pub workload: Workload,
    pub result: DiskResult,
}

/// Everything the suite measured.
#[derive(Debug, Clone)]
pub struct SuiteResult {
    pub setup: Setup,
    /// Bytes laid out and how long that took.
    pub layout: Option<(u64, Duration)>,
    pub runs: Vec<WorkloadRun>,
    /// The commit test (None on an existing file, or after Ctrl-C).
    pub commit: Option<CommitResult>,
    /// Wall time of the whole suite, layout included.
    pub elapsed: Duration,
    /// Ctrl-C ended it early.
    pub interrupted: bool,
    /// What was left out and why.
    pub notes: Vec<String>,
}

impl SuiteResult {
    /// The run of the workload named `name`, if it ran.
    pub fn run(&self, name: &str) -> Option<&DiskResult> {
        self.runs
            .iter()
            .find(|r| r.workload.name == name)
            .map(|r| &r.result)
    }
}

/// Runs the suite on `opts.path` (its pattern, block size, queue depth and duration
/// are the suite's own; the engine, O_DIRECT mode and `--size` are the user's).
pub fn run(
    opts: &DiskOptions,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<SuiteResult, DiskError> {
    let started = Instant::now();
    let largest = WORKLOADS.iter().map(|w| w.bs).max().unwrap_or(4096);
    let base = DiskOptions {
        pattern: Pattern::RandRead,
        read_pct: 100,
        bs: largest,
        iodepth: 1,
        fsync: false,
        precondition: false,
        layout_budget: Some(SUITE_LAYOUT_BUDGET),
        ..opts.clone()
    };
    let tf = file::prepare(&base, stop, &mut |d, t| obs.laying_out(d, t))?;
    if stop.load(Ordering::Relaxed) {
        return Err(DiskError::Interrupted);
    }
    let setup = setup_of(&tf, opts.engine)?;
    obs.started(&setup);
    let mut notes = Vec::new();
    let writes = tf.created || opts.allow_write;
    if !writes {
        notes.push(format!(
            "{} is an existing file: only the read workloads ran (give a directory, or \
             --write, to measure writes and commits)",
            opts.path.display()
        ));
    }
    let chosen: Vec<Workload> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| writes || !w.pattern.writes())
        .collect();
    let total = chosen.len() + usize::from(tf.created);
    let mut runs = Vec::new();
    for (i, w) in chosen.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        obs.workload(i, total, w.name, w.what);
        let o = DiskOptions {
            pattern: w.pattern,
            read_pct: if w.pattern.reads() { 100 } else { 0 },
            bs: w.bs,
            iodepth: w.iodepth,
            fsync: w.fsync,
            duration: w.duration,
            ..base.clone()
        };
        let result = measure(&o, &tf, setup.clone(), WARMUP, stop, obs)?;
        runs.push(WorkloadRun {
            workload: *w,
            result,
        });
    }
    let layout = tf.layout_time.map(|t| (tf.size, t));
    let dir = tf.created.then(|| opts.path.clone());
    drop(tf);
    let mut commit = None;
    if let Some(dir) = dir {
        if !stop.load(Ordering::Relaxed) {
            obs.workload(
                total - 1,
                total,
                "commit",
                "a database's commit: 8 KiB through the page cache + fdatasync",
            );
            commit = Some(commit::run(&commit_options(&dir), stop)?);
        }
    }
    Ok(SuiteResult {
        setup,
        layout,
        runs,
        commit,
        elapsed: started.elapsed(),
        interrupted: stop.load(Ordering::Relaxed),
        notes,
    })
}
