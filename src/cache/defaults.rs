//! What common shared caches do with a response by default, which is not what RFC 9111
//! allows (see `rfc`): Varnish's built-in VCL (7.x `builtin.vcl`: vcl_recv passes
//! requests with Cookie or Authorization; vcl_backend_response makes a response
//! hit-for-miss for TTL ≤ 0, Set-Cookie, `no-cache|no-store|private` or `Vary: *`;
//! the TTL is s-maxage, max-age, Expires, else `default_ttl` 120 s), Apache's
//! mod_cache (2.4 `cache_save_filter` with default directives: stores responses with
//! Set-Cookie and ETag-only responses, revalidates `no-cache`, guesses 10 % of the
//! Last-Modified age capped at 1 day, else 1 hour) and nginx's proxy_cache (no
//! `proxy_cache_valid`: keeps only responses whose s-maxage/max-age/Expires says how
//! long, never with Set-Cookie or `no-cache|no-store|private`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::control::CacheControl;
use super::rfc::{has_validators, http_date, shared_freshness, Unstorable};
use super::Headers;

/// What a cache does with a response by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Stored and served from cache while fresh.
    Hit,
    /// Not stored: every request goes to the origin.
    Pass,
    /// Varnish: marked uncacheable for 120 s; every request goes to the origin.
    HitForMiss,
    /// Stored, but every use is revalidated with the origin (a 304 saves the body).
    Revalidate,
}

impl Verdict {
    /// Name as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Hit => "hit",
            Verdict::Pass => "pass",
            Verdict::HitForMiss => "hit-for-miss",
            Verdict::Revalidate => "revalidate",
        }
    }

    /// The origin is asked for the full response every time.
    pub fn uncached(self) -> bool {
        matches!(self, Verdict::Pass | Verdict::HitForMiss)
    }
}

/// The request as the defaults look at it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestFacts {
    /// GET or HEAD.
    pub get: bool,
    pub cookie: bool,
    pub authorization: bool,
    /// The URL has a query string.
    pub query: bool,
}

/// One cache's default verdict, why, and the TTL it would give.
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultVerdict {
    pub verdict: Verdict,
    pub why: Vec<Unstorable>,
    pub ttl_s: Option<i64>,
}

fn verdict(verdict: Verdict, why: Vec<Unstorable>, ttl_s: Option<i64>) -> DefaultVerdict {
    DefaultVerdict {
        verdict,
        why,
        ttl_s,
    }
}

fn cc_of(h: &Headers) -> (CacheControl, String) {
    let raw = h.get("cache-control").unwrap_or_default();
    (CacheControl::parse(&raw), raw.to_ascii_lowercase())
}

/// Varnish's default TTL for responses without freshness (`default_ttl`).
pub const VARNISH_DEFAULT_TTL_S: i64 = 120;
/// Apache mod_cache's `CacheDefaultExpire` and `CacheMaxExpire`.
pub const APACHE_DEFAULT_EXPIRE_S: i64 = 3600;
pub const APACHE_MAX_EXPIRE_S: i64 = 86_400;

/// Varnish 7 with the built-in VCL.
pub fn varnish(req: RequestFacts, status: u16, h: &Headers) -> DefaultVerdict {
    if !req.get {
        return verdict(Verdict::Pass, vec![Unstorable::Method], None);
    }
    if req.cookie || req.authorization {
        return verdict(Verdict::Pass, vec![Unstorable::Credentials], None);
    }
    let (cc, raw) = cc_of(h);
    let age = h
        .get_all("age")
        .next()
        .and_then(|a| a.trim().parse::<i64>().ok())
        .unwrap_or(0);
    // RFC2616_Ttl in cache_rfc2616.c.
    let redirect = matches!(status, 302 | 307);
    let ttl = if [200, 203, 204, 300, 301, 304, 404, 410, 414].contains(&status) || redirect {
        if let Some(s) = cc.s_maxage.or(cc.max_age) {
            s as i64 - age
        } else if h.has("expires") {
            match (http_date(h, "expires"), http_date(h, "date")) {
                (Some(e), Some(d)) => e - d,
                _ => 0,
            }
        } else if redirect {
            -1
        } else {
            VARNISH_DEFAULT_TTL_S
        }
    } else {
        -1
    };
    let mut why = Vec::new();
    if raw.contains("no-store")
        || h.get("surrogate-control")
            .is_some_and(|s| s.to_ascii_lowercase().contains("no-store"))
    {
        why.push(Unstorable::NoStore);
    }
    if !h.has("surrogate-control") {
        if raw.contains("private") {
            why.push(Unstorable::Private);
        }
        if raw.contains("no-cache") {
            why.push(Unstorable::NoCache);
        }
    }
    if h.has("set-cookie") {
        why.push(Unstorable::SetCookie);
    }
    if h.get("vary").is_some_and(|v| v.trim() == "*") {
        why.push(Unstorable::VaryStar);
    }
    if ttl <= 0 {
        why.push(
            if ttl == -1 && cc.s_maxage.or(cc.max_age).is_none() && !h.has("expires") {
                Unstorable::Status
            } else {
                Unstorable::TtlZero
            },
        );
    }
    if why.is_empty() {
        verdict(Verdict::Hit, why, Some(ttl))
    } else {
        verdict(Verdict::HitForMiss, why, None)
    }
}

