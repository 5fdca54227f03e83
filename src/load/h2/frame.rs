//! HTTP/2 framing (RFC 9113 §4, §6): the 9-octet frame header, the frame types and
//! flags the client uses, and writers for the frames it sends. Payloads are read
//! in place by `conn`; nothing here allocates.

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// Error codes (RFC 9113 §7).
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Settings identifiers (RFC 9113 §6.5.2).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// The frame size every endpoint must accept, and the largest this client
/// announces (it never raises SETTINGS_MAX_FRAME_SIZE).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest flow-control window (§6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The initial flow-control window of a connection and of each stream (§6.9.2).
pub const DEFAULT_WINDOW: i64 = 65_535;
/// Size of a frame header.
pub const HEAD_LEN: usize = 9;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    /// The stream identifier, the reserved bit cleared.
    pub stream: u32,
}

impl Head {
    /// Reads a frame header from the first 9 octets of `b` (None when shorter).
    #[inline]
    pub fn parse(b: &[u8]) -> Option<Head> {
        let h: &[u8; HEAD_LEN] = b.get(..HEAD_LEN)?.try_into().ok()?;
        Some(Head {
            len: usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }

    /// Whether a flag is set.
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Appends a frame header.
#[inline]
pub fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Appends a SETTINGS frame with `settings`.
pub fn write_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    write_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, v) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends an empty SETTINGS frame with ACK.
pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, SETTINGS, ACK, 0);
}

/// Appends a WINDOW_UPDATE of `increment` (1 ..= 2^31-1) for `stream` (0: the
/// connection).
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

/// Appends a RST_STREAM with error `code`.
pub fn write_rst(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends the PING ACK answering `payload`.
pub fn write_ping_ack(out: &mut Vec<u8>, payload: &[u8; 8]) {
    write_head(out, 8, PING, ACK, 0);
    out.extend_from_slice(payload);
}

/// Appends a GOAWAY naming `last` (the last server stream processed: 0 here).
pub fn write_goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    write_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A malformed frame (its error code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError(pub u32);

/// The payload of a DATA or HEADERS frame without its padding (§6.1, §6.2), and
/// for HEADERS without the priority fields.
pub fn unpad<'p>(head: &Head, payload: &'p [u8]) -> Result<&'p [u8], FrameError> {
    let mut p = payload;
    let mut pad = 0;
    if head.has(PADDED) {
        let (&n, rest) = p.split_first().ok_or(FrameError(FRAME_SIZE_ERROR))?;
        pad = usize::from(n);
        p = rest;
    }
    if head.kind == HEADERS && head.has(PRIORITY_FLAG) {
        p = p.get(5..).ok_or(FrameError(FRAME_SIZE_ERROR))?;
    }
    // §6.1: padding as long as the payload or longer is a PROTOCOL_ERROR.
    if pad > p.len() {
        return Err(FrameError(PROTOCOL_ERROR));
    }
    Ok(&p[..p.len() - pad])
}

/// A 32-bit big-endian number at `at` of `p` (the caller checked the length).
#[inline]
pub fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header written and read back; the reserved bit is ignored on reading.
    #[test]
    fn head_round_trips() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            0x01_02_03,
            HEADERS,
            END_HEADERS | END_STREAM,
            0x7fff_ffff,
        );
        assert_eq!(out, [1, 2, 3, 1, 5, 0x7f, 0xff, 0xff, 0xff]);
        let h = Head::parse(&out).unwrap();
        assert_eq!(
            (h.len, h.kind, h.flags, h.stream),
            (0x01_02_03, 1, 5, 0x7fff_ffff)
        );
        out[5] |= 0x80;
        assert_eq!(Head::parse(&out).unwrap().stream, 0x7fff_ffff);
        assert_eq!(Head::parse(&out[..8]), None);
    }

    /// The frames the client sends, byte for byte (RFC 9113 §6.5, §6.7, §6.9, §6.4).
    #[test]
    fn writes_control_frames() {
        let mut out = Vec::new();
        write_settings(&mut out, &[(SETTINGS_ENABLE_PUSH, 0)]);
        assert_eq!(out, [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]);
        out.clear();
        write_window_update(&mut out, 3, 1 << 30);
        assert_eq!(out, [0, 0, 4, 8, 0, 0, 0, 0, 3, 0x40, 0, 0, 0]);
        out.clear();
        write_ping_ack(&mut out, b"12345678");
        assert_eq!(&out[..9], [0, 0, 8, 6, 1, 0, 0, 0, 0]);
        assert_eq!(&out[9..], b"12345678");
        out.clear();
        write_rst(&mut out, 5, CANCEL);
        assert_eq!(out, [0, 0, 4, 3, 0, 0, 0, 0, 5, 0, 0, 0, 8]);
    }

    /// Padding and priority fields are stripped; padding past the payload is an
    /// error (§6.1, §6.2).
    #[test]
    fn unpads() {
        let h = |kind, flags| Head {
            len: 0,
            kind,
            flags,
            stream: 1,
        };
        assert_eq!(unpad(&h(DATA, 0), b"abc"), Ok(&b"abc"[..]));
        assert_eq!(unpad(&h(DATA, PADDED), b"\x02abcxx"), Ok(&b"abc"[..]));
        assert_eq!(
            unpad(&h(DATA, PADDED), b"\x09abc"),
            Err(FrameError(PROTOCOL_ERROR))
        );
        assert_eq!(
            unpad(&h(DATA, PADDED), b""),
            Err(FrameError(FRAME_SIZE_ERROR))
        );
        let prio = b"\x01\x00\x00\x00\x03\x10block\x00";
        assert_eq!(
            unpad(&h(HEADERS, PADDED | PRIORITY_FLAG), prio),
            Ok(&b"block"[..])
        );
        assert_eq!(
            unpad(&h(HEADERS, PRIORITY_FLAG), b"\x00\x00"),
            Err(FrameError(FRAME_SIZE_ERROR))
        );
    }
}
