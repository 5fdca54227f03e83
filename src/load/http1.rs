//! The HTTP/1.1 hot path: each request is encoded once, before the run, and written
//! as-is; responses are parsed with `httparse` from one reused buffer, the body is
//! counted and skipped (Content-Length, chunked, or until close). No allocation per
//! request. hyper's client would allocate a request and response object per request
//! (DESIGN.md allows this lean path for HTTP/1.1; `h2` is its HTTP/2 counterpart).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};

use super::conn::Stream;
use super::plan::Endpoint;
use super::retrans::RetransWatch;
use super::script::{Capture, Kept};
use super::spare::{self, give_back, take_buf};
use crate::net::request::Framing;
use crate::net::Target;

/// Largest response head accepted.
const MAX_HEAD: usize = crate::net::http::MAX_RESPONSE_HEAD;
/// A connection's first buffer (borrowed from the thread's spares, [`spare`]):
/// enough for small responses.
const BUF: usize = spare::BUF;
/// What a buffer grows to once a body is bigger than it (fewer reads per body).
const BULK: usize = 64 * 1024;
/// Encodes a request once: request line, Host, the fields of its one
/// [`RequestHead`](crate::net::RequestHead) (defaults, the endpoint's headers, a
/// Content-Length when there is a body), `Connection: close` without keep-alive.
pub fn encode(target: &Target, e: &Endpoint, keepalive: bool) -> Bytes {
    let head = e.head(target);
    let mut out = Vec::with_capacity(128 + e.body.len());
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(head.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(head.authority.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (n, v) in head.fields(Framing::H1) {
        out.extend_from_slice(n.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !keepalive && !head.has("connection") {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&e.body);
    Bytes::from(out)
}

/// A response, read to its end.
#[derive(Debug, Clone, Copy, Default)]
pub struct Response {
    pub status: u16,
    /// Bytes read for this response (head and body).
    pub bytes: u64,
    /// The connection cannot be used again.
    pub close: bool,
    /// What the response said about caching (the one detector, `cache::status`).
    pub cache: crate::cache::status::Seen,
    pub first_byte: Option<std::time::Instant>,
}

/// Why an exchange failed.
#[derive(Debug)]
pub enum H1Error {
    /// The server closed the connection before sending any byte of a response (a
    /// stale keep-alive connection when it was reused).
    EmptyEof,
    Io(io::Error),
    /// The connection ended in the middle of a response.
    Truncated,
    Protocol(#[allow(dead_code)] &'static str),
}

impl From<io::Error> for H1Error {
    fn from(e: io::Error) -> Self {
        H1Error::Io(e)
    }
}

/// One HTTP/1.1 connection with its read buffer.
pub struct H1 {
    /// Declared before `stream`, so it reads TCP_INFO before the socket closes.
    watch: Option<RetransWatch>,
    stream: Stream,
    /// Empty while no bytes are buffered (the buffer is back among the spares).
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Requests completed on it.
    pub served: u64,
}

enum Body {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

impl H1 {
    /// Wraps a connected stream.
    pub fn new(stream: Stream) -> H1 {
        H1 {
            watch: None,
            stream,
            buf: Box::default(),
            start: 0,
            end: 0,
            served: 0,
        }
    }

    /// Counts this connection's data retransmissions (TCP_INFO of socket `fd`, less
    /// the `syn_retrans` of its handshake) into this thread's tally when it closes.
    pub fn watch_retrans(&mut self, fd: std::os::fd::RawFd, syn_retrans: u32) {
        self.watch = Some(RetransWatch::new(fd, syn_retrans));
    }

    /// The first response arrived: returns the segments retransmitted between the
    /// connect and now (see [`RetransWatch::answered`]).
    pub fn mark_answered(&mut self) -> u32 {
        self.watch.as_mut().map_or(0, |w| w.answered())
    }

    /// Reads more bytes into the buffer; 0 at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < MAX_HEAD {
                let mut bigger = vec![0; self.buf.len() * 2].into_boxed_slice();
                bigger[..self.end].copy_from_slice(&self.buf[..self.end]);
                self.buf = bigger;
            } else {
                super::conn::note_head_too_large();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "response head too large",
                ));
            }
        }
        std::future::poll_fn(|cx| self.poll_fill(cx)).await
    }

    /// One read attempt into the buffer, borrowing a spare one for it when the
    /// connection holds none, and giving it back when the read is pending with
    /// nothing buffered: a connection waiting for bytes holds no buffer.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.buf.is_empty() {
            self.buf = take_buf();
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        match Pin::new(&mut self.stream).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                self.end += n;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                // `end == 0`: nothing is buffered (`fill` rewinds an emptied buffer);
                // a grown buffer stays with its connection.
                if self.end == 0 && self.buf.len() == BUF {
                    give_back(std::mem::take(&mut self.buf));
                }
                Poll::Pending
            }
        }
    }

    /// Returns the buffer to the thread's spares when it holds nothing (a grown one
    /// stays: the next large body needs it again).
    fn release(&mut self) {
        if self.start == self.end && self.buf.len() == BUF {
            self.start = 0;
            self.end = 0;
            give_back(std::mem::take(&mut self.buf));
        }
    }

    /// Sends `request` and reads the whole response. `head`: the request was HEAD
    /// (no body follows). `mark_first_byte`: note when the first byte arrives.
    #[cfg(test)]
    pub async fn exchange(
        &mut self,
        request: &[u8],
        head: bool,
        mark_first_byte: bool,
    ) -> Result<Response, H1Error> {
        self.exchange_keeping(request, head, mark_first_byte, None, &mut None)
            .await
    }

    /// [`H1::exchange`], keeping what `capture` asks for of the response (its
    /// headers, its body) in `kept` for a scenario's checks and extractions (a
    /// `kept` given in is reused: its allocations serve the next response).
    pub async fn exchange_keeping(
        &mut self,
        request: &[u8],
        head: bool,
        mark_first_byte: bool,
        capture: Option<&Arc<Capture>>,
        kept: &mut Option<Box<Kept>>,
    ) -> Result<Response, H1Error> {
        self.stream.write_all(request).await?;
        let mut p = match capture {
            Some(c) => Parser::keeping_in(head, c, kept.take()),
            None => Parser::new(head),
        };
        let mut first_byte = None;
        if self.end > self.start && mark_first_byte {
            first_byte = Some(std::time::Instant::now());
        }
        loop {
            let used = p.feed(&self.buf[self.start..self.end])?;
            self.start += used;
            if p.is_done() {
                break;
            }
            if self.start == self.end
                && p.body_left() > self.buf.len().max(BUF) as u64
                && self.buf.len() < BULK
            {
                // A large body: a bulk buffer, the spare one back to the thread.
                give_back(std::mem::replace(
                    &mut self.buf,
                    vec![0; BULK].into_boxed_slice(),
                ));
            }
            if self.fill().await? == 0 {
                p.eof()?;
                break;
            }
            if first_byte.is_none() && mark_first_byte {
                first_byte = Some(std::time::Instant::now());
            }
        }
        let mut resp = p.response();
        resp.first_byte = first_byte;
        if capture.is_some() {
            *kept = p.kept.take();
        }
        self.served += 1;
        self.release();
        Ok(resp)
    }
}