/// Apache 2.4 mod_cache with its default directives.
pub fn apache(req: RequestFacts, status: u16, h: &Headers) -> DefaultVerdict {
    let pass = |why| verdict(Verdict::Pass, vec![why], None);
    if !req.get {
        return pass(Unstorable::Method);
    }
    let (cc, _) = cc_of(h);
    let validators = has_validators(h);
    let expires = h.get("expires");
    let exp = http_date(h, "expires");
    let date = http_date(h, "date");
    if ![200, 203, 206, 300, 301, 304].contains(&status)
        && expires.is_none()
        && !h.has("cache-control")
    {
        return pass(Unstorable::Status);
    }
    if expires.is_some() && exp.is_none() {
        return pass(Unstorable::TtlZero);
    }
    if let (Some(e), Some(d)) = (exp, date) {
        if e < d {
            return pass(Unstorable::TtlZero);
        }
    }
    let zero = cc.s_maxage == Some(0) || (cc.s_maxage.is_none() && cc.max_age == Some(0));
    if (cc.must_revalidate || cc.proxy_revalidate) && zero && !validators {
        return pass(Unstorable::TtlZero);
    }
    let explicit = expires.is_some() || cc.max_age.is_some() || cc.s_maxage.is_some();
    if req.query && !explicit {
        return pass(Unstorable::NoFreshness);
    }
    if status == 200 && !validators && !explicit {
        return pass(Unstorable::NoFreshnessOrValidators);
    }
    if cc.no_store {
        return pass(Unstorable::NoStore);
    }
    if cc.private {
        return pass(Unstorable::Private);
    }
    if req.authorization
        && !(cc.s_maxage.is_some() || cc.must_revalidate || cc.proxy_revalidate || cc.public)
    {
        return pass(Unstorable::Authorization);
    }
    if super::control::split_list(&h.get("vary").unwrap_or_default()).contains(&"*") {
        return pass(Unstorable::VaryStar);
    }
    let fresh = shared_freshness(status, h, &cc);
    let ttl = if fresh.source.explicit() {
        fresh.lifetime_s.unwrap_or(0)
    } else if let (Some(lm), Some(d)) = (http_date(h, "last-modified"), date) {
        ((d - lm).max(0) / 10).min(APACHE_MAX_EXPIRE_S)
    } else {
        APACHE_DEFAULT_EXPIRE_S
    };
    if cc.no_cache || ttl <= 0 {
        return if validators {
            verdict(Verdict::Revalidate, vec![], Some(0))
        } else if cc.no_cache {
            pass(Unstorable::NoCacheWithoutValidators)
        } else {
            pass(Unstorable::TtlZero)
        };
    }
    verdict(Verdict::Hit, vec![], Some(ttl))
}

