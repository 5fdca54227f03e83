//! Per-thread recording: every request lands in this thread's HdrHistograms (all,
//! per endpoint, service time, connect, TLS) and in the current second of its
//! timeline. Nothing here is shared between threads, so the hot path takes no lock;
//! each second's histogram is encoded (V2, uncompressed: a deflate compressor is
//! ~300 KiB allocated and freed again every second) when the second ends, and the
//! threads' recorders are merged at the end (`result`). The histograms here start
//! small and grow to the latencies recorded (`growing_histogram`); what is merged
//! from them and stored has the full 1 µs .. 1 h range.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;

use super::raw::RawSink;
use crate::stats::histogram::{growing_histogram, record, record_ns};

/// The kinds of failed request (the JSON `errors` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Connect = 0,
    Timeout = 1,
    Reset = 2,
    Tls = 3,
    Http4xx = 4,
    Http5xx = 5,
    Protocol = 6,
}

/// Number of error kinds.
pub const KINDS: usize = 7;

impl ErrorKind {
    /// Every kind, in JSON order.
    pub const ALL: [ErrorKind; KINDS] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Http4xx,
        ErrorKind::Http5xx,
        ErrorKind::Protocol,
    ];

    /// Its JSON name.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Tls => "tls",
            ErrorKind::Http4xx => "http_4xx",
            ErrorKind::Http5xx => "http_5xx",
            ErrorKind::Protocol => "protocol",
        }
    }

    /// The kind of an HTTP status, None when it is a success (1xx–3xx).
    pub fn of_status(status: u16) -> Option<ErrorKind> {
        match status {
            400..=499 => Some(ErrorKind::Http4xx),
            500..=599 => Some(ErrorKind::Http5xx),
            0 | 600.. => Some(ErrorKind::Protocol),
            _ => None,
        }
    }
}

/// How one request ended.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    /// HTTP status (0 when none arrived).
    pub status: u16,
    pub error: Option<ErrorKind>,
    /// Bytes received (head and body).
    pub bytes: u64,
    /// What the response said about caching.
    pub cache: crate::cache::status::Seen,
    /// When the first response byte arrived (only kept for `--raw`).
    pub first_byte: Option<Instant>,
    /// TCP connect and TLS time this request paid for a new connection.
    pub connect: Option<Duration>,
    pub tls: Option<Duration>,
}

impl Outcome {
    /// A failure with no response.
    pub fn failed(kind: ErrorKind) -> Outcome {
        Outcome {
            error: Some(kind),
            ..Default::default()
        }
    }
}

/// Live counters a thread publishes about once a second, for the progress line.
#[derive(Debug, Default)]
pub struct Live {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub last_p50_ns: AtomicU64,
    pub last_p99_ns: AtomicU64,
    pub active: AtomicU64,
    pub dropped: AtomicU64,
    /// CPU time this worker thread used so far.
    pub cpu_ns: AtomicU64,
    /// What the thread published for the live feed since the engine last took it.
    pub feed: Mutex<Published>,
}

/// A worker thread's seconds closed since the engine last looked, and its totals so
/// far (the engine merges them into the live feed: `engine::Progress`).
#[derive(Debug, Default)]
pub struct Published {
    /// Closed seconds with their index (without the per-endpoint started counts,
    /// which a live consumer does not need).
    pub seconds: Vec<(usize, SecondAcc)>,
    /// Status code counts so far (non-zero only).
    pub statuses: Vec<(u16, u64)>,
    /// Per endpoint: (requests, ok) so far.
    pub endpoints: Vec<(u64, u64)>,
}

/// Counters of one endpoint on one thread.
pub struct EndpointAcc {
    pub latency: Histogram<u64>,
    pub requests: u64,
    pub ok: u64,
    pub bytes: u64,
    /// A scenario's checks: judged, passed, and failures per check (its order).
    pub checks: Checks,
}

/// Check counts of one endpoint (a scenario's `check`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks {
    pub total: u64,
    pub passed: u64,
    /// Failures per check, in the request's check order.
    pub failed: Vec<u64>,
}

impl Checks {
    /// Adds another's counts.
    pub fn add(&mut self, o: &Checks) {
        self.total += o.total;
        self.passed += o.passed;
        if self.failed.len() < o.failed.len() {
            self.failed.resize(o.failed.len(), 0);
        }
        for (a, b) in self.failed.iter_mut().zip(&o.failed) {
            *a += b;
        }
    }
}

