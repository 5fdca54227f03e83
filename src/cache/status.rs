//! The one detector of "a cache answered", used by the cache audit and by the load
//! engine alike. It normalises what caches say into hit, miss, bypass, stale,
//! dynamic or unknown — from RFC 9211 `Cache-Status`, Cloudflare's `CF-Cache-Status`,
//! nginx's conventional `X-Cache-Status` (`$upstream_cache_status`), `X-Cache` (every
//! layer: Fastly "HIT, MISS", CloudFront "Hit from cloudfront", Akamai "TCP_HIT",
//! Apache's CacheHeader "HIT from host"), Apache's `X-Cache-Detail`, `X-Varnish`
//! (two ids = hit) and `Age` (> 0: a stored copy; present at all where the origin
//! sends none: Apache mod_cache's only sign of a hit) — and names the cache (Varnish,
//! Apache mod_cache, nginx proxy_cache, Cloudflare, CloudFront, Fastly, Akamai).
//! Also: whether a CDN or proxy is in the path, and which edge answered.

use serde::{Deserialize, Serialize};

use super::control::{split_list, unquote};
use super::Headers;

/// A normalised cache status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    Hit,
    Miss,
    Bypass,
    Stale,
    Dynamic,
    Unknown,
}

impl CacheState {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Hit => "hit",
            CacheState::Miss => "miss",
            CacheState::Bypass => "bypass",
            CacheState::Stale => "stale",
            CacheState::Dynamic => "dynamic",
            CacheState::Unknown => "unknown",
        }
    }

    /// A response that went to the origin without a stored copy.
    pub fn is_uncached(self) -> bool {
        matches!(
            self,
            CacheState::Miss | CacheState::Bypass | CacheState::Dynamic
        )
    }

    /// A response served from a stored copy (fresh or stale).
    pub fn from_cache(self) -> bool {
        matches!(self, CacheState::Hit | CacheState::Stale)
    }
}

/// Which cache answered, as far as the headers tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Varnish,
    Apache,
    Nginx,
    Cloudflare,
    CloudFront,
    Fastly,
    Akamai,
    Other,
}

impl CacheKind {
    /// Short name, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::Varnish => "varnish",
            CacheKind::Apache => "apache",
            CacheKind::Nginx => "nginx",
            CacheKind::Cloudflare => "cloudflare",
            CacheKind::CloudFront => "cloudfront",
            CacheKind::Fastly => "fastly",
            CacheKind::Akamai => "akamai",
            CacheKind::Other => "other",
        }
    }

    /// What to call it in a sentence.
    pub fn name(self) -> &'static str {
        match self {
            CacheKind::Varnish => "Varnish",
            CacheKind::Apache => "Apache mod_cache",
            CacheKind::Nginx => "nginx proxy_cache",
            CacheKind::Cloudflare => "Cloudflare",
            CacheKind::CloudFront => "CloudFront",
            CacheKind::Fastly => "Fastly",
            CacheKind::Akamai => "Akamai",
            CacheKind::Other => "the cache in front",
        }
    }

    /// How specific the evidence for it is (higher wins: a CDN's own headers over a
    /// Varnish `Via` it runs internally).
    fn rank(self) -> u8 {
        match self {
            CacheKind::Other => 0,
            CacheKind::Varnish | CacheKind::Apache | CacheKind::Nginx => 1,
            _ => 2,
        }
    }
}

/// One cache layer's status as one header reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheLayer {
    /// The header it came from (lowercase).
    pub source: &'static str,
    /// The raw value of this layer.
    pub raw: String,
    pub state: CacheState,
}

/// The cache status of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheStatus {
    /// Overall verdict: `hit` when any layer hit (the origin was spared), otherwise the
    /// status of the layer nearest the user, from the most specific header present.
    pub state: CacheState,
    /// Every layer every header reported.
    pub layers: Vec<CacheLayer>,
    /// Which cache it was, when the headers say.
    pub kind: Option<CacheKind>,
    /// The `Age` header, when present.
    pub age: Option<u64>,
}

impl CacheStatus {
    /// The header the verdict came from: the first that reported a hit for a hit,
    /// else the first that reported anything known ("" when no header said anything).
    pub fn source(&self) -> &'static str {
        let known = |l: &&CacheLayer| match self.state {
            CacheState::Unknown => true,
            state => l.state == state,
        };
        self.layers
            .iter()
            .find(known)
            .or(self.layers.first())
            .map(|l| l.source)
            .unwrap_or("")
    }
}

