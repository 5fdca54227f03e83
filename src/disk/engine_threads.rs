//! The portable engine: one OS thread per queue slot, each doing blocking
//! pread/pwrite (and fdatasync after writes with `--fsync`). Its latency is simply
//! the time around the system call. Used where io_uring is unavailable or with
//! `--engine threads`.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use crate::disk::buf::AlignedBuf;
use crate::disk::options::DiskError;
use crate::disk::recorder::{Kind, Recorder};
use crate::disk::workload::{Op, OpGen};
use crate::disk::Ctx;

/// Runs one worker until the deadline, Ctrl-C or an error.
pub(crate) fn worker(ctx: &Ctx<'_>, mut gen: OpGen, mut rec: Recorder, seed: u64) {
    let mut buf = AlignedBuf::new(ctx.bs as usize, ctx.mem_align, seed);
    let mut end = Instant::now();
    let result = loop {
        if ctx.stopping(end) {
            break Ok(());
        }
        let (op, off) = gen.next_op();
        let start = Instant::now();
        let r = match op {
            Op::Read => read_full(ctx.file, buf.as_mut_slice(), off),
            Op::Write => write_full(ctx.file, buf.as_slice(), off),
        };
        end = Instant::now();
        if let Err(e) = r {
            break Err(ctx.fail(op, off, e));
        }
        if end > ctx.deadline {
            break Ok(());
        }
        let kind = match op {
            Op::Read => Kind::Read,
            Op::Write => Kind::Write,
        };
        rec.record(kind, end - start, end);
        if op == Op::Write && ctx.fsync {
            let start = Instant::now();
            let r = ctx.file.sync_data();
            end = Instant::now();
            if let Err(e) = r {
                break Err(ctx.fail_sync(e));
            }
            if end > ctx.deadline {
                break Ok(());
            }
            rec.record(Kind::Fsync, end - start, end);
        }
    };
    rec.finish(end.min(ctx.deadline), result);
}

/// pread until the buffer is full (retrying short reads and EINTR).
fn read_full(file: &File, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, off) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// pwrite the whole buffer (retrying short writes and EINTR).
fn write_full(file: &File, buf: &[u8], off: u64) -> io::Result<()> {
    file.write_all_at(buf, off)
}

/// Maps a worker's I/O error to a run error.
pub(crate) fn io_error(op: Op, off: u64, e: io::Error) -> DiskError {
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => DiskError::io("writing the test file", e),
        _ => DiskError::io(
            format!(
                "{} at offset {off}",
                if op == Op::Read { "read" } else { "write" }
            ),
            e,
        ),
    }
}
