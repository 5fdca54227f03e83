//! `latscope diagnose URL...` (and `latscope URL`): probe, cache audit, a short load
//! ramp where it is allowed, then the findings and "where the time goes", bounded in
//! time (`pipeline::diagnose`). The demo runs the same steps against the lab.

use std::time::SystemTime;

use serde_json::{json, Value};

use crate::cli::DiagnoseArgs;
use crate::config::{DiagnoseConfig, DiagnoseRun, OutputConfig};
use crate::diagnose::diagnosis::Diagnosis;
use crate::diagnose::Finding;
use crate::net::Target;
use crate::pipeline;
use crate::report;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun as DiagnoseDocs};

use super::interrupt::Interrupt;
use super::saving::{self, NewRun};

/// Runs `latscope diagnose`.
pub fn run(args: DiagnoseArgs) -> anyhow::Result<u8> {
    // Known before the ramps, so the series written while they go carry it.
    let run_id = crate::store::new_id();
    let DiagnoseRun {
        urls,
        targets,
        max_time,
        config: mut plan,
        output,
        redact_headers,
    } = DiagnoseRun::from_args(&args, &run_id)?;
    plan.live = crate::report::live::wanted(output.json, output.no_tui);
    let started = SystemTime::now();
    let interrupt = Interrupt::install()?;
    interrupt.deadline(max_time);
    let mut results = Vec::new();
    let mut failures = Vec::new();
    let mut entries = Vec::new();
    for target in &targets {
        if interrupt.stop.is_stopped() && !results.is_empty() {
            // Not reached before Ctrl-C or --max-time: kept in its place.
            let why = format!("not measured: {}", interrupt.reason());
            entries.push(failed_entry(&target.url, &why));
            continue;
        }
        match diagnose_url(&interrupt, target, &plan) {
            Ok(d) => {
                entries.push(DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(&d))));
                results.push(d);
            }
            Err(e) => {
                entries.push(failed_entry(&target.url, &format!("{e:#}")));
                failures.push((target.url.clone(), e));
            }
        }
    }
    if results.is_empty() {
        let (url, e) = failures.remove(0);
        return Err(e.context(format!("diagnosing {url}")));
    }
    let text = render_text(&results);
    let doc = crate::schema::to_value(&DiagnoseDocs::of(entries, targets.len() > 1));
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let mut record = record(
        &output,
        &results,
        doc.clone(),
        text.clone(),
        started,
        &urls,
        &redact_headers,
    );
    record.id = run_id;
    let saved = saving::save_record(&output, &record);
    super::output::print(output.json, &doc, &text)?;
    super::output::say_saved(output.json, &saved)?;
    for (url, e) in &failures {
        eprintln!(
            "latscope: {}",
            super::output::clean(&format!("{url}: {e:#}"))
        );
    }
    Ok(saved.exit_code(if failures.is_empty() { 0 } else { 1 }))
}

/// Diagnoses one URL (`pipeline::diagnose`), shown while it goes: its steps on the
/// progress line, its ramp in the live view when wanted, and to `--out`, whose
/// reports go into the ramp's document.
pub(crate) fn diagnose_url(
    interrupt: &Interrupt,
    target: &Target,
    plan: &DiagnoseConfig,
) -> anyhow::Result<Diagnosis> {
    let mut shown = super::observing::Diagnosing::new(interrupt, target, plan);
    let ran = pipeline::diagnose::run(&interrupt.runtime, target, plan, interrupt, &mut shown);
    let reports = shown.finish();
    let mut d = ran.map_err(anyhow::Error::new)?;
    if let Some(r) = d.ramp.as_mut() {
        r.outputs = reports;
    }
    Ok(d)
}

/// A URL that could not be diagnosed, as an entry of `results`.
fn failed_entry(url: &str, error: &dyn std::fmt::Display) -> DiagnoseEntry {
    DiagnoseEntry::Failed {
        url: url.to_string(),
        error: error.to_string(),
    }
}

/// The text of one or several diagnoses, verdicts first (`report::diagnose`).
pub(crate) fn render_text(results: &[Diagnosis]) -> String {
    match results {
        [one] => {
            let mut text = report::diagnose::render(one);
            text.push('\n');
            text
        }
        several => report::diagnose::render_several(several),
    }
}

/// The run record of a diagnosis (what is saved and what the HTML report renders).
pub(crate) fn record(
    output: &OutputConfig,
    results: &[Diagnosis],
    doc: Value,
    text: String,
    started: SystemTime,
    urls: &[String],
    secret_headers: &[String],
) -> crate::store::RunRecord {
    let findings: Vec<&Finding> = results.iter().flat_map(|d| &d.findings).collect();
    let mut histograms = Vec::new();
    let mut timeline = Value::Null;
    if let Some(r) = results.iter().find_map(|d| d.ramp.as_ref()) {
        histograms = r.histograms.clone();
        timeline = crate::schema::to_value(&crate::schema::capacity::joined_rows(&r.timeline));
    }
    saving::record(
        output,
        NewRun {
            kind: "diagnose",
            target: urls.join(" "),
            started,
            duration_s: started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0),
            config: json!({"urls": urls}),
            summary: doc,
            timeline,
            findings: serde_json::to_value(&findings).unwrap_or_default(),
            text,
            histograms,
            secret_headers: secret_headers.to_vec(),
        },
    )
}
