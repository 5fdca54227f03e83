//! What RFC 9111 lets a shared cache do with a response: store it (§3), for how long
//! it stays fresh (§4.2.1, with the heuristic of §4.2.2), and whether every use must
//! be revalidated with the origin (`no-cache`, §5.2.2.4; a lifetime ≤ 0, §4.2.4).
//! What real caches do by default is in `defaults`: the two questions differ.

use serde::Serialize;

use super::control::{split_list, CacheControl};
use super::Headers;

/// Where a freshness lifetime came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshnessSource {
    SMaxage,
    MaxAge,
    Expires,
    /// 10 % of (Date − Last-Modified), for statuses that allow heuristics.
    Heuristic,
    /// Nothing explicit and no heuristic possible.
    None,
}

impl FreshnessSource {
    /// Name for evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            FreshnessSource::SMaxage => "s-maxage",
            FreshnessSource::MaxAge => "max-age",
            FreshnessSource::Expires => "expires",
            FreshnessSource::Heuristic => "heuristic",
            FreshnessSource::None => "none",
        }
    }

    /// The lifetime was given by the origin (not guessed, not absent).
    pub fn explicit(self) -> bool {
        !matches!(self, FreshnessSource::Heuristic | FreshnessSource::None)
    }
}

/// Freshness lifetime for a shared cache, seconds (may be ≤ 0: already stale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Freshness {
    pub lifetime_s: Option<i64>,
    pub source: FreshnessSource,
}

/// Statuses RFC 9110 §15.1 defines as heuristically cacheable.
pub const HEURISTIC_STATUSES: [u16; 12] =
    [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501];

/// An HTTP date header as seconds since the epoch.
pub(crate) fn http_date(h: &Headers, name: &str) -> Option<i64> {
    let v = h.get_all(name).next()?;
    let t = httpdate::parse_http_date(v).ok()?;
    Some(match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    })
}

/// Freshness lifetime of a response for a shared cache (RFC 9111 4.2.1): s-maxage,
/// then max-age, then Expires − Date (an unparseable Expires means already expired),
/// then the heuristic (§4.2.2: 10 % of the time since Last-Modified).
pub fn shared_freshness(status: u16, headers: &Headers, cc: &CacheControl) -> Freshness {
    let f = |lifetime_s, source| Freshness { lifetime_s, source };
    if let Some(s) = cc.s_maxage {
        return f(Some(s as i64), FreshnessSource::SMaxage);
    }
    if let Some(s) = cc.max_age {
        return f(Some(s as i64), FreshnessSource::MaxAge);
    }
    if headers.has("expires") {
        let lifetime = match (http_date(headers, "expires"), http_date(headers, "date")) {
            (Some(e), Some(d)) => Some(e - d),
            (None, _) => Some(0),
            (Some(_), None) => None,
        };
        return f(lifetime, FreshnessSource::Expires);
    }
    if HEURISTIC_STATUSES.contains(&status) {
        if let (Some(lm), Some(d)) = (
            http_date(headers, "last-modified"),
            http_date(headers, "date"),
        ) {
            return f(Some(((d - lm).max(0)) / 10), FreshnessSource::Heuristic);
        }
    }
    f(None, FreshnessSource::None)
}

/// Whether the response has validators (ETag or Last-Modified).
pub fn has_validators(headers: &Headers) -> bool {
    headers.has("etag") || headers.has("last-modified")
}

/// Why a shared cache does not (or by default will not) keep a response. The first
/// six are RFC 9111's own reasons; the rest are what common caches add by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unstorable {
    /// Not GET/HEAD.
    Method,
    /// A status that is not heuristically cacheable, without explicit freshness.
    Status,
    NoStore,
    Private,
    /// `no-cache` (Varnish and nginx do not keep it; RFC 9111 does, revalidating).
    NoCache,
    /// `no-cache` and nothing to revalidate with.
    NoCacheWithoutValidators,
    /// `Vary: *` never matches a later request (§4.1).
    VaryStar,
    /// Explicit lifetime ≤ 0 (max-age=0, Expires in the past).
    TtlZero,
    SetCookie,
    /// The request carried Authorization and the response lacks public, s-maxage or
    /// must-revalidate (§3.5).
    Authorization,
    /// Nothing says how long it stays fresh (nginx needs a lifetime).
    NoFreshness,
    /// No Last-Modified, ETag, Expires, max-age or s-maxage (Apache mod_cache).
    NoFreshnessOrValidators,
    /// The request carried Cookie or Authorization (Varnish passes it in vcl_recv).
    Credentials,
}

