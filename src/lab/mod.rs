//! The lab: latscope's built-in target server. Each route reproduces one latency story
//! on purpose (a slow first request, cookies that defeat caching, a CDN miss, a reset
//! connection…), and server-wide options make the whole server saturate or stall, so
//! tests, demos and users can watch every finding fire.
//!
//! [`serve`] takes its listener and a shutdown future (as mini-redis does), so tests
//! bind `127.0.0.1:0` and run it in-process; [`spawn`] / [`spawn_on`] do that on a
//! thread of their own and hand back a [`RunningLab`]. The packet-level wire
//! (`--rtt`, `--loss`…) is not here: it lives in `lab::wire`.
//!
//! This module holds the options; `server` accepts connections, `routes` answers
//! requests, `gate` applies the server-wide overload and stall rules, `cold` the cold
//! start, `tls` the self-signed certificate, `stats` the request counters, `h3` HTTP/3
//! over QUIC on the TCP port's UDP twin (the same routes).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

mod body;
mod cache;
mod cold;
pub mod demo;
mod gate;
mod h3;
mod handle;
mod routes;
mod server;
mod stats;
mod tls;
pub mod wire;

pub use handle::{spawn, spawn_on, spawn_with, RunningLab};
pub use stats::LabStats;
pub use tls::LabTls;

/// What the lab does with a request it has no room for (`--overload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OverloadPolicy {
    /// Excess requests wait in a queue.
    #[default]
    Queue,
    /// Excess requests get 503 at once.
    #[value(name = "503")]
    Reject,
}

/// Periodic stalls (`--stall-every`, `--stall-for`): from server start, every `every`
/// the server holds every response for `length`, as a GC pause would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallOptions {
    /// Time from one stall's start to the next; the first starts `every` after start.
    pub every: Duration,
    /// How long each stall lasts (shorter than `every`).
    pub length: Duration,
}

/// How the lab behaves. `LabOptions::default()` is a healthy lab: plain HTTP/1.1, no
/// limits, no stalls, `/cold` slow for 2 s on its first request.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Serve HTTPS with this certificate (None: plain HTTP).
    pub tls: Option<LabTls>,
    /// Serve HTTP/2 too: h2 in ALPN over TLS, h2c with prior knowledge without.
    pub http2: bool,
    /// Serve HTTP/3 too, over QUIC on the UDP port of the same number (needs `tls`),
    /// and advertise it in `Alt-Svc` on TCP responses.
    pub http3: bool,
    /// At most this many requests are served at once (`--workers`).
    pub workers: Option<usize>,
    /// At most this many requests complete per second (`--capacity`).
    pub capacity: Option<f64>,
    /// What happens to requests beyond `workers` / `capacity`.
    pub overload: OverloadPolicy,
    /// Periodic stalls.
    pub stall: Option<StallOptions>,
    /// How slow `/cold` is on its first request after start or idle (`--cold`).
    pub cold: Duration,
    /// Idle time (no `/cold` request) after which `/cold` is cold again (`--cold-after`).
    pub cold_after: Duration,
    /// The simulated origin fetch a `/cdn/miss` or `/cdn/dynamic` pays.
    pub cdn_origin_delay: Duration,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            tls: None,
            http2: false,
            http3: false,
            workers: None,
            capacity: None,
            overload: OverloadPolicy::Queue,
            stall: None,
            cold: Duration::from_secs(2),
            cold_after: Duration::from_secs(60),
            cdn_origin_delay: Duration::from_millis(50),
        }
    }
}

/// Why the lab could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The options make no sense (a usage error: exit 2).
    #[error("{0}")]
    Usage(String),
    /// The self-signed certificate could not be made.
    #[error("cannot generate the lab's certificate: {0}")]
    Certificate(String),
    /// rustls refused the server configuration.
    #[error("TLS setup failed: {0}")]
    Tls(#[from] rustls::Error),
}

/// The base URL clients use to reach a lab listening on `addr`, e.g.
/// `http://127.0.0.1:8080/`. A wildcard address is shown as its loopback.
pub fn base_url(addr: SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("{scheme}://{}/", SocketAddr::new(ip, addr.port()))
}

/// Serves the lab on `listener` until `shutdown` completes: then it stops accepting,
/// lets connections finish what they are doing for a moment, and returns.
///
/// Every accepted socket gets `TCP_NODELAY`. HTTP/1.1 always; HTTP/2 when
/// `options.http2` (h2 through ALPN with TLS, h2c prior knowledge without); TLS when
/// `options.tls` is set; HTTP/3 when `options.http3`, on a UDP socket bound to the
/// listener's address (see [`serve_on`] to give it one bound elsewhere).
pub async fn serve(
    listener: TcpListener,
    options: LabOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let udp = if options.http3 {
        Some(bind_udp_twin(listener.local_addr()?)?)
    } else {
        None
    };
    serve_on(listener, udp, options, shutdown).await
}

/// [`serve`] with the UDP socket for HTTP/3 given (bound by the caller, e.g. inside
/// the wire's namespace); `udp` is used only when `options.http3`.
pub async fn serve_on(
    listener: TcpListener,
    udp: Option<std::net::UdpSocket>,
    options: LabOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let counters = Arc::new(stats::Counters::default());
    server::run(listener, udp, options, counters, shutdown).await
}

/// Binds the UDP socket HTTP/3 uses: the TCP listener's address and port.
pub fn bind_udp_twin(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    std::net::UdpSocket::bind(addr).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot bind UDP {addr} for HTTP/3 (the TCP port's twin): {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_shows_wildcards_as_loopback() {
        let a: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(base_url(a, false), "http://127.0.0.1:8080/");
        let a: SocketAddr = "[::1]:443".parse().unwrap();
        assert_eq!(base_url(a, true), "https://[::1]:443/");
    }
}
