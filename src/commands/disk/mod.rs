//! `latscope disk PATH`: measure storage latency, find what the numbers say
//! (`disk-tail`, `slow-fsync`), print text or the disk JSON, save the run. On a
//! terminal the measurement is shown in the full-screen live view (the progress
//! line with `--json`, `--no-tui`, `TERM=dumb` or when stdout or stderr is not a
//! terminal). Ctrl-C (or `q` in the view) ends the measurement early: what was
//! measured is still printed and saved, and the test file is removed.

mod printer;
mod signals;

use std::time::SystemTime;

use crate::cli::DiskArgs;
use crate::config::DiskConfig;
use crate::diagnose::{self, disk_verdict, Facts};
use crate::disk::{self, DiskOptions};
use crate::report;
use crate::report::live;
use crate::report::progress::ProgressLine;
use crate::usage;

use super::saving::{self, NewRun};
use printer::Printer;
use signals::STOP;

/// Runs `latscope disk`.
pub fn run(args: DiskArgs) -> anyhow::Result<u8> {
    let DiskConfig {
        options: opts,
        output,
    } = DiskConfig::from_args(&args)?;
    signals::register_test_file(&opts.path);
    signals::catch_signals();
    let started = SystemTime::now();
    let mut printer = Printer {
        opts: &opts,
        json: output.json,
        line: ProgressLine::stderr(),
        live: live::wanted(output.json, output.no_tui),
        view: None,
        total_s: opts.duration.as_secs_f64().ceil() as u64,
        header: String::new(),
        last_layout: None,
        suite: opts.suite,
        current: String::new(),
    };
    if opts.suite {
        return run_suite(&output, &opts, started, printer);
    }
    let outcome = disk::run(&opts, &STOP, &mut printer);
    if let Some(view) = printer.view.take() {
        // The terminal back before the summary (and any error) is printed.
        view.finish();
    } else {
        printer.line.clear();
    }
    let result = measured(outcome)?;

    let (findings, verdict, doc) = judge(
        diagnose::from_disk::disk_facts(&result),
        crate::schema::DiskDoc::from(&result),
    )?;
    let body = format!(
        "\n{}{}",
        report::disk_suite::verdict_text(&verdict),
        report::disk::render(&result, &findings)
    );
    let text = format!("{}{body}", printer.header);
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let saved = saving::save(
        &output,
        NewRun {
            kind: "disk",
            target: opts.path.display().to_string(),
            started,
            duration_s: result.elapsed.as_secs_f64(),
            config: crate::schema::to_value(&crate::schema::DiskConfigDoc::of(
                &opts,
                result.setup.size,
            )),
            summary: doc.clone(),
            timeline: crate::schema::to_value(&crate::schema::disk::timeline(&result)),
            findings: serde_json::to_value(&findings)?,
            text,
            histograms: result.histograms(),
            secret_headers: Vec::new(),
        },
    );
    // The verdict first (DESIGN.md, fourth wave), the rest in their usual order.
    super::output::print_first(output.json, doc, "verdict", &body)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}

/// A measurement's result, or its error as the exit code wants it: the user's
/// mistake a usage error (exit 2), else a run failure (exit 1).
fn measured<T>(outcome: Result<T, disk::DiskError>) -> anyhow::Result<T> {
    outcome.map_err(|e| {
        if e.is_usage() {
            usage!("{e}")
        } else {
            anyhow::Error::new(e)
        }
    })
}

/// The findings and the verdict of a disk run's facts, and its document with both.
fn judge(
    disk: diagnose::facts::DiskFacts,
    mut doc: crate::schema::DiskDoc,
) -> anyhow::Result<(
    Vec<diagnose::Finding>,
    disk_verdict::DiskVerdict,
    serde_json::Value,
)> {
    let facts = Facts {
        disk: Some(disk),
        ..Facts::default()
    };
    let findings = diagnose::run_rules(&facts);
    let verdict = disk_verdict::verdict(facts.disk.as_ref().expect("disk facts"), &findings);
    doc.findings = findings.clone();
    doc.verdict = Some(serde_json::to_value(&verdict)?);
    Ok((findings, verdict, crate::schema::to_value(&doc)))
}

/// Runs the database suite (no workload flags): its workloads and the commit test,
/// the verdict first, then what was measured.
fn run_suite(
    output: &crate::config::OutputConfig,
    opts: &DiskOptions,
    started: SystemTime,
    mut printer: Printer<'_>,
) -> anyhow::Result<u8> {
    let outcome = disk::suite::run(opts, &STOP, &mut printer);
    printer.line.clear();
    let result = measured(outcome)?;
    let (findings, verdict, doc) = judge(
        diagnose::from_disk::suite_facts(&result),
        crate::schema::DiskDoc::from(&result),
    )?;
    let text = report::disk_suite::render_suite(&result, &verdict, &findings);
    let saved = saving::save(
        output,
        NewRun {
            kind: "disk",
            target: opts.path.display().to_string(),
            started,
            duration_s: result.elapsed.as_secs_f64(),
            config: serde_json::json!({
                "path": opts.path.display().to_string(),
                "pattern": "suite",
                "size": result.setup.size,
                "direct": format!("{:?}", opts.direct).to_lowercase(),
                "write": opts.allow_write,
                "engine": format!("{:?}", opts.engine).to_lowercase(),
            }),
            summary: doc.clone(),
            timeline: doc["timeline"].clone(),
            findings: serde_json::to_value(&findings)?,
            text: text.clone(),
            histograms: result.histograms(),
            secret_headers: Vec::new(),
        },
    );
    super::output::print_first(output.json, doc, "verdict", &text)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}
