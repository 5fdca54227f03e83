//! Helpers for the tests against real servers (issue 12): a temporary directory, a
//! Python server written by the test and started on a free 127.0.0.1 port (it
//! prints the port as its first stdout line), nginx with its own config in a temp
//! dir, and a check that a program is installed (the test skips, saying why, when
//! it is not).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
            std::env::temp_dir().join(format!("latscope-real-{}-{name}-{n}", std::process::id()));
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

/// A free port on 127.0.0.1 (bound and released: nginx needs a number in its config).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts nginx in the foreground with `http_block` (the inside of `http { }`) as
/// its config in `dir`, and waits until `port` accepts connections (10 s).
pub fn start_nginx(dir: &TempDir, http_block: &str, port: u16) -> ChildGuard {
    let root = dir.0.to_string_lossy();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {root}/nginx.pid;\n\
         error_log {root}/error.log warn;\nevents {{ worker_connections 1024; }}\n\
         http {{\naccess_log off;\nclient_body_temp_path {root}/body;\n\
         proxy_temp_path {root}/proxy;\nfastcgi_temp_path {root}/fastcgi;\n\
         uwsgi_temp_path {root}/uwsgi;\nscgi_temp_path {root}/scgi;\n{http_block}\n}}\n"
    );
    let path = dir.write("nginx.conf", &conf);
    let child = Command::new("nginx")
        .args(["-p", &root, "-c", &path, "-e", &format!("{root}/error.log")])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nginx starts");
    let guard = ChildGuard(child);
    wait_for_port(port, &dir.0);
    guard
}

/// Polls until 127.0.0.1:`port` accepts a connection (10 s), else panics with the
/// error log in `dir`.
pub fn wait_for_port(port: u16, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    panic!("nothing listens on 127.0.0.1:{port} after 10 s; error log:\n{log}");
}
