//! The request and client settings shared by probe, load and diagnose, validated from
//! [`HttpArgs`](crate::cli::HttpArgs): `-H` headers, `--data`, `-X`, `--resolve`,
//! `--cacert`, the HTTP version flags. The settings themselves are network facts and
//! live in `net` ([`RequestSpec`], [`ClientOptions`], [`ResolveOverride`]).

use std::net::IpAddr;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use crate::cli::HttpArgs;
use crate::error::UsageError;
use crate::net::{ClientOptions, HttpVersionPref, RequestSpec, ResolveOverride};

/// Parses `--resolve host:port:addr` (addr may be an IPv6 literal, with or without
/// brackets).
pub fn parse_resolve(text: &str) -> Result<ResolveOverride, UsageError> {
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
        .map(|r| parse_resolve(r))
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
            follow_redirects: args.location.then(|| {
                args.max_redirs
                    .unwrap_or(crate::net::options::MAX_REDIRECTS)
            }),
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
        let r = parse_resolve("example.com:443:127.0.0.1").unwrap();
        assert_eq!(
            crate::net::dns::lookup_override(std::slice::from_ref(&r), "EXAMPLE.com", 443),
            Some("127.0.0.1:443".parse().unwrap())
        );
        assert_eq!(
            crate::net::dns::lookup_override(&[r], "example.com", 80),
            None
        );
        assert!(parse_resolve("example.com:443:[::1]").is_ok());
        assert!(parse_resolve("example.com:x:1.2.3.4").is_err());
    }

    #[test]
    fn method_defaults_to_post_with_data() {
        use std::time::Duration;
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
