//! The io_uring set-up of one load worker thread beyond the ring itself
//! ([`crate::uring::ring`]): the provided-buffer ring multishot receives take their
//! buffers from.

use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// What multishot recvmsg writes ahead of the payload: `io_uring_recvmsg_out` (four
/// u32: name, control and payload lengths, flags; no address) and the control
/// messages' room.
pub const RECVMSG_HEAD: usize = 16 + super::stamp::CONTROL_LEN as usize;

/// A provided-buffer ring: `count` buffers of `size` bytes the kernel picks from for
/// each receive; the worker hands each back once it has parsed its bytes, and
/// publishes the returned ones once per loop turn.
pub struct BufRing {
    entries: *mut BufRingEntry,
    entries_len: usize,
    data: Box<[u8]>,
    size: u32,
    count: u16,
    tail: u16,
}

impl BufRing {
    /// Registers `count` (a power of two) buffers of `size` bytes as group `bgid`.
    pub fn new(ring: &IoUring, count: u16, size: u32, bgid: u16) -> io::Result<BufRing> {
        let entries_len = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked for failure below. The ring's
        // entries must be page-aligned, which mmap guarantees.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                entries_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing {
            entries: ptr.cast(),
            entries_len,
            data: vec![0u8; count as usize * size as usize].into_boxed_slice(),
            size,
            count,
            tail: 0,
        };
        // SAFETY: the mapping lives as long as `b`, which the caller drops after the
        // ring (declared before it in the worker's driver).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ptr as u64, count, bgid, 0)?;
        }
        for bid in 0..count {
            b.recycle(bid);
        }
        b.publish();
        Ok(b)
    }

    /// The first `len` bytes of buffer `bid`, which a completion just handed over.
    #[inline]
    pub fn get(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * self.size as usize;
        &self.data[at..at + len.min(self.size as usize)]
    }

    /// The `len` payload bytes of buffer `bid`, after what multishot recvmsg writes
    /// ahead of them (its header and the control messages).
    #[inline]
    pub fn payload(&self, bid: u16, len: usize) -> &[u8] {
        let skip = RECVMSG_HEAD.min(self.size as usize);
        let at = bid as usize * self.size as usize + skip;
        &self.data[at..at + len.min(self.size as usize - skip)]
    }

    /// Gives buffer `bid` back (visible to the kernel at the next [`Self::publish`]).
    #[inline]
    pub fn recycle(&mut self, bid: u16) {
        let i = (self.tail & (self.count - 1)) as usize;
        let addr = self.data.as_ptr() as u64 + bid as u64 * self.size as u64;
        // SAFETY: i < count, inside the mapping; the kernel does not read entries
        // past the published tail.
        let e = unsafe { self.entries.add(i) };
        // Stated, not left to the debug build's own alignment check, which the test
        // build (compiled by clippy-driver, scripts/test.sh) does without.
        debug_assert!(e.is_aligned());
        // SAFETY: as above; aligned, since the mapping is page-aligned.
        let e = unsafe { &mut *e };
        e.set_addr(addr);
        e.set_len(self.size);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the recycled buffers visible to the kernel.
    #[inline]
    pub fn publish(&self) {
        // SAFETY: the tail field overlays the first entry's reserved field, inside
        // the mapping; the kernel reads it with acquire semantics.
        unsafe {
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            debug_assert!(tail.is_aligned());
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the ring that used it is gone.
        unsafe {
            libc::munmap(self.entries.cast(), self.entries_len);
        }
    }
}
