//! Diagnose's HTTP/3 discovery, as browsers do it: read `Alt-Svc` (RFC 7838) from the
//! probe over TCP and, when it offers no h3, the host's HTTPS DNS record (RFC 9460);
//! when either offers h3 on the same host (or `--http3` asks), probe h3 too — and
//! HTTP/1.1 beside an HTTP/2 probe — so h1/h2/h3 stand side by side. An h3 probe
//! that fails is kept as an error (the TCP probe is the fallback), never a failed
//! diagnosis; so is a lookup that fails.

use crate::diagnose::diagnosis::Http3Probe;
use crate::diagnose::Http3Facts;
use crate::load::Progress;
use crate::net::{alt_svc, svcb, Scheme, Target};
use crate::net::{HttpVersionPref, ResolveOverride};
use crate::observe::Observer;
use crate::pipeline::Halt;
use crate::probe::{self, ProbeConfig, ProbeResult};

/// The longest the HTTPS record lookup may take (a resolver answers in milliseconds;
/// one that does not costs the diagnosis at most this).
const HTTPS_RR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest an HTTP/3 request (handshake included) may take during discovery.
const H3_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Probes what `main` (the probe over TCP) says about HTTP/3; None on plain http.
/// `asked`: `--http3` was given (h3 is tried on the URL's port without an offer).
pub(crate) fn discover(
    runtime: &tokio::runtime::Runtime,
    halt: &Halt,
    config: &ProbeConfig,
    main: &ProbeResult,
    asked: bool,
    obs: &mut dyn Observer<Progress>,
) -> Option<Http3Probe> {
    let target = &config.target;
    if target.scheme != Scheme::Https {
        return None;
    }
    let alt_svc = main.headers.get("alt-svc").cloned();
    let mut found = Http3Probe {
        alt_svc,
        ..Http3Probe::default()
    };
    let mut offered = found
        .alt_svc
        .as_deref()
        .and_then(|v| alt_svc::h3_port(v, &target.host));
    if offered.is_some() {
        found.offered_by = Some("alt-svc");
    } else if asks_dns(config) && !halt.stop.is_stopped() {
        obs.message(&format!("{target}: looking up its HTTPS DNS record…"));
        let lookup = svcb::lookup(&target.host, target.port, HTTPS_RR_TIMEOUT);
        match runtime.block_on(lookup) {
            Ok(records) => {
                found.https_rr_checked = true;
                let mut service: Vec<_> = records.iter().filter(|r| r.priority > 0).collect();
                service.sort_by_key(|r| r.priority);
                if let Some((r, port)) = service
                    .iter()
                    .find_map(|r| Some((r, r.h3_port(&target.host, target.port)?)))
                {
                    found.https_rr = Some(r.presentation());
                    found.offered_by = Some("https-rr");
                    offered = Some(port);
                }
            }
            Err(e) => found.https_rr_error = Some(e),
        }
    }
    let port = offered.or(asked.then_some(target.port));
    found.port = port;
    let Some(port) = port else {
        return Some(found);
    };
    if halt.stop.is_stopped() {
        found.error = Some(format!("not measured: {}", halt.reason()));
        return Some(found);
    }
    obs.message(&format!("{target}: probing HTTP/3 on UDP port {port}…"));
    let mut h3 = config.clone();
    h3.client.http3 = true;
    // A browser gives a QUIC attempt well under a second before it falls back to
    // TCP; at most 3 s here, so blocked UDP costs the diagnosis ≤ 3 tries × 3 s.
    h3.client.timeout = h3.client.timeout.min(H3_TIMEOUT);
    h3.client.version = HttpVersionPref::Auto;
    if port != target.port {
        match on_port(target, port) {
            Some(t) => h3.target = t,
            None => {
                found.error = Some(format!("cannot build the URL for port {port}"));
                return Some(found);
            }
        }
        // A --resolve for the origin's port holds for the alternative port too.
        let extra: Vec<ResolveOverride> = h3
            .client
            .resolve
            .iter()
            .filter(|r| r.port == target.port && r.host.eq_ignore_ascii_case(&target.host))
            .map(|r| ResolveOverride { port, ..r.clone() })
            .collect();
        h3.client.resolve.extend(extra);
    }
    let waited = crate::load::sys::process_run_delay_ns();
    match runtime.block_on(probe::probe(&h3, &halt.stop)) {
        Ok(r) => found.h3 = Some(r),
        Err(e) => found.error = Some(e.to_string()),
    }
    if let (Some(before), Some(after)) = (waited, crate::load::sys::process_run_delay_ns()) {
        found.client_cpu_wait_ms = Some(after.saturating_sub(before) as f64 / 1e6);
    }
    if main.http_version.as_deref() == Some("HTTP/2") && !halt.stop.is_stopped() {
        obs.message(&format!("{target}: probing HTTP/1.1 beside them…"));
        let mut h1 = config.clone();
        h1.client.http3 = false;
        h1.client.version = HttpVersionPref::Http1;
        found.h1 = runtime.block_on(probe::probe(&h1, &halt.stop)).ok();
    }
    Some(found)
}

