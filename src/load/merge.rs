//! Shards joined into one run (`latscope merge`): each stored shard run is read back
//! into a [`LoadResult`] (counts from its JSON, histograms from the store, where they
//! add losslessly), and the results are added — overall, per endpoint, and per second
//! aligned on the wall clock — so the merged percentiles are what one process
//! measuring every request would have reported.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde_json::Value;

use super::result::{EndpointResult, LoadResult, SecondResult};
use super::seconds::v2;
use crate::record::RunRecord;
use crate::stats::histogram::new_histogram;
use crate::stats::v2 as store_v2;

/// The config fields shards of one run may differ in (their shares and placement).
const SHARD_FIELDS: [&str; 4] = ["connections", "count", "threads", "shard"];

/// Reads a stored load run back into a result (runs stored before the TLS handshake
/// histogram was kept have an empty one).
pub fn from_record(run: &RunRecord) -> Result<LoadResult, String> {
    let s = &run.summary;
    if run.kind != "load" {
        return Err(format!(
            "run {} is a {} run, not a load run",
            run.id, run.kind
        ));
    }
    if s.get("steps").is_some() || s.get("capacity").is_some() {
        return Err(format!(
            "run {} is a capacity search, not one load run",
            run.id
        ));
    }
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    let hist = |name: &str, second: Option<u32>| -> Result<Histogram<u64>, String> {
        match run
            .histograms
            .iter()
            .find(|h| h.name == name && h.second == second)
        {
            Some(h) => {
                let mut d =
                    store_v2::decode(&h.v2).map_err(|e| format!("run {}: {name}: {e}", run.id))?;
                // Adding the other shards' may need a wider range.
                d.auto(true);
                Ok(d)
            }
            None => Ok(new_histogram()),
        }
    };
    let counts = |v: &Value| -> BTreeMap<String, u64> {
        v.as_object()
            .map(|m| m.iter().map(|(k, n)| (k.clone(), u(n))).collect())
            .unwrap_or_default()
    };
    let elapsed = Duration::from_secs_f64(s["duration_s"].as_f64().unwrap_or(0.0).max(0.0));
    let model: &'static str = match s["model"].as_str() {
        Some("open") => "open",
        _ => "closed",
    };
    let mut endpoints = Vec::new();
    for e in s["endpoints"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap_or("").to_string();
        endpoints.push(EndpointResult {
            latency: hist(&format!("latency:{name}"), None)?,
            name,
            requests: u(&e["requests"]),
            ok: u(&e["ok"]),
            bytes: u(&e["bytes"]),
            elapsed_s: elapsed.as_secs_f64(),
        });
    }
    let mut timeline = Vec::new();
    for row in run.timeline.as_array().into_iter().flatten() {
        let t = row["t"].as_u64().unwrap_or(0) as u32;
        let latency = hist("latency", Some(t))?;
        let mut ep_v2 = Vec::new();
        if endpoints.len() > 1 {
            for e in &endpoints {
                let h = hist(&format!("latency:{}", e.name), Some(t))?;
                ep_v2.push(if h.is_empty() { Vec::new() } else { v2(&h) });
            }
        }
        timeline.push(SecondResult {
            t,
            requests: u(&row["requests"]),
            ok: u(&row["ok"]),
            errors: u(&row["errors"]),
            errors_by_kind: counts(&row["error_kinds"]),
            bytes: u(&row["bytes"]),
            dropped: u(&row["dropped"]),
            active: u(&row["active"]),
            cache_hits: u(&row["cache_hits"]),
            retrans: row["retrans"].as_u64(),
            cpu_pct: row["cpu_pct"].as_f64(),
            v2: if latency.is_empty() {
                Vec::new()
            } else {
                v2(&latency)
            },
            started: u(&row["started"]),
            started_max_ms: row["started_max_ms"].as_f64().unwrap_or(0.0),
            syn_retrans: u(&row["client_syn_retrans"]),
            early_retrans: u(&row["client_early_retrans"]),
            host_syn_retrans: row["syn_retrans"].as_u64(),
            server: serde_json::from_value(row["server"].clone()).ok(),
            ep_v2,
            ..Default::default()
        });
    }
    let tcp = &s["client_tcp"];
    let service = hist("service_time", None)?;
    Ok(LoadResult {
        target: s["target"].as_str().unwrap_or(&run.target).to_string(),
        engine: engine_name(s["engine"].as_str()),
        engines: super::uring::Engines {
            workers: s["engine_workers"]
                .as_array()
                .map(|a| a.iter().map(|w| engine_name(w.as_str())).collect())
                .unwrap_or_default(),
            fallback: s["engine_fallback"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|w| w.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        },
        model,
        target_rps: run.config["rate"].as_f64(),
        started: SystemTime::UNIX_EPOCH + Duration::from_millis(run.started_at_ms.max(0) as u64),
        elapsed,
        run_length: run.config["duration_s"]
            .as_f64()
            .map(Duration::from_secs_f64),
        connections: u(&s["connections"]) as u32,
        threads: u(&s["threads"]) as usize,
        requests: u(&s["requests"]),
        ok: u(&s["ok"]),
        dropped: u(&s["dropped"]),
        incomplete: u(&s["incomplete"]),
        bytes: u(&s["bytes"]),
        cache_hits: u(&s["cache_hits"]),
        cache_misses: u(&s["cache"]["misses"]),
        cache_kind: serde_json::from_value(s["cache"]["cache"].clone()).ok(),
        connections_opened: u(&s["connections_opened"]),
        syn_retrans: u(&tcp["syn_retrans"]),
        syn_retried_conns: u(&tcp["syn_retried_connections"]),
        early_retrans: u(&tcp["before_first_response_retrans"]),
        data_retrans: tcp["data_retrans"].as_u64(),
        errors: counts(&s["errors"]),
        statuses: counts(&s["statuses"])
            .into_iter()
            .filter_map(|(k, n)| Some((k.parse().ok()?, n)))
            .collect(),
        latency: hist("latency", None)?,
        service: (model == "open").then_some(service),
        connect: hist("connect", None)?,
        tls: hist("tls", None)?,
        endpoints,
        timeline,
        thresholds: Vec::new(),
        client_cpu_pct: s["client_cpu_pct"].as_f64().unwrap_or(0.0),
        client_wait_pct: s["client_cpu_wait_pct"].as_f64(),
        aborted: s["aborted"].as_bool().unwrap_or(false),
        raw_error: None,
        watch: serde_json::from_value(s["watch"].clone()).ok(),
    })
}

