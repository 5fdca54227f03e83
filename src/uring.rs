//! io_uring set-up shared by the engines that use it (load's HTTP/1.1 engine and
//! disk's): a ring set up as fio sets up its own — cooperative and deferred task
//! work, one issuer (no inter-processor interrupts to deliver completions; they are
//! run when the thread waits) — with the flags the kernel does not know dropped one
//! by one.

use std::io;

use io_uring::IoUring;

/// The ring for `entries` submissions and `cq` completions. Must be called on the
/// thread that submits (single issuer).
pub fn ring(entries: u32, cq: u32) -> io::Result<IoUring> {
    let attempts: [fn(&mut io_uring::Builder, u32); 4] = [
        |b, n| {
            b.setup_cqsize(n)
                .setup_coop_taskrun()
                .setup_single_issuer()
                .setup_defer_taskrun();
        },
        |b, n| {
            b.setup_cqsize(n).setup_coop_taskrun();
        },
        |b, n| {
            b.setup_cqsize(n);
        },
        |_, _| {},
    ];
    let mut last = None;
    for setup in attempts {
        let mut b = IoUring::builder();
        setup(&mut b, cq);
        match b.build(entries) {
            Ok(ring) => return Ok(ring),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
}
