//! The series latscope writes to Prometheus (remote write while a run goes, and
//! OpenMetrics text after the fact): their names — a contract, listed in
//! [`METRIC_NAMES`] and docs/prometheus.md — and how one second of a load run's timeline
//! becomes samples. Counters are cumulative from the run's start and are kept on the
//! caller's side ([`Counters`]), so a write that is dropped loses no increments; the
//! latency gauges are the HDR percentiles of that second alone.

use hdrhistogram::Histogram;

use crate::load::recorder::ErrorKind;
use crate::load::result::SecondResult;

/// Requests completed (ok and errors), counter.
pub const REQUESTS: &str = "latscope_requests_total";
/// Requests that failed, by `kind`, counter.
pub const ERRORS: &str = "latscope_errors_total";
/// Open model: arrivals dropped because no connection was free, counter.
pub const DROPPED: &str = "latscope_dropped_total";
/// A scenario's checks judged, by `result` (`passed`, `failed`), counter (only for
/// runs whose scenario has checks, from their first judged check). Not
/// `latscope_checks_total`: that is `serve`'s count of its checks of a target.
pub const CHECKS: &str = "latscope_scenario_checks_total";
/// Connections (VUs) in flight, gauge.
pub const ACTIVE: &str = "latscope_active";
/// That second's latency percentiles by `quantile`, gauge (seconds).
pub const LATENCY: &str = "latscope_latency_seconds";
/// Open model: that second's service-time percentiles by `quantile`, gauge (seconds).
pub const SERVICE_TIME: &str = "latscope_service_time_seconds";

/// `--watch`: the watched server's CPU busy (every mode but idle, iowait and steal),
/// share of all CPUs 0..1, gauge.
pub const SERVER_CPU: &str = "latscope_server_cpu_busy_ratio";
/// `--watch`: the watched server's CPU in iowait, share of all CPUs 0..1, gauge.
pub const SERVER_IOWAIT: &str = "latscope_server_cpu_iowait_ratio";
/// `--watch`: the watched server's 1-minute load average, gauge.
pub const SERVER_LOAD1: &str = "latscope_server_load1";
/// `--watch`: TCP segments the watched server retransmitted that second, per second.
pub const SERVER_RETRANS: &str = "latscope_server_tcp_retransmits_per_second";
/// `--watch`: connections the watched server's accept queues dropped, per second.
pub const SERVER_OVERFLOWS: &str = "latscope_server_listen_overflows_per_second";

/// Every metric name latscope writes (the dashboard test checks its queries use only
/// these).
pub const METRIC_NAMES: &[&str] = &[
    REQUESTS,
    ERRORS,
    DROPPED,
    CHECKS,
    ACTIVE,
    LATENCY,
    SERVICE_TIME,
    SERVER_CPU,
    SERVER_IOWAIT,
    SERVER_LOAD1,
    SERVER_RETRANS,
    SERVER_OVERFLOWS,
];

/// The labels latscope sets itself; `--out-label` may not reuse them.
pub const OWN_LABELS: &[&str] = &[
    "run", "label", "endpoint", "target", "kind", "quantile", "result",
];

/// The `quantile` label values of the latency gauges, in order.
pub const QUANTILES: [&str; 4] = ["0.5", "0.9", "0.99", "1"];

/// One sample of one series: its labels (without `__name__`), value and time.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: &'static str,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// Unix milliseconds.
    pub ts_ms: i64,
}

/// p50, p90, p99 and max of one second, in seconds.
pub type Quantiles = [f64; 4];

/// The quantiles of a histogram in nanoseconds (None when it is empty), computed as
/// the run's timeline computes its p50/p90/p99/max.
pub fn quantiles(h: &Histogram<u64>) -> Option<Quantiles> {
    if h.is_empty() {
        return None;
    }
    let q = |q: f64| h.value_at_quantile(q) as f64 / 1e9;
    Some([q(0.5), q(0.9), q(0.99), h.max() as f64 / 1e9])
}

