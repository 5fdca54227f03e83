//! Response header fields as HPACK (HTTP/2) and QPACK (HTTP/3) decode them: the
//! [`Sink`] a decoder hands each field to, and the sinks the load engine reads an
//! outcome from ([`HeadSink`]) or a scenario's kept headers ([`Keeping`]).

use crate::cache::status::{reads, Detector};
use crate::load::script::Kept;

/// Where decoded fields go.
pub trait Sink {
    /// Whether the field's value is needed (a Huffman value is decoded only then).
    fn wants(&self, name: &[u8]) -> bool;
    /// One field: its name, its value (empty when not wanted and Huffman-coded)
    /// and the value's decoded length.
    fn field(&mut self, name: &[u8], value: &[u8], len: usize);
}

/// Reads what an outcome needs from a response head: `:status`, the fields the
/// cache detector reads, and the head's size (names and values, as HTTP/1.1
/// would count them, without pseudo-fields).
#[derive(Debug, Default, Clone, Copy)]
pub struct HeadSink {
    pub status: u16,
    pub bad: bool,
    pub bytes: u64,
    pub size: usize,
    pub cache: Detector,
    /// Content-Length, checked as every command checks it.
    pub length: crate::net::http::ContentLength,
    /// A regular field came: no pseudo-field may follow.
    regular: bool,
}

impl Sink for HeadSink {
    fn wants(&self, name: &[u8]) -> bool {
        name == b":status"
            || name == b"content-length"
            || std::str::from_utf8(name).is_ok_and(reads)
    }

    fn field(&mut self, name: &[u8], value: &[u8], len: usize) {
        self.size += name.len() + len + 32;
        // Malformed (RFC 9113 §8.2.1, RFC 9114 §4.2): an empty or uppercase name, a
        // value with NUL, CR or LF (checked where the value is at hand: raw, or
        // decoded because it is read).
        self.bad |= name.is_empty()
            || name.iter().any(u8::is_ascii_uppercase)
            || value.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n'));
        if let Some(pseudo) = name.strip_prefix(b":") {
            // A response's one pseudo-field, before every regular field (RFC 9113
            // §8.3, RFC 9114 §4.3).
            self.bad |= pseudo != b"status" || self.regular;
            if pseudo == b"status" {
                self.bad |= self.status != 0 || value.len() != 3;
                self.status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
            return;
        }
        self.regular = true;
        self.bytes += (name.len() + len + 4) as u64;
        if name == b"content-length" {
            self.length.feed(value);
        }
        if let (Ok(n), Ok(v)) = (std::str::from_utf8(name), std::str::from_utf8(value)) {
            if !value.is_empty() && reads(n) {
                self.cache.feed(n, v);
            }
        }
    }
}

/// A scenario stream's head: every field to the [`HeadSink`], and to what the
/// stream keeps those it asks for.
pub struct Keeping<'k> {
    pub head: HeadSink,
    pub kept: &'k mut Kept,
}

impl Sink for Keeping<'_> {
    fn wants(&self, name: &[u8]) -> bool {
        Sink::wants(&self.head, name)
            || std::str::from_utf8(name).is_ok_and(|n| self.kept.capture.wants(n))
    }

    fn field(&mut self, name: &[u8], value: &[u8], len: usize) {
        Sink::field(&mut self.head, name, value, len);
        if name.first() != Some(&b':') {
            if let Ok(n) = std::str::from_utf8(name) {
                self.kept.offer_header(n, value);
            }
        }
    }
}
