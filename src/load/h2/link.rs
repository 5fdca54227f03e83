//! Drives an HTTP/2 connection ([`Conn`]) on the worker thread's runtime, shared by
//! the `--streams` VUs of a slot. There is no connection task: each VU's
//! [`Exchange`] writes what is queued and reads the socket itself while it waits,
//! so a read that completes many streams wakes their VUs directly. The VU that
//! last found the socket empty holds its read waker; when it leaves, another VU
//! with a stream open is woken to take over. A VU that starts a stream only queues
//! its frames and wakes another stream's owner to write them ([`Io::kick`]), so the
//! requests of the VUs woken together leave in one write.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::conn::{Conn, Done};
use super::Request;
use crate::load::conn::{io_kind, Stream};
use crate::load::recorder::ErrorKind;
use crate::load::script::Kept;

/// The read buffer: room for a whole frame of the largest size this client
/// accepts, and for many small responses at once.
const READ_BUF: usize = 64 * 1024;

/// One HTTP/2 connection with its socket.
pub struct Link {
    io: RefCell<Io>,
}

struct Io {
    stream: Stream,
    conn: Conn,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes of `conn.out` already written.
    written: usize,
    /// The entry whose owner holds the socket's read (or write) waker.
    reader: Option<usize>,
    /// The entry whose owner was woken to write what is queued.
    flusher: Option<usize>,
    /// VUs waiting for the server's stream limit to leave room.
    waiting: Vec<Waker>,
}

impl Link {
    /// Whether new requests may use it.
    pub fn usable(&self) -> bool {
        self.io.borrow().conn.usable()
    }
}

impl Io {
    /// Writes what is queued; an error ends the connection.
    fn flush(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while self.written < self.conn.out.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.conn.out[self.written..]) {
                Poll::Ready(Ok(0)) => {
                    self.conn.closed(Some(ErrorKind::Reset));
                    break;
                }
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(e)) => {
                    self.conn.closed(Some(io_kind(&e)));
                    break;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        self.conn.flushed();
        self.written = 0;
        self.flusher = None;
        match Pin::new(&mut self.stream).poll_flush(cx) {
            Poll::Ready(Err(e)) => {
                self.conn.closed(Some(io_kind(&e)));
                Poll::Ready(())
            }
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    }

    /// One read into the buffer, handed to the connection: Ready when bytes came
    /// or the connection ended, Pending when none are there.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.start > 0 && self.buf.len() - self.end < READ_BUF / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        match Pin::new(&mut self.stream).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => {
                self.conn.closed(Some(io_kind(&e)));
                Poll::Ready(())
            }
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n == 0 {
                    self.conn.closed(None);
                    return Poll::Ready(());
                }
                self.end += n;
                self.start += self.conn.recv(&self.buf[self.start..self.end]);
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                if !self.waiting.is_empty() && (self.conn.has_room() || !self.conn.usable()) {
                    self.waiting.drain(..).for_each(Waker::wake);
                }
                Poll::Ready(())
            }
        }
    }

    /// Entry `i` queued the first request since the last write: another stream's
    /// owner (the reader's, when there is one) is woken to write it. It runs after
    /// the VUs already woken, whose requests then leave in the same write. Only
    /// with no other stream open does this VU wake itself (a future that wakes
    /// itself makes `FuturesUnordered` yield to the runtime, which then polls
    /// epoll: once per request when every VU did it).
    fn kick(&mut self, i: usize, cx: &Context<'_>) {
        let woken = match self.reader {
            Some(r) if r != i && self.conn.wake(r) => Some(r),
            _ => self.conn.wake_other(i),
        };
        self.flusher = Some(woken.unwrap_or_else(|| {
            cx.waker().wake_by_ref();
            i
        }));
    }

    /// Entry `i`'s owner leaves: when it held the socket's waker, or was to write
    /// what is queued, another owner takes over; a freed stream lets a waiting VU
    /// start.
    fn leave(&mut self, i: usize) {
        if self.reader == Some(i) {
            self.reader = None;
            self.conn.wake_other(i);
        }
        if self.flusher == Some(i) {
            self.flusher = self.conn.wake_other(i);
        }
        if let Some(w) = self.waiting.pop() {
            w.wake();
        }
    }
}

/// One HTTP/2 connection shared by several VUs of a thread.
#[derive(Default)]
pub struct H2Slot {
    link: RefCell<Option<Rc<Link>>>,
    connecting: Cell<bool>,
    ready: Notify,
}

/// What a VU finds in its slot.
pub enum Slot {
    /// A live connection to send on.
    Ready(Rc<Link>),
    /// Nobody is connecting: the caller should.
    Connect,
}

