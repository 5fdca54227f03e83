//! HTTP/3 for the lab (`--http3`): a quinn endpoint on the UDP socket of the TCP
//! port's number, h3 on each QUIC connection, and every request answered by the same
//! [`routes::handle`] as over TCP — same routes, gate, stalls and counters.
//!
//! The certificate is the TCP side's ([`super::LabTls::quic_config`]). Sessions are
//! kept in memory and 0-RTT is accepted (unless `--no-tls-resumption`); the server
//! answers 0-RTT requests at once (0.5-RTT data), so a resumed client saves the round
//! trip it should. `/close` sends GOAWAY after its response; `/reset` closes the QUIC
//! connection with `H3_INTERNAL_ERROR`, the nearest thing to a TCP RST.
//!
//! Shutdown follows the TCP side: on `stop`, stop accepting, GOAWAY every
//! connection, give them [`GRACE`] to finish, then close the endpoint.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response};
use http_body_util::BodyExt;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::routes;
use super::server::{App, ConnCtl, GRACE};
use super::stats::Counters;

/// A QUIC connection idle this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Concurrent requests (bidirectional streams) one client may have open: room for
/// `load --http3 --streams` well past h2load's usual 100.
const MAX_STREAMS: u32 = 1024;
/// After GOAWAY, the longest the lab waits for the client to close before it does
/// (8 RTT, at least 100 ms, leave time for the last acknowledgements).
const LINGER: Duration = Duration::from_secs(1);
/// Sessions kept for resumption and 0-RTT.
const SESSIONS: usize = 4096;
/// The UDP receive buffer asked for (the kernel caps it at `net.core.rmem_max`):
/// under load, the default ~200 KiB drops datagrams before quinn reads them.
const RECV_BUFFER: libc::c_int = 8 << 20;

/// HTTP/3 error codes (RFC 9114, section 8.1).
const H3_NO_ERROR: u32 = 0x100;
const H3_INTERNAL_ERROR: u32 = 0x102;

type H3Conn = h3::server::Connection<h3_quinn::Connection, Bytes>;
type H3Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The lab's QUIC endpoint on `udp` (bound by the caller: on the host, or inside
/// the wire's namespace). Needs the lab's TLS; must be called inside the runtime.
pub(crate) fn endpoint(udp: std::net::UdpSocket, app: &App) -> io::Result<quinn::Endpoint> {
    let tls = app
        .options
        .tls
        .as_ref()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "HTTP/3 needs --tls"))?;
    let sessions = Arc::new(CountingSessions {
        inner: rustls::server::ServerSessionMemoryCache::new(SESSIONS),
        counters: app.counters.clone(),
    });
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls.quic_config(sessions))
        .map_err(|e| io::Error::other(format!("QUIC TLS setup: {e}")))?;
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(MAX_STREAMS.into())
        .max_idle_timeout(IDLE_TIMEOUT.try_into().ok());
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    udp.set_nonblocking(true)?;
    set_recv_buffer(&udp);
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        udp,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Accepts QUIC connections until `stop`, then lets them finish for [`GRACE`].
pub(crate) async fn run(endpoint: quinn::Endpoint, app: Arc<App>, stop: watch::Receiver<bool>) {
    let mut conns = JoinSet::new();
    let mut stopping = stop.clone();
    loop {
        tokio::select! {
            changed = stopping.changed() => {
                if changed.is_err() || *stopping.borrow() {
                    break;
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    conns.spawn(connection(incoming, app.clone(), stop.clone()));
                }
                None => break,
            },
        }
    }
    let _ = tokio::time::timeout(GRACE, async { while conns.join_next().await.is_some() {} }).await;
    conns.shutdown().await;
    endpoint.close(H3_NO_ERROR.into(), b"lab stopped");
    let _ = tokio::time::timeout(GRACE, endpoint.wait_idle()).await;
}

