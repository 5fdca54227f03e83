//! One scrape: a GET by latscope's one side-channel client (`net::client`: hyper
//! over `net::tls`, so http:// and https:// with `--cacert`/`-k`) within
//! [`SCRAPE_TIMEOUT`], and the few numbers latscope keeps of the exposition (the
//! rest is dropped at once, so a long run holds a few hundred bytes per scrape).

use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::Method;

use crate::net::client::Client;
use crate::net::RequestSpec;

use super::text::{self, Exposition};
use super::{Selector, Target, MAX_RESPONSE, SCRAPE_TIMEOUT};

/// What latscope keeps of one scrape: node_exporter's counters (summed over CPUs)
/// and gauges, and each `--watch-metric` (None: not in this exposition).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// `node_cpu_seconds_total`, all modes, and the idle, iowait and steal modes.
    pub cpu_total: Option<f64>,
    pub cpu_idle: Option<f64>,
    pub cpu_iowait: Option<f64>,
    pub cpu_steal: Option<f64>,
    pub load1: Option<f64>,
    pub mem_available: Option<f64>,
    pub tcp_inuse: Option<f64>,
    pub retrans: Option<f64>,
    pub listen_overflows: Option<f64>,
    pub listen_drops: Option<f64>,
    pub syn_retrans: Option<f64>,
    /// Per `--watch-metric`: the summed value and whether it is a counter.
    pub metrics: Vec<Option<(f64, bool)>>,
}

impl Reading {
    /// Extracts the numbers from an exposition.
    pub fn from_text(body: &str, metrics: &[Selector]) -> Reading {
        let e = text::parse(body);
        let one = |name: &str| e.samples.iter().find(|s| s.name == name).map(|s| s.value);
        let cpu = |mode: Option<&str>| {
            let mut sum = None;
            for s in e
                .samples
                .iter()
                .filter(|s| s.name == "node_cpu_seconds_total")
            {
                let m = s.labels.iter().find(|(k, _)| *k == "mode").map(|(_, v)| v);
                if mode.is_none() || m.map(String::as_str) == mode {
                    *sum.get_or_insert(0.0) += s.value;
                }
            }
            sum
        };
        Reading {
            cpu_total: cpu(None),
            cpu_idle: cpu(Some("idle")),
            cpu_iowait: cpu(Some("iowait")),
            cpu_steal: cpu(Some("steal")),
            load1: one("node_load1"),
            mem_available: one("node_memory_MemAvailable_bytes"),
            tcp_inuse: one("node_sockstat_TCP_inuse"),
            retrans: one("node_netstat_Tcp_RetransSegs"),
            listen_overflows: one("node_netstat_TcpExt_ListenOverflows"),
            listen_drops: one("node_netstat_TcpExt_ListenDrops"),
            syn_retrans: one("node_netstat_TcpExt_TCPSynRetrans"),
            metrics: metrics.iter().map(|m| selected(&e, m)).collect(),
        }
    }
}

/// The sum of a selector's series, and whether they count up.
fn selected(e: &Exposition<'_>, m: &Selector) -> Option<(f64, bool)> {
    let mut sum = None;
    for s in e.samples.iter().filter(|s| m.matches(s)) {
        if s.value.is_finite() {
            *sum.get_or_insert(0.0) += s.value;
        }
    }
    sum.map(|v| (v, e.is_counter(&m.name)))
}

/// Scrapes `target` once: when (the middle of the request, wall clock) and what it
/// read, or why not.
pub fn scrape(
    client: &Client,
    target: &Target,
    metrics: &[Selector],
) -> (SystemTime, Result<Reading, String>) {
    let (wall, start) = (SystemTime::now(), Instant::now());
    let body = fetch(client, target);
    let at = wall + start.elapsed() / 2;
    (at, body.map(|b| Reading::from_text(&b, metrics)))
}

/// GETs the target's path, all of it within [`SCRAPE_TIMEOUT`]: the body of a 200.
fn fetch(client: &Client, t: &Target) -> Result<String, String> {
    let spec = RequestSpec::with_fields(
        Method::GET,
        &[
            ("accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"),
            ("accept-encoding", "identity"),
            ("connection", "close"),
        ],
        Bytes::new(),
    );
    let answer = client
        .send(&t.url, &spec, MAX_RESPONSE, SCRAPE_TIMEOUT)
        .map_err(|e| e.to_string())?;
    if answer.truncated {
        return Err(format!("response over {} MB", MAX_RESPONSE >> 20));
    }
    if answer.status != 200 {
        let reason = http::StatusCode::from_u16(answer.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        return Err(format!("answered {} {reason}", answer.status)
            .trim_end()
            .to_string());
    }
    Ok(String::from_utf8_lossy(&answer.body).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node_exporter's series become the reading's numbers; CPU sums over CPUs and
    /// modes; a selector sums its series and knows a counter.
    #[test]
    fn reading_extracts_node_exporter_numbers() {
        let text = "# TYPE node_cpu_seconds_total counter\n\
            node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10\n\
            node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 5\n\
            node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 20\n\
            node_cpu_seconds_total{cpu=\"1\",mode=\"iowait\"} 1\n\
            node_cpu_seconds_total{cpu=\"1\",mode=\"steal\"} 2\n\
            node_load1 1.5\n\
            node_netstat_Tcp_RetransSegs 42\n\
            node_netstat_TcpExt_ListenOverflows 3\n\
            # TYPE app_queue gauge\n\
            app_queue{pool=\"db\"} 4\n\
            app_queue{pool=\"http\"} 6\n\
            app_errors_total{code=\"500\"} 9\n";
        let m = [
            Selector::parse("app_queue").unwrap(),
            Selector::parse("app_queue{pool=\"db\"}").unwrap(),
            Selector::parse("app_errors_total").unwrap(),
            Selector::parse("missing").unwrap(),
        ];
        let r = Reading::from_text(text, &m);
        assert_eq!(r.cpu_total, Some(38.0));
        assert_eq!(r.cpu_idle, Some(30.0));
        assert_eq!(r.cpu_iowait, Some(1.0));
        assert_eq!(r.cpu_steal, Some(2.0));
        assert_eq!(r.load1, Some(1.5));
        assert_eq!(r.retrans, Some(42.0));
        assert_eq!(r.listen_overflows, Some(3.0));
        assert_eq!(r.listen_drops, None);
        assert_eq!(
            r.metrics,
            vec![
                Some((10.0, false)),
                Some((4.0, false)),
                Some((9.0, true)),
                None
            ]
        );
    }

    /// A server that answers each connection with `answer` once; its port.
    fn answering(answer: &'static str) -> u16 {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
            }
            c.write_all(answer.as_bytes()).unwrap();
        });
        port
    }

    /// A 200 body (plain or chunked) is read; another status is an error that says
    /// it; a response cut short is an error.
    #[test]
    fn bodies_and_statuses() {
        let client = Client::new(&Default::default()).unwrap();
        let get = |answer: &'static str| {
            let t =
                Target::parse(&format!("http://127.0.0.1:{}/metrics", answering(answer))).unwrap();
            fetch(&client, &t)
        };
        assert_eq!(
            get("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nup 1\n").unwrap(),
            "up 1\n"
        );
        assert_eq!(
            get("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nup 1\r\n1\r\n\n\r\n0\r\n\r\n")
                .unwrap(),
            "up 1\n"
        );
        assert!(get("HTTP/1.0 503 Service Unavailable\r\n\r\n")
            .unwrap_err()
            .contains("503"));
        assert!(get("HTTP/1.0 200 OK\r\n").is_err());
    }
}
