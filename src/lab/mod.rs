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

use crate::cli::{LabArgs, Overload};

mod body;
mod cache;
mod cold;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverloadPolicy {
    /// Excess requests wait their turn (a queueing server).
    #[default]
    Queue,
    /// Excess requests get `503 Service Unavailable` at once.
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

impl LabOptions {
    /// Builds validated options from `latscope lab` flags; generates the self-signed
    /// certificate when `--tls` is given (covering localhost, 127.0.0.1 and the
    /// `--listen` host). Wire flags are not looked at here.
    pub fn from_args(args: &LabArgs) -> Result<LabOptions, LabError> {
        let usage = |m: String| Err(LabError::Usage(m));
        let workers = match args.workers {
            Some(0) => return usage("--workers must be at least 1".into()),
            Some(n) => Some(n as usize),
            None => None,
        };
        let capacity = match args.capacity {
            Some(c) if !(c.is_finite() && c > 0.0 && c <= 1e7) => {
                return usage(format!(
                    "--capacity {c}: give requests per second, more than 0 (e.g. 200)"
                ))
            }
            c => c,
        };
        let stall = match (args.stall_every, args.stall_for) {
            (Some(every), Some(length)) => {
                if every.is_zero() || length.is_zero() {
                    return usage("--stall-every and --stall-for must be more than 0".into());
                }
                if length >= every {
                    return usage(format!(
                        "--stall-for ({length:?}) must be shorter than --stall-every ({every:?})"
                    ));
                }
                Some(StallOptions { every, length })
            }
            (None, None) => None,
            _ => return usage("--stall-every and --stall-for go together".into()),
        };
        if args.cold > Duration::from_secs(3600) {
            return usage("--cold is at most 1h".into());
        }
        let overload = match args.overload {
            Overload::Queue => OverloadPolicy::Queue,
            Overload::Reject => OverloadPolicy::Reject,
        };
        if args.http3 && !args.tls {
            return usage(
                "--http3 needs --tls: HTTP/3 runs over QUIC, which is always encrypted \
                 (write --tls --http3)"
                    .into(),
            );
        }
        let tls = if args.tls {
            let extra: Vec<String> = listen_host(&args.listen).into_iter().collect();
            let tls = LabTls::self_signed(&extra)?;
            Some(if args.no_tls_resumption {
                tls.without_resumption()
            } else {
                tls
            })
        } else {
            None
        };
        Ok(LabOptions {
            tls,
            http2: args.http2,
            http3: args.http3,
            workers,
            capacity,
            overload,
            stall,
            cold: args.cold,
            cold_after: args.cold_after,
            ..LabOptions::default()
        })
    }
}

/// The host part of a `--listen` value, when it names one specific host (not a
/// wildcard address), for the certificate.
fn listen_host(listen: &str) -> Option<String> {
    let (host, _) = listen.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() => None,
        _ if host.is_empty() => None,
        _ => Some(host.to_string()),
    }
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
    fn listen_host_skips_wildcards() {
        assert_eq!(listen_host("127.0.0.1:0").as_deref(), Some("127.0.0.1"));
        assert_eq!(listen_host("0.0.0.0:80"), None);
        assert_eq!(listen_host("[::]:80"), None);
        assert_eq!(listen_host("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(listen_host(":80"), None);
        assert_eq!(listen_host("lab.test:80").as_deref(), Some("lab.test"));
    }

    #[test]
    fn base_url_shows_wildcards_as_loopback() {
        let a: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(base_url(a, false), "http://127.0.0.1:8080/");
        let a: SocketAddr = "[::1]:443".parse().unwrap();
        assert_eq!(base_url(a, true), "https://[::1]:443/");
    }
}
