//! Running a probe: rounds of a fresh sample (a new connection, a full handshake) and
//! a reused one (the next request over that connection), so drift hits both series
//! alike; then on TLS the resumed series (new connections that resume a session); or
//! a TCP-connect ping. Each sample records how long latscope waited for a CPU
//! during it (`noise`); a disturbed round is re-taken.

use std::time::{Duration, Instant, SystemTime};

use crate::net::conn::{self, ConnectOptions};
use crate::net::http::{Exchange, HttpConn};
use crate::net::tls::{self, TlsOptions, ALPN_H2, ALPN_HTTP11};
use crate::net::{ClientOptions, HttpVersionPref, RequestSpec};
use crate::net::{NetError, Scheme, Target};
use crate::units::ms;

use super::noise::{self, Mark};
use super::result::ProbeResult;
use super::sample::{PhasesMs, Sample, Series};
use super::stop::Stop;

/// What to probe and how.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    pub target: Target,
    /// Requests per series.
    pub count: u32,
    pub request: RequestSpec,
    pub client: ClientOptions,
    /// The request's headers that are secret (`--redact-header`, or named as
    /// secrets are): the cache audit never sends them to another origin.
    pub secret_headers: Vec<http::HeaderName>,
}

/// Failed tries, with not one success, after which a probe gives up.
const GIVE_UP: usize = 3;

/// Resumption attempts, with not one resumed, after which the server is taken not to
/// resume sessions (the resumed series then stays empty); the first of them only
/// fetches a session.
const RESUME_TRIES: u32 = 3;

/// Requests over each round's connection after its first (reused samples).
pub const REUSED_PER_ROUND: u32 = 1;

/// Probes one target with `config.count` rounds (each a fresh and a reused sample),
/// re-taking rounds in which latscope waited for a CPU (`noise`) up to `count` times
/// more. Fails only when nothing could be measured (the first error is returned,
/// after at most [`GIVE_UP`] tries); later failures are kept as samples with an
/// error. Stops early, keeping what was measured, when `stop` is set. The adaptive
/// and interleaved form is `sampler::sample`.
pub async fn probe(config: &ProbeConfig, stop: &Stop) -> Result<ProbeResult, NetError> {
    if config.client.http3 {
        return super::run_h3::probe(config, stop).await;
    }
    let sampling = super::sampler::Sampling::fixed(config.count);
    let mut out = super::sampler::sample(
        std::slice::from_ref(config),
        &sampling,
        stop,
        &mut |_: &[ProbeResult]| true,
    )
    .await;
    out.remove(0)
}

pub(super) fn connect_options(config: &ProbeConfig) -> Result<ConnectOptions, NetError> {
    let tls = if config.target.scheme == Scheme::Https {
        let alpn = match config.client.version {
            HttpVersionPref::Auto => vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()],
            HttpVersionPref::Http1 => vec![ALPN_HTTP11.to_vec()],
            HttpVersionPref::Http2 => vec![ALPN_H2.to_vec()],
        };
        let cfg = tls::client_config(&TlsOptions {
            insecure: config.client.insecure,
            cacert: config.client.cacert.clone(),
            alpn,
        })
        .map_err(|e| NetError::Tls {
            host: config.target.host.clone(),
            reason: e.to_string(),
            hint: "",
        })?;
        Some(cfg)
    } else {
        None
    };
    Ok(ConnectOptions {
        resolve: config.client.resolve.clone(),
        timeout: config.client.timeout,
        tls,
    })
}

pub(super) struct Runner<'a> {
    config: &'a ProbeConfig,
    /// Connections that keep and resume TLS sessions.
    opts: ConnectOptions,
    /// Connections that never resume (the fresh series).
    fresh_opts: ConnectOptions,
    clock: Instant,
    stop: &'a Stop,
    samples: Vec<Sample>,
    addresses: Vec<std::net::SocketAddr>,
    tcp: Option<crate::net::tcp::TcpInfo>,
    /// The last successful exchange (status, version, headers to show).
    last: Option<Exchange>,
    /// What a cache said about the first successful exchange (through a cache, the
    /// probe's first request is usually the miss that fills it).
    first_cache: Option<crate::cache::CacheStatus>,
    tls_version: Option<String>,
    alpn: Option<String>,
    cert_not_after_s: Option<i64>,
    first_error: Option<NetError>,
    started: SystemTime,
    /// Retransmissions of the round connections closed so far.
    retrans_closed: u32,
}

