//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The latscope binary under test.
pub fn latscope() -> Command {
    echo_panics();
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

/// Also writes every panic's message straight to the process's stderr, which the
/// test harness does not capture: a CI log that keeps only the lines around a
/// `FAILED` still says why (the harness prints captured output only at the end).
/// Installed once, by the first test that runs latscope.
pub fn echo_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            use std::io::Write;
            let thread = std::thread::current();
            let test = thread.name().unwrap_or("a test thread");
            let _ = writeln!(std::io::stderr().lock(), "panic in {test}: {info}");
            default(info);
        }));
    });
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

/// `latscope diagnose --no-save --no-load --json ARGS…`: its JSON (exit 0).
pub fn diagnose_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["diagnose", "--no-save", "--no-load", "--json"];
    all.extend_from_slice(args);
    run_json(&all)
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
    let mut cmd = latscope();
    cmd.args(args);
    output_within(cmd, limit).0
}

/// Runs a command with stdin closed and stdout/stderr captured, killing it after
/// `limit` (the test then fails saying so, never hangs). Returns its output and how
/// long it took.
pub fn output_within(
    mut cmd: Command,
    limit: std::time::Duration,
) -> (Output, std::time::Duration) {
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let out = wait_output(child, limit, &format!("{cmd:?}"));
    (out, start.elapsed())
}

/// Waits for a child started with piped stdout and stderr, collecting both, killing
/// it after `limit` (the test then fails naming `what`, never hangs).
pub fn wait_output(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> Output {
    use std::io::Read;
    let start = std::time::Instant::now();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{what} did not finish within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&err)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Makes `cmd` run as nobody (uid and gid 65534, no supplementary groups): how a
/// test sees what an ordinary user gets. Only for a test running as root.
pub fn as_nobody(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The first line a child writes to `stdout` (a server printing its port or URL),
/// trimmed; fails the test saying `what` after 20 s without one.
pub fn first_line(stdout: impl std::io::Read + Send + 'static, what: &str) -> String {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} within 20 s"))
        .trim()
        .to_string()
}

/// A free TCP port on 127.0.0.1 (bound, then released for the server the test
/// starts next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The JSON documents of a multi-document output (`k8s job`: one per `---`).
pub fn documents(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d).expect("each document is JSON"))
        .collect()
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

/// A new, empty directory for one test under [`scratch`], unique per call
/// (`NAME-N`).
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = scratch().join(format!("{name}-{n}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// This test process's scratch directory (`$TMPDIR/latscope-tests-PID`), where every
/// test's temporary files go. Made on first use, when the scratch directories of
/// earlier test runs whose process is gone are removed: a run leaves at most its own.
pub fn scratch() -> std::path::PathBuf {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let tmp = std::env::temp_dir();
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("latscope-tests-") else {
                    continue;
                };
                let gone = pid.parse::<u32>().is_ok()
                    && !std::path::Path::new(&format!("/proc/{pid}")).exists();
                if gone {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let root = tmp.join(format!("latscope-tests-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("the tests' scratch directory");
        // Tests that run a command as nobody make their own world-writable directory
        // inside: nobody must be able to get through this one.
        let _ =
            std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o755));
        root
    })
    .clone()
}
