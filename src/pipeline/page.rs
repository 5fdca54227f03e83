//! `latscope page`'s sequence as a library: the visits (`page::run`), then each origin
//! on the median first visit's critical path probed with latscope's own rules (the
//! handshakes in round trips, DNS, the cache audit, HTTP/2 offered or not,
//! compression), then the findings: the page rules decided across the visits, and each
//! origin's, named by its origin. A waterfall says that a font waited 120 ms for its
//! connection; the origin's probe says why (three round trips of 40 ms, no session
//! resumption, no HTTP/2…).

use std::time::{Duration, Instant};

use crate::diagnose::{rules, sort_findings, Finding, Severity};
use crate::net::{ClientOptions, NetError, ResolveOverride, Target};
use crate::page::cdp::CdpError;
use crate::page::model::{PageRun, Request, Visit, VisitKind};
use crate::page::PageOptions;
use crate::probe::ProbeConfig;
use crate::schema::PageOrigin;

use super::probe::{Probed, Rounds};
use super::Halt;

/// The most origins probed: the page's own and three others.
pub const MAX_ORIGINS: usize = 4;
/// Rounds (a fresh and a reused request each) at least, per origin.
const SAMPLES: u32 = 5;
/// The bound on one origin's probe.
const PROBE_LIMIT: Duration = Duration::from_secs(15);
/// One request's bound in those probes.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A page run and what it says.
pub struct Paged {
    pub run: PageRun,
    pub origins: Vec<PageOrigin>,
    /// The page rules' and the origins', sorted.
    pub findings: Vec<Finding>,
}

/// Visits the page, then probes the origins its first paint waited for (unless
/// `probe_origins` is false, or the run was halted): `runtime` runs the probes.
pub fn run(
    opts: &PageOptions,
    probe_origins: bool,
    halt: &Halt,
    runtime: &tokio::runtime::Runtime,
) -> Result<Paged, CdpError> {
    let started = Instant::now();
    let run = crate::page::run(opts, &halt.flag)?;
    let mut findings = rules::page::all(&run);
    let mut origins = Vec::new();
    if probe_origins && !halt.is_halted() {
        if let Some(v) = run.median(VisitKind::First) {
            for r in critical_origins(v) {
                let left = opts.max_time.saturating_sub(started.elapsed());
                if left.is_zero() || halt.is_halted() {
                    break;
                }
                let outcome = runtime.block_on(probe(r, opts, left.min(PROBE_LIMIT), halt));
                let mut o = PageOrigin {
                    origin: r.origin.clone(),
                    url: r.url.clone(),
                    resource_type: r.resource_type.clone(),
                    ..PageOrigin::default()
                };
                match outcome {
                    Ok(p) => {
                        let warned = origin_findings(&o, &p);
                        o.findings = warned.iter().map(|f| f.id.clone()).collect();
                        o.summary = p.summary;
                        o.http_version = p.result.http_version.clone();
                        o.min_rtt_ms = p.result.tcp.map(|t| t.min_rtt_ms);
                        o.handshake_round_trips = p.result.handshake_round_trips;
                        o.server_ms = p.result.server_time_ms.map(|s| s.p50);
                        findings.extend(warned);
                    }
                    Err(e) => o.error = Some(e),
                }
                origins.push(o);
            }
        }
    }
    sort_findings(&mut findings);
    Ok(Paged {
        run,
        origins,
        findings,
    })
}

