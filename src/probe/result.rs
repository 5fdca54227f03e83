//! A finished probe of one target: every sample, the per-series phase summaries and
//! what is derived from them (server time, handshake cost, download throughput). Its
//! serde form is the probe JSON of DESIGN.md (field names are a contract).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::net::http::Exchange;
use crate::net::tcp::TcpInfo;
use crate::net::Scheme;
use crate::stats::Percentiles;

use super::run::ProbeConfig;
use super::sample::{Sample, Series, SeriesSummary};
use super::trips::HandshakeTrips;

/// TLS as the probe saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSummary {
    pub version: String,
    pub alpn: Option<String>,
    /// Some new connection resumed its TLS session (the resumed series has samples).
    pub resumed: bool,
    /// When the earliest certificate the server sent expires, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cert_not_after_s: Option<i64>,
}

/// The kernel's `TCP_INFO` of the reused connection at its end, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpSummary {
    pub rtt_ms: f64,
    pub min_rtt_ms: f64,
    pub retransmits: u32,
    pub total_retrans: u32,
    pub snd_cwnd: u32,
}

/// HTTP/3: QUIC's view of the path (quinn's RTT estimate, in place of the kernel's
/// `TCP_INFO`, which does not apply to QUIC) and of its handshakes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuicSummary {
    /// Where the RTT numbers come from: "quic" (QUIC's own estimate, not the kernel's).
    pub rtt_source: String,
    /// QUIC's smoothed RTT estimate on the reused connection at its end, ms.
    pub rtt_ms: f64,
    /// QUIC's minimum RTT sample on that connection, ms.
    pub min_rtt_ms: f64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    pub sent_packets: u64,
    pub lost_packets: u64,
    /// Packets sent and declared lost over the fresh series' connections, each up to
    /// its response (handshake included): what a first visit lost.
    #[serde(default)]
    pub fresh_sent_packets: u64,
    #[serde(default)]
    pub fresh_lost_packets: u64,
    /// p50 of the fresh series' QUIC handshakes (transport and TLS together), ms.
    pub handshake_ms: Option<f64>,
    /// `handshake_ms` / `min_rtt_ms`: the handshake's round trips (absent below a
    /// 0.5 ms RTT, where a count means nothing).
    pub handshake_round_trips: Option<f64>,
    /// Some new connection resumed its TLS session.
    pub resumed: bool,
    /// Requests sent as 0-RTT early data, and how many of them the server accepted.
    pub zero_rtt_tries: u32,
    pub zero_rtt_accepted: u32,
    /// Whether 0-RTT was accepted: absent when never tried (no ticket, or a request
    /// that is not idempotent), else true when the server accepted one.
    pub zero_rtt: Option<bool>,
}

/// The first request of the probe on its own (a cold start shows here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirstRequest {
    pub total_ms: f64,
    pub ttfb_ms: f64,
    /// What a cache in front said about it (absent when nothing was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::cache::CacheState>,
    /// Which cache said it, when its headers name it (Varnish, nginx proxy_cache …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_kind: Option<crate::cache::CacheKind>,
}

/// A p50.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct P50 {
    pub p50: f64,
}

/// The physical floor of the path, from `--distance-km`: light in fibre covers
/// ~200,000 km/s, so a round trip over `distance_km` takes at least `distance_km`/100 ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhysicalFloor {
    pub distance_km: f64,
    /// 2 × distance / 200,000 km/s, ms.
    pub floor_ms: f64,
    /// The kernel's min RTT (the path's RTT), ms, when there is one.
    pub rtt_ms: Option<f64>,
    /// rtt_ms / floor_ms.
    pub ratio: Option<f64>,
}

impl PhysicalFloor {
    /// The floor for `distance_km`, set against the kernel's min RTT when known.
    pub fn new(distance_km: f64, tcp: Option<&TcpSummary>) -> PhysicalFloor {
        let floor_ms = distance_km / 100.0;
        let rtt_ms = tcp.map(|t| t.min_rtt_ms).filter(|r| *r > 0.0);
        PhysicalFloor {
            distance_km,
            floor_ms,
            rtt_ms,
            ratio: rtt_ms.map(|r| r / floor_ms),
        }
    }
}