/// One second, ready to be written: counters already cumulative.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// End of the second, Unix milliseconds.
    pub ts_ms: i64,
    pub requests_total: u64,
    /// Every error kind, in JSON order, so each series exists from the first second.
    pub errors_total: Vec<(&'static str, u64)>,
    pub dropped_total: u64,
    /// Checks judged and failed so far (a scenario's `check`).
    pub checks_total: u64,
    pub checks_failed_total: u64,
    pub active: u64,
    /// None when nothing completed that second.
    pub latency: Option<Quantiles>,
    /// Open model only.
    pub service: Option<Quantiles>,
    /// Per endpoint (plan order) that second's latency histogram, V2 deflate (empty
    /// for none); only for runs with 2 to 100 endpoints. Decoded by [`Series`], off
    /// the run's thread.
    pub endpoints: Vec<Vec<u8>>,
    /// `--watch`: the watched server's numbers of that second (what it exposed).
    pub server: Vec<(&'static str, f64)>,
}

/// The running totals of a run's counters.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    requests: u64,
    errors: [u64; crate::load::recorder::KINDS],
    dropped: u64,
    checks: u64,
    checks_failed: u64,
}

impl Counters {
    /// Adds second `s` (of a run that started at `started_ms`) and returns it as a
    /// snapshot. `service` is that second's service-time histogram (open model).
    pub fn add(
        &mut self,
        s: &SecondResult,
        started_ms: i64,
        service: Option<&Histogram<u64>>,
    ) -> Snapshot {
        self.requests += s.requests;
        self.dropped += s.dropped;
        self.checks += s.checks;
        self.checks_failed += s.checks_failed;
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            self.errors[i] += s.errors_by_kind.get(k.name()).copied().unwrap_or(0);
        }
        let ms = |v: f64| v / 1e3;
        Snapshot {
            ts_ms: started_ms + (i64::from(s.t) + 1) * 1000,
            requests_total: self.requests,
            errors_total: ErrorKind::ALL
                .iter()
                .zip(self.errors)
                .map(|(k, n)| (k.name(), n))
                .collect(),
            dropped_total: self.dropped,
            checks_total: self.checks,
            checks_failed_total: self.checks_failed,
            active: s.active,
            latency: (!s.v2.is_empty())
                .then(|| [ms(s.p50_ms), ms(s.p90_ms), ms(s.p99_ms), ms(s.max_ms)]),
            service: service.and_then(quantiles),
            endpoints: s.ep_v2.clone(),
            server: s.server.as_ref().map(server_gauges).unwrap_or_default(),
        }
    }
}

/// The `--watch` gauges of one second.
fn server_gauges(v: &crate::watch::ServerSecond) -> Vec<(&'static str, f64)> {
    [
        (SERVER_CPU, v.cpu_pct.map(|p| p / 100.0)),
        (SERVER_IOWAIT, v.iowait_pct.map(|p| p / 100.0)),
        (SERVER_LOAD1, v.load1),
        (SERVER_RETRANS, v.retrans),
        (SERVER_OVERFLOWS, v.listen_overflows),
    ]
    .into_iter()
    .filter_map(|(n, v)| Some((n, v?)))
    .collect()
}

/// The label sets of one run's series: `run`, `label`, `target` and the
/// `--out-label` ones, plus `endpoint` names for per-endpoint latency.
#[derive(Debug, Clone)]
pub struct Series {
    base: Vec<(String, String)>,
    endpoints: Vec<String>,
}

impl Series {
    /// `target` is host:port (never a path or query); `extra` the `--out-label`
    /// pairs (already checked); `endpoints` the plan's endpoint names.
    pub fn new(
        run: &str,
        label: Option<&str>,
        target: &str,
        extra: &[(String, String)],
        endpoints: Vec<String>,
    ) -> Series {
        // Label values as any output shows text it did not write (`crate::visible`).
        let shown = |v: &str| crate::visible::one_line(v).into_owned();
        let mut base = vec![
            ("run".to_string(), shown(run)),
            ("target".to_string(), shown(target)),
        ];
        if let Some(l) = label.filter(|l| !l.is_empty()) {
            base.push(("label".into(), shown(l)));
        }
        base.extend(extra.iter().cloned());
        Series {
            base,
            endpoints: endpoints
                .iter()
                .map(|e| crate::redact::redact_urls(e))
                .collect(),
        }
    }