/// One second of one thread.
#[derive(Debug, Clone, Default)]
pub struct SecondAcc {
    pub requests: u64,
    pub ok: u64,
    pub errors: [u64; KINDS],
    pub bytes: u64,
    pub cache_hits: u64,
    pub dropped: u64,
    /// Most connections open at once during the second.
    pub active: u64,
    /// Latency histogram of the requests completed in this second (V2; empty when
    /// none completed). The merged second (`seconds`) is stored as V2 deflate.
    pub v2: Vec<u8>,
    /// Requests that started (were due) in this second, whenever they ended.
    pub started: u64,
    /// The slowest of those, ns: a stall holds the requests that start in it, which
    /// end (and count) only in a later second.
    pub started_max_ns: u64,
    /// Per endpoint (index as in the plan): requests started in this second and the
    /// slowest of them; empty when nothing started.
    pub endpoints: Vec<StartedAcc>,
    /// SYN retransmissions of the connections that came up in this second.
    pub syn_retrans: u64,
    /// Segments resent before the first response, of connections first answered
    /// in this second.
    pub early_retrans: u64,
    /// This second's latency histogram per endpoint (V2), with 2 to
    /// [`ENDPOINT_SECONDS_MAX`] endpoints (compare tests each one).
    pub ep_v2: Vec<Vec<u8>>,
    /// Open model: this second's service-time histogram (V2; for the live
    /// feed, not stored).
    pub service_v2: Vec<u8>,
    /// A scenario's checks judged on the responses of this second, and how many
    /// of them failed.
    pub checks: u64,
    pub checks_failed: u64,
}

/// Requests started in one second (of one endpoint) and the slowest of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StartedAcc {
    pub started: u64,
    pub max_ns: u64,
}

/// The most endpoints whose per-second histograms a run keeps (for compare's
/// per-endpoint tests): past it a scenario is a crawl, not a set of endpoints to
/// compare one by one, and a histogram per endpoint per second would outgrow memory
/// and the store.
pub const ENDPOINT_SECONDS_MAX: usize = 100;

/// Whether a run of `endpoints` keeps per-endpoint per-second histograms: two or more
/// (one endpoint is the run itself), at most [`ENDPOINT_SECONDS_MAX`].
pub(crate) fn keeps_endpoint_seconds(endpoints: usize) -> bool {
    (2..=ENDPOINT_SECONDS_MAX).contains(&endpoints)
}

/// A per-endpoint latency histogram: it starts small and grows to the latencies
/// recorded (auto-resize), with 3 significant digits for up to 16 endpoints and 2
/// beyond, so a scenario of thousands of endpoints takes megabytes per thread, not
/// gigabytes (a full 1 µs..1 h histogram is ~190 KB).
pub(crate) fn endpoint_histogram(endpoints: usize) -> Histogram<u64> {
    use crate::stats::histogram::LOWEST_NS;
    let digits = if endpoints <= 16 { 3 } else { 2 };
    let mut h = Histogram::new_with_bounds(LOWEST_NS, 2 * LOWEST_NS, digits)
        .expect("static bounds are valid");
    h.auto(true);
    h
}

