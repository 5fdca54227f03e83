//! Helpers for the `--watch` tests: named network namespaces joined to the host (or
//! to each other) by veth pairs on 198.19.N.0/24 (from the 198.18.0.0/15 benchmarking
//! range the lab's wire uses too; the wire takes 198.18.*), node_exporter started in
//! the host's or a namespace's network stack, and a poll for an HTTP endpoint.
//! Everything is removed on drop. Needs root (CI runs as root).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::util_require::{require, require_root, require_that};
use crate::util_wire::ChildGuard;

/// Runs a command, panicking with its stderr when it fails.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A /24 in 198.19.0.0/16 no interface on this host uses yet.
fn free_subnet() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let net = 10 + (std::process::id() * 7 + n * 13) % 240;
        let out = Command::new("ip")
            .args(["-o", "addr", "show", "to", &format!("198.19.{net}.0/24")])
            .output()
            .expect("ip runs");
        if out.stdout.is_empty() {
            return net;
        }
        assert!(n < 240, "no free 198.19.N.0/24 left");
    }
}

/// A named network namespace with loopback up, deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// A fresh namespace named after `tag` and this process.
    pub fn new(tag: &str) -> Netns {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "lsw-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        sh(&["ip", "netns", "add", &name]);
        let ns = Netns { name };
        ns.run(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    /// Runs a command inside the namespace, panicking when it fails.
    pub fn run(&self, args: &[&str]) {
        let mut all = vec!["ip", "netns", "exec", &self.name];
        all.extend_from_slice(args);
        sh(&all);
    }

    /// A command that runs `program` inside the namespace (`ip netns exec` execs it:
    /// the child's pid is the program's).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// A veth pair between two stacks (None: the host's); returns (address on `a`'s
/// side, address on `b`'s side, the device name on `a`'s side, on `b`'s side).
pub fn link(a: Option<&Netns>, b: &Netns) -> (String, String, String, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let net = free_subnet();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let id = format!("{}{n}", std::process::id() % 100_000);
    let (da, db) = (format!("lswa{id}"), format!("lswb{id}"));
    sh(&[
        "ip", "link", "add", &da, "type", "veth", "peer", "name", &db, "netns", &b.name,
    ]);
    if let Some(a) = a {
        sh(&["ip", "link", "set", &da, "netns", &a.name]);
    }
    let (ipa, ipb) = (format!("198.19.{net}.1"), format!("198.19.{net}.2"));
    let in_a = |args: &[&str]| match a {
        Some(ns) => ns.run(args),
        None => sh(args),
    };
    in_a(&["ip", "addr", "add", &format!("{ipa}/24"), "dev", &da]);
    in_a(&["ip", "link", "set", &da, "up"]);
    b.run(&["ip", "addr", "add", &format!("{ipb}/24"), "dev", &db]);
    b.run(&["ip", "link", "set", &db, "up"]);
    (ipa, ipb, da, db)
}

/// GETs `path` from `addr` once (HTTP/1.0); the status and body, or None.
pub fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// Polls `addr` until `path` answers 200, for at most `limit`.
pub fn wait_http(addr: SocketAddr, path: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some((200, _)) = get(addr, path) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{addr}{path} did not answer 200 within {limit:?}");
}

/// The node_exporter binary (Debian's name).
pub const NODE_EXPORTER: &str = "prometheus-node-exporter";

/// Starts node_exporter on `ip:port` (inside `ns`, or on the host), with only the
/// collectors `--watch` reads (cpu, loadavg, meminfo, netstat, sockstat), and waits
/// until it answers.
pub fn node_exporter(ns: Option<&Netns>, ip: &str, port: u16) -> (ChildGuard, String) {
    let mut c = match ns {
        Some(ns) => ns.command(NODE_EXPORTER),
        None => Command::new(NODE_EXPORTER),
    };
    c.args([
        &format!("--web.listen-address={ip}:{port}"),
        "--collector.disable-defaults",
        "--collector.cpu",
        "--collector.loadavg",
        "--collector.meminfo",
        "--collector.netstat",
        "--collector.sockstat",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let guard = ChildGuard(c.spawn().expect("node_exporter starts"));
    let addr: SocketAddr = format!("{ip}:{port}").parse().unwrap();
    wait_http(addr, "/metrics", Duration::from_secs(20));
    (guard, format!("http://{ip}:{port}/metrics"))
}

/// Runs `script` (bash, `$1` = `dir`, then `args`) in a new network + mount namespace
/// (`unshare --net --mount`, private propagation), within `limit`. The script writes
/// `SETUP-OK` to stderr once its namespace is set up. None (after printing why
/// `test` is skipped) when this host cannot: not root, `unshare`/`python3`/`ip`
/// missing, or the set-up failed; panics when the script fails after it.
pub fn unshared(
    test: &str,
    script: &str,
    dir: &std::path::Path,
    args: &[&str],
    limit: Duration,
) -> Option<()> {
    if !require_root() || !["unshare", "python3", "ip"].iter().all(|t| require(t)) {
        return None;
    }
    let mut child = Command::new("unshare")
        .args(["--net", "--mount", "--propagation", "private", "--"])
        .args(["bash", "-c", script, "script"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("err.log")).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{test}: the namespace's script did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(dir.join("err.log")).unwrap_or_default();
    let why = format!("the namespace could not be set up: {err}");
    if !require_that(err.contains("SETUP-OK"), &why, "root, unshare and mount") {
        return None;
    }
    assert!(status.success(), "{err}");
    Some(())
}
