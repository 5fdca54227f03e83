//! Each cache's own vocabulary for "did I answer from cache", as one normalised
//! [`CacheState`] per header value: Cloudflare, nginx's `$upstream_cache_status`,
//! `X-Cache` elements (Fastly, CloudFront, Akamai, Apache), Apache's `X-Cache-Detail`
//! and RFC 9211 `Cache-Status` members. The detector in `status` combines them.

use super::control::unquote;
use super::status::CacheState;

pub(crate) fn cloudflare(v: &str) -> CacheState {
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
pub(crate) fn nginx_status(v: &str) -> CacheState {
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
pub(crate) fn x_cache_element(v: &str) -> CacheState {
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
pub(crate) fn apache_detail(v: &str) -> CacheState {
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
pub(crate) fn rfc9211_member(member: &str) -> CacheState {
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
