//! Adapter: a load run's result as the facts the rules read. Load results are plain
//! data; this is where diagnosis reads them (not the other way round).

use crate::load::result::ms;
use crate::load::LoadResult;

use super::facts::{LoadFacts, Second};

/// What the finding rules read of a load run.
pub fn load_facts(r: &LoadResult) -> LoadFacts {
    let p = ms(&r.latency);
    LoadFacts {
        steps: Vec::new(),
        timeline: r
            .timeline
            .iter()
            .map(|s| Second {
                t: s.t,
                requests: s.requests,
                errors: s.errors,
                p50_ms: s.p50_ms,
                p99_ms: s.p99_ms,
                max_ms: s.max_ms,
                retrans: s.retrans.unwrap_or(0),
                syn_retrans: s.host_syn_retrans.unwrap_or(0),
                client_syn_retrans: s.syn_retrans,
                client_early_retrans: s.early_retrans,
                started: s.started,
                started_max_ms: s.started_max_ms,
                endpoints: s.endpoints.clone(),
                server: s.server.clone(),
            })
            .collect(),
        p50_ms: p.p50,
        p99_ms: p.p99,
        p999_ms: p.p999,
        requests: r.requests,
        errors: r.error_count(),
        errors_by_kind: r.errors.clone(),
        connect_ms: r
            .connect
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1e6, v.count_at_value()))
            .collect(),
        latency_ms: r
            .latency
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1e6, v.count_at_value()))
            .collect(),
        client_cpu_pct: Some(r.client_cpu_pct),
        client_wait_pct: r.client_wait_pct,
        threads: r.threads as u32,
        target_rps: r.target_rps,
        // Over the planned length: the end-of-run grace is not time the rate ran.
        achieved_rps: r.requests as f64
            / r.run_length
                .map_or(r.elapsed, |l| l.min(r.elapsed))
                .as_secs_f64()
                .max(1e-9),
        dropped: r.dropped,
        incomplete: r.incomplete,
        endpoints: r.endpoints.iter().map(|e| e.name.clone()).collect(),
        client_syn_retrans: Some(r.syn_retrans),
        client_syn_retried_conns: r.syn_retried_conns,
        client_early_retrans: (r.data_retrans.is_some()).then_some(r.early_retrans),
        client_data_retrans: r.data_retrans,
        cache_hits: r.cache_hits,
        redirects: redirects(r).map_or(0, |(_, n)| n),
        redirect_status: redirects(r).map_or(0, |(s, _)| s),
    }
}

/// Redirect responses (3xx other than 304): the most frequent status, and how many
/// there were in all.
fn redirects(r: &LoadResult) -> Option<(u16, u64)> {
    let of = || {
        r.statuses
            .iter()
            .filter(|(s, n)| (300..400).contains(*s) && **s != 304 && **n > 0)
    };
    let total: u64 = of().map(|(_, n)| n).sum();
    let top = of().max_by_key(|(_, n)| **n).map(|(s, _)| *s)?;
    Some((top, total))
}
