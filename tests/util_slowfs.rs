//! A block device with a network volume's latency, made the way this kernel allows
//! (no device-mapper delay, no nbd, no netem for storage): `tests/data/slowfs.c`, a
//! small FUSE filesystem that serves one image file with latency added to every
//! read, write and fsync (and optional periodic stalls), a loop device over that
//! file with direct I/O (so its I/Os reach the FUSE process concurrently, as a
//! network volume's do), and ext4 on the loop device. Needs root, libfuse3
//! (`fuse3`, `libfuse3-dev`, `pkg-config`: scripts/test.sh installs them), a C
//! compiler, `losetup` and `mkfs.ext4`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::util_disk::Dir;

/// The slowfs binary, compiled once per test run.
fn slowfs() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slowfs.c");
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slowfs");
        let flags = Command::new("pkg-config")
            .args(["--cflags", "--libs", "fuse3"])
            .output()
            .map_err(|e| format!("pkg-config: {e}"))?;
        if !flags.status.success() {
            return Err("pkg-config knows no fuse3 (install libfuse3-dev)".into());
        }
        let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
        let out = Command::new("cc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&bin)
            .arg(&src)
            .args(flags.split_whitespace())
            .output()
            .map_err(|e| format!("cc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cc slowfs.c: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(bin)
    })
    .clone()
}

fn sh(cmd: &[&str]) -> Result<String, String> {
    let o = Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .map_err(|e| format!("{}: {e}", cmd[0]))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&o.stderr)))
    }
}

/// What slowfs adds to the image's I/O.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slowness {
    /// Added to every read, write and fsync.
    pub delay: Duration,
    /// Added to every fsync besides `delay` (a costly cache flush).
    pub fsync_extra: Duration,
    /// Every `stall_every`, every I/O arriving in the first `stall_for` waits for its end.
    pub stall_every: Duration,
    pub stall_for: Duration,
}

/// ext4 on a loop device over a slowfs file; all undone on drop.
pub struct SlowVolume {
    fuse: Child,
    fuse_dir: Dir,
    dev: String,
    /// Where the ext4 filesystem is mounted.
    pub mnt: Dir,
    image: PathBuf,
}

impl SlowVolume {
    /// A `size_mb` MiB volume with `slow` added, or why there cannot be one here.
    pub fn new(name: &str, size_mb: u64, slow: Slowness) -> Result<SlowVolume, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root for FUSE, losetup and mount".into());
        }
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        let bin = slowfs()?;
        let image = Path::new("/dev/shm").join(format!(
            "latscope-it-slowfs-{name}-{}.img",
            std::process::id()
        ));
        let f = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
        f.set_len(size_mb << 20).map_err(|e| e.to_string())?;
        drop(f);
        let img = image.to_str().unwrap().to_string();
        if let Err(e) = sh(&["mkfs.ext4", "-q", "-F", &img]) {
            let _ = std::fs::remove_file(&image);
            return Err(e);
        }
        let fuse_dir = Dir::tmp(&format!("slowfs-{name}"));
        let us = |d: Duration| d.as_micros().to_string();
        let fuse = Command::new(&bin)
            .args([
                img.as_str(),
                &us(slow.delay),
                &us(slow.fsync_extra),
                &us(slow.stall_every),
                &us(slow.stall_for),
                fuse_dir.path(),
                "-f",
                "-o",
                "max_threads=128",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let mnt = Dir::tmp(&format!("slowvol-{name}"));
        let mut vol = SlowVolume {
            fuse,
            fuse_dir,
            dev: String::new(),
            mnt,
            image,
        };
        let file = vol.fuse_dir.0.join("disk.img");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !file.exists() {
            if let Ok(Some(status)) = vol.fuse.try_wait() {
                return Err(format!("slowfs exited at once ({status})"));
            }
            if Instant::now() > deadline {
                return Err("slowfs did not mount within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        vol.dev = sh(&[
            "losetup",
            "-f",
            "--show",
            "--direct-io=on",
            file.to_str().unwrap(),
        ])?;
        sh(&["mount", &vol.dev, vol.mnt.path()])?;
        Ok(vol)
    }

    /// The mounted filesystem's directory.
    pub fn path(&self) -> &str {
        self.mnt.path()
    }
}

impl Drop for SlowVolume {
    fn drop(&mut self) {
        let _ = sh(&["umount", self.mnt.path()]);
        if !self.dev.is_empty() {
            let _ = sh(&["losetup", "-d", &self.dev]);
        }
        if sh(&["umount", self.fuse_dir.path()]).is_err() {
            let _ = sh(&["umount", "-l", self.fuse_dir.path()]);
        }
        let _ = self.fuse.kill();
        let _ = self.fuse.wait();
        let _ = std::fs::remove_file(&self.image);
    }
}
