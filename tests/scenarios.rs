//! Scenarios as real users behave (issue 34), against a real API written here in
//! Python's standard library: a login that issues a bearer token and a session
//! cookie, endpoints that require both and count their own requests, and a CSV of
//! users. Each VU logs in once (`[[setup]]`), carries its token (`extract`,
//! `{{token}}`) and its cookie (the per-VU jar), and checks what comes back; the
//! server's own counters must match latscope's per endpoint. Every run is bounded by
//! a request count and a timeout, on 127.0.0.1 only.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

use crate::util::{json_of, latscope, output_within, run_within};
use crate::util_real::{python_server, TempDir};

/// The API. POST /login {"user","password"} → {"token","user"} and
/// `Set-Cookie: session=…`; GET /me and GET /orders/USER need `Authorization:
/// Bearer tok-USER` *and* the cookie `session=sess-USER` of the same user (401
/// otherwise); GET /stats (not counted) says what it saw.
pub const API: &str = r#"
import json, threading, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
USERS = {"kim": "pw1", "lee": "pw2", "park": "pw3", "choi": "pw4"}
lock = threading.Lock()
stats = {"login": 0, "me": 0, "orders": 0, "unauthorized": 0, "no_cookie": 0,
         "logins_by_user": {}, "bad_login": 0}

def count(k):
    with lock:
        stats[k] += 1

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def reply(self, status, obj, extra=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
    def who(self):
        auth = self.headers.get("Authorization", "")
        cookie = self.headers.get("Cookie", "")
        user = auth[len("Bearer tok-"):] if auth.startswith("Bearer tok-") else None
        if user not in USERS:
            count("unauthorized")
            return None
        if ("session=sess-" + user) not in [c.strip() for c in cookie.split(";")]:
            count("no_cookie")
            return None
        return user
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.path != "/login":
            return self.reply(404, {"error": "no such path"})
        count("login")
        try:
            req = json.loads(body)
        except Exception:
            req = {}
        user = req.get("user")
        if USERS.get(user) != req.get("password"):
            count("bad_login")
            return self.reply(403, {"error": "bad credentials"})
        with lock:
            stats["logins_by_user"][user] = stats["logins_by_user"].get(user, 0) + 1
        self.reply(200, {"token": "tok-" + user, "user": user},
                   [("Set-Cookie", "session=sess-" + user + "; Path=/; HttpOnly")])
    def do_GET(self):
        if self.path == "/stats":
            with lock:
                return self.reply(200, stats)
        if self.path == "/me":
            count("me")
            user = self.who()
            if user is None:
                return self.reply(401, {"error": "unauthorized"})
            return self.reply(200, {"user": user, "plan": "pro"})
        if self.path.startswith("/orders/"):
            count("orders")
            user = self.who()
            if user is None or self.path != "/orders/" + user:
                return self.reply(401, {"error": "unauthorized"})
            return self.reply(200, {"user": user, "orders": [{"id": 1, "owner": user}]})
        self.reply(404, {"error": "no such path"})
    def log_message(self, *a):
        pass

class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

pub const USERS: &str = "user,password\nkim,pw1\nlee,pw2\npark,pw3\nchoi,pw4\n";

/// The story-5 scenario: each VU logs in with its CSV row, keeps the token and the
/// cookie, then walks /me and /orders/USER with checks. `auth` is the
/// Authorization header of the calls; `extra` goes at the top of the file.
pub fn scenario(port: u16, auth: &str, extra: &str) -> String {
    format!(
        r#"base_url = "http://127.0.0.1:{port}"
data = "users.csv"
thresholds = ["checks>99%"]
{extra}

[load]
connections = 4
requests = 200
timeout = "5s"

[[setup]]
name = "login"
method = "POST"
path = "/login"
headers = {{ Content-Type = "application/json" }}
body = '{{"user":"{{{{user}}}}","password":"{{{{password}}}}"}}'
check = {{ status = 200, json = {{ user = "{{{{user}}}}" }} }}
extract = {{ token = {{ json = "$.token" }} }}

[[request]]
name = "me"
path = "/me"
headers = {{ Authorization = "{auth}" }}
[request.check]
status = 200
headers = {{ Content-Type = "application/json" }}
json = {{ "$.user" = "{{{{user}}}}", plan = "pro" }}

[[request]]
name = "orders"
path = "/orders/{{{{user}}}}"
headers = {{ Authorization = "{auth}" }}
check = {{ status = [200], body_contains = '"owner": "{{{{user}}}}"' }}
"#
    )
}

/// GET `path` from the API (one HTTP/1.0 request, read to the end).
pub fn get_json(port: u16, path: &str) -> Value {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `latscope load --json -f FILE` with more arguments; returns (exit code, JSON).
pub fn load(file: &str, more: &[&str]) -> (i32, Value, String) {
    load_with(file, more, &[])
}

/// [`load`] with more environment variables (the test hooks).
pub fn load_with(file: &str, more: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut cmd = latscope();
    cmd.args(["load", "--json", "--no-save", "-f", file])
        .args(more)
        .envs(env.iter().copied());
    let out = output_within(cmd, Duration::from_secs(60)).0;
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.stdout.is_empty() {
        return (code, Value::Null, stderr);
    }
    (code, json_of(&out), stderr)
}

/// Whether `--engine io_uring` was refused by this host (disabled, seccomp, a ring
/// that cannot be set up: "--engine io_uring: …"), saying so: the test then ran on
/// epoll only. A plan io_uring does not support says "does not support" and fails.
pub fn io_uring_refused(engine: &str, code: i32, stderr: &str) -> bool {
    let refused = engine == "io_uring" && code != 0 && stderr.contains("--engine io_uring:");
    if refused {
        eprintln!("io_uring not available here ({stderr}): epoll tested only");
    }
    refused
}

/// The sum of a column of a run's timeline (0 for a row without it).
fn timeline_sum(v: &Value, key: &str) -> u64 {
    v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_u64().unwrap_or(0))
        .sum()
}

pub fn endpoint<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}: {}", v["endpoints"]))
}

