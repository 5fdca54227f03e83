//! The inputs of the findings engine: plain "fact" structs, filled from probe, cache
//! audit, load and disk results by small adapters, so every rule is a pure function
//! over data a test can construct by hand. Times are milliseconds (`f64`), sizes bytes,
//! rates fractions (0.02 = 2 %) unless a field says otherwise. `Default` gives "not
//! measured" everywhere, so tests set only what a rule reads.

use std::collections::BTreeMap;

pub use crate::cache::Headers;

/// Per-phase durations (one percentile of each phase), ms. `ttfb` and `total` are the
/// cumulative marks (DESIGN.md, Measurements).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Phases {
    pub dns: f64,
    pub connect: f64,
    pub tls: f64,
    pub send: f64,
    pub wait: f64,
    pub receive: f64,
    pub ttfb: f64,
    pub total: f64,
}

/// One series of a probe (fresh connections, or one reused connection).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesFacts {
    /// Number of samples.
    pub count: usize,
    /// p50 of every phase.
    pub p50: Phases,
    /// TTFB of each request, in order, ms.
    pub ttfb_ms: Vec<f64>,
    /// Total time of each request, in order, ms.
    pub total_ms: Vec<f64>,
    /// TCP connect time of each request that opened a connection, in order, ms.
    pub connect_ms: Vec<f64>,
    /// Per request, in order (the same requests as `ttfb_ms`), ms: wait (request
    /// written → first byte), receive (first → last byte) and DNS.
    pub wait_ms: Vec<f64>,
    pub receive_ms: Vec<f64>,
    pub dns_ms: Vec<f64>,
    /// Connect + TLS of each request that opened a connection, in order, ms.
    pub handshake_ms: Vec<f64>,
    /// TLS handshake of each request that opened a connection, in order, ms.
    pub tls_ms: Vec<f64>,
}

impl SeriesFacts {
    /// Samples of the series, or 0 when none was kept per request.
    pub fn n(&self) -> usize {
        self.ttfb_ms.len()
    }
}

/// Kernel TCP_INFO of a probe connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpFacts {
    /// Smoothed RTT, ms.
    pub rtt_ms: f64,
    /// Windowed minimum RTT, ms (the network floor).
    pub min_rtt_ms: f64,
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u64,
}

/// TLS facts of one fresh connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsFacts {
    /// e.g. "TLSv1.3".
    pub version: String,
    /// Negotiated ALPN protocol ("h2", "http/1.1"), if any.
    pub alpn: Option<String>,
    /// Whether the session was resumed.
    pub resumed: bool,
}

/// One redirect the probe followed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RedirectHop {
    /// 301, 302, 307, 308…
    pub status: u16,
    /// The Location it pointed to.
    pub location: String,
    /// What the hop cost (its total time), ms.
    pub time_ms: f64,
    /// The URL that answered with it (empty when not known).
    pub from: String,
}

/// A large body downloaded over a fresh and over a warm connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DownloadFacts {
    pub body_bytes: u64,
    /// Receive time (first → last byte) over a fresh connection, ms.
    pub fresh_ms: f64,
    /// Receive time over a warm (reused) connection, ms.
    pub warm_ms: f64,
    /// Each large body's receive time over fresh and over warm connections, ms.
    pub fresh_samples_ms: Vec<f64>,
    pub warm_samples_ms: Vec<f64>,
}

/// What a probe of one URL measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeFacts {
    pub url: String,
    /// The URL is https.
    pub https: bool,
    /// "HTTP/1.0", "HTTP/1.1" or "HTTP/2".
    pub http_version: String,
    pub status: u16,
    /// How many of the probe's requests got each status (empty: not counted).
    pub statuses: BTreeMap<u16, u64>,
    /// Fresh-connection series (every request opens a connection).
    pub fresh: Option<SeriesFacts>,
    /// Reused-connection series.
    pub reused: Option<SeriesFacts>,
    /// New connections that resumed a TLS session (absent on plain HTTP, or when the
    /// server does not resume).
    pub resumed: Option<SeriesFacts>,
    /// Total time of the very first request of the probe, ms.
    pub first_total_ms: Option<f64>,
    pub tcp: Option<TcpFacts>,
    /// One entry per fresh TLS connection, in order.
    pub tls: Vec<TlsFacts>,
    /// The client offered h2 in ALPN (false under `--http1.1`).
    pub offered_h2: bool,
    /// Response headers of a representative (non-redirect) response.
    pub headers: Headers,
    pub body_bytes: u64,
    /// The client sent `Accept-Encoding` with gzip or br.
    pub accept_encoding: bool,
    pub download: Option<DownloadFacts>,
    pub redirects: Vec<RedirectHop>,
    /// For each response, whether the server closed the connection after it.
    pub closed_by_server: Vec<bool>,
    /// The addresses the URL resolved to.
    pub addresses: Vec<String>,
    /// How long latscope itself waited for a CPU during the very first request, ms
    /// (None: not measured): time the first request lost on this machine, not on the
    /// server.
    pub first_client_wait_ms: Option<f64>,
    /// How busy this machine was while the probe ran (None: not measured).
    pub client: Option<ClientNoise>,
    /// The first lookup apart from the repeated ones (None: the host needed none).
    pub dns: Option<DnsFacts>,
    /// The server's time per request, ms: the reused requests' wait less the min RTT
    /// (the fresh ones' without reuse) — the one number every output shows as the
    /// server's (`probe.server_time_ms`).
    pub server_time_ms: Option<f64>,
}

