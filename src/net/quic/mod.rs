//! HTTP/3 over QUIC (quinn + h3), timed like `net::http`: `dns`, `connect` (the QUIC
//! handshake until the connection is usable — transport and TLS 1.3 together, so
//! there is no separate `tls` phase), `send`, `wait`, `receive`.
//!
//! The kernel's `TCP_INFO` does not apply to QUIC: QUIC's own RTT estimate (quinn's
//! smoothed and minimum RTT, [`QuicPath`]) replaces it and is labelled as such.
//! Resumption: a [`QuicClient`] made with `keep_sessions` keeps TLS session tickets
//! between its connections, and [`QuicClient::connect`] with `early` sends the first
//! request as 0-RTT data when a ticket allows it ([`H3Conn::handshake`] then says
//! whether the server accepted it).
//!
//! The API (stable, used by `probe`; `load --http3` takes only the handshake,
//! [`QuicClient::connect_quic`], and speaks HTTP/3 itself in `load::h3`):
//! - [`client_config`]: a `quinn::ClientConfig` from the same [`TlsOptions`] as TLS
//!   over TCP (verification on unless `-k`, `--cacert`, SNI from the URL's host), ALPN
//!   `h3` only.
//! - [`QuicClient::new`] (inside a tokio runtime: its UDP endpoints are driven there),
//!   then [`QuicClient::connect`] → [`H3Conn`], whose [`H3Conn::send`] sends one
//!   request and returns the same timed [`Exchange`] as HTTP/1.1 and HTTP/2
//!   (`version` "HTTP/3").
//!
//! Nothing here prints.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::Request;

use crate::net::request::{Framing, RequestHead};
use crate::net::{RequestSpec, ResolveOverride};

use super::error::NetError;
use super::http::{head_fields, Exchange, MAX_RESPONSE_HEAD};
use super::tls::{TlsConfigError, TlsOptions};
use super::{dns, Target};

mod config;

pub use config::client_config;
use config::{build_config, Refused, Tickets, Watch};

/// The ALPN protocol id of HTTP/3 (RFC 9114, section 3.1).
pub const ALPN_H3: &[u8] = b"h3";

/// The h3 request sender of one connection.
type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An HTTP/3 client: one QUIC configuration and its UDP endpoints (one per address
/// family, made on first use). Make it inside the tokio runtime that will use it.
pub struct QuicClient {
    config: quinn::ClientConfig,
    full_handshakes: Arc<AtomicU64>,
    refused: Refused,
    /// The session tickets received, when it keeps sessions.
    tickets: Option<Arc<Tickets>>,
    endpoints: Mutex<[Option<quinn::Endpoint>; 2]>,
}

/// What a QUIC handshake negotiated and how it went.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuicHandshake {
    /// The ALPN protocol the server chose ("h3").
    pub alpn: Option<String>,
    /// The TLS session was resumed (no certificate sent: a returning visitor).
    pub resumed: bool,
    /// 0-RTT: None when the request did not go as early data (no ticket, or not
    /// asked), else whether the server accepted it.
    pub zero_rtt: Option<bool>,
    /// From the first packet to the handshake's completion (with 0-RTT this runs
    /// while the first request is already under way), ms.
    pub handshake_ms: f64,
}

/// QUIC's view of the path (quinn's estimates; not the kernel's `TCP_INFO`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuicPath {
    /// QUIC's smoothed RTT estimate, ms.
    pub rtt_ms: f64,
    /// QUIC's minimum RTT sample, ms.
    pub min_rtt_ms: f64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Packets sent and declared lost.
    pub sent_packets: u64,
    pub lost_packets: u64,
    /// Congestion events (loss or ECN marks).
    pub congestion_events: u64,
}

impl QuicClient {
    /// A client whose connections share TLS sessions when `keep_sessions` (see
    /// [`client_config`]). Needs a running tokio runtime.
    pub fn new(opts: &TlsOptions, keep_sessions: bool) -> Result<QuicClient, TlsConfigError> {
        let full_handshakes = Arc::new(AtomicU64::new(0));
        let refused = Arc::new(Mutex::new(None));
        let tickets = Arc::new(Tickets::default());
        let watch = Watch {
            full_handshakes: full_handshakes.clone(),
            refused: refused.clone(),
            tickets: tickets.clone(),
        };
        let config = build_config(opts, keep_sessions, Some(watch))?;
        Ok(QuicClient {
            config,
            full_handshakes,
            refused,
            tickets: keep_sessions.then_some(tickets),
            endpoints: Mutex::new([None, None]),
        })
    }

