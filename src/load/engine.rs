//! The engine's controller: prepares what every worker shares (resolved address, TLS
//! configuration, pre-encoded requests), starts one worker thread per `--threads`
//! (each with its own current-thread runtime, see `worker`), samples the host's TCP
//! retransmits and the workers' CPU once a second, ends the run at its deadline or on
//! the stop flag, and merges the threads' recorders into a [`LoadResult`].

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;

use super::conn::Connector;
use super::live::{Feed, LiveSecond};
use super::plan::{LoadPlan, Model};
use super::recorder::{Live, Recorder};
use super::result::{self, LoadResult};
use super::stages::Ramp;
use super::{http1, raw, sys, worker, LoadError};
use crate::net::dns::lookup_override;
use crate::net::tls::{self, TlsOptions};
use crate::net::HttpVersionPref;
use crate::net::Scheme;

/// Run phases (the `phase` atomic).
pub const RUNNING: u8 = 0;
/// No new requests; in-flight ones may finish within [`grace`].
pub const DRAIN: u8 = 1;
/// Stop now: in-flight requests are abandoned and counted incomplete.
pub const ABORT: u8 = 2;

/// How long requests in flight at the end of a timed run may still finish: the
/// request timeout, but at most 2 s (k6's gracefulStop, shorter). What is still in
/// flight after it is abandoned and counted as `incomplete`, so `-d` bounds the run.
pub fn grace(timeout: Duration) -> Duration {
    timeout.min(Duration::from_secs(2))
}

/// What the controller shares with every worker.
pub struct Control {
    pub start: Instant,
    pub phase: AtomicU8,
    /// Closed count mode: requests still to send (≤ 0: none).
    pub tickets: Option<AtomicI64>,
    /// Where the worker threads start together.
    pub start_line: StartLine,
}

/// The start line: each worker thread, once its engine is set up (its runtime, its
/// ring), waits here for the others before its VUs send anything. A thread slow to
/// start (its ring set up on a busy host, or simply scheduled late) would otherwise
/// find a closed run's requests taken by the others, and its VUs (their setup, their
/// CSV rows) never ran. Bounded: a thread that never arrives (it panicked) holds the
/// others at most [`START_WAIT`].
pub struct StartLine {
    arrived: Mutex<usize>,
    all: Condvar,
    threads: usize,
}

/// The longest a worker thread waits at the start line for the others.
pub const START_WAIT: Duration = Duration::from_secs(1);

impl StartLine {
    pub fn new(threads: usize) -> Self {
        StartLine {
            arrived: Mutex::new(0),
            all: Condvar::new(),
            threads,
        }
    }

    /// Arrives and waits for every other thread (at most [`START_WAIT`]).
    pub fn wait(&self) {
        let n = self.arrive();
        let _ = self
            .all
            .wait_timeout_while(n, START_WAIT, |n| *n < self.threads);
    }

    /// Arrives without waiting (a thread that ends the run before it starts).
    pub fn arrive(&self) -> std::sync::MutexGuard<'_, usize> {
        let mut n = self.arrived.lock().unwrap_or_else(PoisonError::into_inner);
        *n += 1;
        if *n >= self.threads {
            self.all.notify_all();
        }
        n
    }
}

impl Control {
    /// Whether requests may still be started.
    #[inline]
    pub fn running(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == RUNNING
    }

    /// Claims the right to send one more request (closed model).
    #[inline]
    pub fn claim(&self) -> bool {
        if !self.running() {
            return false;
        }
        match &self.tickets {
            None => true,
            Some(t) => t.fetch_sub(1, Ordering::Relaxed) > 0,
        }
    }
}

/// What every worker reads: the plan and everything derived from it once.
pub struct Prepared<'a> {
    pub plan: &'a LoadPlan,
    pub connector: Connector,
    /// HTTP/1.1 requests, encoded once, per endpoint.
    pub encoded: Vec<Bytes>,
    pub is_head: Vec<bool>,
    /// The first endpoint the VUs pick from: the ones before it are a scenario's
    /// `[[setup]]`, run once per VU.
    pub first: usize,
    /// Cumulative weights of the endpoints from `first` on, for weighted order
    /// (summed in u64: 10,000 weights of at most
    /// [`MAX_WEIGHT`](super::limits::MAX_WEIGHT) never overflow it).
    pub cumulative: Vec<u64>,
    pub ramp: Ramp,
    pub raw: Option<Arc<std::fs::File>>,
    pub raw_names: Arc<Vec<String>>,
    /// Speak HTTP/2: h2c with prior knowledge (`--http2` on http), or h2 because the
    /// server chose it in ALPN on a first connection made before the run.
    pub h2: bool,
    /// HTTP/2 requests, prepared once, per endpoint.
    pub h2_requests: Vec<super::h2::Request>,
    /// Run on the io_uring engine (`uring`), not epoll.
    pub uring: bool,
    /// `--http3`: QUIC connections shared by `--streams` VUs, instead of TCP.
    pub h3: Option<super::http3::H3Setup>,
    /// `setup_scope = "run"`: what the first VU's setup left (its variables and
    /// cookies), for every VU to start with.
    pub setup_once: std::sync::OnceLock<(Vec<String>, super::script::cookies::Jar)>,
}

