//! The load document (`latscope load --json`, the stored summary of a load run):
//! DESIGN.md's `load --json` with everything added since — per-endpoint numbers,
//! per-second timeline rows, thresholds, client TCP, cache counts, engines, the
//! HTTP version spoken. A `--find-max` search adds `steps` and `capacity`
//! ([`super::capacity`]); a merge of shards adds `merged` ([`super::shards`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::de;
use crate::diagnose::Finding;
use crate::load::result::{ms, LoadResult, SecondResult};
use crate::load::threshold::Verdict;
use crate::stats::Percentiles;
use crate::watch::{ServerSecond, WatchSummary};

/// A load run's document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadDoc {
    pub kind: String,
    pub schema_version: u32,
    pub target: String,
    /// "closed" or "open".
    pub model: String,
    /// "io_uring", "epoll" or "mixed".
    pub engine: String,
    /// What the connections spoke: "HTTP/1.1", "HTTP/2" or "HTTP/3" (as the probe
    /// names it); absent in runs stored before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_version: Option<String>,
    /// Completed requests (ok + errors).
    pub requests: u64,
    pub ok: u64,
    /// A scenario's checks over every endpoint (absent: none ran; per endpoint
    /// with their failures in `endpoints`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksDoc>,
    pub dropped: u64,
    /// Errors by kind (`timeout`, `http_5xx`, …).
    pub errors: BTreeMap<String, u64>,
    pub duration_s: f64,
    pub rps: f64,
    pub bytes: u64,
    pub latency_ms: Percentiles,
    /// The percentiles of `latency_ms` its requests support (p99 needs 100, p99.9
    /// 1,000, p99.99 10,000; an unsupported one is the maximum); absent in runs
    /// stored before it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_percentiles_supported: Option<Vec<String>>,
    pub connect_ms: Percentiles,
    pub incomplete: u64,
    pub client_cpu_pct: f64,
    pub client_cpu_wait_pct: Option<f64>,
    pub connections: u32,
    pub threads: u64,
    pub connections_opened: u64,
    pub client_tcp: ClientTcp,
    pub cache_hits: u64,
    pub cache: CacheCounts,
    /// Responses by status code (the code as a string key).
    pub statuses: BTreeMap<String, u64>,
    pub aborted: bool,
    pub endpoints: Vec<EndpointDoc>,
    pub timeline: Vec<TimelineRow>,
    pub thresholds: Vec<ThresholdDoc>,
    /// Per worker thread, when they ran on an engine at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_workers: Option<Vec<String>>,
    /// Why worker threads fell back from io_uring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_fallback: Option<Vec<String>>,
    /// Open model: latency from the intended send time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_time_ms: Option<Percentiles>,
    /// What `--watch` scraped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchSummary>,
    /// TLS handshakes (https only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<Percentiles>,
    pub findings: Vec<Finding>,
    /// A shard's place (`--shard I/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardDoc>,
    /// `--start-at`, and how late after it this process began, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_late_ms: Option<f64>,
    /// How each `--out` did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<OutputDoc>>,
    /// HTTP/2 connections ended with GOAWAY ENHANCE_YOUR_CALM: the server flooded
    /// control frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2_flood_connections: Option<u64>,
    /// `-L`: the redirects followed once before the run (the load ran against the
    /// URL they end at; its requests did not pay them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<crate::probe::audit::Hop>,
    /// The longest window a worker thread slept to collect several responses per
    /// wake (epoll engine), µs, as asked for (a busy machine can overrun a sleep).
    /// Absent when no thread batched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_window_us: Option<f64>,
    /// Connects refused for lack of file descriptors (EMFILE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_fd_exhausted: Option<u64>,
    /// Why TLS handshakes failed, when some did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_error: Option<String>,
    /// `--find-max`: each step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<super::StepDoc>>,
    /// `--find-max`: the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::CapacityDoc>,
    /// A merge of shards: where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<super::shards::MergedInfo>,
}

