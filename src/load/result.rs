//! A finished load run: the worker threads' recorders merged (histograms add
//! losslessly), the per-second timeline joined with the host samples, thresholds
//! judged — and the histograms the store keeps. Its load JSON of DESIGN.md is
//! `schema::LoadDoc`. Plain data: `diagnose::from_load` reads it for the rules.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::plan::LoadPlan;
use super::recorder::{ErrorKind, Recorder, SecondAcc, KINDS};
use super::seconds::{merge_second, v2};
use super::sys::{SecondSample, ThreadTime};
use super::threshold::{Metric, MetricSource, Verdict};
use crate::stats::histogram::{growing_histogram, new_histogram, HIGHEST_NS};
use crate::stats::StoredHistogram;
use crate::stats::{Percentiles, Unit};

/// One endpoint's results.
#[derive(Debug, Clone)]
pub struct EndpointResult {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub bytes: u64,
    pub latency: Histogram<u64>,
    /// Seconds the run lasted (for its rps).
    pub(crate) elapsed_s: f64,
    /// A scenario's checks on its responses (all zero: none).
    pub checks: super::recorder::Checks,
    /// The names of its checks (`status`, `json user.id`, …), in order.
    pub check_names: Vec<String>,
}

/// One second of the timeline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecondResult {
    pub t: u32,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    pub bytes: u64,
    pub dropped: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Connections open (most during the second).
    pub active: u64,
    pub cache_hits: u64,
    /// Host TCP retransmits during the second.
    pub retrans: Option<u64>,
    /// latscope's worker CPU, percent of one core.
    pub cpu_pct: Option<f64>,
    /// This second's latency histogram, V2 deflate (empty: no request completed).
    pub v2: Vec<u8>,
    /// Requests that started in this second, whenever they ended.
    pub started: u64,
    /// The slowest of them, ms (0: none started).
    pub started_max_ms: f64,
    /// Per endpoint (plan order): requests started in this second and the slowest
    /// of them, ms.
    pub endpoints: Vec<(u64, f64)>,
    /// SYN retransmissions of latscope's own connections that came up this second.
    pub syn_retrans: u64,
    /// Segments latscope's own new connections resent before their first response
    /// (first answered this second).
    pub early_retrans: u64,
    /// Host SYN and SYN-ACK retransmissions during the second (`TCPSynRetrans`,
    /// part of `retrans`).
    pub host_syn_retrans: Option<u64>,
    /// This second's latency histogram per endpoint (V2 deflate), with two or more
    /// endpoints (empty otherwise).
    pub ep_v2: Vec<Vec<u8>>,
    /// The server's side of this second, from `--watch` (None: not watched, or a gap).
    pub server: Option<crate::watch::ServerSecond>,
    /// A scenario's checks judged on this second's responses, and the failed ones.
    pub checks: u64,
    pub checks_failed: u64,
}

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub target: String,
    /// The engine that ran it: "io_uring" or "epoll" (`--engine`), "mixed" when
    /// worker threads ran on different ones (a thread whose ring could not be set
    /// up runs on epoll under `auto`).
    pub engine: &'static str,
    /// Per worker thread, and why any fell back (`engine_workers`,
    /// `engine_fallback`).
    pub engines: super::uring::Engines,
    pub model: &'static str,
    /// What the connections spoke: "HTTP/1.1", "HTTP/2" or "HTTP/3" (None: not
    /// known, as in a run read back from before it was recorded).
    pub http_version: Option<&'static str>,
    /// Open model: the arrival rate the plan asked for, req/s (the mean over the run
    /// for stages); None for the closed model.
    pub target_rps: Option<f64>,
    pub started: SystemTime,
    pub elapsed: Duration,
    /// The planned length (`-d`, stages); None in count mode. `elapsed` runs past it
    /// by the grace given to requests in flight at the end.
    pub run_length: Option<Duration>,
    pub connections: u32,
    pub threads: usize,
    /// Completed requests (ok + errors).
    pub requests: u64,
    pub ok: u64,
    pub dropped: u64,
    pub incomplete: u64,
    pub bytes: u64,
    pub cache_hits: u64,
    /// Responses a cache answered MISS, BYPASS or DYNAMIC.
    pub cache_misses: u64,
    /// Which cache answered, when the responses said (the last one that did).
    pub cache_kind: Option<crate::cache::CacheKind>,
    pub connections_opened: u64,
    /// SYNs latscope's own connections sent again (per-connection TCP_INFO), and how
    /// many connections needed any.
    pub syn_retrans: u64,
    pub syn_retried_conns: u64,
    /// Segments latscope's own connections resent between connect and their first
    /// response (HTTP/1.1).
    pub early_retrans: u64,
    /// Data segments latscope's own HTTP/1.1 connections retransmitted after their
    /// first response (per-connection TCP_INFO at close); None when no connection
    /// was watched (HTTP/2).
    pub data_retrans: Option<u64>,
    /// The longest window a worker thread slept before collecting its sockets'
    /// readiness (epoll engine, batched wakes: `worker::wake`), as asked for;
    /// None when none batched.
    pub wake_window: Option<Duration>,
    pub errors: BTreeMap<String, u64>,
    pub statuses: BTreeMap<u16, u64>,
    pub latency: Histogram<u64>,
    /// Open model only.
    pub service: Option<Histogram<u64>>,
    pub connect: Histogram<u64>,
    pub tls: Histogram<u64>,
    pub endpoints: Vec<EndpointResult>,
    pub timeline: Vec<SecondResult>,
    pub thresholds: Vec<Verdict>,
    /// Worker-thread CPU over the run, percent of one core.
    pub client_cpu_pct: f64,
    /// Time the worker threads were ready to run but waited for a CPU, percent of
    /// the run summed over threads (`None` where the kernel does not say).
    pub client_wait_pct: Option<f64>,
    /// Stopped by the stop flag (Ctrl-C) before its end.
    pub aborted: bool,
    /// `--raw` could not be written completely.
    pub raw_error: Option<String>,
    /// What `--watch` scraped (None: no `--watch`); the seconds are in the timeline.
    pub watch: Option<crate::watch::WatchSummary>,
}

