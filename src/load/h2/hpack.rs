//! HPACK (RFC 7541) for the load engine's HTTP/2 client. The decoder keeps the
//! dynamic table exactly (size updates, eviction, Huffman, indexed names) and hands
//! each field to a [`Sink`], decoding a Huffman value only when the sink wants it
//! or the table keeps it: no allocation per field otherwise. The encoder side is a
//! few writers (static-table indexes, literals); `encode` keeps a connection's own
//! dynamic table for the requests.

use std::collections::VecDeque;

use super::huffman;

/// A malformed header block (a COMPRESSION_ERROR for the connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpackError;

impl From<huffman::BadHuffman> for HpackError {
    fn from(_: huffman::BadHuffman) -> Self {
        HpackError
    }
}

/// The static table (RFC 7541 Appendix A); index 1 is the first entry.
pub const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The default (and announced) dynamic table size (SETTINGS_HEADER_TABLE_SIZE).
pub const TABLE_SIZE: usize = 4096;
/// Dynamic table size updates at the start of one block at most (RFC 7541 §4.2:
/// the smallest size signalled, then the final one).
pub const MAX_SIZE_UPDATES: usize = 2;

pub use crate::load::fields::Sink;

/// A dynamic table entry: name and value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// Huffman strings remembered with what they decode to: a server sends the same
/// few values over and over (nginx indexes its Server and Date fields anew in
/// every response).
const HUFF_CACHE: usize = 8;
/// Evicted entries kept for their allocations.
const SPARE: usize = 16;

/// The decoding context of one connection.
#[derive(Debug)]
pub struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    /// Sum of the entries' sizes (§4.1: name + value + 32).
    size: usize,
    /// The table's current maximum (set by size updates, ≤ `limit`).
    max: usize,
    /// The most the encoder may set (what this side announced).
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    /// Changes whenever the dynamic table may have changed.
    generation: u64,
    /// (Huffman string, its octets), filled round-robin.
    huff: Vec<(Vec<u8>, Vec<u8>)>,
    huff_next: usize,
    spare: Vec<Entry>,
    /// The last block referred to no dynamic-table entry and updated no size: its
    /// fields, and the entries it added (the first `added` of `log`), depend on
    /// the block alone.
    context_free: bool,
    log: Vec<Entry>,
    added: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(TABLE_SIZE)
    }
}

/// The name of a field being decoded, before it is copied.
enum Name<'b> {
    Static(usize),
    Table(usize),
    Literal { huffman: bool, raw: &'b [u8] },
}

