//! Helpers for the `latscope disk` tests: scratch directories and running the binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::latscope;

/// A fresh directory, removed when dropped. `base` is the parent.
pub struct Dir(pub PathBuf);

impl Dir {
    /// Under the system temp directory (may be tmpfs elsewhere).
    pub fn tmp(name: &str) -> Dir {
        Dir::under(&crate::util::scratch(), name)
    }

    /// Under the build's target directory: a real filesystem, for O_DIRECT tests.
    pub fn real(name: &str) -> Dir {
        Dir::under(Path::new(env!("CARGO_TARGET_TMPDIR")), name)
    }

    pub fn under(base: &Path, name: &str) -> Dir {
        let d = base.join(format!("latscope-it-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    /// Names of what is in the directory.
    pub fn entries(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn disk(args: &[&str]) -> Output {
    latscope()
        .arg("disk")
        .args(args)
        .arg("--no-save")
        .output()
        .unwrap()
}

/// Runs `latscope disk ARGS --json`, expects success, returns the JSON.
pub fn disk_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = disk(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks one direction of the JSON: counts, rates and ordered percentiles.
pub fn check_dir(doc: &Value, dir: &str, expect_ios: bool) {
    let d = &doc[dir];
    let ios = d["ios"].as_u64().unwrap();
    assert_eq!(ios > 0, expect_ios, "{dir}: {d}");
    if !expect_ios {
        return;
    }
    let secs = doc["duration_s"].as_f64().unwrap();
    let iops = d["iops"].as_f64().unwrap();
    assert!((iops - ios as f64 / secs).abs() <= 0.01 * iops + 1.0, "{d}");
    let bs = doc["bs"].as_f64().unwrap();
    let bw = d["bw_mib_s"].as_f64().unwrap();
    assert!(
        (bw - iops * bs / 1048576.0).abs() <= 0.01 * bw + 0.01,
        "{d}"
    );
    // A percentile may be null only where the I/Os cannot support it (the suite's
    // workloads: p99.9 from 1,000, p99.99 from 10,000).
    let lat = &d["lat_us"];
    for (k, n) in [
        ("p90", 10),
        ("p99", 100),
        ("p999", 1_000),
        ("p9999", 10_000),
    ] {
        assert!(!lat[k].is_null() || ios < n, "{k} of {ios} I/Os: {lat}");
    }
    let order = ["min", "p50", "p90", "p99", "p999", "p9999", "max"];
    let v: Vec<f64> = order.iter().filter_map(|k| lat[k].as_f64()).collect();
    assert!(v.windows(2).all(|w| w[0] <= w[1]), "{lat}");
    assert!(v[0] > 0.0, "{lat}");
    assert!(lat["mean"].as_f64().unwrap() > 0.0);
}

/// A RAM-backed block device for the test alone: a file in /dev/shm attached to a
/// free loop device, formatted ext4 and mounted on a temp directory; all undone on
/// drop. Needs root, `losetup` and `mkfs.ext4`.
pub struct LoopDev {
    pub dev: String,
    pub mnt: Dir,
    image: PathBuf,
}

impl LoopDev {
    /// A `size_mb` MiB device, or why there cannot be one here.
    pub fn new(name: &str, size_mb: u64) -> Result<LoopDev, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root for losetup and mount".into());
        }
        let image = Path::new("/dev/shm").join(format!(
            "latscope-it-loop-{name}-{}.img",
            std::process::id()
        ));
        let f = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
        f.set_len(size_mb << 20).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&image)
            .output()
            .map_err(|e| format!("losetup: {e}"));
        let dev = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
            Ok(o) => {
                let _ = std::fs::remove_file(&image);
                return Err(format!("losetup: {}", String::from_utf8_lossy(&o.stderr)));
            }
            Err(e) => {
                let _ = std::fs::remove_file(&image);
                return Err(e);
            }
        };
        let mnt = Dir::tmp(&format!("loop-{name}"));
        let lo = LoopDev { dev, mnt, image };
        // Initialised now, not by ext4lazyinit in the background while the volume is
        // measured (its writes would be I/O the volume did not do for the test).
        lo.sh(&[
            "mkfs.ext4",
            "-q",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            &lo.dev,
        ])?;
        lo.sh(&["mount", &lo.dev, lo.mnt.path()])?;
        Ok(lo)
    }

    fn sh(&self, cmd: &[&str]) -> Result<(), String> {
        let o = std::process::Command::new(cmd[0])
            .args(&cmd[1..])
            .output()
            .map_err(|e| format!("{}: {e}", cmd[0]))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&o.stderr)))
        }
    }

    /// The device's number (for cgroup limits).
    pub fn rdev(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&self.dev).unwrap().rdev()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = self.sh(&["umount", self.mnt.path()]);
        let _ = self.sh(&["losetup", "-d", &self.dev]);
        let _ = std::fs::remove_file(&self.image);
    }
}

/// What a cgroup caps.
#[derive(Clone, Copy)]
enum Limit {
    Iops(u32),
    Bps(u64),
}