/// The API's counts and latscope's agree per endpoint, every user logged in once,
/// and nothing reached the API without its token and cookie.
pub fn assert_each_user_and_counts(v: &Value, port: u16) {
    let stats = get_json(port, "/stats");
    for u in ["kim", "lee", "park", "choi"] {
        assert_eq!(stats["logins_by_user"][u], 1, "{stats}\n{v}");
    }
    assert_eq!(stats["unauthorized"], 0, "{stats}");
    assert_eq!(stats["no_cookie"], 0, "{stats}");
    for name in ["login", "me", "orders"] {
        let e = endpoint(v, name);
        assert_eq!(e["requests"], stats[name], "{name}: {e} vs {stats}");
        assert_eq!(e["ok"], e["requests"], "{name}: {e}");
        let c = &e["checks"];
        assert!(c["total"].as_u64().unwrap() > 0, "{name}: {c}");
        assert_eq!(c["passed"], c["total"], "{name}: {c}");
    }
    // me: status, the Content-Type header and two JSON paths per response.
    let me = endpoint(v, "me");
    assert_eq!(me["checks"]["total"], me["requests"].as_u64().unwrap() * 4);
    assert_eq!(v["thresholds"][0]["ok"], true, "{}", v["thresholds"]);
}

/// Story 5 end to end: every VU logs in once as its own CSV user (the server saw
/// each of the 4 users log in exactly once), carries the token and the session
/// cookie (the server saw no call without them), every check passes, the
/// `checks>99%` threshold holds (exit 0), and the server's own counts per endpoint
/// are latscope's.
#[test]
fn each_vu_logs_in_and_carries_token_and_cookie() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-login");
    dir.write("users.csv", USERS);
    let file = dir.write("api.toml", &scenario(port, "Bearer {{token}}", ""));
    let (code, v, stderr) = load(&file, &[]);
    assert_eq!(code, 0, "{stderr}\n{v}");
    assert_each_user_and_counts(&v, port);
    assert_eq!(get_json(port, "/stats")["bad_login"], 0);
    assert_eq!(v["requests"], 200, "{v}");
    assert_eq!(v["checks"]["passed"], v["checks"]["total"]);
    assert_eq!(v["checks"]["passed_pct"], 100.0);
    assert_eq!(v["http_version"], "HTTP/1.1");
    // The document with checks is its type (reads back and writes the same JSON).
    let latscope::schema::Summary::Load(l) = crate::schema::reads_back("load", &v) else {
        panic!()
    };
    assert_eq!(
        l.checks.unwrap().total,
        v["checks"]["total"].as_u64().unwrap()
    );
}