fn cloudflare(v: &str) -> CacheState {
    match v.trim().to_ascii_uppercase().as_str() {
        "HIT" | "REVALIDATED" => CacheState::Hit,
        "MISS" | "EXPIRED" => CacheState::Miss,
        "STALE" | "UPDATING" => CacheState::Stale,
        "BYPASS" => CacheState::Bypass,
        "DYNAMIC" => CacheState::Dynamic,
        _ => CacheState::Unknown,
    }
}

/// nginx's `$upstream_cache_status`: MISS, BYPASS, EXPIRED, STALE, UPDATING,
/// REVALIDATED or HIT.
fn nginx_status(v: &str) -> CacheState {
    match v.trim().to_ascii_uppercase().as_str() {
        "HIT" | "REVALIDATED" => CacheState::Hit,
        "MISS" | "EXPIRED" => CacheState::Miss,
        "STALE" | "UPDATING" => CacheState::Stale,
        "BYPASS" => CacheState::Bypass,
        _ => CacheState::Unknown,
    }
}

/// One X-Cache element: "HIT", "Miss from cloudfront", "TCP_MEM_HIT", "HitStale from
/// child", Apache's "REVALIDATE from host" (served from cache after a 304)…
fn x_cache_element(v: &str) -> CacheState {
    let first = v
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let w = first.replace(['_', '-'], "");
    if w.contains("stale") || w.contains("refreshfail") || w.contains("updating") {
        CacheState::Stale
    } else if w.contains("miss") || w == "expired" {
        CacheState::Miss
    } else if w.contains("hit") || w == "revalidate" || w == "revalidated" {
        CacheState::Hit
    } else if w.contains("notcacheable") || w.contains("pass") || w.contains("bypass") {
        CacheState::Bypass
    } else if w.contains("dynamic") {
        CacheState::Dynamic
    } else {
        CacheState::Unknown
    }
}

/// Apache's `X-Cache-Detail` (CacheDetailHeader on): `"cache hit" from host`,
/// `"conditional cache hit: entity refreshed" from host`, `"cache miss: attempting
/// entity save" from host`, or the reason it did not store: `"No Last-Modified; …"`.
fn apache_detail(v: &str) -> CacheState {
    let d = apache_reason(v).to_ascii_lowercase();
    if d.contains("hit") {
        CacheState::Hit
    } else if d.starts_with("cache miss") || d.contains("conditional cache miss") {
        CacheState::Miss
    } else if d.is_empty() {
        CacheState::Unknown
    } else {
        CacheState::Bypass
    }
}

/// The quoted text of an `X-Cache-Detail` value (Apache's own explanation).
pub fn apache_reason(v: &str) -> String {
    let v = v.trim();
    match v.strip_prefix('"').and_then(|r| r.split_once('"')) {
        Some((inner, _)) => inner.to_string(),
        None => v.rsplit_once(" from ").map_or(v, |(d, _)| d).to_string(),
    }
}

/// One RFC 9211 list member: `Name; hit`, `Name; fwd=uri-miss; stored`, `Name; hit; ttl=-3`.
fn rfc9211_member(member: &str) -> CacheState {
    let params: Vec<(String, String)> = member
        .split(';')
        .skip(1)
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                k.trim().to_ascii_lowercase(),
                unquote(v).to_ascii_lowercase(),
            )
        })
        .collect();
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("hit").is_some() {
        let negative_ttl = get("ttl")
            .and_then(|t| t.parse::<i64>().ok())
            .is_some_and(|t| t < 0);
        return if negative_ttl {
            CacheState::Stale
        } else {
            CacheState::Hit
        };
    }
    match get("fwd") {
        Some("bypass" | "method" | "request") => CacheState::Bypass,
        Some("stale") => CacheState::Stale,
        Some("uri-miss" | "vary-miss" | "miss" | "partial") => CacheState::Miss,
        _ => CacheState::Unknown,
    }
}

