//! The load engine's own HTTP/2 client (RFC 9113), as `http1` is for HTTP/1.1:
//! each endpoint's request is encoded once into ready frames (only the stream id
//! changes per request), responses are read frame by frame with HPACK decoding
//! only what a request's outcome needs, and nothing is allocated per request.
//! hyper's client spent ~78 % of the load engine's CPU in the `h2` crate.
//!
//! `frame` framing, `huffman` and `hpack` header compression, `conn` the
//! connection's state (sans I/O: bytes in, frames and finished streams out),
//! `link` drives a connection on the worker thread's runtime, shared by the
//! `--streams` VUs of a slot.

mod conn;
mod frame;
mod hpack;
mod huffman;
mod link;

pub use link::{handshake, Exchange, H2Slot, Slot};

use bytes::Bytes;

use super::plan::Endpoint;
use crate::net::request::Framing;
use crate::net::Target;

/// One endpoint's request, encoded once: HEADERS (and CONTINUATION) frames whose
/// stream ids are patched per request, and the body sent as DATA.
#[derive(Debug, Clone)]
pub struct Request {
    frames: Vec<u8>,
    /// Where each frame's stream id sits in `frames`.
    ids: Vec<usize>,
    body: Bytes,
    /// HEAD: no body comes back.
    pub head: bool,
}

impl Request {
    /// Encodes endpoint `e` of `target`: the pseudo-headers and fields of its one
    /// [`RequestHead`](crate::net::RequestHead) (`:authority` from a `Host` header when
    /// given, the defaults, `content-length` with a body, no connection-specific field).
    pub fn new(target: &Target, e: &Endpoint) -> Result<Request, String> {
        let head = e.head(target);
        if !head.path.starts_with('/') && head.path != "*" {
            return Err(format!("{}: not a path", head.path));
        }
        let mut block = Vec::with_capacity(128);
        hpack::put_field(&mut block, ":method", head.method.as_str().as_bytes());
        hpack::put_field(&mut block, ":scheme", head.scheme.as_bytes());
        hpack::put_field(&mut block, ":path", head.path.as_bytes());
        hpack::put_field(&mut block, ":authority", head.authority.as_bytes());
        for (n, v) in head.fields(Framing::Multiplexed) {
            hpack::put_field(&mut block, n.as_str(), v.as_bytes());
        }
        Ok(Request::from_block(
            &block,
            e.body.clone(),
            e.method == http::Method::HEAD,
        ))
    }

    /// Frames a header block: HEADERS, then CONTINUATION frames when it passes the
    /// smallest frame size every peer accepts.
    fn from_block(block: &[u8], body: Bytes, head: bool) -> Request {
        let mut frames = Vec::with_capacity(block.len() + frame::HEAD_LEN);
        let mut ids = Vec::new();
        let chunks: Vec<&[u8]> = block.chunks(frame::DEFAULT_MAX_FRAME).collect();
        let chunks = if chunks.is_empty() {
            vec![&[][..]]
        } else {
            chunks
        };
        for (i, c) in chunks.iter().enumerate() {
            let mut flags = 0;
            if i + 1 == chunks.len() {
                flags |= frame::END_HEADERS;
            }
            let kind = if i == 0 {
                if body.is_empty() {
                    flags |= frame::END_STREAM;
                }
                frame::HEADERS
            } else {
                frame::CONTINUATION
            };
            ids.push(frames.len() + 5);
            frame::write_head(&mut frames, c.len(), kind, flags, 0);
            frames.extend_from_slice(c);
        }
        Request {
            frames,
            ids,
            body,
            head,
        }
    }

    /// Appends the request's header frames for stream `id`.
    #[inline]
    fn write(&self, out: &mut Vec<u8>, id: u32) {
        let at = out.len();
        out.extend_from_slice(&self.frames);
        for &i in &self.ids {
            out[at + i..at + i + 4].copy_from_slice(&id.to_be_bytes());
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
