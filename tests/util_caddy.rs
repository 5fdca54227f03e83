//! Real Caddy for the HTTP/3 tests (Debian's package; scripts/test.sh installs it):
//! a Caddyfile of the test's own in a temp dir (`tls internal`, its CA under the temp
//! dir, `admin off`, nothing installed into the system trust store), bound to
//! 127.0.0.1 on a free port, which it serves over TCP (h1, h2) and UDP (h3, with an
//! `Alt-Svc: h3=":PORT"` header), and killed when the guard drops. Never the
//! system service.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::free_port;
use crate::util_require::{require, which};
use crate::util_wire::ChildGuard;

/// The caddy binary, or None when it is not installed (see [`require`]).
pub fn caddy_bin() -> Option<PathBuf> {
    require("caddy").then(|| which("caddy").unwrap())
}

/// A running Caddy.
pub struct Caddy {
    pub guard: ChildGuard,
    pub dir: PathBuf,
    pub port: u16,
    /// Caddy's internal root CA, for `--cacert`.
    pub ca: PathBuf,
}

impl Caddy {
    /// `https://localhost:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// `--cacert` and its path, as arguments.
    pub fn cacert(&self) -> [String; 2] {
        ["--cacert".into(), self.ca.display().to_string()]
    }
}

/// Starts Caddy serving `site` (directives inside the site block, e.g.
/// `respond "hello" 200`) on `https://localhost:PORT` and `https://127.0.0.1:PORT`,
/// and waits (≤ 20 s) until it answers over TLS with its internal CA. A free TCP port
/// may be taken between its pick and Caddy's bind, and its UDP twin (h3) may be in
/// use already: then Caddy exits saying so, and it starts again on other ports.
pub fn start(bin: &Path, name: &str, site: &str) -> Caddy {
    let mut attempt = 1;
    loop {
        match try_start(bin, name, site) {
            Ok(caddy) => return caddy,
            Err(log) if attempt < 3 && log.contains("address already in use") => attempt += 1,
            Err(log) => panic!("caddy exited: {log}"),
        }
    }
}

/// One start on fresh ports; Err(Caddy's log) when it exits before serving.
fn try_start(bin: &Path, name: &str, site: &str) -> Result<Caddy, String> {
    let dir = crate::util::scratch().join(format!("latscope-caddy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (port, http_port) = (free_port(), free_port());
    let caddyfile = format!(
        "{{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\thttp_port {http_port}\n\t\
         https_port {port}\n\tauto_https disable_redirects\n\tstorage file_system {}\n}}\n\
         https://localhost:{port}, https://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\t\
         tls internal\n\t{site}\n}}\n",
        dir.join("data").display()
    );
    std::fs::write(dir.join("Caddyfile"), caddyfile).unwrap();
    let log = std::fs::File::create(dir.join("caddy.log")).unwrap();
    let child = Command::new(bin)
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", &dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("caddy starts");
    let guard = ChildGuard(child);
    let ca = dir.join("data/pki/authorities/local/root.crt");
    let mut caddy = Caddy {
        guard,
        dir,
        port,
        ca,
    };
    wait_until_serving(&mut caddy, Duration::from_secs(20))?;
    Ok(caddy)
}

/// Polls with curl (its own TLS stack) until Caddy answers over TLS with a
/// certificate of its internal CA: Err(its log) when it exits first, a panic (with
/// the log) after `limit`.
fn wait_until_serving(c: &mut Caddy, limit: Duration) -> Result<(), String> {
    let log = |c: &Caddy| std::fs::read_to_string(c.dir.join("caddy.log")).unwrap_or_default();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if c.ca.exists() {
            let out = Command::new("curl")
                .args([
                    "-s",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "--max-time",
                    "2",
                ])
                .arg("--cacert")
                .arg(&c.ca)
                .arg(c.url("/"))
                .output();
            if out.is_ok_and(|o| !o.stdout.is_empty() && o.stdout != b"000") {
                return Ok(());
            }
        }
        if c.guard.0.try_wait().expect("try_wait").is_some() {
            return Err(log(c));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "caddy does not answer on {} after {limit:?}; log: {}",
        c.url("/"),
        log(c)
    );
}
