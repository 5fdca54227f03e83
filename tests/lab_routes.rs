//! Every lab route over real loopback sockets: what it answers, with which headers,
//! and that bad parameters are 400s that never hurt the server.

use std::io::Read;
use std::time::Duration;

use latscope::lab::{self, LabOptions};

use crate::util_lab::{connect, get, get_with, healthy, ms, p50_ms, raw_get, Proto};

// ---------------------------------------------------------------------------
// routes

/// /delay/50ms answers after about 50 ms (p50 of 10 on one connection).
#[tokio::test]
async fn delay_waits_the_given_time() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let mut samples = Vec::new();
    for _ in 0..10 {
        let r = c.get("/delay/50ms", &[]).await.unwrap();
        assert_eq!(r.status, 200);
        samples.push(r.elapsed);
    }
    let p50 = p50_ms(samples);
    assert!((48.0..150.0).contains(&p50), "p50 {p50} ms");
    let r = c.get("/delay/soon", &[]).await.unwrap();
    assert_eq!(r.status, 400);
    assert!(r.text().contains("duration"), "{}", r.text());
    assert_eq!(c.get("/delay/2h", &[]).await.unwrap().status, 400);
}

/// /bytes/10MB streams exactly 10 MiB with a Content-Length; bad sizes are 400.
#[tokio::test]
async fn bytes_streams_exactly_the_size() {
    let lab = healthy();
    let r = get(lab.addr(), "/bytes/10MB").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 10 << 20);
    assert_eq!(r.header("content-length"), (10u64 << 20).to_string());
    assert_eq!(r.header("content-type"), "application/octet-stream");
    let r = get(lab.addr(), "/bytes/1234").await;
    assert_eq!(r.body.len(), 1234);
    assert_eq!(get(lab.addr(), "/bytes/0").await.body.len(), 0);
    assert_eq!(get(lab.addr(), "/bytes/huge").await.status, 400);
    assert_eq!(get(lab.addr(), "/bytes/").await.status, 400);
}

/// /text/{size} is gzipped only when ?gzip=1 and the client accepts gzip, with
/// Content-Encoding and Vary; the text itself compresses well and round-trips.
#[tokio::test]
async fn text_gzips_only_on_request() {
    let lab = healthy();
    let plain = get_with(lab.addr(), "/text/100k", &[("accept-encoding", "gzip")]).await;
    assert_eq!(plain.body.len(), 100 * 1024);
    assert_eq!(plain.header("content-encoding"), "");
    assert!(plain.header("content-type").starts_with("text/plain"));

    let refused = get_with(lab.addr(), "/text/100k?gzip=1", &[]).await;
    assert_eq!(refused.body.len(), 100 * 1024);
    assert_eq!(refused.header("content-encoding"), "");
    assert_eq!(refused.header("vary"), "Accept-Encoding");

    let q0 = get_with(
        lab.addr(),
        "/text/100k?gzip=1",
        &[("accept-encoding", "gzip;q=0, br")],
    )
    .await;
    assert_eq!(q0.header("content-encoding"), "");

    let gz = get_with(
        lab.addr(),
        "/text/100k?gzip=1",
        &[("accept-encoding", "br, gzip")],
    )
    .await;
    assert_eq!(gz.header("content-encoding"), "gzip");
    assert_eq!(gz.header("vary"), "Accept-Encoding");
    assert!(gz.body.len() < 100 * 1024 / 4, "{} bytes", gz.body.len());
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut text)
        .unwrap();
    assert_eq!(text, plain.body);
}

