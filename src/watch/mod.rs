//! `--watch URL`: the server's own metrics beside the load. One scraper thread per
//! Prometheus text endpoint (node_exporter, or an app's `/metrics`) scrapes it once a
//! second while the run goes, with a short timeout; a scrape that fails or is slow is
//! a gap in the record, never an error and never a delay to the load (the threads
//! share nothing with the workers). After the run the scrapes become one
//! [`ServerSecond`] per second of the load's timeline, aligned by wall clock.
//!
//! Measurement only: nothing here prints, and nothing here judges (the findings
//! `server-cpu-saturated`, `listen-queue-overflow` and `server-retransmits` read the
//! joined timeline in `diagnose`).

mod join;
mod scrape;
pub mod text;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

pub use join::server_seconds;
pub use scrape::Reading;

use crate::net::client::Client;

/// How long one scrape may take (connect, request and the whole response): a
/// slower one is a gap, so the next second's scrape starts on time.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(800);

/// The largest response read from a target (node_exporter serves ~100 KB).
pub const MAX_RESPONSE: usize = 32 << 20;

/// A series named with `--watch-metric NAME[{label="value",…}]`: every series of that
/// name whose labels include these, summed.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub name: String,
    pub labels: Vec<(String, String)>,
}

impl Selector {
    /// Parses `NAME` or `NAME{a="x",b="y"}`.
    pub fn parse(s: &str) -> Result<Selector, String> {
        let s = s.trim();
        let bad = || {
            format!(
                "--watch-metric {s:?}: expected NAME or NAME{{label=\"value\",…}}, e.g. \
                 http_requests_total{{code=\"500\"}}"
            )
        };
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(s.len());
        let name = &s[..end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(bad());
        }
        let mut labels = Vec::new();
        if end < s.len() {
            let (l, rest) = s[end..]
                .strip_prefix('{')
                .and_then(text::label_set)
                .ok_or_else(bad)?;
            if !rest.trim().is_empty() {
                return Err(bad());
            }
            labels = l.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        }
        Ok(Selector {
            name: name.to_string(),
            labels,
        })
    }

    /// Whether a sample is one of this selector's series.
    pub fn matches(&self, s: &text::Sample<'_>) -> bool {
        s.name == self.name
            && self
                .labels
                .iter()
                .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k2 == k && v2 == v))
    }
}

impl std::fmt::Display for Selector {
    /// `name` or `name{a="x",b="y"}`: the key of its value in `server.metrics`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if !self.labels.is_empty() {
            let l: Vec<String> = self
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v:?}"))
                .collect();
            write!(f, "{{{}}}", l.join(","))?;
        }
        Ok(())
    }
}

/// One endpoint to scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `http://host:port/path` as shown and stored (no query: it may carry a token).
    pub shown: String,
    /// Where the scrapes go (path and query as sent).
    pub url: crate::net::Target,
}

impl Target {
    /// Parses a `--watch` URL: http or https, no credentials in it.
    pub fn parse(s: &str) -> Result<Target, String> {
        if crate::net::target::has_control(s) {
            return Err(format!(
                "--watch {s:?}: a URL cannot hold control characters (CR, LF, TAB…)"
            ));
        }
        let u = url::Url::parse(s).map_err(|e| format!("--watch {s:?}: not a URL ({e})"))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(format!(
                "--watch {s:?}: only http:// and https:// endpoints can be scraped, not {}://",
                u.scheme()
            ));
        }
        if !u.username().is_empty() || u.password().is_some() {
            return Err(
                "--watch: credentials in the URL are not supported (they would be \
                        stored with the run); scrape an endpoint that needs none"
                    .to_string(),
            );
        }
        if u.host_str().is_none_or(str::is_empty) {
            return Err(format!("--watch {s:?}: the URL has no host"));
        }
        let url = crate::net::Target::parse(u.as_str()).map_err(|e| format!("--watch {e}"))?;
        let mut shown = u.clone();
        shown.set_query(None);
        shown.set_fragment(None);
        Ok(Target {
            shown: shown.to_string(),
            url,
        })
    }
}

