//! QPACK (RFC 9204) for the load engine's HTTP/3 client, without a dynamic table:
//! this side announces SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 (the default), so a
//! server's field sections may use only the static table and literals, and the
//! requests' sections are encoded once per endpoint from the static table and
//! literals (no encoder or decoder stream is opened, §4.2 allows that). The decoder
//! hands each field to a [`Sink`], decoding a Huffman string only when the sink
//! wants its value; a reference to the dynamic table, or a Required Insert Count
//! other than 0, is QPACK_DECOMPRESSION_FAILED (§2.2.3).

use crate::load::fields::Sink;
use crate::load::h2::huffman;

/// A field section that cannot be decoded (QPACK_DECOMPRESSION_FAILED, 0x200).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpackError;

impl From<huffman::BadHuffman> for QpackError {
    fn from(_: huffman::BadHuffman) -> Self {
        QpackError
    }
}

/// The static table (RFC 9204 Appendix A); index 0 is the first entry.
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Encodes a request's fields as a field section: the prefix (Required Insert
/// Count 0, Base 0), then each field as an indexed static entry when one matches
/// name and value (§4.5.2), a literal with a static name reference when one
/// matches the name (§4.5.4), else a literal with a literal name (§4.5.6); strings
/// go raw (no Huffman), names as given (lowercase, as HTTP/3 requires).
pub fn encode<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut out = vec![0, 0];
    for (name, value) in fields {
        let exact = STATIC
            .iter()
            .position(|(n, v)| n.as_bytes() == name && v.as_bytes() == value);
        if let Some(i) = exact {
            int(&mut out, 0xc0, 6, i);
            continue;
        }
        match STATIC.iter().position(|(n, _)| n.as_bytes() == name) {
            Some(i) => int(&mut out, 0x50, 4, i),
            None => {
                int(&mut out, 0x20, 3, name.len());
                out.extend_from_slice(name);
            }
        }
        int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value);
    }
    out
}

/// §4.1.1 (RFC 7541 §5.1): `v` with an N-bit prefix after the `flags` bits.
fn int(out: &mut Vec<u8>, flags: u8, prefix: u8, mut v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an integer with an N-bit prefix (the first octet's higher bits are
/// the caller's): HPACK's integer (RFC 7541 §5.1), which QPACK reuses (§4.1.1).
fn read_int(b: &mut &[u8], prefix: u8) -> Result<usize, QpackError> {
    crate::load::h2::hpack::int(b, prefix).map_err(|_| QpackError)
}

/// A string literal whose length has an N-bit prefix and whose Huffman flag is
/// the bit above it (§4.1.2): (Huffman-coded, its octets).
fn read_string<'b>(b: &mut &'b [u8], prefix: u8) -> Result<(bool, &'b [u8]), QpackError> {
    let huffman = b.first().ok_or(QpackError)? & (1 << prefix) != 0;
    let len = read_int(b, prefix)?;
    if len > b.len() {
        return Err(QpackError);
    }
    let (s, rest) = b.split_at(len);
    *b = rest;
    Ok((huffman, s))
}

/// Decoding scratch space, kept between field sections.
#[derive(Debug, Default)]
pub struct Decoder {
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// Decodes one field section into `sink`.
    pub fn decode(&mut self, mut b: &[u8], sink: &mut impl Sink) -> Result<(), QpackError> {
        // §4.5.1: Required Insert Count (8-bit prefix), then Sign and Delta Base
        // (7-bit prefix). With no dynamic table the count must be 0 (§2.2.3).
        if read_int(&mut b, 8)? != 0 {
            return Err(QpackError);
        }
        read_int(&mut b, 7)?;
        while let Some(&c) = b.first() {
            if c & 0x80 != 0 {
                // §4.5.2 Indexed Field Line: static only (T = 1).
                if c & 0x40 == 0 {
                    return Err(QpackError);
                }
                let (n, v) = STATIC.get(read_int(&mut b, 6)?).ok_or(QpackError)?;
                sink.field(n.as_bytes(), v.as_bytes(), v.len());
            } else if c & 0x40 != 0 {
                // §4.5.4 Literal Field Line with Name Reference: static only.
                if c & 0x10 == 0 {
                    return Err(QpackError);
                }
                let (n, _) = STATIC.get(read_int(&mut b, 4)?).ok_or(QpackError)?;
                self.value(&mut b, n.as_bytes(), sink)?;
            } else if c & 0x20 != 0 {
                // §4.5.6 Literal Field Line with Literal Name.
                let (huffman, raw) = read_string(&mut b, 3)?;
                let mut name = std::mem::take(&mut self.name);
                let r = if huffman {
                    name.clear();
                    huffman::decode(raw, Some(&mut name))
                        .map_err(QpackError::from)
                        .and_then(|_| self.value(&mut b, &name, sink))
                } else {
                    self.value(&mut b, raw, sink)
                };
                self.name = name;
                r?;
            } else {
                // §4.5.3 and §4.5.5: post-base references, to the dynamic table.
                return Err(QpackError);
            }
        }
        Ok(())
    }

    /// A field's value (7-bit prefix), decoded from Huffman only when wanted.
    fn value(
        &mut self,
        b: &mut &[u8],
        name: &[u8],
        sink: &mut impl Sink,
    ) -> Result<(), QpackError> {
        let (huffman, raw) = read_string(b, 7)?;
        if !huffman {
            sink.field(name, raw, raw.len());
        } else if sink.wants(name) {
            self.value.clear();
            let n = huffman::decode(raw, Some(&mut self.value))?;
            sink.field(name, &self.value, n);
        } else {
            sink.field(name, &[], huffman::decode(raw, None)?);
        }
        Ok(())
    }
}
