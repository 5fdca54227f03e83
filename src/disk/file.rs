//! The file a disk run measures: a fresh test file created in a directory (laid out
//! with data before reads are timed, removed when dropped — also after Ctrl-C, since
//! the run returns normally), or an existing file (read-only unless `--write`).
//! Opens with O_DIRECT where the filesystem allows it, with the alignment
//! `statx(STATX_DIOALIGN)` reports, and falls back to buffered I/O with a warning
//! where O_DIRECT is refused (or fails when `--direct` was explicit).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::disk::buf::AlignedBuf;
use crate::disk::options::{DirectMode, DiskError, DiskOptions, DEFAULT_SIZE, MIN_LAYOUT};
use crate::units::fmt_bytes;

/// Chunk size of the layout writes.
const LAYOUT_CHUNK: u64 = 1024 * 1024;
/// Memory alignment used when the kernel does not say.
const FALLBACK_ALIGN: u32 = 4096;

/// The file under test, ready for the engines.
pub struct TestFile {
    pub(crate) file: File,
    /// Its path.
    pub path: PathBuf,
    /// Created by latscope (and removed on drop).
    pub created: bool,
    /// Bytes of the file the run touches (a multiple of the block size).
    pub size: u64,
    /// O_DIRECT is in effect.
    pub direct: bool,
    /// Buffer address alignment for O_DIRECT, bytes.
    pub mem_align: u32,
    /// Offset/length alignment for O_DIRECT, bytes.
    pub offset_align: u32,
    /// The whole region was written before measuring.
    pub laid_out: bool,
    /// How long laying out took (writes and the final sync), when it was done.
    pub layout_time: Option<std::time::Duration>,
    /// Things the user should know (O_DIRECT fallback, a sparse file…).
    pub warnings: Vec<String>,
    /// A created file listed for removal should a panic end the process.
    _made: Option<crate::cleanup::Made>,
}

