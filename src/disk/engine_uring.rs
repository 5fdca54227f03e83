//! The io_uring engine: one thread keeps `iodepth` I/Os in flight on one ring
//! (fdatasync goes through the ring too, after each write with `--fsync`), handed to
//! the kernel at most [`SUBMIT_BATCH`] per system call. An I/O's latency runs from
//! just before the system call that submits it to the reaping of its completion:
//! what the application waits, submission included (fio's `clat` starts after the
//! submitting call returns; its `lat` starts earlier, when fio prepares the I/O).
//! One clock read per batch of completions, as fio does.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring, Probe};

use crate::disk::buf::AlignedBuf;
use crate::disk::engine_threads::io_error;
use crate::disk::options::DiskError;
use crate::disk::recorder::{Kind, Recorder};
use crate::disk::workload::{Op, OpGen};
use crate::disk::Ctx;

/// Most submissions handed to the kernel in one system call. The block layer holds
/// a batch's requests until the whole batch is prepared (its plug), so large
/// batches delay the device's work: submitting 32 at once cost ~15 % IOPS and
/// raised p50 ~25 % against fio on a VM disk, and fio itself submits 1–4 at a time.
const SUBMIT_BATCH: usize = 4;

/// Checks that io_uring works here with the opcodes used (a throwaway ring). An
/// error means: use the threads engine.
pub(crate) fn probe() -> io::Result<()> {
    let ring = IoUring::new(2)?;
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    for code in [opcode::Read::CODE, opcode::Write::CODE, opcode::Fsync::CODE] {
        if !probe.is_supported(code) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring lacks read/write/fsync",
            ));
        }
    }
    Ok(())
}

/// The ring for `iodepth` I/Os ([`crate::uring::ring`]), its completion queue as
/// deep as its submission queue. Must be called on the thread that submits.
fn ring(iodepth: u32) -> io::Result<IoUring> {
    let entries = iodepth.max(1).next_power_of_two();
    crate::uring::ring(entries, entries)
}

/// What one queue slot is doing.
#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    /// A read or write; `done` bytes already transferred (short I/O is resubmitted,
    /// keeping the first submission time).
    Io {
        op: Op,
        off: u64,
        done: u32,
        start: Option<Instant>,
    },
    /// fdatasync after a write.
    Sync {
        start: Option<Instant>,
    },
}

struct Slot {
    buf: AlignedBuf,
    state: State,
}

