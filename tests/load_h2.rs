//! The load engine's own HTTP/2 client against real servers: nginx over h2c
//! (exact counts with `-n`, status classes, body sizes, HEAD, a POST body under
//! flow control, and connections rolled over by nginx's GOAWAY after
//! `keepalive_requests`, request fields indexed in nginx's HPACK table), and a
//! small Python server that resets streams, sends
//! GOAWAY, breaks the protocol or never answers, for the error classes.

use std::net::SocketAddr;
use std::time::Duration;

use crate::util::free_port;
use crate::util::{json_of, run_within};
use crate::util_nginx::{nginx_bin, start, temp_dir, write_conf};
use crate::util_real::python_server;
use crate::util_require::require;
use crate::util_wire::ChildGuard;

/// Runs `load ARGS --json --no-save` (≤ 60 s); its exit code and JSON.
fn load(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["load"];
    all.extend_from_slice(args);
    all.extend(["--json", "--no-save"]);
    let out = run_within(&all, Duration::from_secs(60));
    (out.status.code(), json_of(&out))
}

/// nginx with `listen … http2` (h2c, prior knowledge), 100 requests per
/// connection, an access log, a 1 KiB file, 404 and 503 locations, and one that
/// answers a POST.
fn nginx(name: &str) -> Option<(ChildGuard, std::path::PathBuf, String)> {
    let bin = nginx_bin()?;
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/1k"), vec![b'a'; 1024]).unwrap();
    let port = free_port();
    let d = dir.display();
    write_conf(
        &dir,
        &format!(
            "  keepalive_requests 100;\n  server {{\n    listen 127.0.0.1:{port} http2;\n    \
             access_log {d}/access.log;\n    root {d}/www;\n    location = /1k {{ }}\n    \
             location = /missing {{ return 404; }}\n    location = /broken {{ return 503; }}\n    \
             location = /post {{ return 200 \"got it\\n\"; }}\n  }}\n"
        ),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let guard = start(&bin, &dir, addr);
    Some((guard, dir, format!("http://127.0.0.1:{port}")))
}

fn access_lines(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("access.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// RFC 9113 over h2c on nginx: `-n 1000 -c 2 --streams 10` is exactly 1000
/// requests, all 200 with the same size (the 1 KiB body and the head's fields),
/// nginx logs exactly 1000 (nothing sent twice), and the connections nginx closes
/// with GOAWAY after 100 requests each are replaced without an error (§6.8).
/// HEAD gets heads only (RFC 9110 §9.3.2); 404 and 503 are counted in their
/// classes; a 200 KB POST body goes out under nginx's flow-control windows.
#[test]
fn h2c_on_nginx_counts_exactly() {
    let Some((_nginx, dir, base)) = nginx("h2c_on_nginx_counts_exactly") else {
        return;
    };
    let url = format!("{base}/1k");
    let (code, j) = load(&[&url, "--http2", "-n", "1000", "-c", "2", "--streams", "10"]);
    assert_eq!(code, Some(0), "{j}");
    assert_eq!(
        (j["requests"].as_u64(), j["ok"].as_u64()),
        (Some(1000), Some(1000)),
        "{j}"
    );
    assert_eq!(j["statuses"]["200"], 1000, "{j}");
    let bytes = j["bytes"].as_u64().unwrap();
    assert_eq!(bytes % 1000, 0, "every response the same size: {bytes}");
    let each = bytes / 1000;
    assert!(
        (1024 + 50..1024 + 400).contains(&each),
        "{each} bytes a response"
    );
    let opened = j["connections_opened"].as_u64().unwrap();
    assert!(
        (10..=14).contains(&opened),
        "100 requests a connection: {opened} opened"
    );
    assert_eq!(access_lines(&dir), 1000);

    let (code, j) = load(&[
        &url,
        "--http2",
        "-X",
        "HEAD",
        "-n",
        "50",
        "-c",
        "1",
        "--streams",
        "5",
    ]);
    assert_eq!((code, j["ok"].as_u64()), (Some(0), Some(50)), "{j}");
    let head = j["bytes"].as_u64().unwrap();
    assert!(
        head > 0 && head % 50 == 0 && head / 50 == each - 1024,
        "{head}"
    );

    for (path, status, class) in [
        ("/missing", "404", "http_4xx"),
        ("/broken", "503", "http_5xx"),
    ] {
        let (code, j) = load(&[
            &format!("{base}{path}"),
            "--http2",
            "-n",
            "30",
            "-c",
            "1",
            "--streams",
            "4",
        ]);
        assert_eq!(code, Some(1), "every request failed: {j}");
        assert_eq!(
            (j["requests"].as_u64(), j["statuses"][status].as_u64()),
            (Some(30), Some(30)),
            "{j}"
        );
        assert_eq!(j["errors"][class], 30, "{j}");
    }

    let body = dir.join("post-body");
    std::fs::write(&body, vec![b'b'; 200_000]).unwrap();
    let data = format!("@{}", body.display());
    let (code, j) = load(&[
        &format!("{base}/post"),
        "--http2",
        "-X",
        "POST",
        "--data",
        &data,
        "-n",
        "20",
        "-c",
        "1",
        "--streams",
        "4",
    ]);
    assert_eq!((code, j["ok"].as_u64()), (Some(0), Some(20)), "{j}");
    assert_eq!(j["statuses"]["200"], 20, "{j}");
    assert_eq!(access_lines(&dir), 1000 + 50 + 60 + 20);
}

/// HPACK on the request side (RFC 7541 §6.1, §6.2.1): each connection adds a
/// request's fields to nginx's dynamic table the first time and names them by
/// index afterwards, and a second and third endpoint's insertions shift the first's
/// indexes. nginx, which decodes the table exactly, logs every request with the
/// path and header of its own endpoint, as many as latscope counted per endpoint.
#[test]
fn indexed_request_fields_reach_nginx_intact() {
    let Some(bin) = nginx_bin() else {
        return;
    };
    let dir = temp_dir("indexed_request_fields_reach_nginx_intact");
    std::fs::create_dir_all(dir.join("www")).unwrap();
    for f in ["a", "b", "c"] {
        std::fs::write(dir.join("www").join(f), f).unwrap();
    }
    let port = free_port();
    let d = dir.display();
    write_conf(
        &dir,
        &format!(
            "  log_format who '$uri $http_x_who $http_user_agent';\n  server {{\n    \
             listen 127.0.0.1:{port} http2;\n    access_log {d}/access.log who;\n    \
             root {d}/www;\n  }}\n"
        ),
    );
    let _nginx = start(&bin, &dir, format!("127.0.0.1:{port}").parse().unwrap());
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        format!(
            r#"base_url = "http://127.0.0.1:{port}"
[[request]]
name = "a"
path = "/a"
headers = {{ X-Who = "alpha-{port}" }}
[[request]]
name = "b"
path = "/b"
headers = {{ X-Who = "bravo", User-Agent = "another agent" }}
[[request]]
name = "c"
path = "/c"
headers = {{ X-Who = "charlie-with-a-longer-value" }}
"#
        ),
    )
    .unwrap();
    let (code, j) = load(&[
        "-f",
        file.to_str().unwrap(),
        "--http2",
        "-n",
        "600",
        "-c",
        "3",
        "--streams",
        "10",
    ]);
    assert_eq!((code, j["ok"].as_u64()), (Some(0), Some(600)), "{j}");
    let log = std::fs::read_to_string(dir.join("access.log")).unwrap();
    let mut seen = std::collections::BTreeMap::new();
    for line in log.lines() {
        let (uri, rest) = line.split_once(' ').unwrap();
        let want = match uri {
            "/a" => format!("alpha-{port} latscope/"),
            "/b" => "bravo another agent".to_string(),
            "/c" => "charlie-with-a-longer-value latscope/".to_string(),
            _ => panic!("{line}"),
        };
        assert!(rest.starts_with(&want), "{line}");
        *seen
            .entry(uri.trim_start_matches('/').to_string())
            .or_insert(0u64) += 1;
    }
    for e in j["endpoints"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        assert_eq!(
            Some(&e["requests"].as_u64().unwrap()),
            seen.get(name),
            "{name}: {seen:?}"
        );
    }
    assert_eq!(seen.values().sum::<u64>(), 600);
}

/// A raw HTTP/2 server in Python (no HTTP/2 library), printing its port. Modes:
/// `mixed` resets every 4th stream (RST_STREAM INTERNAL_ERROR), answers the next
/// with 503, the others with 200 and a 5-byte body, and after 5 streams on a
/// connection sends GOAWAY naming the last and stops reading requests; `garbage`
/// answers with DATA on stream 0; `silent` never answers.
const SERVER: &str = r#"
import socket, struct, sys, threading
mode = sys.argv[1]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
print(srv.getsockname()[1], flush=True)
lock = threading.Lock()
count = [0]
def frame(t, f, s, p=b""):
    return struct.pack(">I", len(p))[1:] + bytes([t, f]) + struct.pack(">I", s) + p
def exact(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            return None
        b += x
    return b
def serve(c):
    if exact(c, 24) is None:
        return
    c.sendall(frame(4, 0, 0))
    served, gone = 0, False
    while True:
        h = exact(c, 9)
        if h is None:
            break
        n, t, f = int.from_bytes(h[:3], "big"), h[3], h[4]
        s = int.from_bytes(h[5:9], "big") & 0x7FFFFFFF
        if exact(c, n) is None:
            break
        if t == 4 and not f & 1:
            c.sendall(frame(4, 1, 0))
            continue
        if t != 1 or gone or mode == "silent":
            continue
        if mode == "garbage":
            c.sendall(frame(0, 0, 0, b"x"))
            continue
        with lock:
            k = count[0]
            count[0] += 1
        served += 1
        if k % 4 == 1:
            out = frame(3, 0, s, struct.pack(">I", 2))
        elif k % 4 == 2:
            out = frame(1, 5, s, b"\x48\x03503")
        else:
            out = frame(1, 4, s, b"\x88\x0f\x0d\x015") + frame(0, 1, s, b"hello")
        if served == 5:
            out += frame(7, 0, 0, struct.pack(">II", s, 0))
            gone = True
        c.sendall(out)
        if gone:
            c.shutdown(socket.SHUT_WR)
    c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// Starts [`SERVER`] in `mode`; its guard and URL.
fn python_h2(mode: &str) -> (ChildGuard, String) {
    let (guard, port) = python_server(SERVER, &[mode]);
    (guard, format!("http://127.0.0.1:{port}/"))
}

/// RFC 9113 §6.4, §6.8: RST_STREAM fails only its request (`reset`), a 503 is
/// `http_5xx`, and GOAWAY after 5 streams moves the next request to a new
/// connection without an error: 40 sequential requests are 20 ok, 10 reset,
/// 10 http_5xx over exactly 8 connections, the bytes those 20 carried (5-byte
/// body and a `content-length: 5` field each). A frame on the wrong stream is a
/// connection error (`protocol`, §5.4.1); no answer is a `timeout`.
#[test]
fn h2_error_classes_from_a_raw_server() {
    if !require("python3") {
        return;
    }
    let (_server, url) = python_h2("mixed");
    let (code, j) = load(&[&url, "--http2", "-n", "40", "-c", "1", "--streams", "1"]);
    assert_eq!(code, Some(0), "{j}");
    assert_eq!(
        (j["requests"].as_u64(), j["ok"].as_u64()),
        (Some(40), Some(20)),
        "{j}"
    );
    assert_eq!(
        (
            j["errors"]["reset"].as_u64(),
            j["errors"]["http_5xx"].as_u64()
        ),
        (Some(10), Some(10)),
        "{j}"
    );
    assert_eq!(j["connections_opened"], 8, "{j}");
    assert_eq!(j["bytes"], 20 * (5 + "content-length".len() + 1 + 4), "{j}");

    let (_server, url) = python_h2("garbage");
    let (code, j) = load(&[&url, "--http2", "-n", "3", "-c", "1"]);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(j["errors"]["protocol"], 3, "{j}");
    assert_eq!(
        j["connections_opened"], 3,
        "a new connection after each error: {j}"
    );

    let (_server, url) = python_h2("silent");
    let (code, j) = load(&[&url, "--http2", "-n", "2", "-c", "1", "--timeout", "300ms"]);
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(j["errors"]["timeout"], 2, "{j}");
    assert_eq!(
        j["connections_opened"], 1,
        "a timed-out stream is reset, the connection kept: {j}"
    );
}
