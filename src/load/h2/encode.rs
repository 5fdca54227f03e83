//! The request side of HPACK (RFC 7541) per connection. A request's fields are
//! split once per endpoint ([`Field`]): the ones the static table holds whole are
//! encoded for good; the others go into the connection's dynamic table the first
//! time they are sent (a literal with incremental indexing, §6.2.1) while they fit,
//! and are named by their index afterwards (§6.1), as h2load and browsers do. The
//! server then decodes a one-octet field instead of a literal on every request
//! (nginx's cost per request at 100 streams fell ~15 % when h2load indexed:
//! bench/RESULTS.md, issue 36).
//!
//! The table is append-only: a field that does not fit stays a literal without
//! indexing, so nothing is evicted and an index, once valid, stays valid until the
//! table grows. Each endpoint's framed block is kept per connection with the
//! table's generation and reused until an insertion changes the indexes: after
//! every endpoint was sent once, a request costs a copy and a stream id, as before
//! (for the first 256 endpoints of a plan: a connection's memory stays bounded).
//! Credentials (`authorization`, `cookie`, `proxy-authorization`) are never indexed
//! (§7.1.3). The server's SETTINGS_HEADER_TABLE_SIZE bounds the table; a smaller
//! one empties it with a size update at the start of the next block (§4.2, §6.3).

use super::frame;
use super::hpack::{self, TABLE_SIZE};

/// Endpoints whose framed blocks a connection keeps (a plan has up to 10,000; past
/// these, a block is encoded at each send, still indexed).
const CACHED: usize = 256;
/// Fields never put into the table (RFC 7541 §7.1.3: secrets are not indexed).
const NEVER_INDEXED: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// One field of a request, split once per endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    /// Encoded for good (a static-table index, or a literal that is never indexed).
    Fixed(Vec<u8>),
    /// Indexed per connection. `name_index`: the static table's index of the name.
    Table {
        name: Box<[u8]>,
        value: Box<[u8]>,
        name_index: Option<usize>,
    },
}

impl Field {
    /// Splits a field: a static-table match is fixed; a secret is a literal never
    /// indexed; anything else may go into the dynamic table.
    pub fn new(name: &str, value: &[u8]) -> Field {
        let never = NEVER_INDEXED.contains(&name);
        if never || hpack::static_match(name, value).is_some() {
            let mut out = Vec::new();
            if never {
                hpack::put_never_indexed(&mut out, name, value);
            } else {
                hpack::put_field(&mut out, name, value);
            }
            return Field::Fixed(out);
        }
        Field::Table {
            name: name.as_bytes().into(),
            value: value.into(),
            name_index: hpack::static_name(name),
        }
    }

    /// The field as a literal without indexing (what a table-less block holds).
    fn put_plain(&self, out: &mut Vec<u8>) {
        match self {
            Field::Fixed(b) => out.extend_from_slice(b),
            Field::Table {
                name,
                value,
                name_index,
            } => hpack::put_literal(out, 4, 0, name, value, *name_index),
        }
    }
}

/// A header block in HEADERS (and CONTINUATION) frames whose stream ids are
/// patched per request.
#[derive(Debug, Clone, Default)]
pub struct Framed {
    frames: Vec<u8>,
    /// Where each frame's stream id sits in `frames`.
    ids: Vec<usize>,
}

impl Framed {
    /// Frames `block`: HEADERS, then CONTINUATION frames past the smallest frame
    /// size every peer accepts; END_STREAM on HEADERS when no body follows.
    pub fn new(block: &[u8], end_stream: bool) -> Framed {
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
                if end_stream {
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
        Framed { frames, ids }
    }

    /// The frames without stream ids (tests read the block from them).
    #[cfg(test)]
    pub fn bytes(&self) -> &[u8] {
        &self.frames
    }
    /// Appends the frames for stream `id`.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>, id: u32) {
        let at = out.len();
        out.extend_from_slice(&self.frames);
        for &i in &self.ids {
            out[at + i..at + i + 4].copy_from_slice(&id.to_be_bytes());
        }
    }
}

