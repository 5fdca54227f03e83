//! latscope's side channels over https, against real servers: `--watch` scrapes
//! Debian's node_exporter and `--out` writes to Debian's Prometheus, each serving TLS
//! (their `--web.config.file`) with a certificate from a test CA made by openssl.
//! The one side-channel client verifies certificates (RFC 9110 §4.3.4: an https
//! origin is authoritative only with a certificate the client trusts): with
//! `--cacert CA` the scrapes and writes go through, without it every one fails on
//! the certificate and says so, and `-k` skips the check as it does for the target.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::free_port;
use crate::util_lab::healthy;
use crate::util_netns::NODE_EXPORTER;
use crate::util_real::TempDir;
use crate::util_require::require;
use crate::util_wire::ChildGuard;

/// A test CA and a server certificate it signed for 127.0.0.1 (and localhost).
struct Ca {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Ca {
    fn new(dir: &TempDir) -> Ca {
        let d = dir.0.as_path();
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        openssl(
            d,
            &[
                &["req", "-x509", "-nodes", "-days", "2"][..],
                &ec,
                &["-subj", "/CN=latscope test CA", "-keyout", "ca.key"],
                &[
                    "-out",
                    "ca.pem",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                ],
                &["-addext", "keyUsage=critical,keyCertSign"],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                &["req", "-nodes"][..],
                &ec,
                &[
                    "-subj",
                    "/CN=127.0.0.1",
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            d.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             extendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                "server.pem",
                "-extfile",
                "ext.cnf",
            ],
        );
        Ca {
            ca: d.join("ca.pem"),
            cert: d.join("server.pem"),
            key: d.join("server.key"),
        }
    }

    /// The `--web.config.file` of node_exporter and Prometheus (exporter-toolkit):
    /// serve TLS with the server certificate.
    fn web_config(&self, dir: &TempDir) -> String {
        dir.write(
            "web.yml",
            &format!(
                "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
                self.cert.display(),
                self.key.display()
            ),
        )
    }
}

/// Waits until `url` answers 200 over https with the test CA (curl), or panics.
fn wait_https(ca: &Ca, url: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ok = Command::new("curl")
            .args(["-sf", "-o", "/dev/null", "--max-time", "2", "--cacert"])
            .arg(&ca.ca)
            .arg(url)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return;
        }
        assert!(Instant::now() < deadline, "{what} did not answer at {url}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs latscope, asserting exit 0; its JSON.
fn json(args: &[&str]) -> Value {
    crate::util::run_json_within(args, Duration::from_secs(60))
}

/// A one-connection `load` of `url` for `secs` with the side channel `side`
/// (`--watch URL`, `--out SINK`) and `extra` arguments; its JSON.
fn load(url: &str, secs: &str, side: [&str; 2], extra: &[&str]) -> Value {
    let mut args = vec![
        "load",
        url,
        "-c",
        "1",
        "-d",
        secs,
        "--json",
        "--no-save",
        side[0],
        side[1],
    ];
    args.extend_from_slice(extra);
    json(&args)
}

/// `--watch https://…` scrapes node_exporter behind TLS when `--cacert` names its CA
/// (and with `-k`); without either every scrape fails on the certificate, as a gap,
/// and the run still succeeds.
#[test]
fn watch_scrapes_node_exporter_over_https() {
    // openssl makes the certificates, curl waits for the server.
    if !require(NODE_EXPORTER) || !require("openssl") || !require("curl") {
        return;
    }
    let dir = TempDir::new("side-tls-watch");
    let ca = Ca::new(&dir);
    let port = free_port();
    let _ne = ChildGuard(
        Command::new(NODE_EXPORTER)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--web.config.file={}", ca.web_config(&dir)))
            .args([
                "--collector.disable-defaults",
                "--collector.cpu",
                "--collector.loadavg",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node_exporter starts"),
    );
    let metrics = format!("https://127.0.0.1:{port}/metrics");
    wait_https(&ca, &metrics, "node_exporter");
    let lab = healthy();
    let url = lab.url("/");
    let ca_path = ca.ca.to_str().unwrap();
    let run = |extra: &[&str]| load(&url, "3s", ["--watch", &metrics], extra);
    for extra in [&["--cacert", ca_path][..], &["-k"]] {
        let doc = run(extra);
        let t = &doc["watch"]["targets"][0];
        assert!(t["scrapes"].as_u64().unwrap() >= 3, "{extra:?}: {t}");
        assert_eq!(t["failed"], 0, "{extra:?}: {t}");
        let rows = doc["timeline"].as_array().unwrap();
        assert!(
            rows.iter()
                .filter(|r| r["server"]["load1"].as_f64().is_some())
                .count()
                >= 2,
            "{extra:?}: server rows from node_exporter: {rows:?}"
        );
    }
    let doc = run(&[]);
    let t = &doc["watch"]["targets"][0];
    assert!(t["scrapes"].as_u64().unwrap() >= 3, "{t}");
    assert_eq!(t["failed"], t["scrapes"], "{t}");
    let why = t["last_error"].as_str().unwrap();
    assert!(why.contains("TLS") && why.contains("certificate"), "{why}");
}

/// `--out prometheus=https://…` writes to Prometheus behind TLS when `--cacert` names
/// its CA (the series are there to query); without it every write fails on the
/// certificate (no empty trust store, no silent skip of the check).
#[test]
fn out_writes_to_prometheus_over_https() {
    if !require("prometheus") || !require("openssl") || !require("curl") {
        return;
    }
    let dir = TempDir::new("side-tls-out");
    let ca = Ca::new(&dir);
    let config = dir.write("prometheus.yml", "global:\n  scrape_interval: 15s\n");
    let port = free_port();
    let log = std::fs::File::create(dir.0.join("prometheus.log")).unwrap();
    let _prom = ChildGuard(
        Command::new("prometheus")
            .arg(format!("--config.file={config}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--web.config.file={}", ca.web_config(&dir)))
            .arg("--web.enable-remote-write-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts"),
    );
    let base = format!("https://127.0.0.1:{port}");
    wait_https(&ca, &format!("{base}/-/ready"), "prometheus");
    let lab = healthy();
    let url = lab.url("/");
    let out = format!("prometheus={base}/api/v1/write");
    let ca_path = ca.ca.to_str().unwrap();
    let run = |extra: &[&str]| load(&url, "2s", ["--out", &out], extra);

    let doc = run(&["--cacert", ca_path]);
    let o = &doc["outputs"][0];
    assert!(o["writes"].as_u64().unwrap() >= 2, "{o}");
    assert_eq!(o["failed"], 0, "{o}");
    // Prometheus has the run's series.
    let query = format!(
        "{base}/api/v1/query?query=latscope_requests_total%7Brun%3D%22{}%22%7D",
        o["run"].as_str().unwrap()
    );
    let answer = Command::new("curl")
        .args(["-sf", "--max-time", "10", "--cacert", ca_path, &query])
        .output()
        .expect("curl runs");
    let answer: Value = serde_json::from_slice(&answer.stdout).expect("a JSON answer");
    let series = answer["data"]["result"].as_array().unwrap();
    assert!(!series.is_empty(), "{answer}");

    let doc = run(&[]);
    let o = &doc["outputs"][0];
    assert!(o["writes"].as_u64().unwrap() >= 2, "{o}");
    assert_eq!(o["failed"], o["writes"], "{o}");
    let why = o["last_error"].as_str().unwrap();
    assert!(why.contains("TLS") && why.contains("certificate"), "{why}");
}
