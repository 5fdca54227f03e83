//! Normalises what CDNs and proxies say about a response's cache status into one
//! verdict — hit, miss, bypass, stale, dynamic or unknown — from RFC 9211
//! `Cache-Status`, Cloudflare's `CF-Cache-Status`, `X-Cache` (every layer: Fastly
//! "HIT, MISS", CloudFront "Hit from cloudfront", Akamai "TCP_HIT"), `X-Varnish` (two
//! ids = hit) and `Age`; tells whether a CDN or proxy is in the path (those headers,
//! `Via`) and which edge answered (CF-Ray, X-Amz-Cf-Pop, X-Served-By).

use serde::{Deserialize, Serialize};

use super::cache::{split_list, unquote};
use super::facts::Headers;

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

/// One X-Cache element: "HIT", "Miss from cloudfront", "TCP_MEM_HIT", "HitStale from child"…
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
    } else if w.contains("hit") {
        CacheState::Hit
    } else if w.contains("notcacheable") || w.contains("pass") || w.contains("bypass") {
        CacheState::Bypass
    } else if w.contains("dynamic") {
        CacheState::Dynamic
    } else {
        CacheState::Unknown
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

/// Normalises the cache status of one response from its headers.
pub fn cache_status(headers: &Headers) -> CacheStatus {
    let mut layers = Vec::new();
    let mut add = |source, raw: &str, state| {
        layers.push(CacheLayer {
            source,
            raw: raw.to_string(),
            state,
        })
    };
    if let Some(v) = headers.get("cache-status") {
        for m in split_list(&v) {
            add("cache-status", m, rfc9211_member(m));
        }
    }
    if let Some(v) = headers.get("cf-cache-status") {
        add("cf-cache-status", &v, cloudflare(&v));
    }
    if let Some(v) = headers.get("x-cache") {
        for m in split_list(&v) {
            add("x-cache", m, x_cache_element(m));
        }
    }
    if let Some(v) = headers.get("x-varnish") {
        for m in split_list(&v) {
            let ids = m.split_whitespace().count();
            let state = match ids {
                2.. => CacheState::Hit,
                1 => CacheState::Miss,
                _ => CacheState::Unknown,
            };
            add("x-varnish", m, state);
        }
    }
    if let Some(age) = headers.get_all("age").next() {
        if age.trim().parse::<u64>().is_ok_and(|a| a > 0) {
            add("age", age, CacheState::Hit);
        }
    }
    let state = if layers.iter().any(|l| l.state == CacheState::Hit) {
        CacheState::Hit
    } else {
        // The first header present is the most specific; among its layers, the one
        // nearest the user is the last (RFC 9211 and Fastly list origin-most first).
        let source = layers
            .iter()
            .find(|l| l.state != CacheState::Unknown)
            .map(|l| l.source);
        layers
            .iter()
            .rev()
            .find(|l| Some(l.source) == source)
            .map(|l| l.state)
            .unwrap_or(CacheState::Unknown)
    };
    CacheStatus { state, layers }
}

/// Headers that only a CDN or caching proxy adds.
const PROXY_HEADERS: [&str; 14] = [
    "via",
    "cache-status",
    "cf-cache-status",
    "cf-ray",
    "x-cache",
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
        assert_eq!(state(&[("age", "0")]), CacheState::Unknown);
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