/// The headers the detector reads, most specific first (their order is the
/// precedence among headers that disagree).
pub const STATUS_HEADERS: [&str; 7] = [
    "cache-status",
    "cf-cache-status",
    "x-cache-status",
    "x-cache",
    "x-cache-detail",
    "x-varnish",
    "age",
];

/// Headers that name the cache without reporting a status.
const KIND_HEADERS: [&str; 8] = [
    "cf-ray",
    "x-amz-cf-id",
    "x-amz-cf-pop",
    "x-served-by",
    "fastly-debug-digest",
    "akamai-cache-status",
    "via",
    "server",
];

/// Whether the detector reads this header (case-insensitive); the load engine asks
/// this before handing a header over.
pub fn reads(name: &str) -> bool {
    STATUS_HEADERS
        .iter()
        .chain(KIND_HEADERS.iter())
        .any(|h| h.eq_ignore_ascii_case(name))
}

/// Which cache a header names (None: it does not say).
fn kind_of(name: &str, value: &str) -> Option<CacheKind> {
    let has = |n: &str| contains_ci(value, n);
    match name {
        "cf-ray" | "cf-cache-status" => Some(CacheKind::Cloudflare),
        "x-amz-cf-id" | "x-amz-cf-pop" => Some(CacheKind::CloudFront),
        "x-served-by" if has("cache-") => Some(CacheKind::Fastly),
        "fastly-debug-digest" => Some(CacheKind::Fastly),
        "akamai-cache-status" => Some(CacheKind::Akamai),
        "x-varnish" => Some(CacheKind::Varnish),
        "x-cache-status" => Some(CacheKind::Nginx),
        "x-cache-detail" => Some(CacheKind::Apache),
        "x-cache" => {
            if has("cloudfront") {
                Some(CacheKind::CloudFront)
            } else if has("tcp_") {
                Some(CacheKind::Akamai)
            } else {
                None
            }
        }
        "via" => {
            if has("cloudfront") {
                Some(CacheKind::CloudFront)
            } else if has("varnish") {
                Some(CacheKind::Varnish)
            } else {
                None
            }
        }
        "cache-status" => [
            ("varnish", CacheKind::Varnish),
            ("nginx", CacheKind::Nginx),
            ("apache", CacheKind::Apache),
            ("cloudflare", CacheKind::Cloudflare),
            ("cloudfront", CacheKind::CloudFront),
            ("fastly", CacheKind::Fastly),
            ("akamai", CacheKind::Akamai),
        ]
        .into_iter()
        .find(|(n, _)| has(n))
        .map(|(_, k)| k)
        .or(Some(CacheKind::Other)),
        _ => None,
    }
}

/// Calls `f(source, raw layer, state)` for each cache layer one header reports.
/// `name` must be lowercase.
fn each_layer(name: &str, value: &str, mut f: impl FnMut(&'static str, &str, CacheState)) {
    let Some(source) = STATUS_HEADERS.iter().copied().find(|h| *h == name) else {
        return;
    };
    match source {
        "cache-status" => split_list(value)
            .into_iter()
            .for_each(|m| f(source, m, rfc9211_member(m))),
        "cf-cache-status" => f(source, value, cloudflare(value)),
        "x-cache-status" => f(source, value, nginx_status(value)),
        "x-cache" => value
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .for_each(|m| f(source, m, x_cache_element(m))),
        "x-cache-detail" => f(source, value, apache_detail(value)),
        "x-varnish" => value
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .for_each(|m| {
                let state = match m.split_whitespace().count() {
                    2.. => CacheState::Hit,
                    1 => CacheState::Miss,
                    _ => CacheState::Unknown,
                };
                f(source, m, state)
            }),
        "age" => {
            if let Ok(a) = value.trim().parse::<u64>() {
                let state = if a > 0 {
                    CacheState::Hit
                } else {
                    CacheState::Unknown
                };
                f(source, value, state)
            }
        }
        _ => {}
    }
}

/// Folds a response's headers, in any order, into one verdict without allocating
/// (besides RFC 9211 lists): the load engine feeds it header by header, the audit
/// through [`cache_status`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Detector {
    any_hit: bool,
    /// (precedence of the header, state of its layer nearest the user).
    best: Option<(usize, CacheState)>,
    kind: Option<CacheKind>,
    age: Option<u64>,
    apache_server: bool,
    /// A header other than Age reported a status.
    status_header: bool,
}

