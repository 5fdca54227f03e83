//! The request and client settings shared by probe, load and diagnose, validated from
//! [`HttpArgs`](crate::cli::HttpArgs).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use crate::cli::HttpArgs;
use crate::error::UsageError;

/// Which HTTP version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersionPref {
    /// HTTP/1.1 on http; ALPN (h2, http/1.1) on https.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only (h2c prior knowledge on http).
    Http2,
}

/// A `--resolve host:port:addr` override.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOverride {
    pub host: String,
    pub port: u16,
    pub addr: IpAddr,
}

impl ResolveOverride {
    /// Parses `host:port:addr` (addr may be an IPv6 literal, with or without brackets).
    pub fn parse(text: &str) -> Result<Self, UsageError> {
        let bad = || {
            UsageError::new(format!(
                "--resolve '{text}': expected HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1"
            ))
        };
        let mut parts = text.splitn(3, ':');
        let host = parts.next().filter(|h| !h.is_empty()).ok_or_else(bad)?;
        let port: u16 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let addr_text = parts.next().ok_or_else(bad)?;
        let addr: IpAddr = addr_text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| bad())?;
        Ok(ResolveOverride {
            host: host.to_ascii_lowercase(),
            port,
            addr,
        })
    }
}

/// Finds the `--resolve` override for `host:port`, if any.
pub fn lookup_override(overrides: &[ResolveOverride], host: &str, port: u16) -> Option<SocketAddr> {
    overrides
        .iter()
        .find(|o| o.port == port && o.host.eq_ignore_ascii_case(host))
        .map(|o| SocketAddr::new(o.addr, port))
}

/// The request headers every command sends unless `-H` gives its own value (probe,
/// the cache audit, load and the diagnose ramp alike, so behind `Vary:
/// Accept-Encoding` they all measure the same cached object).
pub const DEFAULT_HEADERS: [(&str, &str); 3] = [
    (
        "user-agent",
        concat!("latscope/", env!("CARGO_PKG_VERSION")),
    ),
    ("accept", "*/*"),
    ("accept-encoding", "gzip, br"),
];

/// What to send.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: Method,
    /// Extra headers, in the order given.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }
}

/// How to connect.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub timeout: Duration,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    pub resolve: Vec<ResolveOverride>,
    pub version: HttpVersionPref,
    /// HTTP/3 over QUIC (`--http3`; `version` then stays `Auto`): see `net::quic`.
    pub http3: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(60),
            insecure: false,
            cacert: None,
            resolve: Vec::new(),
            version: HttpVersionPref::Auto,
            http3: false,
        }
    }
}

/// Parses one `-H 'Name: value'`.
pub fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), UsageError> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| UsageError::new(format!("-H '{text}': expected 'Name: value'")))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        UsageError::new(format!(
            "-H '{text}': '{}' is not a valid header name",
            name.trim()
        ))
    })?;
    let value = HeaderValue::from_str(value.trim()).map_err(|_| {
        UsageError::new(format!(
            "-H '{text}': the value has characters a header cannot carry"
        ))
    })?;
    Ok((name, value))
}

/// The default cap on a request body read with `--data @FILE`: 1 GiB
/// (`--max-body` raises it).
pub const DEFAULT_MAX_BODY: u64 = 1 << 30;

/// Reads `--data @FILE` up to `limit` bytes: a device (`/dev/zero`, `/dev/urandom`)
/// is refused, as is a file larger than the limit, before anything is read; a pipe
/// is read until the limit and refused past it.
pub fn read_body(path: &str, limit: u64) -> Result<Bytes, UsageError> {
    use crate::input::{read_capped, InputError};
    read_capped(std::path::Path::new(path), limit)
        .map(Bytes::from)
        .map_err(|e| {
            let why = match e {
                InputError::TooLarge { .. } => format!(
                    "larger than the request body limit of {limit} bytes (raise it with --max-body SIZE)"
                ),
                InputError::Device => {
                    "a device, not a file: a request body must end (give a file or a pipe)".into()
                }
                e => e.to_string(),
            };
            UsageError::new(format!("--data @{path}: {why}"))
        })
}

/// Builds the request and client settings from the shared flags.
pub fn from_args(args: &HttpArgs) -> Result<(RequestSpec, ClientOptions), UsageError> {
    let headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match &args.data {
        None => Bytes::new(),
        Some(d) if d.starts_with('@') => read_body(&d[1..], args.max_body)?,
        Some(d) => Bytes::from(d.clone()),
    };
    let method = match &args.method {
        Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| UsageError::new(format!("-X '{m}' is not a valid method")))?,
        None if args.data.is_some() => Method::POST,
        None => Method::GET,
    };
    if args.timeout.is_zero() {
        return Err(UsageError::new("--timeout must be more than 0"));
    }
    if let Some(ca) = &args.cacert {
        if !ca.exists() {
            return Err(UsageError::new(format!(
                "--cacert {}: no such file",
                ca.display()
            )));
        }
        // A file without a certificate is a bad flag value (exit 2), not a failed run.
        crate::net::tls::read_pem_certs(ca).map_err(|e| UsageError::new(e.to_string()))?;
    }
    let resolve = args
        .resolve
        .iter()
        .map(|r| ResolveOverride::parse(r))
        .collect::<Result<Vec<_>, _>>()?;
    let version = if args.http2 {
        HttpVersionPref::Http2
    } else if args.http1_1 {
        HttpVersionPref::Http1
    } else {
        HttpVersionPref::Auto
    };
    Ok((
        RequestSpec {
            method,
            headers,
            body,
        },
        ClientOptions {
            timeout: args.timeout,
            insecure: args.insecure,
            cacert: args.cacert.clone(),
            resolve,
            version,
            http3: args.http3,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_resolve() {
        let (n, v) = parse_header("X-Test:  hello ").unwrap();
        assert_eq!((n.as_str(), v.to_str().unwrap()), ("x-test", "hello"));
        assert!(parse_header("nocolon").is_err());
        assert!(parse_header("bad name: x").is_err());
        let r = ResolveOverride::parse("example.com:443:127.0.0.1").unwrap();
        assert_eq!(
            lookup_override(std::slice::from_ref(&r), "EXAMPLE.com", 443),
            Some("127.0.0.1:443".parse().unwrap())
        );
        assert_eq!(lookup_override(&[r], "example.com", 80), None);
        assert!(ResolveOverride::parse("example.com:443:[::1]").is_ok());
        assert!(ResolveOverride::parse("example.com:x:1.2.3.4").is_err());
    }

    #[test]
    fn method_defaults_to_post_with_data() {
        let args = HttpArgs {
            data: Some("a=1".into()),
            timeout: Duration::from_secs(1),
            ..Default::default()
        };
        let (req, _) = from_args(&args).unwrap();
        assert_eq!(req.method, Method::POST);
        assert_eq!(&req.body[..], b"a=1");
    }
}