/// nginx proxy_cache without `proxy_cache_valid` or `proxy_ignore_headers`. Every
/// blocker is named, not only the first nginx checks: a page refused for no
/// freshness *and* Set-Cookie stays a MISS when only one of them is fixed.
pub fn nginx(req: RequestFacts, _status: u16, h: &Headers) -> DefaultVerdict {
    if !req.get {
        return verdict(Verdict::Pass, vec![Unstorable::Method], None);
    }
    let (cc, raw) = cc_of(h);
    let mut why = Vec::new();
    // ngx_http_upstream_process_cache_control: substring matches.
    if raw.contains("no-store") {
        why.push(Unstorable::NoStore);
    }
    if raw.contains("private") {
        why.push(Unstorable::Private);
    }
    if raw.contains("no-cache") {
        why.push(Unstorable::NoCache);
    }
    let ttl = if let Some(s) = cc.s_maxage.or(cc.max_age) {
        Some(s as i64)
    } else if h.has("expires") {
        Some(match (http_date(h, "expires"), http_date(h, "date")) {
            (Some(e), Some(d)) => e - d,
            _ => 0,
        })
    } else {
        None
    };
    match ttl {
        None if why.is_empty() => why.push(Unstorable::NoFreshness),
        Some(t) if t <= 0 && why.is_empty() => why.push(Unstorable::TtlZero),
        _ => {}
    }
    // ngx_http_upstream_process_set_cookie / process_vary.
    if h.has("set-cookie") {
        why.push(Unstorable::SetCookie);
    }
    if h.get("vary").is_some_and(|v| v.trim() == "*") {
        why.push(Unstorable::VaryStar);
    }
    if why.is_empty() {
        verdict(Verdict::Hit, why, ttl)
    } else {
        verdict(Verdict::Pass, why, None)
    }
}

/// The three caches' default verdicts (the diagnose JSON's `cache.default_caches`;
/// their reasons go to `default_caches_why`).
#[derive(Debug, Clone, PartialEq)]
pub struct DefaultCaches {
    pub varnish: DefaultVerdict,
    pub apache: DefaultVerdict,
    pub nginx: DefaultVerdict,
}

impl DefaultCaches {
    /// Every cache's verdict for this response.
    pub fn of(req: RequestFacts, status: u16, h: &Headers) -> DefaultCaches {
        DefaultCaches {
            varnish: varnish(req, status, h),
            apache: apache(req, status, h),
            nginx: nginx(req, status, h),
        }
    }

    /// (name as in the JSON, display name, verdict), in a fixed order.
    pub fn each(&self) -> [(&'static str, &'static str, &DefaultVerdict); 3] {
        [
            ("varnish", "Varnish's built-in VCL", &self.varnish),
            ("apache", "Apache mod_cache", &self.apache),
            ("nginx", "nginx proxy_cache", &self.nginx),
        ]
    }

    /// `{varnish: "hit", apache: "revalidate", nginx: "pass"}`.
    pub fn verdicts(&self) -> BTreeMap<&'static str, &'static str> {
        self.each()
            .iter()
            .map(|(n, _, v)| (*n, v.verdict.as_str()))
            .collect()
    }

    /// `{varnish: 120, apache: 3600, nginx: null}`: how long each keeps it fresh
    /// (null when it does not store it, 0 when it revalidates every use).
    pub fn ttls(&self) -> BTreeMap<&'static str, Option<i64>> {
        self.each().iter().map(|(n, _, v)| (*n, v.ttl_s)).collect()
    }

    /// `{varnish: "set-cookie", …}` for the caches that do not serve it from cache.
    pub fn why(&self) -> BTreeMap<&'static str, String> {
        self.each()
            .iter()
            .filter(|(_, _, v)| !v.why.is_empty())
            .map(|(n, _, v)| {
                let w: Vec<&str> = v.why.iter().map(|u| u.as_str()).collect();
                (*n, w.join(", "))
            })
            .collect()
    }
}