impl Drop for TestFile {
    fn drop(&mut self) {
        if self.created {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Opens or creates the file the options name, lays it out when reads (or
/// `--precondition`) need it, and checks O_DIRECT. `progress(done, total)` is called
/// while laying out; `stop` aborts (the created file is removed).
pub(crate) fn prepare(
    opts: &DiskOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TestFile, DiskError> {
    let meta = fs::metadata(&opts.path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => DiskError::PathMissing(opts.path.clone()),
        io::ErrorKind::PermissionDenied => DiskError::NoPermission {
            path: opts.path.clone(),
            what: "cannot look at it",
        },
        _ => DiskError::io(format!("{}", opts.path.display()), e),
    })?;
    let mut tf = if meta.is_dir() {
        create_in(opts, &opts.path)?
    } else if meta.is_file() {
        open_existing(opts, &meta)?
    } else {
        return Err(DiskError::NotFileOrDir(opts.path.clone()));
    };
    if tf.direct {
        check_alignment(&mut tf, opts)?;
    }
    let must_write = opts.precondition || (tf.created && opts.pattern.reads());
    if must_write {
        layout(&mut tf, opts, stop, progress)?;
    }
    if tf.direct {
        probe_direct(&mut tf, opts)?;
    }
    Ok(tf)
}

/// Creates a fresh test file in `dir` and reserves its space.
fn create_in(opts: &DiskOptions, dir: &Path) -> Result<TestFile, DiskError> {
    let size = round_down(opts.size.unwrap_or(DEFAULT_SIZE), opts.bs);
    let avail =
        free_space(dir).map_err(|e| DiskError::io(format!("statvfs {}", dir.display()), e))?;
    if avail < size {
        return Err(DiskError::NoSpace {
            path: dir.to_path_buf(),
            need: size,
            avail,
        });
    }
    let mut path = dir.join(format!(".latscope-disk-{}.tmp", std::process::id()));
    for n in 1..100 {
        if !path.exists() {
            break;
        }
        path = dir.join(format!(".latscope-disk-{}-{n}.tmp", std::process::id()));
    }
    let mut warnings = Vec::new();
    let want_direct = opts.direct != DirectMode::Off;
    let open = |direct: bool, create: bool| {
        let mut o = OpenOptions::new();
        o.read(true).write(true).mode(0o600);
        if create && direct {
            o.create_new(true);
        } else if create {
            // After a refused O_DIRECT open, which may have created the file already.
            o.create(true);
        }
        o.custom_flags(if direct { libc::O_DIRECT } else { 0 });
        o.open(&path)
    };
    let (file, direct) = open_direct_or_not(
        |d| open(d, true),
        want_direct,
        opts.direct,
        &path,
        &mut warnings,
    )
    .map_err(|e| {
        // The name did not exist before: whatever is there now is ours.
        let _ = fs::remove_file(&path);
        open_error(e, dir, "cannot create a file in this directory")
    })?;
    let tf = TestFile {
        file,
        _made: Some(crate::cleanup::remember(&path)),
        path: path.clone(),
        created: true,
        size,
        direct,
        mem_align: FALLBACK_ALIGN,
        offset_align: 512,
        laid_out: false,
        layout_time: None,
        warnings,
    };
    match fallocate(&tf.file, size) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
            return Err(DiskError::NoSpaceWriting(dir.to_path_buf()))
        }
        Err(_) => tf
            .file
            .set_len(size)
            .map_err(|e| DiskError::io(format!("extending {}", path.display()), e))?,
    }
    Ok(tf)
}

/// Opens an existing file (read-only unless writing was allowed).
fn open_existing(opts: &DiskOptions, meta: &fs::Metadata) -> Result<TestFile, DiskError> {
    let path = opts.path.clone();
    if opts.pattern.writes() && !opts.allow_write {
        return Err(DiskError::NeedsWrite {
            path,
            pattern: opts.pattern.name(),
        });
    }
    if opts.precondition && !opts.allow_write {
        return Err(DiskError::PreconditionNeedsWrite(path));
    }
    let len = meta.len();
    let need = opts.size.unwrap_or(len).max(opts.bs);
    if need > len {
        return Err(DiskError::FileTooSmall { path, len, need });
    }
    let size = round_down(need, opts.bs);
    let write = opts.allow_write && (opts.pattern.writes() || opts.precondition);
    let mut warnings = Vec::new();
    let open = |direct: bool| {
        OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(if direct { libc::O_DIRECT } else { 0 })
            .open(&path)
    };
    let (file, direct) = open_direct_or_not(
        open,
        opts.direct != DirectMode::Off,
        opts.direct,
        &path,
        &mut warnings,
    )
    .map_err(|e| {
        open_error(
            e,
            &path,
            if write {
                "cannot open it for writing"
            } else {
                "cannot open it for reading"
            },
        )
    })?;
    if opts.pattern.reads() && !opts.precondition && meta.blocks() * 512 < len {
        warnings.push(format!(
            "{} is sparse ({} of {} allocated): reads of holes never reach the disk",
            path.display(),
            fmt_bytes(meta.blocks() * 512),
            fmt_bytes(len)
        ));
    }
    Ok(TestFile {
        file,
        _made: None,
        path,
        created: false,
        size,
        direct,
        mem_align: FALLBACK_ALIGN,
        offset_align: 512,
        laid_out: false,
        layout_time: None,
        warnings,
    })
}

/// Opens with O_DIRECT when wanted; where the filesystem refuses it (EINVAL), opens
/// without and records a warning — unless `mode` is `Required`, which makes the
/// refusal an error. Returns the file and whether O_DIRECT is on.
pub(crate) fn open_direct_or_not(
    open: impl Fn(bool) -> io::Result<File>,
    want: bool,
    mode: DirectMode,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(File, bool), OpenError> {
    if !want {
        return open(false).map(|f| (f, false)).map_err(OpenError::Io);
    }
    match open(true) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            if mode == DirectMode::Required {
                return Err(OpenError::Direct(DiskError::DirectRefused {
                    path: path.to_path_buf(),
                    source: e,
                }));
            }
            warnings.push(direct_warning(path));
            open(false).map(|f| (f, false)).map_err(OpenError::Io)
        }
        Err(e) => Err(OpenError::Io(e)),
    }
}

/// Why opening failed: a plain I/O error, or a refused O_DIRECT that must be fatal.
pub(crate) enum OpenError {
    Io(io::Error),
    Direct(DiskError),
}

fn open_error(e: OpenError, path: &Path, what: &'static str) -> DiskError {
    match e {
        OpenError::Direct(d) => d,
        OpenError::Io(e) => match e.raw_os_error() {
            Some(libc::EACCES | libc::EPERM | libc::EROFS) => DiskError::NoPermission {
                path: path.to_path_buf(),
                what,
            },
            Some(libc::ENOSPC) => DiskError::NoSpaceWriting(path.to_path_buf()),
            _ => DiskError::io(format!("opening a file in {}", path.display()), e),
        },
    }
}

fn direct_warning(path: &Path) -> String {
    format!(
        "the filesystem of {} refuses O_DIRECT: falling back to buffered I/O (the page cache \
         is measured too; pass --direct to make this an error)",
        path.display()
    )
}

/// Reads the O_DIRECT alignment (`statx` STATX_DIOALIGN) and checks the block size.
fn check_alignment(tf: &mut TestFile, opts: &DiskOptions) -> Result<(), DiskError> {
    if let Some((mem, offset)) = dio_align(&tf.file) {
        if mem == 0 || offset == 0 {
            // The kernel says this file cannot do direct I/O.
            return fall_back(tf, opts, io::Error::from_raw_os_error(libc::EINVAL));
        }
        tf.mem_align = mem.max(FALLBACK_ALIGN);
        tf.offset_align = offset;
    }
    if !opts.bs.is_multiple_of(u64::from(tf.offset_align)) {
        return Err(DiskError::Misaligned {
            bs: opts.bs,
            align: u64::from(tf.offset_align),
        });
    }
    Ok(())
}

/// The (memory, offset) alignment for direct I/O, when the kernel reports it.
pub(crate) fn dio_align(file: &File) -> Option<(u32, u32)> {
    // SAFETY: statx fills the zeroed struct; the empty path with AT_EMPTY_PATH names
    // the open descriptor.
    unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        );
        if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
            return None;
        }
        Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
    }
}