/// Per origin the request probed, the page's own first: the document, then for each
/// other origin its render-blocking request, else its longest that ended before the
/// largest paint — fetched over the network, a GET answered 2xx; at most
/// [`MAX_ORIGINS`], the render-blocking ones first, then the longest.
pub fn critical_origins(v: &Visit) -> Vec<&Request> {
    let Some(doc) = v.document() else {
        return Vec::new();
    };
    let paint = v.milestones.lcp_ms.or(v.milestones.fcp_ms);
    let mut out: Vec<&Request> = vec![doc];
    for r in &v.requests {
        let critical = r.render_blocking == "blocking" || paint.is_some_and(|p| r.end_ms <= p);
        if !critical
            || r.from_cache
            || r.blocked
            || !r.error.is_empty()
            || r.method != "GET"
            || !(200..300).contains(&r.status)
            || !(r.url.starts_with("http://") || r.url.starts_with("https://"))
        {
            continue;
        }
        match out.iter_mut().find(|o| o.origin == r.origin) {
            Some(o) if o.origin != doc.origin && rank(r) > rank(o) => *o = r,
            Some(_) => {}
            None => out.push(r),
        }
    }
    // The most critical others keep their places: render-blocking, then the longest.
    out[1..].sort_by(|a, b| {
        rank(b)
            .partial_cmp(&rank(a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out.truncate(MAX_ORIGINS);
    out
}

/// Which request of an origin stands for it: a render-blocking one before any other
/// (the paint certainly waited for it), then the longest.
fn rank(r: &Request) -> (bool, f64) {
    (r.render_blocking == "blocking", r.end_ms - r.start_ms)
}

/// Probes `r.url` as the browser reached it (`--resolve`, `-k`), within `limit`.
async fn probe(
    r: &Request,
    opts: &PageOptions,
    limit: Duration,
    halt: &Halt,
) -> Result<Probed, String> {
    let target = Target::parse(&r.url).map_err(|e| e.to_string())?;
    let resolve = opts
        .resolve
        .iter()
        .filter(|(host, _)| host.eq_ignore_ascii_case(&target.host))
        .filter_map(|(host, addr)| {
            Some(ResolveOverride {
                host: host.clone(),
                port: target.port,
                addr: addr.trim_matches(['[', ']']).parse().ok()?,
            })
        })
        .collect();
    let config = ProbeConfig {
        target,
        count: SAMPLES,
        request: Default::default(),
        client: ClientOptions {
            timeout: REQUEST_TIMEOUT,
            insecure: opts.insecure,
            resolve,
            ..ClientOptions::default()
        },
        secret_headers: Vec::new(),
    };
    match tokio::time::timeout(
        limit,
        super::probe::run(&config, Rounds::Adaptive, None, &halt.stop),
    )
    .await
    {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(NetError::Interrupted)) => Err("interrupted".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no answer within {}",
            humantime::format_duration(limit)
        )),
    }
}

/// An origin's warnings, named by it: its id and evidence as the probe made them, the
/// title led by the origin and the request probed.
fn origin_findings(o: &PageOrigin, p: &Probed) -> Vec<Finding> {
    p.findings
        .iter()
        .filter(|f| f.severity >= Severity::Warn)
        .map(|f| {
            let mut f = f.clone();
            f.title = format!(
                "{} ({} {}): {}",
                o.origin,
                o.resource_type.to_lowercase(),
                rules::page::short_url(&o.url),
                f.title
            );
            f.text("origin", &o.origin).text("probed_url", &o.url)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::model::Milestones;

    fn req(url: &str, ty: &str, start: f64, end: f64) -> Request {
        let mut r = Request::for_tests(url, ty);
        (r.start_ms, r.end_ms) = (start, end);
        r
    }

    /// The document's origin first (the document itself, not its longer image); a
    /// render-blocking stylesheet, even one that ended after the paint and beside a
    /// longer image of its origin; per other origin its longest request before the
    /// paint; nothing from the cache, blocked, failed or after the paint.
    #[test]
    fn the_origins_the_first_paint_waited_for() {
        let mut css = req("http://b.test/s.css", "Stylesheet", 250.0, 300.0);
        css.render_blocking = "blocking".into();
        let mut cached = req("http://e.test/c.js", "Script", 5.0, 50.0);
        cached.from_cache = true;
        let mut blocked = req("http://f.test/x.js", "Script", 5.0, 50.0);
        blocked.blocked = true;
        let mut failed = req("http://g.test/y.js", "Script", 5.0, 50.0);
        failed.status = 500;
        let v = Visit {
            kind: VisitKind::First,
            index: 1,
            milestones: Milestones {
                lcp_ms: Some(200.0),
                ..Milestones::default()
            },
            requests: vec![
                req("http://a.test/", "Document", 0.0, 20.0),
                req("http://a.test/big.png", "Image", 30.0, 190.0),
                req("http://b.test/long.png", "Image", 1.0, 199.0),
                css,
                req("http://c.test/short.woff2", "Font", 40.0, 60.0),
                req("http://c.test/long.woff2", "Font", 40.0, 150.0),
                req("http://d.test/late.png", "Image", 40.0, 400.0),
                cached,
                blocked,
                failed,
            ],
            started_wall_ms: 0.0,
            title: String::new(),
            loaded: true,
        };
        let urls: Vec<&str> = critical_origins(&v)
            .iter()
            .map(|r| r.url.as_str())
            .collect();
        assert_eq!(
            urls,
            [
                "http://a.test/",
                "http://b.test/s.css",
                "http://c.test/long.woff2"
            ]
        );
    }
}