/// /cache/public: cacheable headers with validators; If-None-Match and
/// If-Modified-Since get a bodiless 304, a stale validator a full 200.
#[tokio::test]
async fn cache_public_has_validators_and_answers_304() {
    let lab = healthy();
    let r = get(lab.addr(), "/cache/public").await;
    assert_eq!(r.status, 200);
    let cc = r.header("cache-control");
    for part in ["public", "max-age=", "s-maxage="] {
        assert!(cc.contains(part), "{cc}");
    }
    assert_eq!(r.header("vary"), "Accept-Encoding");
    assert!(r.header("set-cookie").is_empty());
    let etag = r.header("etag").to_string();
    let lm = r.header("last-modified").to_string();
    assert!(etag.starts_with('"'), "{etag}");
    assert!(httpdate::parse_http_date(&lm).is_ok(), "{lm}");
    assert!(!r.body.is_empty());

    let r = get_with(lab.addr(), "/cache/public", &[("if-none-match", &etag)]).await;
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("etag"), etag);

    let r = get_with(lab.addr(), "/cache/public", &[("if-modified-since", &lm)]).await;
    assert_eq!(r.status, 304);

    let old = httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000));
    let r = get_with(lab.addr(), "/cache/public", &[("if-modified-since", &old)]).await;
    assert_eq!(r.status, 200);

    let r = get_with(
        lab.addr(),
        "/cache/public",
        &[("if-none-match", "\"other\"")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(get(lab.addr(), "/cache/forever").await.status, 400);
}

/// /cache/private-cookie: private, and a fresh Set-Cookie on every response, 304s
/// included.
#[tokio::test]
async fn cache_private_cookie_sets_a_cookie_every_time() {
    let lab = healthy();
    let a = get(lab.addr(), "/cache/private-cookie").await;
    let b = get(lab.addr(), "/cache/private-cookie").await;
    assert!(a.header("cache-control").starts_with("private"));
    assert!(a.header("set-cookie").starts_with("lab_session="));
    assert!(b.header("set-cookie").starts_with("lab_session="));
    assert_ne!(a.header("set-cookie"), b.header("set-cookie"));
    let etag = a.header("etag");
    let c = get_with(
        lab.addr(),
        "/cache/private-cookie",
        &[("if-none-match", etag)],
    )
    .await;
    assert_eq!(c.status, 304);
    assert!(c.header("set-cookie").starts_with("lab_session="));
}

/// /cache/no-validators: no ETag, no Last-Modified, and never a 304.
#[tokio::test]
async fn cache_no_validators_never_304() {
    let lab = healthy();
    let a = get(lab.addr(), "/cache/no-validators").await;
    assert_eq!(a.status, 200);
    assert!(a.header("etag").is_empty());
    assert!(a.header("last-modified").is_empty());
    assert!(a.header("cache-control").contains("no-cache"));
    let now = httpdate::fmt_http_date(std::time::SystemTime::now());
    let b = get_with(
        lab.addr(),
        "/cache/no-validators",
        &[("if-none-match", "*"), ("if-modified-since", &now)],
    )
    .await;
    assert_eq!(b.status, 200);
    assert!(!b.body.is_empty());
}

/// /cdn/*: CDN-style headers; a miss or dynamic answer pays the origin fetch (p50 of
/// 10 ≈ the configured 60 ms), a hit does not.
#[tokio::test]
async fn cdn_hit_is_fast_and_miss_pays_the_origin() {
    let lab = lab::spawn(LabOptions {
        cdn_origin_delay: Duration::from_millis(60),
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let mut hits = Vec::new();
    let mut misses = Vec::new();
    for _ in 0..10 {
        let h = c.get("/cdn/hit", &[]).await.unwrap();
        let m = c.get("/cdn/miss", &[]).await.unwrap();
        hits.push(h.elapsed);
        misses.push(m.elapsed);
    }
    let (hit, miss) = (p50_ms(hits), p50_ms(misses));
    assert!(miss - hit >= 45.0, "hit p50 {hit} ms, miss p50 {miss} ms");
    assert!((58.0..200.0).contains(&miss), "miss p50 {miss} ms");

    let h = c.get("/cdn/hit", &[]).await.unwrap();
    assert_eq!(h.header("cf-cache-status"), "HIT");
    assert_eq!(h.header("x-cache"), "HIT");
    assert!(h.header("age").parse::<u64>().unwrap() >= 1);
    assert!(h.header("via").contains("varnish"));
    assert!(h.header("cf-ray").ends_with("-LAB"));
    assert!(!h.header("x-served-by").is_empty());
    let m = c.get("/cdn/miss", &[]).await.unwrap();
    assert_eq!(m.header("cf-cache-status"), "MISS");
    assert_eq!(m.header("age"), "0");
    assert!(m.header("server-timing").contains("origin;dur="));
    let d = c.get("/cdn/dynamic", &[]).await.unwrap();
    assert_eq!(d.header("cf-cache-status"), "DYNAMIC");
    assert!(d.elapsed >= Duration::from_millis(58));
    assert_eq!(c.get("/cdn/nope", &[]).await.unwrap().status, 400);
}

/// /server-timing spends the db and app time it reports, and reports it.
#[tokio::test]
async fn server_timing_reports_time_really_spent() {
    let lab = healthy();
    let r = get(lab.addr(), "/server-timing?db=40ms&app=20ms").await;
    assert_eq!(r.status, 200);
    let st = r.header("server-timing").to_string();
    let dur = |name: &str| -> f64 {
        let part = st
            .split(',')
            .find(|p| p.trim().starts_with(&format!("{name};")))
            .unwrap_or_else(|| panic!("{name} in {st}"));
        let v = part.split("dur=").nth(1).unwrap();
        v.split(';').next().unwrap().parse().unwrap()
    };
    assert!(dur("db") >= 40.0 && dur("db") < 200.0, "{st}");
    assert!(dur("app") >= 20.0 && dur("app") < 200.0, "{st}");
    assert!(ms(r.elapsed) >= dur("total"), "{st} vs {:?}", r.elapsed);
    assert_eq!(get(lab.addr(), "/server-timing?db=lots").await.status, 400);
}

/// /redirect/3 is a chain of 302s down to /redirect/0, which is a 200.
#[tokio::test]
async fn redirect_chain_ends_in_200() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    let mut path = "/redirect/3".to_string();
    let mut statuses = Vec::new();
    for _ in 0..10 {
        let r = c.get(&path, &[]).await.unwrap();
        statuses.push(r.status.as_u16());
        if r.status != 302 {
            break;
        }
        path = r.header("location").to_string();
    }
    assert_eq!(statuses, [302, 302, 302, 200]);
    assert_eq!(path, "/redirect/0");
    assert_eq!(c.get("/redirect/-1", &[]).await.unwrap().status, 400);
}

/// /status/{code} answers with that code; 1xx, out-of-range and junk are 400.
#[tokio::test]
async fn status_answers_with_the_code() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    for code in [200u16, 204, 301, 404, 418, 500, 503, 599] {
        assert_eq!(
            c.get(&format!("/status/{code}"), &[]).await.unwrap().status,
            code
        );
    }
    for bad in ["/status/100", "/status/600", "/status/abc", "/status/"] {
        let r = c.get(bad, &[]).await.unwrap();
        assert_eq!(r.status, 400, "{bad}");
        assert!(!r.body.is_empty());
    }
}

/// /close sends Connection: close and the server really closes the connection.
#[test]
fn close_really_closes() {
    let lab = healthy();
    let mut s = raw_get(lab.addr(), "/close");
    let mut data = Vec::new();
    // read_to_end only returns on EOF: the server closed its side.
    s.read_to_end(&mut data).expect("EOF, not an error");
    let text = String::from_utf8_lossy(&data).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(text.contains("connection: close"), "{text}");
}

/// /close over HTTP/2: the lab ends the connection (GOAWAY) after the response.
#[tokio::test]
async fn close_over_h2_ends_the_connection() {
    let lab = lab::spawn(LabOptions {
        http2: true,
        ..LabOptions::default()
    })
    .unwrap();
    let mut c = connect(lab.addr(), Proto::H2, None).await.unwrap();
    assert_eq!(c.get("/close", &[]).await.unwrap().status, 200);
    assert!(c.get("/", &[]).await.is_err());
}

/// /reset really resets: the client sees ECONNRESET, not a response or EOF.
#[test]
fn reset_really_resets() {
    let lab = healthy();
    let mut s = raw_get(lab.addr(), "/reset");
    let mut buf = [0u8; 1024];
    let err = s.read(&mut buf).expect_err("a reset, not data or EOF");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    // The server is fine afterwards.
    drop(s);
    let mut ok = raw_get(lab.addr(), "/status/200");
    let n = ok.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

/// /reset over HTTP/2 and over TLS also tears the connection down: the request fails
/// instead of getting an answer, and the lab serves new connections afterwards.
#[tokio::test]
async fn reset_over_h2_and_tls_fails_the_request() {
    let lab = lab::spawn(LabOptions {
        http2: true,
        tls: Some(lab::LabTls::self_signed(&[]).unwrap()),
        ..LabOptions::default()
    })
    .unwrap();
    let config = crate::util_lab::trusting(lab.cert_pem().unwrap(), &[b"h2"]);
    let mut c = connect(lab.addr(), Proto::H2, Some((config.clone(), "localhost")))
        .await
        .unwrap();
    let err = c.get("/reset", &[]).await.expect_err("no answer to /reset");
    assert!(!err.contains("timed out"), "{err}");
    let mut again = connect(lab.addr(), Proto::H2, Some((config, "localhost")))
        .await
        .unwrap();
    assert_eq!(again.get("/status/200", &[]).await.unwrap().status, 200);
}

/// `/` lists the routes; unknown paths are 404 with a hint.
#[tokio::test]
async fn index_and_not_found() {
    let lab = healthy();
    let r = get(lab.addr(), "/").await;
    for route in ["/delay/", "/bytes/", "/cold", "/cache/", "/cdn/", "/reset"] {
        assert!(r.text().contains(route), "{route}");
    }
    let r = get(lab.addr(), "/no/such/thing").await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("GET /"), "{}", r.text());
    assert_eq!(get(lab.addr(), "/cold/extra").await.status, 404);
}

/// Bad parameters everywhere are 400s, never a crash: the lab keeps serving.
#[tokio::test]
async fn bad_parameters_never_hurt_the_server() {
    let lab = healthy();
    let mut c = connect(lab.addr(), Proto::H1, None).await.unwrap();
    for bad in [
        "/delay/-5ms",
        "/delay/99999999999999999999h",
        "/bytes/1e999",
        "/text/-1",
        "/text/1T?gzip=1",
        "/redirect/99999999999",
        "/status/65536",
        "/cache/",
        "/cdn/",
        "/server-timing?app=1y",
    ] {
        let r = c.get(bad, &[]).await.unwrap();
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    assert_eq!(c.get("/", &[]).await.unwrap().status, 200);
}

/// A client that disconnects in the middle of a large body does not hurt the server,
/// and its worker slot is given back (a one-worker lab still serves afterwards).
#[test]
fn client_disconnect_mid_body_is_harmless() {
    let lab = lab::spawn(LabOptions {
        workers: Some(1),
        ..LabOptions::default()
    })
    .unwrap();
    let mut s = raw_get(lab.addr(), "/bytes/1G");
    let mut buf = [0u8; 64 * 1024];
    let n = s.read(&mut buf).unwrap();
    assert!(n > 0);
    drop(s);
    let mut again = raw_get(lab.addr(), "/status/200");
    let n = again.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}
