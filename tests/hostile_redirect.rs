//! Issue 28 item 1: the cache audit follows redirects as curl does — credentials
//! stay with the first origin. Two origins on loopback (127.0.0.1 and 127.0.0.2,
//! tests/data/redirect_origin.py), each writing down every request's headers: the
//! second must never see `Authorization`, `Cookie`, `Proxy-Authorization`, a header
//! marked `--redact-header`, or one named as a secret (`X-Api-Key`), while a plain
//! header goes on and a redirect within the first origin keeps them all.

use serde_json::Value;

use crate::hostile_py::PyServer;
use crate::util::{diagnose_json, temp_dir};

/// The requests a server logged: (path, headers).
fn logged(log: &std::path::Path) -> Vec<(String, serde_json::Map<String, Value>)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["path"].as_str().unwrap().to_string(),
                v["headers"].as_object().unwrap().clone(),
            )
        })
        .collect()
}

const SECRETS: [&str; 5] = [
    "Authorization: Bearer s3cr3t-token",
    "Cookie: session=c00kie",
    "Proxy-Authorization: Basic cHJveHk=",
    "X-Tenant: marked-secret",
    "X-Api-Key: k3y",
];

fn args_with_secrets(url: &str) -> Vec<String> {
    let mut a = Vec::new();
    for h in SECRETS {
        a.extend(["-H".to_string(), h.to_string()]);
    }
    a.extend([
        "-H".into(),
        "X-Plain: visible".into(),
        "--redact-header".into(),
        "X-Tenant".into(),
        url.into(),
    ]);
    a
}

/// RFC 9110 §15.4 leaves it to the client; curl (and every browser) sends
/// credentials only to the origin they were given for. A redirect 127.0.0.1 →
/// 127.0.0.2 reaches the second origin without them, and the JSON and text say
/// which were not sent.
#[test]
fn credentials_stay_with_the_first_origin() {
    let dir = temp_dir("redirect-origin");
    let (log_a, log_b) = (dir.join("a.log"), dir.join("b.log"));
    let a = PyServer::start(
        "redirect_origin.py",
        &["127.0.0.1", log_a.to_str().unwrap()],
    );
    let b = PyServer::start(
        "redirect_origin.py",
        &["127.0.0.2", log_b.to_str().unwrap()],
    );
    let landing = format!("http://127.0.0.2:{}/landing", b.port);
    let start = format!("http://127.0.0.1:{}/to?u={landing}", a.port);
    let args = args_with_secrets(&start);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = diagnose_json(&args);
    let cache = &v["cache"];
    assert_eq!(cache["redirects"].as_array().unwrap().len(), 1, "{cache}");
    assert!(
        cache["url"].as_str().unwrap().contains("127.0.0.2"),
        "{cache}"
    );

    // The first origin got everything (the user sent it there).
    let first = logged(&log_a);
    assert!(!first.is_empty());
    for (_, h) in &first {
        assert_eq!(h["authorization"], "Bearer s3cr3t-token");
        assert_eq!(h["cookie"], "session=c00kie");
    }
    // The second origin: the audit's GETs arrived, without one secret.
    let second = logged(&log_b);
    assert!(second.len() >= 2, "the audit went on: {second:?}");
    for (path, h) in &second {
        for secret in [
            "authorization",
            "cookie",
            "proxy-authorization",
            "x-tenant",
            "x-api-key",
        ] {
            assert!(
                !h.contains_key(secret),
                "{path}: {secret} reached 127.0.0.2: {h:?}"
            );
        }
        assert_eq!(h["x-plain"], "visible", "{path}");
        assert!(
            h["host"].as_str().unwrap().starts_with("127.0.0.2"),
            "{h:?}"
        );
    }
    let dropped: Vec<&str> = cache["dropped_headers"]
        .as_array()
        .unwrap_or_else(|| panic!("dropped_headers: {cache}"))
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    for name in [
        "authorization",
        "cookie",
        "proxy-authorization",
        "x-tenant",
        "x-api-key",
    ] {
        assert!(dropped.contains(&name), "{name} in {dropped:?}");
    }
}

/// A redirect within the origin (`/same` → `/page`) keeps every header; a port
/// change alone is another origin (RFC 6454 §4).
#[test]
fn same_origin_keeps_headers_and_another_port_does_not() {
    let dir = temp_dir("redirect-same");
    let log = dir.join("a.log");
    let a = PyServer::start("redirect_origin.py", &["127.0.0.1", log.to_str().unwrap()]);
    let args = args_with_secrets(&format!("http://127.0.0.1:{}/same", a.port));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = diagnose_json(&args);
    assert!(
        v["cache"].get("dropped_headers").is_none(),
        "{}",
        v["cache"]
    );
    let seen = logged(&log);
    let page: Vec<_> = seen.iter().filter(|(p, _)| p == "/page").collect();
    assert!(!page.is_empty(), "{seen:?}");
    for (_, h) in page {
        assert_eq!(h["authorization"], "Bearer s3cr3t-token");
        assert_eq!(h["x-tenant"], "marked-secret");
    }

    let log_c = dir.join("c.log");
    let c = PyServer::start(
        "redirect_origin.py",
        &["127.0.0.1", log_c.to_str().unwrap()],
    );
    let other_port = format!(
        "http://127.0.0.1:{}/to?u=http://127.0.0.1:{}/page",
        a.port, c.port
    );
    let args = args_with_secrets(&other_port);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    diagnose_json(&args);
    let seen = logged(&log_c);
    assert!(!seen.is_empty());
    for (path, h) in &seen {
        assert!(!h.contains_key("authorization"), "{path}: {h:?}");
        assert!(!h.contains_key("cookie"), "{path}: {h:?}");
    }
}