impl Decoder {
    /// A decoder whose table may grow to `limit` octets.
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: limit,
            limit,
            name: Vec::new(),
            value: Vec::new(),
            generation: 0,
            huff: Vec::new(),
            huff_next: 0,
            spare: Vec::new(),
            context_free: true,
            log: Vec::new(),
            added: 0,
        }
    }

    /// The dynamic table's size in octets now (§4.1), for the fuzzing invariant.
    pub fn table_size_now(&self) -> usize {
        self.size
    }

    /// The dynamic table's size in octets (§4.1).
    #[cfg(test)]
    pub fn table_size(&self) -> usize {
        self.size
    }

    /// The dynamic table's entries, newest first (tests).
    #[cfg(test)]
    pub fn entries(&self) -> Vec<(String, String)> {
        self.table
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    /// A number that changes whenever the dynamic table may have changed: a block
    /// decoded without changing it decodes the same again while it stays.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the last block decoded depended on nothing but itself (no
    /// reference to the dynamic table, no size update): decoding it again at any
    /// time gives the same fields and adds [`Decoder::added`] to the table.
    pub fn context_free(&self) -> bool {
        self.context_free
    }

    /// The entries the last block added to the table, oldest first.
    pub fn added(&self) -> &[Entry] {
        &self.log[..self.added]
    }

    /// Adds `entries` to the table as decoding their block again would.
    pub fn replay(&mut self, entries: &[Entry]) {
        for (n, v) in entries {
            let mut e = self.spare.pop().unwrap_or_default();
            e.0.clear();
            e.0.extend_from_slice(n);
            e.1.clear();
            e.1.extend_from_slice(v);
            self.insert(e);
        }
    }

    /// Decodes one complete header block into `sink`.
    pub fn decode(&mut self, mut b: &[u8], sink: &mut impl Sink) -> Result<(), HpackError> {
        let mut fields = false;
        let mut size_updates = 0;
        self.context_free = true;
        self.added = 0;
        while let Some(&c) = b.first() {
            if c & 0x80 != 0 {
                // §6.1 Indexed Header Field.
                let idx = int(&mut b, 7)?;
                match idx {
                    0 => return Err(HpackError),
                    1..=61 => {
                        let (n, v) = STATIC[idx - 1];
                        sink.field(n.as_bytes(), v.as_bytes(), v.len());
                    }
                    _ => {
                        self.context_free = false;
                        let (n, v) = self.table.get(idx - 62).ok_or(HpackError)?;
                        sink.field(n, v, v.len());
                    }
                }
            } else if c & 0x40 != 0 {
                // §6.2.1 Literal Header Field with Incremental Indexing.
                self.literal(&mut b, 6, true, sink)?;
            } else if c & 0x20 != 0 {
                // §6.3 Dynamic Table Size Update: only before the first field.
                if fields {
                    return Err(HpackError);
                }
                // §4.2 needs at most two (the smallest size since the last block,
                // then the final one); more is a flood of evictions.
                size_updates += 1;
                if size_updates > MAX_SIZE_UPDATES {
                    return Err(HpackError);
                }
                self.context_free = false;
                let n = int(&mut b, 5)?;
                if n > self.limit {
                    return Err(HpackError);
                }
                self.max = n;
                self.generation += 1;
                self.evict(0);
                continue;
            } else {
                // §6.2.2 without indexing, §6.2.3 never indexed.
                self.literal(&mut b, 4, false, sink)?;
            }
            fields = true;
        }
        Ok(())
    }

    fn literal(
        &mut self,
        b: &mut &[u8],
        prefix: u8,
        index: bool,
        sink: &mut impl Sink,
    ) -> Result<(), HpackError> {
        let idx = int(b, prefix)?;
        let name = match idx {
            0 => {
                let (huffman, raw) = string(b)?;
                Name::Literal { huffman, raw }
            }
            1..=61 => Name::Static(idx - 1),
            _ if idx - 62 < self.table.len() => {
                self.context_free = false;
                Name::Table(idx - 62)
            }
            _ => return Err(HpackError),
        };
        let (huffman, raw) = string(b)?;
        let Decoder {
            table,
            name: nbuf,
            value: vbuf,
            huff,
            huff_next,
            spare,
            log,
            added,
            ..
        } = self;
        let name: &[u8] = match name {
            Name::Static(i) => STATIC[i].0.as_bytes(),
            Name::Table(i) => &table[i].0,
            Name::Literal {
                huffman: false,
                raw,
            } => raw,
            Name::Literal { huffman: true, raw } => {
                nbuf.clear();
                huffman::decode(raw, Some(&mut *nbuf))?;
                &nbuf[..]
            }
        };
        let (value, len): (&[u8], usize) = if !huffman {
            (raw, raw.len())
        } else if let Some(k) = huff.iter().position(|(r, _)| r[..] == *raw) {
            (&huff[k].1, huff[k].1.len())
        } else if index || sink.wants(name) {
            vbuf.clear();
            let n = huffman::decode(raw, Some(&mut *vbuf))?;
            let slot = *huff_next % HUFF_CACHE;
            *huff_next += 1;
            if huff.len() <= slot {
                huff.push(Default::default());
            }
            let (r, d) = &mut huff[slot];
            r.clear();
            r.extend_from_slice(raw);
            d.clear();
            d.extend_from_slice(vbuf);
            (&vbuf[..], n)
        } else {
            (&[], huffman::decode(raw, None)?)
        };
        sink.field(name, value, len);
        if index {
            if *added == log.len() {
                log.push(Entry::default());
            }
            let l = &mut log[*added];
            *added += 1;
            l.0.clear();
            l.0.extend_from_slice(name);
            l.1.clear();
            l.1.extend_from_slice(value);
            let mut entry = spare.pop().unwrap_or_default();
            entry.0.clear();
            entry.0.extend_from_slice(name);
            entry.1.clear();
            entry.1.extend_from_slice(value);
            self.insert(entry);
        }
        Ok(())
    }

    /// §4.4: evicts until the entry fits, then adds it; an entry larger than the
    /// table empties it and is not added.
    fn insert(&mut self, entry: Entry) {
        self.generation += 1;
        let size = entry.0.len() + entry.1.len() + 32;
        if size > self.max {
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(entry);
    }

    /// Evicts the oldest entries until `room` more octets fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some(e) = self.table.pop_back() else {
                break;
            };
            self.size -= e.0.len() + e.1.len() + 32;
            if self.spare.len() < SPARE {
                self.spare.push(e);
            }
        }
    }
}

