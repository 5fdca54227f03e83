//! The commit a database does: a write-ahead log written through the page cache in
//! 8 KiB blocks, each commit one `pwrite` and one `fdatasync` (PostgreSQL's and
//! MySQL's default; SQLite's WAL with `synchronous=FULL` does the same). Three parts,
//! each timed on its own:
//!
//! - **appending**: commits that extend a fresh file (every fdatasync then also
//!   commits the filesystem's journal, since the size changed: a log that is not
//!   pre-allocated, SQLite's first WAL cycle);
//! - **segment**: pre-zeroing a 16 MiB segment file as PostgreSQL does before using
//!   it (zeros, fdatasync, then the directory synced) — on a slow volume the commits
//!   that need a new segment wait this long;
//! - **commits**: commits into the pre-zeroed segment (overwrites: data and a cache
//!   flush only), the steady state a database runs in and the number the verdict uses.
//!
//! The O_DIRECT figures (`--fsync` and the suite's `wal-direct` workload) time the
//! write and the flush apart; this is what the database's commit waits in total.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::disk::buf::AlignedBuf;
use crate::disk::options::DiskError;
use crate::disk::pressure::CpuPressure;
use crate::stats::histogram::{new_histogram, HIGHEST_NS, LOWEST_NS};

/// A WAL block: PostgreSQL's XLOG_BLCKSZ and InnoDB's log write unit order.
pub const WAL_BLOCK: u64 = 8192;
/// A PostgreSQL WAL segment.
pub const SEGMENT: u64 = 16 * 1024 * 1024;
/// Zeros are written in pieces of this size (PostgreSQL writes up to 32 blocks at once).
const ZERO_CHUNK: u64 = 256 * 1024;
/// The segment is synced every this many bytes, so a slow volume can be stopped at
/// its time budget and the rest extrapolated.
const SYNC_EVERY: u64 = 1024 * 1024;

/// How long each part of the commit test runs.
#[derive(Debug, Clone)]
pub struct CommitOptions {
    /// The directory the log files are created in (and removed from).
    pub dir: PathBuf,
    /// Appending commits for this long.
    pub append_for: Duration,
    /// Pre-zeroing stops after this long (once 1 MiB is written); the rest of the
    /// segment's time is extrapolated.
    pub segment_budget: Duration,
    /// Commits into the segment for this long.
    pub commit_for: Duration,
}

/// Write, fdatasync and whole-commit latencies (ns) of a series of commits.
#[derive(Debug, Clone)]
pub struct CommitHists {
    pub write: Histogram<u64>,
    pub fsync: Histogram<u64>,
    pub commit: Histogram<u64>,
}

impl CommitHists {
    fn new() -> CommitHists {
        CommitHists {
            write: new_histogram(),
            fsync: new_histogram(),
            commit: new_histogram(),
        }
    }

    fn record(&mut self, write: Duration, fsync: Duration) {
        let ns = |d: Duration| {
            u64::try_from(d.as_nanos())
                .unwrap_or(u64::MAX)
                .clamp(LOWEST_NS, HIGHEST_NS)
        };
        let _ = self.write.record(ns(write));
        let _ = self.fsync.record(ns(fsync));
        let _ = self.commit.record(ns(write + fsync));
    }

    /// Adds another series' commits.
    fn add(&mut self, other: &CommitHists) {
        let _ = self.write.add(&other.write);
        let _ = self.fsync.add(&other.fsync);
        let _ = self.commit.add(&other.commit);
    }

    /// Commits recorded.
    pub fn count(&self) -> u64 {
        self.commit.len()
    }
}

