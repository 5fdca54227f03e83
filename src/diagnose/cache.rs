//! The cache audit's logic as pure functions over response headers: Cache-Control
//! parsing, the freshness lifetime a shared cache gives a response (RFC 9111 4.2.1),
//! and whether a shared cache may store it — httplint's storability model plus the
//! triggers for which Varnish's built-in VCL makes a response hit-for-miss
//! (`Set-Cookie`, TTL ≤ 0, `no-cache`/`no-store`/`private`, `Vary: *`).
//! Cache-status normalisation is in `cache_status`.

use serde::Serialize;

use super::facts::Headers;

/// A parsed Cache-Control header. Unknown directives are kept in `other`; a directive
/// whose value does not parse is listed in `bad`. Repeated directives: the first wins.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheControl {
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
    pub public: bool,
    /// `private` without field names.
    pub private: bool,
    pub no_store: bool,
    /// `no-cache` without field names.
    pub no_cache: bool,
    pub must_revalidate: bool,
    pub proxy_revalidate: bool,
    pub immutable: bool,
    pub no_transform: bool,
    pub stale_while_revalidate: Option<u64>,
    pub stale_if_error: Option<u64>,
    pub other: Vec<String>,
    pub bad: Vec<String>,
}

/// Splits a header list on commas outside double quotes.
pub(crate) fn split_list(value: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(value[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Removes surrounding double quotes (and backslash escapes) from a token.
pub(crate) fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        let mut out = String::new();
        let mut escaped = false;
        for c in s[1..s.len() - 1].chars() {
            if c == '\\' && !escaped {
                escaped = true;
                continue;
            }
            escaped = false;
            out.push(c);
        }
        out
    } else {
        s.to_string()
    }
}

impl CacheControl {
    /// Parses every Cache-Control value (already joined with commas).
    pub fn parse(value: &str) -> CacheControl {
        let mut cc = CacheControl::default();
        let mut seen: Vec<String> = Vec::new();
        for item in split_list(value) {
            let (name, arg) = match item.split_once('=') {
                Some((n, a)) => (n.trim().to_ascii_lowercase(), Some(unquote(a))),
                None => (item.trim().to_ascii_lowercase(), None),
            };
            if seen.contains(&name) {
                continue;
            }
            seen.push(name.clone());
            let secs = || arg.as_deref().and_then(|a| a.trim().parse::<u64>().ok());
            let mut bad = false;
            match name.as_str() {
                "max-age" => (cc.max_age, bad) = (secs(), secs().is_none()),
                "s-maxage" => (cc.s_maxage, bad) = (secs(), secs().is_none()),
                "stale-while-revalidate" => {
                    (cc.stale_while_revalidate, bad) = (secs(), secs().is_none())
                }
                "stale-if-error" => (cc.stale_if_error, bad) = (secs(), secs().is_none()),
                "public" => cc.public = true,
                "private" => cc.private = arg.is_none(),
                "no-cache" => cc.no_cache = arg.is_none(),
                "no-store" => cc.no_store = true,
                "must-revalidate" => cc.must_revalidate = true,
                "proxy-revalidate" => cc.proxy_revalidate = true,
                "immutable" => cc.immutable = true,
                "no-transform" => cc.no_transform = true,
                _ => cc.other.push(item.to_string()),
            }
            if bad {
                cc.bad.push(item.to_string());
            }
        }
        cc
    }
}

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
}

/// Freshness lifetime for a shared cache, seconds (may be ≤ 0: already stale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Freshness {
    pub lifetime_s: Option<i64>,
    pub source: FreshnessSource,
}

/// Statuses RFC 9110 lets a cache give a heuristic lifetime.
const HEURISTIC_STATUSES: [u16; 8] = [200, 203, 204, 206, 300, 301, 404, 410];

fn http_date(h: &Headers, name: &str) -> Option<i64> {
    let v = h.get_all(name).next()?;
    let t = httpdate::parse_http_date(v).ok()?;
    Some(match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    })
}