/// The probe's first DNS lookup (a first visitor's resolver, its cache cold) and
/// the repeated ones (answered from the resolver's cache), ms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DnsFacts {
    pub first_ms: f64,
    pub repeat_p50_ms: f64,
    pub repeats: usize,
    /// The address record's TTL as the resolver gave it, s.
    pub ttl_s: Option<u32>,
}

/// The client's own noise during a probe: time latscope waited, runnable, for a CPU
/// (schedstat) and the samples that waited long enough to be left out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientNoise {
    /// Samples measured (kept and left out).
    pub samples: u64,
    /// Samples left out (and re-taken) because latscope waited for a CPU during them.
    pub disturbed: u64,
    /// Run-queue wait over all samples, ms.
    pub wait_ms: f64,
    /// That wait as a share of the samples' time (0..1).
    pub wait_share: f64,
}

/// One conditional GET of the cache audit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConditionalFacts {
    pub status: u16,
    pub body_bytes: u64,
    pub time_ms: f64,
    /// A 304 that carried a body after its head (breaks keep-alive framing).
    pub excess_body: bool,
}

/// One of the repeated GETs of the cache audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatFacts {
    /// Its response headers (the rules normalise the cache status from them).
    pub headers: Headers,
    pub ttfb_ms: f64,
}

/// What the cache audit observed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheFacts {
    /// The audited method was GET (or HEAD).
    pub get: bool,
    /// The request carried no Cookie or Authorization.
    pub anonymous: bool,
    /// The request carried Cookie (a `-H Cookie: …`).
    pub cookie: bool,
    /// The request carried Authorization.
    pub authorization: bool,
    /// The names of the cookies the request carried (never their values).
    pub request_cookies: Vec<String>,
    /// The audited URL has a query string.
    pub query: bool,
    pub status: u16,
    /// Headers of the first full response.
    pub headers: Headers,
    /// Time of a full 200, ms, to set against a 304 like with like: the median of the
    /// repeated GETs, sent over the connection the conditional GETs used (else the
    /// first full GET).
    pub full_time_ms: Option<f64>,
    pub if_none_match: Option<ConditionalFacts>,
    pub if_modified_since: Option<ConditionalFacts>,
    /// The repeated GETs, in order (the first included).
    pub repeats: Vec<RepeatFacts>,
    /// Hit ratio seen under the load ramp (0..1), when the responses say.
    pub load_hit_ratio: Option<f64>,
    /// The origin's steady TTFB p50 (`--origin`), ms: a repeated GET far faster than
    /// it was answered by a cache even when no header says so ("inferred").
    pub origin_ttfb_ms: Option<f64>,
    /// The probe's first request, when a cache said something about it: its state and
    /// TTFB, ms (through a cache it is usually the miss that filled it).
    pub probe_first: Option<(crate::cache::CacheState, f64)>,
}

/// One step of a load ramp.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadStep {
    pub concurrency: u32,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    pub errors: u64,
    /// The 95 % interval of the step's p99 (order statistics of its requests; the
    /// upper end infinite when too few requests bound it), ms. None: not computed.
    pub p99_interval: Option<(f64, f64)>,
    /// The 95 % interval of the step's median, ms. None: not computed.
    pub p50_interval: Option<(f64, f64)>,
}

impl LoadStep {
    /// errors / requests (0 when nothing completed).
    pub fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.errors as f64 / self.requests as f64
        }
    }
}

