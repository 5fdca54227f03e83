//! Page rules (`latscope page`): what a browser's waterfall says in network terms.
//! - `render-blocking-far-origin`: a render-blocking request on another origin than
//!   the page's paid DNS, TCP connect and TLS before its first byte, while the page
//!   could not paint (HTML's "render-blocking" as Resource Timing reports it);
//! - `uncached-on-repeat`: a static asset fetched again on the repeat visit instead
//!   of coming from the browser's cache (RFC 9111 §4: a stored, fresh response is
//!   reused without the network; `no-store`, `no-cache` or no freshness send it
//!   again);
//! - `subresource-redirect`: a sub-resource answered with a redirect (RFC 9110
//!   §15.4): a request more before the real one;
//! - `h1-connection-limit`: many requests to one HTTP/1.1 origin waited for one of
//!   the browser's six connections per host (RFC 9112 §9.4 leaves the number to the
//!   client; Chromium's is 6), where HTTP/2 would multiplex them on one.
//!
//! Each has an absolute floor: a few ms on loopback never fire. What the first visit
//! needed early and got late (`no-preconnect`, `large-before-lcp`, `too-many-origins`)
//! is in `page_early`. Each rule looks at one visit; `page_visits` decides across
//! the visits of a run.

use std::collections::BTreeMap;

use crate::cache::control::CacheControl;
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::page::model::{PageRun, Request, Visit, VisitKind};
use crate::units::fmt_ms;

/// Connection setup (DNS + connect + TLS) worth a finding on a render-blocking
/// request, ms.
const FAR_SETUP_MS: f64 = 10.0;
/// A request waiting this long for a connection counts as queued, ms.
const QUEUED_MS: f64 = 20.0;
/// … and this many queued requests make the finding.
const QUEUED_MIN: usize = 3;
/// Chromium's connections per host for HTTP/1.1.
const H1_CONNECTIONS: usize = 6;
/// Resource types that are static assets (cacheable by nature).
const STATIC: &[&str] = &["Stylesheet", "Script", "Image", "Font", "Media"];

/// Every page rule over a run, each decided across the visits of its kind
/// (`page_visits`: reported when more than half of them have it).
pub fn all(run: &PageRun) -> Vec<Finding> {
    let mut out = super::page_visits::decide(run.visits.iter(), VisitKind::First, first_visit);
    out.extend(super::page_visits::decide(
        run.visits.iter(),
        VisitKind::Repeat,
        uncached_on_repeat,
    ));
    out
}

/// The rules about a first visit (cold caches, new connections).
fn first_visit(v: &Visit) -> Vec<Finding> {
    let mut out = render_blocking_far_origin(v);
    out.extend(subresource_redirect(v));
    out.extend(h1_connection_limit(v));
    out.extend(super::page_early::no_preconnect(v));
    out.extend(super::page_early::large_before_lcp(v));
    out.extend(super::page_early::too_many_origins(v));
    out
}

/// The short form of a URL for titles: host and path, query left out.
pub fn short_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}{}{}",
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => url.to_string(),
    }
}

