//! The terminal view of a load run: a header saying what ran, a summary a siege/ab/k6
//! user recognises (transactions, availability, elapsed, data, response time, rate,
//! throughput, concurrency, longest/shortest, successful/failed), latency percentiles
//! overall and per endpoint, errors, status codes, thresholds and findings; and the
//! one-line live progress for stderr. Formats only; never measures.

use std::fmt::Write as _;

use crate::diagnose::Finding;
use crate::load::{LoadPlan, LoadResult, Model, Progress};
use crate::report::table::Table;
use crate::stats::{Percentiles, Unit};
use crate::units::{fmt_bytes, fmt_ms};

/// The exit code a load run earns and the line that says why: 1 when every request
/// failed or none completed, 99 when a threshold failed, else 0 (and no line).
pub fn outcome(result: &LoadResult) -> (u8, Option<String>) {
    use crate::error::exit;
    if result.requests > 0 && result.ok == 0 && !result.aborted {
        let kinds: Vec<String> = result
            .errors
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let why = format!("error: every request failed ({})", kinds.join(", "));
        return (exit::RUN_FAILED, Some(why));
    }
    if result.requests == 0 && !result.aborted {
        return (exit::RUN_FAILED, Some("error: no request completed".into()));
    }
    if !result.thresholds_ok() {
        let failed: Vec<String> = result
            .thresholds
            .iter()
            .filter(|v| !v.ok)
            .map(|v| match &v.endpoint {
                Some(e) => format!("{} [{e}]", v.expr),
                None => v.expr.clone(),
            })
            .collect();
        let why = format!("threshold failed: {}", failed.join(", "));
        return (exit::THRESHOLD, Some(why));
    }
    (exit::OK, None)
}

/// One line saying what is about to run.
pub fn header(plan: &LoadPlan) -> String {
    let what = model_text(plan);
    let length = match (plan.count, plan.run_length()) {
        (Some(n), Some(d)) => format!("{n} requests or {}", humantime::format_duration(d)),
        (Some(n), None) => format!("{n} requests"),
        (None, Some(d)) => humantime::format_duration(d).to_string(),
        (None, None) => String::new(),
    };
    let eps = if plan.endpoints.len() > 1 {
        format!(", {} endpoints", plan.endpoints.len())
    } else {
        String::new()
    };
    format!(
        "latscope load {} — {}, {what}, {length}, {} thread{}{eps}{}\n",
        plan.target.url,
        protocol_text(plan),
        plan.threads,
        if plan.threads == 1 { "" } else { "s" },
        if plan.keepalive {
            ""
        } else {
            ", no keep-alive"
        }
    ) + &shard_line(plan)
        + &match plan.script.as_ref().map_or(0, |s| s.left_out) {
            0 => String::new(),
            n => format!(
                "  --har: {n} recorded request{} to other hosts left out (one run talks to one origin; --har-origin picks another)\n",
                if n == 1 { "" } else { "s" }
            ),
        }
}

/// What the run will speak, as the header names it: `HTTP/1.1`, `h2c ×5 streams`,
/// `h2 ×5 streams`, `h3`, or `h2 or HTTP/1.1 (ALPN)` on https when the server
/// chooses (the summary's `Protocol:` line and the JSON's `http_version` say what it
/// chose).
pub fn protocol_text(plan: &LoadPlan) -> String {
    use crate::net::{HttpVersionPref, Scheme};
    let streams = |p: &str| {
        if plan.streams > 1 {
            format!("{p} ×{} streams", plan.streams)
        } else {
            p.to_string()
        }
    };
    let https = plan.target.scheme == Scheme::Https;
    if plan.client.http3 {
        return streams("h3");
    }
    match plan.client.version {
        HttpVersionPref::Http1 => "HTTP/1.1".into(),
        HttpVersionPref::Http2 if https => streams("h2"),
        HttpVersionPref::Http2 => streams("h2c"),
        HttpVersionPref::Auto if !https || !plan.keepalive || plan.script.is_some() => {
            "HTTP/1.1".into()
        }
        HttpVersionPref::Auto => format!("{} or HTTP/1.1 (ALPN)", streams("h2")),
    }
}

/// For a shard: which part of the run this process does.
fn shard_line(plan: &LoadPlan) -> String {
    let s = plan.shard;
    if s.is_whole() {
        return String::new();
    }
    let rate = match plan.model {
        Model::Open { rate } if plan.stages.is_empty() => {
            format!(", {} req/s", rate / f64::from(s.count))
        }
        _ => String::new(),
    };
    format!(
        "  shard {s}: 1/{} of the run ({} connections{}{rate}), arrivals and VUs at their place in the whole run's schedule\n",
        s.count,
        plan.connections,
        plan.count.map(|n| format!(", {n} requests")).unwrap_or_default(),
    )
}

