//! One probe of one URL as a library function: follow the redirects (`-L`), sample
//! at least `config.count` rounds — more, adaptively, until every timing-based rule
//! can decide (`probe::sampler`) — and explain the result: the server-time label, the
//! findings, the "where the time goes" paragraph. `latscope probe` runs it for each
//! URL; `latscope serve` for each scheduled probe.

use crate::diagnose::{self, from_probe, rules, Facts, Finding};
use crate::net::{HttpVersionPref, NetError, Scheme};
use crate::probe::{self, ProbeConfig, ProbeResult, Sampling, Stop};

/// A probe and what it says.
#[derive(Debug, Clone)]
pub struct Probed {
    pub result: ProbeResult,
    pub findings: Vec<Finding>,
    /// "Where the time goes", when the probe measured enough to say.
    pub summary: Option<String>,
}

/// How many rounds: exactly `count` (`Fixed`), or at least `count` and more until the
/// rules can decide (`Adaptive`; a TCP ping always takes exactly `count` connects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounds {
    Fixed,
    Adaptive,
}

/// Probes `config.target` (the page its redirects end at, with `-L`). `stop` ends it
/// early with what was measured, or `NetError::Interrupted` before any.
pub async fn run(
    config: &ProbeConfig,
    rounds: Rounds,
    distance_km: Option<f64>,
    stop: &Stop,
) -> Result<Probed, NetError> {
    let offered_h2 = offered_h2(config);
    let sampling = if rounds == Rounds::Fixed || config.target.scheme == Scheme::Tcp {
        Sampling::fixed(config.count)
    } else {
        Sampling::adaptive(config.count)
    };
    let mut decided = |rs: &[ProbeResult]| {
        diagnose::decided(&Facts {
            probe: rs.first().map(|p| from_probe::probe_facts(p, offered_h2)),
            distance_km,
            ..Facts::default()
        })
    };
    let (config, chain) = probe::redirect::follow(config, stop).await?;
    let mut out = probe::sample(std::slice::from_ref(&config), &sampling, stop, &mut decided).await;
    let mut r = out.remove(0)?;
    r.redirects = chain.hops;
    r.dropped_headers = chain.dropped_headers;
    r.set_distance(distance_km);
    let (findings, summary) = explain(&mut r, offered_h2, distance_km);
    Ok(Probed {
        result: r,
        findings,
        summary,
    })
}

/// Whether the client offered HTTP/2 (over TCP), which some rules ask.
pub fn offered_h2(config: &ProbeConfig) -> bool {
    config.client.version != HttpVersionPref::Http1 && !config.client.http3
}

/// Runs the rules over one probe: sets its server-time label, returns its findings and
/// the "where the time goes" paragraph.
pub fn explain(
    r: &mut ProbeResult,
    offered_h2: bool,
    distance_km: Option<f64>,
) -> (Vec<Finding>, Option<String>) {
    let facts = Facts {
        probe: Some(from_probe::probe_facts(r, offered_h2)),
        distance_km,
        ..Facts::default()
    };
    r.server_time_label = rules::facts_time_label(&facts).to_string();
    (diagnose::run_rules(&facts), diagnose::summary(&facts))
}
