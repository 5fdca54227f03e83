//! The cache audit's measurements (DESIGN.md, story 4): follow redirects and time
//! each hop, fetch the page in full, repeat the GET to see whether a cache in the path
//! starts answering, and send real conditional GETs (If-None-Match, If-Modified-Since)
//! to see whether they come back 304 with no body. The verdicts live in `diagnose`.
//!
//! Redirects follow curl's rules (`-L`), with the probe's own code (`redirect`): at
//! most [`MAX_REDIRECTS`] (or `--max-redirs`), only to http and https, and once a
//! redirect leaves the first origin (scheme, host or port) the credentials are not
//! sent on — `Authorization`, `Cookie`, `Proxy-Authorization`, a `Host` the user set,
//! and every header in [`ProbeConfig::secret_headers`].

use http::{HeaderName, HeaderValue, Method};
use serde::{Deserialize, Serialize};

use crate::net::http::{Exchange, HttpConn};
use crate::net::RequestSpec;
use crate::net::{conn, NetError, Target};
use crate::units::ms;

use super::redirect::{redirect_request, redirect_stop, resolve_location, strip_credentials};
use super::run::{connect_options, ProbeConfig};
use super::stop::Stop;

pub use super::redirect::{Hop, CROSS_ORIGIN_DROPPED, MAX_REDIRECTS};
/// GETs after the first, to see a cache warm up.
pub const REPEATS: usize = 3;

/// A response as the audit keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body_bytes: u64,
    pub ttfb_ms: f64,
    pub time_ms: f64,
    /// A 304 that carried a body: the next request on its connection read those bytes
    /// as its response head (curl: "Excess found").
    #[serde(default)]
    pub excess_body: bool,
}