/// The facts the HTTP/3 rules read.
pub(crate) fn facts(h: &Http3Probe) -> Http3Facts {
    let p50 =
        |s: Option<&probe::SeriesSummary>| s.filter(|s| s.count > 0).map(|s| s.phases_ms.ttfb.p50);
    Http3Facts {
        alt_svc: h.alt_svc.clone(),
        https_rr: h.https_rr.clone(),
        https_rr_checked: h.https_rr_checked,
        port: h.port,
        fresh_ttfb_ms: h.h3.as_ref().and_then(|r| p50(Some(&r.fresh))),
        reused_ttfb_ms: h.h3.as_ref().and_then(|r| p50(r.reused.as_ref())),
        client_cpu_wait_per_visit_ms: h
            .h3
            .as_ref()
            .filter(|r| !r.samples.is_empty())
            .and_then(|r| Some(h.client_cpu_wait_ms? / r.samples.len() as f64)),
        fresh_lost_per_visit: h.h3.as_ref().and_then(|r| {
            let q = r.quic.as_ref()?;
            (r.fresh.count > 0).then(|| q.fresh_lost_packets as f64 / r.fresh.count as f64)
        }),
        fresh_ttfb_min_ms: h
            .h3
            .as_ref()
            .filter(|r| r.fresh.count > 0)
            .map(|r| r.fresh.phases_ms.ttfb.min),
        // The first visits, each less the time latscope waited for a CPU during it.
        fresh_ttfb_samples_ms: h
            .h3
            .as_ref()
            .map(|r| {
                r.ok_samples(probe::Series::Fresh)
                    .filter_map(|s| Some((s.phases_ms.ttfb - s.client_wait_ms?).max(0.0)))
                    .collect()
            })
            .unwrap_or_default(),
        error: h.error.clone(),
    }
}

/// Whether the HTTPS record is looked up: a name the resolver would be asked about
/// (not an IP literal, not `localhost` (RFC 6761), not pinned by `--resolve`, which
/// keeps DNS out of the measurement as in curl).
fn asks_dns(config: &ProbeConfig) -> bool {
    let host = config
        .target
        .host
        .trim_end_matches('.')
        .to_ascii_lowercase();
    host.parse::<std::net::IpAddr>().is_err()
        && host != "localhost"
        && !host.ends_with(".localhost")
        && !config
            .client
            .resolve
            .iter()
            .any(|r| r.host.eq_ignore_ascii_case(&config.target.host))
}

/// `target` with another port (same scheme, host, path).
fn on_port(target: &Target, port: u16) -> Option<Target> {
    let host = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    let url = format!("https://{host}:{port}{}", target.path_and_query);
    Target::parse(&url).ok()
}