/// latscope's own connections' TCP retransmissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientTcp {
    pub syn_retrans: u64,
    pub syn_retried_connections: u64,
    pub before_first_response_retrans: u64,
    /// None when no connection was watched (HTTP/2, HTTP/3).
    pub data_retrans: Option<u64>,
}

/// What the responses said about a cache: `{hits, misses, unknown, hit_ratio, cache}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    pub unknown: u64,
    pub hit_ratio: Option<f64>,
    /// Which cache answered ("varnish", "nginx", …).
    pub cache: Option<String>,
}

/// One endpoint's numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointDoc {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub bytes: u64,
    pub rps: f64,
    pub latency_ms: Percentiles,
    /// A scenario's checks on this endpoint's responses (absent: it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksDoc>,
}

/// A scenario's checks (issue 34): how many were judged, how many passed, the
/// passed share, and failures per check name (only those that failed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChecksDoc {
    pub total: u64,
    pub passed: u64,
    /// passed / total, percent.
    pub passed_pct: f64,
    pub failed: BTreeMap<String, u64>,
}

impl ChecksDoc {
    /// The document of `checks` named by `names` (None when no check ran).
    pub fn of(checks: &crate::load::recorder::Checks, names: &[String]) -> Option<ChecksDoc> {
        (checks.total > 0).then(|| ChecksDoc {
            total: checks.total,
            passed: checks.passed,
            passed_pct: checks.passed as f64 * 100.0 / checks.total as f64,
            failed: checks
                .failed
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| {
                    (
                        names
                            .get(i)
                            .cloned()
                            .unwrap_or_else(|| format!("check {}", i + 1)),
                        *n,
                    )
                })
                .collect(),
        })
    }

    /// Back to counts, in `names`' order (for merges of stored runs).
    pub fn counts(&self) -> (crate::load::recorder::Checks, Vec<String>) {
        let names: Vec<String> = self.failed.keys().cloned().collect();
        (
            crate::load::recorder::Checks {
                total: self.total,
                passed: self.passed,
                failed: self.failed.values().copied().collect(),
            },
            names,
        )
    }
}

/// One threshold's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThresholdDoc {
    pub expr: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub ok: bool,
    pub value: Option<f64>,
}

/// A shard's place: `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardDoc {
    pub index: u32,
    pub count: u32,
}

/// How one `--out` output did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OutputDoc {
    pub kind: String,
    pub url: String,
    pub writes: u64,
    pub run: String,
    pub failed: u64,
    pub unsent: u64,
    pub last_error: Option<String>,
}

impl From<&crate::record::OutputReport> for OutputDoc {
    fn from(r: &crate::record::OutputReport) -> OutputDoc {
        OutputDoc {
            kind: r.kind.to_string(),
            url: r.url.clone(),
            writes: r.writes,
            run: r.run.clone(),
            failed: r.failed,
            unsent: r.unsent,
            last_error: r.last_error.clone(),
        }
    }
}

/// One second of a load timeline (also of a search's or a ramp's joined one, which
/// add `level`, `step`, `scored` and `concurrency` or `interrupted`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimelineRow {
    pub t: u32,
    pub requests: u64,
    pub ok: u64,
    /// Errors that second (older files may hold an `{kind: count}` object: summed).
    #[serde(with = "count_or_sum")]
    pub errors: u64,
    pub error_kinds: BTreeMap<String, u64>,
    pub bytes: u64,
    pub dropped: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Connections open (a joined second: the most of its parts).
    #[serde(with = "de::count")]
    pub active: u64,
    pub cache_hits: u64,
    /// Host TCP retransmits (None: not readable).
    pub retrans: Option<u64>,
    /// Host SYN retransmits.
    pub syn_retrans: Option<u64>,
    pub client_syn_retrans: u64,
    pub client_early_retrans: u64,
    pub started: u64,
    pub started_max_ms: f64,
    pub cpu_pct: Option<f64>,
    /// The watched server's second: absent without `--watch`, null for a gap.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "de::present")]
    pub server: Option<Option<Box<ServerSecond>>>,
    /// A joined timeline: the step's level, its index, whether the second is scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scored: Option<bool>,
    /// Diagnose's ramp: the step's connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// A search's step cut short by Ctrl-C.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<bool>,
    /// A scenario's checks judged on this second's responses, and the failed ones
    /// (absent: none judged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub checks: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub checks_failed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Timeline `errors`: a count, or the sum of an `{kind: count}` object.
