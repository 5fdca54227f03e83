//! One request head, five encoders: probe's hyper HTTP/1.1 and HTTP/2, HTTP/3 over
//! QUIC, and the load engine's own HTTP/1.1, HTTP/2 and HTTP/3 all send the same
//! `Host` / `:authority`, the same default headers (each overridden by `-H` the same
//! way), the user's fields, and `content-length` with a body; the multiplexed ones
//! leave out the connection-specific fields (RFC 9113 §8.2.2, RFC 9114 §4.2).

use bytes::Bytes;

use super::hpack::Decoder;
use super::tests::All;
use super::Request;
use crate::load::plan::Endpoint;
use crate::net::{RequestSpec, Target};

/// What one encoder sent: the authority and the fields (lowercase names), in order.
#[derive(Debug)]
struct Sent {
    who: &'static str,
    authority: String,
    fields: Vec<(String, String)>,
}

impl Sent {
    fn get(&self, name: &str) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// From an `http::Request` (hyper and h3): `Host` is the authority in HTTP/1.1, the
/// URI's authority (`:authority`) when multiplexed.
fn from_http(who: &'static str, r: &http::Request<impl Sized>) -> Sent {
    let mut fields = Vec::new();
    let mut authority = r.uri().authority().map(|a| a.to_string());
    for (n, v) in r.headers() {
        let v = v.to_str().unwrap().to_string();
        if n == http::header::HOST {
            authority = Some(v);
        } else {
            fields.push((n.as_str().to_string(), v));
        }
    }
    Sent {
        who,
        authority: authority.expect("an authority"),
        fields,
    }
}

/// From the load engine's HTTP/1.1 bytes.
fn from_h1(bytes: &[u8]) -> Sent {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    assert!(req.parse(bytes).unwrap().is_complete());
    let mut authority = None;
    let mut fields = Vec::new();
    for h in req.headers.iter() {
        let (n, v) = (
            h.name.to_ascii_lowercase(),
            String::from_utf8(h.value.to_vec()).unwrap(),
        );
        if n == "host" {
            assert!(authority.is_none(), "one Host");
            authority = Some(v);
        } else {
            fields.push((n, v));
        }
    }
    Sent {
        who: "load h1",
        authority: authority.expect("Host"),
        fields,
    }
}

/// From decoded pairs (pseudo-fields first, as HPACK and QPACK carry them).
fn from_pairs(who: &'static str, all: Vec<(String, String)>) -> Sent {
    let authority = all
        .iter()
        .find(|(n, _)| n == ":authority")
        .map(|(_, v)| v.clone())
        .expect(":authority");
    Sent {
        who,
        authority,
        fields: all
            .into_iter()
            .filter(|(n, _)| !n.starts_with(':'))
            .collect(),
    }
}

/// From the load engine's HTTP/2 frames (one HEADERS frame: the block is small).
fn from_h2(r: &Request) -> Sent {
    let block = &r.plain.bytes()[super::frame::HEAD_LEN..];
    let mut all = All::default();
    Decoder::default().decode(block, &mut all).unwrap();
    from_pairs("load h2", all.0)
}

/// Every encoder's head for one request: POST with a body, `-H` fields that
/// override the authority and one default, a custom field, and connection-specific
/// fields.
fn every_encoder(headers: &[&str]) -> Vec<(Sent, bool)> {
    let target = Target::parse("https://127.0.0.1:8443/a?b=1").unwrap();
    let headers: Vec<_> = headers
        .iter()
        .map(|h| crate::net::request::field(h))
        .collect();
    let body = Bytes::from_static(b"hi");
    let spec = RequestSpec {
        method: http::Method::POST,
        headers: headers.clone(),
        body: body.clone(),
    };
    let endpoint = Endpoint {
        name: "a".into(),
        method: http::Method::POST,
        path_and_query: "/a?b=1".into(),
        headers,
        body,
        weight: 1,
    };
    let h1 = crate::net::http::build_request(&target, &spec, false).unwrap();
    let h2 = crate::net::http::build_request(&target, &spec, true).unwrap();
    let h3 = crate::net::quic::build_request(&target, &spec).unwrap();
    let load_h3 = crate::load::http3::H3Request::new(&target, &endpoint)
        .unwrap()
        .fields();
    // (what was sent, multiplexed)
    vec![
        (from_http("probe h1", &h1), false),
        (from_http("probe h2", &h2), true),
        (from_http("probe h3", &h3), true),
        (
            from_h1(&crate::load::http1::encode(&target, &endpoint, true)),
            false,
        ),
        (from_h2(&Request::new(&target, &endpoint).unwrap()), true),
        (from_pairs("load h3", load_h3), true),
    ]
}

/// The defaults, the target's authority, `content-length` with a body, in the same
/// order everywhere.
#[test]
fn every_protocol_sends_the_same_authority_and_default_headers() {
    let all = every_encoder(&["X-Trace: 7"]);
    for (s, _) in &all {
        assert_eq!(s.authority, "127.0.0.1:8443", "{s:?}");
        let names: Vec<&str> = s.fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "user-agent",
                "accept",
                "accept-encoding",
                "x-trace",
                "content-length"
            ],
            "{}",
            s.who
        );
        assert_eq!(
            s.get("user-agent"),
            [crate::net::request::USER_AGENT],
            "{}",
            s.who
        );
        assert_eq!(s.get("accept"), ["*/*"], "{}", s.who);
        assert_eq!(s.get("accept-encoding"), ["gzip, br"], "{}", s.who);
        assert_eq!(s.get("content-length"), ["2"], "{}", s.who);
    }
}

/// `-H Host` is the authority everywhere (`Host` in HTTP/1.1, `:authority`
/// multiplexed, never both); `-H` replaces a default everywhere and keeps its
/// repeats; connection-specific fields go only over HTTP/1.1.
#[test]
fn every_protocol_takes_the_users_fields_the_same_way() {
    let all = every_encoder(&[
        "Host: override.test",
        "Accept: text/plain",
        "X-Tag: a",
        "X-Tag: b",
        "Connection: keep-alive",
        "TE: gzip",
    ]);
    for (s, multiplexed) in &all {
        assert_eq!(s.authority, "override.test", "{s:?}");
        assert!(s.get("host").is_empty(), "{s:?}");
        assert_eq!(s.get("accept"), ["text/plain"], "{}", s.who);
        assert_eq!(s.get("accept-encoding"), ["gzip, br"], "{}", s.who);
        assert_eq!(s.get("x-tag"), ["a", "b"], "{}", s.who);
        let connection_specific = [s.get("connection"), s.get("te")].concat();
        if *multiplexed {
            assert!(connection_specific.is_empty(), "{s:?}");
        } else {
            assert_eq!(connection_specific, ["keep-alive", "gzip"], "{}", s.who);
        }
    }
}
