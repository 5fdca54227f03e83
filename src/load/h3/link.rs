//! An HTTP/3 connection of the load engine over a quinn connection: the control
//! stream this client opens (SETTINGS only, kept open for the connection's life:
//! closing it is an error, §6.2.1), a task reading the server's unidirectional
//! streams (its control stream through [`Control`], QPACK's encoder and decoder
//! streams drained: with no dynamic table they carry nothing this client uses,
//! pushes refused, unknown types stopped, §6.2), and [`exchange`]: one request on a
//! bidirectional stream of its own, written in one piece, its response read chunk
//! by chunk through [`Response`] without a copy.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use quinn::{ConnectionError, ReadError, VarInt, WriteError};

use super::control::Control;
use super::frame::{
    put_frame, put_varint, varint, H3Error, Response, H3_CLOSED_CRITICAL_STREAM, H3_ID_ERROR,
    H3_NO_ERROR, H3_REQUEST_CANCELLED, H3_STREAM_CREATION_ERROR, MAX_SECTION, SETTINGS,
    SETTINGS_MAX_FIELD_SECTION_SIZE,
};
use super::Request;
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::script::Kept;

/// Unidirectional stream types (§6.2, RFC 9204 §4.2).
const CONTROL: u64 = 0x0;
const PUSH: u64 = 0x1;
const QPACK_ENCODER: u64 = 0x2;
const QPACK_DECODER: u64 = 0x3;

/// What the connection's tasks share.
#[derive(Debug)]
struct Shared {
    /// The server sent GOAWAY: no new request goes on this connection.
    goaway: AtomicBool,
    /// The server's SETTINGS_MAX_FIELD_SECTION_SIZE (unlimited until it says).
    max_section: AtomicU64,
    /// Which of the server's critical streams (control, QPACK encoder, decoder)
    /// arrived: each may come once (§6.2.1, RFC 9204 §4.2).
    seen: AtomicU8,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            goaway: AtomicBool::new(false),
            max_section: AtomicU64::new(u64::MAX),
            seen: AtomicU8::new(0),
        }
    }
}

/// One HTTP/3 connection: quinn's, with this client's control stream. Dropping it
/// closes the connection (H3_NO_ERROR), so a connection retired after GOAWAY is
/// shared (`Rc`) by the requests still on it and closes after the last.
pub struct Link {
    conn: quinn::Connection,
    _control: quinn::SendStream,
    shared: Arc<Shared>,
    reader: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Sets HTTP/3 up on `conn` (just handshaken): opens the control stream with
    /// this client's SETTINGS (the largest field section it accepts; QPACK's
    /// table capacity and blocked streams stay at their default 0) and starts
    /// reading the server's streams. Requests may go at once (§6.2.1 lets a
    /// client send before the server's SETTINGS arrive).
    pub async fn open(conn: quinn::Connection) -> Result<Link, ErrorKind> {
        let mut control = conn.open_uni().await.map_err(|e| lost(&e))?;
        let mut settings = Vec::new();
        put_varint(&mut settings, SETTINGS_MAX_FIELD_SECTION_SIZE);
        put_varint(&mut settings, MAX_SECTION as u64);
        let mut out = Vec::new();
        put_varint(&mut out, CONTROL);
        put_frame(&mut out, SETTINGS, &settings);
        control
            .write_chunk(Bytes::from(out))
            .await
            .map_err(|e| match e {
                WriteError::ConnectionLost(e) => lost(&e),
                _ => ErrorKind::Protocol,
            })?;
        let shared = Arc::new(Shared::default());
        let reader = tokio::spawn(accept(conn.clone(), shared.clone()));
        Ok(Link {
            conn,
            _control: control,
            shared,
            reader,
        })
    }

    /// The connection, to open request streams on.
    pub fn conn(&self) -> &quinn::Connection {
        &self.conn
    }

    /// The server's SETTINGS_MAX_FIELD_SECTION_SIZE (tests).
    #[cfg(test)]
    pub fn max_section(&self) -> u64 {
        self.shared.max_section.load(Ordering::Relaxed)
    }

    /// Whether another request may go on this connection (it is open and the
    /// server has not sent GOAWAY).
    pub fn is_usable(&self) -> bool {
        !self.shared.goaway.load(Ordering::Relaxed) && self.conn.close_reason().is_none()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.conn.close(VarInt::from_u32(H3_NO_ERROR), b"");
        self.reader.abort();
    }
}

/// A connection's error as the load engine counts it.
fn lost(e: &ConnectionError) -> ErrorKind {
    match e {
        ConnectionError::TimedOut => ErrorKind::Timeout,
        ConnectionError::TransportError(_) | ConnectionError::VersionMismatch => {
            ErrorKind::Protocol
        }
        _ => ErrorKind::Reset,
    }
}

/// Closes `conn` with an HTTP/3 error code (§8).
fn close(conn: &quinn::Connection, code: u32) {
    conn.close(VarInt::from_u32(code), b"");
}

/// Accepts the server's unidirectional streams until the connection ends.
async fn accept(conn: quinn::Connection, shared: Arc<Shared>) {
    while let Ok(stream) = conn.accept_uni().await {
        tokio::spawn(uni(stream, conn.clone(), shared.clone()));
    }
}

