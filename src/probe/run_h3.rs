//! Running a probe over HTTP/3 (`--http3`): the same three series as over TCP, with
//! QUIC's handshake as the `connect` phase (no separate `tls` phase: QUIC runs the
//! transport and TLS 1.3 handshakes together) and QUIC's RTT estimate in place of
//! the kernel's `TCP_INFO`.
//!
//! - fresh: a new QUIC connection per request, no session kept (a first visit);
//! - reused: one connection (its first request is a fresh sample), then N requests;
//! - resumed: new connections of the client that keeps sessions; an idempotent
//!   request goes as 0-RTT early data when the ticket allows it, as browsers do.

use std::time::{Duration, Instant, SystemTime};

use crate::net::quic::{H3Conn, QuicClient, QuicPath};
use crate::net::tls::TlsOptions;
use crate::net::{http::Exchange, NetError};
use crate::stats::Percentiles;
use crate::units::ms;

use super::result::{ProbeResult, QuicSummary};
use super::run::ProbeConfig;
use super::sample::{PhasesMs, Sample, Series};
use super::stop::Stop;

/// Resumption attempts, with not one resumed, after which the server is taken not to
/// resume sessions.
const RESUME_TRIES: u32 = 2;

/// Probes one https target over HTTP/3. Fails only when nothing could be measured.
pub(super) async fn probe(config: &ProbeConfig, stop: &Stop) -> Result<ProbeResult, NetError> {
    let started = SystemTime::now();
    let clock = Instant::now();
    let tls = TlsOptions {
        insecure: config.client.insecure,
        cacert: config.client.cacert.clone(),
        alpn: Vec::new(),
    };
    let tls_error = |e: crate::net::tls::TlsConfigError| NetError::Tls {
        host: config.target.host.clone(),
        reason: e.to_string(),
        hint: "",
    };
    let mut run = Runner {
        config,
        fresh: QuicClient::new(&tls, false).map_err(tls_error)?,
        keeping: QuicClient::new(&tls, true).map_err(tls_error)?,
        clock,
        stop,
        samples: Vec::new(),
        addresses: Vec::new(),
        path: None,
        last: None,
        alpn: None,
        handshakes_ms: Vec::new(),
        zero_rtt: (0, 0),
        fresh_packets: (0, 0),
        first_error: None,
    };
    run.fresh_series().await;
    run.reused_series().await;
    run.resumed_series().await;
    if let Some(first_error) = super::run::all_failed(&run.samples, &mut run.first_error) {
        return Err(first_error);
    }
    let mut result = ProbeResult::new(
        config,
        started,
        clock.elapsed(),
        std::mem::take(&mut run.samples),
        std::mem::take(&mut run.addresses),
        None,
        run.last.take(),
        Some("TLSv1.3".to_string()),
        run.alpn.take(),
        stop.is_stopped(),
    );
    result.set_quic(run.summary(result.tls.as_ref().is_some_and(|t| t.resumed)));
    Ok(result)
}

struct Runner<'a> {
    config: &'a ProbeConfig,
    /// Keeps no sessions: every connection pays the full handshake.
    fresh: QuicClient,
    /// Keeps sessions: later connections resume, and may send 0-RTT.
    keeping: QuicClient,
    clock: Instant,
    stop: &'a Stop,
    samples: Vec<Sample>,
    addresses: Vec<std::net::SocketAddr>,
    /// QUIC's view of the reused connection at its end.
    path: Option<QuicPath>,
    last: Option<Exchange>,
    alpn: Option<String>,
    /// The fresh series' handshakes, ms.
    handshakes_ms: Vec<f64>,
    /// 0-RTT (tries, accepted).
    zero_rtt: (u32, u32),
    /// Packets (sent, lost) over the fresh series' connections.
    fresh_packets: (u64, u64),
    first_error: Option<NetError>,
}

/// A failed sample's error.
struct Failed(NetError);