/// Where a [`Parser`] is in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    /// Body bytes still to come (Content-Length).
    Length(u64),
    ChunkSize,
    /// Chunk bytes still to come, with the CRLF after them.
    ChunkData(u64),
    Trailers,
    UntilClose,
    Done,
}

/// The one HTTP/1.1 response reader, fed bytes as they arrive (sans I/O): the epoll
/// path feeds it from its buffer, the io_uring path from the kernel's provided
/// buffers. Heads are parsed with `httparse` (1xx interim responses skipped), bodies
/// counted and skipped (Content-Length, chunked with trailers, or until close).
#[derive(Debug, Clone)]
pub struct Parser {
    state: State,
    head: bool,
    resp: Response,
    /// Any byte offered yet (an end of stream before one is [`H1Error::EmptyEof`]).
    seen: bool,
    /// A scenario's checks and extractions: what to keep of the final response.
    pub kept: Option<Box<Kept>>,
}

impl Parser {
    /// A reader for the response to a request; `head`: it was HEAD (no body).
    pub fn new(head: bool) -> Parser {
        Parser {
            state: State::Head,
            head,
            resp: Response::default(),
            seen: false,
            kept: None,
        }
    }

    /// A reader that also keeps what `capture` asks for of the final response, into
    /// `reuse` (emptied) when given.
    pub fn keeping_in(head: bool, capture: &Arc<Capture>, reuse: Option<Box<Kept>>) -> Parser {
        Parser {
            kept: Some(Kept::reused(reuse, capture)),
            ..Parser::new(head)
        }
    }