/// Why a shared cache will not keep this response, by RFC 9111 or by Varnish's
/// built-in rules (which most CDNs share): the union, in a fixed order, for the
/// audit's `unstorable` list. The request's own cookies are left out (they say
/// nothing about the response).
pub fn common_unstorable(req: RequestFacts, status: u16, h: &Headers) -> Vec<Unstorable> {
    let mut why = super::rfc::rfc_unstorable(req.get, status, h, req.authorization);
    let anonymous = RequestFacts {
        cookie: false,
        authorization: false,
        ..req
    };
    for u in varnish(anonymous, status, h).why {
        let u = match u {
            Unstorable::NoCache if !has_validators(h) => Unstorable::NoCacheWithoutValidators,
            other => other,
        };
        if !why.contains(&u) {
            why.push(u);
        }
    }
    let order = |u: &Unstorable| *u as u8;
    why.sort_by_key(order);
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: RequestFacts = RequestFacts {
        get: true,
        cookie: false,
        authorization: false,
        query: false,
    };

    /// Each variant's default verdict for (Varnish, Apache, nginx), and why — the
    /// sources: Varnish 7 builtin.vcl and cache_rfc2616.c, Apache 2.4 mod_cache.c
    /// `cache_save_filter`, nginx `ngx_http_upstream_process_cache_control` (the
    /// conformance suite in tests/caches.rs checks them on the real servers).
    #[test]
    fn verdict_table() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        let lm = "Fri, 04 Nov 1994 08:49:37 GMT";
        type Row<'a> = (&'a [(&'a str, &'a str)], [&'a str; 3]);
        let table: &[Row] = &[
            (
                &[("cache-control", "public, max-age=600")],
                ["hit", "hit", "hit"],
            ),
            (
                &[
                    ("cache-control", "public, max-age=600"),
                    ("set-cookie", "s=1"),
                ],
                ["hit-for-miss", "hit", "pass"],
            ),
            (
                &[("cache-control", "no-cache"), ("etag", "\"a\"")],
                ["hit-for-miss", "revalidate", "pass"],
            ),
            (
                &[
                    ("cache-control", "max-age=0, must-revalidate"),
                    ("etag", "\"a\""),
                ],
                ["hit-for-miss", "revalidate", "pass"],
            ),
            (
                &[("cache-control", "max-age=0, must-revalidate")],
                ["hit-for-miss", "pass", "pass"],
            ),
            (
                &[("cache-control", "private, max-age=600")],
                ["hit-for-miss", "pass", "pass"],
            ),
            (
                &[("cache-control", "no-store")],
                ["hit-for-miss", "pass", "pass"],
            ),
            (&[], ["hit", "pass", "pass"]),
            (&[("etag", "\"a\"")], ["hit", "hit", "pass"]),
            (
                &[("date", date), ("last-modified", lm)],
                ["hit", "hit", "pass"],
            ),
            (
                &[("date", date), ("expires", "Sun, 06 Nov 1994 08:00:00 GMT")],
                ["hit-for-miss", "pass", "pass"],
            ),
            (
                &[("cache-control", "max-age=60"), ("vary", "*")],
                ["hit-for-miss", "pass", "pass"],
            ),
            (
                &[
                    ("cache-control", "public, s-maxage=1, max-age=0"),
                    ("etag", "\"a\""),
                ],
                ["hit", "hit", "hit"],
            ),
        ];
        for (headers, want) in table {
            let h = Headers::from_pairs(headers);
            let d = DefaultCaches::of(GET, 200, &h);
            let got = [
                d.varnish.verdict.as_str(),
                d.apache.verdict.as_str(),
                d.nginx.verdict.as_str(),
            ];
            assert_eq!(&got, want, "{headers:?}");
        }
        // Varnish guesses 120 s without freshness; Apache 10 % of the LM age, else 1 h.
        let lmh = Headers::from_pairs(&[("date", date), ("last-modified", lm)]);
        assert_eq!(varnish(GET, 200, &lmh).ttl_s, Some(120));
        assert_eq!(apache(GET, 200, &lmh).ttl_s, Some(17_280));
        assert_eq!(
            apache(GET, 200, &Headers::from_pairs(&[("etag", "\"a\"")])).ttl_s,
            Some(3600)
        );
        // nginx names both blockers of a page with no freshness and a Set-Cookie.
        let two = Headers::from_pairs(&[("set-cookie", "PHPSESSID=x; path=/")]);
        assert_eq!(
            nginx(GET, 200, &two).why,
            [Unstorable::NoFreshness, Unstorable::SetCookie]
        );
        // A request with Cookie is passed by Varnish, not by Apache or nginx.
        let cookie = RequestFacts {
            cookie: true,
            ..GET
        };
        let h = Headers::from_pairs(&[("cache-control", "public, max-age=600")]);
        let d = DefaultCaches::of(cookie, 200, &h);
        assert_eq!(d.varnish.verdict, Verdict::Pass);
        assert_eq!(d.varnish.why, [Unstorable::Credentials]);
        assert_eq!(d.apache.verdict, Verdict::Hit);
        assert_eq!(
            d.why().get("varnish").map(String::as_str),
            Some("request cookie/authorization")
        );
    }
}
