//! `latscope load`: builds the plan from flags (and `-f FILE`), runs it with a
//! progress line on a terminal, prints the summary (or `--json`), runs the finding
//! rules, saves the run, and picks the exit code (99 when a threshold failed, 1 when
//! every request failed). Ctrl-C or SIGTERM stops the run cleanly; what was measured is printed
//! and saved.

use anyhow::Context;

use super::saving;
use crate::cli::LoadArgs;
use crate::config::LoadConfig;
use crate::diagnose::{self, Facts};
use crate::error::exit;
use crate::load;
use crate::observe::Observer;
use crate::report;
use crate::report::live;
use crate::report::progress::ProgressLine;

use super::observing;

mod document;
mod follow;

use follow::follow_first;

/// Runs `latscope load`.
pub fn run(args: LoadArgs) -> anyhow::Result<u8> {
    let cfg = LoadConfig::from_args(&args)?;
    if let Some(search) = cfg.search {
        return super::capacity::run(cfg.plan, search, &cfg.output, &cfg.redact_headers);
    }
    let mut plan = cfg.plan;
    let start_at = cfg.start_at;
    let interrupt = super::interrupt::Interrupt::install()?;
    let redirects = follow_first(&mut plan, &cfg.redact_headers, &interrupt)?;
    // Known before the run, so the series written while it goes carry it.
    let run_id = crate::store::new_id();
    let mut sink = (!cfg.out.is_empty()).then(|| {
        cfg.out.start(&crate::output::RunLabels {
            run: run_id.clone(),
            label: cfg.output.label.clone(),
            target: crate::output::target_label(&plan.target),
            endpoints: plan.endpoints.iter().map(|e| e.name.clone()).collect(),
        })
    });
    let stop = interrupt.flag.clone();
    if !cfg.output.json {
        // A stdout that cannot be written (`> /dev/full`) must not stop the run
        // before it is measured and saved; the final print reports the error.
        let _ = super::output::say(&report::load::header(&plan));
        if !redirects.is_empty() {
            let _ = super::output::say(&report::load::redirects_line(&redirects));
        }
    }
    // The barrier of shards started apart: every one waits for the same instant.
    let mut start_late_ms = None;
    if let Some(at) = start_at {
        let Some(late) = load::shard::wait_until(at, &stop) else {
            eprintln!("latscope: stopped before --start-at; nothing was sent");
            return Ok(130);
        };
        start_late_ms = Some(late);
    }
    let watcher = super::watching::start(&cfg.watch);
    let mut live = if live::wanted(cfg.output.json, cfg.output.no_tui) {
        // No view (a terminal that cannot take raw mode): the progress line.
        live::LiveView::start(
            live::Setup::from_plan("load", &plan),
            interrupt.stopper(),
            stop.clone(),
        )
        .ok()
    } else {
        None
    };
    let mut line = ProgressLine::stderr();
    let mut shown = observing::shown_by(sink.as_mut(), live.as_mut(), &mut line);
    let mut obs = observing::Watching {
        watcher: watcher.as_ref(),
        inner: &mut shown,
    };
    let result = load::run_with_progress(&plan, &stop, &mut |p| obs.second(p));
    if let Some(view) = live {
        view.finish();
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            // Said here, not on the view's screen, so the scrollback keeps it.
            eprintln!("latscope: {}: kept what was measured", interrupt.reason());
        }
    }
    line.clear();
    let reports = sink.map(|l| l.finish()).unwrap_or_default();
    for note in crate::output::notes(&reports) {
        eprintln!("latscope: {note}");
    }
    let mut result = result.context("the load run failed")?;
    super::watching::attach(watcher, &mut result);

    let facts = Facts {
        load: Some(diagnose::from_load::load_facts(&result)),
        ..Default::default()
    };
    let findings = diagnose::run_rules(&facts);
    let config = crate::schema::PlanDoc::from(&plan);
    let doc = document::of(
        &result,
        &findings,
        &config,
        redirects,
        &reports,
        start_at.zip(start_late_ms),
    );
    let timeline = crate::schema::to_value(&doc.timeline);
    let doc = crate::schema::to_value(&doc);
    // The stored record (text, timeline, every second's histogram) is made only
    // when something keeps it: `--no-save` without `--export` skips it (issue 21:
    // a run's peak memory is at its end).
    let record = (!cfg.output.no_save || cfg.export.is_some())
        .then(|| {
            document::record(
                &cfg.output,
                &cfg.redact_headers,
                &plan,
                &result,
                &findings,
                &config,
                timeline,
                &doc,
                run_id,
            )
        })
        .transpose()?;
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let saved = match &record {
        Some(r) => saving::save_record(&cfg.output, r),
        None => saving::Saved::Skipped,
    };
    super::output::print(
        cfg.output.json,
        &doc,
        &report::load::summary(&result, &findings),
    )?;
    super::output::say_saved(cfg.output.json, &saved)?;
    if let (Some(path), Some(record)) = (&cfg.export, record) {
        if let Err(e) = super::runs::write_export(path, record) {
            eprintln!("latscope: error: {e:#}");
            return Ok(exit::RUN_FAILED);
        }
    }
    let (code, why) = report::load::outcome(&result);
    if let Some(why) = why {
        eprintln!("latscope: {why}");
    }
    Ok(saved.exit_code(code))
}
