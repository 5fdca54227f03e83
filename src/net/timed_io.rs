//! A transport wrapper that notes when bytes first move after it is armed: the moment
//! a request has been written, as seen at the socket rather than guessed from above.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// When the first write and the first read completed since the last [`Marks::arm`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Marks {
    pub first_write: Option<Instant>,
    pub first_read: Option<Instant>,
    pub bytes_read: u64,
}

/// Shared handle to the marks of one connection.
#[derive(Debug, Clone, Default)]
pub struct MarkHandle(Arc<Mutex<Marks>>);

impl MarkHandle {
    /// Forgets earlier marks: the next write and read are the next request's.
    pub fn arm(&self) {
        *self.0.lock().expect("marks lock") = Marks::default();
    }

    /// The marks so far.
    pub fn get(&self) -> Marks {
        *self.0.lock().expect("marks lock")
    }
}

/// `T` with its first write and read after each arm timed.
#[derive(Debug)]
pub struct TimedIo<T> {
    inner: T,
    marks: MarkHandle,
}

impl<T> TimedIo<T> {
    /// Wraps `inner`; returns the wrapper and the handle to its marks.
    pub fn new(inner: T) -> (TimedIo<T>, MarkHandle) {
        let marks = MarkHandle::default();
        (
            TimedIo {
                inner,
                marks: marks.clone(),
            },
            marks,
        )
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TimedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let got = buf.filled().len() - before;
        if got > 0 {
            let mut m = self.marks.0.lock().expect("marks lock");
            m.first_read.get_or_insert_with(Instant::now);
            m.bytes_read += got as u64;
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.note_write();
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.note_write();
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T> TimedIo<T> {
    fn note_write(&self) {
        self.marks
            .0
            .lock()
            .expect("marks lock")
            .first_write
            .get_or_insert_with(Instant::now);
    }
}
