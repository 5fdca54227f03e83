//! One request on each protocol, for the worker's clients: HTTP/1.1 on the VU's own
//! connection (retried once on a fresh one when a reused one was closed), HTTP/2 on
//! a share of a connection, HTTP/3 on a stream of a QUIC connection; and the
//! timeout around each.

use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;

use super::Worker;
use crate::load::conn::Phase;
use crate::load::h2::{self, H2Slot, Slot};
use crate::load::http1::{H1Error, H1};
use crate::load::http3::{self, H3Slot};
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::script::{Capture, Kept};

/// Runs `fut` until `deadline`, with `timer` (armed at `armed`, ≤ `deadline`).
pub(super) async fn within<F: std::future::Future>(
    timer: &mut Pin<Box<tokio::time::Sleep>>,
    armed: &mut tokio::time::Instant,
    deadline: tokio::time::Instant,
    fut: F,
) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            o = &mut fut => return Some(o),
            _ = timer.as_mut() => {
                if tokio::time::Instant::now() >= deadline {
                    return None;
                }
                timer.as_mut().reset(deadline);
                *armed = deadline;
            }
        }
    }
}

/// Ends a slot's connect attempt also when the attempt is abandoned (timeout).
struct Connecting<'a>(&'a H2Slot, bool);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.connected(None);
        }
    }
}

/// A scenario step's request when its variables or the VU's cookies make it the
/// VU's own, encoded for the protocol its client speaks.
pub(super) enum Own {
    H1(bytes::Bytes),
    H2(h2::Request),
    H3(http3::H3Request),
}

impl Own {
    pub(super) fn h1(&self) -> Option<&[u8]> {
        match self {
            Own::H1(b) => Some(b),
            _ => None,
        }
    }

    pub(super) fn h2(&self) -> Option<&h2::Request> {
        match self {
            Own::H2(r) => Some(r),
            _ => None,
        }
    }

    pub(super) fn h3(&self) -> Option<&http3::H3Request> {
        match self {
            Own::H3(r) => Some(r),
            _ => None,
        }
    }
}

/// HTTP/2: takes the slot's connection (opening it when this VU is the first to
/// need it) and sends one stream. A stream the server did not process (GOAWAY,
/// REFUSED_STREAM, or a connection closed before any byte of its response) is sent
/// once more on a new connection, as HTTP/1.1 does with a stale keep-alive one.
pub(super) async fn exchange_h2(
    w: &Worker<'_, '_>,
    slot: &H2Slot,
    phase: &Cell<Phase>,
    ep: usize,
    own: Option<&h2::Request>,
    capture: Option<&Arc<Capture>>,
    kept: &mut Option<Box<Kept>>,
) -> Outcome {
    let prep = w.prep;
    let mut paid = (None, None);
    let mut retried = false;
    loop {
        let mut dropped = false;
        let got = slot.get(&mut dropped).await;
        if dropped {
            w.rec.borrow_mut().conn_closed();
        }
        let link = match got {
            Slot::Ready(l) => l,
            Slot::Connect => {
                let mut guard = Connecting(slot, false);
                let opened = match prep.connector.open(phase).await {
                    Ok(o) => o,
                    Err(kind) => return Outcome::failed(kind),
                };
                phase.set(Phase::Exchange);
                let link = match h2::handshake(opened.stream, prep.raw.is_some()).await {
                    Ok(l) => l,
                    Err(kind) => return Outcome::failed(kind),
                };
                w.rec
                    .borrow_mut()
                    .conn_opened(opened.connect, opened.tls, opened.syn_retrans);
                paid = (Some(opened.connect), opened.tls);
                slot.connected(Some(link.clone()));
                guard.1 = true;
                link
            }
        };
        phase.set(Phase::Exchange);
        let req = own.unwrap_or(&prep.h2_requests[ep]);
        let done = match capture {
            Some(c) => {
                *kept = Some(Kept::reused(kept.take(), c));
                h2::Exchange::keeping(link, req, kept).await
            }
            None => h2::Exchange::new(link, req).await,
        };
        if done.retry && !retried {
            retried = true;
            continue;
        }
        let mut o = done.outcome;
        o.connect = paid.0;
        o.tls = paid.1;
        return o;
    }
}

/// Ends an HTTP/3 slot's connect attempt also when it is abandoned (timeout).
struct Connecting3<'a>(&'a H3Slot, bool);

