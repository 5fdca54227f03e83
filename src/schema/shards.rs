//! Shards read back for `latscope merge`: the checks that a set of stored runs are
//! shards of one plan (each a shard, of one split, each index once and within its
//! count, the same plan apart from what shards differ in), each shard's document and
//! histograms turned back into a [`LoadResult`] (counts from the document, histograms
//! from the store, where they add losslessly), and the `merged` record of where a
//! merged run came from.

use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::load::LoadDoc;
use super::plan::PlanDoc;
use crate::load::result::{EndpointResult, LoadResult, SecondResult};
use crate::load::seconds::v2;
use crate::stats::histogram::new_histogram;
use crate::stats::{v2 as store_v2, StoredHistogram};

/// Where a merged run came from: `{runs, shards, of, hosts}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MergedInfo {
    /// The ids of the runs merged.
    pub runs: Vec<String>,
    /// How many were merged.
    pub shards: u64,
    /// The split they came from (`/N`).
    pub of: Option<u64>,
    /// The hosts that ran them.
    pub hosts: Vec<String>,
}

impl MergedInfo {
    /// "3 of 3 shards from 2 hosts: a, b".
    pub fn describe(&self) -> String {
        let of = self.of.map(|n| format!(" of {n}")).unwrap_or_default();
        let s = if self.hosts.len() == 1 { "" } else { "s" };
        format!(
            "{}{of} shards from {} host{s}: {}",
            self.shards,
            self.hosts.len(),
            self.hosts.join(", ")
        )
    }
}

/// One run offered to `merge`: its kind, summary and config read as documents.
pub struct Shard<'a> {
    /// How the run was named (its id, label or file), for messages.
    pub name: &'a str,
    pub kind: &'a str,
    pub doc: &'a LoadDoc,
    pub config: &'a PlanDoc,
}

