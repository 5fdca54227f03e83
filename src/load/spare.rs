//! Read buffers shared by a worker thread's HTTP/1.1 connections: a connection holds
//! one only while bytes are arriving (`http1::H1`), so thousands of connections
//! waiting for their responses cost no buffer memory (issue 21).

use std::cell::RefCell;

/// A buffer's size: enough for a small response's head and body in one read.
pub const BUF: usize = 4 * 1024;
/// The most spare read buffers a thread keeps.
const SPARE_MAX: usize = 256;

thread_local! {
    /// This thread's read buffers that no connection holds. A connection borrows one
    /// only while bytes are arriving: it takes one when a read is attempted and gives
    /// it back at once when nothing was there (the read is pending) and when a
    /// response was read to its end with nothing left over. Thousands of connections
    /// waiting for their responses then hold no buffer at all (5,000 of them held
    /// 20 MB of mostly idle 4 KiB buffers).
    static SPARE: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// A read buffer of [`BUF`] bytes: a spare one of this thread, or a new one.
pub fn take_buf() -> Box<[u8]> {
    SPARE
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| vec![0; BUF].into_boxed_slice())
}

/// Gives a [`BUF`]-sized buffer back to the thread's spares (a grown one is freed).
pub fn give_back(buf: Box<[u8]>) {
    if buf.len() == BUF {
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARE_MAX {
                s.push(buf);
            }
        });
    }
}

/// How many spare buffers this thread holds (tests).
#[cfg(test)]
pub fn count() -> usize {
    SPARE.with(|s| s.borrow().len())
}
