//! The lab's HTTP/3 (`lab --tls --http3`): the same routes over QUIC on the TCP
//! port's UDP twin, `Alt-Svc` on TCP responses (RFC 7838, section 3; the h3 token:
//! RFC 9114, section 3.1.1), resumption with 0-RTT, `/close` and `/reset`, and the
//! flag's checks. Tested with a minimal quinn + h3 client (`util_h3`).

use std::time::Duration;

use http::{Method, StatusCode, Version};
use latscope::lab::{self, LabOptions, LabTls, RunningLab};

use crate::util::run_within;
use crate::util_h3::{client, connect};
use crate::util_lab::{connect as connect_tcp, trusting, Proto};

fn h3_lab(resumption: bool) -> RunningLab {
    let tls = LabTls::self_signed(&[]).unwrap();
    lab::spawn(LabOptions {
        tls: Some(if resumption {
            tls
        } else {
            tls.without_resumption()
        }),
        http2: true,
        http3: true,
        cold: Duration::from_millis(300),
        ..LabOptions::default()
    })
    .expect("lab starts")
}

/// The lab answers its routes over HTTP/3 exactly as over TCP: the index, a delay
/// that really waits, a chosen status, streamed bytes of the asked length, cache
/// validators and a 304 (RFC 9110, section 13.1.2), HEAD without a body; and counts
/// one QUIC connection for all of them.
#[tokio::test]
async fn h3_serves_the_routes() {
    let lab = h3_lab(true);
    let endpoint = client(lab.cert_pem().unwrap());
    let mut c = connect(&endpoint, lab.addr(), "localhost", false)
        .await
        .unwrap();
    let index = c.get("/").await.unwrap();
    assert_eq!(index.status, 200);
    assert_eq!(index.version, Version::HTTP_3);
    assert!(index.text().contains("/delay/{dur}"), "{}", index.text());

    let delayed = c.get("/delay/50ms").await.unwrap();
    assert_eq!(delayed.status, 200);
    assert!(delayed.elapsed >= Duration::from_millis(50), "{delayed:?}");

    assert_eq!(c.get("/status/418").await.unwrap().status, 418);
    assert_eq!(c.get("/nope").await.unwrap().status, 404);
    assert_eq!(c.get("/delay/xyz").await.unwrap().status, 400);

    let bytes = c.get("/bytes/300000").await.unwrap();
    assert_eq!(bytes.body.len(), 300_000);
    assert_eq!(bytes.header("content-length"), "300000");

    let cached = c.get("/cache/public").await.unwrap();
    let etag = cached.header("etag").to_string();
    assert!(!etag.is_empty(), "{:?}", cached.headers);
    assert!(cached.header("cache-control").contains("max-age"));

    let head = c.request(Method::HEAD, "/bytes/1k").await.unwrap();
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    let stats = lab.stats();
    assert_eq!(stats.quic_connections, 1);
    assert_eq!(stats.connections, 0, "no TCP connection was made");
    assert_eq!(stats.total, 8);
    assert_eq!(stats.route("delay"), 2);
    // HTTP/3 responses do not advertise themselves.
    assert_eq!(index.header("alt-svc"), "");
}

/// With `http3`, TCP responses (HTTP/1.1 and HTTP/2) carry `Alt-Svc: h3=":PORT";
/// ma=86400` naming the lab's own port; without it, no Alt-Svc.
#[tokio::test]
async fn alt_svc_only_with_http3() {
    let lab = h3_lab(true);
    let want = format!("h3=\":{}\"; ma=86400", lab.addr().port());
    for (proto, alpn) in [(Proto::H1, &b"http/1.1"[..]), (Proto::H2, &b"h2"[..])] {
        let config = trusting(lab.cert_pem().unwrap(), &[alpn]);
        let mut c = connect_tcp(lab.addr(), proto, Some((config, "localhost")))
            .await
            .unwrap();
        let r = c.get("/status/200", &[]).await.unwrap();
        assert_eq!(r.header("alt-svc"), want, "{proto:?}");
    }

    let plain_tls = lab::spawn(LabOptions {
        tls: Some(LabTls::self_signed(&[]).unwrap()),
        http2: true,
        ..LabOptions::default()
    })
    .unwrap();
    let config = trusting(plain_tls.cert_pem().unwrap(), &[b"h2"]);
    let mut c = connect_tcp(plain_tls.addr(), Proto::H2, Some((config, "localhost")))
        .await
        .unwrap();
    let r = c.get("/status/200", &[]).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.headers.get("alt-svc").is_none(), "{:?}", r.headers);
}