/// A cgroup that caps one device's read and write IOPS (or bytes per second) — cgroup v2 `io.max` where the
/// `io` controller is on a v2 hierarchy, else cgroup v1 `blkio.throttle.*` — removed
/// on drop. A process joins with `echo $$ > {procs}`.
pub struct Capped {
    dir: PathBuf,
    /// The file a process writes its pid to, to join.
    pub procs: PathBuf,
}

impl Capped {
    /// Caps device `dev` (st_dev or st_rdev) at `iops`, or says why it cannot.
    pub fn new(dev: u64, iops: u32) -> Result<Capped, String> {
        Capped::limit(dev, Limit::Iops(iops))
    }

    /// Caps device `dev` at `bps` bytes per second, reads and writes.
    pub fn bandwidth(dev: u64, bps: u64) -> Result<Capped, String> {
        Capped::limit(dev, Limit::Bps(bps))
    }

    fn limit(dev: u64, limit: Limit) -> Result<Capped, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root to write cgroup limits".into());
        }
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        let name = format!("latscope-test-{}-{major}-{minor}", std::process::id());
        let v2 = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(Path::new)
            .find(|root| {
                std::fs::read_to_string(root.join("cgroup.controllers"))
                    .is_ok_and(|c| c.split_whitespace().any(|c| c == "io"))
            });
        let mut why = Vec::new();
        if let Some(root) = v2 {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+io");
            let dir = root.join(&name);
            match std::fs::create_dir_all(&dir).and_then(|_| {
                std::fs::write(
                    dir.join("io.max"),
                    match limit {
                        Limit::Iops(n) => format!("{major}:{minor} riops={n} wiops={n}"),
                        Limit::Bps(n) => format!("{major}:{minor} rbps={n} wbps={n}"),
                    },
                )
            }) {
                Ok(()) => {
                    return Ok(Capped {
                        procs: dir.join("cgroup.procs"),
                        dir,
                    })
                }
                Err(e) => {
                    let _ = std::fs::remove_dir(&dir);
                    why.push(format!("cgroup v2 io.max under {}: {e}", root.display()));
                }
            }
        }
        let blkio = Path::new("/sys/fs/cgroup/blkio");
        if blkio.join("cgroup.procs").exists() {
            let dir = blkio.join(&name);
            let capped = std::fs::create_dir_all(&dir)
                .map_err(|e| format!("create {}: {e}", dir.display()))
                .map(|_| Capped {
                    procs: dir.join("cgroup.procs"),
                    dir: dir.clone(),
                });
            let (files, n) = match limit {
                Limit::Iops(n) => (
                    [
                        "blkio.throttle.read_iops_device",
                        "blkio.throttle.write_iops_device",
                    ],
                    u64::from(n),
                ),
                Limit::Bps(n) => (
                    [
                        "blkio.throttle.read_bps_device",
                        "blkio.throttle.write_bps_device",
                    ],
                    n,
                ),
            };
            match capped.and_then(|c| {
                for file in files {
                    std::fs::write(c.dir.join(file), format!("{major}:{minor} {n}"))
                        .map_err(|e| format!("cap {major}:{minor} in {file}: {e}"))?;
                }
                Ok(c)
            }) {
                Ok(c) => return Ok(c),
                Err(e) => why.push(format!("cgroup v1 blkio: {e}")),
            }
        } else {
            why.push("no cgroup v1 blkio hierarchy".into());
        }
        Err(why.join("; "))
    }

    /// `sh -c` script that joins the cgroup, then execs `cmd`.
    pub fn script(&self, cmd: &str) -> String {
        format!("echo $$ > {} && exec {cmd}", self.procs.display())
    }
}

impl Drop for Capped {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Runs `latscope disk ARGS --json --no-save` (inside `cgroup` when given) under a
/// 60 s `timeout`; expects success and returns the JSON, which starts with the
/// verdict (the answer first, DESIGN.md).
pub fn disk_json_in(cgroup: Option<&Capped>, args: &str) -> Value {
    let cmd = format!(
        "{} disk {args} --json --no-save",
        env!("CARGO_BIN_EXE_latscope")
    );
    let raw = sh_stdout_in(cgroup, &cmd);
    assert!(
        raw.starts_with(b"{\n  \"verdict\": {"),
        "{}",
        String::from_utf8_lossy(&raw[..raw.len().min(200)])
    );
    serde_json::from_slice(&raw).expect("JSON on stdout")
}

/// Runs the shell command `cmd` (inside `cgroup` when given) under a 60 s `timeout`;
/// expects success and parses its stdout as JSON.
pub fn sh_json_in(cgroup: Option<&Capped>, cmd: &str) -> Value {
    serde_json::from_slice(&sh_stdout_in(cgroup, cmd)).expect("JSON on stdout")
}

/// Runs the shell command `cmd` (inside `cgroup` when given) under a 60 s `timeout`;
/// expects success and returns its stdout.
fn sh_stdout_in(cgroup: Option<&Capped>, cmd: &str) -> Vec<u8> {
    let script = match cgroup {
        Some(c) => c.script(cmd),
        None => format!("exec {cmd}"),
    };
    let out = std::process::Command::new("timeout")
        .args(["60", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
