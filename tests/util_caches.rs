//! Real caches for the conformance suite (tests/caches.rs): a Python origin
//! (tests/data/cache_origin.py) that serves each header variant and counts what
//! reached it, and Varnish (default VCL), nginx (proxy_cache, no proxy_cache_valid)
//! and Apache (mod_cache_disk, default directives) in front of it — each with its own
//! config in a temp dir, on a free 127.0.0.1 port, started and killed by the test.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::free_port;

/// How long a server may take to start listening.
const START: Duration = Duration::from_secs(20);

/// A fresh, world-writable temp dir (the caches' workers may drop to nobody).
pub fn temp_dir(name: &str) -> PathBuf {
    let d = crate::util::temp_dir(&format!("caches-{name}"));
    std::fs::create_dir_all(d.join("cache")).unwrap();
    for p in [d.clone(), d.join("cache")] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    d
}

/// Polls until something accepts on the port, or panics after [`START`] with `log`.
pub fn wait_port(port: u16, log: &Path) {
    let deadline = Instant::now() + START;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "nothing listens on {port} after {START:?}: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// A server process, stopped (SIGTERM, then SIGKILL) and its dir removed on drop.
pub struct Server {
    pub port: u16,
    child: Child,
    stdin: Option<ChildStdin>,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let pid = self.child.id() as i32;
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn spawn(mut cmd: Command, dir: PathBuf, port: u16) -> Server {
    let log = dir.join("stderr.log");
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut s = Server {
        port,
        child,
        stdin: None,
        dir,
    };
    s.stdin = s.child.stdin.take();
    wait_port(port, &log);
    s
}

/// The Python origin; its port is read from the file it writes once listening.
pub fn origin() -> Server {
    let dir = temp_dir("origin");
    let portfile = dir.join("port");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cache_origin.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(&portfile)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + START;
    let port = loop {
        if let Some(p) = std::fs::read_to_string(&portfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(Instant::now() < deadline, "the origin did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdin = child.stdin.take();
    Server {
        port,
        child,
        stdin,
        dir,
    }
}

/// Varnish with its built-in VCL in front of `origin`.
pub fn varnish(origin: u16) -> Server {
    let dir = temp_dir("varnish");
    let port = free_port();
    let mut cmd = Command::new("varnishd");
    cmd.arg("-F")
        .args(["-a", &format!("127.0.0.1:{port}")])
        .args(["-b", &format!("127.0.0.1:{origin}")])
        .arg("-n")
        .arg(dir.join("work"))
        .args(["-s", "malloc,32m"]);
    spawn(cmd, dir, port)
}

/// nginx with `proxy_cache` (no `proxy_cache_valid`) and the usual
/// `add_header X-Cache-Status $upstream_cache_status`.
pub fn nginx(origin: u16) -> Server {
    nginx_with(origin, true)
}

/// nginx with `proxy_cache`; `status_header` adds X-Cache-Status (without it, nothing
/// in the response says a cache answered).
pub fn nginx_with(origin: u16, status_header: bool) -> Server {
    let dir = temp_dir("nginx");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n access_log off;\n client_body_temp_path {d}/body;\n proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
         proxy_cache_path {d}/cache keys_zone=c:1m;\n\
         server {{\n  listen 127.0.0.1:{port};\n  location / {{\n   proxy_pass http://127.0.0.1:{origin};\n\
         proxy_cache c;\n   {}\n  }}\n }}\n}}\n",
        if status_header {
            "add_header X-Cache-Status $upstream_cache_status always;"
        } else {
            ""
        }
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(&dir);
    spawn(cmd, dir, port)
}

/// Apache 2.4 as a reverse proxy with mod_cache_disk and mod_cache's default
/// directives; `detail` adds `CacheHeader on` and `CacheDetailHeader on` (X-Cache,
/// X-Cache-Detail).
pub fn apache(origin: u16, detail: bool) -> Server {
    let extra = if detail {
        "CacheHeader on\nCacheDetailHeader on\n"
    } else {
        ""
    };
    apache_with(origin, true, extra)
}

/// Apache as a reverse proxy to `origin`, with mod_cache_disk when `cache`, mod_deflate
/// and mod_filter loaded, and `extra` appended to its config.
pub fn apache_with(origin: u16, cache: bool, extra: &str) -> Server {
    let dir = temp_dir("apache");
    let port = free_port();
    let d = dir.display();
    let m = "/usr/lib/apache2/modules";
    let mut conf = format!(
        "ServerRoot {d}\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\nPidFile {d}/httpd.pid\n\
         ErrorLog {d}/error.log\nLogLevel warn\nUser nobody\nGroup nogroup\n\
         LoadModule mpm_event_module {m}/mod_mpm_event.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule proxy_module {m}/mod_proxy.so\n\
         LoadModule proxy_http_module {m}/mod_proxy_http.so\n\
         LoadModule filter_module {m}/mod_filter.so\n\
         LoadModule deflate_module {m}/mod_deflate.so\n\
         ProxyPass / http://127.0.0.1:{origin}/\n"
    );
    if cache {
        conf.push_str(&format!(
            "LoadModule cache_module {m}/mod_cache.so\n\
             LoadModule cache_disk_module {m}/mod_cache_disk.so\n\
             CacheRoot {d}/cache\nCacheEnable disk /\n"
        ));
    }
    conf.push_str(extra);
    std::fs::write(dir.join("httpd.conf"), conf).unwrap();
    let mut cmd = Command::new("apache2");
    cmd.arg("-X").arg("-f").arg(dir.join("httpd.conf"));
    spawn(cmd, dir, port)
}

/// A response as the tests read it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The whole response as received (head and body).
    pub raw: Vec<u8>,
}

impl Reply {
    /// A header's first value ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }
}

/// One GET on a new connection (`Connection: close`), read to the end (5 s bound).
pub fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        raw,
    }
}

/// (full responses, 304s) the origin sent for `path`, asked directly.
pub fn origin_counts(origin: u16, path: &str) -> (u64, u64) {
    let r = get(origin, &format!("/_count{path}"), &[]);
    let text = String::from_utf8_lossy(&r.raw).to_string();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    let mut it = body.split_whitespace().map(|n| n.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}