/// What a request hands the encoder: its fields, its table-less framing, whether a
/// body follows, and its key for the per-connection cache (at least [`CACHED`]:
/// never cached).
pub struct Block<'a> {
    pub fields: &'a [Field],
    pub plain: &'a Framed,
    pub end_stream: bool,
    pub key: usize,
}

/// A field in the dynamic table: (name, value).
type Entry = (Box<[u8]>, Box<[u8]>);

/// A connection's encoder: its dynamic table and each endpoint's framed block.
#[derive(Debug)]
pub struct Encoder {
    /// The most the table may hold (the server's SETTINGS_HEADER_TABLE_SIZE, at most
    /// the default).
    max: usize,
    size: usize,
    /// In insertion order: the newest is index 62.
    entries: Vec<Entry>,
    /// Changes whenever an index changes meaning.
    generation: u32,
    /// A size update owed at the start of the next block.
    update: Option<usize>,
    cache: Vec<Option<(u32, Framed)>>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            max: TABLE_SIZE,
            size: 0,
            entries: Vec::new(),
            generation: 0,
            update: None,
            cache: Vec::new(),
        }
    }
}

impl Encoder {
    /// The server's SETTINGS_HEADER_TABLE_SIZE. A larger one changes nothing (the
    /// encoder may use less, §4.2); a smaller one evicts the oldest entries to fit
    /// and owes a size update.
    pub fn peer_limit(&mut self, v: u32) {
        let v = v as usize;
        if v >= self.max {
            return;
        }
        self.max = v;
        self.update = Some(v);
        let mut drop = 0;
        while self.size > v {
            let (n, val) = &self.entries[drop];
            self.size -= n.len() + val.len() + 32;
            drop += 1;
        }
        self.entries.drain(..drop);
        self.generation = self.generation.wrapping_add(1);
    }

    /// Appends `req`'s header frames for stream `id`.
    pub fn write(&mut self, req: Block<'_>, out: &mut Vec<u8>, id: u32) {
        if self.max == 0 && self.update.is_none() {
            req.plain.write(out, id);
            return;
        }
        if let Some(Some((g, f))) = self.cache.get(req.key) {
            if *g == self.generation && self.update.is_none() {
                f.write(out, id);
                return;
            }
        }
        let mut block = Vec::with_capacity(64);
        let stable = self.encode(req.fields, &mut block);
        let framed = Framed::new(&block, req.end_stream);
        framed.write(out, id);
        if stable && req.key < CACHED {
            if self.cache.len() <= req.key {
                self.cache.resize_with(req.key + 1, || None);
            }
            self.cache[req.key] = Some((self.generation, framed));
        }
    }

    /// Encodes `fields` against the table, adding what fits; true when the block
    /// changed nothing (so it can be sent again as it is).
    fn encode(&mut self, fields: &[Field], out: &mut Vec<u8>) -> bool {
        let mut stable = true;
        if let Some(u) = self.update.take() {
            hpack::put_int(out, 5, 0x20, u);
            stable = false;
        }
        for f in fields {
            let Field::Table {
                name,
                value,
                name_index,
            } = f
            else {
                f.put_plain(out);
                continue;
            };
            if let Some(k) = self
                .entries
                .iter()
                .position(|(n, v)| n == name && v == value)
            {
                let index = hpack::STATIC.len() + self.entries.len() - k;
                hpack::put_int(out, 7, 0x80, index);
                continue;
            }
            let size = name.len() + value.len() + 32;
            if self.size + size <= self.max {
                hpack::put_literal(out, 6, 0x40, name, value, *name_index);
                self.entries.push((name.clone(), value.clone()));
                self.size += size;
                self.generation = self.generation.wrapping_add(1);
                stable = false;
            } else {
                f.put_plain(out);
            }
        }
        stable
    }
}

