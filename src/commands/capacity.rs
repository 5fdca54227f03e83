//! `latscope load --find-max OBJECTIVE`: runs the search (`pipeline::capacity`; its
//! flags are checked by `config::load`) shown on the progress line, prints the answer
//! and the steps (or `--json`), saves the search as one load run (its steps, their
//! histograms, one joined timeline), and picks the exit code: 99 when the objectives
//! fail even at the lowest level, 1 when every request failed there.

use anyhow::Context;

use super::saving::{self, NewRun};
use crate::config::OutputConfig;
use crate::error::exit;
use crate::load::search::{self, SearchPlan, Stopped};
use crate::load::LoadPlan;
use crate::pipeline::capacity::{self, CapacityError};
use crate::report;
use crate::report::progress::ProgressLine;

/// Runs `latscope load --find-max`.
pub fn run(
    base: LoadPlan,
    plan: SearchPlan,
    output: &OutputConfig,
    redact_headers: &[String],
) -> anyhow::Result<u8> {
    let interrupt = super::interrupt::Interrupt::install()?;
    // A step that overruns its budget is cut at the deadline, as Ctrl-C would.
    interrupt.deadline(plan.max_time);
    let header = report::capacity::header(&base, &plan);
    if !output.json {
        let _ = super::output::say(&header);
    }
    let mut line = ProgressLine::stderr();
    let ran = capacity::run(&base, &plan, &interrupt.flag, &mut line);
    line.clear();
    let c = match ran {
        Ok(c) => c,
        Err(CapacityError::NoStep) => anyhow::bail!(
            "{} before the first step ended: nothing to report",
            interrupt.reason()
        ),
        Err(CapacityError::Load(e)) => return Err(e).context("the load run failed"),
    };
    let summary_text = report::capacity::summary(&c.search, &c.answer);
    let findings_text = if c.findings.is_empty() {
        String::new()
    } else {
        format!("\n{}", report::findings::render(&c.findings))
    };
    let timeline = crate::schema::to_value(&c.doc.timeline);
    let doc = crate::schema::to_value(&c.doc);
    let saved = saving::save(
        output,
        NewRun {
            kind: "load",
            target: base.target.url.clone(),
            started: c.started,
            duration_s: c.duration_s,
            config: crate::schema::to_value(&c.config),
            timeline,
            summary: doc.clone(),
            findings: serde_json::to_value(&c.findings)?,
            text: format!("{header}{summary_text}{findings_text}"),
            histograms: c.histograms,
            secret_headers: redact_headers.to_vec(),
        },
    );
    super::output::print(output.json, &doc, &format!("{summary_text}{findings_text}"))?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(verdict(&c.search, &c.answer)))
}

/// The exit code the search earns: 1 when every request of the lowest step failed,
/// 99 when the objectives fail even at the lowest level, else 0.
fn verdict(s: &search::Search, answer: &str) -> u8 {
    if s.stopped != Stopped::LowestFailed {
        return exit::OK;
    }
    let r = &s.steps[0].result;
    if r.requests > 0 && r.ok == 0 {
        let kinds: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        eprintln!(
            "latscope: error: every request failed ({})",
            kinds.join(", ")
        );
        return exit::RUN_FAILED;
    }
    if r.requests == 0 {
        eprintln!("latscope: error: no request completed");
        return exit::RUN_FAILED;
    }
    eprintln!("latscope: objective failed: {answer}");
    exit::THRESHOLD
}