    /// Whether the response is complete.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Content-Length body bytes still expected (0 in other states).
    pub fn body_left(&self) -> u64 {
        match self.state {
            State::Length(n) => n,
            _ => 0,
        }
    }

    /// The response read (its `bytes` are the bytes consumed so far).
    pub fn response(&self) -> Response {
        self.resp
    }

    /// Consumes what it can of `buf`, the bytes not consumed before followed by new
    /// ones, and returns how many it consumed. Bytes left over are a partial head or
    /// chunk line (offer them again with more) or, once [`Parser::is_done`], bytes
    /// past the response.
    pub fn feed(&mut self, buf: &[u8]) -> Result<usize, H1Error> {
        self.seen |= !buf.is_empty();
        let mut at = 0;
        loop {
            let rest = &buf[at..];
            let used = match self.state {
                State::Done => break,
                State::Head => {
                    if rest.is_empty() {
                        break;
                    }
                    let mut headers = [httparse::EMPTY_HEADER; 64];
                    let mut r = httparse::Response::new(&mut headers);
                    match r.parse(rest) {
                        Ok(httparse::Status::Complete(n)) => {
                            let status = r.code.unwrap_or(0);
                            if !((100..200).contains(&status) && status != 101) {
                                self.resp.status = status;
                                if let Some(k) = &mut self.kept {
                                    for h in r.headers.iter() {
                                        k.offer_header(h.name, h.value);
                                    }
                                }
                                self.state = match head_info(&r, self.head, &mut self.resp)? {
                                    Body::None => State::Done,
                                    Body::Length(0) => State::Done,
                                    Body::Length(n) => State::Length(n),
                                    Body::Chunked => State::ChunkSize,
                                    Body::UntilClose => State::UntilClose,
                                };
                            }
                            n
                        }
                        Ok(httparse::Status::Partial) => {
                            if rest.len() >= MAX_HEAD {
                                super::conn::note_head_too_large();
                                return Err(H1Error::Io(io::Error::new(
                                    io::ErrorKind::InvalidData,
                                    "response head too large",
                                )));
                            }
                            break;
                        }
                        Err(httparse::Error::TooManyHeaders) => {
                            return Err(H1Error::Protocol("more than 64 response headers"))
                        }
                        Err(_) => return Err(H1Error::Protocol("malformed response head")),
                    }
                }
                State::Length(n) => {
                    let take = (rest.len() as u64).min(n);
                    if let Some(k) = &mut self.kept {
                        k.offer_body(&rest[..take as usize]);
                    }
                    self.state = if take == n {
                        State::Done
                    } else {
                        State::Length(n - take)
                    };
                    if take == 0 {
                        break;
                    }
                    take as usize
                }
                State::ChunkData(n) => {
                    let take = (rest.len() as u64).min(n);
                    if let Some(k) = &mut self.kept {
                        // `n` counts the CRLF after the chunk's data: not body.
                        let data = take.min(n.saturating_sub(2));
                        k.offer_body(&rest[..data as usize]);
                    }
                    self.state = if take == n {
                        State::ChunkSize
                    } else {
                        State::ChunkData(n - take)
                    };
                    if take == 0 {
                        break;
                    }
                    take as usize
                }
                State::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.state = if size == 0 {
                            State::Trailers
                        } else {
                            // The CRLF after the data; a size near u64::MAX
                            // cannot be sent, and must not overflow.
                            State::ChunkData(
                                size.checked_add(2)
                                    .ok_or(H1Error::Protocol("bad chunk size"))?,
                            )
                        };
                        used
                    }
                    Ok(httparse::Status::Partial) if rest.len() < MAX_HEAD => break,
                    _ => return Err(H1Error::Protocol("bad chunk size")),
                },
                State::Trailers => match rest.windows(2).position(|w| w == b"\r\n") {
                    Some(0) => {
                        self.state = State::Done;
                        2
                    }
                    Some(pos) => pos + 2,
                    None if rest.len() < MAX_HEAD => break,
                    None => return Err(H1Error::Protocol("trailers too large")),
                },
                State::UntilClose => {
                    if rest.is_empty() {
                        break;
                    }
                    if let Some(k) = &mut self.kept {
                        k.offer_body(rest);
                    }
                    rest.len()
                }
            };
            at += used;
            self.resp.bytes += used as u64;
        }
        Ok(at)
    }

    /// The stream ended: a body read until close is complete; anything else was cut.
    pub fn eof(&mut self) -> Result<(), H1Error> {
        match self.state {
            State::Done => Ok(()),
            State::UntilClose => {
                self.resp.close = true;
                self.state = State::Done;
                Ok(())
            }
            State::Head if !self.seen => Err(H1Error::EmptyEof),
            _ => Err(H1Error::Truncated),
        }
    }
}

