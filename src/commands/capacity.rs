//! `latscope load --find-max OBJECTIVE`: checks the search flags, runs the search
//! (`load::search`) with a progress line on a terminal, prints the answer and the
//! steps (or `--json`), saves the search as one load run (its steps, their
//! histograms, one joined timeline), and picks the exit code: 99 when the objectives
//! fail even at the lowest level, 1 when every request failed there.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;

use super::saving::{self, NewRun};
use crate::cli::{LoadArgs, LoadModel};
use crate::diagnose::{self, Facts};
use crate::error::exit;
use crate::load::capacity::{self, Joined};
use crate::load::search::{self, Event, SearchModel, SearchPlan, Stopped};
use crate::load::{self, threshold, LoadPlan, Model, PlanError};
use crate::report;
use crate::schema::plan::FindMaxConfig;
use crate::schema::{CapacityDoc, LoadDoc, PlanDoc, StepDoc};
use crate::usage;

/// The default measured length of a step.
const DEFAULT_STEP: Duration = Duration::from_secs(10);
/// The default bound on the whole search.
const DEFAULT_MAX_TIME: Duration = Duration::from_secs(600);
/// The default precision, percent.
const DEFAULT_PRECISION: f64 = 5.0;
/// The open model's first rate by default, req/s.
const DEFAULT_MIN_RATE: f64 = 10.0;

/// Whether any search flag other than `--find-max` was given (they need it).
fn search_flag(args: &LoadArgs) -> Option<&'static str> {
    let f = &args.find_max;
    [
        (f.model.is_some(), "--model"),
        (f.step.is_some(), "--step"),
        (f.precision.is_some(), "--precision"),
        (f.min_rate.is_some(), "--min-rate"),
        (f.max_rate.is_some(), "--max-rate"),
        (f.min_connections.is_some(), "--min-connections"),
        (f.max_connections.is_some(), "--max-connections"),
        (f.max_time.is_some(), "--max-time"),
    ]
    .into_iter()
    .find(|(given, _)| *given)
    .map(|(_, name)| name)
}

/// Refuses search flags without `--find-max` (a usage error naming the flag).
pub(crate) fn check_flags_alone(args: &LoadArgs) -> anyhow::Result<()> {
    if args.find_max.objectives.is_empty() {
        if let Some(flag) = search_flag(args) {
            return Err(usage!(
                "{flag} belongs to a capacity search: add --find-max OBJECTIVE (e.g. --find-max 'p99<1s')"
            ));
        }
    }
    Ok(())
}

