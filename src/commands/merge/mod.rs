//! `latscope merge RUN|FILE…`: shard runs of one load plan joined into one stored run
//! (histograms added, counts summed, seconds aligned on the wall clock), its findings
//! judged again on the merged data.

use anyhow::Context;

use super::runs::{open, read_export, resolve};
use super::saving::{self, NewRun};
use crate::cli::MergeArgs;
use crate::config::OutputConfig;
use crate::error::exit;
use crate::report;
use crate::schema::shards::{self, MergedInfo};
use crate::schema::{LoadDoc, PlanDoc};
use crate::store::RunRecord;
use crate::usage;

mod judge;

/// Runs `latscope merge`.
pub fn run(args: MergeArgs) -> anyhow::Result<u8> {
    if args.runs.len() < 2 {
        return Err(usage!(
            "merge needs two or more runs (ids, labels or export files)"
        ));
    }
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut store = None;
    for spec in &args.runs {
        let path = std::path::Path::new(spec);
        let run = if path.exists() && !path.is_dir() {
            let mut run = read_export(path)?;
            run.redact(&[]);
            run.into_record()
        } else {
            if store.is_none() {
                store = Some(open(&args.output.db)?);
            }
            let s = store.as_ref().expect("opened above");
            s.load(&resolve(s, spec)?)?
        };
        if !run.id.is_empty() && runs.iter().any(|r| r.id == run.id) {
            return Err(usage!(
                "'{spec}' names run {}, which is already given",
                run.id
            ));
        }
        runs.push(run);
    }
    // Each run read as documents: a summary or config that does not read is named.
    let mut docs = Vec::new();
    for (i, (run, spec)) in runs.iter().zip(&args.runs).enumerate() {
        if run.kind != "load" {
            return Err(usage!(
                "run {} ({spec}) is a {} run, not a load run",
                i + 1,
                run.kind
            ));
        }
        let doc: LoadDoc =
            crate::schema::from_value(&run.summary).map_err(|e| usage!("'{spec}': summary.{e}"))?;
        let config: PlanDoc =
            crate::schema::from_value(&run.config).map_err(|e| usage!("'{spec}': config.{e}"))?;
        docs.push((doc, config));
    }
    let shards: Vec<shards::Shard<'_>> = runs
        .iter()
        .zip(&args.runs)
        .zip(&docs)
        .map(|((r, spec), (doc, config))| shards::Shard {
            name: spec,
            kind: &r.kind,
            doc,
            config,
        })
        .collect();
    shards::check(&shards).map_err(|m| usage!("{m}"))?;
    let parts = runs
        .iter()
        .zip(&docs)
        .map(|(r, (doc, config))| shards::read(&r.id, doc, config, r.started_at_ms, &r.histograms))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|m| usage!("{m}"))?;
    let plan = shards::shared_plan(&docs[0].1);
    let (merged, findings) = judge::merged(parts, &docs, &plan);
    let mut hosts: Vec<&str> = runs.iter().map(|r| r.env.hostname.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let shards = docs[0].1.shard.map(|s| u64::from(s.count));
    let info = MergedInfo {
        runs: runs.iter().map(|r| r.id.clone()).collect(),
        shards: runs.len() as u64,
        of: shards,
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let mut doc = LoadDoc::from(&merged);
    doc.findings = findings.clone();
    doc.merged = Some(info.clone());
    let mut config = plan;
    config.merged = Some(info);
    config.connections = merged.connections;
    let doc = crate::schema::to_value(&doc);
    let head = format!(
        "latscope merge — {} runs{} of {} from {} host{}\n",
        runs.len(),
        shards
            .map(|n| format!(" (shards of /{n})"))
            .unwrap_or_default(),
        super::output::clean(&merged.target),
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    );
    if shards.is_some_and(|n| n != runs.len() as u64) {
        eprintln!(
            "latscope: note: {} of {} shards merged: the totals are of those shards only",
            runs.len(),
            shards.unwrap_or(0)
        );
    }
    let summary = report::load::summary(&merged, &findings);
    let saved = saving::save(
        &OutputConfig::from(&args.output),
        NewRun {
            kind: "load",
            target: merged.target.clone(),
            started: merged.started,
            duration_s: merged.elapsed.as_secs_f64(),
            config: crate::schema::to_value(&config),
            timeline: crate::schema::to_value(&crate::schema::load::timeline(&merged)),
            summary: doc.clone(),
            findings: serde_json::to_value(&findings)?,
            text: format!("{head}{summary}"),
            histograms: merged.histograms(),
            secret_headers: Vec::new(),
        },
    );
    super::output::print(args.output.json, &doc, &format!("{head}{summary}"))
        .context("printing the merged run")?;
    super::output::say_saved(args.output.json, &saved)?;
    Ok(saved.exit_code(if merged.thresholds_ok() {
        exit::OK
    } else {
        exit::THRESHOLD
    }))
}
