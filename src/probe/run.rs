//! Running a probe: the fresh series (full handshakes), the reused series, on TLS the
//! resumed series (new connections that resume a session), or a TCP-connect ping.

use std::time::{Duration, Instant, SystemTime};

use crate::net::conn::{self, ConnectOptions};
use crate::net::http::{Exchange, HttpConn};
use crate::net::tls::{self, TlsOptions, ALPN_H2, ALPN_HTTP11};
use crate::net::{ClientOptions, HttpVersionPref, RequestSpec};
use crate::net::{NetError, Scheme, Target};
use crate::units::ms;

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
/// resume sessions (the resumed series then stays empty).
const RESUME_TRIES: u32 = 2;

/// Probes one target. Fails only when nothing could be measured (the first error is
/// returned, after at most [`GIVE_UP`] tries); later failures are kept as samples
/// with an error. Stops early, keeping what was measured, when `stop` is set.
pub async fn probe(config: &ProbeConfig, stop: &Stop) -> Result<ProbeResult, NetError> {
    if config.client.http3 {
        return super::run_h3::probe(config, stop).await;
    }
    let started = SystemTime::now();
    let clock = Instant::now();
    let opts = connect_options(config)?;
    // The fresh series pays the full handshake every time (what a curl loop or a
    // first visit pays); the others keep sessions, as a browser does.
    let fresh_opts = ConnectOptions {
        tls: opts.tls.as_ref().map(tls::without_resumption),
        ..opts.clone()
    };
    let mut run = Runner {
        config,
        opts,
        fresh_opts,
        clock,
        stop,
        samples: Vec::new(),
        addresses: Vec::new(),
        tcp: None,
        last: None,
        first_cache: None,
        tls_version: None,
        alpn: None,
        first_error: None,
    };
    if config.target.scheme == Scheme::Tcp {
        run.tcp_ping().await;
    } else {
        run.fresh_series().await;
        // The reused connection's full handshake also gives the client a session
        // (TLS 1.3 tickets arrive during its requests) for the resumed series.
        run.reused_series().await;
        if config.target.scheme == Scheme::Https {
            run.resumed_series().await;
        }
    }
    if let Some(first_error) = run.all_failed() {
        return Err(first_error);
    }
    let mut result = ProbeResult::new(
        config,
        started,
        clock.elapsed(),
        run.samples,
        run.addresses,
        run.tcp,
        run.last,
        run.tls_version,
        run.alpn,
        stop.is_stopped(),
    );
    if let Some(f) = result.first_request.as_mut() {
        f.cache = run.first_cache;
    }
    Ok(result)
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

struct Runner<'a> {
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
    first_cache: Option<crate::cache::CacheState>,
    tls_version: Option<String>,
    alpn: Option<String>,
    first_error: Option<NetError>,
}

/// A failed sample's error, kept to report if nothing succeeds.
struct Failed(NetError);

impl Runner<'_> {
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

    fn record(
        &mut self,
        series: Series,
        t: Instant,
        phases: [Duration; 3],
        http: &HttpConn,
        x: Exchange,
        resume: bool,
    ) {
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
        });
        if self.last.is_none() {
            let h = crate::cache::Headers::from_pairs(&x.headers);
            self.first_cache = Some(crate::cache::cache_status(&h).state);
        }
        self.last = Some(x);
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

    /// N requests, each on a connection of its own (DNS resolved anew every time),
    /// each with a full TLS handshake.
    async fn fresh_series(&mut self) {
        for _ in 0..self.config.count {
            if self.stop.is_stopped() || self.hopeless() {
                return;
            }
            let t = Instant::now();
            match self.open(false).await {
                Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                Ok((mut http, phases)) => match self.exchange(&mut http).await {
                    Ok(x) => self.record(Series::Fresh, t, phases, &http, x, false),
                    Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                },
            }
        }
    }

    /// N requests, each on a new connection that offers the TLS session of an earlier
    /// one (a returning visitor). A connection the server did not resume paid the full
    /// handshake: it counts as fresh. After [`RESUME_TRIES`] tries without one
    /// resumption the server does not resume, and the series stops.
    async fn resumed_series(&mut self) {
        let (mut tried, mut resumed) = (0u32, 0u32);
        for _ in 0..self.config.count {
            if self.stop.is_stopped() || self.hopeless() {
                return;
            }
            if tried >= RESUME_TRIES && resumed == 0 {
                return;
            }
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
                        Ok(x) => self.record(series, t, phases, &http, x, true),
                        Err(Failed(e)) => self.record_error(series, t, e),
                    }
                }
            }
        }
    }

    /// One connection (its first request is a fresh sample), then N requests over it;
    /// reconnects, as a client would, when the server closes it.
    async fn reused_series(&mut self) {
        let mut conn: Option<HttpConn> = None;
        let mut done = 0u32;
        let mut first = true;
        let mut attempts = 0u32;
        while done < self.config.count && attempts < self.config.count * 2 + 2 {
            attempts += 1;
            if self.stop.is_stopped() || self.hopeless() {
                return;
            }
            let t = Instant::now();
            let mut phases = [Duration::ZERO; 3];
            let mut http = match conn.take() {
                Some(c) if c.is_usable() => c,
                _ => match self.open(true).await {
                    Ok((c, p)) => {
                        phases = p;
                        c
                    }
                    Err(Failed(e)) => {
                        let series = if first { Series::Fresh } else { Series::Reused };
                        self.record_error(series, t, e);
                        if first {
                            return;
                        }
                        done += 1;
                        continue;
                    }
                },
            };
            let series = if first { Series::Fresh } else { Series::Reused };
            match self.exchange(&mut http).await {
                Ok(x) => {
                    self.record(series, t, phases, &http, x, true);
                    if let Some(info) = http.tcp_info() {
                        self.tcp = Some(info);
                    }
                }
                Err(Failed(e)) => self.record_error(series, t, e),
            }
            if !first {
                done += 1;
            }
            first = false;
            conn = Some(http);
        }
    }

    /// N TCP connects, each resolving anew: a ping for a database host.
    async fn tcp_ping(&mut self) {
        for _ in 0..self.config.count {
            if self.stop.is_stopped() || self.hopeless() {
                return;
            }
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
                    });
                    if info.is_some() {
                        self.tcp = info;
                    }
                }
                Err(e) => self.record_error(Series::Fresh, t, e),
            }
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