/// Freshness lifetime of a response for a shared cache (RFC 9111 4.2.1): s-maxage,
/// then max-age, then Expires − Date (an unparseable Expires means already expired),
/// then the heuristic.
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

/// Why a shared cache will not store (or Varnish will hit-for-miss) a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unstorable {
    Method,
    Status,
    NoStore,
    Private,
    NoCacheWithoutValidators,
    VaryStar,
    TtlZero,
    SetCookie,
    Authorization,
}

impl Unstorable {
    /// Short code for evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            Unstorable::Method => "method",
            Unstorable::Status => "status",
            Unstorable::NoStore => "no-store",
            Unstorable::Private => "private",
            Unstorable::NoCacheWithoutValidators => "no-cache without validators",
            Unstorable::VaryStar => "vary-star",
            Unstorable::TtlZero => "ttl<=0",
            Unstorable::SetCookie => "set-cookie",
            Unstorable::Authorization => "authorization",
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
            Unstorable::NoCacheWithoutValidators => {
                "drop no-cache, or send ETag/Last-Modified so caches can revalidate"
            }
            Unstorable::VaryStar => "replace `Vary: *` with the request headers that really matter",
            Unstorable::TtlZero => "send a positive s-maxage/max-age",
            Unstorable::SetCookie => {
                "stop setting cookies on anonymous GETs (set them only after login)"
            }
            Unstorable::Authorization => {
                "send `public` or `s-maxage` if authenticated responses may be shared"
            }
        }
    }
}

/// Statuses Varnish caches by default (`RFC2616_Ttl`); others need explicit freshness.
const CACHEABLE_STATUSES: [u16; 9] = [200, 203, 204, 300, 301, 304, 404, 410, 414];

/// Whether the value has validators (ETag or Last-Modified).
pub fn has_validators(headers: &Headers) -> bool {
    headers.has("etag") || headers.has("last-modified")
}

