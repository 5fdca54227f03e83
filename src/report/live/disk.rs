//! What the disk live view shows, accumulated from the disk engine's once-a-second
//! feed ([`crate::disk::Observer::second`]): the run's fixed description (file,
//! workload, queue depth, engine, planned length), one point per closed second for
//! the charts (the latency of reads and writes together, and IOPS), per operation
//! (read, write, fdatasync) the I/Os and latency histograms so far, and latscope's
//! own CPU. Plain data, so the widgets can be tested on a fixed state.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::{chrome, Keys, Screen};
use crate::disk::{self, DiskOptions, Pattern, SecondHists, SecondStats};
use crate::report::disk::header;
use crate::stats::histogram::new_histogram;
use crate::units::fmt_bytes;

/// What the run is, fixed for its whole length.
#[derive(Debug, Clone)]
pub struct DiskSetup {
    /// "latscope disk /srv/db" (the path as given).
    pub title: String,
    /// "randread · bs 4.0 KiB · iodepth 32 · io_uring · direct I/O".
    pub workload: String,
    /// The file measured.
    pub file: String,
    /// The setup's details, a line each: what the file is, warnings.
    pub notes: Vec<String>,
    /// Planned length.
    pub length: Duration,
    /// Block size, bytes (IOPS × bs = bandwidth).
    pub bs: u64,
    /// Which operations the run does: reads, writes, fdatasyncs.
    pub ops: [bool; 3],
    /// CPUs of the machine (latscope's CPU is shown against `cores` × 100 %).
    pub cores: usize,
}