/// The base plan and the search plan from the flags.
fn plans(args: &LoadArgs) -> anyhow::Result<(LoadPlan, SearchPlan)> {
    let f = &args.find_max;
    let model = match f.model {
        Some(LoadModel::Closed) => SearchModel::Closed,
        _ => SearchModel::Open,
    };
    let conflicts = [
        (args.rate.is_some(), "--rate"),
        (args.stages.is_some(), "--stages"),
        (args.requests.is_some(), "-n/--requests"),
        (args.duration.is_some(), "-d/--duration"),
        (!args.thresholds.is_empty(), "--threshold"),
        (args.raw.is_some(), "--raw"),
        (args.shard.shard.is_some(), "--shard"),
        (args.shard.shards.is_some(), "--shards"),
        (args.shard.start_at.is_some(), "--start-at"),
        (args.shard.export.is_some(), "--export"),
    ];
    if let Some((_, flag)) = conflicts.iter().find(|(given, _)| *given) {
        let why = match *flag {
            "--threshold" => "give the objectives as --find-max",
            "--raw" => "a search runs many steps; --raw takes one run",
            "--shard" | "--shards" | "--start-at" | "--export" => {
                "a search decides each step from its own measurements; shards cannot share them"
            }
            _ => "the search sets the load and the length of each step (--step)",
        };
        return Err(usage!("{flag} does not go with --find-max: {why}"));
    }
    if model == SearchModel::Closed && args.connections.is_some() {
        return Err(usage!(
            "-c does not go with --find-max --model closed: the search sets the connections (bound it with --max-connections)"
        ));
    }
    if model == SearchModel::Closed && (f.min_rate.is_some() || f.max_rate.is_some()) {
        return Err(usage!(
            "--min-rate/--max-rate bound the open model; with --model closed use --min-connections/--max-connections"
        ));
    }
    if model == SearchModel::Open && (f.min_connections.is_some() || f.max_connections.is_some()) {
        return Err(usage!(
            "--min-connections/--max-connections bound the closed model (--model closed); the open model searches the rate (--min-rate/--max-rate)"
        ));
    }
    if model == SearchModel::Open && args.think_time.is_some() {
        return Err(usage!(
            "--think-time applies to the closed model (--model closed); the open model sends at a rate"
        ));
    }
    let mut objectives = Vec::new();
    for o in &f.objectives {
        objectives.push(
            threshold::parse(o).map_err(|e| {
                usage!("{}", e.to_string().replacen("--threshold", "--find-max", 1))
            })?,
        );
    }
    let mut base = LoadPlan::from_args(args).map_err(|e| match e {
        PlanError::Usage(m) => usage!("{m}"),
        PlanError::Scenario(s) => usage!("{s}"),
    })?;
    for o in &objectives {
        if let threshold::Scope::Endpoint(name) = &o.scope {
            if !base.endpoints.iter().any(|e| &e.name == name) {
                let known: Vec<String> = base
                    .endpoints
                    .iter()
                    .map(|e| format!("'{}'", e.name))
                    .collect();
                return Err(usage!(
                    "--find-max '{}': no endpoint named '{name}' (the endpoints are {})",
                    o.expr,
                    known.join(", ")
                ));
            }
        }
    }
    base.thresholds.clear();
    if model == SearchModel::Open && args.connections.is_some() {
        // A fixed pool: every rate step keeps it.
        base.model = Model::Open { rate: 1.0 };
    }
    let step = f.step.unwrap_or(DEFAULT_STEP);
    if step < Duration::from_secs(1) {
        return Err(usage!(
            "--step {}: a step is measured for at least 1s",
            humantime::format_duration(step)
        ));
    }
    let precision = match &f.precision {
        Some(p) => crate::units::parse_percent(p).map_err(|e| usage!("--precision {e}"))?,
        None => DEFAULT_PRECISION,
    };
    if !(0.1..=50.0).contains(&precision) {
        return Err(usage!(
            "--precision {precision}%: give 0.1% to 50% (the bracket's width over its passing level)"
        ));
    }
    let (min, max) = match model {
        SearchModel::Open => {
            let max = f.max_rate.unwrap_or(load::plan::MAX_RATE);
            // A cap below the default start starts at the cap.
            let min = f.min_rate.unwrap_or(DEFAULT_MIN_RATE.min(max));
            for (v, flag) in [(min, "--min-rate"), (max, "--max-rate")] {
                if !(v.is_finite() && v > 0.0 && v <= load::plan::MAX_RATE) {
                    return Err(usage!(
                        "{flag} {v}: give a rate above 0, at most {}",
                        load::plan::MAX_RATE
                    ));
                }
            }
            (min, max)
        }
        SearchModel::Closed => {
            let min = f.min_connections.unwrap_or(1);
            let max = f.max_connections.unwrap_or(load::plan::MAX_CONNECTIONS);
            for (v, flag) in [(min, "--min-connections"), (max, "--max-connections")] {
                if v == 0 || v > load::plan::MAX_CONNECTIONS {
                    return Err(usage!(
                        "{flag} {v}: give 1 to {}",
                        load::plan::MAX_CONNECTIONS
                    ));
                }
            }
            // Fit the open-file limit: an explicit cap must fit, a default is lowered.
            let max =
                load::limits::fit_fd_limit(max, f.max_connections.is_some()).map_err(|e| {
                    usage!("{}", e.to_string().replacen("-c ", "--max-connections ", 2))
                })?;
            (f64::from(min), f64::from(max))
        }
    };
    if min > max {
        return Err(usage!(
            "the search starts at {} but may go no higher than {}: lower the minimum or raise the maximum",
            crate::load::steps::fmt_level(min),
            crate::load::steps::fmt_level(max)
        ));
    }
    let max_time = f.max_time.unwrap_or(DEFAULT_MAX_TIME);
    let settle = crate::load::steps::default_settle(step);
    let one = settle + step + crate::load::steps::grace_for(&objectives);
    if max_time < one {
        return Err(usage!(
            "--max-time {} leaves no room for one step ({} with its settle period)",
            humantime::format_duration(max_time),
            humantime::format_duration(one)
        ));
    }
    let plan = SearchPlan {
        model,
        objectives,
        min,
        max,
        precision: precision / 100.0,
        step,
        settle,
        max_time,
        early_stop: !f.no_early_stop,
    };
    Ok((base, plan))
}