/// One second of a load timeline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    /// Seconds since the start.
    pub t: u32,
    /// Completed requests (ok + errors).
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The slowest request that completed this second, ms (0: not measured). A stall
    /// that holds one request per connection among thousands barely moves p99, but
    /// it is this second's max.
    pub max_ms: f64,
    /// TCP segments retransmitted during this second (host-wide).
    pub retrans: u64,
    /// Of those, SYN and SYN-ACK retransmissions (host-wide `TCPSynRetrans`).
    pub syn_retrans: u64,
    /// SYNs latscope's own connections that came up this second sent again.
    pub client_syn_retrans: u64,
    /// Segments latscope's own new connections resent before their first response
    /// (first answered this second).
    pub client_early_retrans: u64,
    /// Requests that started in this second, whenever they ended (0: not
    /// recorded). A stall holds the requests that start in it; they end, and
    /// count in `requests`, only in a later second.
    pub started: u64,
    /// The slowest request that started in this second, ms (0: not recorded).
    pub started_max_ms: f64,
    /// Per endpoint (order of [`LoadFacts::endpoints`]): requests started in this
    /// second and the slowest of them, ms (empty: not recorded).
    pub endpoints: Vec<(u64, f64)>,
    /// The watched server's side of this second (`--watch`; None: not watched, or
    /// a gap).
    pub server: Option<crate::watch::ServerSecond>,
}

/// What a load run (or the diagnose ramp) measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadFacts {
    /// Ramp steps, in order of concurrency (empty for a plain load run).
    pub steps: Vec<LoadStep>,
    pub timeline: Vec<Second>,
    /// Whole-run latency percentiles, ms.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub requests: u64,
    pub errors: u64,
    /// Errors by kind (`connect`, `timeout`, `reset`, `http_5xx`, …).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Connect times as (value ms, count) pairs, e.g. from the connect histogram.
    pub connect_ms: Vec<(f64, u64)>,
    /// Every request's latency as (value ms, count) pairs, from the latency
    /// histogram (empty: not kept).
    pub latency_ms: Vec<(f64, u64)>,
    /// latscope's own CPU use, percent of one core (200 = two cores busy).
    pub client_cpu_pct: Option<f64>,
    /// Time latscope's threads were ready to run but waited for a CPU, percent
    /// summed over threads like `client_cpu_pct` (another process had the core).
    pub client_wait_pct: Option<f64>,
    /// Worker threads the load engine ran.
    pub threads: u32,
    /// Open model: the arrival rate asked for, req/s (None: closed model).
    pub target_rps: Option<f64>,
    /// Completed requests per second over the run.
    pub achieved_rps: f64,
    /// Open model: arrivals dropped because too many already waited.
    pub dropped: u64,
    /// Requests still in flight when the run ended.
    pub incomplete: u64,
    /// Endpoint names, in plan order (what [`Second::endpoints`] indexes).
    pub endpoints: Vec<String>,
    /// SYNs latscope's own connections sent again (per-connection TCP_INFO; None:
    /// not measured), and how many connections needed any.
    pub client_syn_retrans: Option<u64>,
    pub client_syn_retried_conns: u64,
    /// Segments latscope's own connections resent between connect and their first
    /// response: the server had not taken the connection (a full accept queue drops
    /// the handshake's last ACK and the request) or the path lost them (None: not
    /// measured).
    pub client_early_retrans: Option<u64>,
    /// Data segments latscope's own connections retransmitted after their first
    /// response (per-connection TCP_INFO; None: not measured, e.g. HTTP/2).
    pub client_data_retrans: Option<u64>,
    /// Responses that said they came from a cache.
    pub cache_hits: u64,
    /// Responses that were redirects (3xx other than 304): counted as successes.
    pub redirects: u64,
    /// The most frequent of those redirect statuses (0: none).
    pub redirect_status: u16,
}

/// How busy latscope's worker threads were, percent of the run per thread: on a CPU
/// (`cpu_pct`, summed over threads) or ready to run and waiting for one (`wait_pct`).
pub fn busy_per_thread(cpu_pct: f64, wait_pct: Option<f64>, threads: u32) -> f64 {
    (cpu_pct + wait_pct.unwrap_or(0.0)) / f64::from(threads.max(1))
}

/// What a disk run measured, ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskFacts {
    /// Reads and writes; `None` when the run did none of them.
    pub read: Option<DiskDirFacts>,
    pub write: Option<DiskDirFacts>,
    /// I/Os kept in flight (`--iodepth`).
    pub iodepth: u32,
    pub fsync_p99_ms: Option<f64>,
    pub fsync_count: u64,
    /// The database suite's workloads, in order (empty for one workload).
    pub workloads: Vec<WorkloadFacts>,
    /// The suite's commit test.
    pub commit: Option<CommitFacts>,
}

impl DiskFacts {
    /// The suite's workload named `name`.
    pub fn workload(&self, name: &str) -> Option<&WorkloadFacts> {
        self.workloads.iter().find(|w| w.name == name)
    }
}