    /// The UDP endpoint for the family of `addr` (bound to an ephemeral port).
    fn endpoint(&self, addr: SocketAddr) -> Result<quinn::Endpoint, NetError> {
        let i = usize::from(addr.is_ipv6());
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = &endpoints[i] {
            return Ok(e.clone());
        }
        let local = if addr.is_ipv6() {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0)
        } else {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)
        };
        let endpoint = quinn::Endpoint::client(local)?;
        endpoints[i] = Some(endpoint.clone());
        Ok(endpoint)
    }

    /// The QUIC handshake alone, for a client that speaks HTTP/3 itself (the load
    /// engine's `h3` layer): the connection and the time it took to be usable.
    pub async fn connect_quic(
        &self,
        target: &Target,
        resolve: &[ResolveOverride],
        timeout: Duration,
    ) -> Result<(quinn::Connection, Duration), NetError> {
        let s = self.handshake(target, resolve, timeout, false).await?;
        Ok((s.conn, s.connect))
    }

    /// Resolves, then runs the QUIC handshake (or starts it, with 0-RTT).
    async fn handshake(
        &self,
        target: &Target,
        resolve: &[ResolveOverride],
        timeout: Duration,
        early: bool,
    ) -> Result<Shaken, NetError> {
        let resolved = dns::resolve(&target.host, target.port, resolve, timeout).await?;
        let peer = resolved.addrs[0];
        let endpoint = self.endpoint(peer)?;
        let before = self.full_handshakes.load(Ordering::Relaxed);
        let tickets = self
            .tickets
            .as_ref()
            .map(|t| (t.clone(), t.count.load(Ordering::Relaxed)));
        let start = Instant::now();
        let connecting = endpoint
            .connect_with(self.config.clone(), peer, &target.host)
            .map_err(|e| NetError::Quic {
                addr: peer,
                reason: e.to_string(),
            })?;
        let connecting = if early {
            match connecting.into_0rtt() {
                Ok((conn, accepted)) => {
                    // Usable at once; the handshake goes on while the request is
                    // sent: note when it ends and whether the early data counted.
                    let done: EarlyState = Arc::new(Mutex::new(None));
                    let d = done.clone();
                    tokio::spawn(async move {
                        let ok = accepted.await;
                        *d.lock().unwrap_or_else(|e| e.into_inner()) = Some((ok, Instant::now()));
                    });
                    Err((conn, done))
                }
                Err(connecting) => Ok(connecting),
            }
        } else {
            Ok(connecting)
        };
        let (conn, early_state) = match connecting {
            Err((conn, done)) => (conn, Some(done)),
            Ok(connecting) => match tokio::time::timeout(timeout, connecting).await {
                Err(_) => return Err(no_answer(peer, timeout)),
                Ok(Err(e)) => {
                    let refused = self
                        .refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    return Err(match refused {
                        // Already says why and what to do (net::verify).
                        Some(reason) => NetError::Tls {
                            host: target.host.clone(),
                            reason,
                            hint: "",
                        },
                        None => conn_error(e, peer, target, timeout),
                    });
                }
                Ok(Ok(conn)) => (conn, None),
            },
        };
        Ok(Shaken {
            conn,
            resolved,
            peer,
            before,
            tickets,
            start,
            connect: start.elapsed(),
            early_state,
        })
    }

    /// Resolves `target`'s host (anew), runs the QUIC handshake with the first
    /// address (SNI and verification for the URL's host) and the HTTP/3 setup, each
    /// bounded by `timeout`. `early`: when a session ticket allows it, the connection
    /// is usable at once and the first request goes as 0-RTT data (only for
    /// idempotent requests: 0-RTT can be replayed). No answer over UDP within the
    /// timeout is a [`NetError::Quic`] naming the address.
    pub async fn connect(
        &self,
        target: &Target,
        resolve: &[ResolveOverride],
        timeout: Duration,
        early: bool,
    ) -> Result<H3Conn, NetError> {
        let Shaken {
            conn,
            resolved,
            peer,
            before,
            tickets,
            start,
            connect,
            early_state,
        } = self.handshake(target, resolve, timeout, early).await?;
        let alpn = alpn_of(&conn);
        let mut builder = h3::client::builder();
        builder.max_field_section_size(MAX_RESPONSE_HEAD as u64);
        let setup = builder.build::<_, _, Bytes>(h3_quinn::Connection::new(conn.clone()));
        let (mut driver, sender) = match tokio::time::timeout(timeout, setup).await {
            Err(_) => return Err(no_answer(peer, timeout)),
            Ok(Err(e)) => return Err(NetError::Protocol(format!("HTTP/3 setup: {e}"))),
            Ok(Ok(x)) => x,
        };
        let driver = tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let mut h3 = H3Conn {
            sender,
            conn,
            driver,
            addresses: resolved.addrs,
            peer,
            dns: resolved.took,
            connect,
            started: start,
            early_state,
            full_handshakes: self.full_handshakes.clone(),
            before,
            tickets,
            handshake: QuicHandshake {
                alpn,
                ..QuicHandshake::default()
            },
        };
        if h3.early_state.is_none() {
            h3.handshake.handshake_ms = crate::units::ms(connect);
            h3.handshake.resumed = h3.full_handshakes.load(Ordering::Relaxed) == before;
        }
        Ok(h3)
    }
}

