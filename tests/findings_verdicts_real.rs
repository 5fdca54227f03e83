//! Issue 29's rules on real servers, not only the lab: a Python server written here
//! (http.server, HTTP/1.1 keep-alive, on a free 127.0.0.1 port), each rule firing
//! where it should and quiet where it should not.
//! - `server-timing-gap` (W3C Server Timing, section 2: `Server-Timing: app;dur=N`
//!   in milliseconds): a handler that takes 120 ms and says `app;dur=5` leaves
//!   ≈ 115 ms unexplained; one that says `app;dur=118` explains it.
//! - `tail-heavy` (counts over 5 × the p50 or p50 + 50 ms, with Wilson's bound on
//!   their share): one request in 5 stalled 250 ms fires; no stalls, no warning.

use serde_json::Value;

use crate::findings::{assert_in, diagnose, finding, num, text};
use crate::util_real::python_server;
use crate::util_require::require;

/// `/timed?sleep=MS&says=MS`: sleeps MS and sends `Server-Timing: app;dur=SAYS`.
/// `/stall?every=N&ms=MS`: every Nth request (counted by the server) sleeps MS,
/// the rest 3 ms.
const SERVER: &str = r#"
import http.server, threading, time, urllib.parse
count, lock = [0], threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        extra = []
        if u.path == "/timed":
            time.sleep(float(q["sleep"]) / 1000)
            extra.append(("Server-Timing", "app;dur=" + q["says"]))
        elif u.path == "/stall":
            with lock:
                count[0] += 1
                n = count[0]
            every = int(q.get("every", "0"))
            time.sleep(float(q["ms"]) / 1000 if every and n % every == 0 else 0.003)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The warn/crit findings of `v` with this id.
fn warned<'a>(v: &'a Value, id: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id && (f["severity"] == "warn" || f["severity"] == "crit"))
        .collect()
}

/// 120 ms in the handler, `app;dur=5` said: ≈ 115 ms of server time Server-Timing
/// does not explain (decided on the interval of the per-request values); the same
/// 120 ms said as `app;dur=118`: nothing unexplained, quiet.
#[test]
fn server_timing_gap_on_a_python_server() {
    if !require("python3") {
        return;
    }
    let (_server, port) = python_server(SERVER, &[]);
    let url = |q: &str| format!("http://127.0.0.1:{port}/timed?{q}");
    let v = diagnose(&[&url("sleep=120&says=5"), "--no-load"]);
    let f = finding(&v, "server-timing-gap");
    assert_in("explained", num(f, "explained_ms"), 4.0, 6.0);
    assert_in("gap", num(f, "gap_ms"), 80.0, 400.0);
    assert!(text(f, "server_timing").contains("app;dur=5"), "{f}");
    assert_eq!(f["confidence"]["verdict"], "above", "{f}");
    let v = diagnose(&[&url("sleep=120&says=118"), "--no-load"]);
    crate::findings::assert_quiet(&v, "server-timing-gap", "a Server-Timing that explains it");
}

/// One request in 5 stalled 250 ms against 3 ms for the rest, two seconds at one
/// connection: `tail-heavy` warns, counting them; the same server without stalls: no
/// `tail-heavy` warning (a stray slow request on a busy machine can at most make it
/// "not enough samples"). One in 5, not one in 20: how many requests two seconds hold
/// depends on the machine (≈ 100 when quiet, 39 once in CI beside the heavy tests, with
/// one stall among them: 1 of 39 cannot clear a 1 % threshold on Wilson's bound, so
/// the finding rightly said "not enough samples"); at one in 5, 39 requests hold ≈ 8
/// stalls, whose bound (≥ 0.09) clears 1 % with room, and the p50 stays at 3 ms.
#[test]
fn tail_heavy_on_a_python_server() {
    if !require("python3") {
        return;
    }
    let (_server, port) = python_server(SERVER, &[]);
    let run = |q: &str| {
        diagnose(&[
            &format!("http://127.0.0.1:{port}/stall?{q}"),
            "--step",
            "2s",
            "--max-connections",
            "1",
        ])
    };
    let v = run("every=5&ms=250");
    // The probe before the load run sees the stalls too and may say so first.
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "tail-heavy" && f["evidence"]["source"] == "load run")
        .unwrap_or_else(|| panic!("no tail-heavy from the load run: {}", v["findings"]));
    assert_eq!(f["severity"], "warn", "{f}");
    assert!(num(f, "over") >= 2.0, "{f}");
    assert_in("slowest", num(f, "max_ms"), 240.0, 2000.0);
    // The p50 is a request that did not stall: 3 ms on a quiet machine (51 ms once with
    // the whole suite beside it), well under the 250 ms stall either way.
    assert!(
        num(f, "p50_ms") < 125.0,
        "the p50 is not a stalled request: {f}"
    );
    let v = run("every=0&ms=0");
    assert!(
        warned(&v, "tail-heavy").is_empty(),
        "no stalls, yet: {:?}",
        warned(&v, "tail-heavy")
    );
}
