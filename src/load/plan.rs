//! What a load run will do, checked: the requests (one URL or a scenario), the model
//! (closed, open, count, stages), the client settings. Built from `latscope load`
//! flags and an optional scenario file (flags win) by `config::load`, or in code by
//! other commands (`diagnose` builds [`LoadPlan::closed`]). Every refusal is a usage
//! error naming the flag or field.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

pub(crate) use super::limits::fit_fd_limit;
pub use super::limits::{fd_limit, MAX_BACKLOG, MAX_CONNECTIONS, MAX_ENDPOINTS, MAX_RATE, MAX_VUS};
use super::scenario::{Order, ScenarioError};
use super::shard::Shard;
use super::stages::{Ramp, Stage};
use super::threshold::Threshold;
use crate::net::{ClientOptions, HttpVersionPref, RequestHead, RequestSpec};
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

impl Endpoint {
    /// The head every protocol sends for this endpoint of `target` (encoded once per
    /// run by each engine).
    pub fn head(&self, target: &Target) -> RequestHead {
        RequestHead::new(
            target,
            &self.method,
            &self.path_and_query,
            &self.headers,
            self.body.len(),
        )
    }
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
    pub engine: LoadEngine,
    /// A scenario's checks, variables, setup, cookies and data (None: plain
    /// requests, encoded once for the run).
    pub script: Option<std::sync::Arc<super::script::Script>>,
}

/// Load engines (`latscope load --engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LoadEngine {
    /// io_uring where the kernel allows it and the plan is supported, else epoll.
    #[default]
    Auto,
    /// Readiness polling (tokio), every feature.
    Epoll,
    /// io_uring only (an error where it cannot run).
    #[value(name = "io_uring", alias = "uring")]
    IoUring,
}

/// Why a plan was refused (every variant is a usage error).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

pub(crate) fn usage<T>(msg: impl Into<String>) -> Result<T, PlanError> {
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
            engine: LoadEngine::Auto,
            script: None,
        })
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

pub(crate) fn parse_target(url: &str, what: &str) -> Result<Target, PlanError> {
    let t = Target::parse(url).map_err(|e| PlanError::Usage(format!("{what}: {e}")))?;
    if t.scheme == Scheme::Tcp {
        return usage(format!("{what} '{url}': load needs http:// or https://"));
    }
    Ok(t)
}

/// The name of a URL's endpoint: its path and query, secret query values redacted
/// (the name is shown, stored and written to `--raw`; the request keeps them).
pub(crate) fn endpoint_name(target: &Target) -> String {
    crate::redact::redact_urls(&target.path_and_query)
}

pub(crate) fn endpoint_from(name: &str, spec: &RequestSpec, path: Option<String>) -> Endpoint {
    Endpoint {
        name: name.to_string(),
        method: spec.method.clone(),
        path_and_query: path.unwrap_or_default(),
        headers: spec.headers.clone(),
        body: spec.body.clone(),
        weight: 1,
    }
}
