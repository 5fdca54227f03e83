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
use crate::lab::{self, LabOptions, StallOptions};
use crate::net::Target;
use crate::net::{ClientOptions, RequestSpec};

use super::diagnose;
use super::interrupt::Interrupt;
use super::saving;
use crate::schema::diagnose::Several;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun};

/// The round trip the demo's wire adds.
pub const DEMO_RTT: Duration = Duration::from_millis(40);

/// What the demo plants, and the finding that must show each.
fn planted(with_wire: bool) -> Vec<&'static str> {
    let mut ids = vec![
        "cold-start",
        "not-shared-cacheable",
        "no-validators",
        "no-compression",
        "knee",
        "periodic-spikes",
    ];
    if with_wire {
        ids.push("handshake-dominates");
    }
    ids
}

/// Findings that follow from a planted problem without being one, and what they
/// follow from.
const FOLLOWS: &[(&str, &str)] = &[
    ("network-dominates", "the 40 ms round trip"),
    ("tail-heavy", "the periodic stalls"),
    ("errors-under-load", "the saturating server"),
];

/// The lab's problems.
fn lab_options() -> LabOptions {
    LabOptions {
        capacity: Some(100.0),
        stall: Some(StallOptions {
            every: Duration::from_secs(3),
            length: Duration::from_millis(500),
        }),
        cold: Duration::from_millis(1500),
        ..LabOptions::default()
    }
}

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
    let lab = lab::spawn_on(listener, lab_options()).context("start the lab")?;
    eprintln!(
        "latscope demo: lab at {} ({}); diagnosing it, about 30 s…",
        lab.base_url(),
        if wire.is_some() {
            "40 ms RTT, cold start, cookies, no validators, uncompressed text, 100 req/s capacity, a 0.5 s stall every 3 s"
        } else {
            "cold start, cookies, no validators, uncompressed text, 100 req/s capacity, a 0.5 s stall every 3 s"
        }
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
                step: Duration::from_secs(2),
            },
        )
    };
    let mut results: Vec<Diagnosis> = Vec::new();
    for (path, load) in [
        ("/cold", false),
        ("/cache/no-validators", false),
        ("/cache/private-cookie", true),
    ] {
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

    let planted = planted(wire_note.is_none());
    let found: Vec<&str> = results
        .iter()
        .flat_map(|d| d.findings.iter().map(|f| f.id.as_str()))
        .collect();
    let missing: Vec<&str> = planted
        .iter()
        .copied()
        .filter(|id| !found.contains(id))
        .collect();
    let mut unexpected: Vec<&str> = found
        .iter()
        .copied()
        .filter(|id| !planted.contains(id) && !FOLLOWS.iter().any(|(f, _)| f == id))
        .collect();
    unexpected.sort_unstable();
    unexpected.dedup();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let doc = crate::schema::to_value(&DiagnoseRun::Several(Several {
        kind: "diagnose".into(),
        schema_version: crate::schema::SCHEMA_VERSION,
        results: results
            .iter()
            .map(|d| DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(d))))
            .collect(),
        demo: Some(true),
        planted: Some(owned(&planted)),
        missing: Some(owned(&missing)),
        unexpected: Some(owned(&unexpected)),
        findings: Some(results.iter().flat_map(|d| d.findings.clone()).collect()),
        wire_skipped: wire_note.clone(),
    }));
    let mut text = diagnose::render_text(&results);
    text.push_str(&format!("planted problems: {}\n", planted.join(", ")));
    if missing.is_empty() {
        text.push_str("all of them were found.\n");
    } else {
        text.push_str(&format!("NOT found: {}\n", missing.join(", ")));
    }
    for (id, why) in FOLLOWS {
        if found.contains(id) {
            text.push_str(&format!("{id} follows from {why}.\n"));
        }
    }
    if !unexpected.is_empty() {
        text.push_str(&format!(
            "also found, not planted: {}\n",
            unexpected.join(", ")
        ));
    }
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
    text.push_str(&next_steps(&html, id.as_deref()));

    super::output::print(output.json, &doc, &text)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}

/// A wire with the demo's RTT: in a private namespace of our own (any user who may
/// open /dev/net/tun), else on the host as root; `None` and why when neither works.
fn start_wire() -> (Option<Wire>, Option<String>) {
    let options = WireOptions {
        rtt: DEMO_RTT,
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

fn next_steps(html: &Result<std::path::PathBuf, String>, id: Option<&str>) -> String {
    let mut s = String::from("\nwhat to try next:\n");
    match html {
        Ok(p) => s.push_str(&format!(
            "  open {} in a browser (charts, findings)\n",
            p.display()
        )),
        Err(e) => s.push_str(&format!("  (the HTML report was not written: {e})\n")),
    }
    s.push_str(
        "  (`latscope` not on your PATH? `cargo install --path .` in the clone puts it there)\n",
    );
    if let Some(id) = id {
        s.push_str(&format!(
            "  latscope show {id}            print this run again\n"
        ));
    }
    s.push_str(
        "  latscope lab --listen 127.0.0.1:8080 --stall-every 3s --stall-for 500ms\n\
         \x20 latscope load http://127.0.0.1:8080/ -c 20 -d 15s   stalls on a fast route: periodic-spikes\n\
         \x20 latscope report last -o load.html                     its per-second timeline as a chart\n\
         \x20 latscope https://your.site/                            diagnose your own site\n",
    );
    s
}
