//! Opening the load engine's connections: TCP (with `TCP_NODELAY`) and, for https,
//! a rustls handshake, each timed on its own. A [`Stream`] is either, behind one type
//! so the HTTP/1.1 and HTTP/2 code does not care.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::recorder::ErrorKind;

/// A plain or TLS connection (the same stream the probe uses).
pub use crate::net::conn::Stream;

/// Connects that failed because the process (EMFILE) or the system (ENFILE) had no
/// file descriptor left, since the process started.
static FD_EXHAUSTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How long a VU waits after a connect failed for want of a file descriptor.
pub(super) const FD_BACKOFF: Duration = Duration::from_millis(50);

/// How many connects failed for want of a file descriptor (EMFILE/ENFILE), so the
/// command can name the open-file limit instead of a bare "connect" error.
pub fn fd_exhausted() -> u64 {
    FD_EXHAUSTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether `e` says no file descriptor was left (EMFILE, ENFILE); counts it if so.
pub(super) fn fd_shortage(e: &std::io::Error) -> bool {
    let short = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    if short {
        FD_EXHAUSTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    short
}

/// Why the first TLS handshake that failed failed, in words.
static TLS_FAILURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The reason of the first failed TLS handshake since the process started (the
/// verifier's words: expired, wrong name, unknown issuer, …), so `tls` errors are
/// explained.
pub fn tls_failure() -> Option<&'static str> {
    TLS_FAILURE.get().map(String::as_str)
}

/// Responses refused because their head passed the response-head limit.
static HEAD_TOO_LARGE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a response whose head passed [`crate::net::http::MAX_RESPONSE_HEAD`].
pub fn note_head_too_large() {
    HEAD_TOO_LARGE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many responses were refused for a head over the limit (counted as
/// `protocol` errors), so the command can say why.
pub fn head_too_large() -> u64 {
    HEAD_TOO_LARGE.load(std::sync::atomic::Ordering::Relaxed)
}

static H2_FLOODS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts an HTTP/2 connection ended with GOAWAY ENHANCE_YOUR_CALM: the server made
/// it queue more answers than it reads, or sent too many CONTINUATION frames.
pub fn note_h2_flood() {
    H2_FLOODS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many HTTP/2 connections were ended for a flood (their requests counted as
/// `protocol` errors), so the command can say why.
pub fn h2_floods() -> u64 {
    H2_FLOODS.load(std::sync::atomic::Ordering::Relaxed)
}

/// A new connection and what it cost.
pub struct Opened {
    pub stream: Stream,
    pub connect: Duration,
    pub tls: Option<Duration>,
    /// The server chose h2 in ALPN.
    pub h2: bool,
    /// Segments the kernel retransmitted before the connection was up: the SYN was
    /// dropped and sent again (TCP_INFO's `total_retrans` right after connect).
    pub syn_retrans: u32,
    /// The TCP socket, to read its TCP_INFO again when it closes.
    pub fd: std::os::fd::RawFd,
}

/// Opens connections to one address.
#[derive(Clone)]
pub struct Connector {
    pub addr: SocketAddr,
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Connector {
    /// A connector for `addr`; `tls` makes it https.
    pub fn new(
        addr: SocketAddr,
        tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    ) -> Self {
        Connector {
            addr,
            tls: tls.map(|(c, n)| (TlsConnector::from(c), n)),
        }
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Connects (and shakes hands). `phase` is set to `Tls` once TCP is up, so a
    /// caller that times the whole thing out knows where it stopped.
    ///
    /// The future is boxed: a TLS handshake's state is ~1.2 KB, and inline it would
    /// sit in every VU's future for the whole run although it is used once per
    /// connection (5,000 VUs: 6 MB).
    pub fn open<'a>(
        &'a self,
        phase: &'a std::cell::Cell<Phase>,
    ) -> std::pin::Pin<Box<impl std::future::Future<Output = Result<Opened, ErrorKind>> + 'a>> {
        Box::pin(self.open_inline(phase))
    }

    async fn open_inline(&self, phase: &std::cell::Cell<Phase>) -> Result<Opened, ErrorKind> {
        phase.set(Phase::Connect);
        let t0 = Instant::now();
        let tcp = match TcpStream::connect(self.addr).await {
            Ok(tcp) => tcp,
            Err(e) => {
                if fd_shortage(&e) {
                    // No descriptor frees up until another connection closes: wait
                    // before the VU tries again instead of failing in a tight loop
                    // (a failed connect is not timed, so this adds to no latency).
                    tokio::time::sleep(FD_BACKOFF).await;
                }
                return Err(ErrorKind::Connect);
            }
        };
        let _ = tcp.set_nodelay(true);
        let t1 = Instant::now();
        let connect = t1 - t0;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&tcp);
        let syn_retrans = crate::net::tcp::tcp_info(&tcp).map_or(0, |i| i.total_retrans);
        match &self.tls {
            None => Ok(Opened {
                stream: Stream::Plain(tcp),
                connect,
                tls: None,
                h2: false,
                syn_retrans,
                fd,
            }),
            Some((connector, name)) => {
                phase.set(Phase::Tls);
                let tls = connector.connect(name.clone(), tcp).await.map_err(|e| {
                    let _ = TLS_FAILURE.get_or_init(|| {
                        let (reason, hint) = crate::net::conn::tls_failure(&e);
                        format!("{reason}{hint}")
                    });
                    ErrorKind::Tls
                })?;
                let h2 = tls.get_ref().1.alpn_protocol() == Some(crate::net::tls::ALPN_H2);
                Ok(Opened {
                    stream: Stream::Tls(Box::new(tls)),
                    connect,
                    tls: Some(t1.elapsed()),
                    h2,
                    syn_retrans,
                    fd,
                })
            }
        }
    }
}

/// Where a request is, so a timeout can be classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Tls,
    Exchange,
}

impl Phase {
    /// The error kind of a request timeout that struck in this phase: a connect that
    /// never completed is a connect failure (dropped SYNs), the rest are timeouts.
    pub fn timeout_kind(self) -> ErrorKind {
        match self {
            Phase::Connect => ErrorKind::Connect,
            Phase::Tls | Phase::Exchange => ErrorKind::Timeout,
        }
    }
}

/// The error kind of an I/O error during an exchange.
pub fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::InvalidData => ErrorKind::Protocol,
        _ => ErrorKind::Reset,
    }
}
