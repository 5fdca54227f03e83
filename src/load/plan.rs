//! What a load run will do, checked: the requests (one URL or a scenario), the model
//! (closed, open, count, stages), the client settings. Built from `latscope load`
//! flags and an optional scenario file (flags win), or in code by other commands
//! (`diagnose` builds [`LoadPlan::closed`]). Every refusal is a usage error naming the
//! flag or field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use super::limits::fit_fd_limit;
pub use super::limits::{fd_limit, MAX_BACKLOG, MAX_CONNECTIONS, MAX_ENDPOINTS, MAX_RATE, MAX_VUS};
use super::scenario::{self, Order, Scenario, ScenarioError};
use super::shard::{self, Shard};
use super::stages::{self, Ramp, Stage};
use super::threshold::{self, Threshold};
use crate::cli::LoadArgs;
use crate::config::http::{self as httpcfg, ClientOptions, HttpVersionPref, RequestSpec};
use crate::net::{Scheme, Target};

/// Default connections (wrk's and ab-with-concurrency's habit).
pub const DEFAULT_CONNECTIONS: u32 = 10;
/// Default duration when neither `-d` nor `-n` nor stages say.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// One named request of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub name: String,
    pub method: Method,
    /// Path and query on the run's origin.
    pub path_and_query: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// For [`Order::Weighted`].
    pub weight: u32,
}

/// Closed or open workload model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// `connections` VUs each send, wait for the answer, send again.
    Closed,
    /// Requests arrive at `rate` per second whatever the answers do.
    Open { rate: f64 },
}

/// A checked load plan. Public fields so callers can build or adjust one in code.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The origin (scheme, host, port) every request goes to; its path is the first
    /// endpoint's.
    pub target: Target,
    pub endpoints: Vec<Endpoint>,
    pub order: Order,
    pub model: Model,
    /// Closed: VUs (for HTTP/2: connections, each with `streams` VUs). Open: the most
    /// connections it may open.
    pub connections: u32,
    /// Run for this long (None: until `count` requests were sent).
    pub duration: Option<Duration>,
    /// Send exactly this many requests.
    pub count: Option<u64>,
    /// Ramps of VUs (closed) or rate (open); empty: constant.
    pub stages: Vec<Stage>,
    /// Worker threads (each a current-thread runtime).
    pub threads: usize,
    /// HTTP/2 concurrent streams per connection.
    pub streams: u32,
    /// Reuse connections (false: `--no-keepalive`, a new connection per request).
    pub keepalive: bool,
    /// Pause after each request of a VU (closed model).
    pub think_time: Duration,
    pub client: ClientOptions,
    /// Open model: requests that may wait for a connection before more are dropped
    /// (None: one second of the rate).
    pub backlog: Option<u64>,
    /// `--raw FILE`: one CSV row per request.
    pub raw: Option<PathBuf>,
    pub thresholds: Vec<Threshold>,
    /// Which part of the run this process does (`connections` and `count` are already
    /// this shard's share; `stages` and the rate are the whole run's).
    pub shard: Shard,
    /// `--engine`: io_uring, epoll, or auto (io_uring where supported).
    pub engine: crate::cli::LoadEngine,
}

/// Why a plan was refused (every variant is a usage error).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

fn usage<T>(msg: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::Usage(msg.into()))
}

