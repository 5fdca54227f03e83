//! What a request says, decided once for every protocol: [`RequestSpec`] is what the
//! user asked to send (method, `-H` headers, body); [`RequestHead`] is the head every
//! encoder sends for it (probe's hyper HTTP/1.1 and HTTP/2, HTTP/3 over QUIC, the
//! load engine's own HTTP/1.1, HTTP/2 and HTTP/3): the `Host` / `:authority`, the
//! [`DEFAULT_HEADERS`] the user did not override, the user's fields in their order,
//! the fields a protocol forbids left out, `content-length` where a body goes.
//! The encoders only encode what it holds. Nothing here prints.

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderName, HeaderValue, Method, Request, Uri};

use super::{Scheme, Target};

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

impl RequestSpec {
    /// A request with these fields (latscope's own: lowercase names, fixed values).
    pub fn with_fields(
        method: Method,
        fields: &[(&'static str, &'static str)],
        body: Bytes,
    ) -> Self {
        RequestSpec {
            method,
            headers: fields
                .iter()
                .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
                .collect(),
            body,
        }
    }
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

/// Fields that HTTP/2 and HTTP/3 forbid (connection-specific: RFC 9113 §8.2.2, RFC
/// 9114 §4.2); `te` is allowed there only as `te: trailers`.
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// How the head goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// HTTP/1.1: the authority is the `Host` field, every field is sent.
    H1,
    /// HTTP/2 and HTTP/3: the authority is `:authority`, connection-specific fields
    /// are left out.
    Multiplexed,
}

/// The head of one request, decided once for every protocol: what each encoder
/// sends, and all it may send. Built once per endpoint (the load engine encodes it
/// before the run), never per request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestHead {
    pub method: Method,
    /// `http` or `https` (`:scheme`).
    pub scheme: &'static str,
    /// `Host` / `:authority`: the user's `-H 'Host: …'` when given, else the
    /// target's host and port (the port left out when it is the scheme's default).
    pub authority: String,
    /// Path and query (`:path`, or the HTTP/1.1 request target).
    pub path: String,
    /// Every field but `Host`, in the order sent: the [`DEFAULT_HEADERS`] the user
    /// did not give, the user's fields in their order (repeats kept), then
    /// `content-length` when a body goes and the user gave none.
    fields: Vec<(HeaderName, HeaderValue)>,
}

impl RequestHead {
    /// The head of a request for `path` on `target` with the user's `headers` and a
    /// body of `body_len` bytes.
    pub fn new(
        target: &Target,
        method: &Method,
        path: &str,
        headers: &[(HeaderName, HeaderValue)],
        body_len: usize,
    ) -> RequestHead {
        let given = |n: &str| headers.iter().any(|(h, _)| h.as_str() == n);
        let authority = headers
            .iter()
            .find(|(h, _)| *h == HOST)
            .and_then(|(_, v)| v.to_str().ok())
            .map_or_else(|| target.authority(), str::to_string);
        let mut fields = Vec::with_capacity(DEFAULT_HEADERS.len() + headers.len() + 1);
        for (name, value) in DEFAULT_HEADERS {
            if !given(name) {
                fields.push((
                    HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                ));
            }
        }
        fields.extend(headers.iter().filter(|(h, _)| *h != HOST).cloned());
        // A body, or a method that expects one: its length, so no encoder chunks it.
        let body_method = !matches!(method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS");
        if (body_len > 0 || body_method) && !given("content-length") {
            fields.push((http::header::CONTENT_LENGTH, HeaderValue::from(body_len)));
        }
        RequestHead {
            method: method.clone(),
            scheme: if target.scheme == Scheme::Https {
                "https"
            } else {
                "http"
            },
            authority,
            path: path.to_string(),
            fields,
        }
    }

    /// The head of `spec` sent to `target` (its path and query).
    pub fn of(target: &Target, spec: &RequestSpec) -> RequestHead {
        RequestHead::new(
            target,
            &spec.method,
            &target.path_and_query,
            &spec.headers,
            spec.body.len(),
        )
    }

    /// The fields to send with `framing`, in order (`Host` is not among them: it is
    /// [`RequestHead::authority`]).
    pub fn fields(&self, framing: Framing) -> impl Iterator<Item = (&HeaderName, &HeaderValue)> {
        self.fields
            .iter()
            .filter(move |(n, v)| framing == Framing::H1 || allowed_multiplexed(n, v))
            .map(|(n, v)| (n, v))
    }

    /// Whether the head carries field `name` (lowercase).
    pub fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|(h, _)| h.as_str() == name)
    }

    /// The head as an `http::Request` (for hyper and h3): with [`Framing::H1`] the
    /// request target is the path and `Host` the first field; multiplexed, the URI is
    /// absolute so the client takes `:scheme` and `:authority` from it.
    pub fn to_request<B>(&self, framing: Framing, body: B) -> Result<Request<B>, String> {
        let uri: Uri = match framing {
            Framing::H1 => self.path.parse(),
            Framing::Multiplexed => {
                format!("{}://{}{}", self.scheme, self.authority, self.path).parse()
            }
        }
        .map_err(|e| format!("cannot build the request: {e}"))?;
        let mut req = Request::builder()
            .method(self.method.clone())
            .uri(uri)
            .body(body)
            .map_err(|e| format!("cannot build the request: {e}"))?;
        let headers = req.headers_mut();
        if framing == Framing::H1 {
            let host = HeaderValue::from_str(&self.authority)
                .map_err(|e| format!("bad Host header: {e}"))?;
            headers.insert(HOST, host);
        }
        for (n, v) in self.fields(framing) {
            headers.append(n.clone(), v.clone());
        }
        Ok(req)
    }
}

/// Whether HTTP/2 and HTTP/3 may carry the field.
fn allowed_multiplexed(name: &HeaderName, value: &HeaderValue) -> bool {
    let n = name.as_str();
    !CONNECTION_SPECIFIC.contains(&n)
        && (n != "te" || value.as_bytes().eq_ignore_ascii_case(b"trailers"))
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
