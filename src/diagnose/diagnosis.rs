//! One URL's diagnosis as data: what was measured (probe, cache audit, origin probe,
//! load ramp) and what the rules concluded. Built by the diagnose command, rendered by
//! `report::diagnose`, stored as the diagnose JSON (`schema::DiagnoseDoc`).

use crate::probe::audit::CacheObservation;
use crate::probe::ProbeResult;
use crate::stats::StoredHistogram;

use super::facts::{Facts, LoadFacts, LoadStep};
use super::finding::Finding;

/// The short load ramp of a diagnosis.
#[derive(Debug, Clone)]
pub struct Ramp {
    /// One row per concurrency step.
    pub steps: Vec<LoadStep>,
    /// Why the ramp stopped before its last step, if it did.
    pub stopped_early: Option<String>,
    /// Cache hit ratio the responses reported, when they said.
    pub hit_ratio: Option<f64>,
    /// The facts the load rules read (steps and the joined timeline).
    pub facts: LoadFacts,
    /// The steps' seconds back to back (`load.timeline` of the diagnose JSON).
    pub timeline: Vec<crate::load::capacity::JoinedSecond>,
    /// What the responses said about a cache, over every step.
    pub cache: RampCache,
    /// How each `--out` did.
    pub outputs: Vec<crate::record::OutputReport>,
    /// What `--watch` scraped during the ramp.
    pub watch: Option<crate::watch::WatchSummary>,
    /// Histograms to store with the run.
    pub histograms: Vec<StoredHistogram>,
    /// Each step's wall-clock start, its seconds, and where they sit on the joined
    /// timeline (`offset`, and `whole`: its last whole second takes the extra one),
    /// to join `--watch` scrapes after the ramp.
    pub spans: Vec<(std::time::SystemTime, usize, u32, u32)>,
}

/// The cache answers of a ramp's responses.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RampCache {
    pub hits: u64,
    pub misses: u64,
    /// Ok responses, whatever they said.
    pub answered: u64,
    /// Which cache answered, when one said.
    pub kind: Option<crate::cache::CacheKind>,
}

/// Everything measured and concluded about one URL.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub target: String,
    pub probe: ProbeResult,
    pub cache: Option<CacheObservation>,
    pub cache_error: Option<String>,
    pub origin: Option<ProbeResult>,
    pub ramp: Option<Ramp>,
    /// Why the ramp did not run.
    pub skipped: Option<String>,
    pub facts: Facts,
    pub findings: Vec<Finding>,
    pub summary: Option<String>,
    /// HTTP/3 discovery and the other protocols probed beside it (https only).
    pub http3: Option<Http3Probe>,
    /// The recognised stack (server, proxy, cache, CDN, app, framework), with the
    /// evidence for each guess.
    pub stack: Option<super::stack::Stack>,
}

/// What diagnose found out about HTTP/3 on an https URL: the `Alt-Svc` offer, the h3
/// probe (or why it failed: the main probe over TCP is then the fallback), and an
/// HTTP/1.1 probe when the main one spoke HTTP/2, so h1/h2/h3 stand side by side.
#[derive(Debug, Clone, Default)]
pub struct Http3Probe {
    /// The `Alt-Svc` field the server sent over TCP.
    pub alt_svc: Option<String>,
    /// The HTTPS DNS record (RFC 9460) that offered h3 (presentation form), looked
    /// up when `Alt-Svc` offered none.
    pub https_rr: Option<String>,
    /// The HTTPS record was looked up (whatever it said).
    pub https_rr_checked: bool,
    /// Why the HTTPS record could not be looked up (the resolver failed or timed out).
    pub https_rr_error: Option<String>,
    /// What offered h3: "alt-svc" or "https-rr" (None: not offered; `--http3` may
    /// still have asked for it).
    pub offered_by: Option<&'static str>,
    /// The UDP port h3 was tried on (offered, or the URL's with `--http3`); None:
    /// not offered, not tried.
    pub port: Option<u16>,
    pub h3: Option<ProbeResult>,
    /// How long latscope's own threads waited for a CPU during the h3 probe, ms
    /// (None where the kernel does not say): QUIC runs in user space, so a busy
    /// client slows it where TCP, in the kernel, goes on.
    pub client_cpu_wait_ms: Option<f64>,
    pub error: Option<String>,
    pub h1: Option<ProbeResult>,
}

/// One protocol's headline numbers in the side-by-side table (the `protocols`
/// array of the diagnose JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProtocolRow {
    /// "HTTP/1.1", "HTTP/2" or "HTTP/3".
    pub http_version: String,
    pub alpn: Option<String>,
    pub fresh_ttfb_ms: Option<f64>,
    pub resumed_ttfb_ms: Option<f64>,
    pub reused_ttfb_ms: Option<f64>,
    /// Fresh connect p50 (TCP, or QUIC's whole handshake), ms.
    pub connect_ms: Option<f64>,
    /// Fresh TLS p50 (0 over QUIC: inside its handshake), ms.
    pub tls_ms: Option<f64>,
    /// The path's min RTT: the kernel's, or QUIC's estimate over h3, ms.
    pub min_rtt_ms: Option<f64>,
    /// Why this protocol could not be measured.
    pub error: Option<String>,
}

impl ProtocolRow {
    /// The row of one probe.
    pub fn of(p: &ProbeResult) -> ProtocolRow {
        let p50 = |s: Option<&crate::probe::SeriesSummary>| {
            s.filter(|s| s.count > 0).map(|s| s.phases_ms.ttfb.p50)
        };
        let fresh = Some(&p.fresh).filter(|f| f.count > 0);
        ProtocolRow {
            http_version: p.http_version.clone().unwrap_or_default(),
            alpn: p.tls.as_ref().and_then(|t| t.alpn.clone()),
            fresh_ttfb_ms: p50(Some(&p.fresh)),
            resumed_ttfb_ms: p50(p.resumed.as_ref()),
            reused_ttfb_ms: p50(p.reused.as_ref()),
            connect_ms: fresh.map(|f| f.phases_ms.connect.p50),
            tls_ms: fresh.map(|f| f.phases_ms.tls.p50),
            min_rtt_ms: p
                .tcp
                .map(|t| t.min_rtt_ms)
                .or(p.quic.as_ref().map(|q| q.min_rtt_ms)),
            error: None,
        }
    }
}

impl Diagnosis {
    /// h1, h2, h3 side by side, when HTTP/3 was tried (else empty): the main probe
    /// over TCP, the extra HTTP/1.1 one, and h3 (or its error).
    pub fn protocol_rows(&self) -> Vec<ProtocolRow> {
        let Some(h) = self.http3.as_ref().filter(|h| h.port.is_some()) else {
            return Vec::new();
        };
        let mut rows: Vec<ProtocolRow> = h.h1.iter().map(ProtocolRow::of).collect();
        rows.push(ProtocolRow::of(&self.probe));
        rows.push(match (&h.h3, &h.error) {
            (Some(p), _) => ProtocolRow::of(p),
            (None, e) => ProtocolRow {
                http_version: "HTTP/3".into(),
                alpn: None,
                fresh_ttfb_ms: None,
                resumed_ttfb_ms: None,
                reused_ttfb_ms: None,
                connect_ms: None,
                tls_ms: None,
                min_rtt_ms: None,
                error: e.clone(),
            },
        });
        rows
    }
}
