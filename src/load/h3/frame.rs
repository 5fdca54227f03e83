//! HTTP/3 framing (RFC 9114 §7) and a request stream's response, sans I/O:
//! [`Response::feed`] takes the stream's bytes as they arrive, in any pieces, and
//! [`Response::finish`] its end. DATA is counted (and offered to what a scenario
//! keeps) as it passes, never buffered; a HEADERS frame is decoded straight from
//! the piece that holds it whole, else gathered up to the field-section limit
//! announced in SETTINGS; unknown frame types are skipped (§9), frames that
//! belong on the control stream or to HTTP/2 are errors (§7.2.8).

use std::time::Instant;

use super::qpack;
use crate::load::fields::{HeadSink, Keeping};
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::script::Kept;

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const CANCEL_PUSH: u64 = 0x3;
pub const SETTINGS: u64 = 0x4;
pub const PUSH_PROMISE: u64 = 0x5;
pub const GOAWAY: u64 = 0x7;
pub const MAX_PUSH_ID: u64 = 0xd;

/// SETTINGS_MAX_FIELD_SECTION_SIZE (§7.2.4.1).
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x6;
/// The largest response field section accepted, as announced.
pub const MAX_SECTION: usize = crate::net::http::MAX_RESPONSE_HEAD;

/// Error codes (§8.1, RFC 9204 §6).
pub const H3_NO_ERROR: u32 = 0x100;
pub const H3_STREAM_CREATION_ERROR: u32 = 0x103;
pub const H3_CLOSED_CRITICAL_STREAM: u32 = 0x104;
pub const H3_FRAME_UNEXPECTED: u32 = 0x105;
pub const H3_FRAME_ERROR: u32 = 0x106;
pub const H3_EXCESSIVE_LOAD: u32 = 0x107;
pub const H3_ID_ERROR: u32 = 0x108;
pub const H3_SETTINGS_ERROR: u32 = 0x109;
pub const H3_MISSING_SETTINGS: u32 = 0x10a;
pub const H3_REQUEST_CANCELLED: u32 = 0x10c;
pub const H3_MESSAGE_ERROR: u32 = 0x10e;
pub const QPACK_DECOMPRESSION_FAILED: u32 = 0x200;

/// What went wrong on a stream: its code, and whether it is an error of the whole
/// connection (§8: then the connection closes with that code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Error {
    pub code: u32,
    pub conn: bool,
}

impl H3Error {
    pub const fn conn(code: u32) -> H3Error {
        H3Error { code, conn: true }
    }
    pub const fn stream(code: u32) -> H3Error {
        H3Error { code, conn: false }
    }
}

/// Writes `v` as a QUIC variable-length integer (RFC 9000 §16); `v` < 2^62.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a variable-length integer from the front of `b`: (value, its length), or
/// None when `b` does not hold all of it yet.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &c in &b[1..len] {
        v = (v << 8) | u64::from(c);
    }
    Some((v, len))
}

/// A frame head (type, payload length) from the front of `b`, and its length.
pub fn frame_head(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, n) = varint(b)?;
    let (len, m) = varint(&b[n..])?;
    Some((kind, len, n + m))
}

/// Writes a frame head.
pub fn put_frame_head(out: &mut Vec<u8>, kind: u64, len: usize) {
    put_varint(out, kind);
    put_varint(out, len as u64);
}

/// Writes a whole frame: its head, then `payload`.
pub fn put_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_frame_head(out, kind, payload.len());
    out.extend_from_slice(payload);
}

/// Frame types that may not appear on a request stream (§7.2: control-stream
/// frames, and HTTP/2's reserved types of §11.2.1): the connection's error.
fn refused_on_request(kind: u64) -> Option<u32> {
    match kind {
        CANCEL_PUSH | SETTINGS | GOAWAY | MAX_PUSH_ID | 0x2 | 0x6 | 0x8 | 0x9 => {
            Some(H3_FRAME_UNEXPECTED)
        }
        // No MAX_PUSH_ID was sent: no push may be promised (§7.2.5).
        PUSH_PROMISE => Some(H3_ID_ERROR),
        _ => None,
    }
}

