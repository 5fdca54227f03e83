//! Diagnose's stack step (issue 32): the responses already seen (the probe's, the
//! cache audit's) and the peek's two (the page with its HTML, a 404 page) go to
//! `diagnose::stack::detect`. One call in the diagnose sequence.

use crate::diagnose::stack::{self, Observed, Stack};
use crate::load::Progress;
use crate::net::Target;
use crate::observe::Observer;
use crate::pipeline::Halt;
use crate::probe::audit::CacheObservation;
use crate::probe::{ProbeConfig, ProbeResult};

/// Recognises the stack behind `config.target` from the probe's and the audit's
/// responses and, with `peek`, at most two extra requests to the audited origin
/// (`probe::peek`), bounded in time.
pub(crate) fn gather(
    runtime: &tokio::runtime::Runtime,
    halt: &Halt,
    config: &ProbeConfig,
    (probe, cache): (&ProbeResult, Option<&CacheObservation>),
    peek: bool,
    obs: &mut dyn Observer<Progress>,
) -> Stack {
    let mut seen: Vec<Observed> = Vec::new();
    seen.push(Observed {
        status: probe.status.unwrap_or(0),
        headers: probe
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..Observed::default()
    });
    if let Some(c) = cache {
        for s in std::iter::once(&c.full).chain(&c.repeats) {
            seen.push(Observed {
                status: s.status,
                headers: s.headers.clone(),
                ..Observed::default()
            });
        }
    }
    // The page the audit ended on (after redirects) when it is still this origin.
    let mut cfg = config.clone();
    if let Some(t) = cache
        .and_then(|c| Target::parse(&c.url).ok())
        .filter(|t| t.scheme == config.target.scheme && t.port == config.target.port)
        .filter(|t| t.host.eq_ignore_ascii_case(&config.target.host))
    {
        cfg.target = t;
    }
    let mut error = None;
    if peek && !halt.stop.is_stopped() {
        obs.message(&format!("{}: recognising the stack…", config.target));
        let (peeked, e) = runtime.block_on(crate::probe::peek::peek(&cfg, &halt.stop));
        error = e;
        seen.extend(peeked.into_iter().map(|p| Observed {
            status: p.status,
            headers: p.headers,
            case_known: true,
            body: p.body,
            error_page: p.error_page,
        }));
    }
    let mut s = stack::detect(&seen);
    s.error = error;
    s
}
