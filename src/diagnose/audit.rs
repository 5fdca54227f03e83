//! The cache audit's verdict as one serialisable record (the `cache` object of the
//! diagnose JSON): parsed Cache-Control, freshness, validators, conditional GETs,
//! shared-cache storability — what RFC 9111 allows (`shared_cache`) apart from what
//! common caches do by default (`default_caches`) — and the normalised cache status of
//! each repeated GET, with the cache named when its headers say which it is.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cache::defaults::{common_unstorable, DefaultCaches, RequestFacts};
use crate::cache::rfc::{has_validators, shared_cache, shared_freshness, SharedCache};
use crate::cache::status::{apache_reason, edge, proxy_header, CacheState};
use crate::cache::CacheControl;

use super::facts::{CacheFacts, ConditionalFacts};

/// The request as the cache defaults see it.
pub fn request_facts(c: &CacheFacts) -> RequestFacts {
    RequestFacts {
        get: c.get,
        cookie: c.cookie,
        authorization: c.authorization || (!c.anonymous && !c.cookie),
        query: c.query,
    }
}

/// A conditional GET's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conditional {
    pub status: u16,
    pub body_bytes: u64,
    pub time_ms: f64,
    /// 304 with no body, as it should be.
    pub ok: bool,
    /// A 304 that carried a body after its head.
    pub excess_body: bool,
}

impl From<ConditionalFacts> for Conditional {
    fn from(c: ConditionalFacts) -> Conditional {
        Conditional {
            status: c.status,
            body_bytes: c.body_bytes,
            time_ms: c.time_ms,
            ok: c.status == 304 && c.body_bytes == 0 && !c.excess_body,
            excess_body: c.excess_body,
        }
    }
}

/// What the cache audit concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheAudit {
    pub status: u16,
    pub cache_control: CacheControl,
    /// Freshness lifetime for a shared cache, seconds.
    pub freshness_s: Option<i64>,
    /// Where it came from: s-maxage, max-age, expires, heuristic, none.
    pub freshness_source: &'static str,
    pub age_s: Option<u64>,
    pub expires: Option<String>,
    pub vary: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub validators: bool,
    pub set_cookie: bool,
    /// A shared cache following RFC 9111 and the common defaults stores it.
    pub shared_cacheable: bool,
    /// Why not (empty when storable): RFC 9111's reasons and Varnish's built-in ones.
    pub unstorable: Vec<&'static str>,
    /// What RFC 9111 lets a shared cache do with it.
    pub shared_cache: SharedCache,
    /// What common caches do with it by default: `{varnish: "hit"|"pass"|
    /// "hit-for-miss", apache: "hit"|"revalidate"|"pass", nginx: "hit"|"pass"}`.
    pub default_caches: BTreeMap<&'static str, &'static str>,
    /// Why each cache that does not serve it from cache does so.
    pub default_caches_why: BTreeMap<&'static str, String>,
    /// How long each keeps it fresh by default, seconds (null: not stored).
    pub default_caches_ttl_s: BTreeMap<&'static str, Option<i64>>,
    /// When the origin gives no freshness: what RFC 9111's heuristic and each cache
    /// will do (as httplint says it).
    pub freshness_note: Option<String>,
    pub if_none_match: Option<Conditional>,
    pub if_modified_since: Option<Conditional>,
    /// The header that shows a CDN or proxy in the path: the one the repeated GETs'
    /// cache status was read from when a header reported one (the status shown with
    /// it comes from there), else the first proxy header (`via`, `cf-ray`, …).
    pub proxy: Option<&'static str>,
    pub edge: Option<String>,
    /// Normalised cache status of each repeated GET.
    pub repeats: Vec<CacheState>,
    pub hits: usize,
    /// Repeated GETs the cache answered MISS, BYPASS or DYNAMIC.
    pub misses: usize,
    /// Which cache answered (varnish, apache, nginx, cloudflare, …), when its headers
    /// say.
    pub cache: Option<&'static str>,
    /// The cache's own explanation (Apache's `X-Cache-Detail`), when it gives one.
    pub cache_detail: Option<String>,
    pub load_hit_ratio: Option<f64>,
}