/// Body throughput of a large response over fresh vs warm connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DownloadSummary {
    pub body_bytes: u64,
    /// p50 receive time (first → last byte) on fresh connections, ms.
    pub fresh_receive_ms: f64,
    /// p50 receive time on the reused connection, ms.
    pub warm_receive_ms: f64,
    pub fresh_mib_s: f64,
    pub warm_mib_s: f64,
}

/// The probe of one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeResult {
    pub kind: String,
    pub target: String,
    /// `http`, `https` or `tcp`.
    pub scheme: String,
    /// Start, Unix milliseconds.
    pub started_at_ms: i64,
    pub duration_s: f64,
    /// Stopped by Ctrl-C before every request was made.
    pub interrupted: bool,
    pub addresses: Vec<String>,
    pub http_version: Option<String>,
    pub status: Option<u16>,
    pub body_bytes: u64,
    pub tls: Option<TlsSummary>,
    /// New connections with a full handshake (what a curl loop pays).
    pub fresh: SeriesSummary,
    /// One kept-alive connection.
    pub reused: Option<SeriesSummary>,
    /// New connections that resumed a TLS session (a returning visitor): only on TLS,
    /// and only when the server resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<SeriesSummary>,
    pub first_request: Option<FirstRequest>,
    pub tcp: Option<TcpSummary>,
    /// ≈ reused wait − kernel min RTT.
    pub server_time_ms: Option<P50>,
    /// "server", or "edge → origin + server" behind a CDN or proxy.
    pub server_time_label: String,
    /// Fresh − reused TTFB (p50), ms: what a new connection with a full handshake
    /// costs. Never below 0 (when reused is slower, see `reused_slower_ms`).
    pub handshake_cost_ms: Option<f64>,
    /// A fresh connection's handshakes in round trips: its connect and TLS phase
    /// p50s over the kernel's min RTT (`round_trips_from`), never the TTFB
    /// difference above (which also holds what the server or a proxy spends on a new
    /// connection).
    pub handshake_round_trips: Option<f64>,
    /// The same split into TCP and TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_trips: Option<super::trips::HandshakeTrips>,
    /// Resumed − reused TTFB (p50), ms: what a new connection costs a returning
    /// visitor whose session resumes. Never below 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_handshake_cost_ms: Option<f64>,
    /// A resumed connection's handshakes in round trips, from its connect and TLS
    /// phase p50s over the kernel's min RTT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_handshake_round_trips: Option<f64>,
    /// The same split into TCP and TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_handshake_trips: Option<super::trips::HandshakeTrips>,
    /// Where the round-trip counts come from (`trips::FROM_PHASES`), when there are
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trips_from: Option<String>,
    /// By how much the reused TTFB p50 exceeded the fresh one, when it did (the
    /// handshake cost is then shown as 0: a kept-alive connection was slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_slower_ms: Option<f64>,
    pub download: Option<DownloadSummary>,
    /// The physical floor, when `--distance-km` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_floor: Option<PhysicalFloor>,
    /// HTTP/3 (`--http3`): QUIC's RTT estimate and handshakes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicSummary>,
    /// With `-L`: the redirects followed before the page (`target`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<super::redirect::Hop>,
    /// With `-L`: the user's headers not sent once the chain left the first origin
    /// (names, lowercase).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_headers: Vec<String>,
    /// Response headers of the last response (values of repeated headers joined).
    pub headers: BTreeMap<String, String>,
    /// How busy this machine was while the probe ran: latscope's wait for a CPU and
    /// the samples left out for it (absent where the kernel does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<super::noise::ClientSummary>,
    /// How many rounds were taken and why sampling stopped (absent in runs stored
    /// before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<super::sampler::SamplingReport>,
    /// The first lookup apart from the repeated ones (absent when the host needed
    /// none: an IP literal or `--resolve`, or without a repeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<super::dns::DnsSummary>,
    pub samples: Vec<Sample>,
}

