//! HTTP/3 (`--http3`, issue 20) against a real peer: Caddy, which serves h3 over UDP
//! on its https port with `tls internal` (RFC 9114; QUIC: RFC 9000/9001), and the
//! error when nothing answers over UDP.

use std::time::{Duration, Instant};

use crate::util::{diagnose_json, run_json, run_within};
use crate::util_caddy::{caddy_bin, start};
use crate::util_wire::ChildGuard;

/// Over HTTP/3 to Caddy: ALPN h3 negotiated (RFC 9114, section 3.1), HTTP/3 200,
/// `connect` is the QUIC handshake (no separate tls phase: RFC 9001 runs TLS 1.3
/// inside QUIC's handshake), QUIC's own RTT estimate in place of TCP_INFO, and a
/// returning client resumes with 0-RTT (Caddy accepts early data for GET).
#[test]
fn probe_http3_on_caddy_negotiates_h3_and_times_the_quic_handshake() {
    let Some(bin) = caddy_bin() else {
        return;
    };
    let caddy = start(&bin, "probe", "respond \"hello from caddy\" 200");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/");
    let v = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "5",
        &k,
        &ca,
        &url,
    ]);
    assert_eq!(v["http_version"], "HTTP/3", "{v}");
    assert_eq!(v["status"], 200);
    assert_eq!(v["tls"]["alpn"], "h3");
    assert_eq!(v["tls"]["version"], "TLSv1.3");
    assert_eq!(v["headers"]["server"], "Caddy");
    let fresh = &v["fresh"]["phases_ms"];
    assert!(fresh["connect"]["p50"].as_f64().unwrap() > 0.0, "{fresh}");
    assert_eq!(fresh["tls"]["max"].as_f64(), Some(0.0), "{fresh}");
    // QUIC's estimate, labelled, instead of the kernel's TCP_INFO.
    assert!(v["tcp"].is_null(), "{}", v["tcp"]);
    let q = &v["quic"];
    assert_eq!(q["rtt_source"], "quic");
    assert!(q["rtt_ms"].as_f64().unwrap() > 0.0, "{q}");
    assert!(q["min_rtt_ms"].as_f64().unwrap() > 0.0, "{q}");
    assert!(q["handshake_ms"].as_f64().unwrap() > 0.0, "{q}");
    // Sessions kept between samples: resumed, with 0-RTT accepted by Caddy. Every
    // returning visit resumes: quic-go's ticket can trail its response, and the
    // probe lets it in before closing, as a browser keeping the connection would
    // (RFC 9001, section 4.6.1: 0-RTT needs a ticket).
    assert_eq!(q["resumed"], true, "{q}");
    assert_eq!(v["resumed"]["count"], 5, "{}", v["resumed"]);
    assert_eq!(q["zero_rtt"], true, "{q}");
    let samples = v["samples"].as_array().unwrap();
    for s in samples {
        assert!(s["quic_rtt_ms"].as_f64().is_some(), "{s}");
    }
    let resumed: Vec<_> = samples
        .iter()
        .filter(|s| s["series"] == "resumed")
        .collect();
    assert!(resumed
        .iter()
        .all(|s| s["zero_rtt"] == true && s["tls_resumed"] == true));
    // 0-RTT: the connection is usable at once, so its connect phase is below a
    // full handshake's.
    let resumed_connect = v["resumed"]["phases_ms"]["connect"]["p50"]
        .as_f64()
        .unwrap();
    assert!(
        resumed_connect < fresh["connect"]["p50"].as_f64().unwrap(),
        "resumed connect {resumed_connect} vs fresh {fresh}"
    );
}

