//! One timed request of a probe and the phase summaries built from many.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::net::http::Exchange;
use crate::stats::Percentiles;
use crate::units::ms;

/// Which series a sample belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Series {
    /// A new connection for the request, with a full TLS handshake (no session
    /// resumption): what a curl loop or a first visit pays.
    Fresh,
    /// A new connection that resumed a TLS session (a returning visitor); only on
    /// TLS, and only when the server resumes.
    Resumed,
    /// A request over an already open connection.
    Reused,
}

impl Series {
    /// The series' name, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Series::Fresh => "fresh",
            Series::Resumed => "resumed",
            Series::Reused => "reused",
        }
    }
}

/// The phases of one request, ms (DESIGN.md, Measurements): durations `dns` ..
/// `receive`, and the cumulative marks `ttfb` and `total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhasesMs {
    pub dns: f64,
    pub connect: f64,
    pub tls: f64,
    pub send: f64,
    pub wait: f64,
    pub receive: f64,
    pub ttfb: f64,
    pub total: f64,
}

impl PhasesMs {
    /// Phases from the connection phases (zero on a reused connection) and an exchange.
    pub fn new(dns: Duration, connect: Duration, tls: Duration, x: &Exchange) -> PhasesMs {
        let (dns, connect, tls) = (ms(dns), ms(connect), ms(tls));
        let (send, wait, receive) = (ms(x.send), ms(x.wait), ms(x.receive));
        let ttfb = dns + connect + tls + send + wait;
        PhasesMs {
            dns,
            connect,
            tls,
            send,
            wait,
            receive,
            ttfb,
            total: ttfb + receive,
        }
    }

    /// The phase called `name` (one of [`PHASES`]).
    pub fn get(&self, name: &str) -> f64 {
        match name {
            "dns" => self.dns,
            "connect" => self.connect,
            "tls" => self.tls,
            "send" => self.send,
            "wait" => self.wait,
            "receive" => self.receive,
            "ttfb" => self.ttfb,
            _ => self.total,
        }
    }
}

/// Phase names in order.
pub const PHASES: [&str; 8] = [
    "dns", "connect", "tls", "send", "wait", "receive", "ttfb", "total",
];

/// One request of a probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub series: Series,
    /// Start, ms since the probe began.
    #[serde(default)]
    pub t_ms: f64,
    #[serde(default)]
    pub phases_ms: PhasesMs,
    /// Set when the request opened a connection of its own.
    #[serde(default)]
    pub new_connection: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default)]
    pub body_bytes: u64,
    /// Body throughput (bytes / receive time), MiB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_mib_s: Option<f64>,
    /// The TLS session of this request's connection was resumed (false on plain
    /// HTTP and for failed requests; absent only in runs stored before it existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<bool>,
    /// The client kept TLS sessions for this connection, so it could resume one
    /// (false in the fresh series, which pays the full handshake on purpose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_client_resumes: Option<bool>,
    /// Kernel smoothed RTT of this request's connection after it, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_ms: Option<f64>,
    /// HTTP/3: QUIC's smoothed RTT estimate of this request's connection after it,
    /// ms (QUIC's own estimate; there is no kernel `TCP_INFO` for QUIC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_rtt_ms: Option<f64>,
    /// HTTP/3: the request went as 0-RTT early data; whether the server accepted it
    /// (absent when it did not go early).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<bool>,
    /// The server closed the connection after this response.
    #[serde(default)]
    pub closed_by_server: bool,
    /// Why the request failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error kind (`connect`, `timeout`, `reset`, `tls`, `protocol`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// How long latscope's threads waited, runnable, for a CPU during this request,
    /// ms (schedstat; absent where the kernel does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wait_ms: Option<f64>,
    /// CPU latscope used during this request, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_ms: Option<f64>,
    /// Left out of the series: latscope waited for a CPU during it long enough to
    /// measure this machine rather than the server (`probe::noise`); re-taken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
}

impl Sample {
    /// A request of `series`, started `t_ms` into the probe, that failed with `e`.
    pub fn failed(series: Series, t_ms: f64, e: &crate::net::NetError) -> Sample {
        Sample {
            series,
            t_ms,
            phases_ms: PhasesMs::default(),
            new_connection: series == Series::Fresh,
            status: None,
            body_bytes: 0,
            throughput_mib_s: None,
            tls_resumed: Some(false),
            tls_client_resumes: None,
            tcp_rtt_ms: None,
            quic_rtt_ms: None,
            zero_rtt: None,
            closed_by_server: false,
            error_kind: Some(e.kind().to_string()),
            error: Some(e.to_string()),
            client_wait_ms: None,
            client_cpu_ms: None,
            disturbed: false,
        }
    }
}

/// min/p50/p90/p99/max/mean of one phase, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseStats {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl From<Percentiles> for PhaseStats {
    fn from(p: Percentiles) -> Self {
        PhaseStats {
            min: p.min,
            p50: p.p50,
            p90: p.p90,
            p99: p.p99,
            max: p.max,
            mean: p.mean,
        }
    }
}

/// Every phase's summary over one series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseSummary {
    pub dns: PhaseStats,
    pub connect: PhaseStats,
    pub tls: PhaseStats,
    pub send: PhaseStats,
    pub wait: PhaseStats,
    pub receive: PhaseStats,
    pub ttfb: PhaseStats,
    pub total: PhaseStats,
}

impl PhaseSummary {
    /// The summary of phase `name`.
    pub fn get(&self, name: &str) -> &PhaseStats {
        match name {
            "dns" => &self.dns,
            "connect" => &self.connect,
            "tls" => &self.tls,
            "send" => &self.send,
            "wait" => &self.wait,
            "receive" => &self.receive,
            "ttfb" => &self.ttfb,
            _ => &self.total,
        }
    }
}

/// A series' count and phase summary (the successful samples).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeriesSummary {
    pub count: usize,
    pub errors: usize,
    pub phases_ms: PhaseSummary,
}

impl SeriesSummary {
    /// Summarises the successful samples of `series` (the disturbed ones left out).
    pub fn of(samples: &[Sample], series: Series) -> SeriesSummary {
        let ok: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.series == series && s.error.is_none() && !s.disturbed)
            .collect();
        let errors = samples
            .iter()
            .filter(|s| s.series == series && s.error.is_some())
            .count();
        let stat = |name: &str| {
            let v: Vec<f64> = ok.iter().map(|s| s.phases_ms.get(name)).collect();
            PhaseStats::from(Percentiles::from_samples(&v))
        };
        SeriesSummary {
            count: ok.len(),
            errors,
            phases_ms: PhaseSummary {
                dns: stat("dns"),
                connect: stat("connect"),
                tls: stat("tls"),
                send: stat("send"),
                wait: stat("wait"),
                receive: stat("receive"),
                ttfb: stat("ttfb"),
                total: stat("total"),
            },
        }
    }
}
