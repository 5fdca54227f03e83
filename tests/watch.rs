//! `load --watch`: Debian's node_exporter scraped once a second during real load
//! runs and joined to the timeline, the run stored and shown/exported/reported with
//! it, and the three server findings each tested both ways against real software:
//! `server-cpu-saturated` (a CPU-bound multi-process Python server),
//! `listen-queue-overflow` (a Python server with a tiny backlog that accepts slowly,
//! in a namespace of its own so no other test's listeners count) and
//! `server-retransmits` (an API in one namespace with a psycopg2 pool on a real
//! PostgreSQL in another, behind the lab's wire, which loses packets now and then).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{json_of, run_within};
use crate::util_netns::{self, link, node_exporter, Netns, NODE_EXPORTER};
use crate::util_real::{python_server, python_server_with, TempDir};
use crate::util_require::{require, require_ok, require_root, require_that, require_tun};
use crate::util_wire::ChildGuard;

/// The findings' ids of a run.
fn ids(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn finding<'a>(doc: &'a Value, id: &str) -> Option<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

/// The sum of a `server` field over the timeline.
fn server_sum(doc: &Value, field: &str) -> f64 {
    doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["server"][field].as_f64())
        .sum()
}

/// Runs latscope and parses its JSON, asserting exit 0.
fn load_json(args: &[&str]) -> Value {
    crate::util::run_json_within(args, Duration::from_secs(90))
}

/// A server that burns `?ms=N` of CPU per request (default 20), in `argv[1]`
/// processes sharing one listening socket, each with a thread per connection; the
/// children die with the parent.
const CPU_SERVER: &str = r#"
import ctypes, os, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        ms = float(self.path.split("ms=")[1]) if "ms=" in self.path else 20.0
        end = time.process_time() + ms / 1000.0
        x = 0
        while time.process_time() < end:
            x += 1
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
for _ in range(int(sys.argv[1]) - 1):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        break
srv.serve_forever()
"#;