impl DiskSetup {
    /// The description of a run of `opts`, once its file is ready (`setup`).
    pub fn new(opts: &DiskOptions, setup: &disk::Setup) -> DiskSetup {
        let what = match opts.pattern {
            Pattern::RandRw => format!("randrw {}% reads", opts.read_pct),
            p => p.name().to_string(),
        };
        let workload = format!(
            "{what} · bs {} · iodepth {} · {} · {}{}",
            fmt_bytes(opts.bs),
            opts.iodepth,
            setup.engine.name(),
            if setup.direct {
                "direct I/O"
            } else {
                "buffered I/O"
            },
            if opts.fsync {
                " · fdatasync after writes"
            } else {
                ""
            },
        );
        // What the text header says of the file: "(256.0 MiB test file, …)".
        let text = header(opts, setup);
        let file_note = text
            .lines()
            .next()
            .and_then(|l| l.strip_suffix(')')?.rsplit_once(" (").map(|(_, n)| n))
            .unwrap_or_default()
            .to_string();
        let mut notes = vec![file_note];
        notes.extend(setup.warnings.iter().cloned());
        notes.extend(setup.engine_note.iter().cloned());
        DiskSetup {
            title: format!("latscope disk {}", opts.path.display()),
            workload,
            file: setup.file.display().to_string(),
            notes,
            length: opts.duration,
            bs: opts.bs,
            ops: [opts.pattern.reads(), opts.pattern.writes(), opts.fsync],
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Bytes as the view's MiB/s.
    pub fn mib_s(&self, ios_per_s: f64) -> f64 {
        ios_per_s * self.bs as f64 / (1024.0 * 1024.0)
    }
}

/// One closed second as the feed hands it over: its numbers and histograms.
#[derive(Debug, Clone)]
pub struct DiskSecond {
    pub stats: SecondStats,
    /// Latencies, ns: reads, writes, fdatasyncs.
    pub hists: [Histogram<u64>; 3],
}

impl DiskSecond {
    /// A copy of what the engine closed, to send to the view.
    pub fn new(stats: &SecondStats, h: &SecondHists) -> DiskSecond {
        DiskSecond {
            stats: *stats,
            hists: [h.read().clone(), h.write().clone(), h.fsync().clone()],
        }
    }
}

/// One closed second, as the charts draw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskPoint {
    /// Second of the run (0-based).
    pub t: u32,
    pub read_ios: u64,
    pub write_ios: u64,
    pub fsyncs: u64,
    /// Latency of the second's reads and writes together, µs.
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl DiskPoint {
    /// Reads and writes of the second.
    pub fn ios(&self) -> u64 {
        self.read_ios + self.write_ios
    }
}

/// One operation's totals so far.
#[derive(Debug, Clone)]
pub struct OpLive {
    /// `read`, `write` or `fdatasync`.
    pub name: &'static str,
    /// Latencies so far, ns.
    pub latency: Histogram<u64>,
}

/// Everything the disk view draws.
#[derive(Debug, Clone)]
pub struct DiskState {
    pub setup: DiskSetup,
    /// Closed seconds, in order.
    pub points: Vec<DiskPoint>,
    /// Time measured so far (the closed seconds).
    pub elapsed: Duration,
    /// Reads, writes, fdatasyncs so far.
    pub ops: [OpLive; 3],
    /// latscope's CPU in the last second, percent of one core.
    pub cpu_pct: Option<f64>,
    /// Pause, help, max line, stopping.
    pub keys: Keys,
}

impl DiskState {
    /// A state with nothing measured yet.
    pub fn new(setup: DiskSetup) -> DiskState {
        let op = |name| OpLive {
            name,
            latency: new_histogram(),
        };
        DiskState {
            setup,
            points: Vec::new(),
            elapsed: Duration::ZERO,
            ops: [op("read"), op("write"), op("fdatasync")],
            cpu_pct: None,
            keys: Keys::default(),
        }
    }

    /// Adds one closed second: its chart point, its histograms to the totals, its
    /// CPU.
    pub fn push(&mut self, s: &DiskSecond) {
        let mut io = s.hists[0].clone();
        let _ = io.add(&s.hists[1]);
        let us = |q: f64| {
            if io.is_empty() {
                0.0
            } else {
                io.value_at_quantile(q) as f64 / 1e3
            }
        };
        self.points.push(DiskPoint {
            t: s.stats.t,
            read_ios: s.stats.read_ios,
            write_ios: s.stats.write_ios,
            fsyncs: s.stats.fsyncs,
            p50_us: us(0.5),
            p99_us: us(0.99),
            max_us: us(1.0),
        });
        for (op, h) in self.ops.iter_mut().zip(&s.hists) {
            let _ = op.latency.add(h);
        }
        if s.stats.cpu_pct.is_some() {
            self.cpu_pct = s.stats.cpu_pct;
        }
        self.elapsed = Duration::from_secs(u64::from(s.stats.t) + 1).min(self.setup.length);
    }

    /// Reads and writes so far.
    pub fn ios(&self) -> u64 {
        self.ops[0].latency.len() + self.ops[1].latency.len()
    }

    /// The operations this run does, with their totals.
    pub fn shown_ops(&self) -> impl Iterator<Item = &OpLive> {
        self.ops
            .iter()
            .zip(self.setup.ops)
            .filter(|(op, on)| *on || !op.latency.is_empty())
            .map(|(op, _)| op)
    }

    /// The second the chart ends at: the pause point, or the newest second.
    pub fn chart_end(&self) -> u32 {
        self.keys.paused_at.unwrap_or_else(|| self.newest())
    }

    /// The x range the charts show, seconds (see [`chrome::x_range`]).
    pub fn x_range(&self, window: u32) -> (u32, u32) {
        chrome::x_range(Some(self.setup.length), self.chart_end(), window)
    }

    /// The points of the seconds in `range` (end excluded).
    pub fn visible(&self, range: (u32, u32)) -> &[DiskPoint] {
        chrome::visible(&self.points, range, |p| p.t)
    }
}

impl Screen for DiskState {
    fn draw(&self, frame: &mut ratatui::Frame) {
        super::disk_view::draw(frame, self);
    }

    fn keys(&mut self) -> &mut Keys {
        &mut self.keys
    }

    fn newest(&self) -> u32 {
        self.points.last().map_or(0, |p| p.t)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fixed state for the widget tests: a 30 s randrw run (70 % reads, 4 KiB,
    /// iodepth 8, fdatasync after writes), 10 s in; second 6 has a 40 ms stall.
    pub(crate) fn fixed() -> DiskState {
        let setup = DiskSetup {
            title: "latscope disk /srv/db".into(),
            workload: "randrw 70% reads · bs 4.0 KiB · iodepth 8 · io_uring · \
                       direct I/O · fdatasync after writes"
                .into(),
            file: "/srv/db/.latscope-disk-4242.tmp".into(),
            notes: vec!["256.0 MiB test file, removed afterwards".into()],
            length: Duration::from_secs(30),
            bs: 4096,
            ops: [true, true, true],
            cores: 2,
        };
        let mut st = DiskState::new(setup);
        for t in 0..10u32 {
            let mut hists = [new_histogram(), new_histogram(), new_histogram()];
            let (reads, writes) = (7000 + 100 * u64::from(t), 3000u64);
            for i in 0..reads {
                hists[0].saturating_record(80_000 + (i % 100) * 1_000);
            }
            for i in 0..writes {
                hists[1].saturating_record(150_000 + (i % 100) * 2_000);
                hists[2].saturating_record(900_000 + (i % 100) * 10_000);
            }
            if t == 6 {
                hists[1].saturating_record(40_000_000);
            }
            let stats = SecondStats {
                t,
                length_s: 1.0,
                read_ios: hists[0].len(),
                write_ios: hists[1].len(),
                fsyncs: hists[2].len(),
                bs: 4096,
                cpu_pct: Some(30.0 + f64::from(t)),
                ..Default::default()
            };
            st.push(&DiskSecond { stats, hists });
        }
        st
    }

    /// Seconds become points with the reads' and writes' latency together; the
    /// totals add up; the elapsed time follows the closed seconds.
    #[test]
    fn seconds_accumulate() {
        let st = fixed();
        assert_eq!(st.points.len(), 10);
        assert_eq!(st.elapsed, Duration::from_secs(10));
        assert_eq!(st.ops[0].latency.len(), 74_500);
        assert_eq!(st.ops[1].latency.len(), 30_001);
        assert_eq!(st.ios(), 104_501);
        assert!(st.points[6].max_us >= 39_000.0, "{:?}", st.points[6]);
        assert!(st.points[5].max_us < 1_000.0, "{:?}", st.points[5]);
        let p50 = st.points[0].p50_us;
        assert!((80.0..200.0).contains(&p50), "{p50}");
        assert_eq!(st.cpu_pct, Some(39.0));
        assert_eq!(st.x_range(120), (0, 30));
        assert_eq!(st.shown_ops().count(), 3);
    }
}
