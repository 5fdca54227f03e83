//! `latscope load`: builds the plan from flags (and `-f FILE`), runs it with a
//! progress line on a terminal, prints the summary (or `--json`), runs the finding
//! rules, saves the run, and picks the exit code (99 when a threshold failed, 1 when
//! every request failed). Ctrl-C or SIGTERM stops the run cleanly; what was measured is printed
//! and saved.

use std::time::SystemTime;

use anyhow::Context;

use super::saving::{self, NewRun};
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
        while let Ok(left) = at.duration_since(SystemTime::now()) {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                eprintln!("latscope: stopped before --start-at; nothing was sent");
                return Ok(130);
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
        }
        start_late_ms = Some(SystemTime::now().duration_since(at).unwrap_or_default());
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
    let mut doc = crate::schema::LoadDoc::from(&result);
    doc.findings = findings.clone();
    doc.shard = config.shard;
    doc.redirects = redirects;
    if let (Some(at), Some(late)) = (start_at, start_late_ms) {
        // What this process's clock saw: how late after --start-at it began.
        doc.start_at = Some(humantime::format_rfc3339_millis(at).to_string());
        doc.start_late_ms = Some(crate::units::ms(late));
    }
    if !reports.is_empty() {
        doc.outputs = Some(reports.iter().map(Into::into).collect());
    }
    let head_too_large = load::head_too_large();
    if head_too_large > 0 {
        eprintln!(
            "latscope: {head_too_large} responses had headers over {} KiB, latscope's limit for every command (counted as protocol errors)",
            crate::net::http::MAX_RESPONSE_HEAD / 1024
        );
    }
    let floods = load::h2_floods();
    if floods > 0 {
        // Named, not left as bare "protocol" errors (RFC 9113 §10.5).
        doc.h2_flood_connections = Some(floods);
        eprintln!(
            "latscope: {floods} HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM: the server flooded control frames \
             (more than {} PING/SETTINGS answers it did not read, or more than {} CONTINUATION frames in one header block); their requests count as protocol errors",
            load::H2_MAX_PENDING_ACKS,
            load::H2_MAX_CONTINUATIONS
        );
    }
    let fd_exhausted = load::fd_exhausted();
    if fd_exhausted > 0 {
        // Named, not left as bare "connect" errors.
        doc.connect_fd_exhausted = Some(fd_exhausted);
        eprintln!(
            "latscope: {fd_exhausted} connects failed: too many open files (EMFILE): the open-file limit (ulimit -n) is {}; raise it or lower -c",
            load::plan::fd_limit()
        );
    }
    if let (Some(reason), Some(n)) = (load::tls_failure(), result.errors.get("tls")) {
        doc.tls_error = Some(reason.to_string());
        eprintln!("latscope: {n} TLS handshakes failed: {reason}");
    }
    let timeline = crate::schema::to_value(&doc.timeline);
    let doc = crate::schema::to_value(&doc);
    // The stored record (text, timeline, every second's histogram) is made only
    // when something keeps it: `--no-save` without `--export` skips it (issue 21:
    // a run's peak memory is at its end).
    let record = if cfg.output.no_save && cfg.export.is_none() {
        None
    } else {
        let text = format!(
            "{}{}",
            report::load::header(&plan),
            report::load::summary(&result, &findings)
        );
        let mut record = saving::record(
            &cfg.output,
            NewRun {
                kind: "load",
                target: plan.target.url.clone(),
                started: result.started,
                duration_s: result.elapsed.as_secs_f64(),
                config: crate::schema::to_value(&config),
                timeline,
                summary: doc.clone(),
                findings: serde_json::to_value(&findings)?,
                text,
                histograms: result.histograms(),
                secret_headers: cfg.redact_headers.clone(),
            },
        );
        record.id = run_id;
        Some(record)
    };
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
    Ok(saved.exit_code(verdict(&result)))
}

/// `-L`: follows the URL's redirects once before the run (what `curl -L` would do
/// first) and points the plan at the page they end at, with the request as it is
/// sent there (credentials dropped when the chain left the first origin).
fn follow_first(
    plan: &mut load::LoadPlan,
    redact: &[String],
    interrupt: &super::interrupt::Interrupt,
) -> anyhow::Result<Vec<crate::probe::audit::Hop>> {
    if plan.client.follow_redirects.is_none() {
        return Ok(Vec::new());
    }
    if plan.endpoints.len() != 1 {
        return Err(crate::usage!(
            "-L follows one URL's redirects: give each request of a scenario its final URL"
        ));
    }
    let ep = &plan.endpoints[0];
    let request = crate::net::RequestSpec {
        method: ep.method.clone(),
        headers: ep.headers.clone(),
        body: ep.body.clone(),
    };
    let config = crate::probe::ProbeConfig {
        target: plan.target.clone(),
        count: 1,
        secret_headers: crate::config::diagnose::secret_headers(&request, redact),
        request,
        client: plan.client.clone(),
    };
    let (last, chain) = interrupt
        .runtime
        .block_on(crate::probe::redirect::follow(&config, &interrupt.stop))
        .context("following the URL's redirects (-L)")?;
    plan.target = last.target.clone();
    let ep = &mut plan.endpoints[0];
    ep.path_and_query = last.target.path_and_query;
    ep.method = last.request.method;
    ep.headers = last.request.headers;
    ep.body = last.request.body;
    Ok(chain.hops)
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