/// §5.1: an integer with an N-bit prefix; at most 2^28 or so (no overflow).
pub(in crate::load) fn int(b: &mut &[u8], prefix: u8) -> Result<usize, HpackError> {
    let (&first, rest) = b.split_first().ok_or(HpackError)?;
    *b = rest;
    let mask = (1usize << prefix) - 1;
    let mut v = usize::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let (&c, rest) = b.split_first().ok_or(HpackError)?;
        *b = rest;
        v += usize::from(c & 0x7f) << shift;
        if c & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 21 {
            return Err(HpackError);
        }
    }
}

/// §5.2: a string literal: (Huffman-coded, its octets as sent).
fn string<'b>(b: &mut &'b [u8]) -> Result<(bool, &'b [u8]), HpackError> {
    let huffman = b.first().ok_or(HpackError)? & 0x80 != 0;
    let len = int(b, 7)?;
    if len > b.len() {
        return Err(HpackError);
    }
    let (s, rest) = b.split_at(len);
    *b = rest;
    Ok((huffman, s))
}

/// Appends an integer with an N-bit prefix, `flags` in the prefix octet's high bits.
pub fn put_int(out: &mut Vec<u8>, prefix: u8, flags: u8, v: usize) {
    let mask = (1usize << prefix) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut v = v - mask;
    while v >= 128 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a raw (not Huffman-coded) string literal.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 7, 0, s.len());
    out.extend_from_slice(s);
}

/// The static table's index (1-based) of this field, name and value.
pub fn static_match(name: &str, value: &[u8]) -> Option<usize> {
    STATIC
        .iter()
        .position(|(n, v)| *n == name && v.as_bytes() == value && !v.is_empty())
        .map(|i| i + 1)
}

/// The static table's index (1-based) of this name.
pub fn static_name(name: &str) -> Option<usize> {
    STATIC.iter().position(|(n, _)| *n == name).map(|i| i + 1)
}

/// Appends a field: the static index when the table has it with this value,
/// else a literal without indexing (with the static name's index when it has the
/// name). Never touches the dynamic table.
pub fn put_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    if let Some(i) = static_match(name, value) {
        put_int(out, 7, 0x80, i);
        return;
    }
    put_literal(out, 4, 0, name.as_bytes(), value, static_name(name));
}

/// Appends a field as a literal never indexed (§6.2.3): no intermediary may add it
/// to a table either (credentials, §7.1.3).
pub fn put_never_indexed(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    put_literal(out, 4, 0x10, name.as_bytes(), value, static_name(name));
}

/// Appends a literal field (§6.2): a `prefix`-bit index of its name in the static
/// table with `flags` (`0x40`/6 with incremental indexing, `0`/4 without, `0x10`/4
/// never indexed), or the name itself when the table lacks it, then the value.
pub fn put_literal(
    out: &mut Vec<u8>,
    prefix: u8,
    flags: u8,
    name: &[u8],
    value: &[u8],
    name_index: Option<usize>,
) {
    match name_index {
        Some(i) => put_int(out, prefix, flags, i),
        None => {
            out.push(flags);
            put_string(out, name);
        }
    }
    put_string(out, value);
}

#[cfg(test)]
#[path = "hpack_tests.rs"]
mod tests;
