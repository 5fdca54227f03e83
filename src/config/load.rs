//! The checked configuration of `latscope load`: the load plan from the flags and an
//! optional scenario file (flags win over the file), the capacity search of
//! `--find-max`, the shard's start time, and where the run's results go. Every
//! refusal is a usage error naming the flag or the scenario field.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cli::LoadArgs;
use crate::config::http as httpcfg;
use crate::config::out::{self, OutConfig, OutputConfig};
use crate::error::UsageError;
use crate::load::plan::{
    default_threads, endpoint_from, endpoint_name, fit_fd_limit, parse_target, usage as refuse,
    DEFAULT_CONNECTIONS, DEFAULT_DURATION, MAX_CONNECTIONS, MAX_ENDPOINTS, MAX_RATE, MAX_VUS,
};
use crate::load::scenario::{self, Scenario};
use crate::load::search::{SearchModel, SearchPlan};
use crate::load::shard;
use crate::load::stages::{self, Ramp};
use crate::load::threshold;
use crate::load::{self, Endpoint, LoadPlan, Model, PlanError};
use crate::net::{HttpVersionPref, Scheme, Target};
use crate::watch::WatchSpec;

/// Everything `latscope load` runs with.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The run (with `--find-max`: the base every step varies).
    pub plan: LoadPlan,
    /// `--find-max`: the capacity search (None: one run).
    pub search: Option<SearchPlan>,
    /// `--start-at`: wait until then before starting.
    pub start_at: Option<SystemTime>,
    /// `--export FILE`: also write the run as an export file.
    pub export: Option<PathBuf>,
    /// `--out`: where the run's seconds are streamed.
    pub out: OutConfig,
    /// `--watch`: the server metrics to scrape during the run.
    pub watch: Option<WatchSpec>,
    /// `--json`, `--label`, `--db`, `--no-save`, `--no-tui`.
    pub output: OutputConfig,
    /// `--redact-header`: more header values to keep out of the stored run.
    pub redact_headers: Vec<String>,
}

impl LoadConfig {
    /// Checks the flags of `latscope load` (and reads `-f FILE`).
    pub fn from_args(args: &LoadArgs) -> Result<LoadConfig, UsageError> {
        check_flags_alone(args)?;
        let output = OutputConfig::from(&args.output);
        let redact_headers = args.http.redact_headers.clone();
        if !args.find_max.objectives.is_empty() {
            // A search runs its own steps: --out and --watch are not used by it.
            let (plan, search) = search(args)?;
            return Ok(LoadConfig {
                plan,
                search: Some(search),
                start_at: None,
                export: None,
                out: OutConfig::default(),
                watch: None,
                output,
                redact_headers,
            });
        }
        let plan = plan(args)?;
        let start_at = match &args.shard.start_at {
            Some(s) => Some(load::shard::start_at(s, SystemTime::now()).map_err(UsageError::new)?),
            None => None,
        };
        let out = OutConfig::from_args(&args.out, plan.client.tls())?;
        let watch = out::watch(&args.watch, plan.client.tls())?;
        Ok(LoadConfig {
            plan,
            search: None,
            start_at,
            export: args.shard.export.clone(),
            out,
            watch,
            output,
            redact_headers,
        })
    }
}

/// Builds the plan of `latscope load` from its flags (and `-f FILE`).
pub fn plan(args: &LoadArgs) -> Result<LoadPlan, UsageError> {
    let scenario = match (&args.file, &args.har) {
        (Some(f), _) => Some(scenario::load(f).map_err(|e| UsageError::new(e.to_string()))?),
        (None, Some(h)) => Some(
            load::har::load(h, args.har_origin.as_deref())
                .map_err(|e| UsageError::new(e.to_string()))?
                .scenario,
        ),
        (None, None) => None,
    };
    let file = args.file.as_deref().or(args.har.as_deref());
    from_parts(args, scenario, file).map_err(|e| UsageError::new(e.to_string()))
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError::new(msg)
}

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
fn check_flags_alone(args: &LoadArgs) -> Result<(), UsageError> {
    if args.find_max.objectives.is_empty() {
        if let Some(flag) = search_flag(args) {
            return Err(usage(format!(
                "{flag} belongs to a capacity search: add --find-max OBJECTIVE (e.g. --find-max 'p99<1s')"
            )));
        }
    }
    Ok(())
}