/// What to watch: the endpoints and the extra series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchSpec {
    pub targets: Vec<Target>,
    pub metrics: Vec<Selector>,
    /// How https endpoints' certificates are checked (the command's `--cacert`,
    /// `-k`).
    pub tls: crate::net::tls::TlsOptions,
}

impl WatchSpec {
    /// From `--watch` and `--watch-metric` (None when no `--watch` was given; an
    /// error names the bad flag and value).
    pub fn from_flags(urls: &[String], metrics: &[String]) -> Result<Option<WatchSpec>, String> {
        if urls.is_empty() {
            if let Some(m) = metrics.first() {
                return Err(format!(
                    "--watch-metric {m:?} needs a --watch URL to scrape it from"
                ));
            }
            return Ok(None);
        }
        Ok(Some(WatchSpec {
            targets: urls
                .iter()
                .map(|u| Target::parse(u))
                .collect::<Result<_, _>>()?,
            metrics: metrics
                .iter()
                .map(|m| Selector::parse(m))
                .collect::<Result<_, _>>()?,
            tls: Default::default(),
        }))
    }
}

/// One scrape attempt: when (wall clock, the middle of the request) and what it read
/// (None: it failed or timed out — a gap).
#[derive(Debug, Clone)]
pub struct Scrape {
    pub at: SystemTime,
    pub reading: Option<Reading>,
}

/// Everything one target's thread recorded.
#[derive(Debug, Clone, Default)]
pub struct TargetLog {
    pub scrapes: Vec<Scrape>,
    /// The last failure, for the summary ("connection refused", "timed out").
    pub last_error: Option<String>,
}

/// The server's side of one second of the load's timeline (the JSON row's `server`
/// object). Rates are per second over the scrape interval that second holds; gauges
/// are the value scraped at its end. `None`: no target exposed it that second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSecond {
    /// CPU time spent running (user, nice, system, irq, softirq — every
    /// `node_cpu_seconds_total` mode but idle, iowait and steal), percent of all
    /// CPUs' time (100 = every core busy).
    pub cpu_pct: Option<f64>,
    /// Mode `iowait`, percent of all CPUs' time.
    pub iowait_pct: Option<f64>,
    /// Mode `steal` (a hypervisor ran someone else), percent of all CPUs' time.
    pub steal_pct: Option<f64>,
    /// `node_load1`.
    pub load1: Option<f64>,
    /// `node_memory_MemAvailable_bytes`.
    pub mem_available_bytes: Option<f64>,
    /// TCP segments retransmitted per second (`node_netstat_Tcp_RetransSegs`).
    pub retrans: Option<f64>,
    /// Connections dropped because an accept queue was full, per second
    /// (`node_netstat_TcpExt_ListenOverflows`).
    pub listen_overflows: Option<f64>,
    /// Incoming connections dropped by a listener, per second (overflows included;
    /// `node_netstat_TcpExt_ListenDrops`).
    pub listen_drops: Option<f64>,
    /// SYN and SYN-ACK retransmissions per second (`node_netstat_TcpExt_TCPSynRetrans`,
    /// where node_exporter exposes it).
    pub syn_retrans: Option<f64>,
    /// TCP sockets in use (`node_sockstat_TCP_inuse`).
    pub tcp_inuse: Option<f64>,
    /// Each `--watch-metric` (as written): a rate per second for counters, else the value.
    pub metrics: BTreeMap<String, f64>,
}

/// One target in the run's `watch` summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSummary {
    pub url: String,
    /// Scrapes tried, and how many failed or timed out (gaps).
    pub scrapes: u64,
    pub failed: u64,
    pub last_error: Option<String>,
}

/// The run's `watch` object: what was scraped and how well.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchSummary {
    pub targets: Vec<TargetSummary>,
    /// The `--watch-metric` selectors, as `server.metrics` keys them.
    pub metrics: Vec<String>,
    /// Seconds of the timeline with server data, and without (gaps).
    pub seconds: u64,
    pub gaps: u64,
}