/// The header's model part: "closed model, 10 connections", "open model, 500
/// req/s, up to 64 connections", …
pub fn model_text(plan: &LoadPlan) -> String {
    match plan.model {
        Model::Closed if !plan.stages.is_empty() => "closed model, staged VUs".to_string(),
        Model::Closed => format!("closed model, {} connections", plan.connections),
        Model::Open { rate } if plan.stages.is_empty() => {
            format!(
                "open model, {rate} req/s, up to {} connections",
                plan.connections
            )
        }
        Model::Open { .. } => format!(
            "open model, staged rate, up to {} connections",
            plan.connections
        ),
    }
}

/// A row of percentiles of `n` values: a percentile the values do not support (p99
/// needs 100, p99.9 1,000, p99.99 10,000) would be the maximum, so it shows "—" and
/// the maximum stands as the maximum. Returns whether any was left out.
fn pct_row(t: &mut Table, name: &str, p: &Percentiles, n: u64) -> bool {
    let q = |v: f64, q: f64| {
        if crate::stats::histogram::supports(n, q) {
            fmt_ms(v)
        } else {
            "—".to_string()
        }
    };
    t.row([
        name.to_string(),
        fmt_ms(p.min),
        fmt_ms(p.mean),
        fmt_ms(p.p50),
        q(p.p90, 0.9),
        q(p.p99, 0.99),
        q(p.p999, 0.999),
        q(p.p9999, 0.9999),
        fmt_ms(p.max),
    ]);
    !crate::stats::histogram::supports(n, 0.9999)
}

/// `-L`: the redirects followed once before the run, and what the run measures.
pub fn redirects_line(hops: &[crate::probe::audit::Hop]) -> String {
    let chain: Vec<String> = hops
        .iter()
        .map(|h| {
            format!(
                "{} {} → {}",
                h.status,
                crate::visible::one_line(&h.url),
                crate::visible::one_line(&h.location)
            )
        })
        .collect();
    format!(
        "  followed {} redirect{} first (-L): {}; the load measures the page they end \
         at, its requests do not pay the chain\n",
        hops.len(),
        if hops.len() == 1 { "" } else { "s" },
        chain.join("; ")
    )
}

