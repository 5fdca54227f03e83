//! Heap buffers aligned for O_DIRECT (the address must be a multiple of the
//! filesystem's memory alignment), filled with random bytes so that compressing or
//! deduplicating storage cannot cheat.

use std::alloc::{self, Layout};

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// An owned, aligned, initialised byte buffer.
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory; nothing else aliases it.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` random bytes at an address that is a multiple of `align` (a power of
    /// two; at least 4096 is used, a page).
    pub(crate) fn new(len: usize, align: usize, seed: u64) -> AlignedBuf {
        let align = align.max(4096).next_power_of_two();
        let layout = Layout::from_size_align(len.max(1), align).expect("valid buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        let mut buf = AlignedBuf { ptr, layout };
        SmallRng::seed_from_u64(seed).fill_bytes(buf.as_mut_slice());
        buf
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() initialised bytes for self's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    /// The bytes, mutable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    /// Raw pointer, for io_uring (which writes through it while an I/O is in flight).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The address honours the alignment and the content is not all zeros.
    #[test]
    fn aligned_and_filled() {
        let b = AlignedBuf::new(8192, 512, 1);
        assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
        assert_eq!(b.as_slice().len(), 8192);
        assert!(b.as_slice().iter().any(|&x| x != 0));
        let b = AlignedBuf::new(4096, 16384, 2);
        assert_eq!(b.as_slice().as_ptr() as usize % 16384, 0);
    }
}