mod count_or_sum {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Count(#[serde(with = "super::de::count")] u64),
            Kinds(std::collections::BTreeMap<String, u64>),
        }
        Ok(match Either::deserialize(d)? {
            Either::Count(n) => n,
            Either::Kinds(m) => m.values().fold(0u64, |a, n| a.saturating_add(*n)),
        })
    }
}

impl TimelineRow {
    /// The row of one second; `watched`: the run had `--watch` (the row then
    /// carries `server`, null for a gap).
    pub fn of(s: &SecondResult, watched: bool) -> TimelineRow {
        TimelineRow {
            t: s.t,
            requests: s.requests,
            ok: s.ok,
            errors: s.errors,
            error_kinds: s.errors_by_kind.clone(),
            bytes: s.bytes,
            dropped: s.dropped,
            p50_ms: s.p50_ms,
            p90_ms: s.p90_ms,
            p99_ms: s.p99_ms,
            max_ms: s.max_ms,
            active: s.active,
            cache_hits: s.cache_hits,
            retrans: s.retrans,
            syn_retrans: s.host_syn_retrans,
            client_syn_retrans: s.syn_retrans,
            client_early_retrans: s.early_retrans,
            started: s.started,
            started_max_ms: s.started_max_ms,
            cpu_pct: s.cpu_pct,
            server: watched.then(|| s.server.clone().map(Box::new)),
            checks: s.checks,
            checks_failed: s.checks_failed,
            ..TimelineRow::default()
        }
    }

    /// The second as the load result holds it (histograms apart).
    pub fn to_second(&self) -> SecondResult {
        SecondResult {
            t: self.t,
            requests: self.requests,
            ok: self.ok,
            errors: self.errors,
            errors_by_kind: self.error_kinds.clone(),
            bytes: self.bytes,
            dropped: self.dropped,
            p50_ms: self.p50_ms,
            p90_ms: self.p90_ms,
            p99_ms: self.p99_ms,
            max_ms: self.max_ms,
            active: self.active,
            cache_hits: self.cache_hits,
            retrans: self.retrans,
            cpu_pct: self.cpu_pct,
            started: self.started,
            started_max_ms: self.started_max_ms,
            syn_retrans: self.client_syn_retrans,
            early_retrans: self.client_early_retrans,
            host_syn_retrans: self.syn_retrans,
            server: self.server.clone().flatten().map(|s| *s),
            checks: self.checks,
            checks_failed: self.checks_failed,
            ..SecondResult::default()
        }
    }
}

impl From<&Verdict> for ThresholdDoc {
    fn from(v: &Verdict) -> ThresholdDoc {
        ThresholdDoc {
            expr: v.expr.clone(),
            endpoint: v.endpoint.clone(),
            ok: v.ok,
            value: v.value,
        }
    }
}

