//! How a command shows a run while it goes: the live view when it is wanted and the
//! terminal takes it, else the progress line; `--out` beside either; `--watch`'s
//! server rows put into each second before any of them sees it.

use crate::load::Progress;
use crate::net::Target;
use crate::observe::{Fanout, Observer, Step, StepDone};
use crate::output::Live;
use crate::report::live::LiveView;
use crate::watch::Watcher;

/// `--out` first, then the view or (without one) the line (the progress line, or
/// diagnose's [`RampLine`]).
pub(crate) fn shown_by<'a>(
    out: Option<&'a mut Live>,
    view: Option<&'a mut LiveView>,
    line: &'a mut dyn Observer<Progress>,
) -> Fanout<'a, Progress> {
    let mut all: Vec<&'a mut dyn Observer<Progress>> = Vec::new();
    if let Some(o) = out {
        all.push(o);
    }
    match view {
        Some(v) => all.push(v),
        None => all.push(line),
    }
    Fanout(all)
}

/// Hands each second on with the `--watch` server rows scraped so far.
pub(crate) struct Watching<'a> {
    pub watcher: Option<&'a Watcher>,
    pub inner: &'a mut dyn Observer<Progress>,
}

impl Observer<Progress> for Watching<'_> {
    fn step(&mut self, step: &Step) {
        self.inner.step(step);
    }

    fn second(&mut self, p: &Progress) {
        let Some(w) = self.watcher else {
            return self.inner.second(p);
        };
        w.align(p.started);
        // The server rows scraped so far, for what watches the run live.
        match p.seconds.last() {
            Some(last) => {
                let rows = w.seconds_so_far(p.started, last.second.t as usize + 1);
                self.inner.second(&super::watching::with_server(p, &rows));
            }
            None => self.inner.second(p),
        }
    }

    fn step_done(&mut self, done: &StepDone) {
        self.inner.step_done(done);
    }

    fn message(&mut self, text: &str) {
        self.inner.message(text);
    }
}

/// Diagnose's ramp on the line its other steps are said on: each step by its
/// connections ("URL: load ramp, 4 connections…"), its seconds left unsaid.
pub(crate) struct RampLine<'a> {
    pub target: &'a Target,
    pub say: &'a mut dyn FnMut(&str),
}

impl Observer<Progress> for RampLine<'_> {
    fn step(&mut self, step: &Step) {
        (self.say)(&format!("{}: load ramp, {}…", self.target, step.level));
    }
}
