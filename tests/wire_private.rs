//! The wire's non-root path (`enter_private_namespace`, what `latscope demo` uses):
//! a single-threaded process moves into a user + network namespace of its own and
//! runs the wire there. Tests fork the test process to get a single-threaded one.

use std::io::Write;
use std::time::{Duration, Instant};

use latscope::lab::wire::{Wire, WireOptions};

use crate::util_require::require_tun;
use crate::util_wire::*;

fn rtt(ms: u64) -> WireOptions {
    WireOptions {
        rtt: Duration::from_millis(ms),
        ..WireOptions::default()
    }
}

/// The non-root path of the demo: a single-threaded process enters a user + network
/// namespace of its own and runs the whole wire there (here in a forked child, the
/// only single-threaded process a test can get). Its devices never appear in the
/// host's namespace, and the RTT is real.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn private_namespace_runs_the_wire_off_the_host() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let host_links = || -> std::collections::BTreeSet<String> {
        std::fs::read_dir("/sys/class/net")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = host_links();
    let mut child = fork_child(|out| {
        if let Err(e) = latscope::lab::wire::enter_private_namespace() {
            let _ = writeln!(out, "enter failed: {e}");
            return 2;
        }
        let wire = match Wire::start(rtt(20)) {
            Ok(w) => w,
            Err(e) => {
                let _ = writeln!(out, "wire failed: {e}");
                return 3;
            }
        };
        let Ok(listener) = wire.bind_listener(0) else {
            return 4;
        };
        let addr = listener.local_addr().unwrap();
        // The kernel completes handshakes into the backlog: no accept needed.
        let connects: Vec<Duration> = (0..10).map(|_| connect(addr).1).collect();
        let _ = writeln!(
            out,
            "{} {} {:.1}",
            wire.host_device(),
            wire.host_ip(),
            p50_ms(connects)
        );
        0
    });
    let line = child.line();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "child said: {line}");
    // While the child's wire runs, the host namespace has none of it: no device
    // appeared here (a wire another process runs on the host may share the name, so
    // compare with what was there before), and the child's address is not ours.
    let after = host_links();
    assert_eq!(
        after.difference(&before).collect::<Vec<_>>(),
        Vec::<&String>::new()
    );
    if !before.contains(fields[0]) {
        assert_eq!(links_named(fields[0]), Vec::<String>::new());
        assert_eq!(addrs_with(fields[1]), Vec::<String>::new());
    }
    let connect: f64 = fields[2].parse().unwrap();
    eprintln!("private namespace: {line}");
    assert_near("connect p50 in the private namespace", connect, 20.0, 15.0);
    assert_eq!(child.finish(), 0);
}

/// An ordinary user who may not open /dev/net/tun (mode 0600 here) gets the plain
/// "needs root" error from the wire, even inside a private namespace. Debian's
/// /dev/net/tun is 0666, so the child closes it for itself alone: in a mount
/// namespace of its own, a fresh tmpfs on /dev/net holds a 0600 tun node.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn private_namespace_without_tun_access_says_what_it_needs() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let mut child = fork_child(|out| {
        // SAFETY: plain syscalls on constant C strings in the single-threaded child.
        let closed = unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) == 0
                && libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev/net".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                ) == 0
                && libc::mknod(
                    c"/dev/net/tun".as_ptr(),
                    libc::S_IFCHR | 0o600,
                    libc::makedev(10, 200),
                ) == 0
        };
        if !closed {
            let _ = writeln!(
                out,
                "closing /dev/net/tun: {}",
                std::io::Error::last_os_error()
            );
            return 7;
        }
        // SAFETY: dropping to nobody in the forked child.
        if unsafe { libc::setgid(65534) } != 0 || unsafe { libc::setuid(65534) } != 0 {
            return 5;
        }
        // A process that changed its uid is not dumpable, which leaves its /proc files
        // to root; a real user's process is dumpable.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
        // Entering may itself be refused (user namespaces disabled): also fine, as
        // long as what follows says plainly what is missing.
        let entered = latscope::lab::wire::enter_private_namespace();
        match Wire::start(rtt(20)) {
            Ok(_) => 6,
            Err(e) => {
                let _ = writeln!(out, "entered: {entered:?}; {e}");
                0
            }
        }
    });
    let line = child.line();
    eprintln!("nobody: {line}");
    assert!(line.contains("needs root (CAP_NET_ADMIN)"), "{line}");
    assert_eq!(child.finish(), 0);
}

/// A forked copy of this test process running one closure (single-threaded, as a
/// fresh process is), reporting through a pipe; killed if it outlives the test.
struct Forked {
    pid: libc::pid_t,
    lines: std::sync::mpsc::Receiver<String>,
    go: Option<std::fs::File>,
}

fn fork_child(body: fn(&mut std::fs::File) -> i32) -> Forked {
    use std::os::fd::FromRawFd;
    let mut out = [0; 2];
    let mut go = [0; 2];
    // SAFETY: pipe(2) into valid arrays.
    assert_eq!(unsafe { libc::pipe2(out.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    assert_eq!(unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: the child only runs `body` (allocation is fork-safe in glibc) and exits
    // with _exit, never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: the pipe ends belong to this child now.
        unsafe {
            libc::close(out[0]);
            libc::close(go[1]);
        }
        let mut file = unsafe { std::fs::File::from_raw_fd(out[1]) };
        let code = body(&mut file);
        let _ = file.flush();
        drop(file);
        // Wait until the parent has looked (it closes `go`), then leave.
        let mut b = [0u8; 1];
        unsafe {
            libc::read(go[0], b.as_mut_ptr().cast(), 1);
            libc::_exit(code);
        }
    }
    // SAFETY: the parent's ends.
    unsafe {
        libc::close(out[1]);
        libc::close(go[0]);
    }
    let reader = unsafe { std::fs::File::from_raw_fd(out[0]) };
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut line = String::new();
        let _ = std::io::BufReader::new(reader).read_line(&mut line);
        let _ = tx.send(line.trim().to_string());
    });
    Forked {
        pid,
        lines,
        go: Some(unsafe { std::fs::File::from_raw_fd(go[1]) }),
    }
}

impl Forked {
    /// The child's report (its first line), within 30 s.
    fn line(&mut self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the child reports within 30 s")
    }

    /// Lets the child exit and returns its exit code (within 10 s).
    fn finish(&mut self) -> i32 {
        self.go = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if rc == self.pid {
                self.pid = 0;
                return if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    -1
                };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the child did not exit within 10 s");
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        if self.pid > 0 {
            // SAFETY: kill and reap our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}