/// What the commit test measured.
#[derive(Debug, Clone)]
pub struct CommitResult {
    /// Bytes per commit.
    pub bs: u64,
    /// Commits that extended the file.
    pub append: CommitHists,
    /// Bytes of the segment pre-zeroed, and how long that took (synced).
    pub segment_written: u64,
    pub segment_time: Duration,
    /// Commits into the pre-zeroed segment, those of starved slices left out (unless
    /// `starved_kept`).
    pub steady: CommitHists,
    /// How long the commits in `steady` ran (their slices' time).
    pub steady_elapsed: Duration,
    /// Steady commits completed in each second of the wall clock, starved slices
    /// included, in order (a last, cut second left out).
    pub per_second: Vec<u64>,
    /// Commits of the slices in which latscope waited for a CPU a quarter of the time
    /// or more (the machine's, not the volume's), and how long those slices lasted.
    pub starved: CommitHists,
    pub starved_elapsed: Duration,
    /// Under [`MIN_CLEAN`] was unstarved: `steady` holds every commit (the starved
    /// included) and the tail cannot be told from the machine's.
    pub starved_kept: bool,
    /// Percent of the steady phase's wall time latscope's thread waited, runnable, for
    /// a CPU (schedstat); `None` where the kernel does not say.
    pub cpu_wait_pct: Option<f64>,
    /// Percent of the steady commits' time in which some task on the machine waited
    /// for a CPU ([`crate::disk::pressure`]); `None` without PSI.
    pub cpu_pressure_pct: Option<f64>,
    /// Ctrl-C ended it early.
    pub interrupted: bool,
}

impl CommitResult {
    /// Time to pre-zero a whole 16 MiB segment, extrapolated from what was written
    /// when the budget ran out.
    pub fn segment_estimate(&self) -> Duration {
        if self.segment_written == 0 {
            return Duration::ZERO;
        }
        self.segment_time
            .mul_f64(SEGMENT as f64 / self.segment_written as f64)
    }

    /// Whether the whole segment was written (else its time is extrapolated).
    pub fn segment_complete(&self) -> bool {
        self.segment_written >= SEGMENT
    }
}

/// The steady commits are judged in slices of this length.
const SLICE: Duration = Duration::from_millis(100);
/// A slice is starved when latscope's thread waited, runnable, for a CPU this share of
/// it or more. On this 2-core machine under other builds, a RAM-backed volume's slices
/// had 4–17 % when commits took 0.07 ms and 43–55 % when the machine made them 3–8 ms.
const STARVED_SHARE: f64 = 0.25;
/// Commits go on at most this much past `commit_for` to replace starved slices.
const STARVED_EXTRA: Duration = Duration::from_secs(4);
/// Fewer unstarved seconds than this cannot be judged on alone.
pub const MIN_CLEAN: Duration = Duration::from_secs(1);

