//! The load engine's own HTTP/3 request layer (RFC 9114) over quinn's streams, as
//! `h2` is for HTTP/2: each endpoint's request is encoded once (QPACK from the
//! static table and literals, `qpack`; framed as HEADERS and DATA, `frame`) and
//! written per request as one shared buffer; responses are read chunk by chunk
//! with QPACK decoding only what a request's outcome needs. The `h3` crate (still
//! the probe's) spent 12 % of an HTTP/3 run's CPU re-encoding every request's
//! header fields and allocating per request (bench/RESULTS.md, "HTTP/3: where
//! latscope's CPU goes").
//!
//! `frame` framing and a request stream's response (sans I/O), `control` the
//! server's control stream (sans I/O), `qpack` field compression without a
//! dynamic table, `link` the connection over quinn and [`exchange`].

mod control;
mod frame;
mod link;
mod qpack;

pub use link::{exchange, Link};

use bytes::Bytes;

use super::plan::Endpoint;
use crate::net::request::Framing;
use crate::net::Target;

/// One endpoint's request as it goes on a stream: a HEADERS frame, and a DATA
/// frame with the body when there is one.
#[derive(Debug, Clone)]
pub struct Request {
    wire: Bytes,
    /// HEAD: no body comes back.
    pub head: bool,
    /// The field section's size as SETTINGS_MAX_FIELD_SECTION_SIZE counts it
    /// (names, values and 32 octets a field: RFC 9114 §4.2.2).
    field_size: u64,
}

impl Request {
    /// Encodes endpoint `e` of `target`: the pseudo-headers and fields of its one
    /// [`RequestHead`](crate::net::RequestHead) (`:authority` from a `Host` header when
    /// given, the defaults, `content-length` with a body, no connection-specific
    /// field: RFC 9114 §4.2).
    pub fn new(target: &Target, e: &Endpoint) -> Result<Request, String> {
        let head = e.head(target);
        if !head.path.starts_with('/') && head.path != "*" {
            return Err(format!("{}: not a path", head.path));
        }
        let pseudo = [
            (&b":method"[..], head.method.as_str().as_bytes()),
            (b":scheme", head.scheme.as_bytes()),
            (b":authority", head.authority.as_bytes()),
            (b":path", head.path.as_bytes()),
        ];
        let fields = head
            .fields(Framing::Multiplexed)
            .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
        let all: Vec<(&[u8], &[u8])> = pseudo.into_iter().chain(fields).collect();
        let field_size = all
            .iter()
            .map(|(n, v)| (n.len() + v.len() + 32) as u64)
            .sum();
        let section = qpack::encode(all);
        let mut wire = Vec::with_capacity(section.len() + e.body.len() + 16);
        frame::put_frame(&mut wire, frame::HEADERS, &section);
        if !e.body.is_empty() {
            frame::put_frame(&mut wire, frame::DATA, &e.body);
        }
        Ok(Request {
            wire: Bytes::from(wire),
            head: e.method == http::Method::HEAD,
            field_size,
        })
    }
}

#[cfg(test)]
impl Request {
    /// The fields its HEADERS frame carries, decoded (tests).
    pub fn fields(&self) -> Vec<(String, String)> {
        headers_of(&self.wire)
    }
}

/// The fields of the HEADERS frame at the start of `wire`, decoded (tests).
#[cfg(test)]
fn headers_of(wire: &[u8]) -> Vec<(String, String)> {
    #[derive(Default)]
    struct All(Vec<(String, String)>);
    impl crate::load::fields::Sink for All {
        fn wants(&self, _: &[u8]) -> bool {
            true
        }
        fn field(&mut self, name: &[u8], value: &[u8], _: usize) {
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            self.0.push((s(name), s(value)));
        }
    }
    let (kind, len, n) = frame::frame_head(wire).unwrap();
    assert_eq!(kind, frame::HEADERS);
    let mut all = All::default();
    qpack::Decoder::default()
        .decode(&wire[n..n + len as usize], &mut all)
        .unwrap();
    all.0
}

#[cfg(test)]
mod link_tests;
#[cfg(test)]
mod tests;

/// Fuzzing entry point (`fuzz/`, [`crate::fuzzing`]): `data` as a request
/// stream's bytes, fed in pieces whose sizes come from the data (to a HEAD
/// request or not, as the data says). Never panics; what it counts is no more than
/// what it was fed and one head's fields; a response that finishes has a final
/// status.
#[doc(hidden)]
pub fn fuzz_response(data: &[u8]) {
    let (split, data) = data.split_first().map_or((7, data), |(s, d)| (*s, d));
    let piece = usize::from(split % 64) + 1;
    let mut r = frame::Response::new(false, split & 0x80 != 0);
    for chunk in data.chunks(piece) {
        if r.feed(chunk, None).is_err() {
            return;
        }
    }
    // The body, and the final head's fields (at most the section's limit).
    assert!(r.partial().bytes <= (data.len() + frame::MAX_SECTION) as u64);
    if let Ok(o) = r.finish() {
        assert!((200..=999).contains(&o.status), "{}", o.status);
    }
}

/// Fuzzing entry point: `data` as the server's control stream, in pieces; what it
/// buffers stays bounded.
#[doc(hidden)]
pub fn fuzz_control(data: &[u8]) {
    let (split, data) = data.split_first().map_or((7, data), |(s, d)| (*s, d));
    let piece = usize::from(split % 64) + 1;
    let mut c = control::Control::default();
    for chunk in data.chunks(piece) {
        if c.feed(chunk).is_err() {
            return;
        }
        assert!(c.buffered() <= control::MAX_CONTROL_FRAME as usize + 16 + piece);
    }
}

/// Fuzzing entry point: `data` as QPACK field sections (split where the data says)
/// through one decoder; every section decodes or is refused, and one that decodes
/// encodes back to the same fields.
#[doc(hidden)]
pub fn fuzz_qpack(data: &[u8]) {
    #[derive(Default)]
    struct All(Vec<(Vec<u8>, Vec<u8>)>);
    impl crate::load::fields::Sink for All {
        fn wants(&self, _: &[u8]) -> bool {
            true
        }
        fn field(&mut self, name: &[u8], value: &[u8], len: usize) {
            assert_eq!(value.len(), len);
            self.0.push((name.to_vec(), value.to_vec()));
        }
    }
    let mut d = qpack::Decoder::default();
    for section in data.split(|&b| b == 0xfe) {
        let mut all = All::default();
        if d.decode(section, &mut all).is_ok() {
            let again = qpack::encode(all.0.iter().map(|(n, v)| (&n[..], &v[..])));
            let mut back = All::default();
            d.decode(&again, &mut back)
                .expect("our own encoding decodes");
            assert_eq!(back.0, all.0);
        }
    }
}