impl From<&LoadResult> for LoadDoc {
    fn from(r: &LoadResult) -> LoadDoc {
        let some_if = |v: Vec<String>| (!v.is_empty()).then_some(v);
        LoadDoc {
            kind: "load".into(),
            schema_version: super::SCHEMA_VERSION,
            target: r.target.clone(),
            model: r.model.to_string(),
            engine: r.engine.to_string(),
            http_version: r.http_version.map(String::from),
            requests: r.requests,
            ok: r.ok,
            checks: ChecksDoc::of(&r.checks(), &[]).map(|mut c| {
                // Run-wide failures named "endpoint check".
                for e in &r.endpoints {
                    if let Some(d) = ChecksDoc::of(&e.checks, &e.check_names) {
                        for (k, n) in d.failed {
                            c.failed.insert(format!("{} {k}", e.name), n);
                        }
                    }
                }
                c
            }),
            dropped: r.dropped,
            errors: r.errors.clone(),
            duration_s: r.elapsed.as_secs_f64(),
            rps: r.rps(),
            bytes: r.bytes,
            latency_ms: ms(&r.latency),
            latency_percentiles_supported: Some(
                crate::stats::histogram::supported(r.latency.len())
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ),
            connect_ms: ms(&r.connect),
            incomplete: r.incomplete,
            client_cpu_pct: r.client_cpu_pct,
            client_cpu_wait_pct: r.client_wait_pct,
            connections: r.connections,
            threads: r.threads as u64,
            connections_opened: r.connections_opened,
            client_tcp: ClientTcp {
                syn_retrans: r.syn_retrans,
                syn_retried_connections: r.syn_retried_conns,
                before_first_response_retrans: r.early_retrans,
                data_retrans: r.data_retrans,
            },
            cache_hits: r.cache_hits,
            cache: cache_counts(r),
            statuses: r
                .statuses
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect(),
            aborted: r.aborted,
            endpoints: r
                .endpoints
                .iter()
                .map(|e| EndpointDoc {
                    name: e.name.clone(),
                    requests: e.requests,
                    ok: e.ok,
                    bytes: e.bytes,
                    rps: e.requests as f64 / e.elapsed_s.max(1e-9),
                    latency_ms: ms(&e.latency),
                    checks: ChecksDoc::of(&e.checks, &e.check_names),
                })
                .collect(),
            timeline: timeline(r),
            thresholds: r.thresholds.iter().map(ThresholdDoc::from).collect(),
            engine_workers: some_if(r.engines.workers.iter().map(|w| w.to_string()).collect()),
            engine_fallback: some_if(r.engines.fallback.clone()),
            service_time_ms: r.service.as_ref().map(ms),
            watch: r.watch.clone(),
            tls_ms: (!r.tls.is_empty()).then(|| ms(&r.tls)),
            wake_window_us: r.wake_window.map(|w| w.as_secs_f64() * 1e6),
            ..LoadDoc::default()
        }
    }
}

/// A result's timeline rows (also stored on their own with the run).
pub fn timeline(r: &LoadResult) -> Vec<TimelineRow> {
    let watched = r.watch.is_some();
    r.timeline
        .iter()
        .map(|s| TimelineRow::of(s, watched))
        .collect()
}

/// The `cache` object of a result.
pub fn cache_counts(r: &LoadResult) -> CacheCounts {
    CacheCounts {
        hits: r.cache_hits,
        misses: r.cache_misses,
        unknown: r.cache_unknown(),
        hit_ratio: r.hit_ratio(),
        cache: r.cache_kind.map(|k| k.as_str().to_string()),
    }
}

impl LoadDoc {
    /// Responses by status code.
    pub fn statuses(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.statuses
            .iter()
            .filter_map(|(k, n)| Some((k.parse().ok()?, *n)))
    }

    /// Errors of all kinds.
    pub fn error_count(&self) -> u64 {
        self.errors.values().fold(0u64, |a, n| a.saturating_add(*n))
    }

    /// A `--find-max` run's capacity step on its joined timeline: the seconds of its
    /// scored window, [from, to). None for other runs.
    pub fn capacity_window(&self) -> Option<(u32, u32)> {
        let level = self.capacity.as_ref()?.level?;
        let step = self
            .steps
            .as_ref()?
            .iter()
            .find(|s| s.level == level && s.pass)?;
        let from = f64::from(step.t) + step.settle_s;
        let to = from + step.duration_s.floor();
        Some((from as u32, to as u32))
    }
}