/// `render-blocking-far-origin`: one finding per origin (its slowest setup).
pub fn render_blocking_far_origin(v: &Visit) -> Vec<Finding> {
    let page = v.document().map(|d| d.origin.clone()).unwrap_or_default();
    let mut worst: BTreeMap<&str, &Request> = BTreeMap::new();
    for r in &v.requests {
        if r.render_blocking != "blocking" || r.origin == page || r.from_cache {
            continue;
        }
        if r.phases.setup() < FAR_SETUP_MS {
            continue;
        }
        let e = worst.entry(r.origin.as_str()).or_insert(r);
        if r.phases.setup() > e.phases.setup() {
            *e = r;
        }
    }
    worst
        .into_values()
        .map(|r| {
            let p = &r.phases;
            let setup = p.setup();
            // One round trip per TCP connect; TLS in round trips of the same size.
            let rtt = p.connect.filter(|c| *c > 0.0);
            let trips = rtt.map(|c| 1.0 + p.tls.unwrap_or(0.0) / c);
            let trips_text = trips
                .map(|t| {
                    let s = if t.round() == 1.0 { "" } else { "s" };
                    format!(" ({t:.0} round trip{s} of {})", fmt_ms(rtt.unwrap_or(0.0)))
                })
                .unwrap_or_default();
            Finding::new(
                "render-blocking-far-origin",
                Category::Network,
                Severity::Warn,
                format!(
                    "render-blocking {} from {}: {} of DNS/connect/TLS{trips_text} before its first byte",
                    r.resource_type.to_lowercase(),
                    r.origin,
                    fmt_ms(setup)
                ),
            )
            .text("url", &r.url)
            .text("origin", &r.origin)
            .text("resource_type", &r.resource_type)
            .opt_num("dns_ms", p.dns)
            .opt_num("connect_ms", p.connect)
            .opt_num("tls_ms", p.tls)
            .num("setup_ms", setup)
            .opt_num("round_trips", trips)
            .num("ttfb_ms", r.ttfb())
            .num("end_ms", r.end_ms)
            .opt_num("fcp_ms", v.milestones.fcp_ms)
            .advice(format!(
                "the page cannot paint until this arrives: serve it from the page's own origin \
                 (self-host), or at least open the connection early with \
                 <link rel=\"preconnect\" href=\"{}\"> in the <head>",
                r.origin
            ))
            .saving(setup, r.end_ms, basis::FRESH)
        })
        .collect()
}

/// `uncached-on-repeat`: static assets the repeat visit fetched over the network.
pub fn uncached_on_repeat(v: &Visit) -> Vec<Finding> {
    v.requests
        .iter()
        .filter(|r| {
            STATIC.contains(&r.resource_type.as_str())
                && !r.from_cache
                && !r.blocked
                && r.error.is_empty()
                && (r.status == 200 || r.status == 304)
        })
        .map(|r| {
            let cc = if r.cache_control.is_empty() {
                "no Cache-Control".to_string()
            } else {
                format!("Cache-Control: {}", r.cache_control)
            };
            let how = if r.status == 304 {
                "revalidated (304)"
            } else {
                "downloaded again"
            };
            let total = (r.end_ms - r.start_ms).max(0.0);
            // Headers that let the browser keep it: the cause is elsewhere (over HTTPS
            // with an ignored certificate error Chromium stores nothing).
            let allowed = browser_may_keep(&r.cache_control);
            let (severity, allows) = if allowed {
                (Severity::Info, ", which lets the browser keep it")
            } else {
                (Severity::Warn, "")
            };
            let finding = Finding::new(
                "uncached-on-repeat",
                Category::Cache,
                severity,
                format!(
                    "{} {} on the repeat visit, not from the browser cache ({cc}{allows}): {}",
                    short_url(&r.url),
                    how,
                    fmt_ms(total)
                ),
            )
            .text("url", &r.url)
            .text("resource_type", &r.resource_type)
            .text("cache_control", &r.cache_control)
            .count("status", u64::from(r.status))
            .count("bytes", r.encoded_bytes)
            .num("time_ms", total);
            if allowed {
                return finding.advice(
                    "its headers let the browser keep it, so the cause is not the server's \
                     Cache-Control: over HTTPS with a certificate error ignored (-k) Chromium \
                     caches nothing — measure with a certificate the browser trusts; \
                     otherwise look for a Vary header or a query string that changes between \
                     visits",
                );
            }
            finding
                .advice(
                    "a static asset with a versioned name (style.3f2a.css) can be cached for a \
                     year: Cache-Control: public, max-age=31536000, immutable; without a \
                     version in the name, give it a max-age and a validator (ETag) instead of \
                     no-store/no-cache",
                )
                .saving(total, total, basis::PER_REQUEST)
        })
        .collect()
}

