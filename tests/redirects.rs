//! Issue 30 item 7: redirects (RFC 9110 §15.4). A real nginx on 127.0.0.1 answers
//! `/blog` with a 301 to `/blog/` (the page), `/a` → `/b` → `/blog/` with 302s and
//! `/loop` with a 301 to itself. Without `-L` the 3xx is named as what it is (probe,
//! diagnose, load); with `-L` the page is measured and the chain reported and priced;
//! `--max-redirs` and loops bound it; across origins (tests/data/redirect_origin.py
//! on 127.0.0.1 and 127.0.0.2) the credentials stay behind, as curl does.

use serde_json::Value;

use crate::hostile_py::PyServer;
use crate::util::{diagnose_json, free_port, run, run_json, temp_dir};
use crate::util_nginx::{nginx_bin, start, write_conf};
use crate::util_wire::ChildGuard;

/// nginx with the redirects above; returns the guard and `http://127.0.0.1:PORT`.
fn nginx(name: &str) -> Option<(ChildGuard, String)> {
    let bin = nginx_bin()?;
    let dir = crate::util_nginx::temp_dir(name);
    let port = free_port();
    write_conf(
        &dir,
        &format!(
            "  server {{\n    listen 127.0.0.1:{port};\n    \
             location = /blog {{ return 301 /blog/; }}\n    \
             location = /a {{ return 302 /b; }}\n    \
             location = /b {{ return 302 /blog/; }}\n    \
             location = /loop {{ return 301 /loop; }}\n    \
             location = /blog/ {{ return 200 \"the page\\n\"; }}\n  }}\n"
        ),
    );
    let guard = start(&bin, &dir, format!("127.0.0.1:{port}").parse().unwrap());
    Some((guard, format!("http://127.0.0.1:{port}")))
}

fn ids(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap_or_else(|| panic!("findings: {findings}"))
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn finding<'a>(findings: &'a Value, id: &str) -> &'a Value {
    findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {findings}"))
}

/// The one probe entry of `latscope probe --json`.
fn probe(args: &[&str]) -> Value {
    let mut all = vec!["probe", "--no-save", "--json", "-n", "2"];
    all.extend_from_slice(args);
    let v = run_json(&all);
    v.get("results").map_or(v.clone(), |r| r[0].clone())
}

