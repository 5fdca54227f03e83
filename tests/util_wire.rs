//! Helpers for the wire tests: the lock that runs them one at a time, a timed HTTP/1.1 client on std sockets (connect, TTFB, TCP_INFO), a guard
//! that kills a child process, and probes of what the wire leaves on the system.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use latscope::net::tcp::{tcp_info, TcpInfo};

/// Every socket operation in a wire test gives up after this long.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The wire lock: every wire test holds it alone (wires add noise to each other's
/// timings on 2 cores); timing tests that must not run beside a wire but may beside
/// each other share it. An `flock` on one file per machine, so it holds across
/// processes: scripts/test.sh runs the heavy tests (`#[ignore = "heavy…"]`) one at a
/// time in a process of their own beside the rest of the suite (and two suites on
/// one machine would collide on the wire's device names anyway). A writer waiting
/// holds a turnstile that new readers pass through, so a stream of shared holders
/// cannot starve it. Released when the guard drops (a failed test does not keep it).
pub struct WireLock {
    _file: std::fs::File,
}

/// The lock file, or its turnstile.
fn lock_file(suffix: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("latscope-tests-wire{suffix}.lock"));
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        // Made by another user: flock needs no write access.
        .or_else(|_| std::fs::File::open(&path))
        .unwrap_or_else(|e| panic!("wire lock {}: {e}", path.display()))
}

/// `file` locked `how` (LOCK_EX or LOCK_SH), waiting as long as it takes.
fn flock(file: std::fs::File, how: libc::c_int) -> WireLock {
    loop {
        // SAFETY: the descriptor stays open for the call; flock only reads it.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), how) };
        if rc == 0 {
            return WireLock { _file: file };
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "flock: {e}");
    }
}

/// Takes the wire lock alone.
pub fn lock() -> WireLock {
    let _turn = flock(lock_file(".turn"), libc::LOCK_EX);
    flock(lock_file(""), libc::LOCK_EX)
}

/// Shares the wire lock with the other holders of a shared one: for a test that
/// must not run beside a wire or another heavy test, but whose load is light enough
/// to run beside its like (the capacity searches: a few hundred requests a second).
pub fn lock_shared() -> WireLock {
    drop(flock(lock_file(".turn"), libc::LOCK_EX));
    flock(lock_file(""), libc::LOCK_SH)
}

/// One timed request.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// TCP connect (zero on a reused connection).
    pub connect: Duration,
    /// From the start (connect, or sending on a reused connection) to the response's
    /// first byte.
    pub ttfb: Duration,
    /// From the start to the end of the body.
    pub total: Duration,
    /// The response status.
    pub status: u16,
    /// The body's length.
    pub body: usize,
}

/// Opens a connection to `addr` (TCP_NODELAY, timeouts set), returning it and the
/// connect time.
pub fn connect(addr: SocketAddr) -> (TcpStream, Duration) {
    let start = Instant::now();
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connects");
    let took = start.elapsed();
    stream.set_nodelay(true).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    (stream, took)
}

/// GET `path` on a fresh connection; returns the sample and the (still open)
/// connection.
pub fn fresh_get(addr: SocketAddr, path: &str) -> (Sample, BufReader<TcpStream>) {
    let start = Instant::now();
    let (stream, connect) = connect(addr);
    let mut reader = BufReader::new(stream);
    let mut s = send_get(&mut reader, addr, path, &[], start);
    s.connect = connect;
    (s, reader)
}

/// GET `path` on an open connection, with extra header lines.
pub fn reused_get(
    conn: &mut BufReader<TcpStream>,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Sample {
    send_get(conn, addr, path, headers, Instant::now())
}

fn send_get(
    conn: &mut BufReader<TcpStream>,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    start: Instant,
) -> Sample {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    conn.get_mut()
        .write_all(req.as_bytes())
        .expect("request sent");
    // The first byte of the response.
    let first = conn.fill_buf().expect("response arrives");
    assert!(!first.is_empty(), "connection closed before a response");
    let ttfb = start.elapsed();
    let mut status = 0;
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        conn.read_line(&mut line).expect("header line");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status == 0 {
            status = l
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().expect("content-length");
            }
        }
    }
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).expect("body");
    Sample {
        connect: Duration::ZERO,
        ttfb,
        total: start.elapsed(),
        status,
        body: length,
    }
}

