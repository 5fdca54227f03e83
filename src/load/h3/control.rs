//! The server's control stream (RFC 9114 §6.2.1), sans I/O: its first frame must
//! be SETTINGS (§7.2.4), which may come once; GOAWAY names the first request it
//! will not process (§5.2, never increasing); unknown frames are skipped without
//! buffering; frames that belong on request streams, or pushes this client never
//! allowed (no MAX_PUSH_ID is sent), are the connection's error. What it buffers is
//! bounded by [`MAX_CONTROL_FRAME`].

use super::frame::{
    frame_head, varint, H3Error, CANCEL_PUSH, DATA, GOAWAY, H3_EXCESSIVE_LOAD, H3_FRAME_ERROR,
    H3_FRAME_UNEXPECTED, H3_ID_ERROR, H3_MISSING_SETTINGS, H3_SETTINGS_ERROR, HEADERS, MAX_PUSH_ID,
    PUSH_PROMISE, SETTINGS, SETTINGS_MAX_FIELD_SECTION_SIZE,
};

/// The largest SETTINGS or GOAWAY frame accepted (each setting is two varints:
/// 1,024 of the longest).
pub const MAX_CONTROL_FRAME: u64 = 16 * 1024;

/// What the server's control stream said so far.
#[derive(Debug, Default)]
pub struct Control {
    buf: Vec<u8>,
    /// Octets of an unknown frame still to skip.
    skip: u64,
    settled: bool,
    /// The last GOAWAY's stream id: requests from it on were not processed.
    pub goaway: Option<u64>,
    /// The largest field section the server accepts (§4.2.2), when it says.
    pub max_section: Option<u64>,
}

impl Control {
    /// The stream's next octets.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), H3Error> {
        if self.skip > 0 {
            let n = data
                .len()
                .min(usize::try_from(self.skip).unwrap_or(usize::MAX));
            self.skip -= n as u64;
            data = &data[n..];
        }
        self.buf.extend_from_slice(data);
        // Frames are read from `at` on; what they used goes once, at the end.
        let mut at = 0;
        let r = self.frames(&mut at);
        self.buf.drain(..at.min(self.buf.len()));
        r
    }

    /// Reads the whole frames in `buf` from `at`, moving `at` past them.
    fn frames(&mut self, at: &mut usize) -> Result<(), H3Error> {
        while let Some((kind, len, n)) = frame_head(&self.buf[*at..]) {
            if !self.settled && kind != SETTINGS {
                return Err(H3Error::conn(H3_MISSING_SETTINGS));
            }
            match kind {
                DATA | HEADERS | 0x2 | 0x6 | 0x8 | 0x9 => {
                    return Err(H3Error::conn(H3_FRAME_UNEXPECTED))
                }
                // Only a client sends MAX_PUSH_ID; PUSH_PROMISE belongs on a
                // request stream (§7.2.5); no push was allowed to cancel (§7.2.3).
                MAX_PUSH_ID | PUSH_PROMISE => return Err(H3Error::conn(H3_FRAME_UNEXPECTED)),
                CANCEL_PUSH => return Err(H3Error::conn(H3_ID_ERROR)),
                SETTINGS | GOAWAY => {
                    if len > MAX_CONTROL_FRAME {
                        return Err(H3Error::conn(H3_EXCESSIVE_LOAD));
                    }
                    let start = *at + n;
                    let end = start + len as usize;
                    if self.buf.len() < end {
                        break;
                    }
                    let payload = std::mem::take(&mut self.buf);
                    let r = if kind == SETTINGS {
                        self.settings(&payload[start..end])
                    } else {
                        self.goaway(&payload[start..end])
                    };
                    self.buf = payload;
                    r?;
                    *at = end;
                }
                _ => {
                    let whole = (n as u64).saturating_add(len);
                    let have = (self.buf.len() - *at) as u64;
                    if have < whole {
                        self.skip = whole - have;
                        *at = self.buf.len();
                        break;
                    }
                    *at += whole as usize;
                }
            }
        }
        Ok(())
    }

    /// §7.2.4: pairs of (identifier, value); none twice, none of HTTP/2's.
    fn settings(&mut self, mut p: &[u8]) -> Result<(), H3Error> {
        if self.settled {
            return Err(H3Error::conn(H3_FRAME_UNEXPECTED));
        }
        self.settled = true;
        let mut seen: Vec<u64> = Vec::new();
        while !p.is_empty() {
            let (id, a) = varint(p).ok_or(H3Error::conn(H3_FRAME_ERROR))?;
            let (value, b) = varint(&p[a..]).ok_or(H3Error::conn(H3_FRAME_ERROR))?;
            p = &p[a + b..];
            if id == SETTINGS_MAX_FIELD_SECTION_SIZE {
                self.max_section = Some(value);
            }
            if (0x2..=0x5).contains(&id) || seen.contains(&id) {
                return Err(H3Error::conn(H3_SETTINGS_ERROR));
            }
            if seen.len() < 64 {
                seen.push(id);
            }
        }
        Ok(())
    }

    /// §5.2 and §7.2.6: one varint, a client-initiated bidirectional stream id
    /// (a multiple of 4), never above an earlier one.
    fn goaway(&mut self, p: &[u8]) -> Result<(), H3Error> {
        match varint(p) {
            Some((id, n)) if n == p.len() => {
                if id % 4 != 0 || self.goaway.is_some_and(|g| id > g) {
                    return Err(H3Error::conn(H3_ID_ERROR));
                }
                self.goaway = Some(id);
                Ok(())
            }
            _ => Err(H3Error::conn(H3_FRAME_ERROR)),
        }
    }
}

impl Control {
    /// Octets held (a frame head or a SETTINGS/GOAWAY frame not yet whole).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}