    fn labels(&self, more: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut l = self.base.clone();
        l.extend(more.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        l.sort();
        l
    }

    /// The samples of one second, in a fixed order (metric, then label set).
    pub fn samples(&self, s: &Snapshot) -> Vec<Sample> {
        let mut out = Vec::new();
        let mut push = |name: &'static str, more: &[(&str, &str)], value: f64| {
            out.push(Sample {
                name,
                labels: self.labels(more),
                value,
                ts_ms: s.ts_ms,
            })
        };
        let all = ("endpoint", "all");
        push(REQUESTS, &[all], s.requests_total as f64);
        for (kind, n) in &s.errors_total {
            push(ERRORS, &[all, ("kind", kind)], *n as f64);
        }
        push(DROPPED, &[all], s.dropped_total as f64);
        if s.checks_total > 0 {
            let passed = s.checks_total.saturating_sub(s.checks_failed_total);
            push(CHECKS, &[all, ("result", "passed")], passed as f64);
            push(
                CHECKS,
                &[all, ("result", "failed")],
                s.checks_failed_total as f64,
            );
        }
        push(ACTIVE, &[all], s.active as f64);
        let mut gauges = |name, ep: &str, q: &Quantiles| {
            for (label, v) in QUANTILES.iter().zip(q) {
                push(name, &[("endpoint", ep), ("quantile", label)], *v);
            }
        };
        if let Some(q) = &s.latency {
            gauges(LATENCY, "all", q);
        }
        for (name, v2) in self.endpoints.iter().zip(&s.endpoints) {
            if v2.is_empty() {
                continue;
            }
            if let Some(q) = crate::stats::v2::decode(v2)
                .ok()
                .as_ref()
                .and_then(quantiles)
            {
                gauges(LATENCY, name, &q);
            }
        }
        if let Some(q) = &s.service {
            gauges(SERVICE_TIME, "all", q);
        }
        for (name, v) in &s.server {
            push(name, &[], *v);
        }
        out
    }
}

