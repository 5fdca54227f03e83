//! What a test needs from the machine, checked in one place: a program, root,
//! /dev/net/tun, loop devices, a cgroup that can cap a device, or anything else a
//! set-up step reports. In strict mode (`LATSCOPE_STRICT=1`, or `CI=true`; `.ci/run`
//! sets it) a missing need fails the test with its install hint: CI cannot go green
//! with real-server coverage quietly gone. Outside it (a developer without the tools)
//! the test is skipped loudly: `SKIPPED test: …` straight to the process's stderr,
//! which the test harness does not capture.
//!
//! ```ignore
//! if !require("nginx") || !require("python3") {
//!     return;
//! }
//! let Some(lo) = require_ok(LoopDev::new("cap", 96), LOOP_HINT) else {
//!     return;
//! };
//! ```

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Whether a missing need fails the test: `LATSCOPE_STRICT` set to anything but `0`
/// or empty, or else `CI` set to `true` or `1`.
pub fn strict() -> bool {
    match std::env::var("LATSCOPE_STRICT") {
        Ok(v) => !v.is_empty() && v != "0",
        Err(_) => std::env::var("CI").is_ok_and(|v| v == "true" || v == "1"),
    }
}

/// The install hint for the programs the suite uses (what scripts/test.sh installs).
pub fn install_hint(program: &str) -> String {
    let package = match program {
        "varnishd" => "varnish",
        "promtool" => "prometheus",
        "unshare" | "losetup" | "script" => "util-linux (losetup: mount, script: bsdutils)",
        "ip" => "iproute2",
        "mkfs.ext4" | "chattr" => "e2fsprogs",
        "postgres" | "initdb" | "pg_ctl" => "postgresql",
        "php-fpm8.2" => "php-fpm",
        "php" => "php-cli",
        "mariadbd" | "mariadb-install-db" | "mariadb" => "mariadb-server",
        "httplint" | "kubernetes-validate" => return format!("pip install {program}"),
        other => other,
    };
    format!("apt-get install {package}")
}

/// Where `program` is: itself when it is a path, else the first executable of that
/// name on PATH or in the sbin directories (not on an ordinary user's PATH).
pub fn which(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// Whether `program` is installed; when it is not, fails the test in strict mode and
/// skips it loudly otherwise (the test returns on `false`).
pub fn require(program: &str) -> bool {
    which(program).is_some()
        || missing(
            &format!("{program} is not installed"),
            &install_hint(program),
        )
}

/// Whether this test runs as root (namespaces, mounts, becoming nobody); fails or
/// skips as [`require`] does.
pub fn require_root() -> bool {
    // SAFETY: plain getter.
    (unsafe { libc::geteuid() } == 0)
        || missing(
            "it needs root",
            "run the suite as root, as CI does (sudo bash scripts/test.sh)",
        )
}

/// Whether the lab's wire can run here: root and /dev/net/tun.
pub fn require_tun() -> bool {
    require_root()
        && (Path::new("/dev/net/tun").exists()
            || missing(
                "/dev/net/tun is missing",
                "load the tun module (modprobe tun)",
            ))
}

/// The hint for [`require_ok`] on a loop device.
pub const LOOP_HINT: &str =
    "loop devices need root, /dev/loop-control, losetup (mount) and mkfs.ext4 (e2fsprogs)";

/// Whether loop devices can be made here: root, /dev/loop-control, `losetup` and
/// `mkfs.ext4`. Making one can still fail: [`require_ok`] with [`LOOP_HINT`].
pub fn require_loop() -> bool {
    require_root()
        && require("losetup")
        && require("mkfs.ext4")
        && (Path::new("/dev/loop-control").exists()
            || missing("/dev/loop-control is missing", LOOP_HINT))
}

/// The hint for [`require_ok`] on a device cap.
pub const BLKIO_HINT: &str = "capping a device needs root and a cgroup v2 `io` controller or \
     cgroup v1 `blkio` (mounted at /sys/fs/cgroup/blkio)";

/// Whether a device can be capped by a cgroup: root, and a v2 hierarchy with the
/// `io` controller or a v1 `blkio` one. Capping can still fail: [`require_ok`] with
/// [`BLKIO_HINT`].
pub fn require_blkio() -> bool {
    let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "io"));
    let v1 = Path::new("/sys/fs/cgroup/blkio/cgroup.procs").exists();
    require_root() && (v2 || v1 || missing("no cgroup can cap a device here", BLKIO_HINT))
}

/// The value of a set-up step that needs something of the machine (a loop device, a
/// device cap, a namespace); on an error, fails the test in strict mode (with `hint`)
/// and skips it loudly otherwise (None: the test returns).
pub fn require_ok<T, E: std::fmt::Display>(result: Result<T, E>, hint: &str) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            missing(&e.to_string(), hint);
            None
        }
    }
}

/// Whether `ok` holds (anything else the test needs of the machine, named by
/// `what`); fails or skips as [`require`] does when it does not.
pub fn require_that(ok: bool, what: &str, hint: &str) -> bool {
    ok || missing(what, hint)
}

/// The test cannot run here: panics in strict mode, else says so loudly. Always
/// false.
fn missing(why: &str, hint: &str) -> bool {
    let thread = std::thread::current();
    let test = thread
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("this test");
    assert!(
        !strict(),
        "{test} cannot run: {why} ({hint}). Strict mode (LATSCOPE_STRICT=1 or CI=true) \
         fails instead of skipping; scripts/test.sh installs what the suite needs as root."
    );
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why} ({hint})");
    false
}
