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

use super::control::split_list;
pub use super::vocab::apache_reason;
use super::vocab::{apache_detail, cloudflare, nginx_status, rfc9211_member, x_cache_element};
use super::Headers;

pub use super::edge::{edge, proxy_header};

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

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
