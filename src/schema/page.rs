//! The page document (`latscope page --json`, the stored summary of a page run): the
//! verdict, the median milestones of each kind of visit, every visit's requests and
//! milestones (`page::model`'s records), why the run stopped early, the findings.

use serde::{Deserialize, Serialize};

use crate::diagnose::Finding;
use crate::page::model::{median_value, PageRun, Visit, VisitKind};

/// A page run's document. Every field has a default, so a document missing one (an
/// older run, a hand-made fixture) still reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageDoc {
    /// "page".
    pub kind: String,
    pub schema_version: u32,
    /// The URL given (redacted before any output).
    pub target: String,
    /// "LCP 2.4 s on a first visit: …" (report::page::verdict).
    pub verdict: String,
    /// The browser's product string.
    pub browser: String,
    /// The origins the browser was allowed to fetch from besides loopback and the lab.
    pub allowed_origins: Vec<String>,
    /// The median milestones of the first visits…
    pub first: PageSummary,
    /// … and of the repeat visits.
    pub repeat: PageSummary,
    pub visits: Vec<Visit>,
    /// Why the run stopped early, when it did (`--max-time`, Ctrl-C).
    pub stopped: Option<String>,
    pub elapsed_s: f64,
    /// The origins the median first visit's first paint waited for, each probed with
    /// latscope's own rules (`pipeline::page`).
    pub origins: Vec<PageOrigin>,
    pub findings: Vec<Finding>,
}

/// An origin on the critical path and what its probe said.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageOrigin {
    /// scheme://host[:port].
    pub origin: String,
    /// The request probed: the document on the page's own origin, else the origin's
    /// render-blocking request, else its longest that ended before the first paint.
    pub url: String,
    /// Its resource type as the browser gave it ("Document", "Stylesheet", "Font"…).
    pub resource_type: String,
    /// "Where the time goes" for that request, when the probe could say.
    pub summary: Option<String>,
    /// The HTTP version the probe spoke ("HTTP/1.1", "HTTP/2"), offered h2 over TLS.
    pub http_version: Option<String>,
    /// The kernel's smallest round-trip time to it, ms.
    pub min_rtt_ms: Option<f64>,
    /// A new connection's handshakes (TCP, TLS) in round trips.
    pub handshake_round_trips: Option<f64>,
    /// Its server time (reused wait − min RTT, p50), ms.
    pub server_ms: Option<f64>,
    /// Why the origin could not be probed.
    pub error: Option<String>,
    /// The ids of the warnings its probe gave (in `findings`, led by the origin).
    pub findings: Vec<String>,
}

/// The median milestones over the visits of one kind (the lower of the middle two:
/// a value one visit had), ms; None where no visit reached it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageSummary {
    pub visits: u32,
    pub ttfb_ms: Option<f64>,
    pub fcp_ms: Option<f64>,
    pub lcp_ms: Option<f64>,
    pub load_ms: Option<f64>,
    /// Requests per visit.
    pub requests: Option<f64>,
    /// Of them answered by the browser's cache.
    pub from_cache: Option<f64>,
}

impl PageSummary {
    /// The medians over `run`'s visits of `kind`.
    pub fn of(run: &PageRun, kind: VisitKind) -> PageSummary {
        let visits: Vec<&Visit> = run.of(kind).collect();
        let m = |f: fn(&Visit) -> Option<f64>| {
            median_value(visits.iter().filter_map(|v| f(v)).collect())
        };
        let count = |f: fn(&Visit) -> f64| median_value(visits.iter().map(|v| f(v)).collect());
        PageSummary {
            visits: visits.len() as u32,
            ttfb_ms: m(|v| v.milestones.ttfb_ms),
            fcp_ms: m(|v| v.milestones.fcp_ms),
            lcp_ms: m(|v| v.milestones.lcp_ms),
            load_ms: m(|v| v.milestones.load_ms),
            requests: count(|v| v.requests.len() as f64),
            from_cache: count(|v| v.requests.iter().filter(|r| r.from_cache).count() as f64),
        }
    }
}

impl PageDoc {
    /// The document of `run`, with its verdict, probed origins and findings.
    pub fn new(
        run: &PageRun,
        verdict: String,
        origins: Vec<PageOrigin>,
        findings: Vec<Finding>,
    ) -> PageDoc {
        PageDoc {
            kind: "page".into(),
            schema_version: super::SCHEMA_VERSION,
            target: run.url.clone(),
            verdict,
            browser: run.browser.clone(),
            allowed_origins: run.allowed_origins.clone(),
            first: PageSummary::of(run, VisitKind::First),
            repeat: PageSummary::of(run, VisitKind::Repeat),
            visits: run.visits.clone(),
            stopped: run.stopped.clone(),
            elapsed_s: run.elapsed_s,
            origins,
            findings,
        }
    }

    /// The headline `latscope runs` shows: the first visits' median milestones.
    pub fn headline(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut h = serde_json::Map::new();
        let f = &self.first;
        for (k, v) in [
            ("lcp_ms", f.lcp_ms),
            ("fcp_ms", f.fcp_ms),
            ("ttfb_ms", f.ttfb_ms),
            ("requests", f.requests),
        ] {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                h.insert(k.to_string(), serde_json::json!(v));
            }
        }
        h
    }
}
