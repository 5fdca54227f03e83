//! Shards joined into one run (`latscope merge`): the shards' results (read back by
//! `schema::shards`) are added — overall, per endpoint, and per second aligned on the
//! wall clock — so the merged percentiles are what one process measuring every
//! request would have reported.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;

use super::result::{LoadResult, SecondResult};
use super::seconds::v2;
use crate::stats::histogram::new_histogram;
use crate::stats::v2 as store_v2;

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
        m.wake_window = either(m.wake_window, p.wake_window, Duration::max);
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
                    add_checks(o, &e);
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

/// Adds `e`'s checks into `o`'s, their failures matched by check name (shards of
/// one plan name them alike, but a stored run keeps only the names that failed).
fn add_checks(o: &mut super::result::EndpointResult, e: &super::result::EndpointResult) {
    o.checks.total += e.checks.total;
    o.checks.passed += e.checks.passed;
    o.checks
        .failed
        .resize(o.check_names.len().max(o.checks.failed.len()), 0);
    for (i, n) in e.checks.failed.iter().enumerate() {
        let name = e
            .check_names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("check {}", i + 1));
        match o.check_names.iter().position(|x| *x == name) {
            Some(j) if j < o.checks.failed.len() => o.checks.failed[j] += n,
            _ => {
                o.check_names.push(name);
                o.checks.failed.resize(o.check_names.len() - 1, 0);
                o.checks.failed.push(*n);
            }
        }
    }
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
    a.checks += b.checks;
    a.checks_failed += b.checks_failed;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::recorder::{endpoint_histogram, Checks};
    use crate::load::result::EndpointResult;

    fn ep(total: u64, passed: u64, failed: &[(&str, u64)]) -> EndpointResult {
        EndpointResult {
            name: "me".into(),
            requests: total,
            ok: total,
            bytes: 0,
            latency: endpoint_histogram(1),
            elapsed_s: 1.0,
            checks: Checks {
                total,
                passed,
                failed: failed.iter().map(|(_, n)| *n).collect(),
            },
            check_names: failed.iter().map(|(c, _)| c.to_string()).collect(),
        }
    }

    /// Shards' checks add up, failures matched by check name (a stored shard keeps
    /// only the names that failed, in its own order).
    #[test]
    fn checks_merge_by_name() {
        let mut a = ep(10, 7, &[("status", 2), ("json $.user", 1)]);
        let b = ep(10, 6, &[("json $.user", 3), ("body_contains", 1)]);
        add_checks(&mut a, &b);
        assert_eq!((a.checks.total, a.checks.passed), (20, 13));
        let got: Vec<(String, u64)> = a
            .check_names
            .iter()
            .cloned()
            .zip(a.checks.failed.iter().copied())
            .collect();
        assert_eq!(
            got,
            [
                ("status".to_string(), 2),
                ("json $.user".to_string(), 4),
                ("body_contains".to_string(), 1)
            ]
        );
    }
}
