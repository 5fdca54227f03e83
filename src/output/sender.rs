//! Sending remote writes without ever slowing the run: a thread of its own fed by a
//! bounded queue. The run's thread only queues (a full queue drops the write and
//! counts it failed); each write gets [`WRITE_TIMEOUT`] in all; at the end the queue
//! gets a short grace to drain and whatever is left is counted failed, so a
//! Prometheus that is down or stalls never holds the run or its exit. An HTTP/1.1
//! POST by latscope's one side-channel client (`net::client`: hyper over
//! `net::tls`, certificates checked against the web roots and `--cacert` unless
//! `-k`); nothing here prints.

use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;

use super::series::{Sample, Series, Snapshot};
use crate::net::client::Client;
use crate::net::tls::TlsOptions;
use crate::net::RequestSpec;

/// The most a write may take: connect, send and the answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// Writes waiting to be sent; more are dropped (Prometheus is behind).
pub const QUEUE: usize = 8;
/// After the run, how long queued writes may still take before they count as failed
/// (for all outputs together).
pub const DRAIN: Duration = Duration::from_millis(2500);

/// Where remote writes go, parsed from `--out prometheus=URL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// Scheme, host, port, path and query, as sent.
    pub target: crate::net::Target,
    /// The URL as shown (no credentials).
    pub shown: String,
}

impl Endpoint {
    /// Parses an http:// or https:// URL; credentials in it are refused (they would
    /// end up in the stored run).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        if crate::net::target::has_control(url) {
            return Err(format!(
                "{url:?}: a URL cannot hold control characters (CR, LF, TAB…)"
            ));
        }
        let u = url::Url::parse(url).map_err(|e| format!("'{url}' is not a URL: {e}"))?;
        if !matches!(u.scheme(), "http" | "https") {
            let s = u.scheme();
            return Err(format!("'{url}': scheme '{s}' (use http:// or https://)"));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(format!(
                "'{}': credentials in the URL are not supported (they would be stored with the run)",
                crate::redact::redact_urls(url)
            ));
        }
        if u.host_str().is_none_or(str::is_empty) {
            return Err(format!("'{url}' has no host"));
        }
        let target = crate::net::Target::parse(u.as_str()).map_err(|e| e.to_string())?;
        Ok(Endpoint {
            target,
            shown: crate::redact::redact_urls(u.as_str()),
        })
    }
}

/// How the writes went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Writes the run made (one per second fed).
    pub writes: u64,
    /// Writes Prometheus accepted (2xx).
    pub ok: u64,
    /// Writes never sent: dropped from a full queue, or still queued when the run
    /// ended and the drain time was up.
    pub unsent: u64,
    /// The last error a write met (refused, timed out, an HTTP error).
    pub last_error: Option<String>,
}

struct Job {
    snapshots: Vec<Snapshot>,
}

/// A running sender.
pub struct Sender {
    tx: Option<SyncSender<Job>>,
    tally: Arc<Mutex<Tally>>,
    /// Set when the run ended: writes not started by then are not sent.
    deadline: Arc<Mutex<Option<Instant>>>,
    done: Receiver<()>,
}

