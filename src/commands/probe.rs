//! `latscope probe URL...`: probe each URL in turn, find what the numbers say, print
//! (text or JSON) and save the run.

use std::time::SystemTime;

use crate::cli::ProbeArgs;
use crate::config::probe::ProbeRun as ProbeRunConfig;
use crate::diagnose::Finding;
use crate::net::NetError;
use crate::pipeline::{self, probe::Probed, probe::Rounds};
use crate::probe::ProbeResult;
use crate::report;
use crate::schema::probe::ProbeConfigDoc;
use crate::schema::{ProbeDoc, ProbeEntry, ProbeRun};

use super::interrupt::Interrupt;
use super::saving::{self, NewRun};

/// Runs `latscope probe`.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    let cfg = ProbeRunConfig::from_args(&args)?;
    let started = SystemTime::now();
    let interrupt = Interrupt::install()?;
    let stop = &interrupt.stop;
    let outcomes = interrupt.runtime.block_on(async {
        let mut outcomes = Vec::new();
        for config in &cfg.probes {
            let url = config.target.url.clone();
            if stop.is_stopped() && !outcomes.is_empty() {
                outcomes.push((url, Err(NetError::Interrupted)));
                continue;
            }
            // At least --samples rounds, more until every timing-based rule can
            // decide (`probe::sampler`); with -L the page the redirects end at is
            // probed, the chain beside it.
            let outcome =
                pipeline::probe::run(config, Rounds::Adaptive, cfg.distance_km, stop).await;
            outcomes.push((url, outcome));
        }
        outcomes
    });

    let mut results = Vec::new();
    let mut summaries = Vec::new();
    let mut failures = Vec::new();
    let mut entries = Vec::new();
    for (url, outcome) in outcomes {
        match outcome {
            Ok(Probed {
                result: r,
                findings: found,
                summary,
            }) => {
                entries.push(ProbeEntry::Measured(Box::new(ProbeDoc::new(
                    r.clone(),
                    found.clone(),
                ))));
                summaries.push(summary);
                results.push((r, found));
            }
            // Not tried: Ctrl-C came first. Kept in its place, not a failure.
            Err(NetError::Interrupted) if !results.is_empty() => {
                entries.push(failed_entry(&url, &"not measured: interrupted"));
            }
            Err(e) => {
                entries.push(failed_entry(&url, &e));
                failures.push((url, e));
            }
        }
    }
    if results.is_empty() {
        let (url, e) = failures.remove(0);
        return Err(anyhow::Error::new(e).context(format!("probing {url}")));
    }

    let text = render_text(&results, &summaries, &failures);
    let doc = crate::schema::to_value(&ProbeRun::of(entries, cfg.probes.len() > 1));

    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let findings: Vec<&Finding> = results.iter().flat_map(|(_, f)| f).collect();
    let (request, client) = (&cfg.request, &cfg.client);
    let saved = saving::save(
        &cfg.output,
        NewRun {
            kind: "probe",
            target: results
                .iter()
                .map(|(r, _)| r.target.clone())
                .collect::<Vec<_>>()
                .join(" "),
            started,
            duration_s: started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0),
            config: crate::schema::to_value(&ProbeConfigDoc {
                urls: args.urls.clone(),
                count: args.count,
                method: request.method.as_str().to_string(),
                headers: args.http.headers.clone(),
                timeout_s: client.timeout.as_secs_f64(),
                insecure: client.insecure,
                http_version: format!("{:?}", client.version),
                http3: client.http3,
            }),
            summary: doc.clone(),
            timeline: serde_json::Value::Null,
            findings: serde_json::to_value(&findings)?,
            text: text.clone(),
            histograms: Vec::new(),
            secret_headers: args.http.redact_headers.clone(),
        },
    );
    super::output::print(args.output.json, &doc, &text)?;
    super::output::say_saved(args.output.json, &saved)?;
    for (url, e) in &failures {
        eprintln!("latscope: {}", super::output::clean(&format!("{url}: {e}")));
    }
    Ok(saved.exit_code(if failures.is_empty() { 0 } else { 1 }))
}

fn render_text(
    results: &[(ProbeResult, Vec<Finding>)],
    summaries: &[Option<String>],
    failures: &[(String, crate::net::NetError)],
) -> String {
    let mut text = String::new();
    for ((r, found), s) in results.iter().zip(summaries) {
        text.push_str(&report::probe::render(r, found, s.as_deref()));
        text.push('\n');
    }
    if results.len() > 1 {
        text.push_str("side by side\n");
        let explained: Vec<_> = results.iter().map(|(r, f)| (r, f.as_slice())).collect();
        text.push_str(&report::probe::side_by_side(&explained));
    }
    for (url, e) in failures {
        text.push_str(&format!("{url}: failed: {e}\n"));
    }
    text
}

/// A URL that could not be measured, as an entry of `results`.
pub(crate) fn failed_entry(url: &str, error: &dyn std::fmt::Display) -> ProbeEntry {
    ProbeEntry::Failed {
        url: url.to_string(),
        error: error.to_string(),
    }
}
