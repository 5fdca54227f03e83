//! The Prometheus text exposition (format 0.0.4) of `latscope serve`:
//! [`blackbox`] for `/probe` — blackbox_exporter's http prober's metric names, labels
//! and meanings for what both measure, so its scrape configs and dashboards work —
//! and [`metrics`] for `/metrics`: the scheduled targets' phases per series, the
//! handshake's round trips, the server's time, the cache, the active findings, the
//! confirmed changes, and the process' own metrics.

use std::fmt::Write;
use std::time::UNIX_EPOCH;

use crate::output::openmetrics::{escape, number};
use crate::probe::{ProbeResult, Series};

use super::check::Outcome;
use super::state::State;

/// Families written one sample at a time, in any order, and rendered each as one
/// group — its HELP and TYPE, then every sample of it — in the order the families first
/// appeared: the text format wants a family's lines together, and `/metrics` writes
/// target by target.
#[derive(Default)]
struct Exposition {
    families: Vec<Family>,
    /// Lines before the families (comments).
    head: String,
}

struct Family {
    name: String,
    kind: &'static str,
    help: String,
    samples: String,
}

impl Exposition {
    fn sample(
        &mut self,
        name: &str,
        kind: &'static str,
        help: &str,
        labels: &[(&str, &str)],
        v: f64,
    ) {
        let i = match self.families.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    kind,
                    help: help.to_string(),
                    samples: String::new(),
                });
                self.families.len() - 1
            }
        };
        let out = &mut self.families[i].samples;
        let labels: Vec<String> = labels
            .iter()
            .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
            .collect();
        // Seconds to the nanosecond: what was measured, without binary noise digits.
        let v = if v.fract() != 0.0 && v.abs() < 1e6 {
            (v * 1e9).round() / 1e9
        } else {
            v
        };
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {}", number(v));
        } else {
            let _ = writeln!(out, "{name}{{{}}} {}", labels.join(","), number(v));
        }
    }

    fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        self.sample(name, "gauge", help, labels, v);
    }

    /// The exposition text.
    fn text(self) -> String {
        let mut out = self.head;
        for f in self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
            out.push_str(&f.samples);
        }
        out
    }
}

/// `HTTP/1.1` → 1.1, `HTTP/2` → 2, as blackbox_exporter's `probe_http_version`.
fn version_number(v: &str) -> Option<f64> {
    match v {
        "HTTP/1.0" => Some(1.0),
        "HTTP/1.1" => Some(1.1),
        "HTTP/2" | "HTTP/2.0" => Some(2.0),
        "HTTP/3" | "HTTP/3.0" => Some(3.0),
        _ => None,
    }
}

/// `TLSv1.3` → `TLS 1.3`, as Go's `tls.VersionName` (blackbox's label).
fn tls_version_name(v: &str) -> String {
    v.strip_prefix("TLSv")
        .map_or(v.to_string(), |n| format!("TLS {n}"))
}

/// The first request on a new connection that answered: what blackbox's single
/// request is.
fn first_fresh(r: &ProbeResult) -> Option<&crate::probe::Sample> {
    r.samples
        .iter()
        .find(|s| s.series == Series::Fresh && s.error.is_none())
}

