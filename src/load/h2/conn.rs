//! One HTTP/2 connection's state, sans I/O: [`Conn::recv`] takes the bytes read,
//! [`Conn::out`] holds the bytes to write, and each request is an entry that ends
//! with a [`Done`]. It announces a large receive window up front (2^30 − 1 for the
//! connection and each stream, as h2load does) and sends WINDOW_UPDATE only after
//! half of it is used; it answers SETTINGS and PING, honours the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS and its flow-control windows for request bodies,
//! and treats GOAWAY and RST_STREAM as RFC 9113 says. A header block is always
//! decoded, also for a stream no longer wanted, so the HPACK table stays right;
//! the requests' blocks go out whole, in order, even for a cancelled stream, so the
//! server's table of them (`encode`, bounded by its SETTINGS_HEADER_TABLE_SIZE)
//! stays right too.
//!
//! What a server can make it queue or do is bounded (RFC 9113 §10.5): at most
//! [`MAX_PENDING_ACKS`] answers (PING and SETTINGS acknowledgements, RST_STREAM)
//! wait unwritten — a server that floods control frames and reads nothing gets
//! GOAWAY ENHANCE_YOUR_CALM, as nghttp2 and the h2 crate do — and a header block
//! takes at most [`MAX_CONTINUATIONS`] CONTINUATION frames and [`MAX_BLOCK`]
//! octets. WINDOW_UPDATE, RST_STREAM, PRIORITY, GOAWAY and unknown frames queue
//! nothing; HPACK size updates are capped per block in `hpack`.

use std::task::Waker;
use std::time::Instant;

use super::encode::Encoder;
use super::frame::{self, Head};
use super::hpack::Decoder;
use super::Request;
use crate::cache::status::Seen;
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::script::Kept;

mod recv;

/// The receive window announced for the connection and each stream.
const WINDOW: u32 = (1 << 30) - 1;
/// Received bytes acknowledged (WINDOW_UPDATE) once this many are unacknowledged.
const UPDATE_AT: u32 = WINDOW / 2;
/// The largest header block accepted (HEADERS and CONTINUATION together).
const MAX_BLOCK: usize = crate::net::http::MAX_RESPONSE_HEAD;
/// Frames queued in answer to the server (PING and SETTINGS acknowledgements,
/// RST_STREAM) at most while none of [`Conn::out`] could be written: past this the
/// connection ends with GOAWAY ENHANCE_YOUR_CALM (nghttp2's `max_outbound_ack`).
pub const MAX_PENDING_ACKS: u32 = 1000;
/// CONTINUATION frames of one header block at most: a block of [`MAX_BLOCK`]
/// needs 16 of the smallest maximum frame size; past this, ENHANCE_YOUR_CALM
/// (CVE-2024-27316's flood of empty CONTINUATION frames).
pub const MAX_CONTINUATIONS: u32 = 32;

/// How a stream failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    Kind(ErrorKind),
    /// The server did not process it (GOAWAY naming an earlier stream, or
    /// REFUSED_STREAM; RFC 9113 §8.7), or the connection closed before any byte
    /// of its response: it may be sent again on a new connection.
    Retry,
}

/// A finished request.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    pub outcome: Outcome,
    /// It may be sent again (see [`Fail::Retry`]).
    pub retry: bool,
}

impl Done {
    /// A request that never got a stream on a connection that went away.
    pub fn refused() -> Done {
        Done {
            outcome: Outcome::failed(ErrorKind::Reset),
            retry: true,
        }
    }
}

#[derive(Debug, Default)]
struct Entry {
    /// The stream (0 once it is closed or the entry is free).
    id: u32,
    used: bool,
    status: u16,
    bytes: u64,
    cache: Seen,
    first_byte: Option<Instant>,
    end: Option<Result<(), Fail>>,
    /// Request body octets sent, and whether END_STREAM went out.
    sent: usize,
    local_end: bool,
    send_window: i64,
    unacked: u32,
    waker: Option<Waker>,
    /// What a scenario's checks and extractions read of the response (its
    /// headers, its body), when they read it.
    kept: Option<Box<Kept>>,
}

/// A connection's state.
#[derive(Debug)]
pub struct Conn {
    dec: Decoder,
    /// The requests' side of HPACK.
    enc: Encoder,
    /// Bytes to write.
    pub out: Vec<u8>,
    entries: Vec<Entry>,
    free: Vec<usize>,
    next_id: u32,
    /// Streams open (counted against the server's limit).
    open: u32,
    max_streams: u32,
    peer_window: i64,
    max_frame: usize,
    send_window: i64,
    unacked: u32,
    /// The server's first SETTINGS arrived.
    settled: bool,
    goaway: Option<u32>,
    dead: Option<ErrorKind>,
    /// A header block in CONTINUATION frames: (stream, END_STREAM).
    cont: Option<(u32, bool)>,
    /// CONTINUATION frames of the block in `cont`.
    continuations: u32,
    /// Answers queued in `out` since it was last written whole.
    acks: u32,
    block: Vec<u8>,
    /// The last header block decoded without changing the HPACK table, with the
    /// table's generation and what it decoded to.
    last_head: Option<recv::LastHead>,
    mark_first_byte: bool,
}