/// A QUIC connection just handshaken, and what [`H3Conn`] keeps of how.
struct Shaken {
    conn: quinn::Connection,
    resolved: dns::Resolved,
    peer: SocketAddr,
    before: u64,
    tickets: Option<(Arc<Tickets>, u64)>,
    start: Instant,
    connect: Duration,
    early_state: Option<EarlyState>,
}

/// The ALPN protocol a connection negotiated (None before the server said).
fn alpn_of(conn: &quinn::Connection) -> Option<String> {
    conn.handshake_data()
        .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
        .and_then(|d| d.protocol)
        .map(|p| String::from_utf8_lossy(&p).into_owned())
}

/// No answer over UDP within the timeout.
fn no_answer(peer: SocketAddr, timeout: Duration) -> NetError {
    NetError::Quic {
        addr: peer,
        reason: format!(
            "no answer over UDP within {} (nothing listens on UDP port {}, or UDP is \
             blocked on the way)",
            crate::units::fmt_ms(crate::units::ms(timeout)),
            peer.port()
        ),
    }
}

/// A QUIC connection error in words: TLS refusals as [`NetError::Tls`] (with the
/// same advice as over TCP), the rest as [`NetError::Quic`].
fn conn_error(
    e: quinn::ConnectionError,
    peer: SocketAddr,
    target: &Target,
    timeout: Duration,
) -> NetError {
    use quinn::ConnectionError as E;
    let is_crypto = |code: quinn::TransportErrorCode| (0x100..0x200).contains(&u64::from(code));
    match &e {
        // Refused here (e.g. our verifier refused the certificate).
        E::TransportError(t) if is_crypto(t.code) => {
            let cert = t.reason.contains("certificate") || t.reason.contains("Certificate");
            let hint = if cert && !t.reason.contains("--cacert") {
                " (the server's certificate is not trusted here: pass --cacert FILE with \
                 its CA, or -k to skip verification)"
            } else {
                ""
            };
            NetError::Tls {
                host: target.host.clone(),
                reason: t.reason.clone(),
                hint,
            }
        }
        // Refused by the server.
        E::ConnectionClosed(c) if is_crypto(c.error_code) => NetError::Tls {
            host: target.host.clone(),
            reason: format!("the server ended the QUIC handshake: {c}"),
            hint: if u64::from(c.error_code) == 0x178 {
                " (the server accepts no h3 in ALPN: it does not speak HTTP/3 here)"
            } else {
                ""
            },
        },
        E::TimedOut => no_answer(peer, timeout),
        _ => NetError::Quic {
            addr: peer,
            reason: e.to_string(),
        },
    }
}