/// A response read from its request stream.
#[derive(Debug)]
pub struct Response {
    /// A frame head not yet whole (at most two 8-octet varints).
    head: [u8; 16],
    head_len: usize,
    /// The frame being read: its type and the payload octets still to come.
    frame: Option<(u64, u64)>,
    /// A HEADERS payload arriving in pieces.
    block: Vec<u8>,
    dec: qpack::Decoder,
    outcome: Outcome,
    /// The final (non-1xx) head was read; trailers after it.
    final_head: bool,
    trailers: bool,
    mark_first_byte: bool,
    /// The response has no content whatever its fields say (a HEAD request's, or
    /// 204/304: RFC 9110 §6.4.1).
    no_content: bool,
    /// The final head's Content-Length, and the DATA payload so far: they must
    /// agree (RFC 9114 §4.1.2).
    length: Option<u64>,
    data: u64,
}

impl Response {
    /// A response whose first byte's time is marked when asked (`--raw`), to a
    /// HEAD request when `head`.
    pub fn new(mark_first_byte: bool, head: bool) -> Response {
        Response {
            head: [0; 16],
            head_len: 0,
            frame: None,
            block: Vec::new(),
            dec: qpack::Decoder::default(),
            outcome: Outcome::default(),
            final_head: false,
            trailers: false,
            mark_first_byte,
            no_content: head,
            length: None,
            data: 0,
        }
    }

    /// The octets of the stream that came next.
    pub fn feed(&mut self, mut data: &[u8], mut kept: Option<&mut Kept>) -> Result<(), H3Error> {
        while !data.is_empty() {
            let Some((kind, left)) = self.frame else {
                data = self.read_head(data, kept.as_deref_mut())?;
                continue;
            };
            let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let (piece, rest) = data.split_at(n);
            data = rest;
            let left = left - n as u64;
            self.frame = Some((kind, left));
            match kind {
                DATA => {
                    self.outcome.bytes += n as u64;
                    self.data += n as u64;
                    if let Some(k) = kept.as_deref_mut() {
                        k.offer_body(piece);
                    }
                }
                HEADERS => self.block.extend_from_slice(piece),
                _ => {}
            }
            if left == 0 {
                self.frame = None;
                if kind == HEADERS {
                    let block = std::mem::take(&mut self.block);
                    let r = self.headers(&block, kept.as_deref_mut());
                    self.block = block;
                    self.block.clear();
                    r?;
                }
            }
        }
        Ok(())
    }

