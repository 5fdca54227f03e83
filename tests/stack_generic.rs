//! Issue 32: what stack advice does where the stack says nothing, and the cache
//! advice that must be right for the cache in front — every blocker of nginx
//! proxy_cache at once, and cookies told apart by name (RFC 9111 §3 lets a cache
//! store answers to requests with cookies; Varnish's built-in VCL passes them).
//! Python origins written in the test, real nginx and Varnish; ≈10 s in all.

use crate::util::diagnose_json;
use crate::util::free_port;
use crate::util_caches::{get, spawn, temp_dir, varnish};
use crate::util_real::python_server;
use crate::util_require::require;
use crate::util_stack::{finding, role, stack_advice, BARE};

/// An origin whose page is cacheable (`public, max-age=600`), for the cookie tests.
const CACHEABLE: &str = r#"
import http.server, socketserver
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = b"<html>cacheable</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Cache-Control", "public, max-age=600")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// A server that claims nothing is not recognised: the text says so, and every
/// finding keeps its generic HTTP advice with no stack advice beside it.
#[test]
fn unknown_server_gets_generic_advice() {
    if !require("python3") {
        return;
    }
    let (_g, port) = python_server(BARE, &[]);
    let doc = diagnose_json(&[&format!("http://127.0.0.1:{port}/"), "-n", "3"]);
    assert!(
        doc["stack"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("not recognised"),
        "{}",
        doc["stack"]
    );
    for r in ["server", "proxy", "cache", "cdn", "app", "framework"] {
        assert!(doc["stack"][r].is_null(), "{r}: {}", doc["stack"]);
    }
    let nc = finding(&doc, "no-compression");
    assert!(!nc["advice"].as_str().unwrap().is_empty());
    for f in doc["findings"].as_array().unwrap() {
        assert!(f.get("advice_stack").is_none(), "{f}");
    }
    let text = crate::util::run(&[
        "diagnose",
        "--no-save",
        "--no-load",
        "-n",
        "3",
        &format!("http://127.0.0.1:{port}/"),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("stack: not recognised"), "{text}");
}

/// nginx proxy_cache in front of an origin that sends no lifetime *and* a
/// Set-Cookie refuses the page for both; the advice names both at once. Then on the
/// real nginx: fixing only the lifetime (`proxy_cache_valid`) still misses, fixing
/// both (`proxy_ignore_headers Set-Cookie`, `proxy_hide_header Set-Cookie` — the
/// cookie here is no one's session) hits.
#[test]
fn nginx_proxy_cache_two_blockers() {
    if !require("python3") || !require("nginx") {
        return;
    }
    let (_g, origin) = python_server(BARE, &["prefs"]);
    let cache = crate::util_caches::nginx(origin);
    let doc = diagnose_json(&[&format!("http://127.0.0.1:{}/", cache.port), "-n", "3"]);
    assert_eq!(role(&doc, "cache"), "nginx", "{}", doc["stack"]);
    assert_eq!(
        doc["cache"]["default_caches_why"]["nginx"], "no freshness, set-cookie",
        "{}",
        doc["cache"]
    );
    let mut a = stack_advice(&doc, "cdn-not-caching");
    a.extend(stack_advice(&doc, "not-shared-cacheable"));
    let nginx: Vec<&str> = a
        .iter()
        .filter(|(s, _, _)| s == "nginx")
        .map(|(_, t, _)| t.as_str())
        .collect();
    assert!(nginx.contains(&"cache:freshness"), "{a:?}");
    assert!(nginx.contains(&"cache:set-cookie"), "{a:?}");

    let status = |extra: &str| {
        let dir = temp_dir("two-blockers");
        let port = free_port();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 64; }}\nhttp {{\n access_log off;\n\
             client_body_temp_path {d}/b;\n proxy_temp_path {d}/p;\n fastcgi_temp_path {d}/f;\n\
             uwsgi_temp_path {d}/u;\n scgi_temp_path {d}/s;\n\
             proxy_cache_path {d}/cache keys_zone=c:1m;\n server {{\n  listen 127.0.0.1:{port};\n\
             location / {{\n   proxy_pass http://127.0.0.1:{origin};\n   proxy_cache c;\n\
             add_header X-Cache-Status $upstream_cache_status always;\n   {extra}\n  }}\n }}\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let mut cmd = std::process::Command::new("nginx");
        cmd.arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(&dir);
        let s = spawn(cmd, dir, port);
        let _ = get(s.port, "/", &[]);
        let second = get(s.port, "/", &[]);
        second.header("x-cache-status").to_string()
    };
    assert_eq!(status("proxy_cache_valid 200 10m;"), "MISS");
    assert_eq!(
        status(
            "proxy_cache_valid 200 10m; proxy_ignore_headers Set-Cookie; \
             proxy_hide_header Set-Cookie;"
        ),
        "HIT"
    );
}

/// Varnish passes every request with a Cookie (builtin.vcl vcl_recv). With only
/// analytics cookies that is a warning and the VCL that strips them; with a session
/// cookie it is right (info) and nothing says to strip it.
#[test]
fn varnish_cookies_by_name() {
    if !require("python3") || !require("varnishd") {
        return;
    }
    let (_g, origin) = python_server(CACHEABLE, &[]);
    let v = varnish(origin);
    let url = format!("http://127.0.0.1:{}/", v.port);
    let doc = diagnose_json(&[&url, "-n", "3", "-H", "Cookie: _ga=GA1.1.5; _gid=GA1.2.7"]);
    assert_eq!(role(&doc, "cache"), "varnish", "{}", doc["stack"]);
    let f = finding(&doc, "cdn-not-caching");
    assert_eq!(f["severity"], "warn", "{f}");
    assert!(f["advice"].as_str().unwrap().contains("_ga"), "{f}");
    let a = stack_advice(&doc, "cdn-not-caching");
    assert!(
        a.iter().any(|(s, t, x)| s == "varnish"
            && t == "cache:request-cookie-analytics"
            && x.contains("regsuball")),
        "{a:?}"
    );

    let doc = diagnose_json(&[
        &url,
        "-n",
        "3",
        "-H",
        "Cookie: _ga=GA1.1.5; PHPSESSID=s3cr3t",
    ]);
    let f = finding(&doc, "cdn-not-caching");
    assert_eq!(f["severity"], "info", "{f}");
    assert!(f["advice"].as_str().unwrap().contains("never strip"), "{f}");
    assert!(
        !doc.to_string().contains("s3cr3t"),
        "cookie values stay out"
    );
    let a = stack_advice(&doc, "cdn-not-caching");
    assert!(
        a.iter()
            .any(|(s, t, _)| s == "varnish" && t == "cache:request-cookie-session"),
        "{a:?}"
    );
    assert!(a.iter().all(|(_, _, x)| !x.contains("regsuball")), "{a:?}");
}

/// The stack check's own GET reads the page to its Content-Length (RFC 9112 §6.3),
/// not to the close: a server that keeps the connection open despite
/// `Connection: close` still has its page read, and its `<meta name="generator">`
/// names the application (a check held to its 5 s bound would have lost it).
#[test]
fn the_page_is_read_to_its_length_on_a_kept_connection() {
    if !require("python3") {
        return;
    }
    let (_g, port) = python_server(BARE, &["", "WordPress 6.4.2"]);
    let doc = diagnose_json(&[&format!("http://127.0.0.1:{port}/"), "-n", "3"]);
    assert_eq!(role(&doc, "app"), "wordpress", "{}", doc["stack"]);
    let generator = doc["stack"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["id"] == "wordpress" && e["source"] == "meta generator");
    assert!(generator, "{}", doc["stack"]);
}
