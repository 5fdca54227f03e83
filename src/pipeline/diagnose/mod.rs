//! One diagnosis as a library function: follow the redirects (`-L`), probe in
//! interleaved rounds with the origin (`--origin`) until the timing rules can decide,
//! the record's TTL, HTTP/3 discovery, the cache audit, a short load ramp where it is
//! allowed (with `--watch`'s scrapes), the stack behind the URL, then the facts, the
//! findings and the summary. `latscope diagnose`, the demo and the coming `latscope
//! serve` all run [`run`]; how it goes is told to an [`Observer`] (messages, and the
//! ramp's steps and seconds between [`Observer::begin`] and [`Observer::end`]).

pub(crate) mod http3;
pub(crate) mod ramp;
pub(crate) mod stack;

use std::time::Duration;

use crate::config::{self, DiagnoseConfig};
use crate::diagnose::diagnosis::Diagnosis;
use crate::diagnose::{self, from_probe, rules, Facts};
use crate::load::Progress;
use crate::net::{HttpVersionPref, NetError, ResolveOverride, Target};
use crate::observe::{Observer, Steps};
use crate::pipeline::Halt;
use crate::probe::{self, ProbeConfig, ProbeResult};

/// Why a URL could not be diagnosed (a ramp, an audit or an HTTP/3 probe that fails
/// is kept in the diagnosis instead).
#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    /// Following the redirects, or the probe of the URL itself, failed.
    #[error(transparent)]
    Probe(#[from] NetError),
    /// `--origin` names no usable address.
    #[error("{0}")]
    Origin(String),
    /// The probe of `--origin` failed.
    #[error("probing the origin {origin}: {source}")]
    OriginProbe { origin: String, source: NetError },
}

