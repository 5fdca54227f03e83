//! The finding rules: each a small pure function over facts that returns a finding
//! (or none). Every rule has an absolute floor besides any ratio, so tiny numbers with
//! big ratios (a 0.3 ms p50 and a 3 ms p99) never fire; load rules stay quiet when
//! latscope itself was the bottleneck (`client-bound`).

pub mod cache;
pub mod cdn;
pub mod cdn_cost;
pub mod cold;
pub mod connection;
pub mod content;
pub mod disk;
pub mod disk_cause;
pub mod dns;
pub mod edge_hop;
pub mod evidence;
pub mod http3;
pub mod load;
pub mod page;
pub mod page_early;
pub mod page_visits;
pub mod rate;
pub mod server;
pub mod spikes;
pub mod status;
pub mod tcp;
pub mod timeline;
pub mod timing;
pub mod tls;

use super::cache_status::{proxy_header, CacheState};
use super::facts::{Facts, ProbeFacts};
use super::finding::Finding;

/// Every finding id the rules can emit (docs/findings.md documents each).
pub const IDS: &[&str] = &[
    "error-status",
    "cold-start",
    "server-dominates",
    "server-timing-gap",
    "network-dominates",
    "above-physical-floor",
    "slow-dns",
    "dns-cold",
    "slow-receive",
    "slow-start",
    "retransmits",
    "server-retransmits",
    "listen-queue-overflow",
    "server-cpu-saturated",
    "syn-retries",
    "handshake-dominates",
    "no-keepalive",
    "no-tls-resumption",
    "old-tls-version",
    "no-http2",
    "no-http3",
    "http3-slower",
    "cache-status",
    "cdn-not-caching",
    "cdn-cost",
    "not-shared-cacheable",
    "cached-set-cookie",
    "vary-fragments",
    "no-validators",
    "no-304",
    "no-compression",
    "redirect-chain",
    "redirect-not-followed",
    "client-bound",
    "knee",
    "errors-under-load",
    "rate-not-sustained",
    "periodic-spikes",
    "lone-spike",
    "tail-heavy",
    "disk-iops-cap",
    "disk-bandwidth-cap",
    "disk-added-latency",
    "disk-flush-cost",
    "disk-tail",
    "slow-fsync",
    "render-blocking-far-origin",
    "uncached-on-repeat",
    "subresource-redirect",
    "h1-connection-limit",
    "no-preconnect",
    "large-before-lcp",
    "too-many-origins",
];

