//! `latscope disk`: storage latency as a database sees it (DESIGN.md, Measurements →
//! Disk). Lays out a test file (or opens an existing one), then keeps `iodepth` I/Os
//! of `bs` bytes in flight for the run's duration with io_uring or a thread pool,
//! O_DIRECT on aligned buffers where the filesystem allows it, optionally with an
//! fdatasync after every write (timed on its own). Completion latencies land in
//! HdrHistograms, per direction and per second.
//!
//! Without workload flags `latscope disk` runs the database suite instead
//! ([`suite`]: several workloads and the commit test of [`commit`]).
//!
//! This module measures; it never prints. Progress and the setup reach the caller
//! through an [`Observer`].

pub mod commit;
pub mod file;
pub mod options;
pub mod pressure;
pub mod result;
pub mod suite;
mod suite_json;
pub mod workload;

mod buf;
mod engine_threads;
mod engine_uring;
mod recorder;

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pub use options::{DirectMode, DiskEngine, DiskError, DiskOptions};
pub use recorder::SecondHists;
pub use result::{DirSummary, DiskResult, SecondStats};
pub use workload::Pattern;

use recorder::Recorder;
use workload::OpGen;

/// The engine that did the I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// io_uring, one ring with `iodepth` entries in flight.
    Uring,
    /// A pread/pwrite thread per queue slot.
    Threads,
}

impl EngineKind {
    /// `io_uring` or `threads`.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Uring => "io_uring",
            EngineKind::Threads => "threads",
        }
    }
}

/// How the run was set up, known once the file is ready.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The file measured.
    pub file: std::path::PathBuf,
    /// latscope created it (and removes it).
    pub created: bool,
    /// Bytes of the file the run touches.
    pub size: u64,
    /// O_DIRECT is in effect.
    pub direct: bool,
    /// O_DIRECT alignment (memory, offset) in bytes, when direct.
    pub align: (u32, u32),
    /// The whole region was written before measuring.
    pub laid_out: bool,
    pub engine: EngineKind,
    /// Why io_uring was not used, when `--engine auto` fell back to threads.
    pub engine_note: Option<String>,
    /// Things the user should know (O_DIRECT fallback, a sparse file…).
    pub warnings: Vec<String>,
}

/// Receives progress while a run goes on (the command prints it; tests ignore it).
pub trait Observer {
    /// Laying out the test file: `done` of `total` bytes written.
    fn laying_out(&mut self, _done: u64, _total: u64) {}
    /// The file is ready and the measurement starts now.
    fn started(&mut self, _setup: &Setup) {}
    /// The suite starts workload `i` of `n` (its name, and what it stands for).
    fn workload(&mut self, _i: usize, _n: usize, _name: &str, _what: &str) {}
    /// One second of the measurement closed: its numbers, and its histograms (for
    /// a view that adds them up while the run goes).
    fn second(&mut self, _s: &SecondStats, _hists: &SecondHists) {}
}

/// latscope's CPU (the whole process: the engine's threads, the collector, a live
/// view) between two closed seconds.
struct CpuClock {
    wall: Instant,
    cpu_ns: Option<u64>,
    wait_ns: Option<u64>,
}

impl CpuClock {
    fn start() -> CpuClock {
        CpuClock {
            wall: Instant::now(),
            cpu_ns: process_cpu_ns(),
            wait_ns: pressure::process_wait_ns().map(|w| w.0),
        }
    }

    /// CPU used since the last lap, percent of one core, and the share of the lap
    /// latscope's threads waited, runnable, for a CPU (percent, averaged over its
    /// threads); None where a clock is not readable.
    fn lap(&mut self) -> (Option<f64>, Option<f64>) {
        let (wall, cpu, wait) = (
            Instant::now(),
            process_cpu_ns(),
            pressure::process_wait_ns(),
        );
        let secs = wall.saturating_duration_since(self.wall).as_secs_f64();
        let pct = match (self.cpu_ns, cpu) {
            (Some(a), Some(b)) => {
                (secs > 0.0).then(|| b.saturating_sub(a) as f64 / 1e9 / secs * 100.0)
            }
            _ => None,
        };
        let wait_pct = match (self.wait_ns, wait) {
            (Some(a), Some((b, threads))) if secs > 0.0 && threads > 0 => {
                Some((b.saturating_sub(a) as f64 / 1e9 / secs * 100.0 / threads as f64).min(100.0))
            }
            _ => None,
        };
        (self.wall, self.cpu_ns, self.wait_ns) = (wall, cpu, wait.map(|w| w.0));
        (pct, wait_pct)
    }
}

