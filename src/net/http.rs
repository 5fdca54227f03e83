//! One HTTP connection (HTTP/1.1 or HTTP/2, by hyper) whose exchanges are timed phase
//! by phase: request written, first response byte, last body byte.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONNECTION;
use http::{Request, Version};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::request::{Framing, RequestHead, RequestSpec};

use super::conn::{Connected, Stream, TlsInfo};
use super::error::NetError;
use super::tcp::{self, TcpInfo};
use super::timed_io::{MarkHandle, TimedIo};
use super::Target;

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// An open HTTP connection.
pub struct HttpConn {
    sender: Sender,
    marks: MarkHandle,
    socket: OwnedFd,
    task: tokio::task::JoinHandle<()>,
    /// TLS handshake result (https only).
    pub tls_info: Option<TlsInfo>,
    /// The address connected to.
    pub peer: std::net::SocketAddr,
    /// What the server's response said about the connection: closed after it.
    closed: bool,
}

/// One response, timed. Durations are phases (DESIGN.md, Measurements).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub status: u16,
    /// "HTTP/1.0", "HTTP/1.1" or "HTTP/2".
    pub version: &'static str,
    pub headers: Vec<(String, String)>,
    /// Body bytes as they came over the wire (compressed if the server compressed).
    pub body_bytes: u64,
    /// Request start → request written.
    pub send: Duration,
    /// Request written → response head.
    pub wait: Duration,
    /// Response head → last body byte.
    pub receive: Duration,
    /// The server closed (or said it will close) the connection after this response.
    pub closed_after: bool,
}

/// The largest response head (status line and headers) any command reads: 256 KiB.
/// Probe, diagnose and load all stop at it, and say so.
pub const MAX_RESPONSE_HEAD: usize = 256 * 1024;

/// The error text of a response head over [`MAX_RESPONSE_HEAD`].
pub fn head_too_large() -> String {
    format!(
        "response headers larger than {} KiB (latscope's limit for every command)",
        MAX_RESPONSE_HEAD / 1024
    )
}

/// An invalid Content-Length in a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Content-Length {0:?} (RFC 9110 §8.6: digits, and the same value when repeated)")]
pub struct BadContentLength(pub String);

/// A response's Content-Length read field by field (RFC 9110 §8.6, RFC 9112 §6.3):
/// each value is digits only (no sign, no space inside, no overflow past u64), and
/// when it comes in several fields or as a list (`5, 5`) every value is the same.
/// Anything else — `-1`, `+5`, `1e3`, 2^64, `5, 6`, empty — makes the response
/// invalid. The one rule of every command: the probe (hyper, h2, h3 through
/// [`head_fields`]) and load's own HTTP/1.1 and HTTP/2 readers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContentLength {
    value: Option<u64>,
    bad: bool,
}

impl ContentLength {
    /// One Content-Length field's value.
    pub fn feed(&mut self, field: &[u8]) {
        for part in field.split(|&b| b == b',') {
            let part = part.trim_ascii();
            let n = if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                None
            } else {
                part.iter().try_fold(0u64, |n, &d| {
                    n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
                })
            };
            match (n, self.value) {
                (None, _) => self.bad = true,
                (Some(n), Some(v)) if n != v => self.bad = true,
                (Some(n), _) => self.value = Some(n),
            }
        }
    }

    /// The length (None without the field), or why the response is invalid.
    pub fn get(&self, shown: impl FnOnce() -> String) -> Result<Option<u64>, BadContentLength> {
        if self.bad {
            Err(BadContentLength(shown()))
        } else {
            Ok(self.value)
        }
    }
}

