//! `latscope load`: builds the plan from flags (and `-f FILE`), runs it with a
//! progress line on a terminal, prints the summary (or `--json`), runs the finding
//! rules, saves the run, and picks the exit code (99 when a threshold failed, 1 when
//! every request failed). Ctrl-C or SIGTERM stops the run cleanly; what was measured is printed
//! and saved.

use std::io::IsTerminal;

use anyhow::Context;

use super::saving::{self, NewRun};
use crate::cli::LoadArgs;
use crate::diagnose::{self, Facts};
use crate::error::exit;
use crate::load::{self, LoadPlan, PlanError};
use crate::report;
use crate::usage;

/// Runs `latscope load`.
pub fn run(args: LoadArgs) -> anyhow::Result<u8> {
    super::capacity::check_flags_alone(&args)?;
    if !args.find_max.objectives.is_empty() {
        return super::capacity::run(args);
    }
    let plan = LoadPlan::from_args(&args).map_err(|e| match e {
        PlanError::Usage(m) => usage!("{m}"),
        PlanError::Scenario(s) => usage!("{s}"),
    })?;
    let interrupt = super::interrupt::Interrupt::install()?;
    let stop = interrupt.flag.clone();
    let tty = std::io::stderr().is_terminal();
    if !args.output.json {
        // A stdout that cannot be written (`> /dev/full`) must not stop the run
        // before it is measured and saved; the final print reports the error.
        let _ = super::output::say(&report::load::header(&plan));
    }
    let mut shown = false;
    let result = load::run_with_progress(&plan, &stop, &mut |p| {
        if tty {
            eprint!("\r\x1b[2K{}", report::load::progress_line(p));
            shown = true;
        }
    });
    if shown {
        eprint!("\r\x1b[2K");
    }
    let result = result.context("the load run failed")?;

    let facts = Facts {
        load: Some(diagnose::from_load::load_facts(&result)),
        ..Default::default()
    };
    let findings = diagnose::run_rules(&facts);
    let mut doc = result.to_json();
    doc["findings"] = serde_json::to_value(&findings)?;
    let head_too_large = load::head_too_large();
    if head_too_large > 0 {
        eprintln!(
            "latscope: {head_too_large} responses had headers over {} KiB, latscope's limit for every command (counted as protocol errors)",
            crate::net::http::MAX_RESPONSE_HEAD / 1024
        );
    }
    let fd_exhausted = load::fd_exhausted();
    if fd_exhausted > 0 {
        // Named, not left as bare "connect" errors.
        doc["connect_fd_exhausted"] = serde_json::json!(fd_exhausted);
        eprintln!(
            "latscope: {fd_exhausted} connects failed: too many open files (EMFILE): the open-file limit (ulimit -n) is {}; raise it or lower -c",
            load::plan::fd_limit()
        );
    }
    let text = format!(
        "{}{}",
        report::load::header(&plan),
        report::load::summary(&result, &findings)
    );
    let secret_headers = args.http.redact_headers.clone();
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let saved = saving::save(
        &args.output,
        NewRun {
            kind: "load",
            target: plan.target.url.clone(),
            started: result.started,
            duration_s: result.elapsed.as_secs_f64(),
            config: plan.to_json(),
            timeline: result.timeline_json(),
            summary: doc.clone(),
            findings: serde_json::to_value(&findings)?,
            text,
            histograms: result.histograms(),
            secret_headers,
        },
    );
    super::output::print(
        args.output.json,
        &doc,
        &report::load::summary(&result, &findings),
    )?;
    if let Some(id) = saved.id() {
        if !args.output.json {
            super::output::say(&format!("\n  saved as run {id}\n"))?;
        }
    }
    Ok(saved.exit_code(verdict(&result)))
}

/// The exit code the run itself earns: 1 when every request failed or none
/// completed, 99 when a threshold failed, else 0.
fn verdict(result: &load::LoadResult) -> u8 {
    if result.requests > 0 && result.ok == 0 && !result.aborted {
        let kinds: Vec<String> = result
            .errors
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        eprintln!(
            "latscope: error: every request failed ({})",
            kinds.join(", ")
        );
        return exit::RUN_FAILED;
    }
    if result.requests == 0 && !result.aborted {
        eprintln!("latscope: error: no request completed");
        return exit::RUN_FAILED;
    }
    if !result.thresholds_ok() {
        let failed: Vec<String> = result
            .thresholds
            .iter()
            .filter(|v| !v.ok)
            .map(|v| match &v.endpoint {
                Some(e) => format!("{} [{e}]", v.expr),
                None => v.expr.clone(),
            })
            .collect();
        eprintln!("latscope: threshold failed: {}", failed.join(", "));
        return exit::THRESHOLD;
    }
    exit::OK
}
