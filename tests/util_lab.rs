//! A tiny HTTP client for the lab tests (hyper's low-level client connections over
//! loopback, with optional TLS), so lab tests don't depend on latscope's own probe.

#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Version};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::ClientConfig;
use tokio::net::TcpStream;

use latscope::lab::{self, LabOptions, RunningLab};

/// Every lab test request gives up after this long.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Which HTTP version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    H1,
    H2,
}

/// A response, fully read.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
}

impl Resp {
    /// A header as text ("" when missing).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

enum Sender {
    H1(http1::SendRequest<Empty<Bytes>>),
    H2(http2::SendRequest<Empty<Bytes>>),
}

/// One client connection to a lab.
pub struct Conn {
    sender: Sender,
    authority: String,
    scheme: &'static str,
    /// The ALPN protocol the server chose (TLS only).
    pub alpn: Option<Vec<u8>>,
    /// Whether the TLS session was resumed.
    pub resumed: bool,
}

/// A client TLS configuration that trusts `cert_pem`, offering `alpn`.
pub fn trusting(cert_pem: &str, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(cert_pem.as_bytes()) {
        roots
            .add(cert.expect("PEM parses"))
            .expect("cert is usable");
    }
    let mut config = ClientConfig::builder_with_provider(latscope::net::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Connects to `addr`; with `tls`, does a handshake for server name `host` first.
pub async fn connect(
    addr: SocketAddr,
    proto: Proto,
    tls: Option<(Arc<ClientConfig>, &str)>,
) -> Result<Conn, String> {
    let tcp = tokio::time::timeout(TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| "connect timed out".to_string())?
        .map_err(|e| format!("connect: {e}"))?;
    tcp.set_nodelay(true).unwrap();
    let authority = addr.to_string();
    match tls {
        None => {
            let sender = handshake(TokioIo::new(tcp), proto).await?;
            Ok(Conn {
                sender,
                authority,
                scheme: "http",
                alpn: None,
                resumed: false,
            })
        }
        Some((config, host)) => {
            let name = rustls::pki_types::ServerName::try_from(host.to_string()).unwrap();
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            let session = stream.get_ref().1;
            let alpn = session.alpn_protocol().map(|p| p.to_vec());
            let resumed = session.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            let sender = handshake(TokioIo::new(stream), proto).await?;
            Ok(Conn {
                sender,
                authority,
                scheme: "https",
                alpn,
                resumed,
            })
        }
    }
}

async fn handshake<I>(io: TokioIo<I>, proto: Proto) -> Result<Sender, String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    match proto {
        Proto::H1 => {
            let (sender, conn) = http1::handshake(io)
                .await
                .map_err(|e| format!("h1 handshake: {e}"))?;
            tokio::spawn(conn);
            Ok(Sender::H1(sender))
        }
        Proto::H2 => {
            let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|e| format!("h2 handshake: {e}"))?;
            tokio::spawn(conn);
            Ok(Sender::H2(sender))
        }
    }
}

impl Conn {
    /// GET `path` with extra headers, reading the whole body.
    pub async fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Result<Resp, String> {
        let mut builder = Request::builder();
        builder = match self.sender {
            Sender::H1(_) => builder.uri(path).header("host", &self.authority),
            Sender::H2(_) => builder
                .uri(format!("{}://{}{}", self.scheme, self.authority, path))
                .version(Version::HTTP_2),
        };
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let req = builder.body(Empty::<Bytes>::new()).unwrap();
        let start = Instant::now();
        let work = async {
            let resp = match &mut self.sender {
                Sender::H1(s) => {
                    s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                    s.send_request(req).await
                }
                Sender::H2(s) => {
                    s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                    s.send_request(req).await
                }
            }
            .map_err(|e| format!("request: {e}"))?;
            let (parts, body) = resp.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            Ok::<_, String>(Resp {
                status: parts.status,
                version: parts.version,
                headers: parts.headers,
                body,
                elapsed: start.elapsed(),
            })
        };
        tokio::time::timeout(TIMEOUT, work)
            .await
            .map_err(|_| "request timed out".to_string())?
    }
}

/// GET `path` over a fresh plain HTTP/1.1 connection.
pub async fn get(addr: SocketAddr, path: &str) -> Resp {
    get_with(addr, path, &[]).await
}

/// GET `path` with headers over a fresh plain HTTP/1.1 connection.
pub async fn get_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut conn = connect(addr, Proto::H1, None).await.expect("connects");
    conn.get(path, headers).await.expect("request succeeds")
}

/// The median of some durations, in milliseconds.
pub fn p50_ms(mut samples: Vec<Duration>) -> f64 {
    assert!(!samples.is_empty());
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A lab with default (healthy) options.
pub fn healthy() -> RunningLab {
    lab::spawn(LabOptions::default()).expect("lab starts")
}

/// Sends a raw HTTP/1.1 GET on a std socket and returns it (for close/reset tests).
pub fn raw_get(addr: SocketAddr, path: &str) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    s
}

/// Runs `n` GETs of `path` at once, each on its own connection; returns (status,
/// elapsed) sorted by elapsed.
pub async fn concurrent(addr: SocketAddr, path: &str, n: usize) -> Vec<(u16, Duration)> {
    // Connect everything first, so the requests arrive together.
    let mut conns = Vec::new();
    for _ in 0..n {
        conns.push(connect(addr, Proto::H1, None).await.unwrap());
    }
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut c| {
            let path = path.to_string();
            tokio::spawn(async move {
                let r = c.get(&path, &[]).await.unwrap();
                (r.status.as_u16(), r.elapsed)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out.sort_by_key(|(_, d)| *d);
    out
}