pub(crate) fn ms(p: &Histogram<u64>) -> Percentiles {
    Percentiles::from_histogram(p, Unit::Millis)
}

struct Numbers<'a> {
    latency: &'a Histogram<u64>,
    requests: u64,
    ok: u64,
    elapsed_s: f64,
    /// Checks judged and passed.
    checks: (u64, u64),
}

impl MetricSource for Numbers<'_> {
    fn metric(&self, m: Metric) -> Option<f64> {
        let lat = |v: u64| Some(v as f64 / 1e6);
        match m {
            Metric::Requests => Some(self.requests as f64),
            Metric::Rps => Some(self.requests as f64 / self.elapsed_s.max(1e-9)),
            Metric::ErrorRate if self.requests == 0 => None,
            Metric::ErrorRate => {
                Some((self.requests - self.ok) as f64 * 100.0 / self.requests as f64)
            }
            Metric::Checks if self.checks.0 == 0 => None,
            Metric::Checks => Some(self.checks.1 as f64 * 100.0 / self.checks.0 as f64),
            _ if self.latency.is_empty() => None,
            Metric::Min => lat(self.latency.min()),
            Metric::Max => lat(self.latency.max()),
            Metric::Mean => Some(self.latency.mean() / 1e6),
            Metric::Quantile(q) => lat(self.latency.value_at_quantile(q as f64 / 1e6)),
        }
    }
}