impl ProbeResult {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        config: &ProbeConfig,
        started: SystemTime,
        took: Duration,
        samples: Vec<Sample>,
        addresses: Vec<SocketAddr>,
        tcp: Option<TcpInfo>,
        last: Option<Exchange>,
        tls_version: Option<String>,
        alpn: Option<String>,
        interrupted: bool,
    ) -> ProbeResult {
        let fresh = SeriesSummary::of(&samples, Series::Fresh);
        let reused_summary = SeriesSummary::of(&samples, Series::Reused);
        let reused = (reused_summary.count + reused_summary.errors > 0).then_some(reused_summary);
        let resumed = Some(SeriesSummary::of(&samples, Series::Resumed)).filter(|r| r.count > 0);
        let tcp = tcp.map(|i| TcpSummary {
            rtt_ms: i.rtt_us as f64 / 1000.0,
            min_rtt_ms: i.min_rtt_us as f64 / 1000.0,
            retransmits: u32::from(i.retransmits),
            total_retrans: i.total_retrans,
            snd_cwnd: i.snd_cwnd,
        });
        let first_request = samples
            .iter()
            .find(|s| s.error.is_none())
            .map(|s| FirstRequest {
                total_ms: s.phases_ms.total,
                ttfb_ms: s.phases_ms.ttfb,
                cache: None,
                cache_kind: None,
            });
        let is_http = config.target.scheme != Scheme::Tcp;
        let reused_ttfb = reused
            .as_ref()
            .filter(|r| r.count > 0 && is_http)
            .map(|r| r.phases_ms.ttfb.p50);
        // DNS is its own phase: the handshakes' cost leaves it out (issue 30 item 1).
        let raw_cost = reused_ttfb
            .filter(|_| fresh.count > 0)
            .map(|r| fresh.phases_ms.ttfb.p50 - fresh.phases_ms.dns.p50.max(0.0) - r);
        // A negative cost (reused slower than fresh) is noise or a server that slows
        // kept-alive connections; it is shown as 0 with the difference beside it.
        let handshake_cost_ms = raw_cost.map(|c| c.max(0.0));
        let reused_slower_ms = raw_cost.filter(|c| *c < 0.0).map(|c| -c);
        let resumed_handshake_cost_ms = match (&resumed, reused_ttfb) {
            (Some(s), Some(r)) => {
                Some((s.phases_ms.ttfb.p50 - s.phases_ms.dns.p50.max(0.0) - r).max(0.0))
            }
            _ => None,
        };
        let download = download(&samples);
        let any_resumed = samples.iter().any(|s| s.tls_resumed == Some(true));
        let mut headers = BTreeMap::new();
        if let Some(x) = &last {
            for (k, v) in &x.headers {
                let v = &crate::redact::redact_value(k, v, &[]);
                headers
                    .entry(k.clone())
                    .and_modify(|e: &mut String| {
                        e.push_str(", ");
                        e.push_str(v);
                    })
                    .or_insert_with(|| v.to_string());
            }
        }
        let mut result = ProbeResult {
            kind: "probe".into(),
            target: config.target.url.clone(),
            scheme: match config.target.scheme {
                Scheme::Http => "http",
                Scheme::Https => "https",
                Scheme::Tcp => "tcp",
            }
            .into(),
            started_at_ms: started
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0),
            duration_s: took.as_secs_f64(),
            interrupted,
            addresses: addresses.iter().map(|a| a.ip().to_string()).collect(),
            http_version: last.as_ref().map(|x| x.version.to_string()),
            status: last.as_ref().map(|x| x.status),
            body_bytes: last.as_ref().map(|x| x.body_bytes).unwrap_or(0),
            tls: tls_version.map(|version| TlsSummary {
                version,
                alpn,
                resumed: any_resumed,
                cert_not_after_s: None,
            }),
            fresh,
            reused,
            resumed,
            first_request,
            tcp,
            server_time_ms: None,
            server_time_label: "server".into(),
            handshake_cost_ms,
            handshake_round_trips: None,
            handshake_trips: None,
            resumed_handshake_cost_ms,
            resumed_handshake_round_trips: None,
            resumed_handshake_trips: None,
            round_trips_from: None,
            reused_slower_ms,
            download,
            physical_floor: None,
            quic: None,
            redirects: Vec::new(),
            dropped_headers: Vec::new(),
            headers,
            client: None,
            sampling: None,
            dns: super::dns::summary(&samples, looks_up(config)),
            samples,
        };
        if is_http {
            result.derive_from_rtt(tcp.map(|t| t.min_rtt_ms));
        }
        result
    }

    /// What needs the path's minimum RTT: server time (reused wait − min RTT) and
    /// the handshakes in round trips (none below 0.5 ms, e.g. loopback).
    fn derive_from_rtt(&mut self, min_rtt_ms: Option<f64>) {
        let Some(rtt) = min_rtt_ms else { return };
        let series = match &self.reused {
            Some(r) if r.count > 0 => Series::Reused,
            _ => Series::Fresh,
        };
        let waits: Vec<f64> = self
            .ok_samples(series)
            .map(|s| (s.phases_ms.wait - rtt).max(0.0))
            .collect();
        self.server_time_ms = (!waits.is_empty()).then(|| P50 {
            p50: Percentiles::from_samples(&waits).p50,
        });
        // Counted from the phase rows, never from the TTFB differences (issue 30
        // item 3): those also hold a proxy's or the server's own work for a new
        // connection.
        self.handshake_trips = series_trips(&self.fresh, rtt);
        self.resumed_handshake_trips = self.resumed.as_ref().and_then(|s| series_trips(s, rtt));
        self.handshake_round_trips = self.handshake_trips.map(|t| t.total());
        self.resumed_handshake_round_trips = self.resumed_handshake_trips.map(|t| t.total());
        self.round_trips_from = self
            .handshake_trips
            .or(self.resumed_handshake_trips)
            .map(|_| super::trips::FROM_PHASES.to_string());
    }

    /// HTTP/3: sets QUIC's view of the path and handshakes, whose minimum RTT then
    /// stands in for the kernel's (there is no `TCP_INFO` for QUIC).
    pub(super) fn set_quic(&mut self, quic: QuicSummary) {
        let rtt = Some(quic.min_rtt_ms).filter(|r| *r > 0.0);
        self.quic = Some(quic);
        self.derive_from_rtt(rtt);
    }

    /// Sets the physical floor for `--distance-km` (nothing when None).
    pub fn set_distance(&mut self, distance_km: Option<f64>) {
        self.physical_floor = distance_km.map(|d| PhysicalFloor::new(d, self.tcp.as_ref()));
    }

    /// The successful samples of one series, in order (the disturbed ones left out:
    /// `noise`).
    pub fn ok_samples(&self, series: Series) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| s.series == series && s.error.is_none() && !s.disturbed)
    }
}