/// `/probe`'s answer for one outcome, in blackbox_exporter's names: the phases of
/// the first request on a new connection (`resolve`, `connect`, `tls`, `processing`
/// = sending the request and waiting for the first byte, `transfer` = the body),
/// status, version, TLS, success; and latscope's findings on the probe beside them.
pub fn blackbox(o: &Outcome, https: bool) -> String {
    let mut x = Exposition::default();
    if let Err(e) = &o.result {
        // Why, where blackbox_exporter says it with `debug=true`: a comment line.
        let e = crate::redact::redact_urls(&crate::visible::visible(e)).replace('\n', " ");
        let _ = writeln!(x.head, "# latscope: the probe failed: {e}");
    }
    let success = o.success();
    let r = o.result.as_ref().ok().map(|c| &c.probe);
    let fresh = r.and_then(first_fresh);
    let ph = fresh.map(|s| s.phases_ms).unwrap_or_default();
    x.gauge(
        "probe_dns_lookup_time_seconds",
        "Returns the time taken for probe dns lookup in seconds",
        &[],
        ph.dns / 1e3,
    );
    x.gauge(
        "probe_duration_seconds",
        "Returns how long the probe took to complete in seconds",
        &[],
        o.duration.as_secs_f64(),
    );
    x.gauge(
        "probe_failed_due_to_regex",
        "Indicates if probe failed due to regex",
        &[],
        0.0,
    );
    let content_length = r
        .and_then(|r| r.headers.get("content-length"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(-1.0);
    x.gauge(
        "probe_http_content_length",
        "Length of http content response",
        &[],
        if fresh.is_some() { content_length } else { 0.0 },
    );
    for (phase, v) in [
        ("resolve", ph.dns),
        ("connect", ph.connect),
        ("tls", ph.tls),
        ("processing", ph.send + ph.wait),
        ("transfer", ph.receive),
    ] {
        x.gauge(
            "probe_http_duration_seconds",
            "Duration of http request by phase, summed over all redirects",
            &[("phase", phase)],
            v / 1e3,
        );
    }
    x.gauge(
        "probe_http_redirects",
        "The number of redirects",
        &[],
        r.map_or(0.0, |r| r.redirects.len() as f64),
    );
    x.gauge(
        "probe_http_ssl",
        "Indicates if SSL was used for the final redirect",
        &[],
        if https && r.is_some() { 1.0 } else { 0.0 },
    );
    x.gauge(
        "probe_http_status_code",
        "Response HTTP status code",
        &[],
        r.and_then(|r| r.status).map_or(0.0, f64::from),
    );
    x.gauge(
        "probe_http_uncompressed_body_length",
        "Length of uncompressed response body",
        &[],
        fresh.map_or(0.0, |s| s.body_bytes as f64),
    );
    x.gauge(
        "probe_http_version",
        "Returns the version of HTTP of the probe response",
        &[],
        r.and_then(|r| r.http_version.as_deref())
            .and_then(version_number)
            .unwrap_or(0.0),
    );
    if let Some(ip) = r.and_then(|r| r.addresses.first()) {
        x.gauge(
            "probe_ip_protocol",
            "Specifies whether probe ip protocol is IP4 or IP6",
            &[],
            if ip.contains(':') { 6.0 } else { 4.0 },
        );
    }
    if let Some(tls) = r.and_then(|r| r.tls.as_ref()) {
        if let Some(t) = tls.cert_not_after_s {
            x.gauge(
                "probe_ssl_earliest_cert_expiry",
                "Returns last SSL chain expiry in unixtime",
                &[],
                t as f64,
            );
        }
        x.gauge(
            "probe_tls_version_info",
            "Returns the TLS version used or NaN when unknown",
            &[("version", &tls_version_name(&tls.version))],
            1.0,
        );
    }
    x.gauge(
        "probe_success",
        "Displays whether or not the probe was a success",
        &[],
        if success { 1.0 } else { 0.0 },
    );
    if let Ok(c) = &o.result {
        for f in &c.findings {
            x.gauge(
                "latscope_finding",
                "A finding of latscope's on this probe (1 while it holds)",
                &[("id", &f.id), ("severity", &f.severity.to_string())],
                1.0,
            );
        }
    }
    x.text()
}

/// `/metrics`: every scheduled target's latest outcome, findings and changes, and
/// the process' own metrics.
pub fn metrics(state: &State) -> String {
    let mut x = Exposition::default();
    x.gauge(
        "latscope_serve_targets",
        "Targets latscope serve checks on a schedule",
        &[],
        state.targets.len() as f64,
    );
    for (name, t) in &state.targets {
        let mut base: Vec<(&str, &str)> = vec![("target", name.as_str())];
        base.extend(
            t.target
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let with = |extra: &[(&'static str, &str)]| -> Vec<(&str, String)> {
            base.iter()
                .map(|(k, v)| (*k, v.to_string()))
                .chain(extra.iter().map(|(k, v)| (*k, v.to_string())))
                .collect()
        };
        let put = |x: &mut Exposition,
                   name: &str,
                   kind: &'static str,
                   help: &str,
                   extra: &[(&'static str, &str)],
                   v: f64| {
            let l = with(extra);
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            x.sample(name, kind, help, &l, v);
        };
        put(
            &mut x,
            "latscope_checks_total",
            "counter",
            "Checks of the target",
            &[],
            t.checks as f64,
        );
        put(
            &mut x,
            "latscope_check_failures_total",
            "counter",
            "Checks that failed (no answer, or a status other than 2xx/3xx)",
            &[],
            t.failures as f64,
        );
        put(
            &mut x,
            "latscope_failing",
            "gauge",
            "1 while the target fails (confirmed by two checks in a row)",
            &[],
            if t.failing { 1.0 } else { 0.0 },
        );
        for ((what, id), n) in &t.changes {
            put(
                &mut x,
                "latscope_change_total",
                "counter",
                "Confirmed changes: a finding appeared or went away, the target started failing or recovered",
                &[("what", what), ("id", id)],
                *n as f64,
            );
        }
        for (id, (sev, _)) in &t.active {
            put(
                &mut x,
                "latscope_finding",
                "gauge",
                "An active finding of the target (1 while it holds)",
                &[("id", id), ("severity", &sev.to_string())],
                1.0,
            );
        }
        let Some(o) = &t.last else { continue };
        put(
            &mut x,
            "latscope_probe_success",
            "gauge",
            "Whether the last check succeeded (2xx/3xx)",
            &[],
            if o.success() { 1.0 } else { 0.0 },
        );
        put(
            &mut x,
            "latscope_check_duration_seconds",
            "gauge",
            "How long the last check took",
            &[],
            o.duration.as_secs_f64(),
        );
        put(
            &mut x,
            "latscope_last_check_timestamp_seconds",
            "gauge",
            "When the last check started, seconds since the epoch",
            &[],
            o.at.duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        );
        let Ok(c) = &o.result else { continue };
        let r = &c.probe;
        if let Some(s) = r.status {
            put(
                &mut x,
                "latscope_http_status_code",
                "gauge",
                "The last answer's status",
                &[],
                f64::from(s),
            );
        }
        let series = [
            ("fresh", Some(&r.fresh)),
            ("reused", r.reused.as_ref()),
            ("resumed", r.resumed.as_ref()),
        ];
        for (label, s) in series {
            let Some(s) = s.filter(|s| s.count > 0) else {
                continue;
            };
            for phase in crate::probe::PHASES {
                let p = s.phases_ms.get(phase);
                put(
                    &mut x,
                    "latscope_phase_seconds",
                    "gauge",
                    "Median time of a request phase in the last check, by series: fresh (new connection), reused (kept alive), resumed (new connection, TLS resumed)",
                    &[("series", label), ("phase", phase)],
                    p.p50 / 1e3,
                );
            }
        }
        if let Some(n) = r.handshake_round_trips {
            put(
                &mut x,
                "latscope_handshake_round_trips",
                "gauge",
                "Round trips a new connection pays before its request can go",
                &[],
                n,
            );
        }
        if let Some(p) = &r.server_time_ms {
            put(
                &mut x,
                "latscope_server_time_seconds",
                "gauge",
                "The server's own time per request (median)",
                &[],
                p.p50 / 1e3,
            );
        }
        if let Some(f) = r.first_request {
            put(
                &mut x,
                "latscope_first_request_seconds",
                "gauge",
                "The check's first request, whole (a cold start shows here, not in the medians)",
                &[],
                f.total_ms / 1e3,
            );
        }
        if let Some(f) = r.first_request.filter(|f| f.cache.is_some()) {
            let state = f.cache.map_or("unknown", |c| c.as_str());
            let cache = f.cache_kind.map_or("", |k| k.as_str());
            let labels: &[(&str, &str)] = if cache.is_empty() {
                &[("status", state)]
            } else {
                &[("status", state), ("cache", cache)]
            };
            put(
                &mut x,
                "latscope_cache_status",
                "gauge",
                "What the cache in front said about the check's first request (1 for the state it said), and which cache it was when its headers name it",
                labels,
                1.0,
            );
        }
        if let Some(t) = r.tls.as_ref().and_then(|t| t.cert_not_after_s) {
            put(
                &mut x,
                "latscope_cert_expiry_timestamp_seconds",
                "gauge",
                "When the earliest certificate the server sent expires",
                &[],
                t as f64,
            );
        }
    }
    process(&mut x);
    x.text()
}

/// The process' own metrics, in Prometheus' client names, from /proc/self.
fn process(x: &mut Exposition) {
    let ticks = 100.0; // USER_HZ on Linux
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command name (which may hold spaces) in parentheses.
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
            if let (Some(u), Some(s)) = (num(11), num(12)) {
                x.sample(
                    "process_cpu_seconds_total",
                    "counter",
                    "Total user and system CPU time spent in seconds.",
                    &[],
                    (u + s) / ticks,
                );
            }
            if let Some(rss) = num(21) {
                let page = 4096.0;
                x.gauge(
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes.",
                    &[],
                    rss * page,
                );
            }
        }
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(kb) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        {
            x.gauge(
                "latscope_process_peak_resident_memory_bytes",
                "Peak resident memory (VmHWM) in bytes.",
                &[],
                kb * 1024.0,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_blackbox_has_them() {
        assert_eq!(version_number("HTTP/1.1"), Some(1.1));
        assert_eq!(version_number("HTTP/2"), Some(2.0));
        assert_eq!(tls_version_name("TLSv1.3"), "TLS 1.3");
    }

    /// A failed check is `probe_success 0` with the phases at 0, and no finding.
    #[test]
    fn a_failed_probe_says_so() {
        let o = Outcome {
            at: std::time::SystemTime::now(),
            duration: std::time::Duration::from_millis(3),
            result: Err("connection refused".into()),
        };
        let text = blackbox(&o, false);
        assert!(text.contains("\nprobe_success 0\n"), "{text}");
        assert!(
            text.contains("probe_http_duration_seconds{phase=\"connect\"} 0\n"),
            "{text}"
        );
        assert!(!text.contains("latscope_finding"), "{text}");
        // Each family declared once, before its samples.
        assert_eq!(
            text.matches("# TYPE probe_http_duration_seconds gauge")
                .count(),
            1
        );
    }

    /// Two targets: each family's lines — HELP, TYPE, then the samples of both — are
    /// one group, as the text format wants (Prometheus' exposition formats: "all lines
    /// for a given metric must be provided as one single group"), not target by target.
    #[test]
    fn a_family_is_one_group_across_targets() {
        let c = crate::config::serve::ServeConfig::parse(
            "[[target]]\nurl = \"http://127.0.0.1:9/a\"\nname = \"a\"\n\
             [[target]]\nurl = \"http://127.0.0.1:9/b\"\nname = \"b\"\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let mut state = State::default();
        state.set_targets(&c.targets);
        for name in ["a", "b"] {
            let outcome = Outcome {
                at: std::time::SystemTime::now(),
                duration: std::time::Duration::from_millis(3),
                result: Err("connection refused".into()),
            };
            state.record(name, outcome);
        }
        let text = metrics(&state);
        let family = |line: &str| -> String {
            let l = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "))
                .unwrap_or(line);
            l.split(['{', ' ']).next().unwrap().to_string()
        };
        let mut seen: Vec<String> = Vec::new();
        for line in text.lines() {
            let f = family(line);
            if seen.last() != Some(&f) {
                assert!(
                    !seen.contains(&f),
                    "{f} comes back after another family:\n{text}"
                );
                seen.push(f);
            }
        }
        assert_eq!(
            text.matches("latscope_checks_total{target=").count(),
            2,
            "{text}"
        );
    }
}