/// `--out-label` pairs as Prometheus accepts label names: `[a-zA-Z_][a-zA-Z0-9_]*`,
/// not starting with `__` (reserved), not one latscope sets itself.
pub fn check_label(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "'{}' is not a Prometheus label name (letters, digits and '_', not starting with a digit)",
            name.escape_default()
        ));
    }
    if name.starts_with("__") {
        return Err(format!(
            "'{name}': names starting with '__' are reserved by Prometheus"
        ));
    }
    if OWN_LABELS.contains(&name) || name == "__name__" {
        return Err(format!(
            "'{name}' is a label latscope sets itself ({})",
            OWN_LABELS.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram::new_histogram;

    fn v2_of(values_ns: &[u64]) -> (Histogram<u64>, Vec<u8>) {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut h = new_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
        (h, buf)
    }

    fn second(t: u32, requests: u64, errors: &[(&str, u64)], p99_ms: f64) -> SecondResult {
        SecondResult {
            t,
            requests,
            errors: errors.iter().map(|e| e.1).sum(),
            errors_by_kind: errors.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            dropped: 1,
            active: 8,
            p50_ms: 1.0,
            p90_ms: 2.0,
            p99_ms,
            max_ms: 9.0,
            v2: if requests > 0 { vec![1] } else { Vec::new() },
            ..Default::default()
        }
    }

    fn find<'a>(samples: &'a [Sample], name: &str, with: &[(&str, &str)]) -> Vec<&'a Sample> {
        samples
            .iter()
            .filter(|s| {
                s.name == name
                    && with
                        .iter()
                        .all(|(n, v)| s.labels.iter().any(|(a, b)| a == n && b == v))
            })
            .collect()
    }

    /// A scenario's checks are one counter by `result`, cumulative over the seconds,
    /// from the first judged check; a run without checks has no such series.
    #[test]
    fn checks_are_a_counter_by_result() {
        let mut c = Counters::default();
        let series = Series::new("r", None, "h:1", &[], vec![]);
        let plain = c.add(&second(0, 10, &[], 1.0), 0, None);
        assert!(find(&series.samples(&plain), CHECKS, &[]).is_empty());
        let mut s = second(1, 10, &[], 1.0);
        (s.checks, s.checks_failed) = (30, 2);
        let first = series.samples(&c.add(&s, 0, None));
        (s.checks, s.checks_failed) = (30, 1);
        let second = series.samples(&c.add(&s, 0, None));
        let value = |samples: &[Sample], result| {
            find(samples, CHECKS, &[("endpoint", "all"), ("result", result)])[0].value
        };
        assert_eq!(
            (value(&first, "passed"), value(&first, "failed")),
            (28.0, 2.0)
        );
        assert_eq!(
            (value(&second, "passed"), value(&second, "failed")),
            (57.0, 3.0)
        );
        assert!(check_label("result").is_err(), "latscope's own label");
    }

    /// Counters add up over seconds (every error kind present from the first second,
    /// at 0 until it happens); gauges are the second's own; timestamps are the end of
    /// each second; labels are sorted and carry run, label, target, endpoint.
    #[test]
    fn seconds_become_cumulative_counters_and_per_second_gauges() {
        let mut c = Counters::default();
        let series = Series::new(
            "r1",
            Some("base"),
            "127.0.0.1:8080",
            &[("env".into(), "ci".into())],
            vec!["/".into()],
        );
        let a = c.add(&second(0, 100, &[], 3.0), 1_000_000, None);
        let b = c.add(
            &second(1, 50, &[("timeout", 2), ("http_5xx", 3)], 40.0),
            1_000_000,
            None,
        );
        assert_eq!(a.ts_ms, 1_001_000);
        assert_eq!(b.ts_ms, 1_002_000);
        let sa = series.samples(&a);
        let sb = series.samples(&b);
        let req = find(&sb, REQUESTS, &[("endpoint", "all")]);
        assert_eq!(req.len(), 1);
        assert_eq!(req[0].value, 150.0);
        assert_eq!(
            req[0].labels,
            [
                ("endpoint", "all"),
                ("env", "ci"),
                ("label", "base"),
                ("run", "r1"),
                ("target", "127.0.0.1:8080")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(
            find(&sa, ERRORS, &[]).len(),
            7,
            "every kind from the first second"
        );
        assert_eq!(find(&sa, ERRORS, &[("kind", "timeout")])[0].value, 0.0);
        assert_eq!(find(&sb, ERRORS, &[("kind", "timeout")])[0].value, 2.0);
        assert_eq!(find(&sb, ERRORS, &[("kind", "http_5xx")])[0].value, 3.0);
        assert_eq!(find(&sb, DROPPED, &[])[0].value, 2.0);
        assert_eq!(find(&sb, ACTIVE, &[])[0].value, 8.0);
        assert_eq!(find(&sb, LATENCY, &[("quantile", "0.99")])[0].value, 0.040);
        assert_eq!(find(&sa, LATENCY, &[("quantile", "0.99")])[0].value, 0.003);
        assert_eq!(find(&sb, LATENCY, &[("quantile", "1")])[0].value, 0.009);
        assert!(
            find(&sb, SERVICE_TIME, &[]).is_empty(),
            "closed model: no service time"
        );
        assert!(sb.iter().all(|s| s.ts_ms == 1_002_000));
    }

    /// A second in which nothing completed has counters but no latency gauges (a 0 s
    /// p99 would be a lie).
    #[test]
    fn an_empty_second_writes_no_latency() {
        let mut c = Counters::default();
        let series = Series::new("r", None, "h:1", &[], vec![]);
        let s = series.samples(&c.add(&second(0, 0, &[], 0.0), 0, None));
        assert!(find(&s, LATENCY, &[]).is_empty());
        assert_eq!(find(&s, REQUESTS, &[])[0].value, 0.0);
        assert!(
            s[0].labels.iter().all(|(n, _)| n != "label"),
            "no --label, no label"
        );
    }

    /// With several endpoints each gets its own latency gauges from its second's
    /// histogram; the open model's service time is written too.
    #[test]
    fn endpoints_and_service_time() {
        let (_, ep_a) = v2_of(&[1_000_000, 2_000_000, 3_000_000]);
        let (service, _) = v2_of(&[500_000; 10]);
        let mut s = second(0, 3, &[], 3.0);
        s.ep_v2 = vec![ep_a, Vec::new()];
        let mut c = Counters::default();
        let series = Series::new("r", None, "h:1", &[], vec!["home".into(), "api".into()]);
        let out = series.samples(&c.add(&s, 0, Some(&service)));
        let home = find(&out, LATENCY, &[("endpoint", "home"), ("quantile", "1")]);
        assert_eq!(home.len(), 1);
        assert!((home[0].value - 0.003).abs() < 0.00001, "{}", home[0].value);
        assert!(find(&out, LATENCY, &[("endpoint", "api")]).is_empty());
        let svc = find(&out, SERVICE_TIME, &[("quantile", "0.5")]);
        assert!((svc[0].value - 0.0005).abs() < 0.000001);
    }

    /// `--out-label` names are checked as Prometheus would.
    #[test]
    fn label_names_are_checked() {
        assert!(check_label("env").is_ok());
        assert!(check_label("_x9").is_ok());
        assert!(check_label("9x").is_err());
        assert!(check_label("a-b").is_err());
        assert!(check_label("__x").is_err());
        assert!(check_label("run").is_err());
        assert!(check_label("").is_err());
    }
}
