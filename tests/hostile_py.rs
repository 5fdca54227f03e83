//! Helpers for the round-two hostile cases (issue 28): a Python server from
//! tests/data started on loopback (its port read from its first stdout line,
//! stopped when dropped), and running latscope with its peak memory (VmHWM, from
//! the kernel's rusage of the child) and a time limit.

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

/// [`measure`] for any command.
// The child is reaped by `wait4` (for its peak RSS), which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn measure_cmd(mut cmd: Command, limit: Duration) -> Measured {
    use std::io::Read;
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let (status, peak_kib) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our child; status and usage are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage.ru_maxrss as u64);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    use std::os::unix::process::ExitStatusExt;
    Measured {
        out: Output {
            status: std::process::ExitStatus::from_raw(status),
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        },
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