impl Prepared<'_> {
    /// VUs per connection: `--streams` on HTTP/2, 1 on HTTP/1.1.
    pub fn streams(&self) -> usize {
        if self.h2 || self.h3.is_some() {
            self.plan.streams.max(1) as usize
        } else {
            1
        }
    }
}

/// Whether the server picks h2 in ALPN: one connection before the run (not
/// recorded), bounded by the request timeout, at most 10 s and at most the run's
/// length, and ended at once by the stop flag (Ctrl-C), so a server that stalls the
/// handshake costs no more than one request would. None when it did not answer (the
/// run then records the failures itself).
fn alpn_says_h2(connector: &Connector, limit: Duration, stop: &AtomicBool) -> Option<bool> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    rt.block_on(async {
        let phase = std::cell::Cell::new(super::conn::Phase::Connect);
        let stopped = async {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            r = tokio::time::timeout(limit, connector.open(&phase)) => match r {
                Ok(Ok(o)) => Some(o.h2),
                _ => None,
            },
            _ = stopped => None,
        }
    })
}

fn resolve(plan: &LoadPlan) -> Result<SocketAddr, LoadError> {
    let t = &plan.target;
    if let Some(a) = lookup_override(&plan.client.resolve, &t.host, t.port) {
        return Ok(a);
    }
    let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| LoadError::Resolve(t.host.clone(), e.to_string()))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| LoadError::Resolve(t.host.clone(), "no address".into()))
}

fn csv_name(n: &str) -> String {
    if n.contains([',', '"', '\n']) {
        format!("\"{}\"", n.replace('"', "\"\""))
    } else {
        n.to_string()
    }
}