impl Unstorable {
    /// Short code for evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            Unstorable::Method => "method",
            Unstorable::Status => "status",
            Unstorable::NoStore => "no-store",
            Unstorable::Private => "private",
            Unstorable::VaryStar => "vary-star",
            Unstorable::Authorization => "authorization",
            Unstorable::NoCache => "no-cache",
            Unstorable::NoCacheWithoutValidators => "no-cache without validators",
            Unstorable::TtlZero => "ttl<=0",
            Unstorable::SetCookie => "set-cookie",
            Unstorable::NoFreshness => "no freshness",
            Unstorable::NoFreshnessOrValidators => "no freshness or validators",
            Unstorable::Credentials => "request cookie/authorization",
        }
    }

    /// What the origin should change.
    pub fn fix(self) -> &'static str {
        match self {
            Unstorable::Method => "cache only GET/HEAD",
            Unstorable::Status => {
                "give the status explicit freshness (s-maxage) if it should be cached"
            }
            Unstorable::NoStore => "drop no-store where the content is not secret",
            Unstorable::Private => {
                "send `public, s-maxage=N` instead of private for anonymous readers"
            }
            Unstorable::NoCache | Unstorable::TtlZero => {
                "send a positive s-maxage (even `s-maxage=1` lets a cache absorb bursts) \
                 instead of no-cache / max-age=0"
            }
            Unstorable::NoCacheWithoutValidators => {
                "drop no-cache, or send ETag/Last-Modified so caches can revalidate"
            }
            Unstorable::VaryStar => "replace `Vary: *` with the request headers that really matter",
            Unstorable::SetCookie => {
                "stop setting cookies on anonymous GETs (set them only after login)"
            }
            Unstorable::NoFreshness | Unstorable::NoFreshnessOrValidators => {
                "send `Cache-Control: s-maxage=N` (and ETag/Last-Modified)"
            }
            Unstorable::Authorization => {
                "send `public` or `s-maxage` if authenticated responses may be shared"
            }
            Unstorable::Credentials => {
                "a request with a session cookie or Authorization is passed on purpose \
                 (never strip those); strip only analytics cookies (_ga, _gid, _fbp, \
                 utm_*) in the cache's config"
            }
        }
    }
}

/// RFC 9111's answer for a shared cache (the diagnose JSON's `cache.shared_cache`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SharedCache {
    /// §3: a shared cache may store it (and, with `Vary: *` excluded, reuse it).
    pub rfc_storable: bool,
    /// Freshness lifetime, seconds (explicit or heuristic); null when none applies.
    pub fresh_for_s: Option<i64>,
    /// The lifetime is the cache's guess (§4.2.2), not the origin's.
    pub heuristic: bool,
    /// Storable, but each use needs a round trip to the origin (`no-cache`, or stale
    /// at once): with validators that round trip is a 304 without the body.
    pub revalidate_every_use: bool,
    /// Why not storable (RFC reasons only; empty when storable).
    pub reasons: Vec<&'static str>,
}