/// What one response says, as the load engine counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tally {
    /// Nothing in the headers.
    #[default]
    Unknown,
    Hit,
    Miss,
}

/// What one response said about caching, as the load engine keeps it (Copy, no
/// allocation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    pub tally: Tally,
    pub kind: Option<CacheKind>,
}

/// Whether `hay` contains `needle`, ASCII case-insensitively, without allocating.
fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

impl Detector {
    /// Reads one header (any case); headers it does not know are ignored.
    pub fn feed(&mut self, name: &str, value: &str) {
        let Some(name) = STATUS_HEADERS
            .iter()
            .chain(KIND_HEADERS.iter())
            .copied()
            .find(|h| h.eq_ignore_ascii_case(name))
        else {
            return;
        };
        if name == "age" && self.age.is_none() {
            self.age = value.trim().parse().ok();
        }
        if name == "server" && contains_ci(value, "apache") {
            self.apache_server = true;
        }
        if let Some(k) = kind_of(name, value) {
            if self.kind.is_none_or(|old| k.rank() > old.rank()) {
                self.kind = Some(k);
            }
        }
        each_layer(name, value, |source, _, state| self.layer(source, state));
    }

    fn layer(&mut self, source: &'static str, state: CacheState) {
        if source != "age" {
            self.status_header = true;
        }
        if state == CacheState::Hit {
            self.any_hit = true;
        }
        if state == CacheState::Unknown {
            return;
        }
        let prec = STATUS_HEADERS
            .iter()
            .position(|h| *h == source)
            .unwrap_or(usize::MAX);
        // Among one header's layers, the last is nearest the user.
        if self.best.is_none_or(|(p, _)| prec <= p) {
            self.best = Some((prec, state));
        }
    }

    /// The overall state: a hit when any layer hit, else the layer nearest the user of
    /// the most specific header; with nothing else said, an `Age` header at all is a
    /// hit (RFC 9111 §5.1: its presence implies the origin did not generate or
    /// validate the response for this request; Apache mod_cache's only sign).
    pub fn state(&self) -> CacheState {
        if self.any_hit {
            CacheState::Hit
        } else if let Some((_, s)) = self.best {
            s
        } else if self.age.is_some() {
            CacheState::Hit
        } else {
            CacheState::Unknown
        }
    }

    /// The state says only because of a bare `Age` header.
    pub fn age_only(&self) -> bool {
        !self.any_hit && self.best.is_none() && self.age.is_some()
    }

    /// Which cache answered, when the headers say (an `Age`-only cache behind an
    /// Apache `Server` is Apache mod_cache).
    pub fn kind(&self) -> Option<CacheKind> {
        self.kind.or_else(|| {
            (self.age.is_some() && self.apache_server && !self.status_header)
                .then_some(CacheKind::Apache)
        })
    }

    /// The `Age` header, when present.
    pub fn age(&self) -> Option<u64> {
        self.age
    }

    /// What the load engine keeps of this response.
    pub fn seen(&self) -> Seen {
        Seen {
            tally: self.tally(),
            kind: self.kind(),
        }
    }

    /// How the load engine counts this response.
    pub fn tally(&self) -> Tally {
        match self.state() {
            s if s.from_cache() => Tally::Hit,
            s if s.is_uncached() => Tally::Miss,
            _ => Tally::Unknown,
        }
    }
}

/// Normalises the cache status of one response from its headers.
pub fn cache_status(headers: &Headers) -> CacheStatus {
    let mut d = Detector::default();
    for (n, v) in &headers.0 {
        d.feed(n, v);
    }
    let mut layers = Vec::new();
    for h in STATUS_HEADERS {
        if h == "age" {
            // Only the first Age counts.
            if let Some(v) = headers.get_all(h).next() {
                each_layer(h, v, |source, raw, state| {
                    layers.push(CacheLayer {
                        source,
                        raw: raw.to_string(),
                        state,
                    })
                });
            }
            continue;
        }
        if let Some(v) = headers.get(h) {
            each_layer(h, &v, |source, raw, state| {
                layers.push(CacheLayer {
                    source,
                    raw: raw.to_string(),
                    state,
                })
            });
        }
    }
    if d.age_only() {
        // The bare Age is the evidence (RFC 9111 §5.1).
        if let Some(l) = layers.iter_mut().find(|l| l.source == "age") {
            l.state = CacheState::Hit;
        }
    }
    CacheStatus {
        state: d.state(),
        layers,
        kind: d.kind(),
        age: d.age(),
    }
}

