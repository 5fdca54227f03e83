//! `latscope probe` against real nginx over TLS (issue 12, items 1 and 2; issue 15,
//! item 15): a self-signed certificate passed with `--cacert` is trusted when it is
//! exactly the server's own (as OpenSSL and curl do), every other certificate is
//! refused with the real reason; the fresh series pays full handshakes, the resumed
//! series appears only when the server resumes sessions.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::{run_json_within, run_within};
use crate::util_nginx::*;

const LIMIT: Duration = Duration::from_secs(60);

fn probe_json(args: &[&str]) -> Value {
    let mut all = vec!["probe", "--json", "--no-save"];
    all.extend_from_slice(args);
    run_json_within(&all, LIMIT)
}

/// Runs a probe that must fail with exit 1; returns its stderr.
fn probe_refused(args: &[&str]) -> String {
    let mut all = vec!["probe", "--no-save", "-n", "1"];
    all.extend_from_slice(args);
    let out = run_within(&all, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    err
}

/// An expired self-signed certificate for localhost (made with rcgen: OpenSSL 3.0's
/// `req`/`x509` cannot date a certificate in the past) into `dir/expired.{crt,key}`.
fn expired_cert(dir: &Path) -> std::path::PathBuf {
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let crt = dir.join("expired.crt");
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(dir.join("expired.key"), key.serialize_pem()).unwrap();
    crt
}

/// The certificate most people make (`openssl req -x509 … -addext
/// subjectAltName=DNS:localhost,IP:127.0.0.1`, CA:TRUE), served by nginx and passed
/// with `--cacert`, is accepted for both names it covers (RFC 5280 §6.1 would refuse a
/// CA certificate as the end entity; OpenSSL and curl accept a trusted certificate
/// that is the leaf itself, and so does latscope). Quiet side of every refusal below.
#[test]
fn a_self_signed_leaf_passed_with_cacert_is_trusted() {
    let Some(bin) = nginx_bin("a_self_signed_leaf_passed_with_cacert_is_trusted") else {
        return;
    };
    let dir = temp_dir("leaf");
    let crt = openssl_self_signed(&dir, "leaf");
    let port = free_port();
    write_conf(&dir, &tls_server(&format!("127.0.0.1:{port}"), &crt, ""));
    let _nginx = start(&bin, &dir, SocketAddr::from(([127, 0, 0, 1], port)));
    let ca = crt.to_str().unwrap();
    for host in ["localhost", "127.0.0.1"] {
        let v = probe_json(&[
            &format!("https://{host}:{port}/"),
            "-n",
            "2",
            "--cacert",
            ca,
        ]);
        assert_eq!(v["status"], 200, "{host}: {v}");
        assert!(v["tls"]["version"].as_str().unwrap().starts_with("TLSv1."));
    }
}

/// Everything else is still refused, each with its real reason and no advice to pass
/// a flag the user already gave: another self-signed certificate in `--cacert`, no
/// `--cacert` at all, a name the certificate does not cover, an expired certificate
/// (RFC 5280 §4.1.2.5) even when it is the one in `--cacert`.
#[test]
fn other_certificates_are_refused_with_the_real_reason() {
    let Some(bin) = nginx_bin("other_certificates_are_refused_with_the_real_reason") else {
        return;
    };
    let dir = temp_dir("refused");
    let crt = openssl_self_signed(&dir, "served");
    let other = openssl_self_signed(&dir, "other");
    let expired = expired_cert(&dir);
    let (port, old_port) = (free_port(), free_port());
    let servers = tls_server(&format!("127.0.0.1:{port}"), &crt, "")
        + &tls_server(&format!("127.0.0.1:{old_port}"), &expired, "");
    write_conf(&dir, &servers);
    let _nginx = start(&bin, &dir, SocketAddr::from(([127, 0, 0, 1], port)));
    wait_for_port(
        SocketAddr::from(([127, 0, 0, 1], old_port)),
        Duration::from_secs(10),
        &dir,
    );
    let url = format!("https://localhost:{port}/");

    let err = probe_refused(&[&url, "--cacert", other.to_str().unwrap()]);
    assert!(
        err.contains("is self-signed, and it is not the certificate in --cacert"),
        "{err}"
    );
    assert!(!err.contains("--cacert FILE"), "repeats the flag: {err}");

    let err = probe_refused(&[&url]);
    assert!(
        err.contains("self-signed") && err.contains("--cacert FILE"),
        "{err}"
    );
    assert!(!err.contains("CaUsedAsEndEntity"), "{err}");

    let err = probe_refused(&[
        &format!("https://wrong.example:{port}/"),
        "--resolve",
        &format!("wrong.example:{port}:127.0.0.1"),
        "--cacert",
        crt.to_str().unwrap(),
    ]);
    assert!(
        err.contains("not valid for wrong.example: it covers localhost, 127.0.0.1"),
        "{err}"
    );

    let err = probe_refused(&[
        &format!("https://localhost:{old_port}/"),
        "--cacert",
        expired.to_str().unwrap(),
    ]);
    assert!(err.contains("expired on") && err.contains("2021"), "{err}");
}

/// A `--cacert` file with no PEM certificate in it is a bad flag value: exit 2 with a
/// message naming the file (issue 15, item 15), before anything is sent.
#[test]
fn a_cacert_without_a_certificate_is_a_usage_error() {
    let dir = temp_dir("nopem");
    let file = dir.join("not-a-cert.pem");
    std::fs::write(&file, "hello, not a certificate\n").unwrap();
    let f = file.to_str().unwrap();
    for cmd in ["probe", "diagnose"] {
        let out = run_within(
            &[cmd, "--no-save", "https://127.0.0.1:1/", "--cacert", f],
            LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains(&format!("--cacert {f} holds no PEM certificate")),
            "{err}"
        );
    }
}