/// The running scraper threads.
pub struct Watcher {
    spec: WatchSpec,
    stop: Vec<mpsc::Sender<()>>,
    done: mpsc::Receiver<()>,
    threads: Vec<JoinHandle<()>>,
    logs: Vec<Arc<Mutex<TargetLog>>>,
    /// The load's second 0 once known ([`Watcher::align`]): scrapes then fall on its
    /// second boundaries.
    phase: Arc<Mutex<Option<Instant>>>,
}

/// What the scrapers recorded, once stopped.
#[derive(Debug, Clone)]
pub struct Watched {
    pub spec: WatchSpec,
    pub logs: Vec<TargetLog>,
}

impl Watcher {
    /// Starts one scraper thread per target; each scrapes at once and then once a
    /// second.
    pub fn start(spec: WatchSpec) -> Watcher {
        let (done_tx, done) = mpsc::channel();
        let mut stop = Vec::new();
        let mut threads = Vec::new();
        let mut logs = Vec::new();
        let phase = Arc::new(Mutex::new(None));
        for target in &spec.targets {
            let (tx, rx) = mpsc::channel();
            let log = Arc::new(Mutex::new(TargetLog::default()));
            let (t, m, l, d, p, tls) = (
                target.clone(),
                spec.metrics.clone(),
                log.clone(),
                done_tx.clone(),
                phase.clone(),
                spec.tls.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name("latscope-watch".into())
                .spawn(move || {
                    let client = Client::new(&tls).map_err(|e| e.to_string());
                    scrape_loop(&client, &t, &m, &rx, &l, &p);
                    let _ = d.send(());
                });
            if let Ok(h) = spawned {
                threads.push(h);
            }
            stop.push(tx);
            logs.push(log);
        }
        Watcher {
            spec,
            stop,
            done,
            threads,
            logs,
            phase,
        }
    }

    /// Puts the next scrapes on the second boundaries of a run that started at
    /// `started` (wall clock), so each scrape interval covers one timeline second.
    /// Cheap; only the first call counts.
    pub fn align(&self, started: SystemTime) {
        if let Ok(mut p) = self.phase.lock() {
            if p.is_none() {
                let ago = SystemTime::now()
                    .duration_since(started)
                    .unwrap_or_default();
                *p = Instant::now().checked_sub(ago);
            }
        }
    }

    /// The server rows of the first `count` seconds of a run that started at
    /// `started`, from the scrapes so far (the latest second may still be a gap).
    pub fn seconds_so_far(&self, started: SystemTime, count: usize) -> Vec<Option<ServerSecond>> {
        let logs: Vec<TargetLog> = self
            .logs
            .iter()
            .map(|l| l.lock().map(|g| g.clone()).unwrap_or_default())
            .collect();
        server_seconds(&logs, &self.spec.metrics, started, count)
    }

    /// Stops the scrapers (each takes one last scrape, so the run's last second has
    /// an interval too) and returns what they recorded. Waits at most about one
    /// scrape timeout: a thread stuck in a name lookup is left behind, not waited for.
    pub fn finish(self) -> Watched {
        for s in &self.stop {
            let _ = s.send(());
        }
        let deadline = Instant::now() + SCRAPE_TIMEOUT + Duration::from_millis(700);
        let mut finished = 0;
        while finished < self.threads.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
            finished += 1;
        }
        if finished == self.threads.len() {
            for h in self.threads {
                let _ = h.join();
            }
        }
        Watched {
            spec: self.spec,
            logs: self
                .logs
                .iter()
                .map(|l| l.lock().map(|g| g.clone()).unwrap_or_default())
                .collect(),
        }
    }
}