/// A second connection from the same client resumes its session and its request
/// goes as 0-RTT data, which the lab accepts (RFC 9001, section 4.6); the lab counts
/// the resumption. With `--no-tls-resumption` nothing resumes.
#[tokio::test]
async fn h3_resumes_with_0rtt() {
    let lab = h3_lab(true);
    let endpoint = client(lab.cert_pem().unwrap());
    let mut first = connect(&endpoint, lab.addr(), "localhost", true)
        .await
        .unwrap();
    assert_eq!(first.get("/").await.unwrap().status, 200);
    assert!(!first.zero_rtt_accepted().await);
    let mut second = connect(&endpoint, lab.addr(), "localhost", true)
        .await
        .unwrap();
    assert!(
        second.zero_rtt.is_some(),
        "the client had a session to resume"
    );
    assert_eq!(second.get("/delay/1ms").await.unwrap().status, 200);
    assert!(second.zero_rtt_accepted().await, "0-RTT accepted");
    let stats = lab.stats();
    assert_eq!(stats.quic_connections, 2);
    assert_eq!(stats.quic_resumed, 1);

    let strict = h3_lab(false);
    let endpoint = client(strict.cert_pem().unwrap());
    for _ in 0..2 {
        let mut c = connect(&endpoint, strict.addr(), "localhost", true)
            .await
            .unwrap();
        assert_eq!(c.get("/").await.unwrap().status, 200);
        assert!(!c.zero_rtt_accepted().await);
    }
    assert_eq!(strict.stats().quic_resumed, 0);
}

/// `/reset` over HTTP/3 closes the QUIC connection with H3_INTERNAL_ERROR (the
/// request gets no response); `/close` answers, then the connection goes away
/// (GOAWAY) and a new one works.
#[tokio::test]
async fn h3_reset_and_close() {
    let lab = h3_lab(true);
    let endpoint = client(lab.cert_pem().unwrap());
    let mut c = connect(&endpoint, lab.addr(), "localhost", false)
        .await
        .unwrap();
    let err = c.get("/reset").await.unwrap_err();
    assert!(!err.contains("timed out"), "{err}");
    let closed = tokio::time::timeout(Duration::from_secs(5), c.quic.closed())
        .await
        .expect("the connection closes");
    assert!(
        matches!(closed, quinn::ConnectionError::ApplicationClosed(ref a) if a.error_code == 0x102u32.into()),
        "{closed:?}"
    );

    let mut c = connect(&endpoint, lab.addr(), "localhost", false)
        .await
        .unwrap();
    let r = c.get("/close").await.unwrap();
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("connection"), "", "no connection header in HTTP/3");
    tokio::time::timeout(Duration::from_secs(5), c.quic.closed())
        .await
        .expect("the connection closes after /close");
    let mut again = connect(&endpoint, lab.addr(), "localhost", false)
        .await
        .unwrap();
    assert_eq!(again.get("/").await.unwrap().status, 200);
}

/// The `latscope lab` binary: `--http3` without `--tls` is a usage error that says
/// so; with `--tls` it says it serves HTTP/3 and answers over QUIC on its port.
#[tokio::test]
async fn lab_binary_http3() {
    let out = run_within(
        &["lab", "--http3", "--listen", "127.0.0.1:0"],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--http3 needs --tls"), "{err}");

    let dir = crate::util::scratch();
    let cert = dir.join("lab-h3-binary.pem");
    let mut child = crate::util::latscope()
        .args(["lab", "--tls", "--http3", "--listen", "127.0.0.1:0"])
        .arg("--cert-out")
        .arg(&cert)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = crate::util::first_line(child.stdout.take().unwrap(), "lab URL");
    let addr: std::net::SocketAddr = url
        .trim()
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let pem = std::fs::read_to_string(&cert).unwrap();
    let endpoint = client(&pem);
    let result = async {
        let mut c = connect(&endpoint, addr, "127.0.0.1", false).await?;
        c.get("/status/201").await
    }
    .await;
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    let r = result.unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.version, Version::HTTP_3);
    assert_eq!(status.code(), Some(0));
}