/// Every reason a shared cache would not store this response, in a fixed order
/// (empty = storable). `get` is whether the method was GET/HEAD; `authorized` whether
/// the request carried Authorization.
pub fn shared_unstorable(
    get: bool,
    status: u16,
    headers: &Headers,
    authorized: bool,
) -> Vec<Unstorable> {
    let cc = CacheControl::parse(&headers.get("cache-control").unwrap_or_default());
    let fresh = shared_freshness(status, headers, &cc);
    let explicit = !matches!(
        fresh.source,
        FreshnessSource::Heuristic | FreshnessSource::None
    );
    let mut why = Vec::new();
    if !get {
        why.push(Unstorable::Method);
    }
    if !CACHEABLE_STATUSES.contains(&status) && !explicit {
        why.push(Unstorable::Status);
    }
    if cc.no_store {
        why.push(Unstorable::NoStore);
    }
    if cc.private {
        why.push(Unstorable::Private);
    }
    if cc.no_cache && !has_validators(headers) {
        why.push(Unstorable::NoCacheWithoutValidators);
    }
    let vary = headers.get("vary").unwrap_or_default();
    if split_list(&vary).contains(&"*") {
        why.push(Unstorable::VaryStar);
    }
    if explicit && fresh.lifetime_s.is_some_and(|l| l <= 0) && !cc.no_store {
        why.push(Unstorable::TtlZero);
    }
    if headers.has("set-cookie") {
        why.push(Unstorable::SetCookie);
    }
    if authorized && !(cc.public || cc.must_revalidate || cc.s_maxage.is_some()) {
        why.push(Unstorable::Authorization);
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Headers {
        Headers::from_pairs(pairs)
    }

    /// Real-world Cache-Control values parse into the right directives.
    #[test]
    fn parses_cache_control() {
        let cc = CacheControl::parse(
            "public, max-age=60, s-maxage=\"300\", stale-while-revalidate=30, immutable",
        );
        assert!(cc.public && cc.immutable && !cc.private);
        assert_eq!(cc.max_age, Some(60));
        assert_eq!(cc.s_maxage, Some(300));
        assert_eq!(cc.stale_while_revalidate, Some(30));
        let cc = CacheControl::parse("private, no-cache=\"set-cookie, x\", max-age=abc, x-ext");
        assert!(cc.private && !cc.no_cache);
        assert_eq!(cc.max_age, None);
        assert_eq!(cc.bad, ["max-age=abc"]);
        assert_eq!(cc.other, ["x-ext"]);
        let cc = CacheControl::parse("max-age=10, max-age=99, NO-STORE, Must-Revalidate");
        assert_eq!(cc.max_age, Some(10));
        assert!(cc.no_store && cc.must_revalidate);
    }

    /// s-maxage beats max-age beats Expires; Expires counts from Date; a bad Expires
    /// is already expired; Last-Modified gives a 10 % heuristic.
    #[test]
    fn freshness_for_shared_caches() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        let f = |pairs: &[(&str, &str)]| {
            let hs = h(pairs);
            let cc = CacheControl::parse(&hs.get("cache-control").unwrap_or_default());
            shared_freshness(200, &hs, &cc)
        };
        let r = f(&[("cache-control", "max-age=60, s-maxage=300")]);
        assert_eq!(
            (r.lifetime_s, r.source),
            (Some(300), FreshnessSource::SMaxage)
        );
        let r = f(&[("cache-control", "max-age=60"), ("expires", "0")]);
        assert_eq!(
            (r.lifetime_s, r.source),
            (Some(60), FreshnessSource::MaxAge)
        );
        let r = f(&[("date", date), ("expires", "Sun, 06 Nov 1994 09:49:37 GMT")]);
        assert_eq!(
            (r.lifetime_s, r.source),
            (Some(3600), FreshnessSource::Expires)
        );
        let r = f(&[("date", date), ("expires", "0")]);
        assert_eq!(r.lifetime_s, Some(0));
        let r = f(&[
            ("date", date),
            ("last-modified", "Fri, 04 Nov 1994 08:49:37 GMT"),
        ]);
        assert_eq!(
            (r.lifetime_s, r.source),
            (Some(17280), FreshnessSource::Heuristic)
        );
        assert_eq!(f(&[]).source, FreshnessSource::None);
    }

    /// The Varnish hit-for-miss triggers and httplint's storability each show up.
    #[test]
    fn storability_reasons() {
        let ok = h(&[("cache-control", "public, s-maxage=300"), ("etag", "\"a\"")]);
        assert!(shared_unstorable(true, 200, &ok, false).is_empty());
        let lab_cookie = h(&[
            ("cache-control", "private, max-age=0, must-revalidate"),
            ("set-cookie", "lab_session=1; Path=/"),
            ("etag", "\"x\""),
        ]);
        assert_eq!(
            shared_unstorable(true, 200, &lab_cookie, false),
            [
                Unstorable::Private,
                Unstorable::TtlZero,
                Unstorable::SetCookie
            ]
        );
        let nv = h(&[("cache-control", "no-cache")]);
        assert_eq!(
            shared_unstorable(true, 200, &nv, false),
            [Unstorable::NoCacheWithoutValidators]
        );
        let nc_validated = h(&[("cache-control", "no-cache"), ("etag", "\"a\"")]);
        assert!(shared_unstorable(true, 200, &nc_validated, false).is_empty());
        let vary = h(&[
            ("vary", "Accept-Encoding, *"),
            ("cache-control", "no-store"),
        ]);
        assert_eq!(
            shared_unstorable(false, 200, &vary, true),
            [
                Unstorable::Method,
                Unstorable::NoStore,
                Unstorable::VaryStar,
                Unstorable::Authorization
            ]
        );
        assert_eq!(
            shared_unstorable(true, 302, &h(&[]), false),
            [Unstorable::Status]
        );
        assert!(
            shared_unstorable(true, 302, &h(&[("cache-control", "max-age=5")]), false).is_empty()
        );
    }
}
