//! `latscope diagnose URL...` (and `latscope URL`): probe, cache audit, a short load
//! ramp where it is allowed, then the findings and "where the time goes", bounded in
//! time. The demo runs the same steps against the lab.

use std::time::SystemTime;

use anyhow::Context;
use serde_json::{json, Value};

use crate::cli::DiagnoseArgs;
use crate::config::{self, DiagnoseConfig, DiagnoseRun, OutputConfig};
use crate::diagnose::diagnosis::Diagnosis;
use crate::diagnose::{self, from_probe, rules, Facts, Finding};
use crate::net::{HttpVersionPref, ResolveOverride};
use crate::net::{NetError, Target};
use crate::probe::{self, ProbeConfig};
use crate::report;
use crate::report::live;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun as DiagnoseDocs};
use crate::usage;

use super::interrupt::Interrupt;
use super::ramp;
use super::saving::{self, NewRun};

/// Runs `latscope diagnose`.
pub fn run(args: DiagnoseArgs) -> anyhow::Result<u8> {
    // Known before the ramps, so the series written while they go carry it.
    let run_id = crate::store::new_id();
    let DiagnoseRun {
        urls,
        targets,
        max_time,
        config: mut plan,
        output,
        redact_headers,
    } = DiagnoseRun::from_args(&args, &run_id)?;
    plan.live = crate::report::live::wanted(output.json, output.no_tui);
    let started = SystemTime::now();
    let interrupt = Interrupt::install()?;
    interrupt.deadline(max_time);
    let mut results = Vec::new();
    let mut failures = Vec::new();
    let mut entries = Vec::new();
    for target in &targets {
        if interrupt.stop.is_stopped() && !results.is_empty() {
            // Not reached before Ctrl-C or --max-time: kept in its place.
            let why = format!("not measured: {}", interrupt.reason());
            entries.push(failed_entry(&target.url, &why));
            continue;
        }
        match diagnose_url(&interrupt, target, &plan, &mut progress_printer()) {
            Ok(d) => {
                entries.push(DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(&d))));
                results.push(d);
            }
            Err(e) => {
                entries.push(failed_entry(&target.url, &format!("{e:#}")));
                failures.push((target.url.clone(), e));
            }
        }
    }
    if results.is_empty() {
        let (url, e) = failures.remove(0);
        return Err(e.context(format!("diagnosing {url}")));
    }
    let text = render_text(&results);
    let doc = crate::schema::to_value(&DiagnoseDocs::of(entries, targets.len() > 1));
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let mut record = record(
        &output,
        &results,
        doc.clone(),
        text.clone(),
        started,
        &urls,
        &redact_headers,
    );
    record.id = run_id;
    let saved = saving::save_record(&output, &record);
    super::output::print(output.json, &doc, &text)?;
    super::output::say_saved(output.json, &saved)?;
    for (url, e) in &failures {
        eprintln!(
            "latscope: {}",
            super::output::clean(&format!("{url}: {e:#}"))
        );
    }
    Ok(saved.exit_code(if failures.is_empty() { 0 } else { 1 }))
}

/// A progress line on stderr, only on a terminal.
pub(crate) fn progress_printer() -> impl FnMut(&str) {
    let mut line = crate::report::progress::ProgressLine::stderr();
    move |msg: &str| crate::observe::Observer::<crate::load::Progress>::message(&mut line, msg)
}

/// Whether a load ramp may run by itself against these addresses: loopback, private,
/// link-local, or the lab's benchmarking range.
pub(crate) fn local_enough(addresses: &[String]) -> bool {
    !addresses.is_empty()
        && addresses
            .iter()
            .all(|a| match a.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(v4)) => {
                    v4.is_loopback()
                        || v4.is_private()
                        || v4.is_link_local()
                        || (v4.octets()[0] == 198 && (v4.octets()[1] & 0xfe) == 18)
                }
                Ok(std::net::IpAddr::V6(v6)) => {
                    v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00
                }
                Err(_) => false,
            })
}