/// This thread's run-queue wait so far, ns (schedstat's second field); `None` where
/// the kernel does not say.
fn own_wait_ns() -> Option<u64> {
    let text = fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The commits of one slice and this thread's wait when it began.
struct Slice {
    started: Instant,
    wait_ns: Option<u64>,
    samples: Vec<(Duration, Duration)>,
}

impl Slice {
    fn start(at: Instant) -> Slice {
        Slice {
            started: at,
            wait_ns: own_wait_ns(),
            samples: Vec::with_capacity(1024),
        }
    }

    /// Records the slice's commits as steady or starved, and its time.
    fn close(
        &self,
        at: Instant,
        steady: &mut CommitHists,
        starved: &mut CommitHists,
        clean_time: &mut Duration,
        starved_time: &mut Duration,
    ) {
        let wall = at.saturating_duration_since(self.started);
        if self.samples.is_empty() || wall.is_zero() {
            return;
        }
        let waited = match (self.wait_ns, own_wait_ns()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64,
            _ => 0.0,
        };
        let is_starved = waited >= STARVED_SHARE * wall.as_nanos() as f64;
        let (hists, time) = if is_starved {
            (starved, starved_time)
        } else {
            (steady, clean_time)
        };
        for (w, f) in &self.samples {
            hists.record(*w, *f);
        }
        *time += wall;
    }
}

/// A log file in the test directory, removed when dropped.
struct LogFile {
    file: File,
    path: PathBuf,
    /// Listed for removal should a panic end the process.
    _made: crate::cleanup::Made,
}

impl LogFile {
    fn create(dir: &Path, tag: &str) -> Result<LogFile, DiskError> {
        let path = dir.join(format!(".latscope-wal-{}-{tag}.tmp", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| DiskError::io(format!("creating {}", path.display()), e))?;
        Ok(LogFile {
            file,
            _made: crate::cleanup::remember(&path),
            path,
        })
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<(), DiskError> {
        self.file
            .write_all_at(buf, off)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOSPC | libc::EDQUOT) => DiskError::NoSpaceWriting(self.path.clone()),
                _ => DiskError::io(format!("writing {}", self.path.display()), e),
            })
    }

    fn sync(&self) -> Result<(), DiskError> {
        self.file
            .sync_data()
            .map_err(|e| DiskError::io(format!("fdatasync {}", self.path.display()), e))
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// One commit: the block written at `off` through the page cache, then fdatasync.
fn commit(log: &LogFile, buf: &[u8], off: u64) -> Result<(Duration, Duration), DiskError> {
    let t = Instant::now();
    log.write(buf, off)?;
    let w = t.elapsed();
    let t = Instant::now();
    log.sync()?;
    Ok((w, t.elapsed()))
}

/// Runs the three parts in order; `stop` (Ctrl-C) ends the part under way and skips
/// the rest, keeping what was measured.
pub fn run(opts: &CommitOptions, stop: &AtomicBool) -> Result<CommitResult, DiskError> {
    let stopped = || stop.load(Ordering::Relaxed);
    let mut buf = AlignedBuf::new(WAL_BLOCK as usize, 4096, 0x3a1);

    // Appending: every commit extends the file. A full segment's worth is switched
    // for a fresh file, as PostgreSQL switches segments: the space taken stays one
    // segment however fast the volume is (a fast one filled a small volume in the
    // time given, ENOSPC).
    let mut append = CommitHists::new();
    {
        let mut log = LogFile::create(&opts.dir, "append")?;
        let end = Instant::now() + opts.append_for;
        let mut off = 0u64;
        while Instant::now() < end && !stopped() {
            if off >= SEGMENT {
                drop(log);
                log = LogFile::create(&opts.dir, "append")?;
                off = 0;
            }
            buf.as_mut_slice()[..8].copy_from_slice(&off.to_le_bytes());
            let (w, f) = commit(&log, buf.as_slice(), off)?;
            append.record(w, f);
            off += WAL_BLOCK;
        }
    }

    // The segment: zeros, synced as they go, then the directory.
    let seg = LogFile::create(&opts.dir, "segment")?;
    let zeros = vec![0u8; ZERO_CHUNK as usize];
    let started = Instant::now();
    let mut written = 0;
    while written < SEGMENT && !stopped() {
        if written >= SYNC_EVERY && started.elapsed() >= opts.segment_budget {
            break;
        }
        seg.write(&zeros, written)?;
        written += ZERO_CHUNK;
        if written.is_multiple_of(SYNC_EVERY) {
            seg.sync()?;
        }
    }
    seg.sync()?;
    if let Ok(d) = File::open(&opts.dir) {
        let _ = d.sync_all();
    }
    let segment_time = started.elapsed();

    // Commits into the segment, wrapping at its end as a recycled segment would, in
    // slices: a slice in which latscope itself waited for a CPU a quarter of the time
    // or more is the machine's, not the volume's (issue 29), and is set apart; the
    // commits go on (up to STARVED_EXTRA longer) until `commit_for` of unstarved
    // slices is measured.
    let mut steady = CommitHists::new();
    let mut starved = CommitHists::new();
    let mut per_second = Vec::new();
    let pressure = CpuPressure::start();
    let wait_start = own_wait_ns();
    let t0 = Instant::now();
    let hard_end = t0 + opts.commit_for + STARVED_EXTRA;
    let blocks = (written / WAL_BLOCK).max(1);
    let mut n = 0u64;
    let mut this_second = 0u64;
    let mut second = 0u64;
    let mut last = t0;
    let mut slice = Slice::start(t0);
    let (mut clean_time, mut starved_time) = (Duration::ZERO, Duration::ZERO);
    while !stopped() {
        let off = (n % blocks) * WAL_BLOCK;
        buf.as_mut_slice()[..8].copy_from_slice(&n.to_le_bytes());
        let (w, f) = commit(&seg, buf.as_slice(), off)?;
        last = Instant::now();
        if last > hard_end {
            break;
        }
        slice.samples.push((w, f));
        n += 1;
        let s = (last - t0).as_secs();
        while s > second {
            per_second.push(this_second);
            this_second = 0;
            second += 1;
        }
        this_second += 1;
        if last - slice.started >= SLICE {
            slice.close(
                last,
                &mut steady,
                &mut starved,
                &mut clean_time,
                &mut starved_time,
            );
            slice = Slice::start(last);
            if clean_time >= opts.commit_for {
                break;
            }
        }
    }
    slice.close(
        last.min(hard_end),
        &mut steady,
        &mut starved,
        &mut clean_time,
        &mut starved_time,
    );
    let cpu_pressure_pct = pressure.percent();
    let wall = last.min(hard_end).saturating_duration_since(t0);
    let cpu_wait_pct = match (wait_start, own_wait_ns()) {
        (Some(a), Some(b)) if !wall.is_zero() => {
            Some((100.0 * b.saturating_sub(a) as f64 / wall.as_nanos() as f64).min(100.0))
        }
        _ => None,
    };
    // The last second counts when it ran (nearly) whole.
    if wall.as_secs_f64() >= (second + 1) as f64 - 0.01 {
        per_second.push(this_second);
    }
    // Too little unstarved time to judge on: everything is kept, and said to be.
    let starved_kept = clean_time < MIN_CLEAN && starved.count() > 0;
    let steady_elapsed = if starved_kept {
        steady.add(&starved);
        clean_time + starved_time
    } else {
        clean_time
    };
    Ok(CommitResult {
        bs: WAL_BLOCK,
        append,
        segment_written: written,
        segment_time,
        steady,
        steady_elapsed,
        per_second,
        starved,
        starved_elapsed: starved_time,
        starved_kept,
        cpu_wait_pct,
        cpu_pressure_pct,
        interrupted: stopped(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each part runs and leaves nothing behind: commits are counted once each (a
    /// write and a sync), the whole segment is written on a fast filesystem, and the
    /// seconds add up to no more than the commits.
    #[test]
    fn commits_are_timed_and_files_removed() {
        let dir = std::env::temp_dir().join(format!("latscope-commit-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let opts = CommitOptions {
            dir: dir.clone(),
            append_for: Duration::from_millis(150),
            segment_budget: Duration::from_secs(5),
            commit_for: Duration::from_millis(1300),
        };
        let r = run(&opts, &AtomicBool::new(false)).unwrap();
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        let _ = fs::remove_dir_all(&dir);
        assert!(left.is_empty(), "{left:?}");
        assert!(r.append.count() > 0);
        assert!(r.steady.count() > 0);
        assert_eq!(r.steady.write.len(), r.steady.fsync.len());
        assert!(r.segment_complete());
        assert_eq!(r.segment_estimate(), r.segment_time);
        assert!((1..=6).contains(&r.per_second.len()), "{:?}", r.per_second);
        assert!(r.per_second.iter().sum::<u64>() <= r.steady.count() + r.starved.count());
        assert!(r.steady_elapsed <= Duration::from_millis(1300) + STARVED_EXTRA);
        if !r.starved_kept {
            assert!(
                r.steady_elapsed + r.starved_elapsed <= Duration::from_millis(1300) + STARVED_EXTRA
            );
        }
        // A commit is its write and its sync.
        assert!(r.steady.commit.max() >= r.steady.fsync.max());
    }
}
