//! `latscope load`'s document and stored record: the load's numbers with its findings,
//! redirects, shard, `--start-at` lateness and outputs, and the failures the engine
//! counted by name (each also said on stderr, not left as a bare error kind).

use std::time::{Duration, SystemTime};

use crate::commands::saving::{self, NewRun};
use crate::config::OutputConfig;
use crate::diagnose::Finding;
use crate::load::{self, LoadPlan, LoadResult};
use crate::probe::audit::Hop;
use crate::record::{OutputReport, RunRecord};
use crate::report;
use crate::schema::{LoadDoc, PlanDoc};

/// The run's document; `late` is `--start-at` and how late after it the run began.
pub(super) fn of(
    result: &LoadResult,
    findings: &[Finding],
    config: &PlanDoc,
    redirects: Vec<Hop>,
    reports: &[OutputReport],
    late: Option<(SystemTime, Duration)>,
) -> LoadDoc {
    let mut doc = LoadDoc::from(result);
    doc.findings = findings.to_vec();
    doc.shard = config.shard;
    doc.redirects = redirects;
    if let Some((at, late)) = late {
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
    doc
}

/// The run as stored (its text, timeline, every second's histogram), under `id`.
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    output: &OutputConfig,
    secret_headers: &[String],
    plan: &LoadPlan,
    result: &LoadResult,
    findings: &[Finding],
    config: &PlanDoc,
    timeline: serde_json::Value,
    doc: &serde_json::Value,
    id: String,
) -> anyhow::Result<RunRecord> {
    let text = format!(
        "{}{}",
        report::load::header(plan),
        report::load::summary(result, findings)
    );
    let mut record = saving::record(
        output,
        NewRun {
            kind: "load",
            target: plan.target.url.clone(),
            started: result.started,
            duration_s: result.elapsed.as_secs_f64(),
            config: crate::schema::to_value(config),
            timeline,
            summary: doc.clone(),
            findings: serde_json::to_value(findings)?,
            text,
            histograms: result.histograms(),
            secret_headers: secret_headers.to_vec(),
        },
    );
    record.id = id;
    Ok(record)
}