/// TCP_INFO of a client connection.
pub fn info(conn: &BufReader<TcpStream>) -> TcpInfo {
    tcp_info(conn.get_ref()).expect("TCP_INFO")
}

/// The median of some durations, in milliseconds.
pub fn p50_ms(mut v: Vec<Duration>) -> f64 {
    assert!(!v.is_empty());
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// The smallest duration, in ms: for tests that count round trips. A busy machine
/// only adds to a sample (a test thread or the lab waiting for a CPU), while a
/// round trip missing or added moves every one.
pub fn min_ms(v: &[Duration]) -> f64 {
    v.iter().min().expect("samples").as_secs_f64() * 1e3
}

/// Asserts `value` is within `tol` of `want` (all in ms).
pub fn assert_near(what: &str, value: f64, want: f64, tol: f64) {
    assert!(
        (value - want).abs() <= tol,
        "{what}: {value:.1} ms, expected {want} ± {tol} ms"
    );
}

/// Microseconds to milliseconds.
pub fn us_ms(us: u32) -> f64 {
    us as f64 / 1e3
}

/// A child process that is killed (and reaped) when dropped, so a failing test
/// never leaves a lab running.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// Waits up to `limit` for the child to exit; its exit code, or None on timeout.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Sends `signal` to the child.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as i32, signal) };
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `latscope lab ARGS` and reads the first stdout line (the URL), giving up
/// after 20 s. Returns the guard and the URL.
pub fn start_lab(args: &[&str]) -> (ChildGuard, String) {
    let mut child = crate::util::latscope()
        .arg("lab")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("latscope lab starts");
    let stdout = child.stdout.take().unwrap();
    let guard = ChildGuard(child);
    let url = crate::util::first_line(stdout, "latscope lab prints its URL");
    (guard, url)
}

/// The host and port of a `http://198.18.N.2:PORT/` URL.
pub fn url_addr(url: &str) -> SocketAddr {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .expect("URL has a scheme");
    rest.trim_end_matches('/').parse().expect("URL is IP:port")
}

/// Output of `ip -o ARGS`.
fn ip(args: &[&str]) -> String {
    let out = Command::new("ip")
        .arg("-o")
        .args(args)
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `ip` (iproute2) is installed, to look at links and addresses.
pub fn have_ip() -> bool {
    Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Lines of `ip -o link` naming device `dev`.
pub fn links_named(dev: &str) -> Vec<String> {
    ip(&["link"])
        .lines()
        .filter(|l| l.split(':').nth(1).map(str::trim) == Some(dev))
        .map(String::from)
        .collect()
}

/// Lines of `ip -o addr` with address `addr`.
pub fn addrs_with(addr: &str) -> Vec<String> {
    let needle = format!("inet {addr} ");
    ip(&["addr"])
        .lines()
        .filter(|l| l.contains(&needle))
        .map(String::from)
        .collect()
}

/// Processes or threads whose network namespace, or one of whose open files, is the
/// namespace with inode `inode`.
pub fn namespace_holders(inode: u64) -> Vec<String> {
    let target = format!("net:[{inode}]");
    let mut holders = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return holders;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let base = p.path();
        if let Ok(tasks) = std::fs::read_dir(base.join("task")) {
            for t in tasks.flatten() {
                if std::fs::read_link(t.path().join("ns/net"))
                    .is_ok_and(|l| l.to_string_lossy() == target)
                {
                    holders.push(format!("thread {pid}/{}", t.file_name().to_string_lossy()));
                }
            }
        }
        if let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            for f in fds.flatten() {
                if std::fs::read_link(f.path()).is_ok_and(|l| l.to_string_lossy() == target) {
                    holders.push(format!("fd {pid}/{}", f.file_name().to_string_lossy()));
                }
            }
        }
    }
    holders
}