/// Everything one worker thread measured.
pub struct Recorder {
    start: Instant,
    open_model: bool,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    pub connect: Histogram<u64>,
    pub tls: Histogram<u64>,
    pub endpoints: Vec<EndpointAcc>,
    pub errors: [u64; KINDS],
    /// Count per status code 0..=999 (index = status; any 3-digit code is kept).
    pub statuses: Vec<u64>,
    pub requests: u64,
    pub ok: u64,
    pub bytes: u64,
    pub cache_hits: u64,
    /// Responses a cache answered MISS, BYPASS or DYNAMIC.
    pub cache_misses: u64,
    /// Which cache answered, when the responses said.
    pub cache_kind: Option<crate::cache::CacheKind>,
    pub dropped: u64,
    pub incomplete: u64,
    pub in_flight: u64,
    pub connections_opened: u64,
    /// SYN retransmissions of the connections this thread opened (TCP_INFO right
    /// after each connect), and how many connections needed any.
    pub syn_retrans: u64,
    pub syn_retried_conns: u64,
    /// Segments this thread's connections resent after connecting but before their
    /// first response (a full accept queue drops the handshake's last ACK and the
    /// request with it).
    pub early_retrans: u64,
    /// Data segments this thread's HTTP/1.1 connections retransmitted, with how many
    /// connections were watched (filled when the thread ends; (0, 0) for HTTP/2).
    pub data_retrans: (u64, u64),
    /// The longest batched-wake window this thread slept (epoll engine,
    /// `worker::wake`); zero when it never batched.
    pub wake_window: Duration,
    active: u64,
    pub timeline: Vec<SecondAcc>,
    current: Histogram<u64>,
    /// This second's service times (open model).
    current_service: Histogram<u64>,
    /// The response times since the last [`Recorder::take_tick_p10`]: latency in
    /// the closed model, service time (from the send) in the open one. Kept only
    /// for the epoll engine's batched wakes ([`Recorder::time_ticks`]).
    tick: Option<Histogram<u64>>,
    /// This second's latencies per endpoint (empty with a single endpoint).
    current_ep: Vec<Histogram<u64>>,
    serializer: V2Serializer,
    live: Arc<Live>,
    raw: Option<RawSink>,
    /// Why `--raw` could not be written completely, if it could not.
    pub raw_error: Option<String>,
}

impl Recorder {
    /// A recorder for a run that started at `start`, with `endpoints` endpoints.
    pub fn new(
        start: Instant,
        endpoints: usize,
        open_model: bool,
        live: Arc<Live>,
        raw: Option<RawSink>,
    ) -> Recorder {
        Recorder {
            start,
            open_model,
            latency: growing_histogram(),
            service: growing_histogram(),
            connect: growing_histogram(),
            tls: growing_histogram(),
            endpoints: (0..endpoints)
                .map(|_| EndpointAcc {
                    latency: endpoint_histogram(endpoints),
                    requests: 0,
                    ok: 0,
                    bytes: 0,
                    checks: Checks::default(),
                })
                .collect(),
            errors: [0; KINDS],
            statuses: vec![0; 1000],
            requests: 0,
            ok: 0,
            bytes: 0,
            cache_hits: 0,
            cache_misses: 0,
            cache_kind: None,
            dropped: 0,
            incomplete: 0,
            in_flight: 0,
            connections_opened: 0,
            syn_retrans: 0,
            syn_retried_conns: 0,
            early_retrans: 0,
            data_retrans: (0, 0),
            wake_window: Duration::ZERO,
            active: 0,
            timeline: vec![SecondAcc::default()],
            current: growing_histogram(),
            current_service: growing_histogram(),
            tick: None,
            current_ep: if keeps_endpoint_seconds(endpoints) {
                (0..endpoints)
                    .map(|_| endpoint_histogram(endpoints))
                    .collect()
            } else {
                Vec::new()
            },
            serializer: V2Serializer::new(),
            live,
            raw,
            raw_error: None,
        }
    }

    /// The 10th percentile of the response times recorded since the last call
    /// (latency, or in the open model service time: what the server and the wire
    /// took, not a backlog of arrivals), when there were at least `min`; starts
    /// the next interval.
    pub fn take_tick_p10(&mut self, min: u64) -> Option<Duration> {
        let tick = self.tick.as_mut()?;
        let p10 = (tick.len() >= min).then(|| Duration::from_nanos(tick.value_at_quantile(0.1)));
        tick.reset();
        p10
    }

    /// Keeps the response times of each tick for [`Recorder::take_tick_p10`].
    pub fn time_ticks(&mut self) {
        self.tick.get_or_insert_with(growing_histogram);
    }

