//! `latscope load --har` (issue 34 item 5) on a real recording: headless Chromium
//! (Debian's) loads a page from a local nginx while a recorder written here (Python
//! standard library, the DevTools protocol over a WebSocket) writes the HAR; the
//! replay sends the page's own requests — the same set, each as often as the VU
//! walks it, nginx's access log agreeing — checks the recorded statuses, and leaves
//! the third-party host (`localhost`, another origin) out. Bounded: one page, two
//! passes of one VU, 90 s for Chromium.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::util::{run_json_within, run_within};
use crate::util_nginx::{nginx_bin, start, temp_dir, write_conf};

/// Records `argv[2]` loaded by Chromium (`argv[1]`) into the HAR `argv[3]`: the
/// page's requests from `Network.requestWillBeSent` (method, URL, headers, body,
/// wall time), their status from `Network.responseReceived`, their end from
/// `Network.loadingFinished`, until the page loaded and the network was quiet for
/// 1 s with every request finished (or 30 s). A minimal RFC 6455 client: masked text frames out, frames in.
const RECORDER: &str = r#"
import base64, datetime, json, os, select, socket, struct, subprocess, sys, tempfile, time, urllib.request
chromium, url, out = sys.argv[1:4]
profile = tempfile.mkdtemp()
p = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
    "--remote-debugging-port=0", "about:blank"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