/// Whether a `Cache-Control` lets a browser reuse the response without asking
/// (RFC 9111 §5.2.2.1: a positive max-age, and neither no-store nor no-cache).
fn browser_may_keep(cache_control: &str) -> bool {
    let cc = CacheControl::parse(cache_control);
    cc.max_age.is_some_and(|a| a > 0) && !cc.no_store && !cc.no_cache
}

/// `subresource-redirect`: each sub-resource answered with a redirect.
pub fn subresource_redirect(v: &Visit) -> Vec<Finding> {
    v.requests
        .iter()
        .filter(|r| r.is_redirect() && r.resource_type != "Document")
        .map(|r| {
            let hop = (r.end_ms - r.start_ms).max(0.0);
            Finding::new(
                "subresource-redirect",
                Category::Content,
                Severity::Warn,
                format!(
                    "{} {} redirects ({}) to {}: one more request, {} before the real one starts",
                    r.resource_type.to_lowercase(),
                    short_url(&r.url),
                    r.status,
                    r.location,
                    fmt_ms(hop)
                ),
            )
            .text("url", &r.url)
            .text("location", &r.location)
            .count("status", u64::from(r.status))
            .num("redirect_ms", hop)
            .advice("link the final URL in the page, so the browser asks for it at once")
            .saving(hop, hop, basis::PER_REQUEST)
        })
        .collect()
}

