//! Opening a connection phase by phase — resolve, TCP connect, TLS — with each phase
//! timed and what the handshake negotiated kept.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::net::ResolveOverride;

use super::error::NetError;
use super::stream::MaybeTls;
use super::{dns, tcp, Scheme, Target};

/// How to open connections to a target.
#[derive(Clone)]
pub struct ConnectOptions {
    pub resolve: Vec<ResolveOverride>,
    pub timeout: Duration,
    /// Set for https targets (ALPN already chosen).
    pub tls: Option<Arc<ClientConfig>>,
}

/// What a TLS handshake negotiated.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsInfo {
    /// "TLSv1.3" or "TLSv1.2".
    pub version: String,
    /// The ALPN protocol the server chose, if any.
    pub alpn: Option<String>,
    /// The session was resumed (no full handshake).
    pub resumed: bool,
    /// When the first certificate of the chain the server sent to expire does, in
    /// seconds since the epoch (blackbox_exporter's `probe_ssl_earliest_cert_expiry`);
    /// None on a resumed session (no certificates are sent) or an unreadable one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_not_after_s: Option<i64>,
}

/// The earliest `notAfter` among DER certificates, seconds since the epoch.
pub fn earliest_not_after(certs: &[rustls_pki_types::CertificateDer<'_>]) -> Option<i64> {
    certs
        .iter()
        .filter_map(|c| x509_parser::parse_x509_certificate(c.as_ref()).ok())
        .map(|(_, cert)| cert.validity().not_after.timestamp())
        .min()
}

/// A plain or TLS client byte stream.
pub type Stream = MaybeTls<TlsStream<TcpStream>>;

/// A connection just opened, with the time each phase took.
pub struct Connected {
    pub stream: Stream,
    /// A duplicate of the socket, to read `TCP_INFO` while the HTTP layer owns it.
    pub socket: OwnedFd,
    pub addresses: Vec<SocketAddr>,
    pub peer: SocketAddr,
    pub dns: Duration,
    pub connect: Duration,
    pub tls: Duration,
    pub tls_info: Option<TlsInfo>,
}

/// Resolves (anew), connects to the first address that answers, and runs the TLS
/// handshake for https; each step bounded by the timeout.
pub async fn open(target: &Target, opts: &ConnectOptions) -> Result<Connected, NetError> {
    let resolved = dns::resolve(&target.host, target.port, &opts.resolve, opts.timeout).await?;
    let start = Instant::now();
    let mut last_err = None;
    let mut tcp = None;
    for addr in &resolved.addrs {
        match tcp::connect(*addr, opts.timeout).await {
            Ok(s) => {
                tcp = Some((s, *addr));
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                last_err = Some(NetError::Timeout {
                    what: "TCP connect",
                    after: opts.timeout,
                })
            }
            Err(reason) => {
                last_err = Some(NetError::Connect {
                    addr: *addr,
                    reason,
                })
            }
        }
    }
    let Some((tcp, peer)) = tcp else {
        return Err(last_err.expect("at least one address was tried"));
    };
    let connect = start.elapsed();
    let socket = tcp.as_fd().try_clone_to_owned()?;
    let (stream, tls, tls_info) = match (&opts.tls, target.scheme) {
        (Some(config), Scheme::Https) => {
            let start = Instant::now();
            let tls = handshake(tcp, target, config.clone(), opts.timeout).await?;
            // The handshake's time, before reading the certificates for their expiry.
            let took = start.elapsed();
            let (_, conn) = tls.get_ref();
            let info = TlsInfo {
                version: conn
                    .protocol_version()
                    .map(|v| match v {
                        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
                        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
                        other => format!("{other:?}"),
                    })
                    .unwrap_or_default(),
                alpn: conn
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
                resumed: matches!(conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed)),
                cert_not_after_s: conn.peer_certificates().and_then(earliest_not_after),
            };
            (Stream::Tls(Box::new(tls)), took, Some(info))
        }
        _ => (Stream::Plain(tcp), Duration::ZERO, None),
    };
    Ok(Connected {
        stream,
        socket,
        addresses: resolved.addrs,
        peer,
        dns: resolved.took,
        connect,
        tls,
        tls_info,
    })
}

async fn handshake(
    tcp: TcpStream,
    target: &Target,
    config: Arc<ClientConfig>,
    timeout: Duration,
) -> Result<TlsStream<TcpStream>, NetError> {
    let name = super::tls::server_name(&target.host).map_err(|e| NetError::Tls {
        host: target.host.clone(),
        reason: e.to_string(),
        hint: "",
    })?;
    let connector = tokio_rustls::TlsConnector::from(config);
    match tokio::time::timeout(timeout, connector.connect(name, tcp)).await {
        Err(_) => Err(NetError::Timeout {
            what: "TLS handshake",
            after: timeout,
        }),
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => {
            let (reason, hint) = tls_failure(&e);
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
            ) && hint.is_empty()
            {
                return Err(NetError::Tls {
                    host: target.host.clone(),
                    reason: format!("{reason} (is this port really serving TLS?)"),
                    hint,
                });
            }
            Err(NetError::Tls {
                host: target.host.clone(),
                reason,
                hint,
            })
        }
    }
}

/// Why a TLS handshake failed, in words, and what to do about it (a hint starting
/// with a space, or empty): a certificate refused by `net::verify` already says both.
pub fn tls_failure(e: &io::Error) -> (String, &'static str) {
    if let Some(refused) = cert_refused(e) {
        return (refused, "");
    }
    let reason = e
        .get_ref()
        .map(|inner| inner.to_string())
        .unwrap_or_else(|| e.to_string());
    let hint = if reason.contains("certificate") || reason.contains("Certificate") {
        " (the server's certificate is not trusted here: pass --cacert FILE with \
         its CA, or -k to skip verification)"
    } else if reason.contains("NoApplicationProtocol") {
        " (the server accepts none of the protocols offered in ALPN: with --http2 \
         only h2 is offered, and this server does not speak HTTP/2 here; drop \
         --http2)"
    } else {
        ""
    };
    (reason, hint)
}

/// The worded reason of a certificate refused by `net::verify`, if that is what
/// ended the handshake.
fn cert_refused(e: &io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    match inner {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o)) => {
            o.0.downcast_ref::<super::verify::CertRefused>()
                .map(|r| r.0.clone())
        }
        _ => None,
    }
}
