//! Reading a file the user named (`--cacert`, `--data @FILE`, `-f`, `import`, `merge`,
//! `k8s job -f`), bounded: a device (`/dev/zero`, `/dev/urandom`) or a directory is
//! refused before anything is read, a regular file larger than its cap is refused
//! from its size, and a pipe (`<(…)`, `/dev/stdin`) is read up to the cap and
//! refused past it. No input can make latscope read without end or hold more than
//! the cap in memory. Not for files latscope writes, nor for `/proc` and `/sys`
//! (those are read where they are used), nor for `disk PATH` (a device is what it
//! measures).

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A character or block device: it may never end.
    #[error("a device, not a file (give a regular file or a pipe)")]
    Device,
    #[error("a directory, not a file")]
    Directory,
    /// Larger than the cap (from its size, or read that far).
    #[error("larger than {} (the most latscope reads here)", size_text(*.limit))]
    TooLarge { limit: u64 },
    #[error("not UTF-8 text")]
    NotText,
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// `limit` bytes as a person reads them (`256 MiB`, `900 KiB`, `12 bytes`).
pub fn size_text(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else if limit >= 1 << 10 && limit.is_multiple_of(1 << 10) {
        format!("{} KiB", limit >> 10)
    } else {
        format!("{limit} bytes")
    }
}

/// Checks what `path` is before it is opened: a device or a directory is refused,
/// as is a regular file larger than `limit`.
pub fn check(path: &Path, limit: u64) -> Result<(), InputError> {
    let meta = std::fs::metadata(path)?;
    let kind = meta.file_type();
    if kind.is_char_device() || kind.is_block_device() {
        return Err(InputError::Device);
    }
    if kind.is_dir() {
        return Err(InputError::Directory);
    }
    if kind.is_file() && meta.len() > limit {
        return Err(InputError::TooLarge { limit });
    }
    Ok(())
}

/// Reads `path` whole, at most `limit` bytes (see the module's rules).
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    check(path, limit)?;
    let file = std::fs::File::open(path)?;
    // Checked again on the open file: the path may have changed in between.
    let kind = file.metadata()?.file_type();
    if kind.is_char_device() || kind.is_block_device() {
        return Err(InputError::Device);
    }
    let mut data = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut data)?;
    if data.len() as u64 > limit {
        return Err(InputError::TooLarge { limit });
    }
    Ok(data)
}

/// [`read_capped`] for a text file (UTF-8).
pub fn read_text_capped(path: &Path, limit: u64) -> Result<String, InputError> {
    String::from_utf8(read_capped(path, limit)?).map_err(|_| InputError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device is refused before a byte is read; a file past its cap from its
    /// size; a pipe past its cap after reading one byte more than it.
    #[test]
    fn devices_directories_and_caps() {
        let dir = std::env::temp_dir().join(format!("latscope-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(matches!(
            read_capped(Path::new("/dev/zero"), 1 << 20),
            Err(InputError::Device)
        ));
        assert!(matches!(
            read_capped(&dir, 1 << 20),
            Err(InputError::Directory)
        ));
        let f = dir.join("ten");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_capped(&f, 10).unwrap(), b"0123456789");
        assert!(matches!(
            read_capped(&f, 9),
            Err(InputError::TooLarge { limit: 9 })
        ));
        assert!(matches!(
            read_capped(&dir.join("none"), 9),
            Err(InputError::Io(_))
        ));
        std::fs::write(&f, b"\xff\xfe").unwrap();
        assert!(matches!(read_text_capped(&f, 9), Err(InputError::NotText)));
        assert_eq!(size_text(256 << 20), "256 MiB");
        assert_eq!(size_text(900 << 10), "900 KiB");
        assert_eq!(size_text(12), "12 bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A pipe that never ends is read to the cap and refused.
    #[test]
    fn an_endless_pipe_stops_at_the_cap() {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec cat /dev/zero")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(child.stdout.as_ref().unwrap());
        let path = format!("/proc/self/fd/{fd}");
        let r = read_capped(Path::new(&path), 1 << 16);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            matches!(r, Err(InputError::TooLarge { limit: 65536 })),
            "{r:?}"
        );
    }
}