/// Without the token the API answers 401: the checks fail and say which (`me
/// status`, `me json $.user`, …), the `checks>99%` threshold fails (exit 99), and
/// what the server refused is what latscope counted as failed.
#[test]
fn without_the_token_checks_fail() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-notoken");
    dir.write("users.csv", USERS);
    let file = dir.write("api.toml", &scenario(port, "Bearer none", ""));
    let (code, v, stderr) = load(&file, &[]);
    assert_eq!(code, 99, "{stderr}\n{v}");
    let stats = get_json(port, "/stats");
    assert_eq!(endpoint(&v, "me")["requests"], stats["me"]);
    assert_refused(&v, stats["unauthorized"].as_u64().unwrap());
}

/// What a run without a token the API knows shows: the API refused (`refused`)
/// every call latscope made to `me` and `orders`; `me`'s status and JSON checks
/// fail on every call while its content-type check passes (the 401 is JSON too),
/// no `orders` check passes, the logins pass theirs, and `checks>99%` fails.
pub fn assert_refused(v: &Value, refused: u64) {
    let me = endpoint(v, "me");
    let orders = endpoint(v, "orders");
    assert_eq!(me["ok"], 0, "{me}");
    assert_eq!(
        me["requests"].as_u64().unwrap() + orders["requests"].as_u64().unwrap(),
        refused,
        "{me} {orders}"
    );
    assert_eq!(me["checks"]["failed"]["status"], me["requests"], "{me}");
    assert_eq!(
        me["checks"]["failed"]["json $.user"], me["requests"],
        "{me}"
    );
    assert!(
        me["checks"]["failed"].get("header content-type").is_none(),
        "{me}"
    );
    assert_eq!(orders["checks"]["passed"], 0, "{orders}");
    assert_eq!(
        endpoint(v, "login")["checks"]["failed"],
        serde_json::json!({})
    );
    assert!(v["checks"]["passed_pct"].as_f64().unwrap() < 99.0);
    assert_eq!(v["thresholds"][0]["ok"], false, "{}", v["thresholds"]);
}