/// The same Caddy over HTTP/2 and HTTP/3: h2 pays TCP + TLS (two phases), h3 one
/// QUIC handshake; both answer from the same server.
#[test]
fn probe_h2_vs_h3_on_caddy() {
    let Some(bin) = caddy_bin() else {
        return;
    };
    let caddy = start(&bin, "h2h3", "respond \"hello from caddy\" 200");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/");
    let h2 = run_json(&["probe", "--no-save", "--json", "-n", "5", &k, &ca, &url]);
    let h3 = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "5",
        &k,
        &ca,
        &url,
    ]);
    assert_eq!(h2["http_version"], "HTTP/2");
    assert_eq!(h2["tls"]["alpn"], "h2");
    assert_eq!(h3["tls"]["alpn"], "h3");
    // Caddy advertises its h3 over TCP (RFC 7838).
    assert!(
        h2["headers"]["alt-svc"]
            .as_str()
            .unwrap()
            .contains("h3=\":"),
        "{}",
        h2["headers"]
    );
    assert!(h2["fresh"]["phases_ms"]["tls"]["p50"].as_f64().unwrap() > 0.0);
    assert!(h2["tcp"]["rtt_ms"].as_f64().is_some());
    assert_eq!(h3["fresh"]["phases_ms"]["tls"]["p50"].as_f64(), Some(0.0));
    assert!(h3["quic"]["min_rtt_ms"].as_f64().is_some());
    for v in [&h2, &h3] {
        assert_eq!(v["status"], 200);
        assert!(v["fresh"]["count"].as_u64().unwrap() >= 5);
        assert!(v["reused"]["count"].as_u64().unwrap() >= 5);
    }
}

/// A request body Caddy's `respond` never reads: quic-go answers, then stops reading
/// the request with H3_NO_ERROR while the client is still sending. RFC 9114,
/// section 4.1: the server may do so, and the client "MUST NOT discard complete
/// responses as a result of having their request terminated abruptly". The 4 MiB
/// body exceeds quic-go's stream window, so the stop always comes mid-body.
#[test]
fn a_response_before_the_whole_request_is_kept() {
    let Some(bin) = caddy_bin() else {
        return;
    };
    let caddy = start(&bin, "early", "respond \"early\" 201");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/upload");
    let body = crate::util::scratch().join("h3-early-response-body.bin");
    std::fs::write(&body, vec![b'x'; 4 << 20]).unwrap();
    let data = format!("@{}", body.display());
    let p = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-X",
        "POST",
        "--data",
        &data,
        "-n",
        "3",
        &k,
        &ca,
        &url,
    ]);
    let samples = p["samples"].as_array().unwrap();
    assert!(samples.len() >= 6, "{p}");
    for s in samples {
        assert_eq!(s["status"], 201, "{s}");
        assert!(s["error"].is_null(), "{s}");
    }
    let l = run_json(&[
        "load",
        "--no-save",
        "--json",
        "--http3",
        "-X",
        "POST",
        "--data",
        &data,
        "-n",
        "20",
        "-c",
        "2",
        &k,
        &ca,
        &url,
    ]);
    assert_eq!(
        (l["requests"].as_u64(), l["ok"].as_u64()),
        (Some(20), Some(20)),
        "{l}"
    );
    assert_eq!(l["statuses"]["201"], 20, "{l}");
}

/// Caddy's internal CA is not trusted without --cacert: over QUIC too the
/// certificate is verified, and the error says why and what to do; exit 1.
#[test]
fn probe_http3_verifies_the_certificate() {
    let Some(bin) = caddy_bin() else {
        return;
    };
    let caddy = start(&bin, "verify", "respond \"hello\" 200");
    let url = caddy.url("/");
    let out = run_within(
        &["probe", "--no-save", "--http3", "-n", "2", &url],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Caddy Local Authority") && err.contains("--cacert"),
        "{err}"
    );
    // -k skips verification, as over TCP.
    let v = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "2",
        "-k",
        &url,
    ]);
    assert_eq!(v["tls"]["alpn"], "h3");
}

