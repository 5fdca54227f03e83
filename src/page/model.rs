//! What a page run measured, typed: every request of every visit (its phases from
//! the Network domain's `response.timing`, protocol, status, size, cache, initiator,
//! render-blocking status), the page milestones, the requests the browser was not
//! allowed to make. These are the records `page --json`, the store and the HAR
//! export are made from. Times are ms from the visit's navigation start (the
//! Performance API's time origin). Pure data: no measuring, no printing.

use serde::{Deserialize, Serialize};

/// A first visit (fresh profile: cold caches, new connections) or a repeat visit
/// (the same profile right after: browser cache, kept-alive connections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VisitKind {
    First,
    Repeat,
}

impl VisitKind {
    /// "first" / "repeat".
    pub fn name(self) -> &'static str {
        match self {
            VisitKind::First => "first",
            VisitKind::Repeat => "repeat",
        }
    }
}

/// The page milestones, ms from navigation start (None: the page never reached it
/// or the browser did not report it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Milestones {
    /// The document's first byte (`responseStart`).
    pub ttfb_ms: Option<f64>,
    /// First contentful paint.
    pub fcp_ms: Option<f64>,
    /// Largest contentful paint (the last candidate before the page was read).
    pub lcp_ms: Option<f64>,
    /// The URL of the LCP element's resource (empty for text).
    #[serde(default)]
    pub lcp_url: String,
    /// `DOMContentLoaded` ended.
    pub dom_content_loaded_ms: Option<f64>,
    /// The load event ended.
    pub load_ms: Option<f64>,
}

/// The phases of one request, ms (DESIGN.md's names; None where the request had no
/// such phase: a reused connection has no dns/connect/tls, a cached answer none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// From the request being issued to its first network step (waiting for a
    /// connection or behind higher-priority requests).
    pub queued: f64,
    pub dns: Option<f64>,
    pub connect: Option<f64>,
    /// Part of `connect` (Chromium counts TLS inside connect; here it is apart).
    pub tls: Option<f64>,
    pub send: Option<f64>,
    pub wait: Option<f64>,
    pub receive: Option<f64>,
}

impl Phases {
    /// DNS + TCP connect + TLS: what a new origin costs before the request is sent.
    pub fn setup(&self) -> f64 {
        self.dns.unwrap_or(0.0) + self.connect.unwrap_or(0.0) + self.tls.unwrap_or(0.0)
    }
}

/// One request of a visit (a redirect hop is a request of its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The URL as requested (redacted before any output).
    pub url: String,
    /// scheme://host[:port].
    pub origin: String,
    pub method: String,
    /// Document, Stylesheet, Script, Image, Font, Fetch, XHR, Other…
    pub resource_type: String,
    /// parser, script, preload, redirect, other (the Network domain's initiator type).
    pub initiator: String,
    /// The URL of what started it (the document, a stylesheet, a script).
    #[serde(default)]
    pub initiator_url: String,
    /// ms from navigation start.
    pub start_ms: f64,
    /// ms from navigation start (the last byte, or the failure).
    pub end_ms: f64,
    pub phases: Phases,
    /// http/1.1, h2, h3…
    pub protocol: String,
    /// 0 when no response came.
    pub status: u16,
    /// Bytes on the wire (headers and body as received).
    pub encoded_bytes: u64,
    /// Answered by the browser's cache (memory or disk) without the network.
    pub from_cache: bool,
    /// Resource Timing's `renderBlockingStatus`: "blocking", "non-blocking", or ""
    /// when the page did not say.
    pub render_blocking: String,
    /// The connection it went over (the browser's id) and whether it was reused.
    pub connection_id: u64,
    pub connection_reused: bool,
    pub remote_address: String,
    /// `Cache-Control` of the response, as sent.
    #[serde(default)]
    pub cache_control: String,
    /// `Location` of a redirect.
    #[serde(default)]
    pub location: String,
    /// `Content-Type` of the response.
    #[serde(default)]
    pub mime_type: String,
    /// Why it failed, when it did (net::ERR_…).
    #[serde(default)]
    pub error: String,
    /// Not fetched: its origin is not allowed (`--allow-origin`).
    #[serde(default)]
    pub blocked: bool,
    /// Request headers as the browser reported them (secrets redacted on output).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<(String, String)>,
    /// Response headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<(String, String)>,
    /// When it started, ms since the Unix epoch (for HAR).
    #[serde(default)]
    pub wall_ms: f64,
}