/// Merges the threads' recorders.
pub fn merge(
    plan: &LoadPlan,
    started: SystemTime,
    elapsed: Duration,
    outputs: Vec<(Recorder, ThreadTime)>,
    samples: &[SecondSample],
    aborted: bool,
) -> LoadResult {
    let open = matches!(plan.model, super::plan::Model::Open { .. });
    // Growing, like the threads' (188 KiB each at full range, at the run's end, when
    // its memory peaks); stored with the full range (`histograms`).
    let mut latency = growing_histogram();
    let mut service = growing_histogram();
    let mut connect = growing_histogram();
    let mut tls = growing_histogram();
    let elapsed_s = elapsed.as_secs_f64();
    let mut endpoints: Vec<EndpointResult> = plan
        .endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| EndpointResult {
            name: e.name.clone(),
            requests: 0,
            ok: 0,
            bytes: 0,
            latency: super::recorder::endpoint_histogram(plan.endpoints.len()),
            elapsed_s,
            checks: Default::default(),
            check_names: plan
                .script
                .as_ref()
                .and_then(|s| s.steps.get(i))
                .map(|s| s.check_names.clone())
                .unwrap_or_default(),
        })
        .collect();
    let (mut requests, mut ok, mut dropped, mut incomplete, mut bytes, mut hits, mut opened) =
        (0, 0, 0, 0, 0, 0, 0);
    let (mut syn_retrans, mut syn_retried, mut watched, mut data_retrans) = (0, 0, 0, 0);
    let mut early_retrans = 0;
    let mut wake_window = Duration::ZERO;
    let (mut misses, mut kind) = (0u64, None);
    let mut errors = [0u64; KINDS];
    let mut statuses = BTreeMap::new();
    let mut cpu_ns = 0u64;
    let mut wait_ns = Some(0u64);
    let seconds = outputs
        .iter()
        .map(|(r, _)| r.timeline.len())
        .max()
        .unwrap_or(0);
    let mut de = Deserializer::new();
    for (r, time) in &outputs {
        let _ = latency.add(&r.latency);
        let _ = service.add(&r.service);
        let _ = connect.add(&r.connect);
        let _ = tls.add(&r.tls);
        for (e, acc) in endpoints.iter_mut().zip(&r.endpoints) {
            let _ = e.latency.add(&acc.latency);
            e.requests += acc.requests;
            e.ok += acc.ok;
            e.bytes += acc.bytes;
            e.checks.add(&acc.checks);
        }
        requests += r.requests;
        ok += r.ok;
        dropped += r.dropped;
        incomplete += r.incomplete;
        bytes += r.bytes;
        hits += r.cache_hits;
        misses += r.cache_misses;
        kind = r.cache_kind.or(kind);
        opened += r.connections_opened;
        syn_retrans += r.syn_retrans;
        syn_retried += r.syn_retried_conns;
        early_retrans += r.early_retrans;
        wake_window = wake_window.max(r.wake_window);
        watched += r.data_retrans.0;
        data_retrans += r.data_retrans.1;
        for (i, n) in r.errors.iter().enumerate() {
            errors[i] += n;
        }
        for (status, n) in r.statuses.iter().enumerate() {
            if *n > 0 {
                *statuses.entry(status as u16).or_insert(0) += n;
            }
        }
        cpu_ns += time.cpu_ns;
        wait_ns = wait_ns.zip(time.wait_ns).map(|(a, b)| a + b);
    }
    // One second at a time, so memory does not grow with the length of the run.
    let timeline: Vec<SecondResult> = (0..seconds)
        .map(|t| {
            let parts: Vec<&SecondAcc> = outputs
                .iter()
                .filter_map(|(r, _)| r.timeline.get(t))
                .collect();
            merge_second(t, &parts, endpoints.len(), samples.get(t), &mut de).0
        })
        .collect();
    let mut result = LoadResult {
        target: plan.target.url.clone(),
        engine: super::uring::EPOLL,
        engines: super::uring::Engines::default(),
        model: plan.model_name(),
        http_version: None,
        target_rps: match plan.model {
            super::plan::Model::Open { rate } if plan.stages.is_empty() => {
                Some(rate / f64::from(plan.shard.count))
            }
            super::plan::Model::Open { .. } => plan
                .run_length()
                .map(|d| (requests + dropped + incomplete) as f64 / d.as_secs_f64().max(1e-9)),
            super::plan::Model::Closed => None,
        },
        started,
        elapsed,
        run_length: plan.run_length(),
        connections: plan.connections,
        threads: plan.threads,
        requests,
        ok,
        dropped,
        incomplete,
        bytes,
        cache_hits: hits,
        cache_misses: misses,
        cache_kind: kind,
        connections_opened: opened,
        syn_retrans,
        syn_retried_conns: syn_retried,
        early_retrans,
        data_retrans: (watched > 0).then_some(data_retrans),
        wake_window: (!wake_window.is_zero()).then_some(wake_window),
        errors: ErrorKind::ALL
            .iter()
            .filter(|k| errors[**k as usize] > 0)
            .map(|k| (k.name().to_string(), errors[*k as usize]))
            .collect(),
        statuses,
        latency,
        service: open.then_some(service),
        connect,
        tls,
        endpoints,
        timeline,
        thresholds: Vec::new(),
        client_cpu_pct: cpu_ns as f64 / 1e7 / elapsed_s.max(1e-9),
        client_wait_pct: wait_ns.map(|w| w as f64 / 1e7 / elapsed_s.max(1e-9)),
        aborted,
        raw_error: outputs.iter().find_map(|(r, _)| r.raw_error.clone()),
        watch: None,
    };
    result.thresholds = plan
        .thresholds
        .iter()
        .flat_map(|t| result.judge(t))
        .collect();
    result
}