/// Serves one QUIC connection: its handshake, then its requests, each on a task.
async fn connection(incoming: quinn::Incoming, app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    app.counters.quic_connection();
    // Requests that came as 0-RTT data are served before the handshake completes
    // (for a server this always succeeds): that is the round trip 0-RTT saves.
    let quic = match connecting.into_0rtt() {
        Ok((quic, _)) => quic,
        Err(connecting) => match connecting.await {
            Ok(quic) => quic,
            Err(_) => return,
        },
    };
    let Ok(mut h3): Result<H3Conn, _> = h3::server::builder()
        .build(h3_quinn::Connection::new(quic.clone()))
        .await
    else {
        return;
    };
    let (ctl, closed_tx) = ConnCtl::new();
    let mut requests = JoinSet::new();
    let mut shutting_down = false;
    let mut reset = false;
    loop {
        // After our GOAWAY, h3 keeps refusing new streams: end once the requests
        // it let in are answered.
        if shutting_down && requests.is_empty() {
            break;
        }
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    let (app, ctl) = (app.clone(), ctl.clone());
                    requests.spawn(async move {
                        if let Ok((req, stream)) = resolver.resolve_request().await {
                            let _ = request(req, stream, app, ctl).await;
                        }
                    });
                }
                // GOAWAY done (ours or the client's) and every request answered, or
                // the connection is gone.
                Ok(None) | Err(_) => break,
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            _ = ctl.reset.notified() => {
                reset = true;
                break;
            }
            _ = ctl.close.notified(), if !shutting_down => {
                shutting_down = true;
                // Finish the request in flight (the /close itself), refuse later ones.
                let _ = h3.shutdown(1).await;
            }
            changed = stop.changed(), if !shutting_down => {
                if changed.is_err() || *stop.borrow() {
                    shutting_down = true;
                    let _ = h3.shutdown(0).await;
                }
            }
        }
    }
    if reset {
        quic.close(H3_INTERNAL_ERROR.into(), b"reset (lab /reset)");
    } else {
        // Let the last responses reach the client (closing now would discard what
        // is still unacknowledged) or the client close first, then close.
        let linger = LINGER.min(quic.rtt() * 8 + Duration::from_millis(100));
        let _ = tokio::time::timeout(linger, async {
            while requests.join_next().await.is_some() {}
            quic.closed().await;
        })
        .await;
        quic.close(H3_NO_ERROR.into(), b"");
    }
    requests.shutdown().await;
    drop(closed_tx);
}

/// Reads one request's body (the routes look only at the head), answers it through
/// the routes, and streams the response.
async fn request(
    req: http::Request<()>,
    mut stream: H3Stream,
    app: Arc<App>,
    ctl: Arc<ConnCtl>,
) -> Result<(), h3::error::StreamError> {
    while stream.recv_data().await?.is_some() {}
    let head = req.method() == Method::HEAD;
    let req = req.map(|()| http_body_util::Empty::<Bytes>::new());
    let Ok(resp) = routes::handle(req, app, ctl).await;
    let (parts, mut body) = resp.into_parts();
    stream
        .send_response(Response::from_parts(parts, ()))
        .await?;
    if !head {
        // The lab's bodies never fail; they hold only data frames.
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                stream.send_data(data).await?;
            }
        }
    }
    stream.finish().await
}

/// The session cache, counting the handshakes that found their session (rustls
/// looks a stateful session up once per resumption attempt).
#[derive(Debug)]
struct CountingSessions {
    inner: Arc<rustls::server::ServerSessionMemoryCache>,
    counters: Arc<Counters>,
}

impl CountingSessions {
    fn hit(&self, found: Option<Vec<u8>>) -> Option<Vec<u8>> {
        if found.is_some() {
            self.counters.quic_resumed();
        }
        found
    }
}

impl rustls::server::StoresServerSessions for CountingSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.hit(self.inner.get(key))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.hit(self.inner.take(key))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

/// Asks for a larger UDP receive buffer; the kernel's cap applies, failures are
/// harmless (quinn recovers dropped datagrams as losses).
fn set_recv_buffer(udp: &std::net::UdpSocket) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket and an int-sized option value.
    unsafe {
        libc::setsockopt(
            udp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&RECV_BUFFER as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}