/// Without -L a 301 is the answer measured, and named so in the findings, the text
/// and the summary (§15.4.2); the page itself is quiet. With -L the page is
/// measured, the chain reported with its cost, and one fast same-origin hop is not a
/// finding while two hops are (`redirect-chain`).
#[test]
fn probe_names_a_redirect_and_follows_it_with_location() {
    let Some((_nginx, base)) = nginx("redirect-probe") else {
        return;
    };
    let blog = format!("{base}/blog");
    let v = probe(&[&blog]);
    assert_eq!(v["status"], 301, "{v}");
    let f = finding(&v["findings"], "redirect-not-followed");
    assert!(
        f["title"].as_str().unwrap().contains("301 redirect to"),
        "{f}"
    );
    let out = run(&["probe", "--no-save", "-n", "2", &blog]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("301 (a redirect, not the page: -L follows it)"),
        "{text}"
    );
    assert!(text.contains("redirect-not-followed"), "{text}");

    // The page: quiet.
    let v = probe(&[&format!("{base}/blog/")]);
    assert_eq!(v["status"], 200);
    assert!(!ids(&v["findings"])
        .iter()
        .any(|i| i.starts_with("redirect")));

    // -L: the page, one hop reported (fast on loopback: no finding).
    let v = probe(&["-L", &blog]);
    assert_eq!(v["status"], 200, "{v}");
    assert_eq!(v["target"], format!("{base}/blog/"));
    let hops = v["redirects"].as_array().expect("redirects");
    assert_eq!(hops.len(), 1);
    assert_eq!(hops[0]["status"], 301);
    assert!(hops[0]["location"].as_str().unwrap().ends_with("/blog/"));
    assert!(hops[0]["time_ms"].as_f64().unwrap() > 0.0);
    assert!(!ids(&v["findings"])
        .iter()
        .any(|i| i.starts_with("redirect")));

    // Two hops: a chain, priced (one round trip each, same origin).
    let v = probe(&["-L", &format!("{base}/a")]);
    assert_eq!(v["status"], 200);
    assert_eq!(v["redirects"].as_array().unwrap().len(), 2);
    let f = finding(&v["findings"], "redirect-chain");
    assert_eq!(f["evidence"]["hops"], 2, "{f}");
    assert_eq!(f["evidence"]["round_trips"], 2, "{f}");
    let out = run(&["probe", "--no-save", "-n", "2", "-L", &format!("{base}/a")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("redirects (-L)"), "{text}");
    assert!(text.contains("302 "), "{text}");
}

/// Bounded chains: `--max-redirs 1` stops a chain of two, a loop stops at once (both
/// exit 1 saying why, never a hang); `--max-redirs` without -L is a usage error.
#[test]
fn chains_are_bounded() {
    let Some((_nginx, base)) = nginx("redirect-bounds") else {
        return;
    };
    let a = format!("{base}/a");
    let out = run(&["probe", "--no-save", "-L", "--max-redirs", "1", &a]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stopped after 1 redirects"), "{err}");
    assert!(err.contains("--max-redirs"), "{err}");

    let out = run(&["probe", "--no-save", "-L", &format!("{base}/loop")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loop"), "{err}");

    let out = run(&["probe", "--no-save", "--max-redirs", "3", &a]);
    assert_eq!(out.status.code(), Some(2));
}

/// Diagnose: without -L the verdict and "where the time goes" name the 301; with -L
/// the page is diagnosed and the summary says what the chain cost.
#[test]
fn diagnose_names_the_redirect_and_follows_it() {
    let Some((_nginx, base)) = nginx("redirect-diagnose") else {
        return;
    };
    let blog = format!("{base}/blog");
    let v = diagnose_json(&["-n", "2", &blog]);
    let d = v.get("results").map_or(v.clone(), |r| r[0].clone());
    assert!(
        ids(&d["findings"]).contains(&"redirect-not-followed".to_string()),
        "{d}"
    );
    let summary = d["summary"].as_str().unwrap_or_default();
    assert!(summary.starts_with("a 301 redirect to "), "{summary}");
    assert!(
        summary.contains("/blog/ answered, not the page (-L follows it)"),
        "{summary}"
    );

    let v = diagnose_json(&["-n", "2", "-L", &format!("{base}/a")]);
    let d = v.get("results").map_or(v.clone(), |r| r[0].clone());
    assert!(
        !ids(&d["findings"]).contains(&"redirect-not-followed".to_string()),
        "{d}"
    );
    assert!(
        ids(&d["findings"]).contains(&"redirect-chain".to_string()),
        "{d}"
    );
    let summary = d["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("Before it, 2 redirects cost"), "{summary}");
}

/// Load: without -L the 301s are counted as successes, as k6 and wrk count them, but
/// said — a `Redirects (3xx)` line and a `redirect-not-followed` finding; with -L the
/// chain is resolved once before the run and every request of the load gets the page.
#[test]
fn load_says_what_it_counts() {
    let Some((_nginx, base)) = nginx("redirect-load") else {
        return;
    };
    let blog = format!("{base}/blog");
    let common = ["load", "--no-save", "--no-tui", "-n", "40", "-c", "2"];
    let mut args = common.to_vec();
    args.extend(["--json", &blog]);
    let v = run_json(&args);
    let f = finding(&v["findings"], "redirect-not-followed");
    assert_eq!(f["evidence"]["redirects"], 40, "{f}");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("not errors, but not the page either"),
        "{f}"
    );
    let mut args = common.to_vec();
    args.push(&blog);
    let out = run(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Redirects (3xx):"), "{text}");

    let mut args = common.to_vec();
    args.extend(["--json", "-L", &blog]);
    let v = run_json(&args);
    assert!(
        !ids(&v["findings"]).contains(&"redirect-not-followed".to_string()),
        "{v}"
    );
    assert_eq!(v["target"], format!("{base}/blog/"), "{v}");
    assert_eq!(v["redirects"].as_array().map(Vec::len), Some(1), "{v}");
    let statuses = v["statuses"].to_string();
    assert!(
        statuses.contains("\"200\":40") && !statuses.contains("301"),
        "{statuses}"
    );
}

/// curl's rules across origins with -L (RFC 9110 §15.4 leaves them to the client):
/// the second origin (127.0.0.2) never sees Authorization, Cookie,
/// Proxy-Authorization or a header marked secret, a plain header goes on, and the
/// JSON says which were not sent; a redirect to file: is not followed.
#[test]
fn location_keeps_credentials_with_the_first_origin() {
    let dir = temp_dir("redirect-location");
    let (log_a, log_b) = (dir.join("a.log"), dir.join("b.log"));
    let a = PyServer::start(
        "redirect_origin.py",
        &["127.0.0.1", log_a.to_str().unwrap()],
    );
    let b = PyServer::start(
        "redirect_origin.py",
        &["127.0.0.2", log_b.to_str().unwrap()],
    );
    let start = format!(
        "http://127.0.0.1:{}/to?u=http://127.0.0.2:{}/landing",
        a.port, b.port
    );
    let v = probe(&[
        "-L",
        "-H",
        "Authorization: Bearer s3cr3t-token",
        "-H",
        "Cookie: session=c00kie",
        "-H",
        "Proxy-Authorization: Basic cHJveHk=",
        "-H",
        "X-Tenant: marked-secret",
        "--redact-header",
        "X-Tenant",
        "-H",
        "X-Plain: visible",
        &start,
    ]);
    assert_eq!(v["status"], 200, "{v}");
    let dropped = v["dropped_headers"].to_string();
    for name in ["authorization", "cookie", "proxy-authorization", "x-tenant"] {
        assert!(dropped.contains(name), "{name} in {dropped}");
    }
    let second = std::fs::read_to_string(&log_b).unwrap();
    assert!(second.lines().count() >= 2, "{second}");
    for secret in ["s3cr3t", "c00kie", "cHJveHk", "marked-secret"] {
        assert!(!second.contains(secret), "{secret} reached 127.0.0.2");
    }
    assert!(second.contains("visible"));
    let first = std::fs::read_to_string(&log_a).unwrap();
    assert!(first.contains("s3cr3t-token"));

    let out = run(&[
        "probe",
        "--no-save",
        "-L",
        &format!("http://127.0.0.1:{}/to?u=file:///etc/passwd", a.port),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scheme not followed"), "{err}");
}
