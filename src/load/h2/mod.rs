//! The load engine's own HTTP/2 client (RFC 9113), as `http1` is for HTTP/1.1:
//! each endpoint's request is split once into its header fields, indexed in each
//! connection's HPACK table the first time they are sent and kept there as ready
//! frames (only the stream id changes per request, `encode`), responses are read frame by frame with HPACK decoding
//! only what a request's outcome needs, and nothing is allocated per request.
//! hyper's client spent ~78 % of the load engine's CPU in the `h2` crate.
//!
//! `frame` framing, `huffman` and `hpack` header compression, `encode` the request
//! side of HPACK per connection, `conn` the
//! connection's state (sans I/O: bytes in, frames and finished streams out),
//! `link` drives a connection on the worker thread's runtime, shared by the
//! `--streams` VUs of a slot.

mod conn;
mod encode;
mod frame;
pub(super) mod hpack;
pub(super) mod huffman;
mod link;

pub use conn::{MAX_CONTINUATIONS, MAX_PENDING_ACKS};
pub use link::{handshake, Exchange, H2Slot, Slot};

use bytes::Bytes;

use self::encode::{Field, Framed};
use super::plan::Endpoint;
use crate::net::request::Framing;
use crate::net::Target;

/// One endpoint's request, split once: its header fields (static-table matches
/// encoded for good, the rest left to each connection's dynamic table, `encode`),
/// the same block framed without the table, and the body sent as DATA.
#[derive(Debug, Clone)]
pub struct Request {
    fields: Vec<Field>,
    /// The block without the dynamic table, framed (HEADERS, CONTINUATION).
    plain: Framed,
    body: Bytes,
    /// The endpoint's index: its block's place in a connection's cache.
    key: usize,
    /// HEAD: no body comes back.
    pub head: bool,
}

impl Request {
    /// Encodes endpoint `e` of `target`: the pseudo-headers and fields of its one
    /// [`RequestHead`](crate::net::RequestHead) (`:authority` from a `Host` header when
    /// given, the defaults, `content-length` with a body, no connection-specific field).
    /// Its block is not cached per connection (see [`Request::keyed`]).
    pub fn new(target: &Target, e: &Endpoint) -> Result<Request, String> {
        let head = e.head(target);
        if !head.path.starts_with('/') && head.path != "*" {
            return Err(format!("{}: not a path", head.path));
        }
        let mut fields = vec![
            Field::new(":method", head.method.as_str().as_bytes()),
            Field::new(":scheme", head.scheme.as_bytes()),
            Field::new(":path", head.path.as_bytes()),
            Field::new(":authority", head.authority.as_bytes()),
        ];
        for (n, v) in head.fields(Framing::Multiplexed) {
            fields.push(Field::new(n.as_str(), v.as_bytes()));
        }
        let plain = Framed::new(&encode::plain(&fields), e.body.is_empty());
        Ok(Request {
            fields,
            plain,
            body: e.body.clone(),
            key: usize::MAX,
            head: e.method == http::Method::HEAD,
        })
    }

    /// The request of the plan's endpoint `key`: each connection keeps its block
    /// under that key (one key per request of a run).
    pub fn keyed(mut self, key: usize) -> Request {
        self.key = key;
        self
    }

    /// What the connection's encoder needs of it.
    fn block(&self) -> encode::Block<'_> {
        encode::Block {
            fields: &self.fields,
            plain: &self.plain,
            end_stream: self.body.is_empty(),
            key: self.key,
        }
    }

    /// The request body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

#[cfg(test)]
mod head_tests;
#[cfg(test)]
mod tests;

/// Fuzzing entry point (`fuzz/`, [`crate::fuzzing`]): a connection with three
/// streams open fed `data` as the server's bytes, in pieces whose sizes come from
/// the data, with the output drained now and then. Never panics; every stream ends
/// once the connection closes; what waits unwritten stays bounded.
#[doc(hidden)]
pub fn fuzz_conn(data: &[u8]) {
    let target = Target::parse("http://127.0.0.1:8080/").expect("a valid URL");
    let endpoint = Endpoint {
        name: "x".into(),
        method: http::Method::POST,
        path_and_query: "/a".into(),
        headers: Vec::new(),
        body: Bytes::from_static(b"request body"),
        weight: 1,
    };
    let req = Request::new(&target, &endpoint).expect("encodes");
    let mut c = conn::Conn::new(true);
    let entries: Vec<usize> = (0..3).map(|_| c.start(&req)).collect();
    let (split, data) = data.split_first().map_or((7, data), |(s, d)| (*s, d));
    let piece = usize::from(split % 64) + 1;
    let mut buf = Vec::new();
    for (n, chunk) in data.chunks(piece).enumerate() {
        buf.extend_from_slice(chunk);
        let used = c.recv(&buf);
        assert!(used <= buf.len());
        buf.drain(..used);
        if split & 0x80 != 0 && n % 4 == 0 {
            c.flushed();
        }
        for &i in &entries {
            c.send_body(i, req.body());
        }
        // Answers wait unwritten at most MAX_PENDING_ACKS (17 octets each), with
        // the requests' frames, one RST_STREAM per stream and a GOAWAY.
        assert!(c.out.len() < 64 * 1024, "{} octets queued", c.out.len());
    }
    c.closed(None);
    for i in entries {
        assert!(c.take(i).is_some(), "a stream left open");
    }
}

/// Fuzzing entry point: `data` as HPACK header blocks (split where the data says)
/// through one decoder; the table never passes its size.
#[doc(hidden)]
pub fn fuzz_hpack(data: &[u8]) {
    struct Count(usize);
    impl hpack::Sink for Count {
        fn wants(&self, name: &[u8]) -> bool {
            name.first() == Some(&b':')
        }
        fn field(&mut self, _: &[u8], _: &[u8], _: usize) {
            self.0 += 1;
        }
    }
    let mut d = hpack::Decoder::new(256);
    for block in data.split(|&b| b == 0xfe) {
        let _ = d.decode(block, &mut Count(0));
        assert!(d.table_size_now() <= 256);
    }
}

/// Fuzzing entry point: `data` as a Huffman string; what it decodes to is no
/// longer than 8/5 of it (the shortest code is 5 bits), and decoding without an
/// output counts the same length.
#[doc(hidden)]
pub fn fuzz_huffman(data: &[u8]) {
    let mut out = Vec::new();
    let with = huffman::decode(data, Some(&mut out));
    let without = huffman::decode(data, None);
    match (with, without) {
        (Ok(n), Ok(m)) => {
            assert_eq!((n, m), (out.len(), out.len()));
            assert!(out.len() <= data.len() * 8 / 5);
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("decoding with and without output disagree: {a:?} {b:?}"),
    }
}
