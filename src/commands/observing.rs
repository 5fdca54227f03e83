//! How a command shows a run while it goes: the live view when it is wanted and the
//! terminal takes it, else the progress line; `--out` beside either; `--watch`'s
//! server rows put into each second before any of them sees it; a diagnosis shown
//! by [`Diagnosing`].

use crate::config::DiagnoseConfig;
use crate::load::Progress;
use crate::net::Target;
use crate::observe::{Fanout, Observer, Step, StepDone, Steps};
use crate::output::{Live, OutputReport};
use crate::report::live::{LiveView, Setup};
use crate::report::progress::ProgressLine;
use crate::watch::Watcher;

use super::interrupt::Interrupt;

/// `--out` first, then the view or (without one) the progress line.
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

/// How a diagnosis is shown while it goes: what it does on the progress line; its
/// ramp in the live view when wanted and the terminal takes it (the line quiet
/// meanwhile), and streamed to `--out`, whose reports [`Diagnosing::finish`] hands
/// back.
pub(crate) struct Diagnosing<'a> {
    line: ProgressLine,
    interrupt: &'a Interrupt,
    target: &'a Target,
    plan: &'a DiagnoseConfig,
    view: Option<LiveView>,
    sink: Option<Live>,
    reports: Vec<OutputReport>,
}

impl<'a> Diagnosing<'a> {
    pub fn new(
        interrupt: &'a Interrupt,
        target: &'a Target,
        plan: &'a DiagnoseConfig,
    ) -> Diagnosing<'a> {
        Diagnosing {
            line: ProgressLine::stderr(),
            interrupt,
            target,
            plan,
            view: None,
            sink: None,
            reports: Vec::new(),
        }
    }

    /// The line cleared, the view closed; what `--out` reported.
    pub fn finish(mut self) -> Vec<OutputReport> {
        self.end();
        self.line.clear();
        std::mem::take(&mut self.reports)
    }

    fn each(&mut self, f: impl Fn(&mut dyn Observer<Progress>)) {
        if let Some(o) = self.sink.as_mut() {
            f(o);
        }
        if let Some(v) = self.view.as_mut() {
            f(v);
        }
    }
}

impl Observer<Progress> for Diagnosing<'_> {
    fn begin(&mut self, steps: &Steps) {
        if self.plan.live {
            self.line.clear();
            let setup = Setup::ramp(&steps.url, steps.max_connections, steps.length, steps.of);
            self.view =
                LiveView::start(setup, self.interrupt.stopper(), self.interrupt.flag.clone()).ok();
        }
        let target = Target::parse(&steps.url).unwrap_or_else(|_| self.target.clone());
        self.sink = self.plan.out.as_ref().map(|o| o.start(&target));
    }

    fn step(&mut self, step: &Step) {
        self.each(|o| o.step(step));
    }

    fn second(&mut self, second: &Progress) {
        self.each(|o| o.second(second));
    }

    fn step_done(&mut self, done: &StepDone) {
        self.each(|o| o.step_done(done));
    }

    fn end(&mut self) {
        if let Some(v) = self.view.take() {
            v.finish();
        }
        if let Some(sink) = self.sink.take() {
            self.reports = sink.finish();
            for note in crate::output::notes(&self.reports) {
                eprintln!("latscope: {note}");
            }
        }
    }

    fn message(&mut self, text: &str) {
        // A line on the view's screen would smear it.
        if self.view.is_none() {
            Observer::<Progress>::message(&mut self.line, text);
        }
    }
}
