//! What `latscope disk` shows while it measures: the header when measuring starts,
//! then the full-screen live view or the progress line (the suite's workloads on
//! the progress line).

use std::io::Write;
use std::time::Instant;

use crate::disk::{DiskOptions, Observer, SecondHists, SecondStats, Setup};
use crate::report;
use crate::report::live::{disk::DiskSecond, DiskSetup, DiskState, LiveView};
use crate::report::progress::ProgressLine;

/// Prints the header when measuring starts, and progress on a terminal: the live
/// view when `live`, else the progress line.
pub(super) struct Printer<'a> {
    pub(super) opts: &'a DiskOptions,
    pub(super) json: bool,
    pub(super) line: ProgressLine,
    pub(super) live: bool,
    pub(super) view: Option<LiveView<DiskState>>,
    pub(super) total_s: u64,
    pub(super) header: String,
    pub(super) last_layout: Option<Instant>,
    /// The database suite runs: no live view, the header comes after the verdict.
    pub(super) suite: bool,
    /// The suite's workload under way, for the progress line.
    pub(super) current: String,
}

impl Observer for Printer<'_> {
    fn laying_out(&mut self, done: u64, total: u64) {
        if !self.line.is_on() {
            return;
        }
        let due = self
            .last_layout
            .is_none_or(|t| t.elapsed().as_millis() >= 100);
        if due || done == total {
            self.last_layout = Some(Instant::now());
            self.line.show(&report::disk::layout_progress(done, total));
        }
    }

    fn started(&mut self, setup: &Setup) {
        self.header = report::disk::header(self.opts, setup);
        self.line.clear();
        for w in setup.warnings.iter().chain(&setup.engine_note) {
            eprintln!("latscope: warning: {w}");
        }
        if !self.json && !self.suite {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(self.header.as_bytes());
            let _ = out.flush();
        }
        if self.live && !self.suite {
            // No view (a terminal that cannot take raw mode): the progress line.
            let state = DiskState::new(DiskSetup::new(self.opts, setup));
            self.view = LiveView::open(state, super::signals::stopper()).ok();
        }
    }

    fn workload(&mut self, i: usize, n: usize, name: &str, what: &str) {
        self.current = format!("[{}/{n}] {name}", i + 1);
        let text = format!("  {}: {what}", self.current);
        self.line.show(&text);
    }

    fn second(&mut self, s: &SecondStats, hists: &SecondHists) {
        if let Some(view) = &self.view {
            let second = DiskSecond::new(s, hists);
            view.update(move |st| st.push(&second));
        } else if self.suite {
            let text = format!("  {} {}", self.current, report::disk::progress_rates(s));
            self.line.show(&text);
        } else {
            self.line.show(&report::disk::progress(s, self.total_s));
        }
    }
}