/// CPU time the process has used, ns.
fn process_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// What every engine worker shares.
pub(crate) struct Ctx<'a> {
    pub file: &'a File,
    pub bs: u64,
    pub iodepth: u32,
    pub mem_align: usize,
    pub fsync: bool,
    pub deadline: Instant,
    /// Ctrl-C.
    pub stop: &'a AtomicBool,
    /// A worker failed: everyone stops.
    pub halted: &'a AtomicBool,
}

impl Ctx<'_> {
    /// Whether to stop issuing I/O.
    pub(crate) fn stopping(&self, now: Instant) -> bool {
        now >= self.deadline
            || self.stop.load(Ordering::Relaxed)
            || self.halted.load(Ordering::Relaxed)
    }

    /// Makes every worker stop.
    pub(crate) fn halt(&self) {
        self.halted.store(true, Ordering::Relaxed);
    }

    /// A failed read or write: stop everyone and say what failed.
    pub(crate) fn fail(&self, op: workload::Op, off: u64, e: std::io::Error) -> DiskError {
        self.halt();
        engine_threads::io_error(op, off, e)
    }

    /// A failed fdatasync.
    pub(crate) fn fail_sync(&self, e: std::io::Error) -> DiskError {
        self.halt();
        DiskError::io("fdatasync", e)
    }
}

