//! One scrape: an HTTP/1.0 GET on a plain socket within [`SCRAPE_TIMEOUT`] (HTTP/1.0,
//! so the server closes the connection at the end of the body and never chunks it),
//! and the few numbers latscope keeps of the exposition (the rest is dropped at
//! once, so a long run holds a few hundred bytes per scrape).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Instant, SystemTime};

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
pub fn scrape(target: &Target, metrics: &[Selector]) -> (SystemTime, Result<Reading, String>) {
    let (wall, start) = (SystemTime::now(), Instant::now());
    let body = fetch(target, start + SCRAPE_TIMEOUT);
    let at = wall + start.elapsed() / 2;
    (at, body.map(|b| Reading::from_text(&b, metrics)))
}

/// GETs the target's path, all of it before `deadline`.
fn fetch(t: &Target, deadline: Instant) -> Result<String, String> {
    let left = |what: &str| {
        let d = deadline.saturating_duration_since(Instant::now());
        if d.is_zero() {
            Err(format!("timed out ({what})"))
        } else {
            Ok(d)
        }
    };
    let addr = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", t.host))?
        .next()
        .ok_or_else(|| format!("{} has no address", t.host))?;
    let mut s = TcpStream::connect_timeout(&addr, left("connect")?).map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(left("send")?))
        .map_err(|e| e.to_string())?;
    let host = if t.host.contains(':') {
        format!("[{}]:{}", t.host, t.port)
    } else {
        format!("{}:{}", t.host, t.port)
    };
    let req = format!(
        "GET {} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: latscope/{}\r\n\
         Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\nAccept-Encoding: identity\r\n\r\n",
        t.path,
        env!("CARGO_PKG_VERSION")
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(64 << 10);
    let mut chunk = [0u8; 16 << 10];
    loop {
        s.set_read_timeout(Some(left("reading the response")?))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out (reading the response)".into())
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
        if buf.len() > MAX_RESPONSE {
            return Err(format!("response over {} MB", MAX_RESPONSE >> 20));
        }
    }
    body_of(&buf)
}

/// The body of a complete HTTP response, when its status is 200.
fn body_of(buf: &[u8]) -> Result<String, String> {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the response has no complete head")?;
    let head = String::from_utf8_lossy(&buf[..split]);
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        let line = head.lines().next().unwrap_or("").trim();
        return Err(format!("answered {line:?}"));
    }
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().contains("chunked")
        })
    });
    let body = &buf[split + 4..];
    if chunked {
        return dechunk(body).ok_or_else(|| "a broken chunked body".to_string());
    }
    Ok(String::from_utf8_lossy(body).into_owned())
}

/// Decodes a chunked body (a server that chunks even an HTTP/1.0 answer).
fn dechunk(mut b: &[u8]) -> Option<String> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(String::from_utf8_lossy(&out).into_owned());
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
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

    /// A 200 body (plain or chunked) is read; another status is an error that says it.
    #[test]
    fn bodies_and_statuses() {
        assert_eq!(
            body_of(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nup 1\n").unwrap(),
            "up 1\n"
        );
        assert_eq!(
            body_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nup 1\r\n1\r\n\n\r\n0\r\n\r\n")
                .unwrap(),
            "up 1\n"
        );
        assert!(body_of(b"HTTP/1.0 503 Service Unavailable\r\n\r\n")
            .unwrap_err()
            .contains("503"));
        assert!(body_of(b"HTTP/1.0 200 OK\r\n").is_err());
    }
}