impl Drop for Connecting3<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.connected(None);
        }
    }
}

/// HTTP/3: takes the slot's QUIC connection (opening it when this VU is the first
/// to need it: the handshake is the connect time) and sends one stream.
pub(super) async fn exchange_h3(
    w: &Worker<'_, '_>,
    slot: &H3Slot,
    phase: &Cell<Phase>,
    ep: usize,
    own: Option<&http3::H3Request>,
    capture: Option<&Arc<Capture>>,
    kept: &mut Option<Box<Kept>>,
) -> Outcome {
    let (Some(setup), Some(client)) = (&w.prep.h3, &w.quic) else {
        return Outcome::failed(ErrorKind::Tls);
    };
    let mut paid = None;
    let (generation, sender) = match slot.get().await {
        http3::Slot::Ready(g, s) => (g, s),
        http3::Slot::Connect => {
            let mut guard = Connecting3(slot, false);
            phase.set(Phase::Connect);
            let (conn, took) = match setup.open(client).await {
                Ok(c) => c,
                Err(kind) => return Outcome::failed(kind),
            };
            w.rec.borrow_mut().conn_opened(took, None, 0);
            paid = Some(took);
            let conn = std::rc::Rc::new(conn);
            let sender = conn.clone();
            guard.1 = true;
            (slot.connected(Some(conn)), sender)
        }
    };
    phase.set(Phase::Exchange);
    let req = own.unwrap_or_else(|| setup.request(ep));
    if let Some(c) = capture {
        *kept = Some(Kept::reused(kept.take(), c));
    }
    let keep = capture.and(kept.as_deref_mut());
    let (mut o, failed) = http3::exchange(sender, req, w.prep.raw.is_some(), keep).await;
    if failed && slot.drop_failed(generation) {
        w.rec.borrow_mut().conn_closed();
    }
    o.connect = paid;
    o
}

/// Connects when needed, sends, reads; retries once on a fresh connection when a
/// reused one turns out to have been closed by the server.
pub(super) async fn exchange(
    w: &Worker<'_, '_>,
    conn: &mut Option<H1>,
    phase: &Cell<Phase>,
    ep: usize,
    own: Option<&[u8]>,
    capture: Option<&Arc<Capture>>,
    kept: &mut Option<Box<Kept>>,
) -> Outcome {
    let prep = w.prep;
    let mut retried = false;
    let mut paid = (None, None);
    loop {
        let fresh = conn.is_none();
        if fresh {
            match prep.connector.open(phase).await {
                Ok(o) => {
                    w.rec
                        .borrow_mut()
                        .conn_opened(o.connect, o.tls, o.syn_retrans);
                    paid = (Some(o.connect), o.tls);
                    let mut h1 = H1::new(o.stream);
                    h1.watch_retrans(o.fd, o.syn_retrans);
                    *conn = Some(h1);
                }
                Err(kind) => return Outcome::failed(kind),
            }
        }
        phase.set(Phase::Exchange);
        let c = conn.as_mut().expect("connected above");
        let r = c
            .exchange_keeping(
                own.unwrap_or(&prep.encoded[ep]),
                prep.is_head[ep],
                prep.raw.is_some(),
                capture,
                kept,
            )
            .await;
        let kind = match r {
            Ok(resp) => {
                if fresh {
                    let early = c.mark_answered();
                    if early > 0 {
                        w.rec.borrow_mut().early_retrans(early);
                    }
                }
                if resp.close || !prep.plan.keepalive {
                    *conn = None;
                    w.rec.borrow_mut().conn_closed();
                }
                return Outcome {
                    status: resp.status,
                    error: ErrorKind::of_status(resp.status),
                    bytes: resp.bytes,
                    cache: resp.cache,
                    first_byte: resp.first_byte,
                    connect: paid.0,
                    tls: paid.1,
                };
            }
            Err(e) => {
                *conn = None;
                w.rec.borrow_mut().conn_closed();
                match e {
                    H1Error::EmptyEof if !fresh && !retried => {
                        retried = true;
                        continue;
                    }
                    H1Error::EmptyEof | H1Error::Truncated => ErrorKind::Reset,
                    H1Error::Io(e) => crate::load::conn::io_kind(&e),
                    H1Error::Protocol(_) => ErrorKind::Protocol,
                }
            }
        };
        let mut o = Outcome::failed(kind);
        o.connect = paid.0;
        o.tls = paid.1;
        return o;
    }
}