/// RFC 9111's reasons a shared cache may not store the response, in a fixed order.
pub fn rfc_unstorable(
    get: bool,
    status: u16,
    headers: &Headers,
    authorized: bool,
) -> Vec<Unstorable> {
    let cc = CacheControl::parse(&headers.get("cache-control").unwrap_or_default());
    let mut why = Vec::new();
    if !get {
        why.push(Unstorable::Method);
    }
    // §3: a response needs public, Expires, max-age, s-maxage or a heuristically
    // cacheable status.
    let allowed = cc.public
        || headers.has("expires")
        || cc.max_age.is_some()
        || cc.s_maxage.is_some()
        || HEURISTIC_STATUSES.contains(&status);
    if !allowed {
        why.push(Unstorable::Status);
    }
    if cc.no_store {
        why.push(Unstorable::NoStore);
    }
    if cc.private {
        why.push(Unstorable::Private);
    }
    if split_list(&headers.get("vary").unwrap_or_default()).contains(&"*") {
        why.push(Unstorable::VaryStar);
    }
    if authorized && !(cc.public || cc.must_revalidate || cc.s_maxage.is_some()) {
        why.push(Unstorable::Authorization);
    }
    why
}

/// RFC 9111's answer for this response as a shared cache sees it.
pub fn shared_cache(get: bool, status: u16, headers: &Headers, authorized: bool) -> SharedCache {
    let cc = CacheControl::parse(&headers.get("cache-control").unwrap_or_default());
    let fresh = shared_freshness(status, headers, &cc);
    let reasons = rfc_unstorable(get, status, headers, authorized);
    let storable = reasons.is_empty();
    let heuristic = storable && !fresh.source.explicit() && !cc.no_cache;
    let stale_at_once = fresh.source.explicit() && fresh.lifetime_s.is_some_and(|l| l <= 0);
    SharedCache {
        rfc_storable: storable,
        fresh_for_s: match (storable, cc.no_cache) {
            (false, _) => None,
            (true, true) => Some(0),
            (true, false) => fresh.lifetime_s,
        },
        heuristic,
        revalidate_every_use: storable && (cc.no_cache || stale_at_once),
        reasons: reasons.iter().map(|r| r.as_str()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(pairs: &[(&str, &str)]) -> SharedCache {
        shared_cache(true, 200, &Headers::from_pairs(pairs), false)
    }

    /// RFC 9111's answers, as httplint gives them: storable unless no-store, private,
    /// `Vary: *` or Authorization without public/s-maxage/must-revalidate (§3, §3.5);
    /// `no-cache` + ETag and `max-age=0, must-revalidate` + ETag alike (revalidated on
    /// every use); an Expires in the past is storable but stale; no freshness at all
    /// is a heuristic (§4.2.2).
    #[test]
    fn rfc_answers() {
        let a = sc(&[("cache-control", "no-cache"), ("etag", "\"a\"")]);
        let b = sc(&[
            ("cache-control", "max-age=0, must-revalidate"),
            ("etag", "\"a\""),
        ]);
        assert!(a.rfc_storable && a.revalidate_every_use && !a.heuristic);
        assert!(b.rfc_storable && b.revalidate_every_use && !b.heuristic);
        assert_eq!(b.fresh_for_s, Some(0));
        let c = sc(&[
            ("cache-control", "public, max-age=600"),
            ("set-cookie", "s=1"),
        ]);
        assert!(c.rfc_storable && !c.revalidate_every_use);
        assert_eq!(c.fresh_for_s, Some(600));
        let d = sc(&[
            ("date", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("expires", "Sun, 06 Nov 1994 08:00:00 GMT"),
        ]);
        assert!(d.rfc_storable && d.revalidate_every_use);
        let h = sc(&[]);
        assert!(h.rfc_storable && h.heuristic && h.fresh_for_s.is_none());
        for bad in ["private", "no-store"] {
            let s = sc(&[("cache-control", bad)]);
            assert!(!s.rfc_storable, "{bad}");
            assert_eq!(s.reasons, [bad]);
        }
        assert!(!sc(&[("vary", "*"), ("cache-control", "max-age=9")]).rfc_storable);
        let auth = |cc| {
            shared_cache(
                true,
                200,
                &Headers::from_pairs(&[("cache-control", cc)]),
                true,
            )
        };
        assert!(!auth("max-age=60").rfc_storable);
        assert!(auth("public, max-age=60").rfc_storable);
        // 302 without explicit freshness is not heuristically cacheable.
        assert!(!shared_cache(true, 302, &Headers::default(), false).rfc_storable);
    }
}