/// What a response head says about its body; an invalid Content-Length is a
/// protocol error, as the probe finds it (`net::http::ContentLength`).
fn head_info(
    r: &httparse::Response<'_, '_>,
    head: bool,
    resp: &mut Response,
) -> Result<Body, H1Error> {
    let mut length = crate::net::http::ContentLength::default();
    let mut chunked = false;
    // HTTP/1.0 closes unless it says keep-alive.
    let mut close = r.version == Some(0);
    let mut cache = crate::cache::Detector::default();
    for h in r.headers.iter() {
        let name = h.name.as_bytes();
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => length.feed(h.value),
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                chunked = h
                    .value
                    .windows(7)
                    .any(|w| w.eq_ignore_ascii_case(b"chunked"));
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                if h.value.windows(5).any(|w| w.eq_ignore_ascii_case(b"close")) {
                    close = true;
                } else if h
                    .value
                    .windows(10)
                    .any(|w| w.eq_ignore_ascii_case(b"keep-alive"))
                {
                    close = false;
                }
            }
            _ => {
                if let Ok(v) = std::str::from_utf8(h.value) {
                    cache.feed(h.name, v);
                }
            }
        }
    }
    resp.cache = cache.seen();
    resp.close = close;
    let length = length
        .get(String::new)
        .map_err(|_| H1Error::Protocol("invalid Content-Length"))?;
    let status = resp.status;
    Ok(
        if head || status == 204 || status == 304 || (100..200).contains(&status) {
            Body::None
        } else if chunked {
            Body::Chunked
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            resp.close = true;
            Body::UntilClose
        },
    )
}