/// Diagnoses `target` as `plan` says, blocking on `runtime` for the probes. `halt`
/// ends it early, keeping what was measured (a ramp that had not started is skipped
/// with the reason); `obs` hears what it does.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    plan: &DiagnoseConfig,
    halt: &Halt,
    obs: &mut dyn Observer<Progress>,
) -> Result<Diagnosis, DiagnoseError> {
    // The main probe and the cache audit go over TCP (HTTP/1.1 or HTTP/2); HTTP/3 is
    // probed beside them when offered or asked for (`http3`).
    let mut config = ProbeConfig {
        target: target.clone(),
        count: plan.count,
        request: plan.request.clone(),
        client: plan.client.clone(),
        secret_headers: plan.secret_headers.clone(),
    };
    config.client.http3 = false;
    let stop = &halt.stop;
    // With -L everything below measures the page the redirects end at.
    let (config, chain) = if config.client.follow_redirects.is_some() {
        obs.message(&format!("{target}: following redirects…"));
        runtime.block_on(probe::redirect::follow(&config, stop))?
    } else {
        (config, probe::redirect::Chain::default())
    };
    let target = &config.target;
    let origin_config = match &plan.origin {
        Some(o) => Some(origin_config(target, &config, o)?),
        None => None,
    };
    obs.message(&format!(
        "{}: probing ({} rounds or more{})…",
        target,
        plan.count,
        if origin_config.is_some() {
            ", alternating with the origin"
        } else {
            ""
        }
    ));
    let (mut probe, origin) = sampled(runtime, halt, plan, &config, origin_config.as_ref())?;
    if let Some(d) = probe.dns.as_mut() {
        // The record's TTL, asked after the probe (so from the resolver's cache).
        d.ttl_s = runtime
            .block_on(crate::net::svcb::address_ttl(
                &target.host,
                Duration::from_secs(2),
            ))
            .ok()
            .flatten();
    }
    probe.redirects = chain.hops;
    probe.dropped_headers = chain.dropped_headers;
    let http3 = http3::discover(runtime, halt, &config, &probe, plan.client.http3, obs);
    obs.message(&format!("{target}: cache audit…"));
    let (cache, cache_error) = match runtime.block_on(probe::audit::audit(&config, stop)) {
        Ok(c) => (Some(c), None),
        Err(NetError::Interrupted) => (None, Some(halt.reason().to_string())),
        Err(e) => (None, Some(e.to_string())),
    };
    let (ramp, skipped) = if let Some(why) = &plan.no_load {
        (None, Some(why.clone()))
    } else if halt.is_halted() {
        (None, Some(halt.reason().to_string()))
    } else if !plan.force_load && !local_enough(&probe.addresses) {
        (
            None,
            Some(format!(
                "{} is a public address: the load ramp runs against public sites only with --load",
                probe.addresses.first().cloned().unwrap_or_default()
            )),
        )
    } else {
        obs.message("");
        obs.begin(&Steps {
            url: target.url.clone(),
            of: ramp::levels(plan.ramp.max_connections).len(),
            max_connections: plan.ramp.max_connections,
            length: plan.ramp.step,
        });
        let watcher = plan.watch.clone().map(crate::watch::Watcher::start);
        let ran = ramp::run(
            target,
            &config.request,
            &plan.client,
            &plan.ramp,
            &halt.flag,
            &mut Said { target, obs },
        );
        obs.end();
        match ran {
            Ok(mut r) => {
                if let Some(w) = watcher {
                    ramp::join_watched(&w.finish(), &mut r);
                }
                (Some(r), None)
            }
            Err(e) => (None, Some(format!("the load ramp failed: {e:#}"))),
        }
    };
    // After the ramp, so the stack's two requests never shift the ramp's timing.
    let stack = stack::gather(
        runtime,
        halt,
        &config,
        (&probe, cache.as_ref()),
        plan.peek,
        obs,
    );
    obs.message("");
    let offered_h2 = plan.client.version != HttpVersionPref::Http1;
    probe.set_distance(plan.distance_km);
    let mut probe_facts = from_probe::probe_facts(&probe, offered_h2);
    if let Some(c) = cache.as_ref().filter(|_| probe_facts.redirects.is_empty()) {
        probe_facts.redirects = from_probe::redirect_facts(c);
    }
    let hit_ratio = ramp.as_ref().and_then(|r| r.hit_ratio);
    let mut facts = Facts {
        probe: Some(probe_facts),
        origin: origin
            .as_ref()
            .map(|o| from_probe::probe_facts(o, offered_h2)),
        cache: cache
            .as_ref()
            .map(|c| from_probe::cache_facts(c, hit_ratio)),
        load: ramp.as_ref().map(|r| r.facts.clone()),
        disk: None,
        distance_km: plan.distance_km,
        http3: http3.as_ref().map(http3::facts),
    };
    if let Some(c) = facts.cache.as_mut() {
        c.probe_first = probe
            .first_request
            .and_then(|f| f.cache.map(|s| (s, f.ttfb_ms)));
    }
    if let (Some(c), Some(o)) = (facts.cache.as_mut(), facts.origin.as_ref()) {
        // What the origin answers in, to infer hits no header reports.
        c.origin_ttfb_ms = o
            .reused
            .as_ref()
            .or(o.fresh.as_ref())
            .filter(|s| s.count > 0)
            .map(|s| s.p50.ttfb);
    }
    let mut findings = diagnose::run_rules(&facts);
    diagnose::stack::attach(&mut findings, &facts, &stack);
    probe.server_time_label = rules::facts_time_label(&facts).to_string();
    let summary = diagnose::summary(&facts);
    Ok(Diagnosis {
        target: target.url.clone(),
        probe,
        cache,
        cache_error,
        origin,
        ramp,
        skipped,
        facts,
        findings,
        summary,
        http3,
        stack: Some(stack),
    })
}