/// Checks in the open model (`--rate`, no VUs): every arrival's response is judged,
/// a failing check is counted per endpoint without touching latency or errors, and
/// `checks>99%` fails the run; the server's own count of the failing endpoint is
/// latscope's.
#[test]
fn checks_run_in_the_open_model() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-open-checks");
    let file = dir.write(
        "open.toml",
        &format!(
            r#"base_url = "http://127.0.0.1:{port}"
thresholds = ["checks>99%"]

[[request]]
name = "me"
path = "/me"
check = {{ status = 200, json = {{ "$.error" = "unauthorized" }} }}

[[request]]
name = "stats"
path = "/stats"
check = {{ status = 200, json = {{ "$.bad_login" = "0" }}, body_contains = "logins_by_user" }}
"#
        ),
    );
    let (code, v, stderr) = load(&file, &["--rate", "40", "-d", "2s"]);
    assert_eq!(code, 99, "checks>99% fails: {stderr}\n{v}");
    assert_eq!(v["model"], "open", "{v}");
    let me = endpoint(&v, "me");
    let stats = endpoint(&v, "stats");
    let n = me["requests"].as_u64().unwrap();
    assert!(n >= 10, "{me}");
    assert_eq!(get_json(port, "/stats")["me"], n, "the server's count");
    // The status check fails on every arrival, the JSON one passes on every one.
    assert_eq!(me["checks"]["failed"]["status"], n, "{me}");
    assert!(me["checks"]["failed"].get("json $.error").is_none(), "{me}");
    assert_eq!(me["ok"], 0, "{me}");
    assert_eq!(stats["checks"]["failed"], serde_json::json!({}), "{stats}");
    assert_eq!(
        stats["checks"]["passed"], stats["checks"]["total"],
        "{stats}"
    );
    assert!(stats["checks"]["total"].as_u64().unwrap() >= 10, "{stats}");
    assert!(
        v["checks"]["passed_pct"].as_f64().unwrap() < 99.0,
        "{}",
        v["checks"]
    );
    assert_eq!(v["thresholds"][0]["ok"], false, "{}", v["thresholds"]);
    // The timeline's seconds hold the same checks, split by when they were judged.
    let c = &v["checks"];
    assert_eq!(
        timeline_sum(&v, "checks"),
        c["total"].as_u64().unwrap(),
        "{c}"
    );
    assert_eq!(
        timeline_sum(&v, "checks_failed"),
        c["total"].as_u64().unwrap() - c["passed"].as_u64().unwrap(),
        "{c}"
    );
}

/// The cookie jar both ways: with `--no-cookies` (as `cookies = false`) the token
/// alone is refused (the server counts calls without the session cookie), so the
/// checks fail.
#[test]
fn without_the_cookie_jar_checks_fail() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-nocookie");
    dir.write("users.csv", USERS);
    let file = dir.write("api.toml", &scenario(port, "Bearer {{token}}", ""));
    let (code, v, stderr) = load(&file, &["--no-cookies"]);
    assert_eq!(code, 99, "{stderr}\n{v}");
    let stats = get_json(port, "/stats");
    let calls = stats["me"].as_u64().unwrap() + stats["orders"].as_u64().unwrap();
    assert!(calls > 0);
    assert_eq!(stats["no_cookie"].as_u64().unwrap(), calls, "{stats}");
    assert_eq!(stats["unauthorized"], 0, "the token was sent: {stats}");
    let me = endpoint(&v, "me");
    assert_eq!(me["checks"]["failed"]["status"], me["requests"], "{me}");
    assert_eq!(endpoint(&v, "orders")["checks"]["passed"], 0);
}

/// `setup_scope = "run"`: one login for the whole run (the server counts one),
/// every VU's calls carry its token and a copy of its cookie, and pass their checks
/// — on each engine, the VUs of both threads waiting for the first one's login.
#[test]
fn a_run_wide_setup_logs_in_once() {
    for engine in ["epoll", "io_uring"] {
        a_run_wide_setup_logs_in_once_on(engine);
    }
}

fn a_run_wide_setup_logs_in_once_on(engine: &str) {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new(&format!("scenario-once-{engine}"));
    let file = dir.write(
        "once.toml",
        &format!(
            r#"base_url = "http://127.0.0.1:{port}"
setup_scope = "run"
[load]
connections = 4
requests = 41
[[setup]]
name = "login"
path = "/login"
body = '{{"user":"lee","password":"pw2"}}'
extract = {{ token = {{ json = "token" }}, who = {{ json = "user" }} }}
[[request]]
name = "me"
path = "/me"
headers = {{ Authorization = "Bearer {{{{token}}}}" }}
check = {{ status = 200, json = {{ user = "{{{{who}}}}" }} }}
"#
        ),
    );
    let (code, v, stderr) = load(&file, &["--threads", "2", "--engine", engine]);
    if io_uring_refused(engine, code, &stderr) {
        return;
    }
    assert_eq!(code, 0, "{engine}: {stderr}\n{v}");
    assert_eq!(v["engine"], engine, "{v}");
    let stats = get_json(port, "/stats");
    assert_eq!(stats["login"], 1, "{engine}: {stats}");
    assert_eq!(stats["me"], 40, "{stats}");
    assert_eq!(
        (&stats["unauthorized"], &stats["no_cookie"]),
        (&Value::from(0), &Value::from(0))
    );
    let me = endpoint(&v, "me");
    assert_eq!(me["checks"]["passed"], 80, "{me}");
    assert_eq!(endpoint(&v, "login")["requests"], 1);
}

