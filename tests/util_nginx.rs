//! Real nginx for the tests (Debian's package; scripts/test.sh installs it): a config
//! of the test's own in a temp dir, TLS certificates made the way people make them
//! (`openssl req -x509 …`), started on a free 127.0.0.1 port — or behind
//! `latscope wire` — and killed when the guard drops. Never the system service.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util_require::{require, which};
use crate::util_wire::ChildGuard;

/// The nginx binary, or None when it is not installed (see [`require`]).
pub fn nginx_bin() -> Option<PathBuf> {
    require("nginx").then(|| which("nginx").unwrap())
}

/// A fresh temp dir for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    crate::util::temp_dir(&format!("nginx-{name}"))
}

/// `openssl req -x509 -newkey rsa:2048 -nodes … -subj /CN=localhost -addext
/// subjectAltName=DNS:localhost,IP:127.0.0.1` (CA:TRUE, as OpenSSL makes it) into
/// `dir/NAME.crt` and `dir/NAME.key`; returns the certificate's path.
pub fn openssl_self_signed(dir: &Path, name: &str) -> PathBuf {
    let (crt, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .args([
            "-days",
            "30",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    crt
}

/// Writes `dir/nginx.conf`: foreground, one worker process, everything under `dir`,
/// and `servers` (server blocks) inside `http {}`.
pub fn write_conf(dir: &Path, servers: &str) -> PathBuf {
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log;\nevents {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  \
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  \
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{servers}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

/// An https server block on `listen` with `crt`/its key, `extra` directives, and a
/// 200 "hello" on every path.
pub fn tls_server(listen: &str, crt: &Path, extra: &str) -> String {
    let key = crt.with_extension("key");
    format!(
        "  server {{\n    listen {listen} ssl;\n    ssl_certificate {};\n    \
         ssl_certificate_key {};\n    {extra}\n    location / {{ return 200 \"hello\\n\"; }}\n  }}\n",
        crt.display(),
        key.display()
    )
}

/// The nginx command line for `dir/nginx.conf`.
pub fn nginx_args(dir: &Path) -> Vec<String> {
    vec![
        "-c".into(),
        dir.join("nginx.conf").display().to_string(),
        "-p".into(),
        dir.display().to_string(),
        "-e".into(),
        dir.join("error.log").display().to_string(),
    ]
}

/// Starts nginx on `dir/nginx.conf` and waits (≤ 10 s) until `addr` accepts.
pub fn start(bin: &Path, dir: &Path, addr: SocketAddr) -> ChildGuard {
    let child = Command::new(bin)
        .args(nginx_args(dir))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nginx starts");
    let guard = ChildGuard(child);
    wait_for_port(addr, Duration::from_secs(10), dir);
    guard
}

/// Polls `addr` until it accepts a connection, failing after `limit` (with nginx's
/// error log in the message).
pub fn wait_for_port(addr: SocketAddr, limit: Duration, dir: &Path) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "nothing listens on {addr} after {limit:?}; error.log: {}",
        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
    );
}

/// Starts `latscope wire ARGS -- COMMAND…` and reads its first stdout line (the
/// address the host reaches the command on), giving up after 20 s.
pub fn start_wire(args: &[&str], command: &[String]) -> (ChildGuard, String) {
    let mut child = crate::util::latscope()
        .arg("wire")
        .args(args)
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("latscope wire starts");
    let stdout = child.stdout.take().unwrap();
    let guard = ChildGuard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        // Keep draining what the command prints, so it never blocks on a full pipe.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("latscope wire prints the address within 20 s");
    (guard, line.trim().to_string())
}

/// Ends a `latscope wire` with SIGTERM (passed on to its command) and waits ≤ 15 s;
/// its exit code.
pub fn stop_wire(wire: &mut ChildGuard) -> Option<i32> {
    wire.signal(libc::SIGTERM);
    wire.wait_for_exit(Duration::from_secs(15))
}