/// Whether a load ramp may run by itself against these addresses: loopback, private,
/// link-local, or the lab's benchmarking range.
pub fn local_enough(addresses: &[String]) -> bool {
    !addresses.is_empty()
        && addresses
            .iter()
            .all(|a| match a.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(v4)) => {
                    v4.is_loopback()
                        || v4.is_private()
                        || v4.is_link_local()
                        || (v4.octets()[0] == 198 && (v4.octets()[1] & 0xfe) == 18)
                }
                Ok(std::net::IpAddr::V6(v6)) => {
                    v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00
                }
                Err(_) => false,
            })
}

/// The ramp's steps as the rest of the diagnosis says its own: each step also as a
/// message ("URL: load ramp, 4 connections…") for an observer that shows only lines.
struct Said<'a> {
    target: &'a Target,
    obs: &'a mut dyn Observer<Progress>,
}

impl Observer<Progress> for Said<'_> {
    fn step(&mut self, step: &crate::observe::Step) {
        self.obs.step(step);
        self.obs
            .message(&format!("{}: load ramp, {}…", self.target, step.level));
    }

    fn second(&mut self, second: &Progress) {
        self.obs.second(second);
    }

    fn step_done(&mut self, done: &crate::observe::StepDone) {
        self.obs.step_done(done);
    }

    fn message(&mut self, text: &str) {
        self.obs.message(text);
    }
}

/// The probe of `--origin`: the same URL, resolved to the origin's address (and
/// port, when given).
fn origin_config(
    target: &Target,
    config: &ProbeConfig,
    o: &str,
) -> Result<ProbeConfig, DiagnoseError> {
    let (ip, port) = config::diagnose::origin_override(o, target.port)
        .map_err(|e| DiagnoseError::Origin(format!("{e:#}")))?;
    let mut config = config.clone();
    config
        .client
        .resolve
        .retain(|r| r.host != target.host.to_ascii_lowercase());
    config.client.resolve.push(ResolveOverride {
        host: target.host.to_ascii_lowercase(),
        port: target.port,
        addr: ip,
    });
    if port != target.port {
        config.target = Target::parse(&target.url.replacen(
            &target.authority(),
            &format!("{}:{port}", target.host),
            1,
        ))
        .map_err(|e| DiagnoseError::Origin(e.to_string()))?;
        config.client.resolve.push(ResolveOverride {
            host: target.host.to_ascii_lowercase(),
            port,
            addr: ip,
        });
    }
    Ok(config)
}

/// The probe of the URL and, with `--origin`, of the origin, in interleaved rounds
/// (`probe::sampler`): at least `-n` rounds, more until every timing-based rule can
/// decide (bounded in rounds and time; the JSON's `probe.sampling` says how it ended).
fn sampled(
    runtime: &tokio::runtime::Runtime,
    halt: &Halt,
    plan: &DiagnoseConfig,
    config: &ProbeConfig,
    origin: Option<&ProbeConfig>,
) -> Result<(ProbeResult, Option<ProbeResult>), DiagnoseError> {
    let offered_h2 = plan.client.version != HttpVersionPref::Http1;
    let mut configs = vec![config.clone()];
    configs.extend(origin.cloned());
    let mut decided = |rs: &[ProbeResult]| {
        diagnose::decided(&Facts {
            probe: rs.first().map(|p| from_probe::probe_facts(p, offered_h2)),
            origin: rs.get(1).map(|p| from_probe::probe_facts(p, offered_h2)),
            distance_km: plan.distance_km,
            ..Facts::default()
        })
    };
    let mut out = runtime
        .block_on(probe::sample(
            &configs,
            &probe::Sampling::adaptive(plan.count),
            &halt.stop,
            &mut decided,
        ))
        .into_iter();
    let main = out.next().unwrap_or(Err(NetError::Interrupted))?;
    let origin = match (origin, out.next()) {
        (Some(_), Some(r)) => Some(r.map_err(|source| DiagnoseError::OriginProbe {
            origin: plan.origin.clone().unwrap_or_default(),
            source,
        })?),
        _ => None,
    };
    Ok((main, origin))
}

#[cfg(test)]
mod tests;
