//! Accepting connections: TCP (with `TCP_NODELAY`), optional TLS, HTTP/1.1 and — with
//! `http2` — HTTP/2 (ALPN over TLS, prior-knowledge h2c detected from the preface on
//! plain TCP). Each connection has a control block through which a route can ask for
//! the connection to be closed after its response (`/close`) or reset (`/reset`).
//!
//! With `http3`, the QUIC endpoint (`super::h3`) runs beside the TCP listener on the
//! same App, and TCP responses carry `Alt-Svc: h3=":PORT"; ma=86400`.
//!
//! Shutdown: stop accepting, ask every connection to finish gracefully, wait a short
//! grace period, then drop whatever is left.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::cold::ColdStart;
use super::gate::Gate;
use super::stats::Counters;
use super::{routes, LabOptions};
use crate::net::stream::MaybeTls;

/// How long connections get to finish after shutdown before they are dropped.
pub(crate) const GRACE: Duration = Duration::from_secs(1);
/// A TLS handshake that takes longer than this is abandoned.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the routes of one lab share.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) options: LabOptions,
    pub(crate) counters: Arc<Counters>,
    pub(crate) gate: Gate,
    pub(crate) cold: ColdStart,
    /// Monotonic start, for stalls and CDN ages.
    pub(crate) start: Instant,
    /// Wall-clock start, whole seconds: the `Last-Modified` of cached pages.
    pub(crate) modified: SystemTime,
    /// A per-start value mixed into ids (CF-Ray, cookies).
    pub(crate) nonce: u64,
    /// `Alt-Svc` for TCP responses when HTTP/3 is served.
    alt_svc: Option<http::HeaderValue>,
}

impl App {
    fn new(options: LabOptions, counters: Arc<Counters>, h3_port: Option<u16>) -> App {
        let start = Instant::now();
        let now = SystemTime::now();
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        App {
            gate: Gate::new(&options, start),
            cold: ColdStart::new(options.cold, options.cold_after),
            options,
            counters,
            start,
            modified: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            nonce: super::body::splitmix(secs ^ u64::from(std::process::id())),
            alt_svc: h3_port
                .and_then(|p| http::HeaderValue::from_str(&format!("h3=\":{p}\"; ma=86400")).ok()),
        }
    }
}

/// What a route may ask of its connection.
#[derive(Debug)]
pub(crate) struct ConnCtl {
    pub(super) reset: Notify,
    pub(super) close: Notify,
    closed: watch::Receiver<()>,
}

impl ConnCtl {
    /// A control block; dropping the sender tells waiting routes the connection is
    /// gone.
    pub(super) fn new() -> (Arc<ConnCtl>, watch::Sender<()>) {
        let (closed_tx, closed_rx) = watch::channel(());
        let ctl = Arc::new(ConnCtl {
            reset: Notify::new(),
            close: Notify::new(),
            closed: closed_rx,
        });
        (ctl, closed_tx)
    }

    /// Asks the connection to reset (RST) as soon as possible.
    pub(crate) fn request_reset(&self) {
        self.reset.notify_one();
    }

    /// Asks the connection to close once the response in flight is sent.
    pub(crate) fn request_close(&self) {
        self.close.notify_one();
    }

    /// Completes when the connection is gone.
    pub(crate) async fn closed(&self) {
        let mut rx = self.closed.clone();
        while rx.changed().await.is_ok() {}
    }
}

/// Accepts and serves until `shutdown` completes.
pub(crate) async fn run(
    listener: TcpListener,
    udp: Option<std::net::UdpSocket>,
    options: LabOptions,
    counters: Arc<Counters>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let acceptor = options
        .tls
        .as_ref()
        .map(|t| TlsAcceptor::from(t.server_config(options.http2)));
    let udp = if options.http3 { udp } else { None };
    if options.http3 && (udp.is_none() || options.tls.is_none()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "HTTP/3 needs TLS and a UDP socket",
        ));
    }
    let h3_port = match &udp {
        Some(u) => Some(u.local_addr()?.port()),
        None => None,
    };
    let app = Arc::new(App::new(options, counters, h3_port));
    let (stop_tx, stop_rx) = watch::channel(false);
    let quic = match udp {
        Some(udp) => Some(tokio::spawn(super::h3::run(
            super::h3::endpoint(udp, &app)?,
            app.clone(),
            stop_rx.clone(),
        ))),
        None => None,
    };
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    conns.spawn(connection(stream, app.clone(), acceptor.clone(), stop_rx.clone()));
                }
                // Out of file descriptors, a connection aborted before accept…: transient.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(GRACE, async { while conns.join_next().await.is_some() {} }).await;
    conns.shutdown().await;
    if let Some(quic) = quic {
        // It has its own grace period; this bound only guards against a stuck task.
        let _ = tokio::time::timeout(2 * GRACE, quic).await;
    }
    Ok(())
}

/// Serves one connection.
async fn connection(
    stream: TcpStream,
    app: Arc<App>,
    acceptor: Option<TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    app.counters.connection();
    let fd = stream.as_raw_fd();
    let (ctl, closed_tx) = ConnCtl::new();

    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    let (io, builder) = match acceptor {
        None => {
            let b = if app.options.http2 {
                builder
            } else {
                builder.http1_only()
            };
            (LabStream::Plain(stream), b)
        }
        Some(acceptor) => {
            let tls =
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => tls,
                    _ => return,
                };
            let session = tls.get_ref().1;
            app.counters
                .tls_handshake(session.handshake_kind() == Some(rustls::HandshakeKind::Resumed));
            let b = match session.alpn_protocol() {
                Some(b"h2") => builder.http2_only(),
                Some(_) => builder.http1_only(),
                None if app.options.http2 => builder,
                None => builder.http1_only(),
            };
            (LabStream::Tls(Box::new(tls)), b)
        }
    };

    let svc_app = app.clone();
    let svc_ctl = ctl.clone();
    let service = service_fn(move |req| {
        let (app, ctl) = (svc_app.clone(), svc_ctl.clone());
        async move {
            let mut resp = routes::handle(req, app.clone(), ctl).await?;
            if let Some(alt) = &app.alt_svc {
                resp.headers_mut()
                    .insert(http::header::ALT_SVC, alt.clone());
            }
            Ok::<_, std::convert::Infallible>(resp)
        }
    });
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            _ = ctl.reset.notified() => {
                set_linger_zero(fd);
                break;
            }
            _ = ctl.close.notified(), if !shutting_down => {
                conn.as_mut().graceful_shutdown();
                shutting_down = true;
            }
            changed = stop.changed(), if !shutting_down => {
                if changed.is_err() || *stop.borrow() {
                    conn.as_mut().graceful_shutdown();
                    shutting_down = true;
                }
            }
        }
    }
    // Dropping `conn` (end of scope) closes the socket: with linger 0, an RST.
    drop(closed_tx);
}

/// `SO_LINGER` with a zero timeout: closing the socket then sends RST, not FIN.
fn set_linger_zero(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: fd is the open socket of this connection (its owner is still alive in
    // the caller); the option value is a valid `linger` of the given size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// A plain or TLS server stream, one concrete type for hyper.
type LabStream = MaybeTls<TlsStream<TcpStream>>;