/// The plan of a run without what shards differ in; two runs are shards of one plan
/// when these are equal.
pub fn shared_plan(config: &Value) -> Value {
    let mut c = config.clone();
    if let Some(m) = c.as_object_mut() {
        for f in SHARD_FIELDS {
            m.remove(f);
        }
    }
    c
}

/// Why these configs are not shards of one plan (the fields that differ), if they
/// are not; also refuses two runs of the same shard.
pub fn check_plans(configs: &[&Value]) -> Result<(), String> {
    let first = shared_plan(configs[0]);
    for (i, c) in configs.iter().enumerate().skip(1) {
        let other = shared_plan(c);
        if other != first {
            let mut differ: Vec<String> = Vec::new();
            let (a, b) = (first.as_object(), other.as_object());
            let keys: std::collections::BTreeSet<&String> =
                a.into_iter().chain(b).flat_map(|m| m.keys()).collect();
            for k in keys {
                if first.get(k) != other.get(k) {
                    differ.push(k.clone());
                }
            }
            return Err(format!(
                "run {} is not a shard of the same plan as the first (they differ in {})",
                i + 1,
                differ.join(", ")
            ));
        }
    }
    let shards: Vec<(u64, u64)> = configs
        .iter()
        .filter_map(|c| Some((c["shard"]["index"].as_u64()?, c["shard"]["count"].as_u64()?)))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in &shards {
        if shards[0].1 != *n {
            return Err(format!(
                "the runs are shards of different splits (/{} and /{n})",
                shards[0].1
            ));
        }
        if !seen.insert(*i) {
            return Err(format!("shard {i}/{n} is given twice"));
        }
    }
    Ok(())
}

/// An engine's name as stored ("io_uring", "mixed", else "epoll").
fn engine_name(s: Option<&str>) -> &'static str {
    match s {
        Some(super::uring::NAME) => super::uring::NAME,
        Some(super::uring::MIXED) => super::uring::MIXED,
        _ => super::uring::EPOLL,
    }
}

