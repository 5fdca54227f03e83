//! Validated settings of a disk run (built from `DiskArgs` by `config::disk`), and the typed errors a
//! disk run can end with. Usage mistakes (a bad value, a missing path, writing to an
//! existing file without `--write`) are told apart from run failures (no space, no
//! permission, an I/O error) so the command picks exit code 2 or 1.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::disk::workload::Pattern;
use crate::units::fmt_bytes;

/// Test file size when `--size` is not given and a file is created.
pub const DEFAULT_SIZE: u64 = 256 * 1024 * 1024;
/// How long the suite lays out its test file at most (it keeps what was written by
/// then, at least [`MIN_LAYOUT`]).
pub const SUITE_LAYOUT_BUDGET: Duration = Duration::from_secs(4);
/// The least the suite lays out, however slow the volume.
pub const MIN_LAYOUT: u64 = 8 * 1024 * 1024;
/// Largest block size (io_uring lengths are 32-bit; larger blocks say nothing more).
pub const MAX_BS: u64 = 64 * 1024 * 1024;

/// Whether to bypass the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectMode {
    /// Buffered I/O (`--buffered`).
    Off,
    /// O_DIRECT, falling back to buffered I/O with a warning where it is refused
    /// (the default).
    Preferred,
    /// O_DIRECT or fail (`--direct` given explicitly).
    Required,
}

/// Which I/O engine to use (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiskEngine {
    /// io_uring where the kernel allows it, otherwise threads.
    Auto,
    /// io_uring only.
    Uring,
    /// pread/pwrite on a thread per queue slot.
    Threads,
}

/// Everything a disk run needs, checked.
#[derive(Debug, Clone)]
pub struct DiskOptions {
    /// A directory (a test file is created in it) or an existing file.
    pub path: PathBuf,
    pub pattern: Pattern,
    /// Percentage of reads (100 for read patterns, 0 for write patterns).
    pub read_pct: u8,
    /// Block size, bytes.
    pub bs: u64,
    /// I/Os in flight.
    pub iodepth: u32,
    /// `--size`, when given.
    pub size: Option<u64>,
    /// How long to measure.
    pub duration: Duration,
    pub direct: DirectMode,
    /// fdatasync after every write.
    pub fsync: bool,
    /// Write the whole file before measuring.
    pub precondition: bool,
    /// Writing to an existing file is allowed (`--write`).
    pub allow_write: bool,
    pub engine: DiskEngine,
    /// No workload flag was given: run the database suite ([`crate::disk::suite`]).
    pub suite: bool,
    /// Stop laying out after this long (keeping at least [`MIN_LAYOUT`]).
    pub layout_budget: Option<Duration>,
}

/// Why a disk run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The path does not exist.
    #[error("{0}: no such file or directory")]
    PathMissing(PathBuf),
    /// Neither a directory nor a regular file.
    #[error("{0}: not a directory or a regular file")]
    NotFileOrDir(PathBuf),
    /// The user may not create, open or write the file.
    #[error("{path}: permission denied ({what})")]
    NoPermission { path: PathBuf, what: &'static str },
    /// The filesystem has too little free space for the test file.
    #[error("{path}: no space for the test file: it needs {need}, {avail} free", need = fmt_bytes(*.need), avail = fmt_bytes(*.avail))]
    NoSpace {
        path: PathBuf,
        need: u64,
        avail: u64,
    },
    /// The filesystem ran out of space while writing.
    #[error("{0}: no space left on the device while writing the test file")]
    NoSpaceWriting(PathBuf),
    /// An existing file is smaller than what was asked.
    #[error("{path}: file too small: it has {len}, the run needs {need}", len = fmt_bytes(*.len), need = fmt_bytes(*.need))]
    FileTooSmall { path: PathBuf, len: u64, need: u64 },
    /// O_DIRECT was asked for explicitly and the filesystem refused it.
    #[error("{path}: O_DIRECT refused by the filesystem ({source}); use --buffered")]
    DirectRefused { path: PathBuf, source: io::Error },
    /// A write pattern on an existing file without `--write`.
    #[error("{path} is an existing file: {pattern} would overwrite it; pass --write to allow that, or give a directory")]
    NeedsWrite {
        path: PathBuf,
        pattern: &'static str,
    },
    /// `--precondition` on an existing file without `--write`.
    #[error(
        "{0} is an existing file: --precondition would overwrite it; pass --write to allow that"
    )]
    PreconditionNeedsWrite(PathBuf),
    /// The block size does not fit the direct-I/O alignment.
    #[error("--bs {bs} is not a multiple of the {align}-byte direct I/O alignment of this file; use a multiple of {align} or --buffered")]
    Misaligned { bs: u64, align: u64 },
    /// io_uring was asked for and is not available.
    #[error("io_uring is not available here ({0}); use --engine threads")]
    Uring(io::Error),
    /// Any other I/O error.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// Ctrl-C before the measurement began.
    #[error("interrupted before the measurement started")]
    Interrupted,
}

impl DiskError {
    /// Whether this is the user's mistake (exit 2) rather than a run failure (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            DiskError::PathMissing(_)
                | DiskError::NotFileOrDir(_)
                | DiskError::FileTooSmall { .. }
                | DiskError::NeedsWrite { .. }
                | DiskError::PreconditionNeedsWrite(_)
                | DiskError::Misaligned { .. }
        )
    }

    /// An I/O error with what was being done.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> DiskError {
        DiskError::Io {
            what: what.into(),
            source,
        }
    }
}