/// Scrapes `target` at once, then on each whole second after the start (after the
/// run's start once [`Watcher::align`] set it), until told to stop (then once more).
fn scrape_loop(
    client: &Result<Client, String>,
    target: &Target,
    metrics: &[Selector],
    stop: &mpsc::Receiver<()>,
    log: &Mutex<TargetLog>,
    phase: &Mutex<Option<Instant>>,
) {
    let start = Instant::now();
    let record = |log: &Mutex<TargetLog>| {
        let (at, result) = match client {
            Ok(c) => scrape::scrape(c, target, metrics),
            Err(e) => (SystemTime::now(), Err(e.clone())),
        };
        if let Ok(mut l) = log.lock() {
            match result {
                Ok(r) => l.scrapes.push(Scrape {
                    at,
                    reading: Some(r),
                }),
                Err(e) => {
                    l.scrapes.push(Scrape { at, reading: None });
                    l.last_error = Some(e);
                }
            }
        }
    };
    loop {
        let last = Instant::now();
        record(log);
        // The next whole second after the base (a slow scrape skips, never bunches),
        // at least half a second after the last scrape (a re-phase never makes an
        // interval too short to be a rate).
        let base = phase.lock().ok().and_then(|p| *p).unwrap_or(start);
        let now = Instant::now();
        let mut next =
            base + Duration::from_secs(now.saturating_duration_since(base).as_secs() + 1);
        if next.saturating_duration_since(last) < Duration::from_millis(500) {
            next += Duration::from_secs(1);
        }
        match stop.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            _ => {
                record(log);
                return;
            }
        }
    }
}

impl Watched {
    /// The run's `watch` summary, given the joined seconds.
    pub fn summary(&self, seconds: &[Option<ServerSecond>]) -> WatchSummary {
        let with = seconds.iter().filter(|s| s.is_some()).count() as u64;
        WatchSummary {
            targets: self
                .spec
                .targets
                .iter()
                .zip(&self.logs)
                .map(|(t, l)| TargetSummary {
                    url: t.shown.clone(),
                    scrapes: l.scrapes.len() as u64,
                    failed: l.scrapes.iter().filter(|s| s.reading.is_none()).count() as u64,
                    last_error: l.last_error.clone(),
                })
                .collect(),
            metrics: self.spec.metrics.iter().map(|m| m.to_string()).collect(),
            seconds: with,
            gaps: seconds.len() as u64 - with,
        }
    }

    /// One entry per second of a timeline that started at `started` (None: a gap).
    pub fn seconds(&self, started: SystemTime, count: usize) -> Vec<Option<ServerSecond>> {
        server_seconds(&self.logs, &self.spec.metrics, started, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Selectors and URLs parse, and bad ones say which flag and what to write.
    #[test]
    fn flags_parse_and_reject_clearly() {
        let s = Selector::parse("http_requests_total{code=\"500\", method=\"GET\"}").unwrap();
        assert_eq!(s.name, "http_requests_total");
        assert_eq!(s.labels.len(), 2);
        assert_eq!(
            s.to_string(),
            "http_requests_total{code=\"500\",method=\"GET\"}"
        );
        assert_eq!(Selector::parse("up").unwrap().to_string(), "up");
        for bad in ["", "9x", "a{b=1}", "a{b=\"1\"} x", "a b"] {
            let e = Selector::parse(bad).unwrap_err();
            assert!(e.contains("--watch-metric"), "{e}");
        }
        let t = Target::parse("http://127.0.0.1:9100/metrics?token=s3cret").unwrap();
        assert_eq!(t.shown, "http://127.0.0.1:9100/metrics");
        assert_eq!(t.url.path_and_query, "/metrics?token=s3cret");
        assert_eq!(t.url.port, 9100);
        let t = Target::parse("https://h/metrics").unwrap();
        assert_eq!((t.url.port, t.shown.as_str()), (443, "https://h/metrics"));
        assert!(Target::parse("ftp://h/metrics")
            .unwrap_err()
            .contains("only http:// and https://"));
        assert!(Target::parse("http://u:p@h/metrics")
            .unwrap_err()
            .contains("credentials"));
        assert!(Target::parse("nonsense").unwrap_err().contains("--watch"));
        assert!(WatchSpec::from_flags(&[], &["up".into()])
            .unwrap_err()
            .contains("needs a --watch"));
        assert_eq!(WatchSpec::from_flags(&[], &[]).unwrap(), None);
    }
}