/// The summary printed at the end of a run.
pub fn summary(r: &LoadResult, findings: &[Finding]) -> String {
    let mut s = String::new();
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let lat = Percentiles::from_histogram(&r.latency, Unit::Millis);
    let availability = if r.requests == 0 {
        0.0
    } else {
        r.ok as f64 * 100.0 / r.requests as f64
    };
    // Siege's "concurrency": total time spent in requests / elapsed.
    let concurrency = lat.mean * r.requests as f64 / 1000.0 / secs;
    if r.aborted {
        s.push_str("Interrupted: the numbers below cover what ran before the stop.\n");
    }
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(s, "  {k:<24}{v:>16}");
    };
    // "requests", never siege's "hits": cache hits are counted a few lines below.
    kv("Transactions:", format!("{} requests", r.requests));
    kv("Availability:", format!("{availability:.2} %"));
    if let Some(v) = r.http_version {
        kv("Protocol:", v.to_string());
    }
    kv("Elapsed time:", format!("{secs:.2} s"));
    kv("Data transferred:", fmt_bytes(r.bytes));
    kv("Response time (mean):", fmt_ms(lat.mean));
    kv("Transaction rate:", format!("{:.1} trans/s", r.rps()));
    kv(
        "Throughput:",
        format!("{}/s", fmt_bytes((r.bytes as f64 / secs) as u64)),
    );
    kv("Concurrency:", format!("{concurrency:.1}"));
    kv("Successful transactions:", r.ok.to_string());
    // k6 and wrk count a 3xx as no error; it is not the page either, and says so.
    let redirects: u64 = r
        .statuses
        .iter()
        .filter(|(s, _)| (300..400).contains(*s) && **s != 304)
        .map(|(_, n)| n)
        .sum();
    if redirects > 0 {
        kv("Redirects (3xx):", redirects.to_string());
    }
    kv("Failed transactions:", r.error_count().to_string());
    let checks = r.checks();
    if checks.total > 0 {
        kv("Checks passed:", checks_text(checks.passed, checks.total));
    }
    kv("Longest transaction:", fmt_ms(lat.max));
    kv("Shortest transaction:", fmt_ms(lat.min));
    if r.dropped > 0 || r.model == "open" {
        kv("Dropped (backlog full):", r.dropped.to_string());
    }
    if r.incomplete > 0 {
        kv("Incomplete at the end:", r.incomplete.to_string());
    }
    kv("Connections opened:", r.connections_opened.to_string());
    // The epoll engine's batched wakes: a response may be read up to this late.
    if let Some(w) = r.wake_window {
        kv(
            "Wakes batched, up to:",
            format!("{:.0} µs", w.as_secs_f64() * 1e6),
        );
    }
    // What latscope's own connections resent (their TCP_INFO), when they resent any.
    let data = r.data_retrans.unwrap_or(0);
    if r.syn_retrans + r.early_retrans + data > 0 {
        kv(
            "TCP resent (own conns):",
            format!(
                "{} SYNs ({} connections), {} segments before a first answer, {}",
                r.syn_retrans,
                r.syn_retried_conns,
                r.early_retrans,
                r.data_retrans
                    .map_or("once established: not watched".to_string(), |d| format!(
                        "{d} once established"
                    ))
            ),
        );
    }
    if let Some(ratio) = r.hit_ratio() {
        kv(
            "Cache hits:",
            format!(
                "{} % ({} hits, {} miss{}, {} unknown{})",
                if (0.9995..1.0).contains(&ratio) {
                    format!("{:.3}", ratio * 100.0)
                } else {
                    format!("{:.1}", ratio * 100.0)
                },
                r.cache_hits,
                r.cache_misses,
                if r.cache_misses == 1 { "" } else { "es" },
                r.cache_unknown(),
                r.cache_kind
                    .map(|k| format!("; {}", k.name()))
                    .unwrap_or_default()
            ),
        );
    }
    let waited = match r.client_wait_pct {
        Some(w) if w >= 1.0 => format!(" (+{w:.0} % waiting for a CPU)"),
        _ => String::new(),
    };
    kv(
        "latscope CPU:",
        format!("{:.0} % of a core{waited}", r.client_cpu_pct),
    );
    for (k, v) in watch_lines(r) {
        kv(&k, v);
    }
    s.push('\n');

    let mut t = Table::new([
        "latency", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max",
    ]);
    let mut short = pct_row(&mut t, "all", &lat, r.latency.len());
    if r.endpoints.len() > 1 {
        for e in &r.endpoints {
            short |= pct_row(
                &mut t,
                &e.name,
                &Percentiles::from_histogram(&e.latency, Unit::Millis),
                e.latency.len(),
            );
        }
    }
    if let Some(svc) = &r.service {
        short |= pct_row(
            &mut t,
            "service time",
            &Percentiles::from_histogram(svc, Unit::Millis),
            svc.len(),
        );
    }
    if !r.connect.is_empty() {
        short |= pct_row(
            &mut t,
            "connect",
            &Percentiles::from_histogram(&r.connect, Unit::Millis),
            r.connect.len(),
        );
    }
    if !r.tls.is_empty() {
        short |= pct_row(
            &mut t,
            "tls",
            &Percentiles::from_histogram(&r.tls, Unit::Millis),
            r.tls.len(),
        );
    }
    s.push_str(&t.render(2));
    if short {
        s.push_str(
            "  (— : too few values for that percentile: p99 needs 100, p99.9 1,000, p99.99 \
             10,000; below that it would be the max, shown as the max)\n",
        );
    }
    if r.service.is_some() {
        s.push_str("  (open model: latency counts from the intended send time, service time from the actual send)\n");
    }
    if r.endpoints.len() > 1 {
        let with_checks = checks.total > 0;
        let mut head = vec!["endpoint", "requests", "ok", "errors", "req/s"];
        if with_checks {
            head.push("checks");
        }
        let mut t = Table::new(head);
        for e in &r.endpoints {
            let mut row = vec![
                e.name.clone(),
                e.requests.to_string(),
                e.ok.to_string(),
                (e.requests - e.ok).to_string(),
                format!("{:.1}", e.requests as f64 / secs),
            ];
            if with_checks {
                row.push(if e.checks.total == 0 {
                    "—".into()
                } else {
                    checks_text(e.checks.passed, e.checks.total)
                });
            }
            t.row(row);
        }
        s.push('\n');
        s.push_str(&t.render(2));
    }
    let failed: Vec<String> = r
        .endpoints
        .iter()
        .flat_map(|e| {
            e.checks
                .failed
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(move |(i, n)| {
                    let name = e.check_names.get(i).map_or("check", |c| c.as_str());
                    format!("{} {name} {n}", e.name)
                })
        })
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(s, "\n  Failed checks: {}", failed.join(", "));
    }
    if !r.errors.is_empty() {
        let list: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(s, "\n  Errors: {}", list.join(", "));
    }
    if !r.statuses.is_empty() {
        let list: Vec<String> = r
            .statuses
            .iter()
            .map(|(c, n)| {
                if *c == 0 {
                    format!("none {n}")
                } else {
                    format!("{c} {n}")
                }
            })
            .collect();
        let _ = writeln!(s, "  Status codes: {}", list.join(", "));
    }
    if !r.thresholds.is_empty() {
        s.push_str("\n  Thresholds:\n");
        for v in &r.thresholds {
            let value = v
                .value
                .map_or("no data".to_string(), |x| threshold_value(&v.expr, x));
            let on = v
                .endpoint
                .as_ref()
                .map(|e| format!(" [{e}]"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "    {} {}{on}  (measured {value})",
                if v.ok { "pass" } else { "FAIL" },
                v.expr
            );
        }
    }
    if let Some(e) = &r.raw_error {
        let _ = writeln!(s, "\n  warning: --raw was not written completely: {e}");
    }
    if !findings.is_empty() {
        s.push_str("\n  Findings:\n");
        for f in findings {
            let _ = writeln!(s, "    [{}] {}: {}", f.severity, f.id, f.title);
            if !f.advice.is_empty() {
                let _ = writeln!(s, "           {}", f.advice);
            }
        }
    }
    s
}