    /// Reads a frame head from the front of `data` (with what an earlier piece
    /// left), and a HEADERS frame held whole by `data` at once; returns the rest.
    fn read_head<'d>(
        &mut self,
        data: &'d [u8],
        kept: Option<&mut Kept>,
    ) -> Result<&'d [u8], H3Error> {
        let (kind, len, rest) = if self.head_len == 0 {
            match frame_head(data) {
                Some((kind, len, n)) => (kind, len, &data[n..]),
                None => return Ok(self.keep_head(data)),
            }
        } else {
            let take = data.len().min(self.head.len() - self.head_len);
            self.head[self.head_len..self.head_len + take].copy_from_slice(&data[..take]);
            let have = self.head_len + take;
            match frame_head(&self.head[..have]) {
                Some((kind, len, n)) => {
                    let used = n - self.head_len;
                    self.head_len = 0;
                    (kind, len, &data[used..])
                }
                None if have == self.head.len() => return Err(H3Error::conn(H3_FRAME_ERROR)),
                None => {
                    self.head_len = have;
                    return Ok(&data[take..]);
                }
            }
        };
        if let Some(code) = refused_on_request(kind) {
            return Err(H3Error::conn(code));
        }
        match kind {
            DATA if !self.final_head || self.trailers => {
                return Err(H3Error::conn(H3_FRAME_UNEXPECTED))
            }
            // Content where there can be none, or past the Content-Length
            // (§4.1.2: malformed).
            DATA if len > 0 && self.no_content => return Err(H3Error::stream(H3_MESSAGE_ERROR)),
            DATA if self
                .length
                .is_some_and(|l| self.data.saturating_add(len) > l) =>
            {
                return Err(H3Error::stream(H3_MESSAGE_ERROR))
            }
            HEADERS if self.trailers => return Err(H3Error::conn(H3_FRAME_UNEXPECTED)),
            HEADERS if len > MAX_SECTION as u64 => {
                crate::load::conn::note_head_too_large();
                return Err(H3Error::stream(H3_EXCESSIVE_LOAD));
            }
            HEADERS if len as usize <= rest.len() => {
                let (block, rest) = rest.split_at(len as usize);
                self.headers(block, kept)?;
                return Ok(rest);
            }
            _ => {}
        }
        if len > 0 {
            self.frame = Some((kind, len));
        } else if kind == HEADERS {
            return Err(H3Error::conn(QPACK_DECOMPRESSION_FAILED));
        }
        Ok(rest)
    }

    /// Keeps the start of a frame head that `data` (all of it) does not complete.
    fn keep_head<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        self.head[..data.len()].copy_from_slice(data);
        self.head_len = data.len();
        &[]
    }

    /// A whole HEADERS payload: the response head, an interim (1xx) one, or
    /// trailers (read for their validity, not kept).
    fn headers(&mut self, block: &[u8], kept: Option<&mut Kept>) -> Result<(), H3Error> {
        let mut sink = HeadSink::default();
        let r = match kept.filter(|_| !self.final_head) {
            Some(kept) => {
                let mut both = Keeping { head: sink, kept };
                let r = self.dec.decode(block, &mut both);
                sink = both.head;
                if (100..200).contains(&sink.status) {
                    // An interim head's fields are not the response's.
                    both.kept.headers.clear();
                }
                r
            }
            None => self.dec.decode(block, &mut sink),
        };
        r.map_err(|_| H3Error::conn(QPACK_DECOMPRESSION_FAILED))?;
        if self.final_head {
            self.trailers = true;
            return Ok(());
        }
        let bad_length = sink.length.get(String::new).is_err();
        if !(100..=999).contains(&sink.status) || sink.bad || bad_length {
            return Err(H3Error::stream(H3_MESSAGE_ERROR));
        }
        if sink.size > MAX_SECTION {
            crate::load::conn::note_head_too_large();
            return Err(H3Error::stream(H3_EXCESSIVE_LOAD));
        }
        if sink.status < 200 {
            return Ok(());
        }
        self.final_head = true;
        self.no_content |= matches!(sink.status, 204 | 304);
        self.length = sink.length.get(String::new).ok().flatten();
        let o = &mut self.outcome;
        o.status = sink.status;
        o.bytes += sink.bytes;
        o.cache = sink.cache.seen();
        o.first_byte = self.mark_first_byte.then(Instant::now);
        Ok(())
    }

    /// The stream ended: the outcome, or why the response is incomplete (a frame
    /// cut short is the connection's H3_FRAME_ERROR, §7.1; no final head, or less
    /// content than its Content-Length, is a malformed response, §4.1.2).
    pub fn finish(&self) -> Result<Outcome, H3Error> {
        if self.frame.is_some() || self.head_len > 0 {
            return Err(H3Error::conn(H3_FRAME_ERROR));
        }
        let short = !self.no_content && self.length.is_some_and(|l| l != self.data);
        if !self.final_head || short {
            return Err(H3Error::stream(H3_MESSAGE_ERROR));
        }
        let mut o = self.outcome;
        o.error = ErrorKind::of_status(o.status);
        Ok(o)
    }

    /// What was read so far (a response cut off: its status and bytes).
    pub fn partial(&self) -> Outcome {
        self.outcome
    }
}

impl Response {
    /// Octets held (tests: DATA and unknown frames pass without being kept).
    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.block.len() + self.head_len
    }
}