/// Runs the ring until the deadline, Ctrl-C or an error, then drains it.
pub(crate) fn worker(ctx: &Ctx<'_>, mut gen: OpGen, mut rec: Recorder) {
    let mut ring = match ring(ctx.iodepth) {
        Ok(r) => r,
        Err(e) => {
            ctx.halt();
            return rec.finish(Instant::now(), Err(DiskError::Uring(e)));
        }
    };
    let qd = ctx.iodepth as usize;
    let bs = ctx.bs as u32;
    let fd = types::Fd(ctx.file.as_raw_fd());
    let mut slots: Vec<Slot> = (0..qd)
        .map(|i| Slot {
            buf: AlignedBuf::new(ctx.bs as usize, ctx.mem_align, 0x5eed + i as u64),
            state: State::Idle,
        })
        .collect();
    let mut ready: Vec<usize> = (0..qd).collect();
    let mut inflight = 0usize;
    let mut stopping = false;
    let mut result = Ok(());
    let mut end = Instant::now();
    let mut busy = 0u32;
    loop {
        if stopping {
            ready.clear();
        }
        let mut t = Instant::now();
        let mut batch = 0;
        for i in ready.drain(..) {
            if batch == SUBMIT_BATCH {
                // Hand these to the kernel now; the rest get their own start time.
                if let Err(e) = ring.submit() {
                    if !retryable(&e) {
                        result = Err(io_error(Op::Read, 0, e));
                        stopping = true;
                        ctx.halt();
                    }
                }
                batch = 0;
                t = Instant::now();
            }
            let slot = &mut slots[i];
            match &mut slot.state {
                State::Idle => {
                    let (op, off) = gen.next_op();
                    slot.state = State::Io {
                        op,
                        off,
                        done: 0,
                        start: Some(t),
                    };
                }
                State::Io { start, .. } | State::Sync { start } => {
                    start.get_or_insert(t);
                }
            }
            let entry = build(slot, fd, bs).user_data(i as u64);
            // SAFETY: the buffer lives in `slots`, which outlives the I/O: the loop
            // only ends once nothing is in flight (or leaks `slots` if it cannot tell).
            // The ring has at least `iodepth` entries, so the push cannot fail.
            if unsafe { ring.submission().push(&entry) }.is_ok() {
                inflight += 1;
                batch += 1;
            }
        }
        if inflight == 0 {
            break;
        }
        // Submits what was queued and waits for at least one completion.
        match ring.submit_and_wait(1) {
            Ok(_) => busy = 0,
            Err(e) if busy < 10_000 && retryable(&e) => {
                busy += 1;
                std::thread::yield_now();
                continue;
            }
            Err(e) => {
                result = Err(io_error(Op::Read, 0, e));
                ctx.halt();
                // In-flight I/Os may still write into the buffers: never free them.
                std::mem::forget(slots);
                break;
            }
        }
        let now = Instant::now();
        end = now;
        if !stopping && ctx.stopping(now) {
            stopping = true;
        }
        for cqe in ring.completion() {
            inflight -= 1;
            let i = cqe.user_data() as usize;
            let res = cqe.result();
            let Some(slot) = slots.get_mut(i) else {
                continue;
            };
            match slot.state {
                State::Io {
                    op,
                    off,
                    done,
                    start,
                } => {
                    if res == -libc::EINTR || res == -libc::EAGAIN {
                        ready.push(i);
                        continue;
                    }
                    if res <= 0 {
                        let e = if res == 0 {
                            io::ErrorKind::UnexpectedEof.into()
                        } else {
                            io::Error::from_raw_os_error(-res)
                        };
                        if result.is_ok() {
                            result = Err(io_error(op, off, e));
                        }
                        ctx.halt();
                        stopping = true;
                        slot.state = State::Idle;
                        continue;
                    }
                    let done = done + res as u32;
                    if done < bs {
                        slot.state = State::Io {
                            op,
                            off,
                            done,
                            start,
                        };
                        ready.push(i);
                        continue;
                    }
                    if now <= ctx.deadline {
                        if let Some(start) = start {
                            let kind = if op == Op::Read {
                                Kind::Read
                            } else {
                                Kind::Write
                            };
                            rec.record(kind, now - start, now);
                        }
                    }
                    slot.state = if op == Op::Write && ctx.fsync {
                        State::Sync { start: None }
                    } else {
                        State::Idle
                    };
                    ready.push(i);
                }
                State::Sync { start } => {
                    if res == -libc::EINTR || res == -libc::EAGAIN {
                        ready.push(i);
                        continue;
                    }
                    if res < 0 {
                        if result.is_ok() {
                            result = Err(ctx.fail_sync(io::Error::from_raw_os_error(-res)));
                        }
                        stopping = true;
                    } else if let (Some(start), true) = (start, now <= ctx.deadline) {
                        rec.record(Kind::Fsync, now - start, now);
                    }
                    slot.state = State::Idle;
                    ready.push(i);
                }
                State::Idle => {}
            }
        }
    }
    rec.finish(end.min(ctx.deadline), result);
}

/// EINTR, EAGAIN, EBUSY: try again.
fn retryable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

/// The submission entry for a slot's current state.
fn build(slot: &mut Slot, fd: types::Fd, bs: u32) -> squeue::Entry {
    match slot.state {
        State::Io { op, off, done, .. } => {
            // SAFETY: done < bs = the buffer's length.
            let ptr = unsafe { slot.buf.as_mut_ptr().add(done as usize) };
            let len = bs - done;
            let off = off + u64::from(done);
            match op {
                Op::Read => opcode::Read::new(fd, ptr, len).offset(off).build(),
                Op::Write => opcode::Write::new(fd, ptr, len).offset(off).build(),
            }
        }
        State::Sync { .. } | State::Idle => opcode::Fsync::new(fd)
            .flags(types::FsyncFlags::DATASYNC)
            .build(),
    }
}