/// Switches an open file to buffered I/O after O_DIRECT was refused at I/O time (or
/// fails when it was required).
fn fall_back(tf: &mut TestFile, opts: &DiskOptions, e: io::Error) -> Result<(), DiskError> {
    if opts.direct == DirectMode::Required {
        return Err(DiskError::DirectRefused {
            path: tf.path.clone(),
            source: e,
        });
    }
    let fd = tf.file.as_raw_fd();
    // SAFETY: plain fcntl on a descriptor we own.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) == 0
    };
    if !ok {
        return Err(DiskError::io(
            format!("turning O_DIRECT off on {}", tf.path.display()),
            io::Error::last_os_error(),
        ));
    }
    tf.direct = false;
    tf.warnings.push(direct_warning(&tf.path));
    Ok(())
}

/// Writes the whole region with random data, then syncs it and drops it from the
/// page cache, so that reads hit real, allocated blocks on the device.
fn layout(
    tf: &mut TestFile,
    opts: &DiskOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), DiskError> {
    let chunk = LAYOUT_CHUNK.min(tf.size).max(opts.bs);
    let chunk = round_down(chunk, opts.bs);
    let mut buf = AlignedBuf::new(chunk as usize, tf.mem_align as usize, 0x1a7);
    let mut off = 0;
    let started = std::time::Instant::now();
    while off < tf.size {
        if stop.load(Ordering::Relaxed) {
            return Err(DiskError::Interrupted);
        }
        // The suite lays out what the volume writes in its budget (a slow volume
        // gets a smaller file, not a longer wait), but at least MIN_LAYOUT.
        if opts
            .layout_budget
            .is_some_and(|b| started.elapsed() >= b && off >= MIN_LAYOUT.max(opts.bs))
        {
            let kept = round_down(off, opts.bs);
            tf.file
                .set_len(kept)
                .map_err(|e| write_error(&tf.path, e))?;
            tf.size = kept;
            break;
        }
        let len = chunk.min(tf.size - off) as usize;
        // Vary the data from chunk to chunk.
        buf.as_mut_slice()[..8].copy_from_slice(&off.to_le_bytes());
        match tf.file.write_all_at(&buf.as_slice()[..len], off) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && tf.direct && off == 0 => {
                fall_back(tf, opts, e)?;
                continue;
            }
            Err(e) => return Err(write_error(&tf.path, e)),
        }
        off += len as u64;
        progress(off, tf.size);
    }
    tf.file.sync_data().map_err(|e| write_error(&tf.path, e))?;
    tf.layout_time = Some(started.elapsed());
    drop_cache(&tf.file, tf.size);
    tf.laid_out = true;
    Ok(())
}

