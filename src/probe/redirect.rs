//! Following redirects as curl's `-L/--location` does, for the probe, the cache audit
//! and the load's pre-flight: at most `--max-redirs` (the audit: [`MAX_REDIRECTS`]),
//! only to http and https, a loop stops the chain, and once a redirect leaves the
//! first origin (scheme, host or port — RFC 6454 §4) the credentials are not sent on:
//! `Authorization`, `Cookie`, `Proxy-Authorization`, a `Host` the user set, and every
//! header in [`ProbeConfig::secret_headers`]. A 303, and a 301/302 answering a POST,
//! are followed with a GET and no body (RFC 9110 §15.4.2–15.4.4, as curl and
//! browsers do); 307 and 308 keep the method and body (§15.4.8, §15.4.9).
//!
//! Each hop is timed on a connection of its own (what a first visitor pays for it:
//! DNS, connect, TLS and the request), so the chain's cost is priced honestly.

use http::{HeaderName, Method};
use serde::{Deserialize, Serialize};

use crate::net::http::HttpConn;
use crate::net::RequestSpec;
use crate::net::{conn, NetError, Target};
use crate::units::ms;

use super::run::{connect_options, ProbeConfig};
use super::stop::Stop;

/// Redirects the cache audit follows at most (and `--max-redirs`' default).
pub const MAX_REDIRECTS: usize = crate::net::options::MAX_REDIRECTS;
/// Request headers never sent to an origin other than the first (curl's rule).
pub const CROSS_ORIGIN_DROPPED: [&str; 4] =
    ["authorization", "cookie", "proxy-authorization", "host"];

/// One redirect: its status, where it pointed, what it cost (a fresh connection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub url: String,
    pub status: u16,
    pub location: String,
    pub time_ms: f64,
    /// Of `time_ms`, what opening its connection took (DNS, connect, TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_ms: Option<f64>,
}

/// A chain followed before measuring: its hops and the user's headers that were not
/// sent on because the chain left the first origin.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chain {
    pub hops: Vec<Hop>,
    pub dropped_headers: Vec<String>,
}

/// With `-L` (`config.client.follow_redirects`), follows `config.target`'s redirects
/// and returns the configuration that measures the page they end at (its URL, and
/// the request as it is sent there) with the chain; without `-L`, `config` as it is.
pub async fn follow(config: &ProbeConfig, stop: &Stop) -> Result<(ProbeConfig, Chain), NetError> {
    let Some(max) = config.client.follow_redirects else {
        return Ok((config.clone(), Chain::default()));
    };
    let opts = connect_options(config)?;
    let h2c = config.client.version == crate::net::HttpVersionPref::Http2;
    let mut last = config.clone();
    let mut chain = Chain::default();
    loop {
        let opening = async {
            let c = conn::open(&last.target, &opts).await?;
            let setup = ms(c.dns + c.connect + c.tls);
            let mut http = HttpConn::handshake(c, h2c).await?;
            let x = http
                .send(&last.target, &last.request, config.client.timeout)
                .await?;
            Ok::<_, NetError>((setup, x))
        };
        let (setup, x) = tokio::select! {
            r = opening => r?,
            _ = stop.stopped() => return Err(NetError::Interrupted),
        };
        let location = x
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.clone());
        let Some(location) = location.filter(|_| (300..400).contains(&x.status)) else {
            return Ok((last, chain));
        };
        let next = resolve_location(&last.target, &location)?;
        chain.hops.push(Hop {
            url: last.target.url.clone(),
            status: x.status,
            location,
            time_ms: setup + ms(x.send + x.wait + x.receive),
            setup_ms: Some(setup),
        });
        if let Some(why) = redirect_stop(&chain.hops, &next.url, max) {
            return Err(NetError::Redirects(why));
        }
        redirect_request(&mut last.request, x.status);
        if !config.target.same_origin(&next) {
            for name in strip_credentials(&mut last.request, &config.secret_headers) {
                if !chain.dropped_headers.contains(&name) {
                    chain.dropped_headers.push(name);
                }
            }
        }
        last.target = next;
    }
}

/// The request to send after a `status` redirect: a GET without a body after a 303
/// (unless it was a HEAD), and after a 301 or 302 that answered a POST (RFC 9110
/// §15.4.2–15.4.4; curl and browsers); 307 and 308 keep both.
pub(super) fn redirect_request(spec: &mut RequestSpec, status: u16) {
    let to_get = match status {
        303 => spec.method != Method::HEAD,
        301 | 302 => spec.method == Method::POST,
        _ => false,
    };
    if to_get {
        spec.method = Method::GET;
        spec.body = bytes::Bytes::new();
        spec.headers.retain(|(name, _)| {
            !matches!(
                name.as_str(),
                "content-type" | "content-length" | "content-encoding" | "transfer-encoding"
            )
        });
    }
}

/// Removes the headers a redirect to another origin must not carry
/// ([`CROSS_ORIGIN_DROPPED`] and `secret`); returns the names removed.
pub(super) fn strip_credentials(spec: &mut RequestSpec, secret: &[HeaderName]) -> Vec<String> {
    let mut removed = Vec::new();
    spec.headers.retain(|(name, _)| {
        let drop = CROSS_ORIGIN_DROPPED.contains(&name.as_str()) || secret.contains(name);
        if drop {
            removed.push(name.as_str().to_string());
        }
        !drop
    });
    removed
}