try:
    port = None
    deadline = time.time() + 30
    while port is None and time.time() < deadline:
        line = p.stderr.readline()
        if "DevTools listening on ws://" in line:
            port = int(line.split("ws://")[1].split("/")[0].rsplit(":", 1)[1])
    pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
    ws = [t for t in pages if t["type"] == "page"][0]["webSocketDebuggerUrl"]
    hostport, path = ws[len("ws://"):].split("/", 1)
    s = socket.create_connection(tuple([hostport.rsplit(":", 1)[0], int(hostport.rsplit(":", 1)[1])]))
    s.settimeout(30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, buf = buf.split(b"\r\n\r\n", 1)
    assert b" 101 " in head.split(b"\r\n")[0], head
    def need(n):
        global buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise EOFError
            buf += chunk
        out, buf = buf[:n], buf[n:]
        return out
    def recv():
        data = b""
        while True:
            b0, b1 = need(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack(">H", need(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", need(8))[0]
            payload = need(n)
            if b0 & 0x0f in (1, 2, 0):
                data += payload
                if b0 & 0x80:
                    return json.loads(data)
    next_id = [0]
    def send(method, params=None):
        next_id[0] += 1
        data = json.dumps({"id": next_id[0], "method": method, "params": params or {}}).encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
    send("Network.enable")
    send("Page.enable")
    send("Network.setCacheDisabled", {"cacheDisabled": True})
    send("Page.navigate", {"url": url})
    reqs, order, loaded, navigated = {}, [], False, False
    end = time.time() + 30
    last = nav_at = time.time()
    while time.time() < end:
        if not navigated and time.time() - nav_at > 3:
            # The first navigation can lose a race with the start page's own load:
            # start over.
            reqs.clear()
            order.clear()
            send("Page.navigate", {"url": url})
            nav_at = time.time()
        if not buf and not select.select([s], [], [], 0.25)[0]:
            # Quiet: done once the page (not about:blank) loaded and every request
            # ended 1 s ago.
            if loaded and all(r["end"] is not None for r in reqs.values()) and time.time() - last > 1:
                break
            continue
        m = recv()
        meth, prm = m.get("method"), m.get("params", {})
        if meth and meth.startswith("Network."):
            last = time.time()
        if meth == "Network.requestWillBeSent":
            rid = prm["requestId"]
            if rid not in reqs:
                order.append(rid)
            reqs[rid] = {"req": prm["request"], "wall": prm["wallTime"], "ts": prm["timestamp"],
                         "status": None, "end": None}
        elif meth == "Network.responseReceived" and prm["requestId"] in reqs:
            reqs[prm["requestId"]]["status"] = prm["response"]["status"]
        elif meth in ("Network.loadingFinished", "Network.loadingFailed") and prm["requestId"] in reqs:
            reqs[prm["requestId"]]["end"] = prm["timestamp"]
        elif meth == "Page.frameNavigated" and not prm["frame"].get("parentId"):
            navigated = prm["frame"]["url"].startswith(url)
        elif meth == "Page.loadEventFired" and navigated:
            loaded = True
    entries = []
    for rid in order:
        r = reqs[rid]
        q = r["req"]
        started = datetime.datetime.fromtimestamp(r["wall"], datetime.timezone.utc)
        e = {"startedDateTime": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
             "time": ((r["end"] or r["ts"]) - r["ts"]) * 1000,
             "request": {"method": q["method"], "url": q["url"],
                         "headers": [{"name": k, "value": v} for k, v in q.get("headers", {}).items()]},
             "response": {"status": r["status"] or 0}}
        if "postData" in q:
            e["request"]["postData"] = {"mimeType": "", "text": q["postData"]}
        entries.append(e)
    json.dump({"log": {"version": "1.2", "creator": {"name": "latscope-test", "version": "1"},
               "entries": entries}}, open(out, "w"))
finally:
    p.kill()
    p.wait()
"#;

/// Requests nginx logged, as "METHOD URI" → count.
fn logged(path: &std::path::Path) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *m.entry(l.trim().to_string()).or_insert(0) += 1;
    }
    m
}

#[test]
fn a_chromium_recording_replays_with_the_same_request_set() {
    let Some(chromium) = crate::report::chromium() else {
        return;
    };
    let Some(nginx) = nginx_bin() else {
        return;
    };
    let dir = temp_dir("har");
    let port = crate::util::free_port();
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(
        www.join("index.html"),
        format!(
            "<!doctype html><html><head><link rel=\"icon\" href=\"data:,\">\
             <link rel=\"stylesheet\" href=\"/style.css\"></head><body><h1>shop</h1>\
             <img src=\"/logo.svg\"><script src=\"/app.js\"></script>\
             <script src=\"http://localhost:{port}/third.js\"></script></body></html>"
        ),
    )
    .unwrap();
    std::fs::write(www.join("style.css"), "h1 { color: teal }\n").unwrap();
    std::fs::write(
        www.join("logo.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>\n",
    )
    .unwrap();
    std::fs::write(www.join("app.js"), "document.title = 'shop';\n").unwrap();
    std::fs::write(www.join("third.js"), "window.third = 1;\n").unwrap();
    let log = dir.join("access.log");
    write_conf(
        &dir,
        &format!(
            "  log_format t '$request_method $request_uri';\n  server {{\n    \
             listen 127.0.0.1:{port};\n    server_name _;\n    access_log {} t;\n    \
             root {};\n  }}\n",
            log.display(),
            www.display()
        ),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let _nginx = start(&nginx, &dir, addr);
    let har = dir.join("session.har");
    let url = format!("http://127.0.0.1:{port}/");
    let out = Command::new("python3")
        .arg("-c")
        .arg(RECORDER)
        .arg(&chromium)
        .arg(&url)
        .arg(&har)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "recorder: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&har).unwrap()).unwrap();
    let own: Vec<String> = recorded["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["request"]["url"].as_str().unwrap().starts_with(&url))
        .map(|e| {
            let u = e["request"]["url"].as_str().unwrap();
            format!(
                "{} {}",
                e["request"]["method"].as_str().unwrap(),
                &u[url.len() - 1..]
            )
        })
        .collect();
    for want in ["GET /", "GET /style.css", "GET /logo.svg", "GET /app.js"] {
        assert!(
            own.iter().any(|o| o == want),
            "{want} not recorded: {own:?}"
        );
    }
    let third = recorded["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["request"]["url"].as_str().unwrap().contains("localhost"))
        .count();
    assert_eq!(third, 1, "the third-party script was recorded");
    // What nginx saw of the recording, then only the replay.
    std::fs::write(&log, "").unwrap();
    let har_arg = har.to_str().unwrap();
    let n = (own.len() * 2).to_string();
    let v = run_json_within(
        &[
            "load",
            "--har",
            har_arg,
            "-c",
            "1",
            "-n",
            &n,
            "--json",
            "--no-save",
        ],
        Duration::from_secs(60),
    );
    let names: Vec<String> = v["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names, own,
        "the replay's requests are the recording's, in order"
    );
    let seen = logged(&log);
    for e in v["endpoints"].as_array().unwrap() {
        assert_eq!(e["requests"], 2, "{e}");
        assert_eq!(e["checks"]["passed"], e["checks"]["total"], "{e}");
        let name = e["name"].as_str().unwrap();
        assert_eq!(seen.get(name), Some(&2), "{name}: nginx saw {seen:?}");
    }
    assert!(
        !seen.keys().any(|k| k.contains("third.js")),
        "the other host was left out: {seen:?}"
    );
    assert_eq!(seen.values().sum::<u64>(), own.len() as u64 * 2);
    // The text header says what was left out.
    let out = run_within(
        &[
            "load",
            "--har",
            har_arg,
            "-c",
            "1",
            "-n",
            "1",
            "--no-save",
            "--no-tui",
        ],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--har: 1 recorded request to other hosts left out"),
        "{text}"
    );
    // Asked for, the other host's requests are the ones replayed (its script alone).
    std::fs::write(&log, "").unwrap();
    let other = format!("http://localhost:{port}");
    let pin = format!("localhost:{port}:127.0.0.1");
    let v = run_json_within(
        &[
            "load",
            "--har",
            har_arg,
            "--har-origin",
            &other,
            "--resolve",
            &pin,
            "-c",
            "1",
            "-n",
            "2",
            "--json",
            "--no-save",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(v["endpoints"][0]["name"], "GET /third.js", "{v}");
    assert_eq!(v["endpoints"].as_array().unwrap().len(), 1, "{v}");
    let seen = logged(&log);
    assert_eq!(seen.get("GET /third.js"), Some(&2), "{seen:?}");
    assert_eq!(seen.values().sum::<u64>(), 2, "{seen:?}");
}