/// An HTTP/3 connection over QUIC, just opened, with the time each phase took.
pub struct H3Conn {
    sender: Sender,
    conn: quinn::Connection,
    driver: tokio::task::JoinHandle<()>,
    /// Every address the name resolved to (the first is used).
    pub addresses: Vec<SocketAddr>,
    /// The address connected to.
    pub peer: SocketAddr,
    /// Name resolution.
    pub dns: Duration,
    /// The QUIC handshake until the connection was usable (≈ 0 with 0-RTT).
    pub connect: Duration,
    started: Instant,
    early_state: Option<EarlyState>,
    full_handshakes: Arc<AtomicU64>,
    before: u64,
    /// The client's tickets and their count when this connection opened (a client
    /// that keeps sessions).
    tickets: Option<(Arc<Tickets>, u64)>,
    handshake: QuicHandshake,
}

type EarlyState = Arc<Mutex<Option<(bool, Instant)>>>;

impl H3Conn {
    /// Whether the connection can carry another request.
    pub fn is_usable(&self) -> bool {
        self.conn.close_reason().is_none()
    }

    /// QUIC's RTT estimate and congestion state right now.
    pub fn path(&self) -> QuicPath {
        let s = self.conn.stats();
        QuicPath {
            rtt_ms: crate::units::ms(self.conn.rtt()),
            min_rtt_ms: crate::units::ms(s.path.min_rtt),
            cwnd: s.path.cwnd,
            sent_packets: s.path.sent_packets,
            lost_packets: s.path.lost_packets,
            congestion_events: s.path.congestion_events,
        }
    }

