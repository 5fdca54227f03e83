//! The lab server itself: the `latscope lab` binary, its protocols (HTTP/1.1, h2c, TLS
//! with ALPN and resumption) and the in-process API (`lab::serve`, `spawn`,
//! `spawn_on`), over real loopback sockets. Routes: `lab_routes.rs`; server-wide
//! options: `lab_options.rs`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use latscope::lab::{self, LabOptions, LabTls};

use crate::util::latscope;
use crate::util_lab::{connect, get, healthy, trusting, Proto};

// ---------------------------------------------------------------------------
// helpers

/// A `latscope lab` child process and the base URL it printed first.
struct LabProcess {
    child: Child,
    url: String,
}

impl LabProcess {
    /// Starts `latscope lab ARGS` and reads the URL from its first stdout line.
    fn start(args: &[&str]) -> LabProcess {
        let mut child = latscope()
            .arg("lab")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("latscope starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("latscope lab printed no URL within 20 s");
            }
        };
        LabProcess {
            child,
            url: line.trim().to_string(),
        }
    }

    /// The socket address in the URL.
    fn addr(&self) -> SocketAddr {
        let rest = self.url.split("://").nth(1).unwrap();
        rest.trim_end_matches('/').parse().unwrap()
    }

    /// Sends SIGTERM and returns the exit code (within 10 s).
    fn stop(mut self) -> Option<i32> {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("latscope lab did not stop within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ---------------------------------------------------------------------------
// the binary

/// `latscope lab --listen 127.0.0.1:0` prints its URL as the first stdout line, serves
/// on the port it picked, and exits 0 on SIGTERM.
#[tokio::test]
async fn binary_prints_url_first_and_serves_on_port_0() {
    let lab = LabProcess::start(&["--listen", "127.0.0.1:0"]);
    assert!(lab.url.starts_with("http://127.0.0.1:"), "{}", lab.url);
    assert!(lab.url.ends_with('/'), "{}", lab.url);
    assert_ne!(lab.addr().port(), 0);
    let r = get(lab.addr(), "/").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("/delay/{dur}"));
    assert_eq!(lab.stop(), Some(0));
}

/// A port already taken is a clear run failure (exit 1).
#[test]
fn binary_bind_failure_exits_1() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = latscope()
        .args(["lab", "--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot listen on"), "{err}");
    assert!(out.stdout.is_empty());
}