/// Runs a disk measurement. `stop` (set by Ctrl-C) ends it early: what was measured
/// is kept and the test file is still removed.
pub fn run(
    opts: &DiskOptions,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<DiskResult, DiskError> {
    let tf = file::prepare(opts, stop, &mut |d, t| obs.laying_out(d, t))?;
    if stop.load(Ordering::Relaxed) {
        return Err(DiskError::Interrupted);
    }
    let setup = setup_of(&tf, opts.engine)?;
    obs.started(&setup);
    let result = measure(opts, &tf, setup, Duration::ZERO, stop, obs);
    drop(tf);
    result
}

/// The engine to use (io_uring where it works, unless told otherwise) and the setup
/// a prepared file gives.
pub(crate) fn setup_of(tf: &file::TestFile, choice: DiskEngine) -> Result<Setup, DiskError> {
    let (engine, engine_note) = match choice {
        DiskEngine::Threads => (EngineKind::Threads, None),
        DiskEngine::Uring => {
            engine_uring::probe().map_err(DiskError::Uring)?;
            (EngineKind::Uring, None)
        }
        DiskEngine::Auto => match engine_uring::probe() {
            Ok(()) => (EngineKind::Uring, None),
            Err(e) => (
                EngineKind::Threads,
                Some(format!("io_uring unavailable ({e}), using threads")),
            ),
        },
    };
    Ok(Setup {
        file: tf.path.clone(),
        created: tf.created,
        size: tf.size,
        direct: tf.direct,
        align: (tf.mem_align, tf.offset_align),
        laid_out: tf.laid_out,
        engine,
        engine_note,
        warnings: tf.warnings.clone(),
    })
}

/// Keeps `opts.iodepth` I/Os of `opts.bs` in flight on a prepared file for
/// `opts.duration`, after `warmup` whose completions are not recorded (a throttle's
/// first burst, a device's first I/Os).
pub(crate) fn measure(
    opts: &DiskOptions,
    tf: &file::TestFile,
    setup: Setup,
    warmup: Duration,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<DiskResult, DiskError> {
    let engine = setup.engine;
    let halted = AtomicBool::new(false);
    let t0 = Instant::now() + warmup;
    let ctx = Ctx {
        file: &tf.file,
        bs: opts.bs,
        iodepth: opts.iodepth,
        mem_align: tf.mem_align as usize,
        fsync: opts.fsync,
        deadline: t0 + opts.duration,
        stop,
        halted: &halted,
    };
    let blocks = tf.size / opts.bs;
    let cursor = Arc::new(AtomicU64::new(0));
    let gen = |seed: u64| {
        OpGen::new(
            opts.pattern,
            opts.read_pct,
            opts.bs,
            blocks,
            cursor.clone(),
            seed,
        )
    };
    let (tx, rx) = mpsc::channel();
    let mut timeline = Vec::new();
    let mut per_second = Vec::new();
    let collected = std::thread::scope(|s| {
        let workers = match engine {
            EngineKind::Uring => {
                let (g, r) = (gen(0x9e37), Recorder::new(0, t0, tx.clone()));
                let ctx = &ctx;
                s.spawn(move || engine_uring::worker(ctx, g, r));
                1
            }
            EngineKind::Threads => {
                for w in 0..opts.iodepth as usize {
                    let (g, r) = (gen(0x9e37 + w as u64), Recorder::new(w, t0, tx.clone()));
                    let ctx = &ctx;
                    s.spawn(move || engine_threads::worker(ctx, g, r, w as u64));
                }
                opts.iodepth as usize
            }
        };
        drop(tx);
        let mut cpu = CpuClock::start();
        recorder::collect(rx, workers, &mut |sec| {
            let mut stats = SecondStats::from_hists(sec, opts.bs, 1.0);
            (stats.cpu_pct, stats.cpu_wait_pct) = cpu.lap();
            obs.second(&stats, sec);
            timeline.push(stats);
            per_second.extend(result::stored(&sec.hists, Some(sec.t)));
        })
    });
    if let Some(e) = collected.error {
        return Err(e);
    }
    let elapsed = collected
        .end
        .map(|e| e.saturating_duration_since(t0))
        .unwrap_or(Duration::ZERO)
        .min(opts.duration);
    let interrupted = stop.load(Ordering::Relaxed) && elapsed < opts.duration;
    Ok(DiskResult::new(
        opts.clone(),
        setup,
        elapsed,
        interrupted,
        collected.totals,
        timeline,
        per_second,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects what the engine hands its observer.
    #[derive(Default)]
    struct Seen {
        started: bool,
        seconds: Vec<(SecondStats, u64, u64)>,
    }

    impl Observer for Seen {
        fn started(&mut self, _: &Setup) {
            self.started = true;
        }
        fn second(&mut self, s: &SecondStats, h: &SecondHists) {
            self.seconds.push((*s, h.read().len(), h.write().len()));
        }
    }

    /// The live feed: each closed second reaches the observer in order with its
    /// histograms (their counts are the second's I/Os, and add up to the run's) and
    /// latscope's CPU over that second.
    #[test]
    fn each_second_reaches_the_observer_with_its_histograms_and_cpu() {
        let dir = std::env::temp_dir().join(format!("latscope-disk-feed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = DiskOptions {
            path: dir.clone(),
            pattern: Pattern::RandRead,
            read_pct: 100,
            bs: 4096,
            iodepth: 2,
            size: Some(4 << 20),
            duration: Duration::from_millis(2200),
            direct: DirectMode::Off,
            fsync: false,
            precondition: false,
            allow_write: false,
            engine: DiskEngine::Auto,
            suite: false,
            layout_budget: None,
        };
        let mut seen = Seen::default();
        let r = run(&opts, &AtomicBool::new(false), &mut seen).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(seen.started);
        let ts: Vec<u32> = seen.seconds.iter().map(|s| s.0.t).collect();
        assert_eq!(&ts[..2], &[0, 1], "{ts:?}");
        let mut reads = 0;
        for (s, read, write) in &seen.seconds {
            assert_eq!(s.read_ios, *read);
            assert_eq!(*write, 0);
            let cpu = s.cpu_pct.expect("the process CPU clock is readable");
            assert!((0.0..=100.0 * 1024.0).contains(&cpu), "{cpu}");
            reads += read;
        }
        assert!(reads > 0);
        assert_eq!(reads, r.read().ios);
    }
}