/// A failed sample's error, kept to report if nothing succeeds.
struct Failed(NetError);

impl<'a> Runner<'a> {
    /// A runner for one target (fails only when its TLS settings cannot be built).
    pub(super) fn new(config: &'a ProbeConfig, stop: &'a Stop) -> Result<Runner<'a>, NetError> {
        let opts = connect_options(config)?;
        // The fresh samples pay the full handshake every time (what a curl loop or a
        // first visit pays); the resumed series keeps sessions, as a browser does.
        let fresh_opts = ConnectOptions {
            tls: opts.tls.as_ref().map(tls::without_resumption),
            ..opts.clone()
        };
        Ok(Runner {
            config,
            opts,
            fresh_opts,
            clock: Instant::now(),
            stop,
            samples: Vec::new(),
            addresses: Vec::new(),
            tcp: None,
            last: None,
            first_cache: None,
            tls_version: None,
            cert_not_after_s: None,
            alpn: None,
            first_error: None,
            started: SystemTime::now(),
            retrans_closed: 0,
        })
    }

    /// The probe as measured so far (the samples are copied).
    pub(super) fn snapshot(&self) -> ProbeResult {
        self.build(self.samples.clone(), self.last.clone())
    }

    /// The finished probe; the first error when nothing succeeded.
    pub(super) fn finish(mut self) -> Result<ProbeResult, NetError> {
        if let Some(first_error) = self.all_failed() {
            return Err(first_error);
        }
        let samples = std::mem::take(&mut self.samples);
        let last = self.last.take();
        Ok(self.build(samples, last))
    }

    fn build(&self, mut samples: Vec<Sample>, last: Option<Exchange>) -> ProbeResult {
        let too_busy = super::noise::keep_enough(&mut samples);
        let mut result = ProbeResult::new(
            self.config,
            self.started,
            self.clock.elapsed(),
            samples,
            self.addresses.clone(),
            self.tcp,
            last,
            self.tls_version.clone(),
            self.alpn.clone(),
            self.stop.is_stopped(),
        );
        if let Some(f) = result.first_request.as_mut() {
            f.cache = self.first_cache.as_ref().map(|c| c.state);
            f.cache_kind = self.first_cache.as_ref().and_then(|c| c.kind);
        }
        if let Some(t) = result.tls.as_mut() {
            t.cert_not_after_s = self.cert_not_after_s;
        }
        result.client = super::noise::summary(&result.samples, too_busy);
        result
    }

    /// Whether no more samples should be taken (stopped, or nothing works).
    pub(super) fn done(&self) -> bool {
        self.stop.is_stopped() || self.hopeless()
    }

    /// Whether this target is a `tcp://` ping.
    pub(super) fn is_ping(&self) -> bool {
        self.config.target.scheme == Scheme::Tcp
    }

    fn h2c(&self) -> bool {
        self.config.client.version == HttpVersionPref::Http2
    }

    /// Opens a connection (dns, connect, tls, HTTP handshake), bounded by the timeout
    /// and the stop flag; `resume`: with the client that keeps TLS sessions.
    async fn open(&mut self, resume: bool) -> Result<(HttpConn, [Duration; 3]), Failed> {
        let target = &self.config.target;
        let opts = if resume { &self.opts } else { &self.fresh_opts };
        let opening = async {
            let c = conn::open(target, opts).await?;
            let phases = [c.dns, c.connect, c.tls];
            let addrs = c.addresses.clone();
            let http = HttpConn::handshake(c, self.h2c()).await?;
            Ok::<_, NetError>((http, phases, addrs))
        };
        let (http, phases, addrs) = tokio::select! {
            r = opening => r.map_err(Failed)?,
            _ = self.stop.stopped() => return Err(Failed(NetError::Interrupted)),
        };
        if self.addresses.is_empty() {
            self.addresses = addrs;
        }
        if let Some(info) = &http.tls_info {
            self.tls_version.get_or_insert_with(|| info.version.clone());
            self.alpn = info.alpn.clone();
            if info.cert_not_after_s.is_some() {
                self.cert_not_after_s = info.cert_not_after_s;
            }
        }
        Ok((http, phases))
    }

    /// One request over `http`, bounded by the timeout and the stop flag.
    async fn exchange(&mut self, http: &mut HttpConn) -> Result<Exchange, Failed> {
        let cfg = self.config;
        tokio::select! {
            r = http.send(&cfg.target, &cfg.request, cfg.client.timeout) => r.map_err(Failed),
            _ = self.stop.stopped() => Err(Failed(NetError::Interrupted)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        series: Series,
        t: Instant,
        mark: &Mark,
        phases: [Duration; 3],
        http: &HttpConn,
        x: Exchange,
        resume: bool,
    ) -> bool {
        let (client_wait_ms, client_cpu_ms) = mark.since();
        let new_connection = phases != [Duration::ZERO; 3];
        let phases_ms = PhasesMs::new(phases[0], phases[1], phases[2], &x);
        let throughput = (x.receive > Duration::from_micros(50) && x.body_bytes >= 64 * 1024)
            .then(|| x.body_bytes as f64 / 1_048_576.0 / x.receive.as_secs_f64());
        let info = http.tcp_info();
        self.samples.push(Sample {
            series,
            t_ms: ms(t - self.clock),
            phases_ms,
            new_connection,
            status: Some(x.status),
            body_bytes: x.body_bytes,
            throughput_mib_s: throughput,
            tls_resumed: Some(http.tls_info.as_ref().is_some_and(|i| i.resumed)),
            tls_client_resumes: http.tls_info.as_ref().map(|_| resume),
            tcp_rtt_ms: info.map(|i| i.rtt_us as f64 / 1000.0),
            quic_rtt_ms: None,
            zero_rtt: None,
            closed_by_server: x.closed_after,
            error: None,
            error_kind: None,
            client_wait_ms,
            client_cpu_ms: Some(client_cpu_ms),
            // The very first request is kept whatever it waited (a cold start
            // happens once; the rules subtract its wait instead).
            disturbed: self.last.is_some()
                && client_wait_ms.is_some_and(|w| noise::disturbed(w, phases_ms.total)),
        });
        let clean = !self.samples.last().is_some_and(|s| s.disturbed);
        if self.last.is_none() {
            let h = crate::cache::Headers::from_pairs(&x.headers);
            self.first_cache = Some(crate::cache::cache_status(&h));
        }
        self.last = Some(x);
        clean
    }

    fn record_error(&mut self, series: Series, t: Instant, e: NetError) {
        // A request cut short by Ctrl-C or a deadline did not fail: it is just not
        // measured.
        if matches!(e, NetError::Interrupted) {
            self.first_error.get_or_insert(e);
            return;
        }
        self.samples
            .push(Sample::failed(series, ms(t - self.clock), &e));
        self.first_error.get_or_insert(e);
    }

    /// One round: a connection of its own (DNS resolved anew, a full TLS
    /// handshake), whose request is a fresh sample, then [`REUSED_PER_ROUND`]
    /// requests over it, each a reused sample; a connection the server closed is
    /// opened again, as a client would. Each round holds one connection at a time,
    /// so a server that serves one connection at a time is never kept waiting.
    /// Returns whether every sample of the round was clean (latscope did not wait
    /// for a CPU during it: `noise`).
    pub(super) async fn round(&mut self) -> bool {
        let mark = Mark::now();
        let t = Instant::now();
        let (mut http, phases) = match self.open(false).await {
            Ok(c) => c,
            Err(Failed(e)) => {
                self.record_error(Series::Fresh, t, e);
                return true;
            }
        };
        let mut clean = match self.exchange(&mut http).await {
            Ok(x) => self.record(Series::Fresh, t, &mark, phases, &http, x, false),
            Err(Failed(e)) => {
                self.record_error(Series::Fresh, t, e);
                return true;
            }
        };
        for _ in 0..REUSED_PER_ROUND {
            if self.done() {
                break;
            }
            let mark = Mark::now();
            let t = Instant::now();
            let mut phases = [Duration::ZERO; 3];
            if !http.is_usable() {
                self.closed(&http);
                match self.open(true).await {
                    Ok((c, p)) => {
                        http = c;
                        phases = p;
                    }
                    Err(Failed(e)) => {
                        self.record_error(Series::Reused, t, e);
                        return clean;
                    }
                }
            }
            match self.exchange(&mut http).await {
                Ok(x) => clean &= self.record(Series::Reused, t, &mark, phases, &http, x, true),
                Err(Failed(e)) => self.record_error(Series::Reused, t, e),
            }
        }
        self.closed(&http);
        clean
    }

    /// Takes the kernel's view of a round's connection as it is done with: the
    /// smallest min RTT of every connection so far (more connections, a truer
    /// floor), the latest smoothed RTT and window, and the retransmissions summed
    /// over the connections.
    fn closed(&mut self, http: &HttpConn) {
        let Some(info) = http.tcp_info() else { return };
        let min = match self.tcp.map(|t| t.min_rtt_us).filter(|m| *m > 0) {
            Some(m) if info.min_rtt_us > 0 => m.min(info.min_rtt_us),
            Some(m) => m,
            None => info.min_rtt_us,
        };
        self.retrans_closed += info.total_retrans;
        self.tcp = Some(crate::net::tcp::TcpInfo {
            min_rtt_us: min,
            total_retrans: self.retrans_closed,
            ..info
        });
    }

    /// N requests, each on a new connection that offers the TLS session of an earlier
    /// one (a returning visitor). A connection the server did not resume paid the full
    /// handshake: it counts as fresh. After [`RESUME_TRIES`] tries without one
    /// resumption the server does not resume, and the series stops.
    pub(super) async fn resumed_series(&mut self) {
        let (mut tried, mut resumed) = (0u32, 0u32);
        // The first connection has no session to offer (the rounds' connections keep
        // none): it fetches one, and counts as a fresh sample.
        while resumed < self.config.count && tried < self.config.count + RESUME_TRIES {
            if self.stop.is_stopped() || self.hopeless() {
                return;
            }
            if tried >= RESUME_TRIES && resumed == 0 {
                return;
            }
            let mark = Mark::now();
            let t = Instant::now();
            tried += 1;
            match self.open(true).await {
                Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                Ok((mut http, phases)) => {
                    let was_resumed = http.tls_info.as_ref().is_some_and(|i| i.resumed);
                    let series = if was_resumed {
                        resumed += 1;
                        Series::Resumed
                    } else {
                        Series::Fresh
                    };
                    match self.exchange(&mut http).await {
                        Ok(x) => {
                            self.record(series, t, &mark, phases, &http, x, true);
                        }
                        Err(Failed(e)) => self.record_error(series, t, e),
                    }
                }
            }
        }
    }

    /// One TCP connect, resolving anew: a ping for a database host.
    pub(super) async fn ping_once(&mut self) {
        let t = Instant::now();
        let opened = tokio::select! {
            r = conn::open(&self.config.target, &self.opts) => r,
            _ = self.stop.stopped() => return,
        };
        match opened {
            Ok(c) => {
                if self.addresses.is_empty() {
                    self.addresses = c.addresses.clone();
                }
                let info = crate::net::tcp::tcp_info(&c.socket).ok();
                let (dns, connect) = (ms(c.dns), ms(c.connect));
                self.samples.push(Sample {
                    series: Series::Fresh,
                    t_ms: ms(t - self.clock),
                    phases_ms: PhasesMs {
                        dns,
                        connect,
                        ttfb: dns + connect,
                        total: dns + connect,
                        ..PhasesMs::default()
                    },
                    new_connection: true,
                    status: None,
                    body_bytes: 0,
                    throughput_mib_s: None,
                    tls_resumed: Some(false),
                    tls_client_resumes: None,
                    tcp_rtt_ms: info.map(|i| i.rtt_us as f64 / 1000.0),
                    quic_rtt_ms: None,
                    zero_rtt: None,
                    closed_by_server: false,
                    error: None,
                    error_kind: None,
                    client_wait_ms: None,
                    client_cpu_ms: None,
                    disturbed: false,
                });
                if info.is_some() {
                    self.tcp = info;
                }
            }
            Err(e) => self.record_error(Series::Fresh, t, e),
        }
    }

    fn hopeless(&self) -> bool {
        hopeless(&self.samples)
    }

    fn all_failed(&mut self) -> Option<NetError> {
        all_failed(&self.samples, &mut self.first_error)
    }
}

/// Nothing has worked in the first [`GIVE_UP`] tries: the rest would fail the same
/// way, each after up to a full timeout (a server that never answers would hold a
/// 20-request probe for 20 timeouts). Over TCP and over QUIC alike.
pub(super) fn hopeless(samples: &[Sample]) -> bool {
    samples.len() >= GIVE_UP && samples.iter().all(|s| s.error.is_some())
}

/// When not one sample succeeded: the first error (taken).
pub(super) fn all_failed(samples: &[Sample], first: &mut Option<NetError>) -> Option<NetError> {
    if samples.iter().any(|s| s.error.is_none()) {
        return None;
    }
    Some(first.take().unwrap_or(NetError::Interrupted))
}