/// One worker thread per core by default.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl LoadPlan {
    /// A closed-model plan: `connections` VUs sending GET `url` for `duration`.
    pub fn closed(url: &str, connections: u32, duration: Duration) -> Result<LoadPlan, PlanError> {
        let target = parse_target(url, "URL")?;
        let name = endpoint_name(&target);
        Self::build(
            target,
            vec![endpoint_from(&name, &RequestSpec::default(), None)],
            connections,
            Some(duration),
        )
    }

    /// A closed-model plan for one request with the given client options.
    pub fn single(
        target: Target,
        request: &RequestSpec,
        client: ClientOptions,
        connections: u32,
        duration: Duration,
    ) -> Result<LoadPlan, PlanError> {
        let name = endpoint_name(&target);
        let mut plan = Self::build(
            target,
            vec![endpoint_from(&name, request, None)],
            connections,
            Some(duration),
        )?;
        plan.client = client;
        Ok(plan)
    }

    fn build(
        target: Target,
        endpoints: Vec<Endpoint>,
        connections: u32,
        duration: Option<Duration>,
    ) -> Result<LoadPlan, PlanError> {
        if connections == 0 {
            return usage("connections must be at least 1");
        }
        // Diagnose's ramp: as many as the open-file limit allows.
        let connections = fit_fd_limit(connections.min(MAX_CONNECTIONS), false)?;
        let mut endpoints = endpoints;
        for e in &mut endpoints {
            if e.path_and_query.is_empty() {
                e.path_and_query = target.path_and_query.clone();
            }
        }
        Ok(LoadPlan {
            target,
            endpoints,
            order: Order::Sequence,
            model: Model::Closed,
            connections,
            duration,
            count: None,
            stages: Vec::new(),
            threads: default_threads().min(connections as usize).max(1),
            streams: 1,
            keepalive: true,
            think_time: Duration::ZERO,
            client: ClientOptions::default(),
            backlog: None,
            raw: None,
            thresholds: Vec::new(),
            shard: Shard::WHOLE,
            engine: crate::cli::LoadEngine::Auto,
        })
    }

    /// Builds the plan of `latscope load` from its flags (and `-f FILE`).
    pub fn from_args(args: &LoadArgs) -> Result<LoadPlan, PlanError> {
        let scenario = match &args.file {
            Some(f) => Some(scenario::load(f)?),
            None => None,
        };
        from_parts(args, scenario, args.file.as_deref())
    }

    /// The VUs (closed) or rate (open) over time.
    pub fn ramp(&self) -> Ramp {
        if !self.stages.is_empty() {
            return Ramp::new(&self.stages);
        }
        match self.model {
            Model::Closed => Ramp::constant(self.connections as f64, self.duration),
            Model::Open { rate } => Ramp::constant(rate, self.duration),
        }
    }

    /// How long the run lasts at most (None: until the count is reached).
    pub fn run_length(&self) -> Option<Duration> {
        if !self.stages.is_empty() {
            let total: Duration = self.stages.iter().map(|s| s.duration).sum();
            return Some(self.duration.map_or(total, |d| d.min(total)));
        }
        self.duration
    }

    /// "closed" or "open" (the JSON `model`).
    pub fn model_name(&self) -> &'static str {
        match self.model {
            Model::Closed => "closed",
            Model::Open { .. } => "open",
        }
    }

    /// Whether HTTP/2 with prior knowledge (h2c) or via ALPN may be used.
    pub fn wants_h2(&self) -> bool {
        if self.client.http3 {
            return false;
        }
        match self.client.version {
            HttpVersionPref::Http2 => true,
            HttpVersionPref::Auto => self.target.scheme == Scheme::Https,
            HttpVersionPref::Http1 => false,
        }
    }
}

fn parse_target(url: &str, what: &str) -> Result<Target, PlanError> {
    let t = Target::parse(url).map_err(|e| PlanError::Usage(format!("{what}: {e}")))?;
    if t.scheme == Scheme::Tcp {
        return usage(format!("{what} '{url}': load needs http:// or https://"));
    }
    Ok(t)
}

/// The name of a URL's endpoint: its path and query, secret query values redacted
/// (the name is shown, stored and written to `--raw`; the request keeps them).
fn endpoint_name(target: &Target) -> String {
    crate::store::redact_urls(&target.path_and_query)
}

fn endpoint_from(name: &str, spec: &RequestSpec, path: Option<String>) -> Endpoint {
    Endpoint {
        name: name.to_string(),
        method: spec.method.clone(),
        path_and_query: path.unwrap_or_default(),
        headers: spec.headers.clone(),
        body: spec.body.clone(),
        weight: 1,
    }
}