/// Encodes `fields` without the table (a block that never depends on another).
pub fn plain(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    for f in fields {
        f.put_plain(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::h2::hpack::Decoder;
    use crate::load::h2::tests::All as Fields;

    fn fields(list: &[(&str, &str)]) -> Vec<Field> {
        list.iter()
            .map(|(n, v)| Field::new(n, v.as_bytes()))
            .collect()
    }

    /// The block out of one request's frames (one HEADERS frame).
    fn block_of(out: &[u8]) -> &[u8] {
        &out[frame::HEAD_LEN..]
    }

    /// RFC 7541 §6.1 and §6.2.1: the first request adds its non-static fields,
    /// later ones name them by index (one octet each), and a second endpoint's
    /// insertion moves the first's indexes without breaking them: our own decoder
    /// (which keeps the table exactly) reads every block back to the same fields.
    #[test]
    fn fields_are_indexed_once_and_decode_the_same() {
        let a_list = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/1k"),
            (":authority", "127.0.0.1:8080"),
            ("user-agent", "latscope/0.1"),
            ("authorization", "Bearer secret"),
        ];
        let b_list = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/api"),
            (":authority", "127.0.0.1:8080"),
            ("x-trace", "1"),
        ];
        let (a, b) = (fields(&a_list), fields(&b_list));
        let (pa, pb) = (Framed::new(&plain(&a), true), Framed::new(&plain(&b), true));
        let mut enc = Encoder::default();
        let mut dec = Decoder::new(TABLE_SIZE);
        let mut sizes = Vec::new();
        for (i, (f, p, list, key)) in [
            (&a, &pa, &a_list[..], 0),
            (&a, &pa, &a_list[..], 0),
            (&b, &pb, &b_list[..], 1),
            (&a, &pa, &a_list[..], 0),
            (&b, &pb, &b_list[..], 1),
            (&a, &pa, &a_list[..], 0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut out = Vec::new();
            let block = Block {
                fields: f,
                plain: p,
                end_stream: true,
                key,
            };
            enc.write(block, &mut out, 2 * i as u32 + 1);
            let mut got = Fields(Vec::new());
            dec.decode(block_of(&out), &mut got).unwrap();
            let want: Vec<(String, String)> = list
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            assert_eq!(got.0, want, "request {i}");
            assert_eq!(frame::u32_at(&out, 5), 2 * i as u32 + 1);
            sizes.push(out.len());
        }
        // Indexed: the repeat of `a` is far smaller than its first send, and the
        // secret stays a literal (its value is in every block).
        assert!(sizes[1] < sizes[0] / 2, "{sizes:?}");
        assert_eq!(sizes[3], sizes[5], "{sizes:?}");
        let mut out = Vec::new();
        enc.write(
            Block {
                fields: &a,
                plain: &pa,
                end_stream: true,
                key: 0,
            },
            &mut out,
            99,
        );
        assert!(out.windows(13).any(|w| w == b"Bearer secret"));
    }

    /// A server that allows no table (SETTINGS_HEADER_TABLE_SIZE 0) gets the
    /// table-less blocks; one that lowers it after fields were added gets a size
    /// update first (§4.2), and the decoder, held to the new size, still agrees.
    #[test]
    fn the_servers_table_size_is_honoured() {
        let list = [(":path", "/x"), ("user-agent", "latscope/0.1")];
        let f = fields(&list);
        let p = Framed::new(&plain(&f), true);
        let block = |key| Block {
            fields: &f,
            plain: &p,
            end_stream: true,
            key,
        };
        let mut none = Encoder::default();
        none.peer_limit(0);
        let mut out = Vec::new();
        none.write(block(0), &mut out, 1);
        // The size update to 0 first, then literals without indexing.
        assert_eq!(block_of(&out)[0], 0x20);
        let (mut again, mut table_less) = (Vec::new(), Vec::new());
        none.write(block(0), &mut again, 1);
        p.write(&mut table_less, 1);
        assert_eq!(again, table_less, "table-less after the update");

        let mut enc = Encoder::default();
        let mut dec = Decoder::new(TABLE_SIZE);
        let mut out = Vec::new();
        enc.write(block(0), &mut out, 1);
        dec.decode(block_of(&out), &mut Fields(Vec::new())).unwrap();
        enc.peer_limit(40);
        let mut out = Vec::new();
        enc.write(block(0), &mut out, 3);
        let mut got = Fields(Vec::new());
        dec.decode(block_of(&out), &mut got).unwrap();
        assert_eq!(got.0.len(), 2);
        assert_eq!(got.0[1], ("user-agent".into(), "latscope/0.1".into()));
        assert!(dec.table_size_now() <= 40);
    }
}
