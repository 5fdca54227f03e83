//! Issue 32: each server's and cache's own advice, on the real server, fires where
//! it is misconfigured and is quiet where it is right — and following the advice
//! is what makes it quiet (the "quiet" config is the advice's own directive). The
//! origin is a Python server that claims nothing, so every clue comes from the
//! server under test. Compression follows RFC 9110 §8.4 (Content-Encoding) and
//! §12.5.3 (Accept-Encoding); keep-alive RFC 9112 §9.3 (persistence). Each test is
//! two diagnoses (`-n 3`, ≈1–2 s each); they run in parallel.

use crate::util::diagnose_json;
use crate::util_caches::{apache_with, Server};
use crate::util_real::python_server;
use crate::util_require::require;
use crate::util_stack::{
    advice_only_for_detected, caddy_proxy, haproxy, nginx_proxy, role, stack_advice, varnish_vcl,
    BARE,
};

fn diagnose(s: &Server) -> serde_json::Value {
    let doc = diagnose_json(&[&format!("http://127.0.0.1:{}/", s.port), "-n", "3"]);
    advice_only_for_detected(&doc);
    doc
}

fn ids(doc: &serde_json::Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// Finding `id` is there, keeps its generic advice, and `stack`'s advice for it
/// contains `needle`.
fn fires(doc: &serde_json::Value, id: &str, stack: &str, needle: &str) {
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} among {:?}", ids(doc)));
    assert!(!f["advice"].as_str().unwrap().is_empty(), "{f}");
    let a = stack_advice(doc, id);
    assert!(
        a.iter()
            .any(|(s, t, x)| s == stack && t == id && x.contains(needle)),
        "{stack}'s advice for {id} with {needle:?}: {a:?}"
    );
}

/// Finding `id` is not there, nor any stack advice on it.
fn quiet(doc: &serde_json::Value, id: &str) {
    assert!(!ids(doc).contains(&id.to_string()), "{id}: {:?}", ids(doc));
    assert!(stack_advice(doc, id).is_empty());
}

/// nginx as a proxy: `gzip off` and `keepalive_timeout 0` get nginx's `gzip on` and
/// `keepalive_timeout`; with `gzip on; gzip_proxied any;` and the default
/// keep-alive, neither finding is there.
#[test]
fn nginx_advice_fires_and_quiets() {
    if !require("python3") || !require("nginx") {
        return;
    }
    let (_o, origin) = python_server(BARE, &[]);
    let bad = nginx_proxy(origin, "keepalive_timeout 0;");
    let doc = diagnose(&bad);
    assert_eq!(role(&doc, "server"), "nginx", "{}", doc["stack"]);
    fires(&doc, "no-compression", "nginx", "gzip on");
    fires(&doc, "no-keepalive", "nginx", "keepalive_timeout");
    drop(bad);
    let good = nginx_proxy(origin, "gzip on; gzip_proxied any;");
    let doc = diagnose(&good);
    assert_eq!(role(&doc, "server"), "nginx", "{}", doc["stack"]);
    quiet(&doc, "no-compression");
    quiet(&doc, "no-keepalive");
}

/// Apache httpd as a proxy (mod_proxy_http): `KeepAlive Off` and no DEFLATE filter
/// get `KeepAlive On` and `AddOutputFilterByType DEFLATE`; with that filter and the
/// default KeepAlive, neither.
#[test]
fn apache_advice_fires_and_quiets() {
    if !require("python3") || !require("apache2") {
        return;
    }
    let (_o, origin) = python_server(BARE, &[]);
    let bad = apache_with(origin, false, "KeepAlive Off\n");
    let doc = diagnose(&bad);
    assert_eq!(role(&doc, "server"), "apache", "{}", doc["stack"]);
    fires(
        &doc,
        "no-compression",
        "apache",
        "AddOutputFilterByType DEFLATE",
    );
    fires(&doc, "no-keepalive", "apache", "KeepAlive On");
    drop(bad);
    let good = apache_with(origin, false, "AddOutputFilterByType DEFLATE text/html\n");
    let doc = diagnose(&good);
    assert_eq!(role(&doc, "server"), "apache", "{}", doc["stack"]);
    quiet(&doc, "no-compression");
    quiet(&doc, "no-keepalive");
}

/// Caddy's reverse_proxy without `encode` gets `encode gzip zstd`; with it, quiet.
#[test]
fn caddy_advice_fires_and_quiets() {
    if !require("python3") || !require("caddy") {
        return;
    }
    let (_o, origin) = python_server(BARE, &[]);
    let bad = caddy_proxy(origin, "");
    let doc = diagnose(&bad);
    assert_eq!(role(&doc, "server"), "caddy", "{}", doc["stack"]);
    fires(&doc, "no-compression", "caddy", "encode gzip");
    quiet(&doc, "no-keepalive");
    drop(bad);
    let good = caddy_proxy(origin, "encode gzip zstd");
    let doc = diagnose(&good);
    assert_eq!(role(&doc, "server"), "caddy", "{}", doc["stack"]);
    quiet(&doc, "no-compression");
}

/// HAProxy at the edge of an nginx without gzip: its default keep-alive gives no
/// `no-keepalive`; `no-compression` gets HAProxy's `compression algo gzip` beside
/// nginx's `gzip on`; with `compression algo gzip` in HAProxy, quiet.
#[test]
fn haproxy_advice_fires_and_quiets() {
    if !require("python3") || !require("nginx") || !require("haproxy") {
        return;
    }
    let (_o, origin) = python_server(BARE, &[]);
    let nginx = nginx_proxy(origin, "");
    let bad = haproxy(nginx.port, "");
    let doc = diagnose(&bad);
    assert_eq!(role(&doc, "proxy"), "haproxy", "{}", doc["stack"]);
    fires(&doc, "no-compression", "haproxy", "compression algo gzip");
    fires(&doc, "no-compression", "nginx", "gzip on");
    quiet(&doc, "no-keepalive");
    drop(bad);
    let good = haproxy(
        nginx.port,
        "  compression algo gzip\n  compression type text/html",
    );
    let doc = diagnose(&good);
    assert_eq!(role(&doc, "proxy"), "haproxy", "{}", doc["stack"]);
    quiet(&doc, "no-compression");
}

/// Varnish (built-in VCL) in front of an origin that does not compress gets
/// `set beresp.do_gzip = true;`; with it in `vcl_backend_response`, quiet.
#[test]
fn varnish_advice_fires_and_quiets() {
    if !require("python3") || !require("varnishd") {
        return;
    }
    let (_o, origin) = python_server(BARE, &[]);
    let bad = varnish_vcl(origin, "");
    let doc = diagnose(&bad);
    assert_eq!(role(&doc, "cache"), "varnish", "{}", doc["stack"]);
    fires(&doc, "no-compression", "varnish", "beresp.do_gzip");
    drop(bad);
    let good = varnish_vcl(
        origin,
        "if (beresp.http.Content-Type ~ \"text\") { set beresp.do_gzip = true; }",
    );
    let doc = diagnose(&good);
    assert_eq!(role(&doc, "cache"), "varnish", "{}", doc["stack"]);
    quiet(&doc, "no-compression");
}