/// Runs every rule over whatever facts are present, in catalogue order (unsorted).
pub fn all(facts: &Facts) -> Vec<Finding> {
    let mut out: Vec<Option<Finding>> = Vec::new();
    let proxied = behind_proxy(facts);
    if let Some(p) = &facts.probe {
        out.push(status::error_status(p));
        out.push(cold::cold_start(p).or_else(|| cold::first_only(p, facts.origin.as_ref())));
        out.push(connection::handshake_dominates(p));
        out.push(connection::no_keepalive(p));
        out.push(connection::no_tls_resumption(p));
        out.push(tls::old_tls_version(p));
        out.push(connection::no_http2(p));
        out.push(connection::slow_start(p));
        out.push(timing::time_split(p, proxied));
        out.push(timing::server_timing_gap(p, proxied));
        out.push(timing::slow_dns(p));
        out.push(dns::dns_cold(p));
        out.push(timing::slow_receive(p));
        out.push(tcp::probe_syn_retries(p));
        out.push(tcp::probe_retransmits(p));
        out.push(load::probe_tail_heavy(p));
        out.push(content::no_compression(p));
        out.push(content::redirect_chain(p));
        out.push(content::redirect_not_followed(p));
        if let Some(d) = facts.distance_km {
            out.push(timing::above_physical_floor(p, d));
        }
        if let Some(o) = &facts.origin {
            out.push(cdn::cdn_cost(p, o));
        }
        if let Some(h3) = &facts.http3 {
            out.push(http3::no_http3(p, h3));
            out.push(http3::http3_slower(p, h3));
        }
    }
    if let Some(c) = &facts.cache {
        out.push(cdn::cdn_not_caching(c));
        out.push(cdn::cache_status(c));
        out.push(cache::not_shared_cacheable(c));
        out.push(cache::cached_set_cookie(c));
        out.push(cache::vary_fragments(c));
        out.push(cache::no_validators(c));
        out.push(cache::no_304(c));
    }
    // When every request failed (a closed port, a URL that always errors) the run's own
    // error says so; the latencies and CPU of failures judge nothing, and errors from
    // the start are not "under load".
    if let Some(l) = facts.load.as_ref().filter(|l| !load::none_succeeded(l)) {
        out.push(content::load_redirects(l));
        let bound = load::client_bound(l);
        let trusted = bound.is_none();
        out.push(bound);
        if trusted {
            out.push(load::knee(l));
            out.push(load::errors_under_load(l));
            out.push(rate::rate_not_sustained(l));
            out.push(load::tail_heavy(l));
            out.push(timeline::periodic_spikes(l));
            out.push(timeline::lone_spike(l));
            out.push(timeline::retransmits(l));
            out.push(tcp::load_syn_retries(l));
            out.push(server::server_cpu_saturated(l));
            out.push(server::listen_queue_overflow(l));
            out.push(server::server_retransmits(l));
        }
    }
    if let Some(d) = &facts.disk {
        out.push(disk::iops_cap_finding(d).or_else(|| disk_cause::iops_cap(d)));
        out.push(disk_cause::bandwidth_cap(d));
        out.push(disk_cause::added_latency(d));
        out.push(disk_cause::flush_cost(d));
        out.push(disk::disk_tail(d));
        out.push(disk::slow_fsync(d));
    }
    out.into_iter().flatten().collect()
}

/// A CDN or proxy is in the path (its headers, or `--origin` was given): the kernel
/// RTT then ends at the edge.
pub fn behind_proxy(facts: &Facts) -> bool {
    facts.origin.is_some()
        || facts
            .probe
            .as_ref()
            .is_some_and(|p| proxy_header(&p.headers).is_some())
}

/// What the time after one round trip is called: "server", or behind a CDN/proxy
/// "edge → origin + server" (never "server": the kernel RTT ends at the edge).
pub fn server_label(proxied: bool) -> &'static str {
    if proxied {
        "edge → origin + server"
    } else {
        "server"
    }
}

/// What the time after one round trip is called for this probe: "edge (cache hit)"
/// when a CDN or proxy answered it from its cache (the origin was not asked), else
/// [`server_label`].
pub fn time_label(p: &ProbeFacts, proxied: bool) -> &'static str {
    if proxied && super::cache_status::cache_status(&p.headers).state == CacheState::Hit {
        EDGE_HIT
    } else {
        server_label(proxied)
    }
}

/// [`time_label`] of the facts' probe ([`server_label`] without one).
pub fn facts_time_label(f: &Facts) -> &'static str {
    let proxied = behind_proxy(f);
    f.probe
        .as_ref()
        .map_or(server_label(proxied), |p| time_label(p, proxied))
}

/// The label of the time after one round trip when the edge answered from cache.
pub const EDGE_HIT: &str = "edge (cache hit)";

/// Median of the finite values (NaN when empty).
pub use crate::stats::median;

/// Nearest-rank percentile (q in 0..=1) of the finite values (NaN when empty).
pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The series whose p50s describe a steady request: reused when measured, else fresh.
pub(crate) fn steady(p: &ProbeFacts) -> Option<&super::facts::SeriesFacts> {
    p.reused
        .as_ref()
        .filter(|s| s.count > 0)
        .or(p.fresh.as_ref().filter(|s| s.count > 0))
}

/// Formats milliseconds for titles.
pub(crate) fn ms(v: f64) -> String {
    crate::units::fmt_ms(v)
}

/// Formats a ratio for titles ("117×", "2.4×").
pub(crate) fn times(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::*;

    /// Median and nearest-rank percentile on small inputs.
    #[test]
    fn median_and_percentile() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(times(117.2), "117×");
        assert_eq!(times(2.44), "2.4×");
    }
}
