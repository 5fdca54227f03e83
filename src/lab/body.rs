//! Response bodies: a whole buffer, or a pattern streamed chunk by chunk (so
//! `/bytes/10GB` never allocates more than one chunk). A body can carry the worker
//! slot of its request, so the slot is held until the body is sent or abandoned.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::gate::Ticket;

/// Bytes per streamed chunk.
const CHUNK: usize = 64 * 1024;

/// A lab response body.
#[derive(Debug)]
pub(crate) struct LabBody {
    kind: Kind,
    ticket: Option<Ticket>,
}

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    Repeat { pattern: Bytes, remaining: u64 },
}

impl LabBody {
    /// An empty body.
    pub(crate) fn empty() -> LabBody {
        LabBody::full(Bytes::new())
    }

    /// A body of exactly these bytes.
    pub(crate) fn full(data: impl Into<Bytes>) -> LabBody {
        let data = data.into();
        LabBody {
            kind: Kind::Full((!data.is_empty()).then_some(data)),
            ticket: None,
        }
    }

    /// `len` bytes of `pattern` repeated, streamed one chunk at a time.
    pub(crate) fn repeat(pattern: Bytes, len: u64) -> LabBody {
        debug_assert!(!pattern.is_empty());
        LabBody {
            kind: Kind::Repeat {
                pattern,
                remaining: len,
            },
            ticket: None,
        }
    }

    /// Keeps the request's worker slot until this body is done.
    pub(crate) fn hold(&mut self, ticket: Ticket) {
        self.ticket = Some(ticket);
    }
}

impl Body for LabBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let frame = match &mut this.kind {
            Kind::Full(data) => data.take(),
            Kind::Repeat { pattern, remaining } => {
                if *remaining == 0 {
                    None
                } else {
                    let n = (*remaining).min(pattern.len() as u64) as usize;
                    *remaining -= n as u64;
                    Some(pattern.slice(..n))
                }
            }
        };
        if frame.is_none() {
            // Done: free the worker slot now rather than when hyper drops the body.
            this.ticket = None;
        }
        Poll::Ready(frame.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(data) => data.is_none(),
            Kind::Repeat { remaining, .. } => *remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Kind::Repeat { remaining, .. } => SizeHint::with_exact(*remaining),
        }
    }
}

/// 64 KiB of pseudo-random bytes (incompressible, the same in every run), for `/bytes`.
pub(crate) fn random_chunk() -> Bytes {
    static DATA: OnceLock<Bytes> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut v = Vec::with_capacity(CHUNK);
        while v.len() < CHUNK {
            x = splitmix(x);
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.truncate(CHUNK);
        Bytes::from(v)
    })
    .clone()
}

/// About 64 KiB of plain English-like text lines (very compressible), for `/text`.
pub(crate) fn text_chunk() -> Bytes {
    static DATA: OnceLock<Bytes> = OnceLock::new();
    DATA.get_or_init(|| {
        const WORDS: [&str; 16] = [
            "latency",
            "request",
            "server",
            "cache",
            "network",
            "round",
            "trip",
            "window",
            "handshake",
            "response",
            "header",
            "stream",
            "queue",
            "worker",
            "packet",
            "time",
        ];
        let mut text = String::with_capacity(CHUNK + 128);
        let mut line = 0u64;
        while text.len() < CHUNK {
            line += 1;
            text.push_str(&format!("{line:06} "));
            let mut x = splitmix(line);
            for _ in 0..10 {
                text.push_str(WORDS[(x & 15) as usize]);
                text.push(' ');
                x >>= 4;
            }
            text.push('\n');
        }
        text.truncate(CHUNK);
        Bytes::from(text)
    })
    .clone()
}

/// One step of SplitMix64: a tiny, good-enough mixer for ids and filler bytes.
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn repeat_streams_exactly_len_bytes_in_chunks() {
        let body = LabBody::repeat(random_chunk(), 200_000);
        assert_eq!(body.size_hint().exact(), Some(200_000));
        let mut body = body;
        let mut total = 0;
        let mut frames = 0;
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            assert!(data.len() <= CHUNK);
            total += data.len();
            frames += 1;
        }
        assert_eq!(total, 200_000);
        assert_eq!(frames, 4);
    }

    #[test]
    fn text_is_text() {
        let t = text_chunk();
        assert_eq!(t.len(), CHUNK);
        assert!(std::str::from_utf8(&t).is_ok());
    }
}
