//! The one-line progress on a terminal's stderr, redrawn in place (`\r`, erase the
//! line): the [`Observer`] every command shows a run with when the live view is not
//! wanted, and the line `disk` draws its own seconds on. Nothing is written when
//! stderr is not a terminal.

use std::io::{IsTerminal, Write};

use crate::load::Progress;
use crate::observe::{Observer, Step, StepDone};
use crate::units::fmt_ms;

/// Carriage return, then erase the whole line.
const REDRAW: &str = "\r\x1b[2K";

/// The progress line. Seconds of a step (a capacity search's) read
/// "step 2: 40 req/s · 3s/5s · …", other seconds as `load`'s line; a judged step
/// stays in the scrollback as its own line.
pub struct ProgressLine<W: Write = std::io::Stderr> {
    out: W,
    on: bool,
    shown: bool,
    step: Option<(usize, String)>,
}

/// `--quiet`: no progress line, no live view, no "saved as run" line.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets `--quiet` for the process (`commands::run`, once).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

impl ProgressLine {
    /// On stderr, drawn only when stderr is a terminal and not `--quiet`.
    pub fn stderr() -> ProgressLine {
        let on = std::io::stderr().is_terminal() && !quiet();
        ProgressLine::to(std::io::stderr(), on)
    }
}

impl<W: Write> ProgressLine<W> {
    /// On `out`, drawn only when `on`.
    pub fn to(out: W, on: bool) -> ProgressLine<W> {
        ProgressLine {
            out,
            on,
            shown: false,
            step: None,
        }
    }

    /// Whether the line is drawn at all (stderr is a terminal).
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Draws `text` in place of what the line showed.
    pub fn show(&mut self, text: &str) {
        if self.on {
            let _ = write!(self.out, "{REDRAW}{text}");
            let _ = self.out.flush();
            self.shown = true;
        }
    }

    /// Erases the line, when something is on it.
    pub fn clear(&mut self) {
        if self.shown {
            let _ = write!(self.out, "{REDRAW}");
            let _ = self.out.flush();
            self.shown = false;
        }
    }

    /// What was written (for tests).
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Observer<Progress> for ProgressLine<W> {
    fn step(&mut self, step: &Step) {
        self.step = Some((step.index, step.level.clone()));
    }

    fn second(&mut self, p: &Progress) {
        let line = match &self.step {
            Some((index, level)) => super::capacity::progress_line(*index, level, p),
            None => super::load::progress_line(p),
        };
        self.show(&line);
    }

    fn step_done(&mut self, d: &StepDone) {
        if self.on {
            let verdict = if d.pass { "pass" } else { "FAIL" };
            let _ = writeln!(
                self.out,
                "{REDRAW}step {}: {} · {:.1} req/s · p99 {} · {verdict}",
                d.index + 1,
                d.level,
                d.rps,
                fmt_ms(d.p99_ms)
            );
            let _ = self.out.flush();
            self.shown = false;
        }
    }

    fn message(&mut self, text: &str) {
        if text.is_empty() {
            self.clear();
        } else {
            self.show(&crate::redact::for_output(text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(line: ProgressLine<Vec<u8>>) -> String {
        String::from_utf8(line.into_inner()).unwrap()
    }

    /// Each message redraws the line in place; an empty one erases it; a judged
    /// step stays as a line of its own; off a terminal nothing is written.
    #[test]
    fn the_line_redraws_in_place_and_keeps_judged_steps() {
        let mut line = ProgressLine::to(Vec::new(), true);
        line.message("a: probing…");
        line.message("a: cache audit…");
        line.message("");
        line.message("");
        line.step(&Step {
            index: 1,
            of: None,
            level: "40 req/s".into(),
            connections: None,
        });
        line.step_done(&StepDone {
            index: 1,
            level: "40 req/s".into(),
            rps: 39.96,
            p99_ms: 12.0,
            pass: false,
        });
        line.clear();
        assert_eq!(
            shown(line),
            "\r\x1b[2Ka: probing…\r\x1b[2Ka: cache audit…\r\x1b[2K\
             \r\x1b[2Kstep 2: 40 req/s · 40.0 req/s · p99 12.0 ms · FAIL\n"
        );
        let mut off = ProgressLine::to(Vec::new(), false);
        off.message("a: probing…");
        off.clear();
        assert_eq!(shown(off), "");
    }
}