/// Why these runs are not shards of one plan, if they are not: a run that is not a
/// load run, a capacity search, a run that is not a shard, a shard index above its
/// count, shards of different splits or plans, or one shard given twice.
pub fn check(shards: &[Shard<'_>]) -> Result<(), String> {
    for (i, s) in shards.iter().enumerate() {
        let which = format!("run {} ({})", i + 1, s.name);
        if s.kind != "load" {
            return Err(format!("{which} is a {} run, not a load run", s.kind));
        }
        if s.doc.steps.is_some() || s.doc.capacity.is_some() {
            return Err(format!("{which} is a capacity search, not one load run"));
        }
        if s.doc.merged.is_some() || s.config.merged.is_some() {
            return Err(format!(
                "{which} is already a merge of shards: merge the shards themselves"
            ));
        }
        let Some(shard) = s.config.shard else {
            return Err(format!(
                "{which} is not a shard of the same plan: it ran without --shard or --shards"
            ));
        };
        if shard.count == 0 || shard.index == 0 || shard.index > shard.count {
            return Err(format!(
                "{which} says it is shard {}/{}: its index is not within its count",
                shard.index, shard.count
            ));
        }
    }
    let first = shared_plan(shards[0].config);
    for (i, s) in shards.iter().enumerate().skip(1) {
        let other = shared_plan(s.config);
        if other != first {
            let (a, b) = (super::to_value(&first), super::to_value(&other));
            let keys: std::collections::BTreeSet<&String> = a
                .as_object()
                .into_iter()
                .chain(b.as_object())
                .flat_map(|m| m.keys())
                .collect();
            let differ: Vec<&str> = keys
                .into_iter()
                .filter(|k| a.get(k.as_str()) != b.get(k.as_str()))
                .map(String::as_str)
                .collect();
            return Err(format!(
                "run {} ({}) is not a shard of the same plan as the first (they differ in {})",
                i + 1,
                s.name,
                differ.join(", ")
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let count = shards[0].config.shard.map_or(0, |s| s.count);
    for s in shards {
        let shard = s.config.shard.unwrap_or_default();
        if shard.count != count {
            return Err(format!(
                "the runs are shards of different splits (/{count} and /{})",
                shard.count
            ));
        }
        if !seen.insert(shard.index) {
            return Err(format!(
                "shard {}/{} is given twice",
                shard.index, shard.count
            ));
        }
    }
    Ok(())
}

/// The plan without what shards of one run differ in (their shares and placement);
/// two runs are shards of one plan when these are equal.
pub fn shared_plan(config: &PlanDoc) -> PlanDoc {
    PlanDoc {
        connections: 0,
        count: None,
        threads: 0,
        shard: None,
        ..config.clone()
    }
}

/// Reads a stored shard back into a result (runs stored before the TLS handshake
/// histogram was kept have an empty one). `id` names the run in errors.
pub fn read(
    id: &str,
    doc: &LoadDoc,
    config: &PlanDoc,
    started_at_ms: i64,
    histograms: &[StoredHistogram],
) -> Result<LoadResult, String> {
    let hist = |name: &str, second: Option<u32>| -> Result<Histogram<u64>, String> {
        match histograms
            .iter()
            .find(|h| h.name == name && h.second == second)
        {
            Some(h) => {
                let mut d =
                    store_v2::decode(&h.v2).map_err(|e| format!("run {id}: {name}: {e}"))?;
                // Adding the other shards' may need a wider range.
                d.auto(true);
                Ok(d)
            }
            None => Ok(new_histogram()),
        }
    };
    let elapsed = Duration::from_secs_f64(finite(doc.duration_s));
    let model: &'static str = match doc.model.as_str() {
        "open" => "open",
        _ => "closed",
    };
    let mut endpoints = Vec::new();
    for e in &doc.endpoints {
        let (checks, check_names) = e.checks.as_ref().map(|c| c.counts()).unwrap_or_default();
        endpoints.push(EndpointResult {
            checks,
            check_names,
            latency: hist(&format!("latency:{}", e.name), None)?,
            name: e.name.clone(),
            requests: e.requests,
            ok: e.ok,
            bytes: e.bytes,
            elapsed_s: elapsed.as_secs_f64(),
        });
    }
    let mut timeline = Vec::new();
    for row in &doc.timeline {
        let latency = hist("latency", Some(row.t))?;
        let mut ep_v2 = Vec::new();
        if endpoints.len() > 1 {
            for e in &endpoints {
                let h = hist(&format!("latency:{}", e.name), Some(row.t))?;
                ep_v2.push(if h.is_empty() { Vec::new() } else { v2(&h) });
            }
        }
        timeline.push(SecondResult {
            v2: if latency.is_empty() {
                Vec::new()
            } else {
                v2(&latency)
            },
            ep_v2,
            ..row.to_second()
        });
    }
    let service = hist("service_time", None)?;
    Ok(LoadResult {
        target: doc.target.clone(),
        engine: engine_name(&doc.engine),
        engines: crate::load::uring::Engines {
            workers: doc
                .engine_workers
                .iter()
                .flatten()
                .map(|w| engine_name(w))
                .collect(),
            fallback: doc.engine_fallback.clone().unwrap_or_default(),
        },
        model,
        http_version: match doc.http_version.as_deref() {
            Some("HTTP/1.1") => Some("HTTP/1.1"),
            Some("HTTP/2") => Some("HTTP/2"),
            Some("HTTP/3") => Some("HTTP/3"),
            _ => None,
        },
        target_rps: config.rate,
        started: SystemTime::UNIX_EPOCH + Duration::from_millis(started_at_ms.max(0) as u64),
        elapsed,
        run_length: config
            .duration_s
            .map(|d| Duration::from_secs_f64(finite(d))),
        connections: doc.connections,
        threads: doc.threads as usize,
        requests: doc.requests,
        ok: doc.ok,
        dropped: doc.dropped,
        incomplete: doc.incomplete,
        bytes: doc.bytes,
        cache_hits: doc.cache_hits,
        cache_misses: doc.cache.misses,
        cache_kind: doc
            .cache
            .cache
            .as_ref()
            .and_then(|c| serde_json::from_value(serde_json::Value::String(c.clone())).ok()),
        connections_opened: doc.connections_opened,
        syn_retrans: doc.client_tcp.syn_retrans,
        syn_retried_conns: doc.client_tcp.syn_retried_connections,
        early_retrans: doc.client_tcp.before_first_response_retrans,
        data_retrans: doc.client_tcp.data_retrans,
        wake_window: doc
            .wake_window_us
            .filter(|w| w.is_finite() && *w > 0.0)
            .map(|w| Duration::from_secs_f64(w.min(1e9) / 1e6)),
        errors: doc.errors.clone(),
        statuses: doc.statuses().collect(),
        latency: hist("latency", None)?,
        service: (model == "open").then_some(service),
        connect: hist("connect", None)?,
        tls: hist("tls", None)?,
        endpoints,
        timeline,
        thresholds: Vec::new(),
        client_cpu_pct: doc.client_cpu_pct,
        client_wait_pct: doc.client_cpu_wait_pct,
        aborted: doc.aborted,
        raw_error: None,
        watch: doc.watch.clone(),
    })
}

/// A duration in seconds as one `Duration` can hold (0 for nonsense).
fn finite(s: f64) -> f64 {
    if s.is_finite() && (0.0..1e12).contains(&s) {
        s
    } else {
        0.0
    }
}

/// An engine's name as stored ("io_uring", "mixed", else "epoll").
fn engine_name(s: &str) -> &'static str {
    use crate::load::uring::{EPOLL, MIXED, NAME};
    match s {
        NAME => NAME,
        MIXED => MIXED,
        _ => EPOLL,
    }
}
