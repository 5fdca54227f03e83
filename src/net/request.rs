//! What a request says, decided once for every protocol: [`RequestSpec`] is what the
//! user asked to send (method, `-H` headers, body); [`RequestHead`] is the head every
//! encoder sends for it (probe's hyper HTTP/1.1 and HTTP/2, HTTP/3 over QUIC, the
//! load engine's own HTTP/1.1, HTTP/2 and HTTP/3): the `Host` / `:authority`, the
//! [`DEFAULT_HEADERS`] the user did not override, the user's fields in their order,
//! the fields a protocol forbids left out, `content-length` where a body goes.
//! The encoders only encode what it holds. Nothing here prints.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// What latscope says it is.
pub const USER_AGENT: &str = concat!("latscope/", env!("CARGO_PKG_VERSION"));

/// The request headers every command sends unless `-H` gives its own value (probe,
/// the cache audit, load and the diagnose ramp alike, so behind `Vary:
/// Accept-Encoding` they all measure the same cached object).
pub const DEFAULT_HEADERS: [(&str, &str); 3] = [
    ("user-agent", USER_AGENT),
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

/// `Name: value` as a header field, for tests (the flags' parser with its
/// messages is `config::http::parse_header`).
#[cfg(test)]
pub(crate) fn field(text: &str) -> (HeaderName, HeaderValue) {
    let (n, v) = text.split_once(':').expect("Name: value");
    (
        HeaderName::from_bytes(n.trim().as_bytes()).expect("a header name"),
        HeaderValue::from_str(v.trim()).expect("a header value"),
    )
}