impl Seen {
    fn of(x: &Exchange) -> Seen {
        Seen {
            status: x.status,
            headers: x.headers.clone(),
            body_bytes: x.body_bytes,
            ttfb_ms: ms(x.send + x.wait),
            time_ms: ms(x.send + x.wait + x.receive),
            excess_body: false,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the audit saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheObservation {
    /// The URL finally audited (after redirects).
    pub url: String,
    pub method: String,
    /// The request carried no Cookie or Authorization.
    pub anonymous: bool,
    /// The request carried Cookie.
    #[serde(default)]
    pub cookie: bool,
    /// The request carried Authorization.
    #[serde(default)]
    pub authorization: bool,
    /// The names of the cookies the request carried (no values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cookie_names: Vec<String>,
    pub redirects: Vec<Hop>,
    /// The first full response (over a warm connection).
    pub full: Seen,
    /// The repeated GETs, in order.
    pub repeats: Vec<Seen>,
    pub if_none_match: Option<Seen>,
    pub if_modified_since: Option<Seen>,
    /// The user's headers not sent after a redirect left the first origin (names,
    /// lowercase).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_headers: Vec<String>,
}

/// Runs the audit against `config.target`.
pub async fn audit(config: &ProbeConfig, stop: &Stop) -> Result<CacheObservation, NetError> {
    let mut target = config.target.clone();
    // What is sent: the user's request, less its credentials once a redirect
    // leaves the first origin.
    let mut request = config.request.clone();
    let mut dropped_headers = Vec::new();
    let mut redirects = Vec::new();
    let max = config.client.follow_redirects.unwrap_or(MAX_REDIRECTS);
    let opts = connect_options(config)?;
    let h2c = config.client.version == crate::net::HttpVersionPref::Http2;
    let timeout = config.client.timeout;
    let bounded = |stop: &Stop| {
        let stop = stop.clone();
        async move { stop.stopped().await }
    };
    let open = |t: Target| {
        let opts = opts.clone();
        async move {
            let c = conn::open(&t, &opts).await?;
            let (dns, connect, tls) = (c.dns, c.connect, c.tls);
            let http = HttpConn::handshake(c, h2c).await?;
            Ok::<_, NetError>((http, ms(dns + connect + tls)))
        }
    };
    // Follow redirects, each hop on a connection of its own, as a browser would.
    let (mut http, full) = loop {
        let (mut http, setup_ms) = tokio::select! {
            r = open(target.clone()) => r?,
            _ = bounded(stop) => return Err(NetError::Interrupted),
        };
        let x = tokio::select! {
            r = http.send(&target, &request, timeout) => r?,
            _ = bounded(stop) => return Err(NetError::Interrupted),
        };
        let seen = Seen::of(&x);
        let location = seen.header("location").map(str::to_string);
        match location {
            Some(loc) if (300..400).contains(&x.status) => {
                let next = resolve_location(&target, &loc)?;
                redirects.push(Hop {
                    url: target.url.clone(),
                    status: x.status,
                    location: loc,
                    time_ms: setup_ms + seen.time_ms,
                    setup_ms: Some(setup_ms),
                });
                // A redirect is never audited as the page: a loop or a chain too
                // long ends the audit, saying where it went.
                if let Some(why) = redirect_stop(&redirects, &next.url, max) {
                    return Err(NetError::Redirects(why));
                }
                redirect_request(&mut request, x.status);
                if !config.target.same_origin(&next) {
                    for name in strip_credentials(&mut request, &config.secret_headers) {
                        if !dropped_headers.contains(&name) {
                            dropped_headers.push(name);
                        }
                    }
                }
                target = next;
            }
            _ => break (http, seen),
        }
    };
    let mut repeats = Vec::new();
    let conditional = |name: &'static str, value: Option<&str>| {
        value.map(|v| {
            let mut spec = request.clone();
            spec.method = Method::GET;
            if let Ok(v) = HeaderValue::from_str(v) {
                spec.headers.push((HeaderName::from_static(name), v));
            }
            spec
        })
    };
    let inm = conditional("if-none-match", full.header("etag"));
    let ims = conditional("if-modified-since", full.header("last-modified"));
    for _ in 0..REPEATS {
        if !http.is_usable() {
            http = open(target.clone()).await?.0;
        }
        repeats.push(send(&mut http, &target, &request, timeout, stop).await?);
    }
    let mut cond = Vec::new();
    for spec in [inm, ims] {
        match spec {
            None => cond.push(None),
            Some(spec) => {
                if !http.is_usable() {
                    http = open(target.clone()).await?.0;
                }
                let mut seen = send(&mut http, &target, &spec, timeout, stop).await?;
                if seen.status == 304 && !http.is_h2() && http.is_usable() {
                    // A 304 has no body (RFC 9110 §15.4.5); bytes after its head are
                    // read as the next response, which then fails to parse.
                    let canary = send(&mut http, &target, &request, timeout, stop).await;
                    match canary {
                        Err(NetError::Protocol(_)) => seen.excess_body = true,
                        Err(NetError::Interrupted) => return Err(NetError::Interrupted),
                        _ => {}
                    }
                    if seen.excess_body {
                        http = open(target.clone()).await?.0;
                    }
                }
                cond.push(Some(seen));
            }
        }
    }
    let sent = |name| request.headers.iter().any(|(k, _)| k == name);
    let (cookie, authorization) = (
        sent(http::header::COOKIE),
        sent(http::header::AUTHORIZATION),
    );
    let anonymous = !cookie && !authorization;
    let cookie_names = request
        .headers
        .iter()
        .filter(|(k, _)| k == http::header::COOKIE)
        .filter_map(|(_, v)| v.to_str().ok())
        .flat_map(crate::cache::cookies::request_names)
        .collect();
    let mut cond = cond.into_iter();
    Ok(CacheObservation {
        url: target.url.clone(),
        method: request.method.to_string(),
        anonymous,
        cookie,
        authorization,
        cookie_names,
        redirects,
        full,
        repeats,
        if_none_match: cond.next().flatten(),
        if_modified_since: cond.next().flatten(),
        dropped_headers,
    })
}

/// One request over `http`, bounded by the timeout and the stop flag.
async fn send(
    http: &mut HttpConn,
    target: &Target,
    spec: &RequestSpec,
    timeout: std::time::Duration,
    stop: &Stop,
) -> Result<Seen, NetError> {
    tokio::select! {
        r = http.send(target, spec, timeout) => r.map(|x| Seen::of(&x)),
        _ = stop.stopped() => Err(NetError::Interrupted),
    }
}