/// Headers that only a CDN or caching proxy adds.
const PROXY_HEADERS: [&str; 16] = [
    "via",
    "cache-status",
    "cf-cache-status",
    "cf-ray",
    "x-cache",
    "x-cache-status",
    "x-cache-detail",
    "x-cache-hits",
    "x-varnish",
    "x-served-by",
    "x-amz-cf-id",
    "x-amz-cf-pop",
    "x-akamai-request-id",
    "akamai-cache-status",
    "cdn-cache-control",
    "fastly-debug-digest",
];

/// Whether a CDN or proxy answered (kernel RTT then ends at the edge); the first header
/// that says so.
pub fn proxy_header(headers: &Headers) -> Option<&'static str> {
    PROXY_HEADERS.iter().copied().find(|h| headers.has(h))
}

/// Which edge answered, e.g. "Cloudflare SJC", "CloudFront SFO53-C1", "Fastly
/// cache-sjc3125-SJC".
pub fn edge(headers: &Headers) -> Option<String> {
    if let Some(ray) = headers.get("cf-ray") {
        let colo = ray
            .rsplit_once('-')
            .map(|(_, c)| c.to_string())
            .unwrap_or(ray);
        return Some(format!("Cloudflare {colo}"));
    }
    if let Some(pop) = headers.get("x-amz-cf-pop") {
        return Some(format!("CloudFront {pop}"));
    }
    if let Some(by) = headers.get("x-served-by") {
        let last = split_list(&by).last().map(|s| s.to_string()).unwrap_or(by);
        return Some(format!("Fastly {last}"));
    }
    headers.get("via").map(|v| format!("via {v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pairs: &[(&str, &str)]) -> CacheState {
        cache_status(&Headers::from_pairs(pairs)).state
    }

    /// Cloudflare's vocabulary maps onto the five verdicts.
    #[test]
    fn cloudflare_statuses() {
        assert_eq!(state(&[("CF-Cache-Status", "HIT")]), CacheState::Hit);
        assert_eq!(state(&[("cf-cache-status", "MISS")]), CacheState::Miss);
        assert_eq!(state(&[("cf-cache-status", "EXPIRED")]), CacheState::Miss);
        assert_eq!(
            state(&[("cf-cache-status", "DYNAMIC")]),
            CacheState::Dynamic
        );
        assert_eq!(state(&[("cf-cache-status", "BYPASS")]), CacheState::Bypass);
        assert_eq!(state(&[("cf-cache-status", "UPDATING")]), CacheState::Stale);
        assert_eq!(state(&[("cf-cache-status", "NONE")]), CacheState::Unknown);
    }

    /// X-Cache from Fastly (each layer), CloudFront and Akamai.
    #[test]
    fn x_cache_layers() {
        let s = cache_status(&Headers::from_pairs(&[("x-cache", "HIT, MISS")]));
        assert_eq!(s.state, CacheState::Hit);
        assert_eq!(s.layers.len(), 2);
        assert_eq!(s.layers[1].state, CacheState::Miss);
        assert_eq!(state(&[("x-cache", "MISS, MISS")]), CacheState::Miss);
        assert_eq!(
            state(&[("X-Cache", "Miss from cloudfront")]),
            CacheState::Miss
        );
        assert_eq!(
            state(&[("X-Cache", "Hit from cloudfront")]),
            CacheState::Hit
        );
        assert_eq!(
            state(&[("X-Cache", "RefreshHit from cloudfront")]),
            CacheState::Hit
        );
        assert_eq!(
            state(&[("x-cache", "TCP_MEM_HIT from a23-1-2-3")]),
            CacheState::Hit
        );
        assert_eq!(
            state(&[("x-cache", "TCP_MISS from a23-1-2-3")]),
            CacheState::Miss
        );
        assert_eq!(
            state(&[("x-cache", "TCP_REFRESH_FAIL_HIT")]),
            CacheState::Stale
        );
        assert_eq!(
            state(&[("x-cache", "NotCacheable from child, Miss from parent")]),
            CacheState::Miss
        );
    }

    /// The source is the header the verdict came from: a hit only `Age` reports is
    /// from `age`, not from the `cf-cache-status` MISS listed before it.
    #[test]
    fn source_is_where_the_verdict_came_from() {
        let s = cache_status(&Headers::from_pairs(&[
            ("cf-cache-status", "MISS"),
            ("age", "30"),
        ]));
        assert_eq!(s.state, CacheState::Hit);
        assert_eq!(s.source(), "age");
        let s = cache_status(&Headers::from_pairs(&[
            ("x-cache", "weird"),
            ("cf-cache-status", "DYNAMIC"),
        ]));
        assert_eq!(
            (s.state, s.source()),
            (CacheState::Dynamic, "cf-cache-status")
        );
        let s = cache_status(&Headers::from_pairs(&[("x-cache", "weird")]));
        assert_eq!((s.state, s.source()), (CacheState::Unknown, "x-cache"));
        assert_eq!(cache_status(&Headers::default()).source(), "");
    }

    /// X-Varnish: two ids (this request and the one that stored it) mean a hit.
    #[test]
    fn x_varnish_ids() {
        assert_eq!(state(&[("X-Varnish", "123 456")]), CacheState::Hit);
        assert_eq!(state(&[("X-Varnish", "32770")]), CacheState::Miss);
    }

    /// RFC 9211: any hit wins; otherwise the member nearest the user.
    #[test]
    fn rfc9211_cache_status() {
        let s = cache_status(&Headers::from_pairs(&[(
            "Cache-Status",
            "ExampleCache; hit, OtherCache; fwd=uri-miss",
        )]));
        assert_eq!(s.state, CacheState::Hit);
        assert_eq!(s.layers[1].state, CacheState::Miss);
        assert_eq!(s.source(), "cache-status");
        let st = |v| state(&[("cache-status", v)]);
        assert_eq!(
            st("Origin; fwd=uri-miss, Edge; fwd=bypass"),
            CacheState::Bypass
        );
        assert_eq!(st("Edge; fwd=stale; fwd-status=304"), CacheState::Stale);
        assert_eq!(st("Edge; hit; ttl=-12"), CacheState::Stale);
        assert_eq!(
            st("Edge; fwd=miss; stored; detail=\"a, b\""),
            CacheState::Miss
        );
    }

    /// Age > 0 alone says a cache served a stored copy; Age 0 says nothing.
    #[test]
    fn age_and_nothing() {
        assert_eq!(state(&[("age", "17")]), CacheState::Hit);
        // RFC 9111 §5.1: an Age at all means a cache answered (Apache mod_cache
        // marks its hits only so, often with Age 0).
        assert_eq!(state(&[("age", "0")]), CacheState::Hit);
        assert_eq!(
            state(&[("age", "0"), ("x-varnish", "32770")]),
            CacheState::Miss
        );
        assert_eq!(state(&[("server", "nginx")]), CacheState::Unknown);
        // The lab's /cdn/miss headers.
        assert_eq!(
            state(&[
                ("cf-cache-status", "MISS"),
                ("x-cache", "MISS"),
                ("age", "0"),
                ("via", "1.1 varnish (latscope-lab-cdn)")
            ]),
            CacheState::Miss
        );
    }

    /// Proxy detection and the edge that answered.
    #[test]
    fn proxy_and_edge() {
        let cf = Headers::from_pairs(&[("CF-RAY", "8a1b2c3d4e5f6789-SJC")]);
        assert_eq!(proxy_header(&cf), Some("cf-ray"));
        assert_eq!(edge(&cf).as_deref(), Some("Cloudflare SJC"));
        let cfront = Headers::from_pairs(&[
            ("via", "1.1 abc.cloudfront.net (CloudFront)"),
            ("x-amz-cf-pop", "SFO53-C1"),
        ]);
        assert_eq!(edge(&cfront).as_deref(), Some("CloudFront SFO53-C1"));
        let fastly =
            Headers::from_pairs(&[("x-served-by", "cache-iad2136-IAD, cache-sjc3125-SJC")]);
        assert_eq!(edge(&fastly).as_deref(), Some("Fastly cache-sjc3125-SJC"));
        assert_eq!(
            proxy_header(&Headers::from_pairs(&[("server", "nginx")])),
            None
        );
    }
}