/// `h1-connection-limit`: one finding per HTTP/1.x origin whose requests queued.
pub fn h1_connection_limit(v: &Visit) -> Vec<Finding> {
    let mut by_origin: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
    for r in &v.requests {
        if r.protocol.starts_with("http/1") && !r.from_cache {
            by_origin.entry(r.origin.as_str()).or_default().push(r);
        }
    }
    by_origin
        .into_iter()
        .filter_map(|(origin, reqs)| {
            if reqs.len() <= H1_CONNECTIONS {
                return None;
            }
            let queued: Vec<f64> = reqs
                .iter()
                .map(|r| r.phases.queued)
                .filter(|q| *q >= QUEUED_MS)
                .collect();
            if queued.len() < QUEUED_MIN {
                return None;
            }
            let total: f64 = queued.iter().sum();
            let max = queued.iter().cloned().fold(0.0, f64::max);
            let mut conns: Vec<u64> = reqs.iter().map(|r| r.connection_id).collect();
            conns.sort_unstable();
            conns.dedup();
            let first = reqs.iter().map(|r| r.start_ms).fold(f64::MAX, f64::min);
            let last = reqs.iter().map(|r| r.end_ms).fold(0.0, f64::max);
            Some(
                Finding::new(
                    "h1-connection-limit",
                    Category::Connection,
                    Severity::Warn,
                    format!(
                        "{origin}: {} requests over HTTP/1.1 on {} connections (one request at a \
                         time each); {} of them waited to be sent, up to {} (total {})",
                        reqs.len(),
                        conns.len(),
                        queued.len(),
                        fmt_ms(max),
                        fmt_ms(total)
                    ),
                )
                .text("origin", origin)
                .count("requests", reqs.len() as u64)
                .count("connections", conns.len() as u64)
                .count("queued_requests", queued.len() as u64)
                .num("max_queued_ms", max)
                .num("total_queued_ms", total)
                .advice(
                    "serve this origin over HTTP/2 (TLS with h2 in ALPN: one connection carries \
                     every request at once), or send fewer requests (sprites, lazy-loading \
                     images below the fold)",
                )
                .saving(max, last - first, basis::FRESH),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::model::{Milestones, Phases};

    fn req(url: &str, ty: &str) -> Request {
        Request::for_tests(url, ty)
    }

    fn visit(kind: VisitKind, mut requests: Vec<Request>) -> Visit {
        requests.insert(0, req("http://a.test/", "Document"));
        Visit {
            kind,
            index: 1,
            milestones: Milestones::default(),
            requests,
            started_wall_ms: 0.0,
            title: String::new(),
            loaded: true,
        }
    }

    /// A blocking stylesheet from another origin with 40 ms connect + 80 ms TLS fires
    /// with 3 round trips; the same from the page's origin, or under 10 ms, does not.
    #[test]
    fn far_blocking_origin_fires_with_round_trips() {
        let mut css = req("https://cdn.test/s.css", "Stylesheet");
        css.render_blocking = "blocking".into();
        css.phases = Phases {
            dns: Some(1.0),
            connect: Some(40.0),
            tls: Some(80.0),
            ..Phases::default()
        };
        let f = render_blocking_far_origin(&visit(VisitKind::First, vec![css.clone()]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence_f64("round_trips"), Some(3.0));
        assert_eq!(f[0].evidence_f64("setup_ms"), Some(121.0));
        assert!(f[0].title.contains("cdn.test"), "{}", f[0].title);
        let mut near = css.clone();
        near.phases.connect = Some(2.0);
        near.phases.tls = Some(4.0);
        assert!(render_blocking_far_origin(&visit(VisitKind::First, vec![near])).is_empty());
        let mut not_blocking = css;
        not_blocking.render_blocking = "non-blocking".into();
        assert!(
            render_blocking_far_origin(&visit(VisitKind::First, vec![not_blocking])).is_empty()
        );
    }

    /// Re-fetched static assets fire with their Cache-Control; cached ones and the
    /// document do not.
    #[test]
    fn uncached_static_asset_on_repeat() {
        let mut js = req("http://a.test/app.js", "Script");
        js.cache_control = "no-store".into();
        let mut cached = req("http://a.test/ok.js", "Script");
        cached.from_cache = true;
        let f = uncached_on_repeat(&visit(VisitKind::Repeat, vec![js.clone(), cached]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence_str("cache_control"), Some("no-store"));
        assert!(f[0].title.contains("app.js"));
        assert_eq!(f[0].severity, Severity::Warn);
        // Fetched again although `max-age=3600` lets the browser keep it (Chromium over
        // an ignored certificate error): an info that points away from the headers.
        let mut kept = js;
        kept.cache_control = "public, max-age=3600".into();
        let f = uncached_on_repeat(&visit(VisitKind::Repeat, vec![kept]));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].title.contains("which lets the browser keep it"),
            "{}",
            f[0].title
        );
        assert!(f[0].advice.contains("-k"), "{}", f[0].advice);
        assert!(!browser_may_keep("max-age=0") && !browser_may_keep("no-cache, max-age=60"));
    }

    /// Eight queued requests on an HTTP/1.1 origin fire; the same over h2 does not.
    #[test]
    fn h1_queueing_fires_and_h2_does_not() {
        let imgs: Vec<Request> = (0..12)
            .map(|i| {
                let mut r = req(&format!("http://a.test/{i}.png"), "Image");
                r.phases.queued = if i < 6 { 1.0 } else { 50.0 * (i - 5) as f64 };
                r.connection_id = (i % 6) as u64;
                r
            })
            .collect();
        let f = h1_connection_limit(&visit(VisitKind::First, imgs.clone()));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence["queued_requests"], 6);
        assert_eq!(f[0].evidence_f64("max_queued_ms"), Some(300.0));
        let h2: Vec<Request> = imgs
            .into_iter()
            .map(|mut r| {
                r.protocol = "h2".into();
                r
            })
            .collect();
        assert!(h1_connection_limit(&visit(VisitKind::First, h2)).is_empty());
    }

    /// A redirected image fires; the document's own redirect does not.
    #[test]
    fn subresource_redirect_fires() {
        let mut img = req("http://a.test/old.png", "Image");
        img.status = 301;
        img.location = "/new.png".into();
        let f = subresource_redirect(&visit(VisitKind::First, vec![img]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence_str("location"), Some("/new.png"));
    }
}