/// Fuzzing entry point (`fuzz/`, [`crate::fuzzing`]): `data` as a server's bytes
/// for one response (HEAD when the first byte is odd), offered in pieces as the
/// engines offer them (bytes not consumed come again with more). Never panics, never
/// consumes more than offered, and counts no more bytes than it consumed.
#[doc(hidden)]
pub fn fuzz_parser(data: &[u8]) {
    let (first, data) = data.split_first().map_or((0, data), |(f, d)| (*f, d));
    let mut p = Parser::new(first & 1 == 1);
    let piece = usize::from(first >> 1) + 1;
    let mut buf = Vec::new();
    let mut consumed = 0u64;
    for chunk in data.chunks(piece) {
        buf.extend_from_slice(chunk);
        match p.feed(&buf) {
            Ok(used) => {
                assert!(used <= buf.len());
                consumed += used as u64;
                buf.drain(..used);
            }
            Err(_) => return,
        }
        assert_eq!(p.response().bytes, consumed);
        if p.is_done() {
            return;
        }
    }
    let _ = p.eof();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use tokio::io::AsyncReadExt;

    #[test]
    fn encodes_once() {
        let t = Target::parse("http://127.0.0.1:8080/x?y=1").unwrap();
        let e = Endpoint {
            name: "x".into(),
            method: http::Method::POST,
            path_and_query: "/x?y=1".into(),
            headers: vec![crate::net::request::field("Accept: a/b")],
            body: Bytes::from_static(b"hi"),
            weight: 1,
        };
        let s = String::from_utf8(encode(&t, &e, false).to_vec()).unwrap();
        assert!(
            s.starts_with("POST /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{s}"
        );
        assert!(
            s.contains("accept: a/b\r\n") && s.contains("content-length: 2\r\n"),
            "{s}"
        );
        assert!(s.ends_with("Connection: close\r\n\r\nhi"), "{s}");
        // The same default headers as probe and the audit; `-H` overrides each.
        assert!(s.contains("accept-encoding: gzip, br\r\n"), "{s}");
        assert!(!s.contains("accept: */*"), "{s}");
        let mut e2 = e.clone();
        e2.headers = vec![crate::net::request::field("Accept-Encoding: identity")];
        let s = String::from_utf8(encode(&t, &e2, true).to_vec()).unwrap();
        assert_eq!(
            s.to_ascii_lowercase().matches("accept-encoding").count(),
            1,
            "{s}"
        );
        assert!(s.contains("accept: */*\r\n"), "{s}");
    }

    /// The one detector reads a response head as the audit does: layers of X-Cache,
    /// X-Varnish ids, X-Cache-Status, a bare Age.
    #[test]
    fn cache_hits() {
        use crate::cache::status::Tally;
        let tally = |head: &str| {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut r = httparse::Response::new(&mut headers);
            r.parse(head.as_bytes()).unwrap();
            let mut resp = Response::default();
            head_info(&r, false, &mut resp).unwrap();
            resp.cache
        };
        let t = |h: &str| tally(&format!("HTTP/1.1 200 OK\r\n{h}\r\n\r\n")).tally;
        assert_eq!(t("X-Cache: MISS, HIT"), Tally::Hit);
        assert_eq!(t("X-Cache: MISS, MISS"), Tally::Miss);
        assert_eq!(t("cf-cache-status: HIT"), Tally::Hit);
        assert_eq!(t("Age: 12"), Tally::Hit);
        assert_eq!(t("Age: 0\r\nX-Varnish: 32770"), Tally::Miss);
        assert_eq!(t("Age: 0\r\nX-Varnish: 32770 6"), Tally::Hit);
        assert_eq!(t("X-Cache-Status: HIT"), Tally::Hit);
        assert_eq!(t("cache-status: ExampleCache; fwd=miss"), Tally::Miss);
        assert_eq!(t("Server: nginx"), Tally::Unknown);
        let seen = tally("HTTP/1.1 200 OK\r\nX-Varnish: 5 3\r\nVia: 1.1 varnish\r\n\r\n");
        assert_eq!(seen.kind, Some(crate::cache::CacheKind::Varnish));
    }

    async fn serve(reply: &'static [u8], n: usize) -> H1 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            for _ in 0..n {
                let _ = s.read(&mut buf).await.unwrap();
                // Dribble the reply to exercise partial reads.
                for chunk in reply.chunks(7) {
                    s.write_all(chunk).await.unwrap();
                    s.flush().await.unwrap();
                }
            }
        });
        let c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.set_nodelay(true).unwrap();
        H1::new(Stream::Plain(c))
    }

    fn spares() -> usize {
        spare::count()
    }

    /// A connection waiting for its response holds no read buffer: it borrows one of
    /// the thread's spares only while bytes arrive, and gives it back when the
    /// response has been read (issue 21: memory at 5,000 connections). Bytes of the
    /// next response that came early keep theirs until they are read.
    #[tokio::test]
    async fn idle_connections_hold_no_read_buffer() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await.unwrap();
            // Answer only when told: the client is waiting meanwhile.
            go_rx.await.unwrap();
            let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
            s.write_all(one).await.unwrap();
            let _ = s.read(&mut buf).await.unwrap();
            // The second answer and the start of a third in one write.
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1")
                .await
                .unwrap();
        });
        let c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut h = H1::new(Stream::Plain(c));
        assert!(h.buf.is_empty());
        assert_eq!(spares(), 0);
        let r = {
            let ex = h.exchange(b"GET / HTTP/1.1\r\n\r\n", false, false);
            tokio::pin!(ex);
            // One poll sends the request and finds no answer yet: the buffer
            // borrowed for the read attempt is back among the spares.
            let pending =
                std::future::poll_fn(|cx| Poll::Ready(ex.as_mut().poll(cx).is_pending())).await;
            assert!(pending, "answered before the server was told to");
            assert_eq!(spares(), 1, "a waiting connection keeps its buffer");
            go_tx.send(()).unwrap();
            ex.await.unwrap()
        };
        assert_eq!((r.status, r.bytes), (200, 40));
        assert!(h.buf.is_empty(), "the buffer went back after the response");
        assert_eq!(spares(), 1);
        let r = h
            .exchange(b"GET / HTTP/1.1\r\n\r\n", false, false)
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        // "HTTP/1.1" of a third response is buffered: the connection keeps it.
        assert_eq!((h.end - h.start, h.buf.len()), (8, BUF));
        assert_eq!(spares(), 0);
    }

    /// A body larger than the borrowed buffer is read into a grown one, which stays
    /// with its connection between responses (the spares keep only small ones).
    #[tokio::test]
    async fn large_bodies_keep_a_grown_buffer() {
        const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n";
        let reply: &'static [u8] = [HEAD, &[b'a'; 20_000][..]].concat().leak();
        let mut h = serve(reply, 2).await;
        for _ in 0..2 {
            let r = h
                .exchange(b"GET / HTTP/1.1\r\n\r\n", false, false)
                .await
                .unwrap();
            assert_eq!((r.status, r.bytes), (200, (HEAD.len() + 20_000) as u64));
            assert_eq!(h.start, h.end);
            assert_eq!(h.buf.len(), BULK);
        }
        assert!(spares() <= 1);
    }

    #[tokio::test]
    async fn reads_length_chunked_and_close() {
        let mut h = serve(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Cache: HIT\r\n\r\nhello",
            2,
        )
        .await;
        for _ in 0..2 {
            let r = h
                .exchange(b"GET / HTTP/1.1\r\n\r\n", false, true)
                .await
                .unwrap();
            assert_eq!(
                (
                    r.status,
                    r.bytes,
                    r.close,
                    r.cache.tally == crate::cache::Tally::Hit
                ),
                (200, 57, false, true)
            );
            assert!(r.first_byte.is_some());
        }
        let mut h = serve(
            b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n",
            1,
        )
        .await;
        let r = h
            .exchange(b"GET / HTTP/1.1\r\n\r\n", false, false)
            .await
            .unwrap();
        assert_eq!((r.status, r.close), (500, false));
        assert_eq!(h.start, h.end);
        let mut h = serve(b"HTTP/1.0 200 OK\r\n\r\nbody until close", 1).await;
        let r = h
            .exchange(b"GET / HTTP/1.1\r\n\r\n", false, false)
            .await
            .unwrap();
        assert!(r.close);
        assert_eq!(r.bytes, 35);
        let mut h = serve(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No\r\n\r\n", 1).await;
        let r = h
            .exchange(b"GET / HTTP/1.1\r\n\r\n", false, false)
            .await
            .unwrap();
        assert_eq!(r.status, 204);
        let mut h = serve(b"garbage\r\n\r\n", 1).await;
        assert!(matches!(
            h.exchange(b"GET / HTTP/1.1\r\n\r\n", false, false).await,
            Err(H1Error::Protocol(_))
        ));
        let mut h = serve(b"", 1).await;
        assert!(matches!(
            h.exchange(b"GET / HTTP/1.1\r\n\r\n", false, false).await,
            Err(H1Error::EmptyEof)
        ));
        let mut h = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", 1).await;
        assert!(matches!(
            h.exchange(b"GET / HTTP/1.1\r\n\r\n", false, false).await,
            Err(H1Error::Truncated)
        ));
    }

    /// Issue 28 item 10: an invalid Content-Length is a protocol error for load as
    /// for the probe (`-1`, past u64, differing repeats); equal repeats are fine.
    #[test]
    fn invalid_content_length_is_a_protocol_error() {
        let feed = |head: &str| Parser::new(false).feed(head.as_bytes());
        for cl in ["-1", "99999999999999999999999", "5, 6", "abc", ""] {
            let r = feed(&format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\nhello"
            ));
            assert!(matches!(r, Err(H1Error::Protocol(_))), "{cl}: {r:?}");
        }
        let r = feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
        assert_eq!(r.unwrap(), 62);
    }

    /// A scenario's reader keeps the asked-for headers (every Set-Cookie) and the
    /// body without chunk framing, fed in pieces; a plain reader keeps nothing.
    #[test]
    fn keeps_what_checks_read() {
        let capture = Arc::new(Capture {
            headers: vec!["x-token".into()],
            set_cookie: true,
            body: true,
        });
        let resp = "HTTP/1.1 100 Continue\r\nX-Token: no\r\n\r\nHTTP/1.1 200 OK\r\nX-Token: t1\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nServer: s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let mut p = Parser::keeping_in(false, &capture, None);
        let mut buf = Vec::new();
        for piece in resp.as_bytes().chunks(3) {
            buf.extend_from_slice(piece);
            let used = p.feed(&buf).unwrap();
            buf.drain(..used);
        }
        assert!(p.is_done());
        let k = p.kept.take().unwrap();
        assert_eq!(k.body, b"hello world");
        assert_eq!(k.header("x-token"), Some("t1"));
        let cookies: Vec<&str> = k
            .headers
            .iter()
            .filter(|(n, _)| n == "set-cookie")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(cookies, ["a=1", "b=2"]);
        assert_eq!(k.header("server"), None);
        let mut p = Parser::new(false);
        p.feed(resp.as_bytes()).unwrap();
        assert!(p.is_done() && p.kept.is_none());
    }

    /// A chunk size near u64::MAX made `size + 2` overflow (a panic in debug, a
    /// wrong state in release): now a protocol error.
    #[test]
    fn a_huge_chunk_size_is_refused() {
        for size in ["ffffffffffffffff", "fffffffffffffffe"] {
            let mut p = Parser::new(false);
            let head = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nab");
            let r = p.feed(head.as_bytes());
            assert!(matches!(r, Err(H1Error::Protocol(_))), "{size}: {r:?}");
        }
        let mut p = Parser::new(false);
        let ok = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(p.feed(ok.as_bytes()).unwrap(), ok.len());
        assert!(p.is_done());
    }
}