/// Nonsense options are usage errors (exit 2) naming the flag; wire flags say the
/// wire is missing instead of being ignored.
#[test]
fn binary_rejects_bad_options() {
    for (args, code, needle) in [
        (vec!["--workers", "0"], 2, "--workers"),
        (vec!["--capacity", "0"], 2, "--capacity"),
        (
            vec!["--stall-every", "1s", "--stall-for", "2s"],
            2,
            "--stall-for",
        ),
        (vec!["--listen", "nonsense"], 2, "--listen"),
    ] {
        let out = latscope()
            .arg("lab")
            .args(["--listen", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `--tls --cert-out PATH --http2`: an https URL, a PEM file that a client trusting it
/// (through latscope's own --cacert path) verifies against, and h2 chosen by ALPN.
#[tokio::test]
async fn binary_tls_cert_out_is_trusted_by_a_client() {
    let dir = crate::util::scratch().join(format!("latscope-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("lab.pem");
    let lab = LabProcess::start(&[
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "--http2",
        "--cert-out",
        pem.to_str().unwrap(),
    ]);
    assert!(lab.url.starts_with("https://127.0.0.1:"), "{}", lab.url);
    let config = latscope::net::tls::client_config(&latscope::net::tls::TlsOptions {
        insecure: false,
        cacert: Some(pem.clone()),
        alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    })
    .unwrap();
    for host in ["localhost", "127.0.0.1"] {
        let mut c = connect(lab.addr(), Proto::H2, Some((config.clone(), host)))
            .await
            .unwrap();
        assert_eq!(c.alpn.as_deref(), Some(&b"h2"[..]));
        let r = c.get("/status/200", &[]).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.version, http::Version::HTTP_2);
    }
    // A client that does not trust the certificate refuses it.
    let untrusting = latscope::net::tls::client_config(&Default::default()).unwrap();
    let refused = connect(lab.addr(), Proto::H1, Some((untrusting, "localhost"))).await;
    assert!(refused.is_err());
    assert_eq!(lab.stop(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------
// protocols

/// With TLS the lab offers session resumption: a second connection with the same
/// client config resumes, and the lab counts it.
#[tokio::test]
async fn tls_sessions_resume() {
    let lab = lab::spawn(LabOptions {
        tls: Some(LabTls::self_signed(&[]).unwrap()),
        ..LabOptions::default()
    })
    .unwrap();
    assert!(lab.base_url().starts_with("https://"));
    let config = trusting(lab.cert_pem().unwrap(), &[b"http/1.1"]);
    let mut first = connect(lab.addr(), Proto::H1, Some((config.clone(), "localhost")))
        .await
        .unwrap();
    assert!(!first.resumed);
    // Reading a response makes sure the TLS 1.3 tickets have arrived.
    assert_eq!(first.get("/", &[]).await.unwrap().status, 200);
    let mut second = connect(lab.addr(), Proto::H1, Some((config, "localhost")))
        .await
        .unwrap();
    assert_eq!(second.get("/", &[]).await.unwrap().status, 200);
    assert!(second.resumed, "the second handshake should resume");
    let stats = lab.stats();
    assert_eq!(stats.tls_handshakes, 2);
    assert_eq!(stats.tls_resumed, 1);
}

/// Without --http2, ALPN offers only http/1.1 over TLS.
#[tokio::test]
async fn tls_without_http2_negotiates_http11() {
    let lab = lab::spawn(LabOptions {
        tls: Some(LabTls::self_signed(&[]).unwrap()),
        ..LabOptions::default()
    })
    .unwrap();
    let config = trusting(lab.cert_pem().unwrap(), &[b"h2", b"http/1.1"]);
    let mut c = connect(lab.addr(), Proto::H1, Some((config, "127.0.0.1")))
        .await
        .unwrap();
    assert_eq!(c.alpn.as_deref(), Some(&b"http/1.1"[..]));
    let r = c.get("/status/200", &[]).await.unwrap();
    assert_eq!(r.version, http::Version::HTTP_11);
}

/// With --http2 and no TLS the lab speaks h2c with prior knowledge, and still
/// HTTP/1.1 on the same port; without --http2 an h2c client gets nowhere.
#[tokio::test]
async fn h2c_prior_knowledge_only_with_http2() {
    let lab = lab::spawn(LabOptions {
        http2: true,
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H2, None).await.unwrap();
    for _ in 0..3 {
        let r = c.get("/delay/1ms", &[]).await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.version, http::Version::HTTP_2);
    }
    assert_eq!(get(lab.addr(), "/").await.version, http::Version::HTTP_11);
    // Three h2 requests over one connection, plus one h1 connection.
    assert_eq!(lab.stats().connections, 2);

    let h1_only = healthy();
    let attempt = async {
        let mut c = connect(h1_only.addr(), Proto::H2, None).await?;
        c.get("/", &[]).await
    };
    assert!(attempt.await.is_err());
}

/// Requests on a kept-alive HTTP/1.1 connection reuse it (one connection counted).
#[tokio::test]
async fn http11_keeps_connections_alive() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    for _ in 0..5 {
        assert_eq!(c.get("/status/204", &[]).await.unwrap().status, 204);
    }
    assert_eq!(lab.stats().connections, 1);
    assert_eq!(lab.stats().route("status"), 5);
}

// ---------------------------------------------------------------------------
// the in-process API

/// `lab::serve(listener, options, shutdown)` serves until the shutdown future
/// completes, then returns and the port stops accepting.
#[tokio::test]
async fn serve_returns_on_shutdown() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(lab::serve(listener, LabOptions::default(), async {
        let _ = rx.await;
    }));
    assert_eq!(get(addr, "/status/200").await.status, 200);
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// `spawn_on` serves on a listener the caller bound (as the wire will).
#[tokio::test]
async fn spawn_on_uses_the_given_listener() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let lab = lab::spawn_on(listener, LabOptions::default()).unwrap();
    assert_eq!(lab.addr(), addr);
    assert_eq!(lab.base_url(), format!("http://{addr}/"));
    assert_eq!(lab.url("/delay/1ms"), format!("http://{addr}/delay/1ms"));
    assert_eq!(get(addr, "/delay/1ms").await.status, 200);
    lab.shutdown().unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
