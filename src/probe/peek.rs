//! A peek at what the server says about itself, for stack detection (issue 32): at
//! most two extra GETs to the audited origin — the page with its HTML kept, and a
//! path that cannot exist (its 404 page is often the server's own) — each over
//! HTTP/1.1 on a connection of its own, read raw so the header names keep their case
//! (HAProxy 2 writes them all lowercase), `Accept-Encoding: identity` so the HTML
//! needs no decoding, bounded to [`KEEP`] bytes of body and [`TIMEOUT`] each. Nothing
//! here judges; `diagnose::stack` does.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::net::{conn, HttpVersionPref, NetError, Target};

use super::run::{connect_options, ProbeConfig};
use super::stop::Stop;

/// Body bytes kept per response: enough for the `<head>` of a page.
pub const KEEP: usize = 64 * 1024;
/// Each request's bound (or the client's timeout, if shorter).
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The path asked for the 404 page.
pub const MISSING_PATH: &str = "/latscope-stack-check-404";

/// One response as the peek read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Peeked {
    pub status: u16,
    /// Header fields, names in the case the server wrote them.
    pub headers: Vec<(String, String)>,
    /// The first [`KEEP`] bytes of the body, chunked coding removed, as text.
    pub body: String,
    /// It answered [`MISSING_PATH`].
    pub error_page: bool,
}

/// The page at `target`, then the 404 page of its origin. Requests that fail are left
/// out; the error of the first failure is returned beside what was read.
pub async fn peek(config: &ProbeConfig, stop: &Stop) -> (Vec<Peeked>, Option<String>) {
    let mut cfg = config.clone();
    cfg.client.version = HttpVersionPref::Http1;
    cfg.client.timeout = cfg.client.timeout.min(TIMEOUT);
    let mut out = Vec::new();
    let mut error = None;
    let missing = Target {
        url: format!(
            "{}://{}{MISSING_PATH}",
            scheme(&config.target),
            config.target.authority()
        ),
        path_and_query: MISSING_PATH.to_string(),
        ..config.target.clone()
    };
    for (target, error_page) in [(config.target.clone(), false), (missing, true)] {
        if stop.is_stopped() {
            break;
        }
        let got = tokio::select! {
            r = tokio::time::timeout(cfg.client.timeout, one(&cfg, &target)) => match r {
                Ok(r) => r,
                Err(_) => Err(NetError::Timeout { what: "the stack check", after: cfg.client.timeout }),
            },
            _ = stop.stopped() => Err(NetError::Interrupted),
        };
        match got {
            Ok((status, headers, body)) => out.push(Peeked {
                status,
                headers,
                body,
                error_page,
            }),
            Err(e) => {
                error.get_or_insert_with(|| format!("{}: {e}", target.url));
            }
        }
    }
    (out, error)
}

/// One raw HTTP/1.1 GET with `Connection: close`.
async fn one(
    cfg: &ProbeConfig,
    target: &Target,
) -> Result<(u16, Vec<(String, String)>, String), NetError> {
    let opts = connect_options(cfg)?;
    let c = conn::open(target, &opts).await?;
    let mut stream = c.stream;
    let mut req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\n",
        target.path_and_query,
        default_authority(target)
    );
    let skip = [
        "host",
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
    ];
    let mut has_ua = false;
    for (k, v) in &cfg.request.headers {
        if skip.contains(&k.as_str()) {
            continue;
        }
        has_ua |= k == http::header::USER_AGENT;
        if let Ok(v) = v.to_str() {
            req.push_str(&format!("{}: {v}\r\n", k.as_str()));
        }
    }
    if !has_ua {
        req.push_str(&format!(
            "User-Agent: {}\r\n",
            crate::net::request::USER_AGENT
        ));
    }
    req.push_str("Accept: text/html,*/*\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    let limit = crate::net::http::MAX_RESPONSE_HEAD + KEEP;
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    let (status, headers, body_at) = loop {
        let n = stream.read(&mut chunk).await.map_err(io)?;
        buf.extend_from_slice(&chunk[..n]);
        let mut fields = [httparse::EMPTY_HEADER; 128];
        let mut resp = httparse::Response::new(&mut fields);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(at)) => {
                let headers = resp
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (resp.code.unwrap_or(0), headers, at);
            }
            Ok(httparse::Status::Partial) if n > 0 && buf.len() < limit => continue,
            Ok(httparse::Status::Partial) => {
                return Err(NetError::Protocol("the response head did not end".into()))
            }
            Err(e) => return Err(NetError::Protocol(format!("bad response head: {e}"))),
        }
    };
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked")
    });
    // The body ends at its length (or the last chunk), not only at the close: a
    // server that keeps the connection despite `Connection: close` must not hold
    // the check until its timeout.
    let want = if matches!(status, 100..=199 | 204 | 304) {
        0
    } else if chunked {
        KEEP
    } else {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .map_or(KEEP, |n| n.min(KEEP))
    };
    while buf.len() < body_at + want && !(chunked && last_chunk(&buf[body_at..])) {
        let n = stream.read(&mut chunk).await.map_err(io)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let raw = &buf[body_at..buf.len().min(body_at + KEEP)];
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

/// The Host field: the authority without a default port.
fn default_authority(t: &Target) -> String {
    let default = matches!((scheme(t), t.port), ("http", 80) | ("https", 443));
    if default {
        if t.host.contains(':') {
            format!("[{}]", t.host)
        } else {
            t.host.clone()
        }
    } else {
        t.authority()
    }
}

fn scheme(t: &Target) -> &'static str {
    if t.scheme == crate::net::Scheme::Https {
        "https"
    } else {
        "http"
    }
}

/// Whether a chunked body read so far ends with its last chunk (no trailers).
fn last_chunk(body: &[u8]) -> bool {
    body == b"0\r\n\r\n" || body.ends_with(b"\r\n0\r\n\r\n")
}

fn io(e: std::io::Error) -> NetError {
    NetError::Protocol(format!("reading the stack check's response: {e}"))
}

/// The data of a chunked body (as far as it goes: a prefix may end mid-chunk).
pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&b[..eol]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
        else {
            break;
        };
        if size == 0 {
            break;
        }
        let data = &b[eol + 2..];
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        if take < size || data.len() < size + 2 {
            break;
        }
        b = &data[size + 2..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunked body is joined; a prefix cut mid-chunk keeps what it has.
    #[test]
    fn dechunks() {
        assert_eq!(
            dechunk(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
            b"hello world"
        );
        assert_eq!(dechunk(b"5\r\nhel"), b"hel");
        assert_eq!(dechunk(b"zz\r\n"), b"");
    }

    /// A chunked body ends at its last chunk, not before.
    #[test]
    fn last_chunk_ends_the_body() {
        assert!(last_chunk(b"5\r\nhello\r\n0\r\n\r\n"));
        assert!(last_chunk(b"0\r\n\r\n"));
        assert!(!last_chunk(b"5\r\nhello\r\n"));
        assert!(!last_chunk(b"5\r\nhel"));
    }
}