impl Conn {
    /// A new connection: the preface, SETTINGS and the connection window are
    /// queued in [`Conn::out`]. `mark_first_byte`: note when each head arrives.
    pub fn new(mark_first_byte: bool) -> Conn {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        frame::write_settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, WINDOW),
                (frame::SETTINGS_MAX_HEADER_LIST_SIZE, MAX_BLOCK as u32),
            ],
        );
        frame::write_window_update(&mut out, 0, WINDOW - frame::DEFAULT_WINDOW as u32);
        Conn {
            dec: Decoder::default(),
            enc: Encoder::default(),
            out,
            entries: Vec::new(),
            free: Vec::new(),
            next_id: 1,
            open: 0,
            max_streams: u32::MAX,
            peer_window: frame::DEFAULT_WINDOW,
            max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            unacked: 0,
            settled: false,
            goaway: None,
            dead: None,
            cont: None,
            continuations: 0,
            acks: 0,
            block: Vec::new(),
            last_head: None,
            mark_first_byte,
        }
    }

    /// Everything in [`Conn::out`] was written: it is emptied.
    pub fn flushed(&mut self) {
        self.out.clear();
        self.acks = 0;
    }

    /// One more answer to be queued for the server; Err when too many wait
    /// unwritten.
    fn answer(&mut self) -> Result<(), u32> {
        self.acks += 1;
        if self.acks > MAX_PENDING_ACKS {
            return Err(frame::ENHANCE_YOUR_CALM);
        }
        Ok(())
    }

    /// The server's SETTINGS arrived (the handshake is over).
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Why the connection ended, if it did.
    pub fn dead(&self) -> Option<ErrorKind> {
        self.dead
    }

    /// Whether new streams may be opened on it (alive, no GOAWAY, ids left).
    pub fn usable(&self) -> bool {
        self.dead.is_none() && self.goaway.is_none() && self.next_id < 0x7fff_fff0
    }

    /// Whether the server's stream limit leaves room for one more.
    pub fn has_room(&self) -> bool {
        self.open < self.max_streams
    }

    /// Streams open.
    #[cfg(test)]
    pub fn open(&self) -> u32 {
        self.open
    }

    /// Opens a stream for `req` (the caller checked [`Conn::usable`] and
    /// [`Conn::has_room`]); returns its entry.
    pub fn start(&mut self, req: &Request) -> usize {
        let id = self.next_id;
        self.next_id += 2;
        self.open += 1;
        self.enc.write(req.block(), &mut self.out, id);
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(Entry::default());
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        *e = Entry {
            id,
            used: true,
            local_end: req.body().is_empty(),
            send_window: self.peer_window,
            waker: e.waker.take(),
            ..Entry::default()
        };
        self.send_body(i, req.body());
        i
    }

    /// Entry `i` keeps what `kept` asks for of its response (set right after
    /// [`Conn::start`], before any of the response is read).
    pub fn keep(&mut self, i: usize, kept: Box<Kept>) {
        self.entries[i].kept = Some(kept);
    }

    /// What entry `i` kept, handed back (after [`Conn::take`], before the next
    /// [`Conn::start`]).
    pub fn kept(&mut self, i: usize) -> Option<Box<Kept>> {
        self.entries[i].kept.take()
    }

    /// Remembers the waker of entry `i`'s owner.
    pub fn set_waker(&mut self, i: usize, w: &Waker) {
        let e = &mut self.entries[i];
        if !e.waker.as_ref().is_some_and(|o| o.will_wake(w)) {
            e.waker = Some(w.clone());
        }
    }

    /// Sends what the flow-control windows allow of entry `i`'s `body`.
    pub fn send_body(&mut self, i: usize, body: &[u8]) {
        let e = &mut self.entries[i];
        while !e.local_end && e.end.is_none() {
            let left = body.len() - e.sent;
            let n = (left as i64)
                .min(e.send_window)
                .min(self.send_window)
                .min(self.max_frame as i64)
                .max(0) as usize;
            if n == 0 {
                return;
            }
            let end = n == left;
            let flags = if end { frame::END_STREAM } else { 0 };
            frame::write_head(&mut self.out, n, frame::DATA, flags, e.id);
            self.out.extend_from_slice(&body[e.sent..e.sent + n]);
            e.sent += n;
            e.send_window -= n as i64;
            self.send_window -= n as i64;
            e.local_end = end;
        }
    }

    /// The result of entry `i` once it is over; the entry is freed then.
    pub fn take(&mut self, i: usize) -> Option<Done> {
        let e = &mut self.entries[i];
        let end = e.end?;
        let outcome = match end {
            Ok(()) => Outcome {
                status: e.status,
                error: ErrorKind::of_status(e.status),
                bytes: e.bytes,
                cache: e.cache,
                first_byte: e.first_byte,
                ..Outcome::default()
            },
            Err(Fail::Kind(k)) => Outcome {
                status: e.status,
                error: Some(k),
                bytes: e.bytes,
                ..Outcome::default()
            },
            Err(Fail::Retry) => Outcome::failed(ErrorKind::Reset),
        };
        e.used = false;
        e.end = None;
        self.free.push(i);
        Some(Done {
            outcome,
            retry: end == Err(Fail::Retry),
        })
    }

    /// Entry `i`'s owner gave up on it (timeout): the stream is reset.
    pub fn cancel(&mut self, i: usize) {
        if self.entries[i].end.is_none() {
            let id = self.entries[i].id;
            self.finish(i, Err(Fail::Kind(ErrorKind::Timeout)));
            if self.dead.is_none() {
                frame::write_rst(&mut self.out, id, frame::CANCEL);
            }
        }
        let _ = self.take(i);
        self.entries[i].waker = None;
    }

    /// Wakes the owner of entry `i` when its stream is open; false otherwise.
    pub fn wake(&self, i: usize) -> bool {
        match self.entries.get(i) {
            Some(e) if e.used && e.end.is_none() => {
                e.waker.as_ref().map(Waker::wake_by_ref).is_some()
            }
            _ => false,
        }
    }

    /// Wakes the owner of some stream still open other than `i`; which one.
    pub fn wake_other(&mut self, i: usize) -> Option<usize> {
        for (j, e) in self.entries.iter().enumerate() {
            if j != i && e.used && e.end.is_none() {
                if let Some(w) = &e.waker {
                    w.wake_by_ref();
                    return Some(j);
                }
            }
        }
        None
    }

    /// Whether entry `i` is over (its result waits in [`Conn::take`]).
    pub fn is_done(&self, i: usize) -> bool {
        self.entries[i].end.is_some()
    }

    /// The connection ended: end of stream (`None`) or an I/O error's kind. Streams
    /// with no response byte yet may be retried.
    pub fn closed(&mut self, kind: Option<ErrorKind>) {
        if self.dead.is_some() {
            return;
        }
        self.dead = Some(kind.unwrap_or(ErrorKind::Reset));
        for i in 0..self.entries.len() {
            let e = &self.entries[i];
            if e.used && e.end.is_none() {
                let fail = match kind {
                    None if e.status == 0 && e.bytes == 0 => Fail::Retry,
                    k => Fail::Kind(k.unwrap_or(ErrorKind::Reset)),
                };
                self.finish(i, Err(fail));
            }
        }
    }

    /// A connection error (RFC 9113 §5.4.1): GOAWAY with `code`, every open
    /// stream fails as `kind`.
    fn fail(&mut self, code: u32, kind: ErrorKind) {
        if self.dead.is_some() {
            return;
        }
        frame::write_goaway(&mut self.out, 0, code);
        self.dead = Some(kind);
        for i in 0..self.entries.len() {
            if self.entries[i].used && self.entries[i].end.is_none() {
                self.finish(i, Err(Fail::Kind(kind)));
            }
        }
    }

    /// Ends entry `i`: closes its stream and wakes its owner.
    fn finish(&mut self, i: usize, r: Result<(), Fail>) {
        let e = &mut self.entries[i];
        if e.end.is_some() {
            return;
        }
        e.end = Some(r);
        e.id = 0;
        self.open -= 1;
        if let Some(w) = &e.waker {
            w.wake_by_ref();
        }
    }

    /// A stream error (§5.4.2): RST_STREAM with `code`, the request fails as
    /// `kind`.
    fn reset(&mut self, i: usize, code: u32, kind: ErrorKind) -> Result<(), u32> {
        let id = self.entries[i].id;
        frame::write_rst(&mut self.out, id, code);
        self.finish(i, Err(Fail::Kind(kind)));
        self.answer()
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.entries.iter().position(|e| e.id == id)
    }

    /// Consumes the complete frames at the start of `buf`; returns how many bytes.
    /// A connection error ends the connection ([`Conn::dead`]).
    pub fn recv(&mut self, buf: &[u8]) -> usize {
        let mut at = 0;
        while self.dead.is_none() {
            let Some(h) = Head::parse(&buf[at..]) else {
                break;
            };
            if h.len > frame::DEFAULT_MAX_FRAME {
                self.fail(frame::FRAME_SIZE_ERROR, ErrorKind::Protocol);
                break;
            }
            if buf.len() - at - frame::HEAD_LEN < h.len {
                break;
            }
            let start = at + frame::HEAD_LEN;
            at = start + h.len;
            if let Err(code) = self.frame(h, &buf[start..at]) {
                if code == frame::ENHANCE_YOUR_CALM {
                    crate::load::conn::note_h2_flood();
                }
                self.fail(code, ErrorKind::Protocol);
            }
        }
        if self.dead.is_some() {
            buf.len()
        } else {
            at
        }
    }
}