/// node_exporter scraped beside a real load: per-second server rows with CPU,
/// load1 and a `--watch-metric`; a target that is down and one that never answers
/// are gaps with their reasons, and neither stops nor stretches the run (exit 0,
/// about `-d` long). The server rows survive save → show, export → import, and the
/// HTML report draws them.
#[test]
fn watch_joins_node_exporter_and_survives_dead_targets() {
    if !require(NODE_EXPORTER) {
        return;
    }
    let dir = TempDir::new("watch");
    let (_ne, ne_url) = node_exporter(None, "127.0.0.1", crate::util::free_port());
    let (_srv, port) = python_server(CPU_SERVER, &["2"]);
    // Accepts connections and never answers: every scrape times out.
    let (_mute, mute) = python_server(
        "import socket\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(16)\n\
         print(s.getsockname()[1],flush=True)\nheld=[]\nwhile True:\n    held.append(s.accept())\n",
        &["mute"],
    );
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let url = format!("http://127.0.0.1:{port}/?ms=2");
    let mute_url = format!("http://127.0.0.1:{mute}/metrics");
    let down = format!("http://127.0.0.1:{}/metrics", crate::util::free_port());
    let started = Instant::now();
    let doc = load_json(&[
        "load",
        &url,
        "-c",
        "2",
        "-d",
        "4s",
        "--json",
        "--db",
        db,
        "--label",
        "watched",
        "--watch",
        &ne_url,
        "--watch",
        &down,
        "--watch",
        &mute_url,
        "--watch-metric",
        "node_load1",
        "--watch-metric",
        "node_cpu_seconds_total{mode=\"idle\"}",
    ]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(12),
        "dead targets must not stretch a 4 s run: took {took:?}"
    );
    let w = &doc["watch"];
    assert_eq!(w["targets"][0]["failed"], 0, "{w}");
    assert!(w["targets"][0]["scrapes"].as_u64().unwrap() >= 4, "{w}");
    for dead in [1, 2] {
        let t = &w["targets"][dead];
        assert!(t["scrapes"].as_u64().unwrap() >= 3, "{w}");
        assert_eq!(t["failed"], t["scrapes"], "{w}");
    }
    assert!(
        w["targets"][2]["last_error"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{w}"
    );
    let rows = doc["timeline"].as_array().unwrap();
    let watched: Vec<&Value> = rows.iter().filter(|r| r["server"].is_object()).collect();
    assert!(watched.len() >= 3, "server rows: {rows:?}");
    // Busy CPU is counted in 10 ms ticks: a quiet second (the run's grace at its end)
    // may show 0, and so may loaded ones on a machine stalled on its disk (seen once in
    // CI: 84 % iowait, the 2 ms handler answering in 44 ms, two seconds of four busy);
    // a join that read no CPU at all shows none.
    let busy = watched
        .iter()
        .filter(|r| r["server"]["cpu_pct"].as_f64().is_some_and(|c| c > 0.0))
        .count();
    assert!(busy >= 1, "no second with server CPU > 0: {rows:?}");
    for r in &watched {
        let s = &r["server"];
        let cpu = s["cpu_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&cpu), "{s}");
        assert!(s["load1"].as_f64().is_some(), "{s}");
        assert!(s["mem_available_bytes"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["tcp_inuse"].as_f64().is_some(), "{s}");
        assert!(s["metrics"]["node_load1"].as_f64().is_some(), "{s}");
        // A counter (TYPE counter): a rate, at most one CPU-second per second per CPU.
        let idle = s["metrics"]["node_cpu_seconds_total{mode=\"idle\"}"]
            .as_f64()
            .unwrap();
        assert!((0.0..=64.0).contains(&idle), "{s}");
    }
    assert_eq!(w["seconds"].as_u64().unwrap() as usize, watched.len());
    // Stored with the run: show, export and the HTML report carry it.
    let show = run_within(
        &["show", "watched", "--json", "--db", db],
        Duration::from_secs(30),
    );
    let shown = json_of(&show);
    assert_eq!(shown["timeline"], doc["timeline"]);
    assert_eq!(shown["watch"], doc["watch"]);
    // export → import into another store → show: the same rows.
    let file = dir.join("run.json");
    let file = file.to_str().unwrap();
    let db2 = dir.join("other.db");
    let db2 = db2.to_str().unwrap();
    for args in [
        vec!["export", "watched", "-o", file, "--db", db],
        vec!["import", file, "--db", db2],
    ] {
        let out = run_within(&args, Duration::from_secs(30));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let imported = json_of(&run_within(
        &["show", "last", "--json", "--db", db2],
        Duration::from_secs(30),
    ));
    assert_eq!(
        imported["timeline"], doc["timeline"],
        "import kept the server rows"
    );
    let html = dir.join("r.html");
    let out = run_within(
        &[
            "report",
            "watched",
            "-o",
            html.to_str().unwrap(),
            "--db",
            db,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("server CPU"),
        "the report draws the server's CPU"
    );
    let csv = dir.join("t.csv");
    let out = run_within(
        &[
            "report",
            "watched",
            "--csv",
            csv.to_str().unwrap(),
            "--db",
            db,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",server_cpu_pct,server_retrans"));
    let cpu_cells = csv
        .lines()
        .skip(1)
        .filter(|l| {
            l.split(',')
                .nth(16)
                .is_some_and(|c| c.parse::<f64>().is_ok())
        })
        .count();
    assert_eq!(cpu_cells, watched.len(), "{csv}");
}

/// diagnose's ramp watches too: its joined timeline rows carry the server's side,
/// its `load` object the `watch` summary, its text a `server (--watch)` line. A `--watch` that is not an http:// URL,
/// or a `--watch-metric` without `--watch`, is a usage error (exit 2) naming the flag.
#[test]
fn diagnose_ramp_watches_and_bad_flags_are_usage_errors() {
    if !require(NODE_EXPORTER) {
        return;
    }
    let dir = TempDir::new("watch-diag");
    let (_ne, ne_url) = node_exporter(None, "127.0.0.1", crate::util::free_port());
    let (_srv, port) = python_server(CPU_SERVER, &["1"]);
    let url = format!("http://127.0.0.1:{port}/?ms=1");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let doc = load_json(&[
        "diagnose",
        &url,
        "-n",
        "3",
        "--max-connections",
        "2",
        "--step",
        "1s",
        "--json",
        "--db",
        db,
        "--watch",
        &ne_url,
    ]);
    let text = run_within(&["show", "last", "--db", db], Duration::from_secs(30));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("server (--watch): CPU"), "{text}");
    let load = &doc["load"];
    assert!(
        load["watch"]["seconds"].as_u64().unwrap() >= 1,
        "{}",
        load["watch"]
    );
    let rows = load["timeline"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["server"]["cpu_pct"].as_f64().is_some()),
        "{rows:?}"
    );
    for (args, flag) in [
        (
            vec![
                "load",
                &url,
                "-d",
                "1s",
                "--watch",
                "ftp://127.0.0.1:9/metrics",
            ],
            "--watch",
        ),
        (
            vec!["load", &url, "-d", "1s", "--watch-metric", "up"],
            "--watch-metric",
        ),
        (
            vec![
                "load",
                &url,
                "-d",
                "1s",
                "--watch",
                &ne_url,
                "--watch-metric",
                "a{b=1}",
            ],
            "--watch-metric",
        ),
        (vec!["diagnose", &url, "--watch", "not a url"], "--watch"),
    ] {
        let out = run_within(&args, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

/// A CPU-bound server (four processes per core, each burning 40 ms of CPU per
/// request) under four connections per core saturates every core (p99 ≈ 4 × 40 ms): `server-cpu-saturated` fires. The same server asked for 1 ms of work 5
/// times a second: quiet (even when other work keeps this host's CPU busy, p99
/// stays small).
#[test]
fn server_cpu_saturated_fires_on_a_cpu_bound_server_only() {
    if !require(NODE_EXPORTER) {
        return;
    }
    let (_ne, ne_url) = node_exporter(None, "127.0.0.1", crate::util::free_port());
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    // One process per connection: every connection's requests burn a core of their
    // own (a process per core could sit idle while its connections' clients read,
    // leaving 10–20 % of the host idle on a quiet machine).
    let connections = (4 * cores).to_string();
    let (_srv, port) = python_server(CPU_SERVER, &[&connections]);
    let hot = load_json(&[
        "load",
        &format!("http://127.0.0.1:{port}/?ms=40"),
        "-c",
        &connections,
        "-d",
        "6s",
        "--json",
        "--no-save",
        "--watch",
        &ne_url,
    ]);
    let cpus: Vec<f64> = hot["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["server"]["cpu_pct"].as_f64())
        .collect();
    let f = finding(&hot, "server-cpu-saturated").unwrap_or_else(|| {
        panic!(
            "server-cpu-saturated: cpu {cpus:?}, findings {:?}, p99 {}",
            ids(&hot),
            hot["latency_ms"]["p99"]
        )
    });
    eprintln!("hot: cpu {cpus:?}: {}", f["title"]);
    assert!(f["evidence"]["saturated_seconds"].as_u64().unwrap() >= 2);
    let light = load_json(&[
        "load",
        &format!("http://127.0.0.1:{port}/?ms=1"),
        "--rate",
        "5",
        "-c",
        "2",
        "-d",
        "5s",
        "--json",
        "--no-save",
        "--watch",
        &ne_url,
    ]);
    assert!(
        !ids(&light).contains(&"server-cpu-saturated".to_string()),
        "{:?}",
        light["findings"]
    );
    assert!(server_sum(&light, "cpu_pct") > 0.0);
}

/// A server in a namespace of its own (so only its listeners count), reached over a
/// veth pair, that reads and answers one connection at a time.
const SERIAL_SERVER: &str = r#"
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0))
s.listen(int(sys.argv[2]))
print(s.getsockname()[1], flush=True)
slow = float(sys.argv[3])
while True:
    c, _ = s.accept()
    time.sleep(slow)
    c.settimeout(5)
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    except OSError:
        pass
    c.close()
"#;

/// Starts the Python `script` with `ARGS` under the interpreter `program` inside
/// `ns`, reading the port it prints first.
fn start_in(ns: &Netns, program: &str, script: &str, args: &[&str]) -> (ChildGuard, u16) {
    python_server_with(ns.command(program), script, args)
}

/// The server with backlog 128, answering at once, under 2 connections: no
/// overflow, quiet. The same server with backlog 1 and 100 ms per accepted
/// connection, with 16 connections opening a new one per request: the accept queue
/// overflows (TcpExt ListenOverflows in the server's namespace) and
/// `listen-queue-overflow` fires.
#[test]
fn listen_queue_overflow_fires_on_a_tiny_backlog_only() {
    if !require_root() || !require("ip") || !require(NODE_EXPORTER) {
        return;
    }
    let ns = Netns::new("lq");
    let (_host_ip, ip, _, _) = link(None, &ns);
    let (_ne, ne_url) = node_exporter(Some(&ns), &ip, 9100);
    let (_ok, ok) = start_in(&ns, "python3", SERIAL_SERVER, &[&ip, "128", "0"]);
    let calm = load_json(&[
        "load",
        &format!("http://{ip}:{ok}/"),
        "-c",
        "2",
        "--no-keepalive",
        "-d",
        "4s",
        "--json",
        "--no-save",
        "--watch",
        &ne_url,
    ]);
    assert!(
        !ids(&calm).contains(&"listen-queue-overflow".to_string()),
        "{:?}",
        calm["findings"]
    );
    assert_eq!(server_sum(&calm, "listen_overflows"), 0.0);
    assert!(
        calm["watch"]["seconds"].as_u64().unwrap() >= 3,
        "{}",
        calm["watch"]
    );
    // Then the tiny backlog (after: its half-open connections keep overflowing for
    // a while after a run).
    let (_tiny, tiny) = start_in(&ns, "python3", SERIAL_SERVER, &[&ip, "1", "0.1"]);
    let over = load_json(&[
        "load",
        &format!("http://{ip}:{tiny}/"),
        "-c",
        "16",
        "--no-keepalive",
        "-d",
        "5s",
        "--timeout",
        "8s",
        "--json",
        "--no-save",
        "--watch",
        &ne_url,
    ]);
    let f = finding(&over, "listen-queue-overflow").unwrap_or_else(|| {
        panic!(
            "listen-queue-overflow: overflows {}, findings {:?}",
            server_sum(&over, "listen_overflows"),
            ids(&over)
        )
    });
    eprintln!("tiny backlog: {}", f["title"]);
    assert!(f["evidence"]["listen_overflows"].as_f64().unwrap() >= 3.0);
}

/// The API: a ThreadingHTTPServer whose every GET takes a connection from a
/// psycopg2 pool, runs a query and commits; it waits up to 15 s for the database.
const API_SERVER: &str = r#"
import sys, time
import psycopg2, psycopg2.pool
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
listen, dsn = sys.argv[1], sys.argv[2]
deadline = time.time() + 15
while True:
    try:
        pool = psycopg2.pool.ThreadedConnectionPool(4, 16, dsn)
        break
    except psycopg2.OperationalError:
        if time.time() > deadline:
            raise
        time.sleep(0.2)
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        conn = pool.getconn()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT count(*), repeat('x', 3000) FROM generate_series(1, 50)")
                n = cur.fetchone()[0]
            conn.commit()
        finally:
            pool.putconn(conn)
        body = ("%d\n" % n).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = ThreadingHTTPServer((listen, 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// PostgreSQL stopped with a fast shutdown (SIGINT), then killed if it lingers.
struct Postgres(ChildGuard);

impl Drop for Postgres {
    fn drop(&mut self) {
        self.0.signal(libc::SIGINT);
        let _ = self.0.wait_for_exit(Duration::from_secs(10));
    }
}

/// The postgres user's uid and gid.
fn postgres_ids() -> Option<(u32, u32)> {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, "postgres"]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// Debian's PostgreSQL server binaries directory.
fn postgres_bin() -> Option<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("postgres").exists() && p.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// PostgreSQL behind `latscope wire WIRE_ARGS` started inside `ns` (so the API in
/// `ns` reaches it through the wire, and its retransmissions count in `ns`); returns
/// the guard (SIGINT, passed on to postgres, stops both) and the database's address.
fn start_postgres(
    ns: &Netns,
    bin: &std::path::Path,
    ids: (u32, u32),
    data: &str,
    wire: &[&str],
) -> (Postgres, String) {
    let mut child = ns
        .command(env!("CARGO_BIN_EXE_latscope"))
        .arg("wire")
        .args(wire)
        .args([
            "--",
            "setpriv",
            &format!("--reuid={}", ids.0),
            &format!("--regid={}", ids.1),
            "--clear-groups",
            "--",
            bin.join("postgres").to_str().unwrap(),
            "-D",
            data,
            "-k",
            data,
            "-p",
            "5432",
            "-c",
            "listen_addresses=*",
            "-c",
            "fsync=off",
        ])
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("latscope wire starts");
    let stdout = child.stdout.take().unwrap();
    let guard = Postgres(ChildGuard(child));
    let ip = crate::util::first_line(stdout, "latscope wire prints its address");
    (guard, ip)
}

/// Story 5 on real software: latscope on the host → an API in namespace A (with
/// node_exporter) → a psycopg2 pool → PostgreSQL behind the lab's wire, which A
/// reaches through TUN devices (this kernel has no netem; the wire drops packets in
/// user space just as well). First the wire is clean: no `server-retransmits`. Then
/// it drops every packet for 500 ms every 3 s (the NAT fault of story 5): the API's
/// host retransmits its queries, latency spikes with them, and `server-retransmits`
/// fires naming the server's backend side, because latscope's own connections to the
/// API retransmitted nothing.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn server_retransmits_names_the_database_link() {
    if !require_root() || !require("ip") || !require_tun() || !require(NODE_EXPORTER) {
        return;
    }
    let pg = "apt-get install postgresql";
    let Some(bin) = require_ok(postgres_bin().ok_or("PostgreSQL is not installed"), pg) else {
        return;
    };
    let Some(ids_pg) = require_ok(postgres_ids().ok_or("no postgres user"), pg) else {
        return;
    };
    let psycopg = Command::new("/usr/bin/python3")
        .args(["-c", "import psycopg2"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let hint = "apt-get install python3-psycopg2";
    if !require_that(psycopg, "/usr/bin/python3 cannot import psycopg2", hint) {
        return;
    }
    let _lock = crate::util_wire::lock();
    let api = Netns::new("api");
    let (_h, api_ip, _, _) = link(None, &api);
    let dir = TempDir::new("watch-pg");
    let data = dir.join("pgdata");
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::chown(&data, Some(ids_pg.0), Some(ids_pg.1)).unwrap();
    let data = data.to_str().unwrap().to_string();
    use std::os::unix::process::CommandExt;
    let init = Command::new(bin.join("initdb"))
        .args(["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"])
        .env("LC_ALL", "C")
        .uid(ids_pg.0)
        .gid(ids_pg.1)
        .current_dir(&data)
        .output()
        .expect("initdb runs");
    assert!(
        init.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    // The API connects over the wire, from its host address.
    let hba = format!("{data}/pg_hba.conf");
    let mut conf = std::fs::read_to_string(&hba).unwrap();
    conf.push_str("host all all 0.0.0.0/0 trust\n");
    std::fs::write(&hba, conf).unwrap();
    let (_ne, ne_url) = node_exporter(Some(&api), &api_ip, 9100);
    let run = |wire: &[&str], label: &str| {
        let (pg, db_ip) = start_postgres(&api, &bin, ids_pg, &data, wire);
        let dsn = format!("host={db_ip} port=5432 user=postgres dbname=postgres connect_timeout=3");
        let (api_server, port) = start_in(&api, "/usr/bin/python3", API_SERVER, &[&api_ip, &dsn]);
        let url = format!("http://{api_ip}:{port}/");
        util_netns::wait_http(
            format!("{api_ip}:{port}").parse().unwrap(),
            "/",
            Duration::from_secs(20),
        );
        let doc = load_json(&[
            "load",
            &url,
            "-c",
            "4",
            "-d",
            "10s",
            "--json",
            "--no-save",
            "--label",
            label,
            "--watch",
            &ne_url,
        ]);
        drop(api_server);
        drop(pg);
        doc
    };
    let clean = run(&[], "clean");
    assert!(
        clean["requests"].as_u64().unwrap() > 100,
        "{}",
        clean["requests"]
    );
    assert!(
        clean["watch"]["seconds"].as_u64().unwrap() >= 8,
        "{}",
        clean["watch"]
    );
    assert!(
        !ids(&clean).contains(&"server-retransmits".to_string()),
        "clean link: {:?}",
        clean["findings"]
    );
    let lossy = run(&["--outage-every", "3s", "--outage-for", "500ms"], "lossy");
    let retrans = server_sum(&lossy, "retrans");
    let f = finding(&lossy, "server-retransmits").unwrap_or_else(|| {
        panic!(
            "server-retransmits: server retrans {retrans}, findings {:?}, timeline {:?}",
            ids(&lossy),
            lossy["timeline"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["p99_ms"].clone(), r["server"]["retrans"].clone()))
                .collect::<Vec<_>>()
        )
    });
    eprintln!("lossy DB link: {} ({})", f["title"], f["evidence"]);
    assert_eq!(f["severity"], "warn", "{f}");
    assert_eq!(f["evidence"]["side"], "server-backend", "{f}");
    assert!(f["advice"].as_str().unwrap().contains("database"), "{f}");
    assert_eq!(
        lossy["client_tcp"]["data_retrans"], 0,
        "the client's path is clean"
    );
    eprintln!(
        "clean: server retrans {:.0}, p99 {} ms; lossy: server retrans {retrans:.0}, p99 {} ms",
        server_sum(&clean, "retrans"),
        clean["latency_ms"]["p99"],
        lossy["latency_ms"]["p99"]
    );
}
