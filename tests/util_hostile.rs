//! Hostile servers for the integration tests: on 127.0.0.1, one thread per
//! connection, each answering with what its handler says — garbage, a stall (also
//! mid-TLS-handshake: a server that accepts and never speaks), an endless body,
//! oversized headers, any status line, redirects. Stopped when dropped. Also small
//! helpers the hostile cases share (a real V2 histogram, running latscope under a
//! memory limit or with a given stdout).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a hostile server does with one connection, once it has read the request
/// head (or, for [`Reply::Stall`], at once).
pub enum Reply {
    /// Writes these bytes and closes.
    Bytes(Vec<u8>),
    /// Never writes (and reads nothing more): holds the connection until the server
    /// stops. As the answer to a TLS ClientHello this stalls the handshake.
    Stall,
    /// Writes `head`, then body bytes forever (until the peer goes away or the server
    /// stops).
    Endless(Vec<u8>),
}

/// A response with this status line, headers and body, `Connection: close`.
pub fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    r.into_bytes()
}

/// A running hostile server.
pub struct Hostile {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

type Handler = dyn Fn(&str) -> Reply + Send + Sync;

impl Hostile {
    /// Serves every connection with `handler(request head)`; a [`Reply::Stall`] from
    /// `stall_at_once` servers is given without reading anything (`handler("")`).
    pub fn start(handler: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Hostile {
        Self::spawn(Arc::new(handler), false)
    }

    /// Accepts and never answers: the peer's TLS handshake (or request) stalls.
    pub fn stalling() -> Hostile {
        Self::spawn(Arc::new(|_: &str| Reply::Stall), true)
    }

    fn spawn(handler: Arc<Handler>, at_once: bool) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let (s, a) = (stop.clone(), accepted.clone());
        let handle = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let (h, s) = (handler.clone(), s.clone());
                std::thread::spawn(move || serve(conn, &*h, &s, at_once));
            }
        });
        Hostile {
            addr,
            accepted,
            stop,
            handle: Some(handle),
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `https://127.0.0.1:PORT{path}` (for a server that stalls the handshake).
    pub fn https_url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn serve(mut conn: TcpStream, handler: &Handler, stop: &AtomicBool, at_once: bool) {
    let _ = conn.set_nodelay(true);
    let head = if at_once {
        String::new()
    } else {
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 1 << 20 {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    };
    match handler(&head) {
        Reply::Bytes(b) => {
            let _ = conn.write_all(&b);
            let _ = conn.flush();
            // Let the peer read it all before the close.
            let _ = conn.shutdown(std::net::Shutdown::Write);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let mut sink = [0u8; 4096];
            while matches!(conn.read(&mut sink), Ok(n) if n > 0) {}
        }
        Reply::Stall => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Reply::Endless(head) => {
            if conn.write_all(&head).is_err() {
                return;
            }
            let chunk = vec![b'x'; 64 * 1024];
            let _ = conn.set_write_timeout(Some(Duration::from_secs(5)));
            while !stop.load(Ordering::SeqCst) && conn.write_all(&chunk).is_ok() {}
        }
    }
}

/// The path of a request head (`GET /a?b HTTP/1.1` → `/a?b`).
pub fn path_of(head: &str) -> &str {
    head.split_whitespace().nth(1).unwrap_or("/")
}

/// A real latency histogram (ns values) in V2 deflate, as latscope stores them.
pub fn v2_histogram(values_ns: &[u64]) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut h = latscope::stats::new_histogram();
    for v in values_ns {
        h.record(*v).unwrap();
    }
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
    buf
}

/// Runs latscope under `sh -c 'ulimit -v KB; exec latscope …'` so a regression that
/// allocates without bound fails (allocation error) instead of eating the machine;
/// killed after `limit`. Returns its output and how long it took.
pub fn run_capped(args: &[&str], vmem_kb: u64, limit: Duration) -> (Output, Duration) {
    let script = format!("ulimit -v {vmem_kb}; exec \"$0\" \"$@\"");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_latscope"))
        .args(args);
    run_cmd(cmd, limit)
}

pub use crate::util::output_within as run_cmd;

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
