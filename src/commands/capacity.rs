//! `latscope load --find-max OBJECTIVE`: runs the search (`load::search`; its flags
//! are checked by `config::load`) with a progress line on a terminal, prints the answer and the
//! steps (or `--json`), saves the search as one load run (its steps, their
//! histograms, one joined timeline), and picks the exit code: 99 when the objectives
//! fail even at the lowest level, 1 when every request failed there.

use std::io::IsTerminal;

use anyhow::Context;

use super::saving::{self, NewRun};
use crate::config::OutputConfig;
use crate::diagnose::{self, Facts};
use crate::error::exit;
use crate::load::capacity::{self, Joined};
use crate::load::search::{self, Event, SearchPlan, Stopped};
use crate::load::LoadPlan;
use crate::report;
use crate::schema::plan::FindMaxConfig;
use crate::schema::{CapacityDoc, LoadDoc, PlanDoc, StepDoc};

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
    let stop = interrupt.flag.clone();
    let tty = std::io::stderr().is_terminal();
    let header = report::capacity::header(&base, &plan);
    if !output.json {
        let _ = super::output::say(&header);
    }
    let mut shown = false;
    let mut current = (0usize, String::new());
    let result = search::run(&base, &plan, &stop, &mut |e| {
        if !tty {
            return;
        }
        match e {
            Event::Start { index, level } => current = (index, level.to_string()),
            Event::Progress(p) => {
                eprint!(
                    "\r\x1b[2K{}",
                    report::capacity::progress_line(current.0, &current.1, p)
                );
                shown = true;
            }
            Event::Done(step) => {
                let verdict = if step.pass() { "pass" } else { "FAIL" };
                eprint!(
                    "\r\x1b[2Kstep {}: {} · {:.1} req/s · p99 {} · {verdict}\n",
                    current.0 + 1,
                    current.1,
                    step.achieved_rps(),
                    crate::units::fmt_ms(step.window.latency.value_at_quantile(0.99) as f64 / 1e6)
                );
                shown = false;
            }
        }
    });
    if shown {
        eprint!("\r\x1b[2K");
    }
    let s = result.context("the load run failed")?;
    if s.steps.is_empty() {
        anyhow::bail!(
            "{} before the first step ended: nothing to report",
            interrupt.reason()
        );
    }
    let answer = report::capacity::answer(&s);
    // The run's top-level numbers are the capacity step's (the lowest step's when
    // none passed), so `compare` sets searches side by side at their capacity.
    let shown_step = s.capacity().unwrap_or(&s.steps[0]);
    let r = &shown_step.result;
    let facts = Facts {
        load: Some(diagnose::from_load::load_facts(r)),
        ..Default::default()
    };
    let findings = diagnose::run_rules(&facts);
    let mut joined = Joined::default();
    let mut steps = Vec::new();
    let mut histograms: Vec<_> = r
        .histograms()
        .into_iter()
        .filter(|h| h.second.is_none())
        .collect();
    for (i, st) in s.steps.iter().enumerate() {
        let t = joined.push(i, st, None, false);
        steps.push(StepDoc::of(st, t));
        histograms.extend(capacity::step_histograms(st));
    }
    if let Some(st) = &s.interrupted {
        joined.push(s.steps.len(), st, None, true);
    }
    histograms.extend(std::mem::take(&mut joined.histograms));
    let mut doc = LoadDoc::from(r);
    doc.findings = findings.clone();
    doc.timeline = crate::schema::capacity::joined_rows(&joined.timeline);
    doc.steps = Some(steps);
    let capacity = CapacityDoc::of(&s, &answer);
    let model = capacity.model.clone();
    doc.capacity = Some(capacity);
    let summary_text = report::capacity::summary(&s, &answer);
    let findings_text = if findings.is_empty() {
        String::new()
    } else {
        format!("\n{}", report::findings::render(&findings))
    };
    let text = format!("{header}{summary_text}{findings_text}");
    let mut config = PlanDoc::from(&base);
    config.find_max = Some(FindMaxConfig {
        objectives: plan.objectives.iter().map(|o| o.expr.clone()).collect(),
        model,
        min: plan.min,
        max: plan.max,
        precision_pct: plan.precision * 100.0,
        step_s: plan.step.as_secs_f64(),
        settle_s: plan.settle.as_secs_f64(),
        max_time_s: plan.max_time.as_secs_f64(),
        early_stop: plan.early_stop,
    });
    let timeline = crate::schema::to_value(&doc.timeline);
    let doc = crate::schema::to_value(&doc);
    let started = s.steps[0].result.started;
    let duration_s = joined.offset as f64;
    let saved = saving::save(
        output,
        NewRun {
            kind: "load",
            target: base.target.url.clone(),
            started,
            duration_s,
            config: crate::schema::to_value(&config),
            timeline,
            summary: doc.clone(),
            findings: serde_json::to_value(&findings)?,
            text,
            histograms,
            secret_headers: redact_headers.to_vec(),
        },
    );
    super::output::print(output.json, &doc, &format!("{summary_text}{findings_text}"))?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(verdict(&s, &answer)))
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
