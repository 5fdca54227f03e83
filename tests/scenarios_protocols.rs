//! Story 5's scenario (issue 34) on both I/O engines, and over HTTP/2 and HTTP/3,
//! against the same real API
//! as `scenarios` (Python's standard library) behind real servers that speak them:
//! nginx over h2c (`listen … http2`, prior knowledge) and Caddy over QUIC, each a
//! reverse proxy to the API. VUs share connections as streams (`--streams 2`), yet
//! each logs in as its own CSV user, carries its own token and cookie, and checks
//! headers (HPACK / QPACK decoded) and bodies (DATA frames); the API's own counters
//! match latscope's per endpoint, and without the token the checks fail as the API
//! refuses. On HTTP/1.1 the same holds on epoll and on io_uring. Bounded by request
//! counts and timeouts, on 127.0.0.1 only.

use std::net::SocketAddr;

use crate::scenarios::{
    assert_each_user_and_counts, assert_refused, get_json, io_uring_refused, load, scenario, API,
    USERS,
};
use crate::util::free_port;
use crate::util_nginx::{nginx_bin, start, temp_dir, write_conf};
use crate::util_real::{python_server, TempDir};

/// nginx over h2c in front of the API: 4 VUs as 2 connections × 2 streams, each
/// its own user (RFC 9113 §8.2.3: the cookie goes in one `cookie` field, which
/// nginx joins for the API). With the token every check passes and the counts
/// match; with a bearer token the API does not know, the checks fail as the API
/// refuses the calls, and `checks>99%` fails the run (exit 99).
#[test]
fn story_five_over_h2c_behind_nginx() {
    let Some(bin) = nginx_bin() else {
        return;
    };
    let (_api, api) = python_server(API, &[]);
    let dir = temp_dir("story_five_over_h2c_behind_nginx");
    let port = free_port();
    write_conf(
        &dir,
        &format!(
            "  server {{\n    listen 127.0.0.1:{port} http2;\n    location / {{\n      \
             proxy_pass http://127.0.0.1:{api};\n      proxy_http_version 1.1;\n      \
             proxy_set_header Connection \"\";\n    }}\n  }}\n"
        ),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let _nginx = start(&bin, &dir, addr);
    let tmp = TempDir::new("scenario-h2");
    tmp.write("users.csv", USERS);
    let via = |auth: &str, name: &str| {
        let text = scenario(api, auth, "")
            .replace(&format!("127.0.0.1:{api}"), &format!("127.0.0.1:{port}"));
        tmp.write(name, &text)
    };
    let good = via("Bearer {{token}}", "good.toml");
    let h2 = ["--http2", "-c", "2", "--streams", "2"];
    let (code, v, stderr) = load(&good, &h2);
    assert_eq!(code, 0, "{stderr}\n{v}");
    assert_eq!(v["http_version"], "HTTP/2", "{v}");
    assert_eq!(v["requests"], 200, "{v}");
    assert_each_user_and_counts(&v, api);

    let before = get_json(api, "/stats");
    let bad = via("Bearer nobody", "bad.toml");
    let (code, v, stderr) = load(&bad, &h2);
    assert_eq!(code, 99, "{stderr}\n{v}");
    let after = get_json(api, "/stats");
    let refused =
        after["unauthorized"].as_u64().unwrap() - before["unauthorized"].as_u64().unwrap();
    assert_refused(&v, refused);
}

/// Caddy over QUIC (`--http3`) in front of the API: the same scenario, 4 VUs as 2
/// connections × 2 streams, every check passes (QPACK-decoded headers, the body
/// from DATA frames) and the counts match.
#[test]
fn story_five_over_http3_behind_caddy() {
    let Some(bin) = crate::util_caddy::caddy_bin() else {
        return;
    };
    let (_api, api) = python_server(API, &[]);
    let caddy = crate::util_caddy::start(
        &bin,
        "scenario-h3",
        &format!("reverse_proxy 127.0.0.1:{api}"),
    );
    let tmp = TempDir::new("scenario-h3");
    tmp.write("users.csv", USERS);
    let text = scenario(api, "Bearer {{token}}", "").replace(
        &format!("http://127.0.0.1:{api}"),
        &format!("https://localhost:{}", caddy.port),
    );
    let file = tmp.write("h3.toml", &text);
    let [flag, ca] = caddy.cacert();
    let args = ["--http3", "-c", "2", "--streams", "2", &flag, &ca];
    let (code, v, stderr) = load(&file, &args);
    assert_eq!(code, 0, "{stderr}\n{v}");
    assert_eq!(v["http_version"], "HTTP/3", "{v}");
    assert_eq!(v["requests"], 200, "{v}");
    assert_each_user_and_counts(&v, api);
}

/// HTTP/1.1 on each engine asked for by name (`auto` takes io_uring where it runs):
/// epoll and io_uring each log every user in once, carry the token and cookie, and
/// count what the API counts; on each, a token the API does not know fails the
/// checks as the API refuses the calls. io_uring runs where the kernel allows it (as
/// `load_engines` tests it), else only epoll is tested, saying so.
#[test]
fn story_five_on_both_engines() {
    for engine in ["epoll", "io_uring"] {
        let (_api, api) = python_server(API, &[]);
        let tmp = TempDir::new(&format!("scenario-{engine}"));
        tmp.write("users.csv", USERS);
        let good = tmp.write("good.toml", &scenario(api, "Bearer {{token}}", ""));
        let (code, v, stderr) = load(&good, &["--engine", engine]);
        if io_uring_refused(engine, code, &stderr) {
            return;
        }
        assert_eq!(code, 0, "{engine}: {stderr}\n{v}");
        assert_eq!(v["engine"], engine, "{v}");
        assert_eq!(v["requests"], 200, "{v}");
        assert_each_user_and_counts(&v, api);

        let bad = tmp.write("bad.toml", &scenario(api, "Bearer nobody", ""));
        let (code, v, stderr) = load(&bad, &["--engine", engine]);
        assert_eq!(code, 99, "{engine}: {stderr}\n{v}");
        let stats = get_json(api, "/stats");
        assert_refused(&v, stats["unauthorized"].as_u64().unwrap());
    }
}