/// Reads one block with O_DIRECT to see that the filesystem really does it.
fn probe_direct(tf: &mut TestFile, opts: &DiskOptions) -> Result<(), DiskError> {
    let mut buf = AlignedBuf::new(opts.bs as usize, tf.mem_align as usize, 1);
    match tf.file.read_at(buf.as_mut_slice(), 0) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => fall_back(tf, opts, e),
        Err(e) => Err(DiskError::io(format!("reading {}", tf.path.display()), e)),
    }
}

fn write_error(path: &Path, e: io::Error) -> DiskError {
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT) => DiskError::NoSpaceWriting(path.to_path_buf()),
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => DiskError::NoPermission {
            path: path.to_path_buf(),
            what: "cannot write to it",
        },
        _ => DiskError::io(format!("writing {}", path.display()), e),
    }
}

/// Drops the file's pages from the page cache (best effort).
pub(crate) fn drop_cache(file: &File, len: u64) {
    // SAFETY: advisory call on a descriptor we own.
    unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            0,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        );
    }
}

/// Reserves `len` bytes of real blocks.
fn fallocate(file: &File, len: u64) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor we own.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Bytes an unprivileged user may still write on the filesystem of `dir`.
fn free_space(dir: &Path) -> io::Result<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: statvfs fills the zeroed struct from a valid C string.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut s) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
    }
}

fn round_down(x: u64, bs: u64) -> u64 {
    x / bs * bs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn einval_for_direct(direct: bool) -> io::Result<File> {
        if direct {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else {
            File::open("/dev/null")
        }
    }

    /// A filesystem that refuses O_DIRECT: the default falls back with a warning;
    /// an explicit --direct is an error; --buffered never asks.
    #[test]
    fn direct_refusal_falls_back_or_fails() {
        let p = Path::new("/x");
        let mut w = Vec::new();
        let (_, direct) =
            open_direct_or_not(einval_for_direct, true, DirectMode::Preferred, p, &mut w)
                .ok()
                .unwrap();
        assert!(!direct);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("O_DIRECT"), "{w:?}");
        let mut w = Vec::new();
        match open_direct_or_not(einval_for_direct, true, DirectMode::Required, p, &mut w) {
            Err(OpenError::Direct(DiskError::DirectRefused { .. })) => {}
            _ => panic!("explicit --direct must fail"),
        }
        let mut w = Vec::new();
        let (_, direct) = open_direct_or_not(einval_for_direct, false, DirectMode::Off, p, &mut w)
            .ok()
            .unwrap();
        assert!(!direct && w.is_empty());
    }

    #[test]
    fn rounds_down_to_blocks() {
        assert_eq!(round_down(10_000, 4096), 8192);
        assert_eq!(round_down(8192, 4096), 8192);
    }
}