/// Why following `hops` (the last pointing to `next`) must stop: a loop (`next` was
/// visited), or a redirect after `max` followed; None to go on.
pub(super) fn redirect_stop(hops: &[Hop], next: &str, max: usize) -> Option<String> {
    let urls = |from: usize| {
        hops[from..]
            .iter()
            .map(|h| h.url.as_str())
            .chain(std::iter::once(next))
            .collect::<Vec<_>>()
            .join(" → ")
    };
    if let Some(i) = hops.iter().position(|h| h.url == next) {
        return Some(format!(
            "stopped after {} redirects (loop: {})",
            hops.len(),
            urls(i)
        ));
    }
    // `hops` holds the redirect just seen: `max` were followed before it.
    (hops.len() > max).then(|| {
        format!(
            "stopped after {max} redirects (chain: … {} → …; --max-redirs raises the limit)",
            urls(hops.len().saturating_sub(3))
        )
    })
}

/// The target a Location header points to (absolute, or relative to `from`); only
/// http and https are followed.
pub(super) fn resolve_location(from: &Target, location: &str) -> Result<Target, NetError> {
    let base = url::Url::parse(&from.url)
        .map_err(|e| NetError::Protocol(format!("bad URL {}: {e}", from.url)))?;
    let next = base.join(location).map_err(|e| {
        NetError::Redirects(format!("redirect Location {location:?} is not a URL: {e}"))
    })?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(NetError::Redirects(format!(
            "redirect to a {}: URL: scheme not followed (only http and https are)",
            next.scheme()
        )));
    }
    Target::parse(next.as_str())
        .map_err(|e| NetError::Protocol(format!("redirect to an unusable URL: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn spec(method: Method) -> RequestSpec {
        RequestSpec {
            method,
            headers: vec![
                (
                    HeaderName::from_static("content-type"),
                    HeaderValue::from_static("text/plain"),
                ),
                (
                    HeaderName::from_static("x-plain"),
                    HeaderValue::from_static("1"),
                ),
            ],
            body: bytes::Bytes::from_static(b"data"),
        }
    }

    /// RFC 9110 §15.4.4: a 303 is followed with a GET; §15.4.2/§15.4.3: a POST
    /// answered 301/302 becomes a GET (curl, browsers); §15.4.8/§15.4.9: 307/308
    /// keep the method and body.
    #[test]
    fn method_after_each_redirect() {
        for (method, status, after, body) in [
            (Method::POST, 303, Method::GET, false),
            (Method::PUT, 303, Method::GET, false),
            (Method::HEAD, 303, Method::HEAD, true),
            (Method::POST, 301, Method::GET, false),
            (Method::POST, 302, Method::GET, false),
            (Method::PUT, 301, Method::PUT, true),
            (Method::POST, 307, Method::POST, true),
            (Method::POST, 308, Method::POST, true),
        ] {
            let mut s = spec(method.clone());
            redirect_request(&mut s, status);
            assert_eq!(s.method, after, "{method} {status}");
            assert_eq!(!s.body.is_empty(), body, "{method} {status}");
            let typed = s.headers.iter().any(|(n, _)| n == "content-type");
            assert_eq!(typed, body, "{method} {status}");
            assert!(s.headers.iter().any(|(n, _)| n == "x-plain"));
        }
    }

    /// Only http and https are followed; a relative Location resolves against the
    /// URL it came from (RFC 9110 §10.2.2).
    #[test]
    fn locations() {
        let from = Target::parse("http://127.0.0.1:8080/blog").unwrap();
        let t = resolve_location(&from, "/blog/").unwrap();
        assert_eq!(t.url, "http://127.0.0.1:8080/blog/");
        let t = resolve_location(&from, "https://127.0.0.2/x").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.2", 443));
        for bad in ["file:///etc/passwd", "ftp://127.0.0.1/", "gopher://x/"] {
            let e = resolve_location(&from, bad).unwrap_err();
            assert!(e.to_string().contains("not followed"), "{bad}: {e}");
        }
    }

    /// A loop stops at once; a chain stops after `max` redirects, saying how to go
    /// further.
    #[test]
    fn chains_are_bounded() {
        let hop = |u: &str| Hop {
            url: u.into(),
            status: 301,
            location: String::new(),
            time_ms: 1.0,
            setup_ms: None,
        };
        let hops = vec![hop("http://a/1"), hop("http://a/2")];
        assert!(redirect_stop(&hops, "http://a/1", 10)
            .unwrap()
            .contains("loop"));
        assert!(redirect_stop(&hops, "http://a/3", 2).is_none());
        let three = vec![hop("http://a/1"), hop("http://a/2"), hop("http://a/3")];
        let why = redirect_stop(&three, "http://a/4", 2).unwrap();
        assert!(why.contains("--max-redirs"), "{why}");
        assert!(redirect_stop(&[], "http://a/1", 0).is_none());
        assert!(redirect_stop(&hops[..1], "http://a/2", 0).is_some());
    }
}