/// Nothing listens on the UDP port (UDP blocked looks the same): a clear error
/// naming the address within the timeout, exit 1 — not quinn's 30 s idle timeout.
#[test]
fn probe_http3_with_nothing_on_udp_fails_within_the_timeout() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/");
    let start = Instant::now();
    let out = run_within(
        &[
            "probe",
            "--no-save",
            "--http3",
            "-k",
            "-n",
            "3",
            "--timeout",
            "500ms",
            &url,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no answer over UDP"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    // Three tries of 500 ms at most, then it gives up.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    // --http3 is https only.
    let out = run_within(
        &["probe", "--no-save", "--http3", "http://127.0.0.1:1/"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
}

/// `diagnose` on Caddy: `Alt-Svc: h3=":PORT"` (RFC 7838, section 3) is read from the
/// TCP responses, h3 probed beside them, h1/h2/h3 shown side by side (text, JSON
/// and the HTML report); neither `no-http3` (h3 is offered) nor `http3-slower` (it works) fires.
#[test]
fn diagnose_discovers_h3_on_caddy_and_shows_h1_h2_h3() {
    let Some(bin) = caddy_bin() else {
        return;
    };
    let caddy = start(&bin, "diagnose", "respond \"hello from caddy\" 200");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/");
    let args = [
        "diagnose",
        "--no-save",
        "--no-load",
        "-n",
        "5",
        &k,
        &ca,
        &url,
    ];
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let v = run_json(&json_args);
    let h3 = &v["http3"];
    assert_eq!(h3["offered"], true, "{h3}");
    assert_eq!(h3["port"].as_u64(), Some(u64::from(caddy.port)));
    assert!(h3["alt_svc"].as_str().unwrap().contains("h3="), "{h3}");
    assert_eq!(h3["probe"]["tls"]["alpn"], "h3", "{h3}");
    assert!(h3["error"].is_null(), "{h3}");
    // How long latscope waited for a CPU meanwhile (http3-slower discounts it).
    assert!(h3["client_cpu_wait_ms"].as_f64().is_some(), "{h3}");
    let versions: Vec<&str> = v["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["http_version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["HTTP/1.1", "HTTP/2", "HTTP/3"]);
    let h3_row = &v["protocols"][2];
    assert_eq!(h3_row["alpn"], "h3");
    assert_eq!(h3_row["tls_ms"].as_f64(), Some(0.0));
    assert!(h3_row["fresh_ttfb_ms"].as_f64().unwrap() > 0.0, "{h3_row}");
    let ids = crate::findings::ids(&v);
    assert!(
        !ids.iter().any(|i| i == "no-http3" || i == "http3-slower"),
        "{ids:?}"
    );
    // The text, and the HTML report of the stored run, show the same table.
    let db = caddy.dir.join("runs.db").display().to_string();
    let mut saved = args.to_vec();
    saved[1] = "--db";
    saved.insert(2, &db);
    let out = run_within(&saved, crate::util::LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("protocols (Alt-Svc: h3="), "{text}");
    assert!(text.contains("HTTP/3  "), "{text}");
    let html = caddy.dir.join("report.html");
    let html_arg = html.display().to_string();
    let out = run_within(
        &["report", "last", "--db", &db, "-o", &html_arg],
        crate::util::LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("<h4>Protocols (Alt-Svc: h3="),
        "no protocols section"
    );
    assert!(html.contains("<tr><td>HTTP/3</td>"), "no HTTP/3 row");
}

/// nginx over TLS without HTTP/3: `no-http3` fires (info), priced per first visit at
/// one round trip against TLS 1.3 (TCP + TLS take two, QUIC one; RFC 9001) or two
/// against TLS 1.2 (RFC 5246 takes two of its own), and no h3 probe runs.
#[test]
fn no_http3_fires_on_nginx_over_tls() {
    let Some(bin) = crate::util_nginx::nginx_bin() else {
        return;
    };
    let (_nginx, port, crt) = tls_nginx(&bin, "noh3", "");
    let url = format!("https://localhost:{port}/");
    let v = diagnose_json(&["-n", "3", "--cacert", &crt, &url]);
    let f = crate::findings::finding(&v, "no-http3");
    assert_eq!(f["severity"], "info");
    // One round trip against TCP + TLS 1.3, two against TCP + TLS 1.2 (whichever this
    // nginx negotiated).
    let want = match f["evidence"]["tls_version"].as_str().unwrap() {
        "TLSv1.3" => 1.0,
        "TLSv1.2" => 2.0,
        other => panic!("TLS version {other}"),
    };
    assert_eq!(
        f["evidence"]["round_trips_saved"].as_f64(),
        Some(want),
        "{f}"
    );
    assert_eq!(v["probe"]["tls"]["version"], f["evidence"]["tls_version"]);
    assert_eq!(f["saving_basis"], "fresh", "{f}");
    assert_eq!(v["http3"]["offered"], false);
    assert!(v["http3"]["probe"].is_null());
    assert!(v["protocols"].is_null());
    assert!(!crate::findings::ids(&v).contains(&"http3-slower".to_string()));
}

/// nginx advertising `Alt-Svc: h3=":PORT"` for a UDP port nothing listens on (as when
/// a firewall drops UDP): diagnose tries h3, falls back to the TCP probe and says so
/// in `http3-slower` (with the fallback it saw) instead of failing; `no-http3` stays
/// quiet (h3 is offered). The same with `--http3` and no offer.
#[test]
fn http3_slower_fires_when_the_offered_udp_port_is_closed() {
    let Some(bin) = crate::util_nginx::nginx_bin() else {
        return;
    };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let alt = format!("add_header Alt-Svc 'h3=\":{udp}\"; ma=60' always;");
    let (_nginx, port, crt) = tls_nginx(&bin, "h3closed", &alt);
    let url = format!("https://localhost:{port}/");
    let start = Instant::now();
    let v = diagnose_json(&["-n", "3", "--cacert", &crt, &url]);
    // Discovery bounds each QUIC attempt (3 s) and gives up after three.
    assert!(
        start.elapsed() < Duration::from_secs(40),
        "{:?}",
        start.elapsed()
    );
    let f = crate::findings::finding(&v, "http3-slower");
    assert_eq!(f["severity"], "warn");
    assert_eq!(f["evidence"]["fallback"], "HTTP/1.1", "{f}");
    assert_eq!(f["evidence"]["port"].as_u64(), Some(u64::from(udp)), "{f}");
    assert!(
        f["evidence"]["error"]
            .as_str()
            .unwrap()
            .contains("no answer over UDP"),
        "{f}"
    );
    assert!(!crate::findings::ids(&v).contains(&"no-http3".to_string()));
    assert_eq!(v["probe"]["http_version"], "HTTP/1.1");
    assert_eq!(
        v["protocols"][1]["http_version"], "HTTP/3",
        "{}",
        v["protocols"]
    );
    assert!(v["protocols"][1]["error"].is_string());
    // --http3 on a server without any offer: tried on the URL's port, falls back.
    let _ = udp;
    let (_nginx2, port2, crt2) = tls_nginx(&bin, "h3asked", "");
    let url2 = format!("https://localhost:{port2}/");
    let v = diagnose_json(&[
        "-n",
        "2",
        "--http3",
        "--timeout",
        "1s",
        "--cacert",
        &crt2,
        &url2,
    ]);
    let f = crate::findings::finding(&v, "http3-slower");
    assert!(f["title"].as_str().unwrap().contains("--http3"), "{f}");
    assert_eq!(v["probe"]["status"], 200);
}

/// nginx over TLS on a free 127.0.0.1 port (a self-signed certificate in a temp
/// directory named after `tag`), `extra` in its server block: the running server,
/// its port and the certificate's path.
fn tls_nginx(bin: &std::path::Path, tag: &str, extra: &str) -> (ChildGuard, u16, String) {
    let dir = crate::util_nginx::temp_dir(tag);
    let crt = crate::util_nginx::openssl_self_signed(&dir, "server");
    let port = crate::util::free_port();
    let listen = format!("127.0.0.1:{port}");
    crate::util_nginx::write_conf(&dir, &crate::util_nginx::tls_server(&listen, &crt, extra));
    let nginx = crate::util_nginx::start(bin, &dir, listen.parse().unwrap());
    (nginx, port, crt.display().to_string())
}