/// Builds the audit record from the cache facts.
pub fn audit(c: &CacheFacts) -> CacheAudit {
    let h = &c.headers;
    let cc = CacheControl::parse(&h.get("cache-control").unwrap_or_default());
    let fresh = shared_freshness(c.status, h, &cc);
    let req = request_facts(c);
    let unstorable: Vec<&'static str> = common_unstorable(req, c.status, h)
        .into_iter()
        .map(|u| u.as_str())
        .collect();
    let defaults = DefaultCaches::of(req, c.status, h);
    let shared = shared_cache(c.get, c.status, h, req.authorization);
    let statuses = super::rules::cache::statuses(c);
    let kind = statuses.iter().rev().find_map(|s| s.kind);
    let repeats: Vec<CacheState> = statuses.iter().map(|s| s.state).collect();
    let status_source = statuses.iter().map(|s| s.source()).find(|s| !s.is_empty());
    CacheAudit {
        status: c.status,
        freshness_s: fresh.lifetime_s,
        freshness_source: fresh.source.as_str(),
        cache_control: cc,
        age_s: h.get_all("age").next().and_then(|a| a.trim().parse().ok()),
        expires: h.get("expires"),
        vary: h.get("vary"),
        etag: h.get("etag"),
        last_modified: h.get("last-modified"),
        validators: has_validators(h),
        set_cookie: h.has("set-cookie"),
        shared_cacheable: unstorable.is_empty(),
        unstorable,
        shared_cache: shared.clone(),
        default_caches: defaults.verdicts(),
        default_caches_why: defaults.why(),
        default_caches_ttl_s: defaults.ttls(),
        freshness_note: freshness_note(&shared, &defaults, fresh.lifetime_s, h),
        misses: repeats.iter().filter(|s| s.is_uncached()).count(),
        cache: kind.map(|k| k.as_str()),
        cache_detail: c
            .repeats
            .iter()
            .rev()
            .find_map(|r| r.headers.get("x-cache-detail"))
            .map(|d| apache_reason(&d)),
        if_none_match: c.if_none_match.map(Conditional::from),
        if_modified_since: c.if_modified_since.map(Conditional::from),
        proxy: status_source.or_else(|| proxy_header(h)),
        edge: edge(h),
        hits: repeats.iter().filter(|s| **s == CacheState::Hit).count(),
        repeats,
        load_hit_ratio: c.load_hit_ratio,
    }
}

/// A lifetime in words: "120 s", "2 h", "1.5 d".
fn secs(s: i64) -> String {
    match s {
        s if s <= 600 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// Says what caches do with a response whose origin gave no freshness (RFC 9111
/// §4.2.2 lets them guess): the heuristic, and each common cache's default.
fn freshness_note(
    shared: &SharedCache,
    defaults: &DefaultCaches,
    heuristic_s: Option<i64>,
    h: &crate::cache::Headers,
) -> Option<String> {
    if !shared.heuristic {
        return None;
    }
    let rfc = match (heuristic_s, h.has("last-modified")) {
        (Some(s), true) => format!(
            "RFC 9111 lets caches guess, typically 10 % of the time since Last-Modified \
             ({})",
            secs(s)
        ),
        _ => "RFC 9111 lets caches guess (no Last-Modified to guess from)".to_string(),
    };
    let each: Vec<String> = defaults
        .each()
        .iter()
        .map(|(_, name, v)| match v.ttl_s {
            Some(t) if !v.verdict.uncached() => {
                format!("{name} keeps it {}", secs(t))
            }
            _ => format!("{name} does not store it"),
        })
        .collect();
    Some(format!("no explicit freshness: {rfc}; {}", each.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::{Headers, RepeatFacts};

    /// The lab's `/cdn/hit` through the audit: storable, Cloudflare edge, hits counted,
    /// and the JSON names are lowercase.
    #[test]
    fn audit_record() {
        let h = Headers::from_pairs(&[
            ("cf-cache-status", "HIT"),
            ("cache-control", "public, max-age=300"),
            ("age", "12"),
            ("cf-ray", "abc-LAB"),
            ("via", "1.1 varnish"),
        ]);
        let c = CacheFacts {
            get: true,
            anonymous: true,
            status: 200,
            headers: h.clone(),
            repeats: vec![
                RepeatFacts {
                    headers: h,
                    ttfb_ms: 1.0
                };
                3
            ],
            if_none_match: Some(ConditionalFacts {
                status: 200,
                body_bytes: 9,
                time_ms: 1.0,
                excess_body: false,
            }),
            ..CacheFacts::default()
        };
        let a = audit(&c);
        assert!(a.shared_cacheable && !a.validators);
        assert_eq!(a.freshness_s, Some(300));
        assert_eq!(a.age_s, Some(12));
        assert_eq!(a.hits, 3);
        assert_eq!(a.edge.as_deref(), Some("Cloudflare LAB"));
        // The statuses came from cf-cache-status, not from the Via the lab also sends.
        assert_eq!(a.proxy, Some("cf-cache-status"));
        assert!(!a.if_none_match.as_ref().unwrap().ok);
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["repeats"][0], "hit");
        assert_eq!(v["cache_control"]["max_age"], 300);
        assert_eq!(v["freshness_source"], "max-age");
    }
}