fn same_origin(a: &Target, b: &Target) -> bool {
    a.scheme == b.scheme && a.host.eq_ignore_ascii_case(&b.host) && a.port == b.port
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
        return usage(format!(
            "scenario {file_name}: {} requests, more than one run measures (at most {MAX_ENDPOINTS})",
            sc.requests.len()
        ));
    }

    // Where the requests go.
    let (target, endpoints) = if sc.requests.is_empty() {
        let Some(url) = &args.url else {
            return usage("give a URL or a scenario file (-f FILE)");
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
        for r in &sc.requests {
            let t = if r.path_or_url.starts_with('/') {
                match &base {
                    Some(b) => b.with_path(&r.path_or_url),
                    None => {
                        return usage(format!(
                            "scenario {file_name}: request '{}' has a path but there is no base_url (set it in the file or give a URL)",
                            r.name
                        ))
                    }
                }
            } else {
                parse_target(&r.path_or_url, &format!("request '{}'", r.name))?
            };
            match &origin {
                Some(o) if !same_origin(o, &t) => {
                    return usage(format!(
                        "scenario {file_name}: request '{}' goes to {}, but one run talks to one origin ({}://{})",
                        r.name,
                        t.authority(),
                        if o.scheme == Scheme::Https { "https" } else { "http" },
                        o.authority()
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
        let target = origin.with_path(&eps[0].path_and_query);
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
            return usage("--rate must be more than 0");
        }
    }
    if args.requests == Some(0) {
        return usage("-n/--requests must be at least 1");
    }
    if explicit_c == Some(0) {
        return usage("-c/--connections must be at least 1");
    }
    if duration.is_some_and(|d| d.is_zero()) {
        return usage("-d/--duration must be more than 0");
    }
    if count.is_some() && !stages.is_empty() {
        return usage("-n/--requests and --stages do not go together: stages set the run's length");
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
            return usage(format!(
                "--rate {peak} is more than one process can send (at most {MAX_RATE} requests per second)"
            ));
        }
    }
    if connections > MAX_CONNECTIONS {
        return usage(format!(
            "-c {connections} is more than one client can hold open to one server (at most {MAX_CONNECTIONS}: one address has ~64k ephemeral ports)"
        ));
    }
    let per_conn = args.streams.or(load.streams).unwrap_or(1) as u64;
    if connections as u64 * per_conn > MAX_VUS {
        return usage(format!(
            "-c {connections} × --streams {per_conn} is more than {MAX_VUS} VUs"
        ));
    }
    if model == Model::Closed && !stages.is_empty() && explicit_c.is_some() {
        let peak = Ramp::new(&stages).peak();
        if (connections as f64) < peak.ceil() {
            return usage(format!(
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
            return usage(format!(
                "-c {connections} is fewer than the {} shards: every shard needs a connection",
                shard.count
            ))
        }
        c => c as u32,
    };
    let count = match count.map(|n| (n, shard.share(n))) {
        Some((n, 0)) => {
            return usage(format!(
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
        return usage("--threads must be at least 1");
    }
    let streams = args.streams.or(load.streams);
    if streams == Some(0) {
        return usage("--streams must be at least 1");
    }
    if streams.is_some_and(|s| s > 1) && client.version == HttpVersionPref::Http1 {
        return usage("--streams needs HTTP/2; it does not go with --http1.1");
    }
    if streams.is_some_and(|s| s > 1)
        && client.version == HttpVersionPref::Auto
        && target.scheme == Scheme::Http
    {
        return usage("--streams needs HTTP/2: add --http2 (h2c) or use an https:// URL");
    }
    if (args.no_keepalive || load.no_keepalive) && client.version == HttpVersionPref::Http2 {
        return usage("--no-keepalive is an HTTP/1.1 mode; it does not go with --http2");
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
                return usage(format!(
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
        return usage(
            "--think-time applies to the closed model (VUs); the open model sends at --rate",
        );
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
    })
}

/// `--http3` needs an https URL (QUIC is always encrypted) and keeps connections
/// (a new QUIC connection per request is not a mode latscope offers).
fn check_http3(target: &Target, no_keepalive: bool) -> Result<(), PlanError> {
    if target.scheme != Scheme::Https {
        return usage(format!(
            "--http3 needs an https:// URL (HTTP/3 runs over QUIC, always encrypted): {}",
            target.url
        ));
    }
    if no_keepalive {
        return usage("--no-keepalive is an HTTP/1.1 mode; it does not go with --http3");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<LoadPlan, PlanError> {
        #[derive(Parser)]
        struct P {
            #[command(flatten)]
            l: LoadArgs,
        }
        let p = P::try_parse_from(std::iter::once("x").chain(args.iter().copied())).unwrap();
        LoadPlan::from_args(&p.l)
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