/// A series' handshakes in round trips of `rtt`, from its connect and TLS p50s.
fn series_trips(s: &SeriesSummary, rtt: f64) -> Option<HandshakeTrips> {
    if s.count == 0 {
        return None;
    }
    HandshakeTrips::count(s.phases_ms.connect.p50, s.phases_ms.tls.p50, Some(rtt))
}

/// Fresh vs warm receive time of a body of 1 MiB or more.
fn download(samples: &[Sample]) -> Option<DownloadSummary> {
    let big: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.error.is_none() && s.body_bytes >= 1 << 20)
        .collect();
    let receive = |fresh: bool| {
        let v: Vec<f64> = big
            .iter()
            .filter(|s| s.new_connection == fresh)
            .map(|s| s.phases_ms.receive)
            .collect();
        (!v.is_empty()).then(|| Percentiles::from_samples(&v).p50)
    };
    let (fresh, warm) = (receive(true)?, receive(false)?);
    let bytes = big[0].body_bytes;
    let rate = |ms: f64| {
        if ms > 0.0 {
            bytes as f64 / 1_048_576.0 / (ms / 1000.0)
        } else {
            0.0
        }
    };
    Some(DownloadSummary {
        body_bytes: bytes,
        fresh_receive_ms: fresh,
        warm_receive_ms: warm,
        fresh_mib_s: rate(fresh),
        warm_mib_s: rate(warm),
    })
}

/// Whether connecting to `config`'s host asks DNS (not an IP literal, not pinned by
/// `--resolve`).
fn looks_up(config: &ProbeConfig) -> bool {
    let t = &config.target;
    let host = t.host.trim_start_matches('[').trim_end_matches(']');
    host.parse::<std::net::IpAddr>().is_err()
        && crate::net::dns::lookup_override(&config.client.resolve, host, t.port).is_none()
}
