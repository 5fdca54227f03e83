//! `disk-tail` and `slow-fsync` both ways. The slow volume is this machine's own disk
//! with an IOPS cap, as a cloud volume has one: the disk run goes into a blkio cgroup
//! (cgroup v1) limited to 20 reads and 20 writes per second on the device under the
//! test directory, so I/Os and flushes queue for ~50–100 ms. The healthy storage is
//! tmpfs (RAM). Root and a writable blkio hierarchy only; skipped with a note otherwise.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;

use crate::findings::{assert_quiet, finding, num};
use crate::util_disk::Dir;

const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// A blkio cgroup capping `dev` at `iops`, removed on drop.
struct Capped(std::path::PathBuf);

impl Capped {
    fn new(dev: u64, iops: u32) -> Result<Capped, String> {
        let dir = Path::new(BLKIO).join(format!("latscope-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let capped = Capped(dir);
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        for file in [
            "blkio.throttle.read_iops_device",
            "blkio.throttle.write_iops_device",
        ] {
            std::fs::write(capped.0.join(file), format!("{major}:{minor} {iops}"))
                .map_err(|e| format!("cap {major}:{minor} in {file}: {e}"))?;
        }
        Ok(capped)
    }
}

impl Drop for Capped {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn disk_in(cgroup: Option<&Capped>, dir: &str) -> Value {
    let bin = env!("CARGO_BIN_EXE_latscope");
    let args =
        format!("{bin} disk {dir} --size 8MB -d 3s --pattern randrw --fsync --json --no-save");
    let script = match cgroup {
        Some(c) => format!("echo $$ > {}/cgroup.procs && exec {args}", c.0.display()),
        None => format!("exec {args}"),
    };
    // `timeout` bounds the run; the shell moves itself into the cgroup, then execs.
    let out = std::process::Command::new("timeout")
        .args(["60", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("disk JSON")
}

#[test]
fn disk_tail_and_slow_fsync_on_an_iops_capped_volume() {
    if unsafe { libc::geteuid() } != 0 || !Path::new(BLKIO).join("cgroup.procs").exists() {
        eprintln!("SKIPPED disk findings: needs root and a cgroup v1 blkio hierarchy");
        return;
    }
    let slow = Dir::real("capped");
    let dev = std::fs::metadata(&slow.0).unwrap().dev();
    let capped = match Capped::new(dev, 20) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("SKIPPED disk findings: the device cannot be capped here: {e}");
            return;
        }
    };
    let v = disk_in(Some(&capped), slow.path());
    let tail = finding(&v, "disk-tail");
    assert!(tail["title"].as_str().unwrap().contains("p99.99"), "{tail}");
    let fsync = finding(&v, "slow-fsync");
    assert!(num(fsync, "fsync_p99_ms") > 10.0, "{fsync}");

    let fast = Dir::under(Path::new("/dev/shm"), "ram");
    let v = disk_in(None, fast.path());
    assert_quiet(&v, "disk-tail", "tmpfs");
    assert_quiet(&v, "slow-fsync", "tmpfs");
}
