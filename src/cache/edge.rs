//! Whether a CDN or proxy is in the path (the kernel RTT then ends at the edge) and
//! which edge answered.

use super::control::split_list;
use super::Headers;

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