/// The closed model's requests are shared by all VUs, and every worker thread's VUs
/// start together: a thread that starts late (the test hook delays thread 0 by
/// 500 ms, as a busy host may schedule it) still finds requests left, so each of the
/// four VUs logs in as its own CSV user — on each engine. Without the start line,
/// thread 1's two VUs took all 200 requests before thread 0's ever sent one.
#[test]
fn a_worker_thread_slow_to_start_still_runs_its_vus() {
    for engine in ["epoll", "io_uring"] {
        let (_api, port) = python_server(API, &[]);
        let dir = TempDir::new(&format!("scenario-late-{engine}"));
        dir.write("users.csv", USERS);
        let file = dir.write("api.toml", &scenario(port, "Bearer {{token}}", ""));
        let (code, v, stderr) = load_with(
            &file,
            &["--threads", "2", "--engine", engine],
            &[("LATSCOPE_TEST_SLOW_START", "0:500")],
        );
        if io_uring_refused(engine, code, &stderr) {
            return;
        }
        assert_eq!(code, 0, "{engine}: {stderr}\n{v}");
        assert_eq!(v["requests"], 200, "{v}");
        assert_each_user_and_counts(&v, port);
    }
}

/// Stored, compared and reported: `compare` has a `checks passed` row for the run
/// and for each endpoint whose checks changed (100 % with the token, lower without),
/// the HTML report a `checks passed` column.
#[test]
fn compare_and_report_show_checks() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-compare");
    dir.write("users.csv", USERS);
    let good = dir.write("good.toml", &scenario(port, "Bearer {{token}}", ""));
    let bad = dir.write("bad.toml", &scenario(port, "Bearer none", ""));
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    for (file, label) in [(&good, "with-token"), (&bad, "without")] {
        let out = run_within(
            &[
                "load", "-f", file, "-n", "40", "--json", "--db", db, "--label", label,
            ],
            Duration::from_secs(60),
        );
        assert!(
            matches!(out.status.code(), Some(0) | Some(99)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run_within(
        &["compare", "with-token", "without", "--db", db],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The tables' rows that changed: the run's, me's and orders' (login's checks
    // pass in both runs).
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  checks passed"))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows.iter().all(|r| r.contains("100 %")), "{text}");
    assert!(
        text.contains("load endpoint: orders: checks passed  100 % → 0 %"),
        "{text}"
    );
    let html = dir.join("r.html");
    let out = run_within(
        &[
            "report",
            "with-token",
            "-o",
            html.to_str().unwrap(),
            "--db",
            db,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("checks passed"), "no checks column");
    assert!(page.contains("100.0 % of "), "no checks cell");
}

/// The text summary: the header names the protocol, "Transactions" counts
/// requests (never "hits"), the checks line and the per-endpoint checks column,
/// and the threshold's value in its unit.
#[test]
fn the_text_summary_names_protocol_checks_and_units() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-text");
    dir.write("users.csv", USERS);
    let file = dir.write("api.toml", &scenario(port, "Bearer {{token}}", ""));
    let out = run_within(
        &[
            "load",
            "--no-save",
            "--no-tui",
            "-f",
            &file,
            "-n",
            "40",
            "--threshold",
            "p99<5s",
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let first = text.lines().next().unwrap();
    assert!(first.contains("HTTP/1.1"), "{first}");
    let transactions = text
        .lines()
        .find(|l| l.contains("Transactions:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(transactions.ends_with(" 40 requests"), "{transactions}");
    assert!(!text.contains(" hits\n"), "{text}");
    assert!(
        text.contains("Protocol:") && text.contains("Checks passed:"),
        "{text}"
    );
    assert!(text.contains("100.0 % of "), "{text}");
    assert!(
        text.contains("p99<5s  (measured ") && text.contains(" ms)"),
        "{text}"
    );
    assert!(
        text.contains("checks>99%  (measured 100.000 % of checks passed)"),
        "{text}"
    );
}

/// Bad scenario files keep line-numbered errors (exit 2): an unknown variable, a
/// bad regex, an extract with two sources, a data file's bad row (its own line),
/// a random order that is not one, and script fields where they cannot run.
#[test]
fn bad_script_fields_name_their_line() {
    let dir = TempDir::new("scenario-bad");
    dir.write("users.csv", "user,password\nkim,pw1\nlee\n");
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "base_url = \"http://127.0.0.1:9\"\n[[request]]\npath = \"/me\"\nheaders = { Authorization = \"Bearer {{tokn}}\" }\n",
            "line 4",
            &["{{tokn}} is not set"],
        ),
        (
            "base_url = \"http://127.0.0.1:9\"\n[[request]]\npath = \"/\"\ncheck = { body_regex = \"(\" }\n",
            "line 4",
            &["request[1].check.body_regex", "not a regex"],
        ),
        (
            "base_url = \"http://127.0.0.1:9\"\n[[request]]\npath = \"/\"\n[request.extract]\nt = { json = \"a\", header = \"b\" }\n",
            "line 5",
            &["request[1].extract.t", "exactly one"],
        ),
        (
            "base_url = \"http://127.0.0.1:9\"\ndata = \"users.csv\"\n[[request]]\npath = \"/{{user}}\"\n",
            "line 2",
            &["users.csv, line 3", "1 fields, the header has 2"],
        ),
        (
            "base_url = \"http://127.0.0.1:9\"\n[[request]]\npath = \"/\"\ncheck = { status = \"ok\" }\n",
            "line 4",
            &["request[1].check.status"],
        ),
        (
            "base_url = \"http://127.0.0.1:9\"\norder = \"sequence\"\n[[request]]\npath = \"/\"\nweight = 3\n",
            "line 5",
            &["weight", "remove `order`"],
        ),
    ];
    for (i, (text, line, words)) in cases.iter().enumerate() {
        let file = dir.write(&format!("bad{i}.toml"), text);
        let out = run_within(&["load", "--no-save", "-f", &file], Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(line), "case {i}: {err}");
        for w in *words {
            assert!(err.contains(w), "case {i}: {w}: {err}");
        }
    }
    // Per-VU state in the open model, and scripts over HTTP/2: refused up front.
    let file = dir.write(
        "open.toml",
        "base_url = \"http://127.0.0.1:9\"\n[[setup]]\npath = \"/login\"\n[[request]]\npath = \"/\"\n",
    );
    let out = run_within(
        &["load", "--no-save", "-f", &file, "--rate", "10"],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("open model"), "{err}");
    // Pauses pace a VU: the open model would drop them and measure another workload.
    for (name, text) in [
        ("sleep.toml", "[[request]]\npath = \"/\"\nsleep = \"1s\"\n"),
        (
            "think.toml",
            "think_time = \"1s\"\n[[request]]\npath = \"/\"\n",
        ),
        (
            "range.toml",
            "think_time = \"1s..2s\"\n[[request]]\npath = \"/\"\n",
        ),
    ] {
        let paced = dir.write(name, &format!("base_url = \"http://127.0.0.1:9\"\n{text}"));
        for args in [
            &["--rate", "10"][..],
            &["--find-max", "p99<1s", "--model", "open"],
        ] {
            let mut a = vec!["load", "--no-save", "-f", &paced];
            a.extend_from_slice(args);
            let out = run_within(&a, Duration::from_secs(20));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(
                err.contains("think_time") && err.contains("closed"),
                "{name}: {err}"
            );
        }
    }
    // … and a recording's pauses too, even with its cookie jar off.
    let har = dir.write(
        "s.har",
        r#"{"log": {"entries": [
          {"startedDateTime": "2026-11-27T10:00:00.000Z", "time": 10,
           "request": {"method": "GET", "url": "http://127.0.0.1:9/"}},
          {"startedDateTime": "2026-11-27T10:00:01.000Z", "time": 10,
           "request": {"method": "GET", "url": "http://127.0.0.1:9/next"}}]}}"#,
    );
    let out = run_within(
        &[
            "load",
            "--no-save",
            "--har",
            &har,
            "--rate",
            "10",
            "--no-cookies",
        ],
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("recording") && err.contains("pauses"), "{err}");
    for (args, says) in [
        (
            &["--find-max", "checks>99%", "--model", "closed"][..],
            "judged over a whole run",
        ),
        (
            &["--find-max", "p99<1s", "--model", "open"][..],
            "--model closed",
        ),
    ] {
        let mut a = vec!["load", "--no-save", "-f", &file];
        a.extend_from_slice(args);
        let out = run_within(&a, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Pauses run on epoll: io_uring, asked for, is refused saying so (`auto` takes
    // epoll for them).
    for (name, text, says) in [
        (
            "uring-sleep.toml",
            "[[request]]\npath = \"/\"\nsleep = \"1s\"\n",
            "pauses run on epoll",
        ),
        (
            "uring-think.toml",
            "think_time = \"1s..2s\"\n[[request]]\npath = \"/\"\n",
            "think",
        ),
    ] {
        let f = dir.write(name, &format!("base_url = \"http://127.0.0.1:9\"\n{text}"));
        let out = run_within(
            &[
                "load",
                "--no-save",
                "-f",
                &f,
                "--engine",
                "io_uring",
                "-n",
                "1",
            ],
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{name}: {err}");
        assert!(err.contains("epoll") && err.contains(says), "{name}: {err}");
    }
}

/// Issue 34 item 6: `weight` alone means weighted selection (weights 8/1/1 gave
/// equal counts before): over 1,000 requests the heavy one gets most of them.
#[test]
fn weights_alone_pick_by_weight() {
    let (_api, port) = python_server(API, &[]);
    let dir = TempDir::new("scenario-weights");
    let file = dir.write(
        "w.toml",
        &format!(
            "base_url = \"http://127.0.0.1:{port}\"\n[load]\nconnections = 4\nrequests = 1000\n\
             [[request]]\nname = \"heavy\"\npath = \"/stats\"\nweight = 8\n\
             [[request]]\nname = \"a\"\npath = \"/none-a\"\nweight = 1\n\
             [[request]]\nname = \"b\"\npath = \"/none-b\"\nweight = 1\n"
        ),
    );
    let (code, v, stderr) = load(&file, &[]);
    assert_eq!(code, 0, "{stderr}");
    let heavy = endpoint(&v, "heavy")["requests"].as_u64().unwrap();
    let a = endpoint(&v, "a")["requests"].as_u64().unwrap();
    let b = endpoint(&v, "b")["requests"].as_u64().unwrap();
    assert_eq!(heavy + a + b, 1000);
    // Expected 800/100/100; binomial spread is ±40 at 3 sigma.
    assert!((700..=900).contains(&heavy), "{heavy} {a} {b}");
    assert!(a < 200 && b < 200, "{heavy} {a} {b}");
    // A plain scenario keeps the run's own encoding: no script, io_uring allowed.
    assert!(v["checks"].is_null());
}

/// A scripted scenario (a check makes each VU run the script) follows `--stages`
/// like a plain one: 0 → 4 VUs over 1 s, then 4 for 1 s — the ramp's second sends
/// fewer requests than the plateau's, every check passes, and the run ends with its
/// stages (k6's `ramping-vus`).
#[test]
fn a_scripted_scenario_follows_the_stages() {
    let lab = latscope::lab::spawn(latscope::lab::LabOptions::default()).expect("lab starts");
    let dir = TempDir::new("scenario-stages");
    let file = dir.write(
        "s.toml",
        &format!(
            "base_url = \"{}\"\n[[request]]\nname = \"slow\"\npath = \"/delay/10ms\"\n\
             check = {{ status = 200 }}\n",
            lab.url("").trim_end_matches('/')
        ),
    );
    let (code, v, stderr) = load(&file, &["--stages", "1s:4,1s:4"]);
    assert_eq!(code, 0, "{stderr}");
    let c = &v["checks"];
    assert!(c["total"].as_u64().unwrap() > 20, "{c}");
    assert_eq!(c["passed"], c["total"], "{c}");
    let t = v["timeline"].as_array().unwrap();
    let req = |i: usize| t[i]["requests"].as_u64().unwrap();
    assert!(t.len() >= 2 && req(0) < req(1), "{t:?}");
    assert!(
        v["duration_s"].as_f64().unwrap() < 3.5,
        "{}",
        v["duration_s"]
    );
}

/// A scripted scenario split into two shards (`--shard i/2`, each exported) merges
/// into one run whose checks are the shards' sums, per endpoint and in all, and whose
/// requests are the `-n` of the plan (issue 34: checks survive `merge`).
#[test]
fn shards_of_a_scripted_scenario_merge_their_checks() {
    let lab = latscope::lab::spawn(latscope::lab::LabOptions::default()).expect("lab starts");
    let dir = TempDir::new("scenario-shards");
    let file = dir.write(
        "s.toml",
        &format!(
            "base_url = \"{}\"\n[[request]]\nname = \"ok\"\npath = \"/\"\n\
             check = {{ status = 200 }}\n[[request]]\nname = \"missing\"\npath = \"/status/404\"\n\
             check = {{ status = 200 }}\n",
            lab.url("").trim_end_matches('/')
        ),
    );
    let files: Vec<String> = (1..=2)
        .map(|i| {
            dir.join(&format!("shard{i}.json"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let docs: Vec<Value> = (1..=2)
        .map(|i| {
            let shard = format!("{i}/2");
            let (code, v, stderr) = load(
                &file,
                &[
                    "-n",
                    "200",
                    "-c",
                    "2",
                    "--shard",
                    &shard,
                    "--export",
                    &files[i - 1],
                ],
            );
            // The 404s fail their check: the run says so, it is no error of the run.
            assert!(code == 0 || code == 99, "{code}: {stderr}");
            v
        })
        .collect();
    let out = run_within(
        &["merge", &files[0], &files[1], "--json", "--no-save"],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let m = json_of(&out);
    assert_eq!(m["requests"], 200, "{m}");
    let sum =
        |f: &dyn Fn(&Value) -> &Value| -> u64 { docs.iter().map(|d| f(d).as_u64().unwrap()).sum() };
    assert_eq!(
        m["checks"]["total"].as_u64().unwrap(),
        sum(&|d| &d["checks"]["total"])
    );
    assert_eq!(
        m["checks"]["passed"].as_u64().unwrap(),
        sum(&|d| &d["checks"]["passed"])
    );
    // The merged timeline's seconds add the shards' checks up too.
    assert_eq!(
        timeline_sum(&m, "checks"),
        m["checks"]["total"].as_u64().unwrap(),
        "{m}"
    );
    for name in ["ok", "missing"] {
        let e = endpoint(&m, name);
        let each = |d: &Value| endpoint(d, name)["checks"]["passed"].as_u64().unwrap();
        assert_eq!(
            e["checks"]["passed"].as_u64().unwrap(),
            docs.iter().map(each).sum::<u64>(),
            "{name}: {e}"
        );
    }
    let missing = endpoint(&m, "missing");
    assert!(
        missing["checks"]["total"].as_u64().unwrap() > 0,
        "{missing}"
    );
    assert_eq!(missing["checks"]["passed"], 0, "{missing}");
    assert_eq!(
        endpoint(&m, "ok")["checks"]["passed"],
        endpoint(&m, "ok")["checks"]["total"]
    );
}