/// The base plan and the search plan of `latscope load --find-max` from the flags.
pub fn search(args: &LoadArgs) -> Result<(LoadPlan, SearchPlan), UsageError> {
    let f = &args.find_max;
    let model = f.model.unwrap_or(SearchModel::Open);
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
        return Err(usage(format!("{flag} does not go with --find-max: {why}")));
    }
    if model == SearchModel::Closed && args.connections.is_some() {
        return Err(usage("-c does not go with --find-max --model closed: the search sets the connections (bound it with --max-connections)"));
    }
    if model == SearchModel::Closed && (f.min_rate.is_some() || f.max_rate.is_some()) {
        return Err(usage("--min-rate/--max-rate bound the open model; with --model closed use --min-connections/--max-connections"));
    }
    if model == SearchModel::Open && (f.min_connections.is_some() || f.max_connections.is_some()) {
        return Err(usage("--min-connections/--max-connections bound the closed model (--model closed); the open model searches the rate (--min-rate/--max-rate)"));
    }
    if model == SearchModel::Open && args.think_time.is_some() {
        return Err(usage("--think-time applies to the closed model (--model closed); the open model sends at a rate"));
    }
    let mut objectives = Vec::new();
    for o in &f.objectives {
        objectives.push(
            threshold::parse(o)
                .map_err(|e| usage(e.to_string().replacen("--threshold", "--find-max", 1)))?,
        );
    }
    if let Some(o) = objectives
        .iter()
        .find(|o| o.metric == threshold::Metric::Checks)
    {
        return Err(usage(format!(
            "--find-max '{}': checks are judged over a whole run, not per step; give them as \
             --threshold on a run of its own",
            o.expr
        )));
    }
    let mut base = plan(args)?;
    if model == SearchModel::Open && base.script.as_ref().is_some_and(|s| s.needs_vus()) {
        return Err(usage(
            "a scenario's setup, extract, {{variables}}, cookies and data belong to VUs: \
             search it with --find-max --model closed",
        ));
    }
    if model == SearchModel::Open
        && (!base.think_time.is_zero() || base.script.as_ref().is_some_and(|s| s.paces()))
    {
        return Err(usage(
            "a scenario's sleep and think_time pace VUs, and the open model sends at a \
             rate: search it with --find-max --model closed",
        ));
    }
    for o in &objectives {
        if let threshold::Scope::Endpoint(name) = &o.scope {
            if !base.endpoints.iter().any(|e| &e.name == name) {
                let known: Vec<String> = base
                    .endpoints
                    .iter()
                    .map(|e| format!("'{}'", e.name))
                    .collect();
                return Err(usage(format!(
                    "--find-max '{}': no endpoint named '{name}' (the endpoints are {})",
                    o.expr,
                    known.join(", ")
                )));
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
        return Err(usage(format!(
            "--step {}: a step is measured for at least 1s",
            humantime::format_duration(step)
        )));
    }
    let precision = match &f.precision {
        Some(p) => crate::units::parse_percent(p).map_err(|e| usage(format!("--precision {e}")))?,
        None => DEFAULT_PRECISION,
    };
    if !(0.1..=50.0).contains(&precision) {
        return Err(usage(format!(
            "--precision {precision}%: give 0.1% to 50% (the bracket's width over its passing level)"
        )));
    }
    let (min, max) = match model {
        SearchModel::Open => {
            let max = f.max_rate.unwrap_or(load::plan::MAX_RATE);
            // A cap below the default start starts at the cap.
            let min = f.min_rate.unwrap_or(DEFAULT_MIN_RATE.min(max));
            for (v, flag) in [(min, "--min-rate"), (max, "--max-rate")] {
                if !(v.is_finite() && v > 0.0 && v <= load::plan::MAX_RATE) {
                    return Err(usage(format!(
                        "{flag} {v}: give a rate above 0, at most {}",
                        load::plan::MAX_RATE
                    )));
                }
            }
            (min, max)
        }
        SearchModel::Closed => {
            let min = f.min_connections.unwrap_or(1);
            let max = f.max_connections.unwrap_or(load::plan::MAX_CONNECTIONS);
            for (v, flag) in [(min, "--min-connections"), (max, "--max-connections")] {
                if v == 0 || v > load::plan::MAX_CONNECTIONS {
                    return Err(usage(format!(
                        "{flag} {v}: give 1 to {}",
                        load::plan::MAX_CONNECTIONS
                    )));
                }
            }
            // Fit the open-file limit: an explicit cap must fit, a default is lowered.
            let max = load::limits::fit_fd_limit(max, f.max_connections.is_some())
                .map_err(|e| usage(e.to_string().replacen("-c ", "--max-connections ", 2)))?;
            (f64::from(min), f64::from(max))
        }
    };
    if min > max {
        return Err(usage(format!(
            "the search starts at {} but may go no higher than {}: lower the minimum or raise the maximum",
            crate::load::steps::fmt_level(min),
            crate::load::steps::fmt_level(max)
        )));
    }
    let max_time = f.max_time.unwrap_or(DEFAULT_MAX_TIME);
    let settle = crate::load::steps::default_settle(step);
    let one = settle + step + crate::load::steps::grace_for(&objectives);
    if max_time < one {
        return Err(usage(format!(
            "--max-time {} leaves no room for one step ({} with its settle period)",
            humantime::format_duration(max_time),
            humantime::format_duration(one)
        )));
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

/// Merges flags over a scenario.
fn from_parts(
    args: &LoadArgs,
    scenario: Option<Scenario>,
    file: Option<&Path>,
) -> Result<LoadPlan, PlanError> {
    let (spec, mut client) =
        httpcfg::from_args(&args.http).map_err(|e| PlanError::Usage(e.to_string()))?;
    let sc = scenario.unwrap_or_default();
    let file_name = file.map(|f| f.display().to_string()).unwrap_or_default();
    if sc.requests.len() > MAX_ENDPOINTS {
        return refuse(format!(
            "scenario {file_name}: {} requests, more than one run measures (at most {MAX_ENDPOINTS})",
            sc.requests.len()
        ));
    }

    // Where the requests go.
    let (target, endpoints) = if sc.requests.is_empty() {
        let Some(url) = &args.url else {
            return refuse("give a URL or a scenario file (-f FILE)");
        };
        let target = parse_target(url, "URL")?;
        let name = endpoint_name(&target);
        let path = target.path_and_query.clone();
        (target, vec![endpoint_from(&name, &spec, Some(path))])
    } else {
        let base_text = args.url.clone().or(sc.base_url.clone());
        let base = match &base_text {
            Some(b) => Some(parse_target(b, "base URL")?),
            None => None,
        };
        let mut origin: Option<Target> = base.clone();
        let mut eps = Vec::new();
        // Setup first: the plan's endpoints are the script's steps, in its order.
        for r in sc.setup.iter().chain(&sc.requests) {
            let t = if r.path_or_url.starts_with('/') {
                match &base {
                    Some(b) => b.with_path(&r.path_or_url),
                    None => {
                        return refuse(format!(
                            "scenario {file_name}: request '{}' has a path but there is no base_url (set it in the file or give a URL)",
                            r.name
                        ))
                    }
                }
            } else {
                parse_target(&r.path_or_url, &format!("request '{}'", r.name))?
            };
            match &origin {
                Some(o) if !o.same_origin(&t) => {
                    return refuse(format!(
                        "scenario {file_name}: request '{}' goes to {}, but one run talks to one origin ({})",
                        r.name,
                        t.authority(),
                        o.origin()
                    ))
                }
                Some(_) => {}
                None => origin = Some(t.clone()),
            }
            // Flag headers apply to every request; the request's own come after.
            let mut headers = spec.headers.clone();
            headers.extend(r.headers.iter().cloned());
            eps.push(Endpoint {
                name: r.name.clone(),
                method: r.method.clone(),
                path_and_query: t.path_and_query.clone(),
                headers,
                body: r.body.clone(),
                weight: r.weight,
            });
        }
        let origin = origin.expect("at least one request");
        let target = origin.with_path(&eps[sc.setup.len()].path_and_query);
        (target, eps)
    };

    let load = &sc.load;
    let rate = args.rate.or(load.rate);
    let stages = match &args.stages {
        Some(s) => stages::parse(s).map_err(|e| PlanError::Usage(format!("--{e}")))?,
        None => load.stages.clone().unwrap_or_default(),
    };
    let count = args.requests.or(load.requests);
    let duration = args.duration.or(load.duration);
    let explicit_c = args.connections.or(load.connections);
    if let Some(r) = args.rate {
        if !(r.is_finite() && r > 0.0) {
            return refuse("--rate must be more than 0");
        }
    }
    if args.requests == Some(0) {
        return refuse("-n/--requests must be at least 1");
    }
    if explicit_c == Some(0) {
        return refuse("-c/--connections must be at least 1");
    }
    if duration.is_some_and(|d| d.is_zero()) {
        return refuse("-d/--duration must be more than 0");
    }
    if count.is_some() && !stages.is_empty() {
        return refuse(
            "-n/--requests and --stages do not go together: stages set the run's length",
        );
    }
    let model = match rate {
        Some(rate) => Model::Open { rate },
        None => Model::Closed,
    };
    let connections = match (model, explicit_c) {
        (_, Some(c)) => c,
        (Model::Closed, None) if !stages.is_empty() => {
            Ramp::new(&stages).peak().ceil().max(1.0) as u32
        }
        (Model::Closed, None) => {
            DEFAULT_CONNECTIONS.min(count.map_or(u32::MAX, |n| n.min(u32::MAX as u64) as u32))
        }
        (Model::Open { rate }, None) => {
            // Enough for the rate at a one-second latency, opened only as needed.
            let peak = if stages.is_empty() {
                rate
            } else {
                Ramp::new(&stages).peak()
            };
            peak.ceil().clamp(16.0, 10_000.0) as u32
        }
    };
    if let Model::Open { rate } = model {
        let peak = if stages.is_empty() {
            rate
        } else {
            Ramp::new(&stages).peak()
        };
        if peak > MAX_RATE {
            return refuse(format!(
                "--rate {peak} is more than one process can send (at most {MAX_RATE} requests per second)"
            ));
        }
    }
    if connections > MAX_CONNECTIONS {
        return refuse(format!(
            "-c {connections} is more than one client can hold open to one server (at most {MAX_CONNECTIONS}: one address has ~64k ephemeral ports)"
        ));
    }
    let per_conn = args.streams.or(load.streams).unwrap_or(1) as u64;
    if connections as u64 * per_conn > MAX_VUS {
        return refuse(format!(
            "-c {connections} × --streams {per_conn} is more than {MAX_VUS} VUs"
        ));
    }
    if model == Model::Closed && !stages.is_empty() && explicit_c.is_some() {
        let peak = Ramp::new(&stages).peak();
        if (connections as f64) < peak.ceil() {
            return refuse(format!(
                "--stages goes up to {peak} VUs but -c is {connections}: raise -c or leave it out"
            ));
        }
    }
    let job_index = std::env::var("JOB_COMPLETION_INDEX").ok();
    let shard = shard::from_flags(
        args.shard.shard.as_deref(),
        args.shard.shards,
        job_index.as_deref(),
    )
    .map_err(PlanError::Usage)?;
    let connections = match shard.share(u64::from(connections)) {
        0 => {
            return refuse(format!(
                "-c {connections} is fewer than the {} shards: every shard needs a connection",
                shard.count
            ))
        }
        c => c as u32,
    };
    let count = match count.map(|n| (n, shard.share(n))) {
        Some((n, 0)) => {
            return refuse(format!(
                "-n {n} is fewer than the {} shards: every shard needs a request",
                shard.count
            ))
        }
        Some((_, local)) => Some(local),
        None => None,
    };
    let connections = fit_fd_limit(connections, explicit_c.is_some())?;
    let duration = match (duration, count, stages.is_empty()) {
        (Some(d), _, _) => Some(d),
        (None, Some(_), _) => None,
        (None, None, false) => None,
        (None, None, true) => Some(DEFAULT_DURATION),
    };
    let threads = args.threads.or(load.threads);
    if threads == Some(0) {
        return refuse("--threads must be at least 1");
    }
    let streams = args.streams.or(load.streams);
    if streams == Some(0) {
        return refuse("--streams must be at least 1");
    }
    if streams.is_some_and(|s| s > 1) && client.version == HttpVersionPref::Http1 {
        return refuse("--streams needs HTTP/2; it does not go with --http1.1");
    }
    if streams.is_some_and(|s| s > 1)
        && client.version == HttpVersionPref::Auto
        && target.scheme == Scheme::Http
    {
        return refuse("--streams needs HTTP/2: add --http2 (h2c) or use an https:// URL");
    }
    if (args.no_keepalive || load.no_keepalive) && client.version == HttpVersionPref::Http2 {
        return refuse("--no-keepalive is an HTTP/1.1 mode; it does not go with --http2");
    }
    if client.http3 {
        check_http3(&target, args.no_keepalive || load.no_keepalive)?;
    }
    if let Some(t) = load.timeout {
        // A scenario timeout applies unless the flag was changed from its default.
        if args.http.timeout == Duration::from_secs(60) {
            client.timeout = t;
        }
    }
    let mut thresholds = sc.thresholds.clone();
    for t in &args.thresholds {
        thresholds.push(threshold::parse(t).map_err(|e| PlanError::Usage(e.to_string()))?);
    }
    // A rule on an endpoint the run does not have would fail with "no data": a typo.
    for t in &thresholds {
        if let threshold::Scope::Endpoint(name) = &t.scope {
            if !endpoints.iter().any(|e| &e.name == name) {
                let known: Vec<String> =
                    endpoints.iter().map(|e| format!("'{}'", e.name)).collect();
                return refuse(format!(
                    "threshold '{}': no endpoint named '{name}' (the endpoints are {})",
                    t.expr,
                    known.join(", ")
                ));
            }
        }
    }
    // Connections are split between threads: more threads would idle.
    let vus = connections as usize;
    let threads = threads
        .unwrap_or_else(default_threads)
        .min(vus.max(1))
        .max(1);
    if model != Model::Closed && args.think_time.is_some() {
        return refuse(
            "--think-time applies to the closed model (VUs); the open model sends at --rate",
        );
    }
    if model != Model::Closed && sc.think_time.is_some_and(|t| !t.is_zero()) {
        return refuse(format!(
            "scenario {file_name}: think_time paces a VU, and the open model (--rate) has \
             none: it sends at the rate. Drop think_time, or run it closed (-c)"
        ));
    }
    let script = match sc.script.clone() {
        Some(mut s) => {
            if args.think_time.is_some() {
                // The flag wins over the file's think-time range.
                s.think = None;
            }
            if args.no_cookies {
                s.cookies = false;
            }
            check_script(&s, model, &file_name, args.har.is_some())?;
            Some(std::sync::Arc::new(s))
        }
        None => None,
    };
    if let Some(t) = thresholds
        .iter()
        .find(|t| t.metric == threshold::Metric::Checks)
    {
        if !script.as_ref().is_some_and(|s| s.has_checks()) {
            return refuse(format!(
                "threshold '{}': the run has no checks (give a request a `check` in the scenario file)",
                t.expr
            ));
        }
    }
    Ok(LoadPlan {
        target,
        endpoints,
        order: sc.order,
        model,
        connections,
        duration,
        count,
        stages,
        threads,
        streams: streams.unwrap_or(1),
        keepalive: !(args.no_keepalive || load.no_keepalive),
        think_time: args.think_time.or(sc.think_time).unwrap_or_default(),
        client,
        backlog: None,
        raw: args.raw.clone(),
        thresholds,
        shard,
        engine: args.engine,
        script,
    })
}

/// A scenario's variables, setup, cookies and data keep per-VU state and need VUs
/// (the closed model), and its pauses pace VUs; checks run in either model, on
/// every protocol.
fn check_script(
    s: &crate::load::script::Script,
    model: Model,
    file: &str,
    recording: bool,
) -> Result<(), PlanError> {
    if model != Model::Closed && s.paces() {
        // Silently dropping the pauses would measure another workload than the file's.
        return refuse(if recording {
            format!(
                "recording {file}: its pauses between requests pace a VU, and the open \
                 model (--rate) has none: it sends at the rate. Replay it closed (-c N \
                 users)"
            )
        } else {
            format!(
                "scenario {file}: sleep and think_time pace a VU, and the open model \
                 (--rate) has none: it sends at the rate. Drop them, or run it closed (-c)"
            )
        });
    }
    if model != Model::Closed && s.needs_vus() {
        return refuse(format!(
            "scenario {file}: setup, extract, {{{{variables}}}}, cookies and data belong to \
             VUs, which the open model (--rate) has not: run it closed (-c), or keep only \
             checks (cookies = false)"
        ));
    }
    Ok(())
}

/// `--http3` needs an https URL (QUIC is always encrypted) and keeps connections
/// (a new QUIC connection per request is not a mode latscope offers).
fn check_http3(target: &Target, no_keepalive: bool) -> Result<(), PlanError> {
    if target.scheme != Scheme::Https {
        return refuse(format!(
            "--http3 needs an https:// URL (HTTP/3 runs over QUIC, always encrypted): {}",
            target.url
        ));
    }
    if no_keepalive {
        return refuse("--no-keepalive is an HTTP/1.1 mode; it does not go with --http3");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<LoadPlan, UsageError> {
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            l: LoadArgs,
        }
        let p = P::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
        super::plan(&p.l)
    }

    #[test]
    fn defaults_and_models() {
        let p = plan(&["http://127.0.0.1:1/x"]).unwrap();
        assert_eq!((p.model, p.connections), (Model::Closed, 10));
        assert_eq!(p.duration, Some(DEFAULT_DURATION));
        assert_eq!(p.endpoints[0].path_and_query, "/x");
        let p = plan(&["http://127.0.0.1:1/", "-n", "5"]).unwrap();
        assert_eq!((p.count, p.duration, p.connections), (Some(5), None, 5));
        let p = plan(&["http://127.0.0.1:1/", "--rate", "200", "-d", "2s"]).unwrap();
        assert_eq!(p.model, Model::Open { rate: 200.0 });
        assert_eq!(p.connections, 200);
        let p = plan(&["http://127.0.0.1:1/", "--stages", "1s:5,1s:0"]).unwrap();
        assert_eq!(
            (p.connections, p.run_length()),
            (5, Some(Duration::from_secs(2)))
        );
    }

    /// `--http3` takes `--streams` (concurrent streams per QUIC connection) and
    /// says "3" in the stored settings.
    #[test]
    fn http3_plans() {
        let p = plan(&[
            "https://127.0.0.1:1/",
            "--http3",
            "--streams",
            "8",
            "-c",
            "2",
        ])
        .unwrap();
        assert!(p.client.http3 && !p.wants_h2());
        assert_eq!((p.streams, p.connections), (8, 2));
        assert_eq!(crate::schema::PlanDoc::from(&p).http, "3");
    }

    #[test]
    fn refuses_nonsense() {
        for bad in [
            vec![],
            vec!["tcp://127.0.0.1:1"],
            vec!["http://127.0.0.1:1/", "-c", "0"],
            vec!["http://127.0.0.1:1/", "-n", "0"],
            vec!["http://127.0.0.1:1/", "-n", "5", "--stages", "1s:5"],
            vec!["http://127.0.0.1:1/", "--stages", "1s:50", "-c", "10"],
            vec!["http://127.0.0.1:1/", "--streams", "4"],
            vec!["http://127.0.0.1:1/", "--threshold", "p99<"],
            vec!["http://127.0.0.1:1/", "--rate", "0"],
            vec!["http://127.0.0.1:1/", "--threshold", "place:p99<1s"],
            vec!["http://127.0.0.1:1/", "--http3"],
            vec!["https://127.0.0.1:1/", "--http3", "--no-keepalive"],
        ] {
            assert!(plan(&bad).is_err(), "{bad:?}");
        }
    }
}