impl LoadResult {
    /// Responses with no cache signal at all (ok responses neither hit nor miss).
    pub fn cache_unknown(&self) -> u64 {
        self.ok.saturating_sub(self.cache_hits + self.cache_misses)
    }

    /// Hits over all ok responses, when a cache answered at all (`None`: no response
    /// said anything about a cache).
    pub fn hit_ratio(&self) -> Option<f64> {
        let answered = self.cache_hits + self.cache_misses;
        let all = answered + self.cache_unknown();
        (answered > 0 && all > 0).then(|| self.cache_hits as f64 / all as f64)
    }

    fn numbers(&self) -> Numbers<'_> {
        let c = self.checks();
        Numbers {
            latency: &self.latency,
            requests: self.requests,
            ok: self.ok,
            elapsed_s: self.elapsed.as_secs_f64(),
            checks: (c.total, c.passed),
        }
    }

    /// Every endpoint's checks added up (all zero: no check ran).
    pub fn checks(&self) -> super::recorder::Checks {
        let mut all = super::recorder::Checks::default();
        for e in &self.endpoints {
            all.total += e.checks.total;
            all.passed += e.checks.passed;
        }
        all
    }

    pub(crate) fn judge(&self, t: &super::threshold::Threshold) -> Vec<Verdict> {
        let all = self.numbers();
        let eps: Vec<Numbers<'_>> = self
            .endpoints
            .iter()
            .map(|e| Numbers {
                latency: &e.latency,
                requests: e.requests,
                ok: e.ok,
                elapsed_s: e.elapsed_s,
                checks: (e.checks.total, e.checks.passed),
            })
            .collect();
        let named: Vec<(String, &dyn MetricSource)> = self
            .endpoints
            .iter()
            .zip(&eps)
            .map(|(e, n)| (e.name.clone(), n as &dyn MetricSource))
            .collect();
        t.judge(&all, &named)
    }

    /// Completed requests per second.
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Whether every threshold held.
    pub fn thresholds_ok(&self) -> bool {
        self.thresholds.iter().all(|v| v.ok)
    }

    /// Errors of all kinds.
    pub fn error_count(&self) -> u64 {
        self.requests - self.ok
    }

    /// The histograms to keep with the run (names as `StoredHistogram` documents).
    pub fn histograms(&self) -> Vec<StoredHistogram> {
        // The run's totals grow to what they hold (`merge`); stored, they have the
        // full 1 µs .. 1 h range, as they always had, so whatever decodes them can
        // add any other run's into them.
        let one = |name: String, h: &Histogram<u64>| StoredHistogram {
            name,
            second: None,
            v2: if h.high() >= HIGHEST_NS {
                v2(h)
            } else {
                let mut full = new_histogram();
                let _ = full.add(h);
                v2(&full)
            },
        };
        let mut out = vec![one("latency".into(), &self.latency)];
        for e in &self.endpoints {
            out.push(StoredHistogram {
                name: format!("latency:{}", e.name),
                second: None,
                v2: v2(&e.latency),
            });
        }
        if let Some(s) = &self.service {
            out.push(one("service_time".into(), s));
        }
        out.push(one("connect".into(), &self.connect));
        if !self.tls.is_empty() {
            out.push(one("tls".into(), &self.tls));
        }
        for s in &self.timeline {
            if !s.v2.is_empty() {
                out.push(StoredHistogram {
                    name: "latency".into(),
                    second: Some(s.t),
                    v2: s.v2.clone(),
                });
            }
            for (e, b) in self.endpoints.iter().zip(&s.ep_v2) {
                if !b.is_empty() {
                    out.push(StoredHistogram {
                        name: format!("latency:{}", e.name),
                        second: Some(s.t),
                        v2: b.clone(),
                    });
                }
            }
        }
        out
    }

    /// A latency quantile (0..1) of the whole run, ms (0 when nothing completed).
    pub fn latency_quantile_ms(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1e6
    }

    /// A service-time quantile (open model), ms.
    pub fn service_quantile_ms(&self, q: f64) -> Option<f64> {
        self.service
            .as_ref()
            .map(|s| s.value_at_quantile(q) as f64 / 1e6)
    }
}