impl Request {
    /// Time to its first byte from its start (ms).
    pub fn ttfb(&self) -> f64 {
        let p = &self.phases;
        p.queued + p.setup() + p.send.unwrap_or(0.0) + p.wait.unwrap_or(0.0)
    }

    /// Whether it was a redirect answer.
    pub fn is_redirect(&self) -> bool {
        (300..400).contains(&self.status) && self.status != 304
    }
}

/// One visit of the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Visit {
    pub kind: VisitKind,
    /// 1-based, per kind.
    pub index: u32,
    pub milestones: Milestones,
    /// In the order they started.
    pub requests: Vec<Request>,
    /// Wall-clock navigation start, ms since the Unix epoch.
    pub started_wall_ms: f64,
    /// The page's title (for HAR).
    #[serde(default)]
    pub title: String,
    /// Whether the load event was reached within the time bound.
    pub loaded: bool,
}

impl Visit {
    /// The page's own document (the first non-redirect Document request).
    pub fn document(&self) -> Option<&Request> {
        self.requests
            .iter()
            .find(|r| r.resource_type == "Document" && !r.is_redirect())
    }
}

/// A whole page run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageRun {
    /// The URL given.
    pub url: String,
    /// The origins the browser was allowed to fetch from (besides loopback and the
    /// lab's 198.18.0.0/15).
    pub allowed_origins: Vec<String>,
    /// The browser's product string (Browser.getVersion).
    pub browser: String,
    pub visits: Vec<Visit>,
    /// Why the run stopped early, when it did (`--max-time`, Ctrl-C).
    #[serde(default)]
    pub stopped: Option<String>,
    pub elapsed_s: f64,
}

impl PageRun {
    /// The visits of one kind.
    pub fn of(&self, kind: VisitKind) -> impl Iterator<Item = &Visit> {
        self.visits.iter().filter(move |v| v.kind == kind)
    }

    /// The visit of `kind` whose LCP (else load) is the median one: the visit the
    /// verdict and the waterfall show.
    pub fn median(&self, kind: VisitKind) -> Option<&Visit> {
        median_visit(&self.visits, kind)
    }
}

/// Of `visits`, the one of `kind` whose LCP (else load) is the median one (the lower
/// of the middle two), as [`PageRun::median`] picks it.
pub fn median_visit(visits: &[Visit], kind: VisitKind) -> Option<&Visit> {
    let mut v: Vec<&Visit> = visits.iter().filter(|v| v.kind == kind).collect();
    let key = |x: &Visit| {
        x.milestones
            .lcp_ms
            .or(x.milestones.load_ms)
            .unwrap_or(f64::MAX)
    };
    v.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let n = v.len();
    (n > 0).then(|| v[(n - 1) / 2])
}

/// The median of per-visit values, the lower of the middle two (a value one visit
/// had, as the median visit is one visit); None when there are none.
pub fn median_value(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| v[(n - 1) / 2])
}

/// The origin (scheme://host[:port], default port left out) of a URL, or "" when it
/// has none (data:, blob:).
pub fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) if u.has_host() => u.origin().ascii_serialization(),
        _ => String::new(),
    }
}

#[cfg(test)]
impl Request {
    /// A finished GET of `url` for the tests: 200 over HTTP/1.1, 100 bytes, from 10
    /// to 20 ms, no phases; each test sets what it is about.
    pub(crate) fn for_tests(url: &str, resource_type: &str) -> Request {
        Request {
            url: url.into(),
            origin: origin_of(url),
            method: "GET".into(),
            resource_type: resource_type.into(),
            initiator: "parser".into(),
            initiator_url: String::new(),
            start_ms: 10.0,
            end_ms: 20.0,
            phases: Phases::default(),
            protocol: "http/1.1".into(),
            status: 200,
            encoded_bytes: 100,
            from_cache: false,
            render_blocking: String::new(),
            connection_id: 1,
            connection_reused: false,
            remote_address: String::new(),
            cache_control: String::new(),
            location: String::new(),
            mime_type: String::new(),
            error: String::new(),
            blocked: false,
            request_headers: Vec::new(),
            response_headers: Vec::new(),
            wall_ms: 0.0,
        }
    }
}
