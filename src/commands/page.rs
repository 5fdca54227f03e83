//! `latscope page URL`: drive headless Chromium through the page (first and repeat
//! visits) and probe the origins its first paint waited for (`pipeline::page`), print
//! the verdict, the waterfall and the findings (or the page JSON), write `--har FILE`,
//! save the run. Ctrl-C ends the visits early (the browser is killed, what was
//! measured is kept); a second Ctrl-C ends at once.

use std::time::SystemTime;

use anyhow::Context;
use serde_json::{json, Value};

use crate::cli::PageArgs;
use crate::config::page::PageConfig;
use crate::report;
use crate::schema::{self, PageDoc};

use super::saving::{self, NewRun};

/// Runs `latscope page`.
pub fn run(args: PageArgs) -> anyhow::Result<u8> {
    let cfg = PageConfig::from_args(&args)?;
    let interrupt = super::interrupt::Interrupt::install()?;
    let started = SystemTime::now();
    let measured = crate::pipeline::page::run(
        &cfg.options,
        cfg.probe_origins,
        &interrupt.halt,
        &interrupt.runtime,
    );
    let crate::pipeline::page::Paged {
        run,
        origins,
        findings,
    } = measured
        .with_context(|| format!("page {}", crate::redact::redact_urls(&cfg.options.url)))?;

    let verdict = report::page::verdict(&run);
    let text = report::page::render(&run, &origins, &findings);
    let doc = schema::to_value(&PageDoc::new(&run, verdict, origins, findings.clone()));
    if let Some(path) = &cfg.har {
        let har = crate::page::har::document(&run);
        let body = serde_json::to_vec_pretty(&har)?;
        std::fs::write(path, body)
            .with_context(|| format!("cannot write the HAR file {}", path.display()))?;
    }
    let saved = saving::save(
        &cfg.output,
        NewRun {
            kind: "page",
            target: run.url.clone(),
            started,
            duration_s: run.elapsed_s,
            config: json!({
                "visits": cfg.options.visits,
                "max_time_s": cfg.options.max_time.as_secs_f64(),
                "allow_origins": cfg.options.allow_origins,
                "probe_origins": cfg.probe_origins,
                "chromium": cfg.options.chromium.display().to_string(),
            }),
            summary: doc.clone(),
            timeline: Value::Array(Vec::new()),
            findings: serde_json::to_value(&findings)?,
            text: text.clone(),
            histograms: Vec::new(),
            secret_headers: Vec::new(),
        },
    );
    super::output::print_first(cfg.output.json, doc, "verdict", &text)?;
    super::output::say_saved(cfg.output.json, &saved)?;
    Ok(saved.exit_code(0))
}