/// A threshold's measured value in its metric's unit: `18.4 ms`, `0.520 %`,
/// `1234.5 req/s`, `12000 requests`, `99.200 % of checks passed` (the metric read
/// back from the rule's text, so stored runs print the same).
pub fn threshold_value(expr: &str, value: f64) -> String {
    use crate::load::threshold::{parse, Metric};
    match parse(expr).map(|t| t.metric) {
        Ok(Metric::ErrorRate) => format!("{value:.3} %"),
        Ok(Metric::Checks) => format!("{value:.3} % of checks passed"),
        Ok(Metric::Rps) => format!("{value:.1} req/s"),
        Ok(Metric::Requests) => format!("{value:.0} requests"),
        Ok(_) => fmt_ms(value),
        Err(_) => format!("{value:.3}"),
    }
}

/// "99.2 % of 12,000" (checks passed of checks judged).
fn checks_text(passed: u64, total: u64) -> String {
    let pct = passed as f64 * 100.0 / total.max(1) as f64;
    let pct = if passed < total && pct >= 99.95 {
        format!("{pct:.3}")
    } else {
        format!("{pct:.1}")
    };
    format!(
        "{pct} % of {}",
        crate::diagnose::rules::disk::thousands(total)
    )
}

/// One progress line (no newline), for stderr on a terminal.
pub fn progress_line(p: &Progress) -> String {
    let elapsed = p.elapsed.as_secs();
    let of = p
        .length
        .map(|l| format!("/{}s", l.as_secs()))
        .unwrap_or_default();
    let dropped = if p.dropped > 0 {
        format!("  dropped {}", p.dropped)
    } else {
        String::new()
    };
    format!(
        "  {elapsed}s{of}  {:.0} req/s  p50 {}  p99 {}  requests {}  errors {}{dropped}  conns {}",
        p.rps,
        fmt_ms(p.p50_ms),
        fmt_ms(p.p99_ms),
        p.requests,
        p.errors,
        p.active
    )
}

/// The `--watch` lines of the summary: the server's CPU, retransmits and accept-queue
/// drops over the run, and each target that failed scrapes.
fn watch_lines(r: &LoadResult) -> Vec<(String, String)> {
    let Some(w) = &r.watch else {
        return Vec::new();
    };
    let servers: Vec<&crate::watch::ServerSecond> = r
        .timeline
        .iter()
        .filter_map(|s| s.server.as_ref())
        .collect();
    let mut out = vec![(
        "Server (--watch):".to_string(),
        server_line(&servers, w.seconds, w.gaps),
    )];
    for t in w.targets.iter().filter(|t| t.failed > 0) {
        out.push((
            "  scrape failed:".to_string(),
            format!(
                "{} of {} from {} ({})",
                t.failed,
                t.scrapes,
                t.url,
                t.last_error.as_deref().unwrap_or("?")
            ),
        ));
    }
    out
}

/// What the watched server's seconds add up to: "CPU 63 % mean, 100 % max, 12 TCP
/// segments resent, 0 accept-queue overflows, 9 of 10 s watched".
pub(crate) fn server_line(
    servers: &[&crate::watch::ServerSecond],
    seconds: u64,
    gaps: u64,
) -> String {
    let cpu: Vec<f64> = servers.iter().filter_map(|s| s.cpu_pct).collect();
    let sum = |f: fn(&crate::watch::ServerSecond) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = servers.iter().filter_map(|s| f(s)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let mut parts = Vec::new();
    if !cpu.is_empty() {
        parts.push(format!(
            "CPU {:.0} % mean, {:.0} % max",
            cpu.iter().sum::<f64>() / cpu.len() as f64,
            cpu.iter().copied().fold(0.0, f64::max)
        ));
    }
    if let Some(n) = sum(|s| s.retrans) {
        parts.push(format!("{n:.0} TCP segments resent"));
    }
    if let Some(n) = sum(|s| s.listen_overflows) {
        parts.push(format!("{n:.0} accept-queue overflows"));
    }
    parts.push(format!("{seconds} of {} s watched", seconds + gaps));
    parts.join(", ")
}
