//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The latscope binary under test.
pub fn latscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

/// How long one latscope command in a test may take before it counts as a hang.
pub const LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs latscope with `args`, returning its output (killed, and the test failed,
/// after [`LIMIT`]).
pub fn run(args: &[&str]) -> Output {
    run_within(args, LIMIT)
}

/// Runs latscope with `args`, asserts it exits 0 and parses its stdout as JSON.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    run_json_within(args, LIMIT)
}

/// [`run_json`] with a limit of its own.
pub fn run_json_within(args: &[&str], limit: std::time::Duration) -> serde_json::Value {
    let out = run_within(args, limit);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

/// Runs latscope with `args`, killing it if it runs longer than `limit` (a hang is a
/// failure, never a stuck test run).
pub fn run_within(args: &[&str], limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = latscope()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("latscope starts");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "latscope {args:?} did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Parses stdout as JSON, with the output in the panic message if it is not.
pub fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
