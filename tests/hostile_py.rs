//! Helpers for the round-two hostile cases (issue 28): a Python server from
//! tests/data started on loopback (its port read from its first stdout line,
//! stopped when dropped), and running latscope with its peak memory (VmHWM, as
//! GNU time reports it) and a time limit.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A Python server from tests/data, stopped (killed) when dropped.
pub struct PyServer {
    child: Child,
    pub port: u16,
}

impl PyServer {
    /// Starts `python3 tests/data/SCRIPT ARGS…`; its first stdout line is its port.
    pub fn start(script: &str, args: &[&str]) -> PyServer {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(script);
        let mut child = Command::new("python3")
            .arg(&path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 starts");
        let out = child.stdout.take().unwrap();
        let line = crate::util::first_line(out, &format!("{script} prints its port"));
        let port = line
            .parse()
            .unwrap_or_else(|_| panic!("{script}: port line {line:?}"));
        PyServer { child, port }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished latscope run with its peak resident memory.
pub struct Measured {
    pub out: Output,
    /// Peak resident set (VmHWM) in KiB, from `wait4`'s rusage.
    pub peak_kib: u64,
    pub took: Duration,
}

impl Measured {
    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    /// Peak resident memory in MiB.
    pub fn peak_mib(&self) -> u64 {
        self.peak_kib / 1024
    }
}

/// Runs latscope with `args` (stdin closed), killing it after `limit` (the test then
/// fails saying so); returns its output and peak memory.
pub fn measure(args: &[&str], limit: Duration) -> Measured {
    let mut cmd = crate::util::latscope();
    cmd.args(args);
    measure_cmd(cmd, limit)
}

/// [`measure`] for any command, run under GNU time (`/usr/bin/time -f %M`): the
/// peak is the child's own. (A child's rusage read by this process would include
/// the test process's memory: it is spawned with vfork, sharing this address space
/// until it execs, and the kernel keeps that high-water mark.)
pub fn measure_cmd(cmd: Command, limit: Duration) -> Measured {
    assert!(
        Path::new("/usr/bin/time").exists(),
        "GNU time measures the peak memory (apt-get install time; scripts/test.sh does)"
    );
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let report = crate::util::scratch().join(format!("peak-{n}.txt"));
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    let start = Instant::now();
    let (out, _) = crate::util::output_within(timed, limit);
    let took = start.elapsed();
    let peak_kib = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or_else(|| {
            panic!(
                "no peak from GNU time: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    Measured {
        out,
        peak_kib,
        took,
    }
}

/// Fails unless `m` exited with `code` (never 101, a panic), within `mib` MiB.
pub fn assert_exit(m: &Measured, code: i32, mib: u64, what: &str) {
    assert_ne!(m.code(), Some(101), "{what}: a panic: {}", m.stderr());
    assert_eq!(
        m.code(),
        Some(code),
        "{what}: exit {:?}, stderr: {}",
        m.code(),
        m.stderr()
    );
    assert!(
        m.peak_mib() < mib,
        "{what}: peak memory {} MiB (bound {mib} MiB)",
        m.peak_mib()
    );
}