/// One of the server's unidirectional streams, by its type.
async fn uni(mut rs: quinn::RecvStream, conn: quinn::Connection, shared: Arc<Shared>) {
    let mut head = Vec::new();
    let (kind, rest) = loop {
        match rs.read_chunk(64, true).await {
            Ok(Some(c)) => {
                head.extend_from_slice(&c.bytes);
                if let Some((kind, n)) = varint(&head) {
                    break (kind, head.split_off(n));
                }
            }
            // A stream ended or reset before its type: nothing to do (§6.2).
            Ok(None) | Err(_) => return,
        }
    };
    let bit = match kind {
        CONTROL => 1,
        QPACK_ENCODER => 2,
        QPACK_DECODER => 4,
        PUSH => return close(&conn, H3_ID_ERROR),
        _ => {
            let _ = rs.stop(VarInt::from_u32(H3_STREAM_CREATION_ERROR));
            return;
        }
    };
    if shared.seen.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
        return close(&conn, H3_STREAM_CREATION_ERROR);
    }
    let mut control = (kind == CONTROL).then(Control::default);
    let mut next = Some(rest);
    loop {
        let data = match next.take() {
            Some(d) => Bytes::from(d),
            None => match rs.read_chunk(usize::MAX, true).await {
                Ok(Some(c)) => c.bytes,
                // A critical stream closed (§6.2.1, RFC 9204 §4.2).
                Ok(None) | Err(ReadError::Reset(_)) => {
                    return close(&conn, H3_CLOSED_CRITICAL_STREAM)
                }
                Err(_) => return,
            },
        };
        if let Some(c) = control.as_mut() {
            if let Err(e) = c.feed(&data) {
                return close(&conn, e.code);
            }
            if c.goaway.is_some() {
                shared.goaway.store(true, Ordering::Relaxed);
            }
            if let Some(m) = c.max_section {
                shared.max_section.store(m, Ordering::Relaxed);
            }
        }
    }
}

/// A request's streams: cancelled (§4.1.1, H3_REQUEST_CANCELLED) when dropped
/// before the response ended (a timeout), so the server stops working on it.
struct Streams {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    done: bool,
}

impl Drop for Streams {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.recv.stop(VarInt::from_u32(H3_REQUEST_CANCELLED));
            let _ = self.send.reset(VarInt::from_u32(H3_REQUEST_CANCELLED));
        }
    }
}

/// Sends `req` on a new stream of `link` and reads the response to its end,
/// offering what a scenario keeps. The flag says the connection itself failed (no
/// new stream, it closed, or the server broke the protocol: it is closed with the
/// error's code): the slot should replace it. A request whose fields exceed what
/// the server's SETTINGS accept is not sent (§4.2.2): a `protocol` error.
pub async fn exchange(
    link: &Link,
    req: &Request,
    mark_first_byte: bool,
    mut kept: Option<&mut Kept>,
) -> (Outcome, bool) {
    if req.field_size > link.shared.max_section.load(Ordering::Relaxed) {
        return (Outcome::failed(ErrorKind::Protocol), false);
    }
    let conn = &link.conn;
    let (send, recv) = match conn.open_bi().await {
        Ok(s) => s,
        Err(e) => return (Outcome::failed(lost(&e)), true),
    };
    let mut s = Streams {
        send,
        recv,
        done: false,
    };
    match s.send.write_chunk(req.wire.clone()).await {
        Ok(()) => {
            let _ = s.send.finish();
        }
        // The server answered without reading all of the request (§4.1: a
        // complete response stays valid).
        Err(WriteError::Stopped(code)) if code == VarInt::from_u32(H3_NO_ERROR) => {}
        Err(WriteError::ConnectionLost(e)) => return (Outcome::failed(lost(&e)), true),
        Err(_) => return (Outcome::failed(ErrorKind::Reset), false),
    }
    let mut resp = Response::new(mark_first_byte, req.head);
    loop {
        match s.recv.read_chunk(usize::MAX, true).await {
            Ok(Some(chunk)) => {
                if let Err(e) = resp.feed(&chunk.bytes, kept.as_deref_mut()) {
                    return failed(conn, &mut s, e, resp.partial());
                }
            }
            Ok(None) => break,
            Err(e) => {
                s.done = true;
                let mut o = resp.partial();
                return match e {
                    ReadError::ConnectionLost(e) => {
                        o.error = Some(lost(&e));
                        (o, true)
                    }
                    _ => {
                        o.error = Some(ErrorKind::Reset);
                        (o, false)
                    }
                };
            }
        }
    }
    s.done = true;
    match resp.finish() {
        Ok(o) => (o, false),
        Err(e) => failed(conn, &mut s, e, resp.partial()),
    }
}

/// A response that broke the protocol: the stream (or, for the connection's
/// errors, the connection) ends with the error's code.
fn failed(
    conn: &quinn::Connection,
    s: &mut Streams,
    e: H3Error,
    mut o: Outcome,
) -> (Outcome, bool) {
    o.error = Some(ErrorKind::Protocol);
    if e.conn {
        close(conn, e.code);
    } else {
        let _ = s.recv.stop(VarInt::from_u32(e.code));
    }
    s.done = true;
    (o, e.conn)
}