impl Sender {
    /// Starts the sender thread for `endpoint`, labelling with `series`; https
    /// certificates are checked as `tls` says.
    pub fn start(endpoint: Endpoint, series: Series, tls: &TlsOptions) -> Sender {
        let (tx, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let (done_tx, done) = mpsc::channel();
        let tally = Arc::new(Mutex::new(Tally::default()));
        let deadline = Arc::new(Mutex::new(None::<Instant>));
        let (t, d, tls) = (tally.clone(), deadline.clone(), tls.clone());
        let spawned = std::thread::Builder::new()
            .name("latscope-out".into())
            .spawn(move || {
                let client = Client::new(&tls).map_err(|e| e.to_string());
                for job in rx {
                    let late = d
                        .lock()
                        .map(|d| d.is_some_and(|d| Instant::now() > d))
                        .unwrap_or(false);
                    let result =
                        if late {
                            None
                        } else {
                            let samples: Vec<Sample> = job
                                .snapshots
                                .iter()
                                .flat_map(|s| series.samples(s))
                                .collect();
                            Some(client.as_ref().map_err(Clone::clone).and_then(|c| {
                                post(c, &endpoint, super::remote_write::body(&samples))
                            }))
                        };
                    if let Ok(mut t) = t.lock() {
                        match result {
                            Some(Ok(())) => t.ok += 1,
                            Some(Err(e)) => t.last_error = Some(e),
                            None => t.unsent += 1,
                        }
                    }
                }
                let _ = done_tx.send(());
            });
        if let Err(e) = spawned {
            if let Ok(mut t) = tally.lock() {
                t.last_error = Some(format!("cannot start the sender thread: {e}"));
            }
        }
        Sender {
            tx: Some(tx),
            tally,
            deadline,
            done,
        }
    }

    /// Queues one write of `snapshots`; never blocks (a full queue drops it).
    pub fn send(&mut self, snapshots: Vec<Snapshot>) {
        if snapshots.is_empty() {
            return;
        }
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        tally.writes += 1;
        let Some(tx) = &self.tx else { return };
        match tx.try_send(Job { snapshots }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => tally.unsent += 1,
            Err(TrySendError::Disconnected(_)) => {
                tally.unsent += 1;
                if tally.last_error.is_none() {
                    tally.last_error = Some("the sender thread stopped".into());
                }
            }
        }
    }

    /// Closes the queue: writes still queued at `deadline` are not sent.
    pub fn close(&mut self, deadline: Instant) {
        if let Ok(mut d) = self.deadline.lock() {
            *d = Some(deadline);
        }
        self.tx = None;
    }

    /// Waits until the queue is empty or `deadline`, then leaves the thread behind (a
    /// write in progress is bounded by its own timeout).
    pub fn finish(mut self, deadline: Instant) -> Tally {
        self.close(deadline);
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let tally = self.tally.lock().unwrap_or_else(|e| e.into_inner()).clone();
        tally
    }
}

/// The most of an error answer's body kept for the reason (Prometheus says why).
const ANSWER_LIMIT: usize = 4096;

/// One remote write: POST `body`, success on 2xx; the error says what happened.
pub fn post(client: &Client, endpoint: &Endpoint, body: Vec<u8>) -> Result<(), String> {
    let spec = RequestSpec::with_fields(
        Method::POST,
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "snappy"),
            ("x-prometheus-remote-write-version", "0.1.0"),
            ("accept-encoding", "identity"),
            ("connection", "close"),
        ],
        Bytes::from(body),
    );
    let answer = client
        .send(&endpoint.target, &spec, ANSWER_LIMIT, WRITE_TIMEOUT)
        .map_err(|e| e.to_string())?;
    if (200..300).contains(&answer.status) {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&answer.body);
    let why = text
        .trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    Err(format!("HTTP {} {why}", answer.status)
        .trim_end()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// URLs: http and https with their default ports, a path with a query kept,
    /// IPv6 literals unbracketed for connecting and bracketed in Host, credentials
    /// and other schemes refused.
    #[test]
    fn endpoints_parse() {
        let e = Endpoint::parse("http://127.0.0.1:9090/api/v1/write")
            .unwrap()
            .target;
        assert_eq!(
            (e.host.as_str(), e.port, e.path_and_query.as_str(), e.scheme),
            ("127.0.0.1", 9090, "/api/v1/write", crate::net::Scheme::Http)
        );
        assert_eq!(e.authority(), "127.0.0.1:9090");
        let e = Endpoint::parse("https://[::1]/w?tenant=a").unwrap().target;
        assert_eq!(
            (e.host.as_str(), e.port, e.path_and_query.as_str()),
            ("::1", 443, "/w?tenant=a")
        );
        assert_eq!(e.authority(), "[::1]");
        assert!(Endpoint::parse("ftp://x/").is_err());
        assert!(Endpoint::parse("http://u:p@x/")
            .unwrap_err()
            .contains("credentials"));
        assert!(Endpoint::parse("nonsense").is_err());
    }

    /// A write to a port nobody listens on fails fast with the reason; the sender
    /// counts it and finishes at once.
    #[test]
    fn a_refused_write_is_counted_not_fatal() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = Endpoint::parse(&format!("http://127.0.0.1:{port}/api/v1/write")).unwrap();
        let series = Series::new("r", None, "h:1", &[], vec![]);
        let mut s = Sender::start(e, series, &TlsOptions::default());
        let snap = Snapshot {
            ts_ms: 1000,
            requests_total: 1,
            errors_total: vec![],
            dropped_total: 0,
            checks_total: 0,
            checks_failed_total: 0,
            active: 1,
            latency: None,
            service: None,
            endpoints: vec![],
            server: vec![],
        };
        s.send(vec![snap.clone()]);
        s.send(vec![snap]);
        s.send(vec![]);
        let t0 = Instant::now();
        let tally = s.finish(Instant::now() + DRAIN);
        assert!(t0.elapsed() < DRAIN + Duration::from_millis(500));
        assert_eq!((tally.writes, tally.ok), (2, 0));
        assert!(tally.last_error.unwrap().contains("connect"));
    }

    /// A server that answers 204 counts as a success; one that answers 400 with a
    /// reason has the reason reported.
    #[test]
    fn answers_are_read() {
        for (answer, want) in [
            ("HTTP/1.1 204 No Content\r\n\r\n", Ok(())),
            (
                "HTTP/1.1 400 Bad Request\r\nContent-Length: 20\r\n\r\nout of order sample\n",
                Err("HTTP 400 out of order sample".to_string()),
            ),
        ] {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            let server = std::thread::spawn(move || {
                let (mut c, _) = l.accept().unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
                    let n = c.read(&mut buf).unwrap();
                    got.extend_from_slice(&buf[..n]);
                }
                c.write_all(answer.as_bytes()).unwrap();
                String::from_utf8_lossy(&got).to_string()
            });
            let e = Endpoint::parse(&format!("http://127.0.0.1:{port}/api/v1/write")).unwrap();
            let client = Client::new(&TlsOptions::default()).unwrap();
            assert_eq!(post(&client, &e, b"x".to_vec()), want);
            let head = server.join().unwrap();
            assert!(head.starts_with("POST /api/v1/write HTTP/1.1\r\n"));
            assert!(head.contains("Content-Encoding: snappy\r\n"));
            assert!(head.contains("Content-Type: application/x-protobuf\r\n"));
            assert!(head.contains("X-Prometheus-Remote-Write-Version: 0.1.0\r\n"));
        }
    }
}