/// One workload of the database suite, ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadFacts {
    /// `read-4k-qd1`, …
    pub name: String,
    pub bs: u64,
    pub iodepth: u32,
    /// The direction it ran (its reads, or its writes).
    pub dir: DiskDirFacts,
    pub iops: f64,
    pub mib_s: f64,
    /// fdatasync after each write: p50 and p99.
    pub fsync_p50_ms: Option<f64>,
    pub fsync_p99_ms: Option<f64>,
}

/// The commit a database does (8 KiB through the page cache + fdatasync), ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommitFacts {
    /// Commits into the pre-zeroed segment and their latency (write + fdatasync).
    pub commits: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub p9999_ms: f64,
    pub max_ms: f64,
    /// The two halves of a commit, p50.
    pub write_p50_ms: f64,
    pub fsync_p50_ms: f64,
    pub fsync_p99_ms: f64,
    /// Commits that extended the file.
    pub append_commits: u64,
    pub append_p50_ms: Option<f64>,
    /// Pre-zeroing a 16 MiB segment (extrapolated when the budget ran out).
    pub segment_ms: f64,
    pub segment_extrapolated: bool,
    /// Commits that took longer than 100 ms and 1 s.
    pub over_100ms: u64,
    pub over_1s: u64,
    /// Commits in each full second.
    pub per_second: Vec<u64>,
    /// Percent of the commits' time some task on the machine waited for a CPU (PSI),
    /// and latscope's own thread did (schedstat); `None` where the kernel does not say.
    pub cpu_pressure_pct: Option<f64>,
    pub cpu_wait_pct: Option<f64>,
    /// Seconds of commits set apart because latscope waited for a CPU, and whether
    /// they had to be kept (too little time without): then the tail is the machine's
    /// as much as the volume's.
    pub starved_s: f64,
    pub starved_kept: bool,
}

/// One direction (reads or writes) of a disk run, ms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskDirFacts {
    pub ios: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p999_ms: f64,
    pub p9999_ms: f64,
    pub max_ms: f64,
    pub p99_ms: f64,
    /// I/Os that took longer than 100 ms, and longer than 1 s.
    pub over_100ms: u64,
    pub over_1s: u64,
    /// Seconds measured, and those in which some I/O stalled — took longer than
    /// 100 ms and 4× the median — or longer than 1 s (and 4× the median): the I/Os
    /// caught in one
    /// stall are not independent events, the seconds nearly are.
    pub seconds: u64,
    pub stall_seconds: u64,
    pub stall_seconds_1s: u64,
    /// I/Os per second in each full second of the run, in order.
    pub per_second_iops: Vec<f64>,
}

/// Everything the rules may look at; absent parts were not measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub probe: Option<ProbeFacts>,
    /// The same URL probed straight at the origin (`--origin ADDR`).
    pub origin: Option<ProbeFacts>,
    pub cache: Option<CacheFacts>,
    pub load: Option<LoadFacts>,
    pub disk: Option<DiskFacts>,
    /// `--distance-km`.
    pub distance_km: Option<f64>,
    /// HTTP/3 discovery (diagnose of an https URL): what `Alt-Svc` offered and how
    /// the h3 probe went.
    pub http3: Option<Http3Facts>,
}

/// HTTP/3 as diagnose found it beside the probe over TCP (`Facts::probe`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Http3Facts {
    /// The `Alt-Svc` field the server sent over TCP, if any.
    pub alt_svc: Option<String>,
    /// The HTTPS DNS record that offered h3 when `Alt-Svc` did not.
    pub https_rr: Option<String>,
    /// The HTTPS record was looked up and answered (with or without h3).
    pub https_rr_checked: bool,
    /// The UDP port h3 was offered on (`Alt-Svc: h3=":PORT"`), or the URL's own
    /// port when `--http3` asked for it without an offer.
    pub port: Option<u16>,
    /// The h3 probe: fresh and reused TTFB p50, ms (None when it failed or did not run).
    pub fresh_ttfb_ms: Option<f64>,
    pub reused_ttfb_ms: Option<f64>,
    /// The h3 probe's fastest fresh TTFB, ms.
    pub fresh_ttfb_min_ms: Option<f64>,
    /// Each fresh h3 visit's TTFB less the time latscope waited for a CPU during it
    /// (when measured per visit), ms.
    pub fresh_ttfb_samples_ms: Vec<f64>,
    /// How long latscope's threads waited for a CPU during the h3 probe, per
    /// request, ms: time a busy client added to QUIC's side only.
    pub client_cpu_wait_per_visit_ms: Option<f64>,
    /// QUIC packets declared lost per fresh h3 visit (handshake and request).
    pub fresh_lost_per_visit: Option<f64>,
    /// Why the h3 probe failed (then diagnose fell back to the TCP probe).
    pub error: Option<String>,
}