impl Runner<'_> {
    /// Opens a connection (dns, QUIC handshake, HTTP/3 setup), bounded by the
    /// timeout and the stop flag.
    async fn open(&mut self, keep: bool, early: bool) -> Result<H3Conn, Failed> {
        let cfg = self.config;
        let client = if keep { &self.keeping } else { &self.fresh };
        let opening = client.connect(&cfg.target, &cfg.client.resolve, cfg.client.timeout, early);
        let conn = tokio::select! {
            r = opening => r.map_err(Failed)?,
            _ = self.stop.stopped() => return Err(Failed(NetError::Interrupted)),
        };
        if self.addresses.is_empty() {
            self.addresses = conn.addresses.clone();
        }
        Ok(conn)
    }

    /// One request over `conn`, bounded by the timeout and the stop flag.
    async fn exchange(&mut self, conn: &mut H3Conn) -> Result<Exchange, Failed> {
        let cfg = self.config;
        tokio::select! {
            r = conn.send(&cfg.target, &cfg.request, cfg.client.timeout) => r.map_err(Failed),
            _ = self.stop.stopped() => Err(Failed(NetError::Interrupted)),
        }
    }

    /// Records a successful request; `opened`: it opened `conn` (dns and connect
    /// count), `keep`: by the client that keeps sessions.
    async fn record(
        &mut self,
        series: Series,
        t: Instant,
        conn: &mut H3Conn,
        opened: bool,
        keep: bool,
        x: Exchange,
    ) {
        let (dns, connect) = if opened {
            (conn.dns, conn.connect)
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        let hs = conn.handshake(self.config.client.timeout).await;
        if hs.alpn.is_some() {
            self.alpn = hs.alpn.clone();
        }
        if opened && series == Series::Fresh && !keep {
            self.handshakes_ms.push(hs.handshake_ms);
        }
        let path = conn.path();
        if opened && series == Series::Fresh {
            self.fresh_packets.0 += path.sent_packets;
            self.fresh_packets.1 += path.lost_packets;
        }
        if opened {
            if let Some(accepted) = hs.zero_rtt {
                self.zero_rtt.0 += 1;
                self.zero_rtt.1 += u32::from(accepted);
            }
        }
        let throughput = (x.receive > Duration::from_micros(50) && x.body_bytes >= 64 * 1024)
            .then(|| x.body_bytes as f64 / 1_048_576.0 / x.receive.as_secs_f64());
        self.samples.push(Sample {
            series,
            t_ms: ms(t - self.clock),
            phases_ms: PhasesMs::new(dns, connect, Duration::ZERO, &x),
            new_connection: opened,
            status: Some(x.status),
            body_bytes: x.body_bytes,
            throughput_mib_s: throughput,
            tls_resumed: Some(hs.resumed),
            tls_client_resumes: Some(keep),
            tcp_rtt_ms: None,
            quic_rtt_ms: Some(path.rtt_ms),
            zero_rtt: if opened { hs.zero_rtt } else { None },
            closed_by_server: false,
            error: None,
            error_kind: None,
            client_wait_ms: None,
            client_cpu_ms: None,
            disturbed: false,
        });
        self.last = Some(x);
    }

    fn record_error(&mut self, series: Series, t: Instant, e: NetError) {
        if matches!(e, NetError::Interrupted) {
            self.first_error.get_or_insert(e);
            return;
        }
        self.samples
            .push(Sample::failed(series, ms(t - self.clock), &e));
        self.first_error.get_or_insert(e);
    }

    fn done(&self) -> bool {
        self.stop.is_stopped() || super::run::hopeless(&self.samples)
    }

    /// N requests, each on a new QUIC connection with a full handshake; each
    /// sample says how long latscope waited for a CPU during it (QUIC runs in user
    /// space: a busy client slows it where it would not slow TCP).
    async fn fresh_series(&mut self) {
        for _ in 0..self.config.count {
            if self.done() {
                return;
            }
            let mark = super::noise::Mark::now();
            let t = Instant::now();
            match self.open(false, false).await {
                Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                Ok(mut conn) => match self.exchange(&mut conn).await {
                    Ok(x) => {
                        let (wait, cpu) = mark.since();
                        self.record(Series::Fresh, t, &mut conn, true, false, x)
                            .await;
                        if let Some(s) = self.samples.last_mut() {
                            s.client_wait_ms = wait;
                            s.client_cpu_ms = Some(cpu);
                        }
                    }
                    Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                },
            }
        }
    }

    /// One connection (its first request a fresh sample; it also gives the client
    /// its session ticket), then N requests over it; reconnects when it is lost.
    async fn reused_series(&mut self) {
        let mut conn: Option<H3Conn> = None;
        let (mut done, mut attempts, mut first) = (0u32, 0u32, true);
        while done < self.config.count && attempts < self.config.count * 2 + 2 {
            attempts += 1;
            if self.done() {
                return;
            }
            let t = Instant::now();
            let series = if first { Series::Fresh } else { Series::Reused };
            let (mut c, opened) = match conn.take() {
                Some(c) if c.is_usable() => (c, false),
                _ => match self.open(true, false).await {
                    Ok(c) => (c, true),
                    Err(Failed(e)) => {
                        self.record_error(series, t, e);
                        if first {
                            return;
                        }
                        done += 1;
                        continue;
                    }
                },
            };
            match self.exchange(&mut c).await {
                Ok(x) => {
                    self.record(series, t, &mut c, opened, true, x).await;
                    self.path = Some(c.path());
                }
                Err(Failed(e)) => self.record_error(series, t, e),
            }
            if !first {
                done += 1;
            }
            first = false;
            conn = Some(c);
        }
        if let Some(c) = conn {
            self.keep_ticket(&c).await;
        }
    }

    /// N requests, each on a new connection offering a kept session (0-RTT for an
    /// idempotent request when the ticket allows); one the server did not resume
    /// counts as fresh. Stops after [`RESUME_TRIES`] tries without a resumption.
    async fn resumed_series(&mut self) {
        let early = matches!(
            self.config.request.method,
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        );
        let (mut tried, mut resumed) = (0u32, 0u32);
        for _ in 0..self.config.count {
            if self.done() || (tried >= RESUME_TRIES && resumed == 0) {
                return;
            }
            let t = Instant::now();
            tried += 1;
            match self.open(true, early).await {
                Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                Ok(mut conn) => match self.exchange(&mut conn).await {
                    Ok(x) => {
                        let was = conn.handshake(self.config.client.timeout).await.resumed;
                        let series = if was {
                            resumed += 1;
                            Series::Resumed
                        } else {
                            Series::Fresh
                        };
                        self.record(series, t, &mut conn, true, true, x).await;
                        self.keep_ticket(&conn).await;
                    }
                    Err(Failed(e)) => self.record_error(Series::Fresh, t, e),
                },
            }
        }
    }

    /// Before a connection of the client that keeps sessions closes, lets the
    /// server's ticket for the next visit come in (it may trail the response), as
    /// it does for a browser keeping the connection; bounded by a few round trips
    /// (≥ 100 ms) and the timeout, for servers that send none.
    async fn keep_ticket(&self, conn: &H3Conn) {
        let rtt = Duration::from_secs_f64(conn.path().rtt_ms / 1000.0);
        let limit = (rtt * 4)
            .max(Duration::from_millis(100))
            .min(self.config.client.timeout);
        tokio::select! {
            _ = conn.await_ticket(limit) => {}
            _ = self.stop.stopped() => {}
        }
    }

    /// The `quic` object of the probe JSON.
    fn summary(&self, resumed: bool) -> QuicSummary {
        let path = self.path.unwrap_or_default();
        let handshake_ms = (!self.handshakes_ms.is_empty())
            .then(|| Percentiles::from_samples(&self.handshakes_ms).p50);
        let (tries, accepted) = self.zero_rtt;
        QuicSummary {
            rtt_source: "quic".into(),
            rtt_ms: path.rtt_ms,
            min_rtt_ms: path.min_rtt_ms,
            cwnd: path.cwnd,
            sent_packets: path.sent_packets,
            lost_packets: path.lost_packets,
            fresh_sent_packets: self.fresh_packets.0,
            fresh_lost_packets: self.fresh_packets.1,
            handshake_ms,
            handshake_round_trips: handshake_ms
                .filter(|_| path.min_rtt_ms >= 0.5)
                .map(|h| h / path.min_rtt_ms),
            resumed,
            zero_rtt_tries: tries,
            zero_rtt_accepted: accepted,
            zero_rtt: (tries > 0).then_some(accepted > 0),
        }
    }
}