impl<'a> Prepared<'a> {
    fn new(plan: &'a LoadPlan, stop: &AtomicBool) -> Result<Prepared<'a>, LoadError> {
        if plan.endpoints.is_empty() {
            return Err(LoadError::Plan("no request to send".into()));
        }
        let addr = resolve(plan)?;
        let tls_config = if plan.target.scheme == Scheme::Https {
            let alpn = match plan.client.version {
                HttpVersionPref::Http1 => vec![tls::ALPN_HTTP11.to_vec()],
                HttpVersionPref::Http2 => vec![tls::ALPN_H2.to_vec()],
                // A new connection per request is an HTTP/1.1 habit (curl loops, ab).
                HttpVersionPref::Auto if !plan.keepalive => {
                    vec![tls::ALPN_HTTP11.to_vec()]
                }
                HttpVersionPref::Auto => vec![tls::ALPN_H2.to_vec(), tls::ALPN_HTTP11.to_vec()],
            };
            Some(
                tls::client_config(&TlsOptions {
                    insecure: plan.client.insecure,
                    cacert: plan.client.cacert.clone(),
                    alpn,
                })
                .map_err(|e| LoadError::Tls(e.to_string()))?,
            )
        } else {
            None
        };
        let tls = match tls_config {
            Some(c) => Some((
                c,
                tls::server_name(&plan.target.host)
                    .map_err(|e| LoadError::Tls(format!("{}: {e}", plan.target.host)))?,
            )),
            None => None,
        };
        let raw = match &plan.raw {
            Some(p) => {
                Some(raw::create(p).map_err(|e| LoadError::Raw(p.display().to_string(), e))?)
            }
            None => None,
        };
        let mut acc = 0;
        let mut connector = Connector::new(addr, tls);
        let limit = plan
            .client
            .timeout
            .min(Duration::from_secs(10))
            .min(plan.run_length().unwrap_or(Duration::MAX));
        let h3 = if plan.client.http3 {
            let setup = super::http3::H3Setup::new(plan, addr)?;
            setup.preflight(limit, stop)?;
            Some(setup)
        } else {
            None
        };
        let h2 = match (plan.target.scheme, plan.client.version) {
            _ if h3.is_some() => false,
            (_, HttpVersionPref::Http1) => false,
            (Scheme::Https, v) if plan.keepalive || v == HttpVersionPref::Http2 => {
                match alpn_says_h2(&connector, limit, stop) {
                    Some(h2) => h2,
                    None if v == HttpVersionPref::Http2 => true,
                    None => {
                        // No answer before the run: offer only http/1.1, so every
                        // connection speaks what the workers will send.
                        let config = tls::client_config(&TlsOptions {
                            insecure: plan.client.insecure,
                            cacert: plan.client.cacert.clone(),
                            alpn: vec![tls::ALPN_HTTP11.to_vec()],
                        })
                        .map_err(|e| LoadError::Tls(e.to_string()))?;
                        let name = tls::server_name(&plan.target.host)
                            .map_err(|e| LoadError::Tls(format!("{}: {e}", plan.target.host)))?;
                        connector = Connector::new(addr, Some((config, name)));
                        false
                    }
                }
            }
            (Scheme::Https, _) => false,
            (_, v) => v == HttpVersionPref::Http2,
        };
        let h2_requests = if h2 {
            plan.endpoints
                .iter()
                .enumerate()
                .map(|(i, e)| super::h2::Request::new(&plan.target, e).map(|r| r.keyed(i)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(LoadError::Plan)?
        } else {
            Vec::new()
        };
        let first = plan.script.as_ref().map_or(0, |s| s.setup);
        Ok(Prepared {
            plan,
            connector,
            encoded: plan
                .endpoints
                .iter()
                .map(|e| http1::encode(&plan.target, e, plan.keepalive))
                .collect(),
            is_head: plan
                .endpoints
                .iter()
                .map(|e| e.method == http::Method::HEAD)
                .collect(),
            first,
            cumulative: plan.endpoints[first..]
                .iter()
                .map(|e| {
                    acc += u64::from(e.weight.max(1));
                    acc
                })
                .collect(),
            ramp: plan.ramp(),
            raw,
            raw_names: Arc::new(plan.endpoints.iter().map(|e| csv_name(&e.name)).collect()),
            uring: super::uring::choose(plan, h2)?,
            h2,
            h2_requests,
            h3,
            setup_once: std::sync::OnceLock::new(),
        })
    }
}

/// A snapshot of the run, about 200 ms after each second ends (once every thread
/// has closed it), and once more when the run is over (`finished`).
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    /// The planned length, when known.
    pub length: Option<Duration>,
    pub requests: u64,
    pub errors: u64,
    pub dropped: u64,
    /// Requests completed in the last second.
    pub rps: f64,
    /// The last second's p50 and p99 (the worst thread's), ms.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub active: u64,
    /// Wall clock at the run's second 0.
    pub started: SystemTime,
    /// Seconds completed since the previous call, in order, merged over all worker
    /// threads as the run's timeline stores them.
    pub seconds: Vec<LiveSecond>,
    /// Status code counts so far.
    pub statuses: BTreeMap<u16, u64>,
    /// Per endpoint (plan order): (requests, ok) so far.
    pub endpoints: Vec<(u64, u64)>,
    /// The last call, after the workers stopped: it carries the last (partial)
    /// second(s).
    pub finished: bool,
}

/// How long after a second ends the feed hands it out: every worker thread closes
/// its second within 100 ms (its ticker), so by then the second is whole.
const FEED_DELAY: Duration = Duration::from_millis(200);

/// Runs the plan; see [`super::run`].
pub fn run(
    plan: &LoadPlan,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LoadResult, LoadError> {
    let prepared = Prepared::new(plan, stop)?;
    let threads = plan.threads.max(1);
    let started = SystemTime::now();
    let start = Instant::now();
    let control = Control {
        start,
        phase: AtomicU8::new(RUNNING),
        tickets: match (plan.model, plan.count) {
            (Model::Closed, Some(n)) => Some(AtomicI64::new(n.min(i64::MAX as u64) as i64)),
            _ => None,
        },
        start_line: StartLine::new(threads),
    };
    let lives: Vec<Arc<Live>> = (0..threads).map(|_| Arc::new(Live::default())).collect();
    let length = plan.run_length();
    let deadline = length.map(|d| start + d);
    let mut seconds: Vec<sys::SecondSample> = Vec::new();
    let mut aborted = false;
    let mut feed = Feed::new(
        threads,
        plan.endpoints.len(),
        matches!(plan.model, Model::Open { .. }),
    );
    let snapshot = |lives: &[Arc<Live>],
                    feed: &mut Feed,
                    samples: &[sys::SecondSample],
                    elapsed: Duration,
                    finished: bool| {
        feed.take(lives);
        let seconds = feed.ready(samples, finished);
        let sum = |f: fn(&Live) -> &AtomicU64| -> u64 {
            lives.iter().map(|l| f(l).load(Ordering::Relaxed)).sum()
        };
        let last = seconds.last().map(|s| &s.second);
        Progress {
            elapsed,
            length,
            requests: sum(|l| &l.requests),
            errors: sum(|l| &l.errors),
            dropped: sum(|l| &l.dropped),
            rps: last.map_or(0.0, |s| s.requests as f64),
            p50_ms: last.map_or(0.0, |s| s.p50_ms),
            p99_ms: last.map_or(0.0, |s| s.p99_ms),
            active: sum(|l| &l.active),
            started,
            statuses: feed.statuses(),
            endpoints: feed.endpoints(),
            seconds,
            finished,
        }
    };

    let outputs: Vec<Result<(Recorder, sys::ThreadTime, worker::Ran), String>> =
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|j| {
                    let (prep, ctl, live) = (&prepared, &control, lives[j].clone());
                    std::thread::Builder::new()
                        .name(format!("latscope-load-{j}"))
                        .spawn_scoped(s, move || worker::run_thread(j, threads, prep, ctl, live))
                        .expect("spawn a load worker thread")
                })
                .collect();
            let mut snmp = sys::retrans_segs();
            let mut syn = sys::syn_retrans_segs();
            let mut cpu_prev = 0u64;
            let mut next_second = start + Duration::from_secs(1);
            let mut feed_due = next_second + FEED_DELAY;
            let mut drain_until: Option<Instant> = None;
            loop {
                if handles.iter().all(|h| h.is_finished()) {
                    break;
                }
                let now = Instant::now();
                if stop.load(Ordering::Relaxed) && control.phase.load(Ordering::Relaxed) != ABORT {
                    control.phase.store(ABORT, Ordering::Relaxed);
                    aborted = true;
                }
                if let Some(d) = deadline {
                    if now >= d && control.phase.load(Ordering::Relaxed) == RUNNING {
                        control.phase.store(DRAIN, Ordering::Relaxed);
                        drain_until = Some(now + grace(plan.client.timeout));
                    }
                }
                if drain_until.is_some_and(|u| now >= u) {
                    control.phase.store(ABORT, Ordering::Relaxed);
                }
                if now >= next_second {
                    let retrans_now = sys::retrans_segs();
                    let syn_now = sys::syn_retrans_segs();
                    let cpu: u64 = lives.iter().map(|l| l.cpu_ns.load(Ordering::Relaxed)).sum();
                    seconds.push(sys::SecondSample {
                        retrans: match (snmp, retrans_now) {
                            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                            _ => None,
                        },
                        syn_retrans: match (syn, syn_now) {
                            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                            _ => None,
                        },
                        cpu_pct: (cpu.saturating_sub(cpu_prev)) as f64 / 1e7,
                    });
                    snmp = retrans_now;
                    syn = syn_now;
                    cpu_prev = cpu;
                    next_second += Duration::from_secs(1);
                }
                if now >= feed_due {
                    let p = snapshot(&lives, &mut feed, &seconds, now - start, false);
                    progress(&p);
                    feed_due = next_second + FEED_DELAY;
                }
                let mut wake = next_second
                    .min(feed_due)
                    .min(now + Duration::from_millis(20));
                if let Some(d) = deadline {
                    if d > now {
                        wake = wake.min(d);
                    }
                }
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("a load worker thread panicked"))
                .collect()
        });
    let elapsed = start.elapsed();
    sys::release_freed_memory();
    let mut engines = super::uring::Engines::default();
    let mut threads_out = Vec::with_capacity(outputs.len());
    for o in outputs {
        let (rec, time, (name, fallback)) = o.map_err(LoadError::Plan)?;
        engines.workers.push(name);
        engines.fallback.extend(fallback);
        threads_out.push((rec, time));
    }
    progress(&snapshot(&lives, &mut feed, &seconds, elapsed, true));
    let mut r = result::merge(plan, started, elapsed, threads_out, &seconds, aborted);
    r.http_version = Some(if prepared.h3.is_some() {
        "HTTP/3"
    } else if prepared.h2 {
        "HTTP/2"
    } else {
        "HTTP/1.1"
    });
    r.engine = engines.name();
    r.engines = engines;
    Ok(r)
}
