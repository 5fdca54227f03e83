//! Helpers for the tests against real servers (issue 12): a temporary directory, a
//! Python server written by the test and started on a free 127.0.0.1 port (it
//! prints the port as its first stdout line), and a check that a program is
//! installed (the test skips, saying why, when it is not). nginx: util_nginx.rs.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util_wire::ChildGuard;

/// Whether `program` runs here (`program --version` or `-v` exits); prints why
/// `test` is skipped when it does not.
pub fn have(program: &str, test: &str) -> bool {
    let ok = Command::new(program)
        .arg(if program == "nginx" {
            "-v"
        } else {
            "--version"
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED {test}: {program} is not installed");
    }
    ok
}

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

/// Reads the first stdout line of `child` within 20 s.
fn first_line(child: &mut std::process::Child) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the server prints its port within 20 s")
}

/// Runs `python3 SCRIPT ARGS` (the script written into `dir`), which binds
/// 127.0.0.1:0 and prints its port first; returns the guard and the port.
pub fn start_python(dir: &TempDir, script: &str, args: &[&str]) -> (ChildGuard, u16) {
    let path = dir.write(
        &format!("server-{}.py", args.join("-").replace(['/', ':'], "_")),
        script,
    );
    let mut child = Command::new("python3")
        .arg(path)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts");
    let line = first_line(&mut child);
    let guard = ChildGuard(child);
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("the Python server printed {line:?}, not a port"));
    (guard, port)
}