impl H2Slot {
    /// A usable connection, waiting while another VU of the slot connects. One that
    /// can take no more requests (closed, GOAWAY) is dropped from the slot and
    /// `dropped` set: the caller counts it closed.
    pub async fn get(&self, dropped: &mut bool) -> Slot {
        loop {
            let stale = match self.link.borrow().as_ref() {
                Some(l) if l.usable() => return Slot::Ready(l.clone()),
                Some(_) => true,
                None => false,
            };
            if stale {
                *self.link.borrow_mut() = None;
                *dropped = true;
            }
            if !self.connecting.get() {
                self.connecting.set(true);
                return Slot::Connect;
            }
            self.ready.notified().await;
        }
    }

    /// Ends a connect attempt (with the new connection on success).
    pub fn connected(&self, link: Option<Rc<Link>>) {
        *self.link.borrow_mut() = link;
        self.connecting.set(false);
        self.ready.notify_waiters();
    }

    /// Whether the slot holds a usable connection.
    pub fn is_connected(&self) -> bool {
        self.link.borrow().as_ref().is_some_and(|l| l.usable())
    }
}

/// Starts HTTP/2 on a connected stream (preface, SETTINGS, connection window) and
/// waits for the server's SETTINGS. Boxed: it runs once per connection and would
/// otherwise enlarge every VU's future.
pub fn handshake(
    stream: Stream,
    mark_first_byte: bool,
) -> Pin<Box<impl Future<Output = Result<Rc<Link>, ErrorKind>>>> {
    Box::pin(async move {
        let link = Rc::new(Link {
            io: RefCell::new(Io {
                stream,
                conn: Conn::new(mark_first_byte),
                buf: vec![0; READ_BUF].into_boxed_slice(),
                start: 0,
                end: 0,
                written: 0,
                reader: None,
                flusher: None,
                waiting: Vec::new(),
            }),
        });
        std::future::poll_fn(|cx| {
            let mut io = link.io.borrow_mut();
            loop {
                let _ = io.flush(cx);
                if let Some(kind) = io.conn.dead() {
                    return Poll::Ready(Err(kind));
                }
                if io.conn.settled() {
                    return Poll::Ready(Ok(()));
                }
                if io.read(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        })
        .await?;
        Ok(link)
    })
}

/// One request on a shared connection, as a future: starts a stream when the
/// server's limit allows, then writes and reads until its response is complete.
pub struct Exchange<'r> {
    link: Rc<Link>,
    req: &'r Request,
    entry: Option<usize>,
    /// A scenario's: what to keep of the response (handed to the stream when it
    /// starts, back here when it is over).
    kept: Option<&'r mut Option<Box<Kept>>>,
}

impl<'r> Exchange<'r> {
    /// `req` on `link`.
    pub fn new(link: Rc<Link>, req: &'r Request) -> Self {
        Exchange {
            link,
            req,
            entry: None,
            kept: None,
        }
    }

    /// `req` on `link`, keeping what the [`Kept`] in `kept` asks for of the
    /// response into it (emptied by the caller; it is there again once the
    /// exchange is over, also when it failed).
    pub fn keeping(link: Rc<Link>, req: &'r Request, kept: &'r mut Option<Box<Kept>>) -> Self {
        Exchange {
            link,
            req,
            entry: None,
            kept: Some(kept),
        }
    }
}

impl Future for Exchange<'_> {
    type Output = Done;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Done> {
        let this = self.get_mut();
        let mut guard = this.link.io.borrow_mut();
        let io = &mut *guard;
        let Some(i) = this.entry else {
            if !io.conn.usable() {
                return Poll::Ready(Done::refused());
            }
            if !io.conn.has_room() {
                io.waiting.push(cx.waker().clone());
                return Poll::Pending;
            }
            let i = io.conn.start(this.req);
            if let Some(k) = this.kept.as_mut().and_then(|k| k.take()) {
                io.conn.keep(i, k);
            }
            io.conn.set_waker(i, cx.waker());
            this.entry = Some(i);
            if io.flusher.is_none() {
                io.kick(i, cx);
            }
            return Poll::Pending;
        };
        io.conn.set_waker(i, cx.waker());
        loop {
            // A stream that is over leaves without writing (unless it was woken to
            // write): the requests the VUs woken with it queue leave together.
            if !io.conn.is_done(i) || io.flusher == Some(i) {
                io.conn.send_body(i, this.req.body());
                let _ = io.flush(cx);
            }
            if let Some(done) = io.conn.take(i) {
                if let Some(k) = this.kept.as_mut() {
                    **k = io.conn.kept(i);
                }
                this.entry = None;
                io.leave(i);
                return Poll::Ready(done);
            }
            if io.read(cx).is_pending() {
                io.reader = Some(i);
                return Poll::Pending;
            }
        }
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.entry.take() {
            if let Ok(mut io) = self.link.io.try_borrow_mut() {
                io.conn.cancel(i);
                io.leave(i);
            }
        }
    }
}
