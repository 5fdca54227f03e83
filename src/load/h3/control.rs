//! The server's control stream (RFC 9114 §6.2.1), sans I/O: its first frame must
//! be SETTINGS (§7.2.4), which may come once; GOAWAY names the first request it
//! will not process (§5.2, never increasing); unknown frames are skipped without
//! buffering; frames that belong on request streams, or pushes this client never
//! allowed (no MAX_PUSH_ID is sent), are the connection's error. What it buffers is
//! bounded by [`MAX_CONTROL_FRAME`].

use super::frame::{
    frame_head, varint, H3Error, CANCEL_PUSH, DATA, GOAWAY, H3_EXCESSIVE_LOAD, H3_FRAME_ERROR,
    H3_FRAME_UNEXPECTED, H3_ID_ERROR, H3_MISSING_SETTINGS, H3_SETTINGS_ERROR, HEADERS, MAX_PUSH_ID,
    PUSH_PROMISE, SETTINGS,
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
        while let Some((kind, len, n)) = frame_head(&self.buf) {
            if !self.settled && kind != SETTINGS {
                return Err(H3Error::conn(H3_MISSING_SETTINGS));
            }
            match kind {
                DATA | HEADERS | 0x2 | 0x6 | 0x8 | 0x9 => {
                    return Err(H3Error::conn(H3_FRAME_UNEXPECTED))
                }
                // Only a client sends MAX_PUSH_ID; pushes were never allowed.
                MAX_PUSH_ID => return Err(H3Error::conn(H3_FRAME_UNEXPECTED)),
                PUSH_PROMISE | CANCEL_PUSH => return Err(H3Error::conn(H3_ID_ERROR)),
                SETTINGS | GOAWAY => {
                    if len > MAX_CONTROL_FRAME {
                        return Err(H3Error::conn(H3_EXCESSIVE_LOAD));
                    }
                    let end = n + len as usize;
                    if self.buf.len() < end {
                        break;
                    }
                    let payload = self.buf[n..end].to_vec();
                    self.buf.drain(..end);
                    if kind == SETTINGS {
                        self.settings(&payload)?;
                    } else {
                        self.goaway(&payload)?;
                    }
                }
                _ => {
                    let whole = (n as u64).saturating_add(len);
                    if (self.buf.len() as u64) < whole {
                        self.skip = whole - self.buf.len() as u64;
                        self.buf.clear();
                        break;
                    }
                    self.buf.drain(..whole as usize);
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
            let (_, b) = varint(&p[a..]).ok_or(H3Error::conn(H3_FRAME_ERROR))?;
            p = &p[a + b..];
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
