//! `latscope demo`: the lab with known problems switched on — a 40 ms RTT on the wire,
//! a cold start, cookies that defeat caching, no validators, a server that saturates,
//! periodic stalls — diagnosed as a user would diagnose their own site. Prints the
//! findings, writes an HTML report, says what to try next. Its JSON is the diagnose
//! JSON plus `planted: [ids]`; every planted problem must be among the findings.

use std::time::{Duration, SystemTime};

use anyhow::Context;

use crate::cli::DemoArgs;
use crate::config::{DiagnoseConfig, OutputConfig, RampPlan};
use crate::diagnose::diagnosis::Diagnosis;
use crate::lab::wire::{self, Wire, WireOptions};
use crate::lab::{self, demo};
use crate::net::Target;
use crate::net::{ClientOptions, RequestSpec};

use super::diagnose;
use super::interrupt::Interrupt;
use super::saving;
use crate::schema::diagnose::Several;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun};

/// Runs `latscope demo`.
pub fn run(args: DemoArgs) -> anyhow::Result<u8> {
    // The wire first: a private namespace can only be entered while single-threaded.
    let (wire, wire_note) = if args.no_wire {
        (None, Some("--no-wire: no RTT on the wire".to_string()))
    } else {
        start_wire()
    };
    if let Some(note) = &wire_note {
        eprintln!("latscope demo: NOTE: {note}; the 40 ms round trip is left out of this demo");
    }
    let listener = match &wire {
        Some(w) => w.bind_listener(0).context("bind the lab on the wire")?,
        None => std::net::TcpListener::bind("127.0.0.1:0").context("bind the lab")?,
    };
    let lab = lab::spawn_on(listener, demo::lab_options()).context("start the lab")?;
    eprintln!(
        "latscope demo: lab at {} ({}); diagnosing it, about 30 s…",
        lab.base_url(),
        demo::described(wire.is_some())
    );
    let started = SystemTime::now();
    let interrupt = Interrupt::install()?;
    let output = OutputConfig::from(&args.output);
    let base = DiagnoseConfig {
        live: crate::report::live::wanted(output.json, output.no_tui),
        peek: false,
        ..DiagnoseConfig::new(
            10,
            RequestSpec::default(),
            ClientOptions {
                timeout: Duration::from_secs(10),
                ..ClientOptions::default()
            },
            RampPlan {
                max_connections: 32,
                step: demo::RAMP_STEP,
            },
        )
    };
    let mut results: Vec<Diagnosis> = Vec::new();
    for (path, load) in demo::ROUTES {
        let target = Target::parse(&lab.url(path)).map_err(anyhow::Error::new)?;
        let plan = DiagnoseConfig {
            no_load: (!load).then(|| "the demo ramps /cache/private-cookie only".to_string()),
            ..base.clone()
        };
        results.push(diagnose::diagnose_url(&interrupt, &target, &plan)?);
        if interrupt.stop.is_stopped() {
            break;
        }
    }
    drop(lab);
    drop(wire);

    let found: Vec<&str> = results
        .iter()
        .flat_map(|d| d.findings.iter().map(|f| f.id.as_str()))
        .collect();
    let tally = demo::tally(&found, wire_note.is_none());
    let doc = crate::schema::to_value(&DiagnoseRun::Several(Several {
        kind: "diagnose".into(),
        schema_version: crate::schema::SCHEMA_VERSION,
        results: results
            .iter()
            .map(|d| DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(d))))
            .collect(),
        demo: Some(true),
        planted: Some(tally.planted.clone()),
        missing: Some(tally.missing.clone()),
        unexpected: Some(tally.unexpected.clone()),
        findings: Some(results.iter().flat_map(|d| d.findings.clone()).collect()),
        wire_skipped: wire_note.clone(),
    }));
    let mut text = diagnose::render_text(&results);
    text.push_str(&crate::report::demo::tally(&tally));
    let urls: Vec<String> = results.iter().map(|d| d.target.clone()).collect();
    let mut record = diagnose::record(
        &output,
        &results,
        doc.clone(),
        text.clone(),
        started,
        &urls,
        &[],
    );
    let saved = saving::save_record(&output, &record);
    let id = saved.id().map(str::to_string);
    record.id = id.clone().unwrap_or_else(|| "demo".to_string());
    let html = crate::report::html::render(std::slice::from_ref(&record))
        .map_err(|e| e.to_string())
        .and_then(|page| {
            std::fs::write(&args.output_html, page)
                .map(|_| args.output_html.clone())
                .map_err(|e| format!("cannot write {}: {e}", args.output_html.display()))
        });
    text.push_str(&crate::report::demo::next_steps(&html, id.as_deref()));

    super::output::print(output.json, &doc, &text)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}

/// A wire with the demo's RTT: in a private namespace of our own (any user who may
/// open /dev/net/tun), else on the host as root; `None` and why when neither works.
fn start_wire() -> (Option<Wire>, Option<String>) {
    let options = WireOptions {
        rtt: demo::RTT,
        ..WireOptions::default()
    };
    let private = wire::enter_private_namespace();
    match Wire::start(options) {
        Ok(w) => (Some(w), None),
        Err(e) => {
            let why = match private {
                Ok(()) => format!("the wire could not start ({e})"),
                Err(p) => format!("no private network namespace ({p}) and no wire ({e})"),
            };
            (None, Some(why))
        }
    }
}
