//! Helpers for the tests against real servers (issue 12): a temporary directory, and
//! a server the test starts that prints its port as its first stdout line — most
//! often a Python server written in the test (on a free 127.0.0.1 port). What a test
//! needs installed: util_require.rs; nginx: util_nginx.rs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util_wire::ChildGuard;

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after `name` and this process.
    pub fn new(name: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            crate::util::scratch().join(format!("latscope-real-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `text` to `name` inside it; returns the path as a string.
    pub fn write(&self, name: &str, text: &str) -> String {
        let p = self.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts `cmd`, a server that prints its port as its first stdout line (stderr
/// shown; stdin a pipe that closes when the guard drops or the test process dies,
/// which a script may watch to stop); its guard, which kills it on drop, and the
/// port. Fails the test when no port comes within 20 s.
pub fn start_server(mut cmd: Command) -> (ChildGuard, u16) {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} starts: {e}"));
    let stdout = child.stdout.take().unwrap();
    let guard = ChildGuard(child);
    let line = crate::util::first_line(stdout, &format!("{what} prints its port"));
    let port = line
        .parse()
        .unwrap_or_else(|_| panic!("{what} printed {line:?}, not a port"));
    (guard, port)
}

/// `python3 -c SCRIPT ARGS…` as [`start_server`]: the script binds (127.0.0.1:0
/// unless its arguments say otherwise) and prints its port first. The test calls
/// `require("python3")` before.
pub fn python_server(script: &str, args: &[&str]) -> (ChildGuard, u16) {
    python_server_with(Command::new("python3"), script, args)
}

/// [`python_server`] run by another interpreter command: `/usr/bin/python3` for
/// Debian's modules, or python3 inside a network namespace (`Netns::command`).
pub fn python_server_with(mut python: Command, script: &str, args: &[&str]) -> (ChildGuard, u16) {
    python.arg("-c").arg(script).args(args);
    start_server(python)
}

/// `python3 tests/data/SCRIPT ARGS…` as [`start_server`].
pub fn python_data_server(script: &str, args: &[&str]) -> (ChildGuard, u16) {
    let mut python = Command::new("python3");
    python
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(script),
        )
        .args(args);
    start_server(python)
}