    fn second_of(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.start).as_secs() as usize
    }

    /// Moves the current second forward to the one `now` falls in, closing the
    /// seconds in between.
    pub fn tick(&mut self, now: Instant) {
        let sec = self.second_of(now);
        if sec + 1 > self.timeline.len() {
            self.roll(sec);
        }
        self.live.active.store(self.active, Ordering::Relaxed);
    }

    fn roll(&mut self, sec: usize) {
        let last = self.timeline.len() - 1;
        if !self.current.is_empty() {
            let mut buf = Vec::new();
            if self.serializer.serialize(&self.current, &mut buf).is_ok() {
                self.timeline[last].v2 = buf;
            }
            self.live
                .last_p50_ns
                .store(self.current.value_at_quantile(0.5), Ordering::Relaxed);
            self.live
                .last_p99_ns
                .store(self.current.value_at_quantile(0.99), Ordering::Relaxed);
            self.current.reset();
            let mut per_ep = Vec::with_capacity(self.current_ep.len());
            for h in &mut self.current_ep {
                let mut buf = Vec::new();
                if !h.is_empty() {
                    let _ = self.serializer.serialize(h, &mut buf);
                    h.reset();
                }
                per_ep.push(buf);
            }
            self.timeline[last].ep_v2 = per_ep;
            if !self.current_service.is_empty() {
                let mut buf = Vec::new();
                let _ = self.serializer.serialize(&self.current_service, &mut buf);
                self.timeline[last].service_v2 = buf;
                self.current_service.reset();
            }
        } else {
            self.live.last_p50_ns.store(0, Ordering::Relaxed);
            self.live.last_p99_ns.store(0, Ordering::Relaxed);
        }
        while self.timeline.len() <= sec {
            self.timeline.push(SecondAcc {
                active: self.active,
                ..Default::default()
            });
        }
        self.publish(last, sec);
        self.live.requests.store(self.requests, Ordering::Relaxed);
        self.live
            .errors
            .store(self.requests - self.ok, Ordering::Relaxed);
        self.live.dropped.store(self.dropped, Ordering::Relaxed);
    }

    /// Hands seconds `from..to` (closed) and the totals so far to the live feed.
    fn publish(&self, from: usize, to: usize) {
        let Ok(mut feed) = self.live.feed.lock() else {
            return;
        };
        for t in from..to {
            let s = &self.timeline[t];
            feed.seconds.push((
                t,
                SecondAcc {
                    requests: s.requests,
                    ok: s.ok,
                    errors: s.errors,
                    bytes: s.bytes,
                    cache_hits: s.cache_hits,
                    dropped: s.dropped,
                    active: s.active,
                    v2: s.v2.clone(),
                    started: s.started,
                    started_max_ns: s.started_max_ns,
                    endpoints: Vec::new(),
                    syn_retrans: s.syn_retrans,
                    early_retrans: s.early_retrans,
                    ep_v2: s.ep_v2.clone(),
                    service_v2: s.service_v2.clone(),
                    checks: s.checks,
                    checks_failed: s.checks_failed,
                },
            ));
        }
        feed.statuses.clear();
        for (status, n) in self.statuses.iter().enumerate() {
            if *n > 0 {
                feed.statuses.push((status as u16, *n));
            }
        }
        feed.endpoints.clear();
        feed.endpoints
            .extend(self.endpoints.iter().map(|e| (e.requests, e.ok)));
    }

    /// A connection was opened after `connect` (TCP) and `tls` (None for plain),
    /// with `syn_retrans` SYNs sent again before it came up.
    pub fn conn_opened(&mut self, connect: Duration, tls: Option<Duration>, syn_retrans: u32) {
        self.syn_retrans += u64::from(syn_retrans);
        self.syn_retried_conns += u64::from(syn_retrans > 0);
        if let Some(s) = self.timeline.last_mut() {
            s.syn_retrans += u64::from(syn_retrans);
        }
        record(&mut self.connect, connect);
        if let Some(t) = tls {
            record(&mut self.tls, t);
        }
        self.connections_opened += 1;
        self.active += 1;
        let a = self.active;
        if let Some(s) = self.timeline.last_mut() {
            s.active = s.active.max(a);
        }
    }

    /// A new connection's first response came after `n` resent segments.
    pub fn early_retrans(&mut self, n: u32) {
        self.early_retrans += u64::from(n);
        if let Some(s) = self.timeline.last_mut() {
            s.early_retrans += u64::from(n);
        }
    }

    /// A connection was closed.
    pub fn conn_closed(&mut self) {
        self.active = self.active.saturating_sub(1);
    }

    /// A request due at `intended` was dropped (open model, backlog full).
    pub fn dropped(&mut self, intended: Instant) {
        self.dropped += 1;
        let sec = self.second_of(intended);
        if sec < self.timeline.len() {
            self.timeline[sec].dropped += 1;
        } else {
            self.roll(sec);
            self.timeline[sec].dropped += 1;
        }
    }

    /// Records one finished request: due at `intended` (= `sent` in the closed model),
    /// sent at `sent`, finished at `end`.
    pub fn record(
        &mut self,
        endpoint: usize,
        intended: Instant,
        sent: Instant,
        end: Instant,
        o: &Outcome,
    ) {
        let sec = self.second_of(end);
        if sec + 1 > self.timeline.len() {
            self.roll(sec);
        }
        let latency = end.saturating_duration_since(intended);
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        // A connect that failed measured no response time: it is counted as an
        // error, never mixed into the latency percentiles.
        let timed = o.error != Some(ErrorKind::Connect);
        if timed {
            record_ns(&mut self.latency, ns);
            record_ns(&mut self.current, ns);
            if self.open_model {
                let service = end.saturating_duration_since(sent);
                record(&mut self.service, service);
                record(&mut self.current_service, service);
                if let Some(t) = &mut self.tick {
                    record(t, service);
                }
            } else if let Some(t) = &mut self.tick {
                record_ns(t, ns);
            }
        }
        let ok = o.error.is_none();
        self.requests += 1;
        self.bytes += o.bytes;
        self.statuses[(o.status as usize).min(999)] += 1;
        if let Some(k) = o.error {
            self.errors[k as usize] += 1;
        } else {
            self.ok += 1;
        }
        let hit = o.cache.tally == crate::cache::Tally::Hit;
        match o.cache.tally {
            crate::cache::Tally::Hit => self.cache_hits += 1,
            crate::cache::Tally::Miss => self.cache_misses += 1,
            crate::cache::Tally::Unknown => {}
        }
        if o.cache.kind.is_some() {
            self.cache_kind = o.cache.kind;
        }
        // Every histogram here starts small and grows (`growing_histogram`,
        // `endpoint_histogram`): `record_ns` grows them, `saturating_record` would
        // clamp every latency to the initial range.
        if let Some(h) = self.current_ep.get_mut(endpoint) {
            record_ns(h, ns);
        }
        let e = &mut self.endpoints[endpoint];
        if timed {
            record_ns(&mut e.latency, ns);
        }
        e.requests += 1;
        e.bytes += o.bytes;
        e.ok += ok as u64;
        let started = self.second_of(intended).min(self.timeline.len() - 1);
        let n = self.endpoints.len();
        let st = &mut self.timeline[started];
        st.started += 1;
        st.started_max_ns = st.started_max_ns.max(ns);
        if st.endpoints.len() < n {
            st.endpoints.resize(n, StartedAcc::default());
        }
        let ep = &mut st.endpoints[endpoint];
        ep.started += 1;
        ep.max_ns = ep.max_ns.max(ns);
        let s = self.timeline.last_mut().expect("timeline has a second");
        s.requests += 1;
        s.bytes += o.bytes;
        s.cache_hits += hit as u64;
        match o.error {
            None => s.ok += 1,
            Some(k) => s.errors[k as usize] += 1,
        }
        if let Some(raw) = &mut self.raw {
            raw.row(self.start, endpoint, intended, sent, end, o);
        }
    }

    /// A response to `endpoint` was checked: `results` says which of its checks
    /// passed (in order).
    pub fn checked(&mut self, endpoint: usize, results: &[bool]) {
        let c = &mut self.endpoints[endpoint].checks;
        if c.failed.len() < results.len() {
            c.failed.resize(results.len(), 0);
        }
        let mut failed = 0;
        for (f, ok) in c.failed.iter_mut().zip(results) {
            c.total += 1;
            if *ok {
                c.passed += 1;
            } else {
                *f += 1;
                failed += 1;
            }
        }
        if let Some(s) = self.timeline.last_mut() {
            s.checks += results.len() as u64;
            s.checks_failed += failed;
        }
    }

    /// Closes the last second and the raw file; hands back the measurements.
    pub fn finish(mut self, now: Instant) -> Recorder {
        let sec = self.second_of(now);
        self.roll(sec + 1);
        // The extra second rolled in above is empty; drop it.
        self.timeline.pop();
        if let Some(mut raw) = self.raw.take() {
            raw.flush();
            self.raw_error = raw.error.map(|e| e.to_string());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 21: memory is flat in run length. What a recorder keeps per second of a
    /// run is that second's counters and compressed histograms (hundreds of bytes),
    /// never a full histogram (~190 KB): ten simulated minutes of 200 requests a
    /// second, across 2 endpoints and 5 ms of latencies, keep < 4 KB a second.
    #[test]
    fn per_second_state_is_small() {
        let start = Instant::now();
        let live = Arc::new(Live::default());
        let mut r = Recorder::new(start, 2, true, live.clone(), None);
        let secs = 600u64;
        for sec in 0..secs {
            for i in 0..200u64 {
                let sent = start + Duration::from_secs(sec) + Duration::from_micros(i * 4_000);
                let end = sent + Duration::from_micros(200 + (i * 37) % 5_000);
                let o = Outcome {
                    status: 200,
                    bytes: 1024,
                    ..Default::default()
                };
                r.record((i % 2) as usize, sent, sent, end, &o);
            }
            // The engine takes the published seconds about once a second.
            live.feed.lock().unwrap().seconds.clear();
        }
        let r = r.finish(start + Duration::from_secs(secs) - Duration::from_millis(1));
        assert_eq!(r.timeline.len(), secs as usize);
        assert_eq!(r.requests, 200 * secs);
        let kept: usize = r
            .timeline
            .iter()
            .map(|s| {
                std::mem::size_of::<SecondAcc>()
                    + s.v2.capacity()
                    + s.service_v2.capacity()
                    + s.endpoints.capacity() * std::mem::size_of::<StartedAcc>()
                    + s.ep_v2.iter().map(|v| 24 + v.capacity()).sum::<usize>()
            })
            .sum();
        let per_second = kept / secs as usize;
        assert!(per_second < 4096, "{per_second} bytes kept per second");
        assert!(r
            .timeline
            .iter()
            .all(|s| !s.v2.is_empty() && s.ep_v2.len() == 2));
    }

    /// Issue 21 (50 connections in ≤ 8 MB): a worker's histograms take the memory of
    /// the latencies it saw, not of the full 1 µs .. 1 h range (188 KiB each, all
    /// written when made: six of them were 1.1 MiB of a 50-connection run's RSS).
    /// A second of 0.1–5 ms latencies on two endpoints, open model (every histogram
    /// in use: ten of them), keeps them all under 512 KiB (40 KiB each for up to
    /// 8 ms); what merges into the run's histograms is what a full-range recorder
    /// would have given.
    #[test]
    fn histograms_take_the_memory_of_the_latencies_seen() {
        let start = Instant::now();
        let mut r = Recorder::new(start, 2, true, Arc::new(Live::default()), None);
        let mut full = crate::stats::histogram::new_histogram();
        for i in 0..20_000u64 {
            let sent = start + Duration::from_micros(i * 40);
            let end = sent + Duration::from_micros(100 + (i * 7919) % 4_900);
            r.conn_opened(
                Duration::from_micros(50 + i % 300),
                Some(Duration::from_micros(900)),
                0,
            );
            let o = Outcome {
                status: 200,
                ..Default::default()
            };
            r.record((i % 2) as usize, sent, sent, end, &o);
            record(&mut full, end - sent);
        }
        let bytes = |h: &Histogram<u64>| h.distinct_values() * std::mem::size_of::<u64>();
        let all = [
            &r.latency,
            &r.service,
            &r.connect,
            &r.tls,
            &r.current,
            &r.current_service,
        ]
        .into_iter()
        .chain(r.endpoints.iter().map(|e| &e.latency))
        .chain(&r.current_ep);
        let total: usize = all.map(bytes).sum();
        assert!(total < 512 * 1024, "{total} bytes of histograms");
        let r = r.finish(start + Duration::from_secs(1));
        let mut merged = crate::stats::histogram::new_histogram();
        merged.add(&r.latency).unwrap();
        assert!(merged.iter_recorded().eq(full.iter_recorded()));
        assert_eq!(r.service.len(), 20_000);
        assert_eq!(r.tls.len(), 20_000);
    }

    #[test]
    fn endpoint_histograms_grow_to_what_they_record() {
        for n in [1, 10_000] {
            let mut h = super::endpoint_histogram(n);
            h.record(30_000_000).unwrap();
            let p50 = h.value_at_quantile(0.5) as f64;
            assert!((p50 / 30e6 - 1.0).abs() < 0.01, "{n}: {p50}");
        }
    }
}