/// Runs `latscope load --find-max`.
pub fn run(args: LoadArgs) -> anyhow::Result<u8> {
    let (base, plan) = plans(&args)?;
    let interrupt = super::interrupt::Interrupt::install()?;
    // A step that overruns its budget is cut at the deadline, as Ctrl-C would.
    interrupt.deadline(plan.max_time);
    let stop = interrupt.flag.clone();
    let tty = std::io::stderr().is_terminal();
    let header = report::capacity::header(&base, &plan);
    if !args.output.json {
        let _ = super::output::say(&header);
    }
    let mut shown = false;
    let mut current = (0usize, String::new());
    let result = search::run(&base, &plan, &stop, &mut |e| {
        if !tty {
            return;
        }
        match e {
            Event::Start { index, level } => current = (index, level.to_string()),
            Event::Progress(p) => {
                eprint!(
                    "\r\x1b[2K{}",
                    report::capacity::progress_line(current.0, &current.1, p)
                );
                shown = true;
            }
            Event::Done(step) => {
                let verdict = if step.pass() { "pass" } else { "FAIL" };
                eprint!(
                    "\r\x1b[2Kstep {}: {} · {:.1} req/s · p99 {} · {verdict}\n",
                    current.0 + 1,
                    current.1,
                    step.achieved_rps(),
                    crate::units::fmt_ms(step.window.latency.value_at_quantile(0.99) as f64 / 1e6)
                );
                shown = false;
            }
        }
    });
    if shown {
        eprint!("\r\x1b[2K");
    }
    let s = result.context("the load run failed")?;
    if s.steps.is_empty() {
        anyhow::bail!(
            "{} before the first step ended: nothing to report",
            interrupt.reason()
        );
    }
    let answer = report::capacity::answer(&s);
    // The run's top-level numbers are the capacity step's (the lowest step's when
    // none passed), so `compare` sets searches side by side at their capacity.
    let shown_step = s.capacity().unwrap_or(&s.steps[0]);
    let r = &shown_step.result;
    let facts = Facts {
        load: Some(diagnose::from_load::load_facts(r)),
        ..Default::default()
    };
    let findings = diagnose::run_rules(&facts);
    let mut joined = Joined::default();
    let mut steps = Vec::new();
    let mut histograms: Vec<_> = r
        .histograms()
        .into_iter()
        .filter(|h| h.second.is_none())
        .collect();
    for (i, st) in s.steps.iter().enumerate() {
        let t = joined.push(i, st, None, false);
        steps.push(StepDoc::of(st, t));
        histograms.extend(capacity::step_histograms(st));
    }
    if let Some(st) = &s.interrupted {
        joined.push(s.steps.len(), st, None, true);
    }
    histograms.extend(std::mem::take(&mut joined.histograms));
    let mut doc = LoadDoc::from(r);
    doc.findings = findings.clone();
    doc.timeline = crate::schema::capacity::joined_rows(&joined.timeline);
    doc.steps = Some(steps);
    let capacity = CapacityDoc::of(&s, &answer);
    let model = capacity.model.clone();
    doc.capacity = Some(capacity);
    let summary_text = report::capacity::summary(&s, &answer);
    let findings_text = if findings.is_empty() {
        String::new()
    } else {
        format!("\n{}", report::findings::render(&findings))
    };
    let text = format!("{header}{summary_text}{findings_text}");
    let mut config = PlanDoc::from(&base);
    config.find_max = Some(FindMaxConfig {
        objectives: plan.objectives.iter().map(|o| o.expr.clone()).collect(),
        model,
        min: plan.min,
        max: plan.max,
        precision_pct: plan.precision * 100.0,
        step_s: plan.step.as_secs_f64(),
        settle_s: plan.settle.as_secs_f64(),
        max_time_s: plan.max_time.as_secs_f64(),
        early_stop: plan.early_stop,
    });
    let timeline = crate::schema::to_value(&doc.timeline);
    let doc = crate::schema::to_value(&doc);
    let started = s.steps[0].result.started;
    let duration_s = joined.offset as f64;
    let saved = saving::save(
        &args.output,
        NewRun {
            kind: "load",
            target: base.target.url.clone(),
            started,
            duration_s,
            config: crate::schema::to_value(&config),
            timeline,
            summary: doc.clone(),
            findings: serde_json::to_value(&findings)?,
            text,
            histograms,
            secret_headers: args.http.redact_headers.clone(),
        },
    );
    super::output::print(
        args.output.json,
        &doc,
        &format!("{summary_text}{findings_text}"),
    )?;
    if let Some(id) = saved.id() {
        if !args.output.json {
            super::output::say(&format!("\n  saved as run {id}\n"))?;
        }
    }
    Ok(saved.exit_code(verdict(&s, &answer)))
}

/// The exit code the search earns: 1 when every request of the lowest step failed,
/// 99 when the objectives fail even at the lowest level, else 0.
fn verdict(s: &search::Search, answer: &str) -> u8 {
    if s.stopped != Stopped::LowestFailed {
        return exit::OK;
    }
    let r = &s.steps[0].result;
    if r.requests > 0 && r.ok == 0 {
        let kinds: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        eprintln!(
            "latscope: error: every request failed ({})",
            kinds.join(", ")
        );
        return exit::RUN_FAILED;
    }
    if r.requests == 0 {
        eprintln!("latscope: error: no request completed");
        return exit::RUN_FAILED;
    }
    eprintln!("latscope: objective failed: {answer}");
    exit::THRESHOLD
}