    /// How the handshake went. With 0-RTT, waits (up to `timeout`) for the handshake
    /// to end to know whether the early data was accepted; call it after the first
    /// request so the wait does not delay it.
    pub async fn handshake(&mut self, timeout: Duration) -> QuicHandshake {
        if let Some(state) = &self.early_state {
            let deadline = Instant::now() + timeout;
            loop {
                let got = *state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((accepted, at)) = got {
                    self.handshake.zero_rtt = Some(accepted);
                    if self.handshake.alpn.is_none() {
                        self.handshake.alpn = alpn_of(&self.conn);
                    }
                    self.handshake.handshake_ms = crate::units::ms(at - self.started);
                    self.handshake.resumed =
                        accepted || self.full_handshakes.load(Ordering::Relaxed) == self.before;
                    self.early_state = None;
                    break;
                }
                if Instant::now() >= deadline || self.conn.close_reason().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        self.handshake.clone()
    }

    /// Waits (up to `limit`) until a session ticket has come in since this connection
    /// opened, or it closes. A server sends its tickets after the handshake, and they
    /// can trail a fast response: a visitor closing at once would leave the next
    /// visit nothing to resume with, where a browser, keeping the connection, has
    /// one. At once for a client that keeps no sessions.
    pub async fn await_ticket(&self, limit: Duration) {
        let Some((tickets, before)) = &self.tickets else {
            return;
        };
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let arrived = tickets.arrived.notified();
            if tickets.count.load(Ordering::Relaxed) != *before {
                return;
            }
            tokio::select! {
                _ = arrived => {}
                _ = self.conn.closed() => return,
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Sends one request and reads the whole response, within `timeout`.
    pub async fn send(
        &mut self,
        target: &Target,
        spec: &RequestSpec,
        timeout: Duration,
    ) -> Result<Exchange, NetError> {
        send_on(&mut self.sender, target, spec, timeout).await
    }
}

impl Drop for H3Conn {
    fn drop(&mut self) {
        self.conn.close(0u32.into(), b"done");
        self.driver.abort();
    }
}

/// Sends one request over `sender` (a stream of its own) and reads the whole
/// response, within `timeout`: `send` ends when the request is handed to QUIC,
/// `wait` when the response head is in, `receive` at the body's end.
async fn send_on(
    sender: &mut Sender,
    target: &Target,
    spec: &RequestSpec,
    timeout: Duration,
) -> Result<Exchange, NetError> {
    match tokio::time::timeout(timeout, exchange(sender, target, spec)).await {
        Ok(r) => r,
        Err(_) => Err(NetError::Timeout {
            what: "the request",
            after: timeout,
        }),
    }
}

async fn exchange(
    sender: &mut Sender,
    target: &Target,
    spec: &RequestSpec,
) -> Result<Exchange, NetError> {
    let request = build_request(target, spec)?;
    let start = Instant::now();
    let mut stream = sender.send_request(request).await.map_err(stream_error)?;
    end_request(&mut stream, &spec.body)
        .await
        .map_err(stream_error)?;
    let written_at = Instant::now();
    let response = stream.recv_response().await.map_err(stream_error)?;
    let head_at = Instant::now();
    let headers = head_fields(response.headers())?;
    let mut body_bytes = 0u64;
    while let Some(chunk) = stream.recv_data().await.map_err(stream_error)? {
        body_bytes += chunk.remaining() as u64;
    }
    let end = Instant::now();
    Ok(Exchange {
        status: response.status().as_u16(),
        version: "HTTP/3",
        headers,
        body_bytes,
        send: written_at - start,
        wait: head_at - written_at,
        receive: end - head_at,
        closed_after: false,
    })
}

/// Sends the request's `body` (if any) and its end on `stream`, unless the server
/// stops reading first ([`stopped_reading`]): then the response is read as usual.
async fn end_request(
    stream: &mut h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
    body: &Bytes,
) -> Result<(), h3::error::StreamError> {
    if !body.is_empty() && stopped_reading(stream.send_data(body.clone()).await)? {
        return Ok(());
    }
    stopped_reading(stream.finish().await).map(|_| ())
}

/// Whether the server stopped reading the request: RFC 9114, section 4.1 lets a
/// server send a complete response before it has read the whole request, then abort
/// reading with H3_NO_ERROR, and clients "MUST NOT discard complete responses as a
/// result of having their request terminated abruptly". quic-go (Caddy) does so as
/// soon as its handler returns, which can beat the request's FIN. `Ok(true)`: stop
/// writing (h3 refuses any further write on the stream, and the grease frame of its
/// `finish` would then fail the whole connection) and read the response.
fn stopped_reading(r: Result<(), h3::error::StreamError>) -> Result<bool, h3::error::StreamError> {
    match r {
        Ok(()) => Ok(false),
        Err(h3::error::StreamError::RemoteTerminate { code, .. })
            if code == h3::error::Code::H3_NO_ERROR =>
        {
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

fn stream_error(e: h3::error::StreamError) -> NetError {
    let text = e.to_string();
    if text.contains("reset") || text.contains("closed") || text.contains("Reset") {
        NetError::Closed {
            when: "before the response was complete (HTTP/3 stream or connection closed)",
        }
    } else {
        NetError::Protocol(format!("HTTP/3: {text}"))
    }
}

/// The request h3 sends: the one [`RequestHead`] of `spec`, multiplexed
/// (connection-specific fields are malformed in HTTP/3, RFC 9114 section 4.2).
pub(crate) fn build_request(target: &Target, spec: &RequestSpec) -> Result<Request<()>, NetError> {
    RequestHead::of(target, spec)
        .to_request(Framing::Multiplexed, ())
        .map_err(NetError::Protocol)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing listens on the UDP port: a clear error naming the address, within the
    /// timeout (not quinn's 30 s idle timeout).
    #[tokio::test]
    async fn no_answer_over_udp_is_a_clear_error_within_the_timeout() {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target::parse(&format!("https://127.0.0.1:{port}/")).unwrap();
        let opts = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let client = QuicClient::new(&opts, false).unwrap();
        let start = Instant::now();
        let err = match client
            .connect(&target, &[], Duration::from_millis(300), false)
            .await
        {
            Ok(_) => panic!("connected to a UDP port nobody listens on"),
            Err(e) => e,
        };
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(err.kind(), "connect");
        let text = err.to_string();
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(text.contains("no answer over UDP"), "{text}");
    }

    /// The configuration builds from the same options as TLS over TCP, with and
    /// without verification and session keeping.
    #[test]
    fn config_from_tls_options() {
        for insecure in [false, true] {
            for keep in [false, true] {
                let opts = TlsOptions {
                    insecure,
                    ..TlsOptions::default()
                };
                assert!(client_config(&opts, keep).is_ok());
            }
        }
    }
}
