//! Debian's Prometheus for the `--out prometheus` tests: started by the test on a free
//! 127.0.0.1 port with the remote-write receiver on, its TSDB and config in a temp
//! dir, killed (and the dir removed) on drop; and a small client for its HTTP API.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::free_port;
use crate::util_require::require;

/// How long Prometheus may take to become ready.
const READY: Duration = Duration::from_secs(60);

/// A running Prometheus.
pub struct Prometheus {
    child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

/// A fresh temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    crate::util::temp_dir(&format!("prom-{name}"))
}

impl Prometheus {
    /// Starts Prometheus and waits for `/-/ready`; None when the binary is not
    /// installed (see [`require`]).
    pub fn start(test: &str) -> Option<Prometheus> {
        Prometheus::start_with(
            test,
            "global:\n  scrape_interval: 15s\nscrape_configs: []\n",
        )
    }

    /// [`Prometheus::start`] with this configuration file.
    pub fn start_with(test: &str, yaml: &str) -> Option<Prometheus> {
        if !require("prometheus") {
            return None;
        }
        let dir = temp_dir(test);
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, yaml).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, dir, port };
        let deadline = Instant::now() + READY;
        loop {
            if p.get("/-/ready").is_ok_and(|(status, _)| status == 200) {
                return Some(p);
            }
            assert!(
                Instant::now() < deadline,
                "prometheus not ready within {READY:?}: {}",
                std::fs::read_to_string(p.dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The remote-write URL.
    pub fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// GET `path` (HTTP/1.0, so the answer is not chunked): status and body.
    pub fn get(&self, path: &str) -> Result<(u16, String), String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
        let mut text = String::new();
        s.read_to_string(&mut text).map_err(|e| e.to_string())?;
        let status = text
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not HTTP: {text}"))?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        Ok((status, body))
    }

    /// An instant query at a minute from now (the last second of a run is stamped
    /// with its end, which may be ahead of the clock); the `data.result` array.
    pub fn query(&self, promql: &str) -> Vec<serde_json::Value> {
        let q: String = url::form_urlencoded::byte_serialize(promql.as_bytes()).collect();
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 60;
        let (status, body) = self
            .get(&format!("/api/v1/query?query={q}&time={at}"))
            .expect("query");
        assert_eq!(status, 200, "{promql}: {body}");
        let doc: serde_json::Value = serde_json::from_str(&body).expect("JSON answer");
        doc["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The samples of a range-vector result's first series: (Unix ms, value), oldest first.
pub fn values(result: &[serde_json::Value]) -> Vec<(i64, f64)> {
    result
        .first()
        .and_then(|r| r["values"].as_array())
        .map(|v| {
            v.iter()
                .map(|p| {
                    (
                        (p[0].as_f64().unwrap() * 1000.0).round() as i64,
                        p[1].as_str().unwrap().parse().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