/// Diagnoses one URL: probe, cache audit, origin, ramp, rules.
pub(crate) fn diagnose_url(
    interrupt: &Interrupt,
    target: &Target,
    plan: &DiagnoseConfig,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Diagnosis> {
    // The main probe and the cache audit go over TCP (HTTP/1.1 or HTTP/2); HTTP/3 is
    // probed beside them when offered or asked for (`diagnose_h3`).
    let mut config = ProbeConfig {
        target: target.clone(),
        count: plan.count,
        request: plan.request.clone(),
        client: plan.client.clone(),
        secret_headers: plan.secret_headers.clone(),
    };
    config.client.http3 = false;
    let stop = &interrupt.stop;
    // With -L everything below measures the page the redirects end at.
    let (config, chain) = if config.client.follow_redirects.is_some() {
        progress(&format!("{target}: following redirects…"));
        interrupt
            .runtime
            .block_on(probe::redirect::follow(&config, stop))
            .map_err(anyhow::Error::new)?
    } else {
        (config, probe::redirect::Chain::default())
    };
    let target = &config.target;
    let origin_config = match &plan.origin {
        Some(o) => Some(origin_config(target, &config, o)?),
        None => None,
    };
    progress(&format!(
        "{}: probing ({} rounds or more{})…",
        target,
        plan.count,
        if origin_config.is_some() {
            ", alternating with the origin"
        } else {
            ""
        }
    ));
    let (mut probe, origin) = sampled(interrupt, plan, &config, origin_config.as_ref())?;
    if let Some(d) = probe.dns.as_mut() {
        // The record's TTL, asked after the probe (so from the resolver's cache).
        d.ttl_s = interrupt
            .runtime
            .block_on(crate::net::svcb::address_ttl(
                &target.host,
                std::time::Duration::from_secs(2),
            ))
            .ok()
            .flatten();
    }
    probe.redirects = chain.hops;
    probe.dropped_headers = chain.dropped_headers;
    let http3 =
        super::diagnose_h3::discover(interrupt, &config, &probe, plan.client.http3, progress);
    progress(&format!("{target}: cache audit…"));
    let (cache, cache_error) = match interrupt
        .runtime
        .block_on(probe::audit::audit(&config, stop))
    {
        Ok(c) => (Some(c), None),
        Err(NetError::Interrupted) => (None, Some(interrupt.reason().to_string())),
        Err(e) => (None, Some(e.to_string())),
    };
    let (ramp, skipped) = if let Some(why) = &plan.no_load {
        (None, Some(why.clone()))
    } else if stop.is_stopped() {
        (None, Some(interrupt.reason().to_string()))
    } else if !plan.force_load && !local_enough(&probe.addresses) {
        (
            None,
            Some(format!(
                "{} is a public address: the load ramp runs against public sites only with --load",
                probe.addresses.first().cloned().unwrap_or_default()
            )),
        )
    } else {
        let steps = ramp::levels(plan.ramp.max_connections).len();
        let mut view = if plan.live {
            progress("");
            let setup = live::Setup::ramp(
                &target.url,
                plan.ramp.max_connections,
                plan.ramp.step,
                steps,
            );
            live::LiveView::start(setup, interrupt.stopper(), interrupt.flag.clone()).ok()
        } else {
            None
        };
        let mut sink = plan.out.as_ref().map(|o| o.start(target));
        let watcher = plan.watch.clone().map(crate::watch::Watcher::start);
        let mut line = super::observing::RampLine {
            target,
            say: &mut *progress,
        };
        let ran = ramp::run(
            target,
            &config.request,
            &plan.client,
            &plan.ramp,
            &interrupt.flag,
            &mut super::observing::shown_by(sink.as_mut(), view.as_mut(), &mut line),
        );
        if let Some(v) = view {
            v.finish();
        }
        let reports = sink.map(|l| l.finish()).unwrap_or_default();
        for note in crate::output::notes(&reports) {
            eprintln!("latscope: {note}");
        }
        match ran {
            Ok(mut r) => {
                if let Some(w) = watcher {
                    super::watching::join_ramp(&w.finish(), &mut r);
                }
                r.outputs = reports;
                (Some(r), None)
            }
            Err(e) => (None, Some(format!("the load ramp failed: {e:#}"))),
        }
    };
    // After the ramp, so the stack's two requests never shift the ramp's timing.
    let stack = super::diagnose_stack::gather(
        interrupt,
        &config,
        (&probe, cache.as_ref()),
        plan.peek,
        progress,
    );
    progress("");
    let offered_h2 = plan.client.version != HttpVersionPref::Http1;
    probe.set_distance(plan.distance_km);
    let mut probe_facts = from_probe::probe_facts(&probe, offered_h2);
    if let Some(c) = cache.as_ref().filter(|_| probe_facts.redirects.is_empty()) {
        probe_facts.redirects = from_probe::redirect_facts(c);
    }
    let hit_ratio = ramp.as_ref().and_then(|r| r.hit_ratio);
    let facts = Facts {
        probe: Some(probe_facts),
        origin: origin
            .as_ref()
            .map(|o| from_probe::probe_facts(o, offered_h2)),
        cache: cache
            .as_ref()
            .map(|c| from_probe::cache_facts(c, hit_ratio)),
        load: ramp.as_ref().map(|r| r.facts.clone()),
        disk: None,
        distance_km: plan.distance_km,
        http3: http3.as_ref().map(super::diagnose_h3::facts),
    };
    let mut facts = facts;
    if let Some(c) = facts.cache.as_mut() {
        c.probe_first = probe
            .first_request
            .and_then(|f| f.cache.map(|s| (s, f.ttfb_ms)));
    }
    if let (Some(c), Some(o)) = (facts.cache.as_mut(), facts.origin.as_ref()) {
        // What the origin answers in, to infer hits no header reports.
        c.origin_ttfb_ms = o
            .reused
            .as_ref()
            .or(o.fresh.as_ref())
            .filter(|s| s.count > 0)
            .map(|s| s.p50.ttfb);
    }
    let mut findings = diagnose::run_rules(&facts);
    diagnose::stack::attach(&mut findings, &facts, &stack);
    probe.server_time_label = rules::facts_time_label(&facts).to_string();
    let summary = diagnose::summary(&facts);
    Ok(Diagnosis {
        target: target.url.clone(),
        probe,
        cache,
        cache_error,
        origin,
        ramp,
        skipped,
        facts,
        findings,
        summary,
        http3,
        stack: Some(stack),
    })
}

/// The probe of `--origin`: the same URL, resolved to the origin's address (and
/// port, when given).
fn origin_config(target: &Target, config: &ProbeConfig, o: &str) -> anyhow::Result<ProbeConfig> {
    let (ip, port) = config::diagnose::origin_override(o, target.port)?;
    let mut config = config.clone();
    config
        .client
        .resolve
        .retain(|r| r.host != target.host.to_ascii_lowercase());
    config.client.resolve.push(ResolveOverride {
        host: target.host.to_ascii_lowercase(),
        port: target.port,
        addr: ip,
    });
    if port != target.port {
        config.target = Target::parse(&target.url.replacen(
            &target.authority(),
            &format!("{}:{port}", target.host),
            1,
        ))
        .map_err(|e| usage!("{e}"))?;
        config.client.resolve.push(ResolveOverride {
            host: target.host.to_ascii_lowercase(),
            port,
            addr: ip,
        });
    }
    Ok(config)
}

/// The probe of the URL and, with `--origin`, of the origin, in interleaved rounds
/// (`probe::sampler`): at least `-n` rounds, more until every timing-based rule can
/// decide (bounded in rounds and time; the JSON's `probe.sampling` says how it ended).
fn sampled(
    interrupt: &Interrupt,
    plan: &DiagnoseConfig,
    config: &ProbeConfig,
    origin: Option<&ProbeConfig>,
) -> anyhow::Result<(probe::ProbeResult, Option<probe::ProbeResult>)> {
    let offered_h2 = plan.client.version != HttpVersionPref::Http1;
    let mut configs = vec![config.clone()];
    configs.extend(origin.cloned());
    let mut decided = |rs: &[probe::ProbeResult]| {
        diagnose::decided(&Facts {
            probe: rs.first().map(|p| from_probe::probe_facts(p, offered_h2)),
            origin: rs.get(1).map(|p| from_probe::probe_facts(p, offered_h2)),
            distance_km: plan.distance_km,
            ..Facts::default()
        })
    };
    let mut out = interrupt
        .runtime
        .block_on(probe::sample(
            &configs,
            &probe::Sampling::adaptive(plan.count),
            &interrupt.stop,
            &mut decided,
        ))
        .into_iter();
    let main = out
        .next()
        .unwrap_or(Err(NetError::Interrupted))
        .map_err(anyhow::Error::new)?;
    let origin = match (origin, out.next()) {
        (Some(_), Some(r)) => Some(r.with_context(|| {
            format!(
                "probing the origin {}",
                plan.origin.as_deref().unwrap_or_default()
            )
        })?),
        _ => None,
    };
    Ok((main, origin))
}

/// A URL that could not be diagnosed, as an entry of `results`.
fn failed_entry(url: &str, error: &dyn std::fmt::Display) -> DiagnoseEntry {
    DiagnoseEntry::Failed {
        url: url.to_string(),
        error: error.to_string(),
    }
}

/// The text of one or several diagnoses, verdicts first (`report::diagnose`).
pub(crate) fn render_text(results: &[Diagnosis]) -> String {
    match results {
        [one] => {
            let mut text = report::diagnose::render(one);
            text.push('\n');
            text
        }
        several => report::diagnose::render_several(several),
    }
}

/// The run record of a diagnosis (what is saved and what the HTML report renders).
pub(crate) fn record(
    output: &OutputConfig,
    results: &[Diagnosis],
    doc: Value,
    text: String,
    started: SystemTime,
    urls: &[String],
    secret_headers: &[String],
) -> crate::store::RunRecord {
    let findings: Vec<&Finding> = results.iter().flat_map(|d| &d.findings).collect();
    let mut histograms = Vec::new();
    let mut timeline = Value::Null;
    if let Some(r) = results.iter().find_map(|d| d.ramp.as_ref()) {
        histograms = r.histograms.clone();
        timeline = crate::schema::to_value(&crate::schema::capacity::joined_rows(&r.timeline));
    }
    saving::record(
        output,
        NewRun {
            kind: "diagnose",
            target: urls.join(" "),
            started,
            duration_s: started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0),
            config: json!({"urls": urls}),
            summary: doc,
            timeline,
            findings: serde_json::to_value(&findings).unwrap_or_default(),
            text,
            histograms,
            secret_headers: secret_headers.to_vec(),
        },
    )
}