/// The Content-Length of a decoded response head ([`ContentLength`]'s rule).
pub fn content_length(headers: &http::HeaderMap) -> Result<Option<u64>, BadContentLength> {
    let mut cl = ContentLength::default();
    let values = headers.get_all(http::header::CONTENT_LENGTH);
    for v in values.iter() {
        cl.feed(v.as_bytes());
    }
    cl.get(|| {
        values
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// A decoded response head's fields as (name, value) text, refused when larger than
/// `MAX_RESPONSE_HEAD` (each field counted as on an HTTP/1.1 wire: name, value, 4).
/// hyper's and h3's own buffer limits let a head through that fits one read.
pub fn head_fields(headers: &http::HeaderMap) -> Result<Vec<(String, String)>, NetError> {
    let size: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if size > MAX_RESPONSE_HEAD {
        return Err(NetError::Protocol(head_too_large()));
    }
    content_length(headers).map_err(|e| NetError::Protocol(e.to_string()))?;
    Ok(headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect())
}

impl HttpConn {
    /// Runs the HTTP handshake on a freshly opened connection: HTTP/2 when ALPN chose
    /// h2 or `h2c` asks for prior knowledge on plain http, HTTP/1.1 otherwise.
    pub async fn handshake(connected: Connected, h2c: bool) -> Result<HttpConn, NetError> {
        let use_h2 = match &connected.tls_info {
            Some(info) => info.alpn.as_deref() == Some("h2"),
            None => h2c,
        };
        let tls_info = connected.tls_info.clone();
        let (io, marks) = TimedIo::new(connected.stream);
        let io: TokioIo<TimedIo<Stream>> = TokioIo::new(io);
        let (sender, task) = if use_h2 {
            let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                .max_header_list_size(MAX_RESPONSE_HEAD as u32)
                .handshake(io)
                .await
                .map_err(NetError::from_hyper)?;
            let task = tokio::spawn(async move {
                let _ = conn.await;
            });
            (Sender::H2(sender), task)
        } else {
            let (sender, conn) = http1::Builder::new()
                .max_buf_size(MAX_RESPONSE_HEAD)
                .handshake(io)
                .await
                .map_err(NetError::from_hyper)?;
            let task = tokio::spawn(async move {
                let _ = conn.await;
            });
            (Sender::H1(sender), task)
        };
        Ok(HttpConn {
            sender,
            marks,
            socket: connected.socket,
            task,
            tls_info,
            peer: connected.peer,
            closed: false,
        })
    }

    /// Whether the connection can carry another request.
    pub fn is_usable(&self) -> bool {
        !self.closed
            && match &self.sender {
                Sender::H1(s) => !s.is_closed(),
                Sender::H2(s) => !s.is_closed(),
            }
    }

    /// HTTP/2 or not.
    pub fn is_h2(&self) -> bool {
        matches!(self.sender, Sender::H2(_))
    }

    /// The kernel's view of this connection right now.
    pub fn tcp_info(&self) -> Option<TcpInfo> {
        tcp::tcp_info(&self.socket).ok()
    }

    /// Sends one request and reads the whole response, within `timeout`.
    pub async fn send(
        &mut self,
        target: &Target,
        spec: &RequestSpec,
        timeout: Duration,
    ) -> Result<Exchange, NetError> {
        match tokio::time::timeout(timeout, self.exchange(target, spec)).await {
            Ok(r) => r,
            Err(_) => {
                self.closed = true;
                Err(NetError::Timeout {
                    what: "the request",
                    after: timeout,
                })
            }
        }
    }

    async fn exchange(
        &mut self,
        target: &Target,
        spec: &RequestSpec,
    ) -> Result<Exchange, NetError> {
        let request = build_request(target, spec, self.is_h2())?;
        match &mut self.sender {
            Sender::H1(s) => s.ready().await.map_err(NetError::from_hyper)?,
            Sender::H2(s) => s.ready().await.map_err(NetError::from_hyper)?,
        }
        self.marks.arm();
        let start = Instant::now();
        let response = match &mut self.sender {
            Sender::H1(s) => s.send_request(request).await,
            Sender::H2(s) => s.send_request(request).await,
        }
        .map_err(NetError::from_hyper)?;
        let head_at = Instant::now();
        let written_at = self.marks.get().first_write.unwrap_or(start).min(head_at);
        let version = match response.version() {
            Version::HTTP_10 => "HTTP/1.0",
            Version::HTTP_2 => "HTTP/2",
            Version::HTTP_3 => "HTTP/3",
            _ => "HTTP/1.1",
        };
        let status = response.status().as_u16();
        let headers = head_fields(response.headers())?;
        let says_close = response
            .headers()
            .get_all(CONNECTION)
            .iter()
            .any(|v| v.to_str().is_ok_and(|s| s.eq_ignore_ascii_case("close")))
            || (version == "HTTP/1.0"
                && !response
                    .headers()
                    .get(CONNECTION)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|s| s.eq_ignore_ascii_case("keep-alive")));
        let mut body = response.into_body();
        let mut body_bytes = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(NetError::from_hyper)?;
            if let Some(data) = frame.data_ref() {
                body_bytes += data.len() as u64;
            }
        }
        let end = Instant::now();
        if says_close {
            self.closed = true;
        }
        Ok(Exchange {
            status,
            version,
            headers,
            body_bytes,
            send: written_at - start,
            wait: head_at - written_at,
            receive: end - head_at,
            closed_after: says_close,
        })
    }
}

impl Drop for HttpConn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request hyper sends: the one [`RequestHead`] of `spec`, framed for HTTP/2 or
/// HTTP/1.1.
pub(crate) fn build_request(
    target: &Target,
    spec: &RequestSpec,
    h2: bool,
) -> Result<Request<Full<Bytes>>, NetError> {
    let framing = if h2 {
        Framing::Multiplexed
    } else {
        Framing::H1
    };
    let mut req = RequestHead::of(target, spec)
        .to_request(framing, Full::new(spec.body.clone()))
        .map_err(NetError::Protocol)?;
    if h2 {
        *req.version_mut() = Version::HTTP_2;
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cl(values: &[&str]) -> Result<Option<u64>, BadContentLength> {
        let mut map = http::HeaderMap::new();
        for v in values {
            map.append(
                http::header::CONTENT_LENGTH,
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        content_length(&map)
    }

    /// RFC 9110 §8.6 and RFC 9112 §6.3: digits only, repeats equal; the rest
    /// invalid (issue 28 item 10: `load` counted these as 200s, `probe` refused
    /// them).
    #[test]
    fn content_length_has_one_rule() {
        assert_eq!(cl(&[]), Ok(None));
        assert_eq!(cl(&["0"]), Ok(Some(0)));
        assert_eq!(cl(&[" 42 "]), Ok(Some(42)));
        assert_eq!(cl(&["42, 42"]), Ok(Some(42)));
        assert_eq!(cl(&["42", "42"]), Ok(Some(42)));
        assert_eq!(cl(&["18446744073709551615"]), Ok(Some(u64::MAX)));
        for bad in [
            &["-1"][..],
            &["+5"],
            &["1e3"],
            &["0x10"],
            &["18446744073709551616"],
            &["99999999999999999999999999"],
            &["5, 6"],
            &["5", "6"],
            &[""],
            &["5,"],
            &["4 2"],
        ] {
            assert!(cl(bad).is_err(), "{bad:?}");
        }
        assert!(cl(&["-1"]).unwrap_err().to_string().contains("\"-1\""));
    }
}