/// Adds the shards' results: counts summed, histograms added, seconds aligned on the
/// wall clock (a shard that started 1.4 s after the first puts its second 0 in the
/// merged second 1). `client_cpu_pct` is the busiest shard's (a client-bound shard
/// stays visible).
pub fn merge(parts: Vec<LoadResult>) -> LoadResult {
    let started = parts
        .iter()
        .map(|p| p.started)
        .min()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let offset = |p: &LoadResult| p.started.duration_since(started).unwrap_or_default();
    let elapsed = parts
        .iter()
        .map(|p| offset(p) + p.elapsed)
        .max()
        .unwrap_or_default();
    let mut it = parts.into_iter();
    let mut m = it.next().expect("at least one run");
    let mut timeline: BTreeMap<u32, (SecondResult, Histogram<u64>)> = BTreeMap::new();
    // Every part's seconds, shifted to where they fall on the first start's clock.
    let mut add_rows = |p: &mut LoadResult| {
        let by = offset(p).as_secs_f64().round() as u32;
        for mut r in std::mem::take(&mut p.timeline) {
            r.t += by;
            let h = store_v2::decode(&r.v2).unwrap_or_else(|_| new_histogram());
            match timeline.get_mut(&r.t) {
                None => {
                    timeline.insert(r.t, (r, h));
                }
                Some((o, oh)) => {
                    let _ = oh.add(&h);
                    add_second(o, &r);
                }
            }
        }
    };
    add_rows(&mut m);
    for mut p in it {
        add_rows(&mut p);
        m.requests += p.requests;
        m.ok += p.ok;
        m.dropped += p.dropped;
        m.incomplete += p.incomplete;
        m.bytes += p.bytes;
        m.cache_hits += p.cache_hits;
        m.cache_misses += p.cache_misses;
        m.cache_kind = m.cache_kind.or(p.cache_kind);
        m.connections += p.connections;
        m.threads += p.threads;
        m.connections_opened += p.connections_opened;
        m.syn_retrans += p.syn_retrans;
        m.syn_retried_conns += p.syn_retried_conns;
        m.early_retrans += p.early_retrans;
        m.data_retrans = either(m.data_retrans, p.data_retrans, |a, b| a + b);
        for (k, n) in p.errors {
            *m.errors.entry(k).or_insert(0) += n;
        }
        for (k, n) in p.statuses {
            *m.statuses.entry(k).or_insert(0) += n;
        }
        let _ = m.latency.add(&p.latency);
        if let (Some(a), Some(b)) = (&mut m.service, &p.service) {
            let _ = a.add(b);
        }
        let _ = m.connect.add(&p.connect);
        let _ = m.tls.add(&p.tls);
        for e in p.endpoints {
            match m.endpoints.iter_mut().find(|o| o.name == e.name) {
                Some(o) => {
                    o.requests += e.requests;
                    o.ok += e.ok;
                    o.bytes += e.bytes;
                    let _ = o.latency.add(&e.latency);
                }
                None => m.endpoints.push(e),
            }
        }
        m.client_cpu_pct = m.client_cpu_pct.max(p.client_cpu_pct);
        m.client_wait_pct = either(m.client_wait_pct, p.client_wait_pct, f64::max);
        m.aborted |= p.aborted;
        m.watch = m.watch.or(p.watch);
        m.engines.workers.extend(p.engines.workers);
        m.engines.fallback.extend(p.engines.fallback);
        if m.engine != p.engine {
            m.engine = super::uring::MIXED;
        }
    }
    m.started = started;
    m.elapsed = elapsed;
    for e in &mut m.endpoints {
        e.elapsed_s = elapsed.as_secs_f64();
    }
    let last = timeline.keys().next_back().map_or(0, |t| t + 1);
    m.timeline = (0..last)
        .map(|t| match timeline.remove(&t) {
            Some((mut r, h)) => {
                // (add_second kept the first shard's server row.)
                let p = super::result::ms(&h);
                (r.p50_ms, r.p90_ms, r.p99_ms, r.max_ms) = (p.p50, p.p90, p.p99, p.max);
                r.v2 = if h.is_empty() { Vec::new() } else { v2(&h) };
                r
            }
            None => SecondResult {
                t,
                ..Default::default()
            },
        })
        .collect();
    if let Some(w) = &mut m.watch {
        // The shards' rows are one server's: the merged seconds are counted again.
        w.seconds = m.timeline.iter().filter(|r| r.server.is_some()).count() as u64;
        w.gaps = m.timeline.len() as u64 - w.seconds;
    }
    m
}

/// Two optional measurements combined by `f`; one alone is kept as it is.
fn either<T>(a: Option<T>, b: Option<T>, f: impl Fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, y) => x.or(y),
    }
}

/// Adds second `b` into `a` (the histograms apart).
fn add_second(a: &mut SecondResult, b: &SecondResult) {
    a.requests += b.requests;
    a.ok += b.ok;
    a.errors += b.errors;
    for (k, n) in &b.errors_by_kind {
        *a.errors_by_kind.entry(k.clone()).or_insert(0) += n;
    }
    a.bytes += b.bytes;
    a.dropped += b.dropped;
    a.active += b.active;
    a.cache_hits += b.cache_hits;
    a.retrans = either(a.retrans, b.retrans, |x, y| x + y);
    a.cpu_pct = either(a.cpu_pct, b.cpu_pct, f64::max);
    a.started += b.started;
    a.started_max_ms = a.started_max_ms.max(b.started_max_ms);
    a.syn_retrans += b.syn_retrans;
    a.early_retrans += b.early_retrans;
    // Every shard that watched the server saw all of it: one scrape stands, not a sum.
    if a.server.is_none() {
        a.server = b.server.clone();
    }
    if a.ep_v2.len() == b.ep_v2.len() {
        for (x, y) in a.ep_v2.iter_mut().zip(&b.ep_v2) {
            let mut h = store_v2::decode(x).unwrap_or_else(|_| new_histogram());
            if let Ok(o) = store_v2::decode(y) {
                let _ = h.add(&o);
            }
            *x = if h.is_empty() { Vec::new() } else { v2(&h) };
        }
    }
}
