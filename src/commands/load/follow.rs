//! `latscope load -L`: the URL's redirects followed once before the run.

use anyhow::Context;

use crate::commands::interrupt::Interrupt;
use crate::load;

/// `-L`: follows the URL's redirects once before the run (what `curl -L` would do
/// first) and points the plan at the page they end at, with the request as it is
/// sent there (credentials dropped when the chain left the first origin).
pub(super) fn follow_first(
    plan: &mut load::LoadPlan,
    redact: &[String],
    interrupt: &Interrupt,
) -> anyhow::Result<Vec<crate::probe::audit::Hop>> {
    if plan.client.follow_redirects.is_none() {
        return Ok(Vec::new());
    }
    if plan.endpoints.len() != 1 {
        return Err(crate::usage!(
            "-L follows one URL's redirects: give each request of a scenario its final URL"
        ));
    }
    let ep = &plan.endpoints[0];
    let request = crate::net::RequestSpec {
        method: ep.method.clone(),
        headers: ep.headers.clone(),
        body: ep.body.clone(),
    };
    let config = crate::probe::ProbeConfig {
        target: plan.target.clone(),
        count: 1,
        secret_headers: crate::config::diagnose::secret_headers(&request, redact),
        request,
        client: plan.client.clone(),
    };
    let (last, chain) = interrupt
        .runtime
        .block_on(crate::probe::redirect::follow(&config, &interrupt.stop))
        .context("following the URL's redirects (-L)")?;
    plan.target = last.target.clone();
    let ep = &mut plan.endpoints[0];
    ep.path_and_query = last.target.path_and_query;
    ep.method = last.request.method;
    ep.headers = last.request.headers;
    ep.body = last.request.body;
    Ok(chain.hops)
}
