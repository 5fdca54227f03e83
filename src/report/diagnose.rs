//! A diagnosis as terminal text, verdict first: the URL, "where the time goes", the
//! findings (most severe first, then by saving), then the details — the probe's
//! phases, the cache audit, the origin comparison and the load ramp.

use crate::diagnose::audit::audit;
use crate::diagnose::diagnosis::Diagnosis;
use crate::units::{fmt_bytes, fmt_ms};

use super::table::Table;
use super::{findings, probe};

/// One diagnosis: its verdict, then its details.
pub fn render(d: &Diagnosis) -> String {
    let mut out = verdict(d);
    out.push_str("\n  details\n");
    out.push_str(&details(d));
    out
}

/// Several diagnoses: every URL's verdict first (in order), the side-by-side table,
/// then every URL's details.
pub fn render_several(results: &[Diagnosis]) -> String {
    let mut out = String::new();
    for d in results {
        out.push_str(&verdict(d));
        out.push('\n');
    }
    let explained: Vec<_> = results
        .iter()
        .map(|d| (&d.probe, d.findings.as_slice()))
        .collect();
    out.push_str("side by side\n");
    out.push_str(&probe::side_by_side(&explained));
    for d in results {
        out.push('\n');
        out.push_str(&format!("{} — details\n\n", d.probe.target));
        out.push_str(&details(d));
    }
    out
}

/// The URL, "where the time goes" and the findings.
pub fn verdict(d: &Diagnosis) -> String {
    let mut out = probe::heading(&d.probe);
    if let Some(s) = &d.stack {
        out.push_str(&format!("\n  stack: {}\n", s.summary));
    }
    if let Some(s) = &d.summary {
        out.push_str(&format!("\n  where the time goes: {s}\n"));
    }
    out.push('\n');
    out.push_str(&findings::render(&d.findings));
    out
}

/// The probe's phases and details, the cache audit, the origin and the load ramp.
pub fn details(d: &Diagnosis) -> String {
    let mut out = probe::details_block(&d.probe);
    out.push('\n');
    out.push_str(&cache(d));
    if let Some(o) = &d.origin {
        out.push_str(&format!(
            "  origin (direct)   fresh TTFB p50 {} vs {} through the edge; reused {} vs {}\n",
            fmt_ms(o.fresh.phases_ms.ttfb.p50),
            fmt_ms(d.probe.fresh.phases_ms.ttfb.p50),
            o.reused
                .as_ref()
                .map(|r| fmt_ms(r.phases_ms.ttfb.p50))
                .unwrap_or("-".into()),
            d.probe
                .reused
                .as_ref()
                .map(|r| fmt_ms(r.phases_ms.ttfb.p50))
                .unwrap_or("-".into()),
        ));
    }
    out.push_str(&protocols(d));
    out.push_str(&ramp(d));
    out
}

/// h1, h2 and h3 side by side, when HTTP/3 was offered or asked for.
fn protocols(d: &Diagnosis) -> String {
    let rows = d.protocol_rows();
    if rows.is_empty() {
        return String::new();
    }
    let opt = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
    let mut t = Table::new(vec![
        "protocol",
        "fresh ttfb p50",
        "resumed",
        "reused",
        "connect",
        "tls",
        "min rtt",
    ]);
    let mut errors = Vec::new();
    for r in &rows {
        if let Some(e) = &r.error {
            errors.push(format!("    {}: failed: {e}\n", r.http_version));
        }
        t.row(vec![
            r.http_version.clone(),
            opt(r.fresh_ttfb_ms),
            opt(r.resumed_ttfb_ms),
            opt(r.reused_ttfb_ms),
            opt(r.connect_ms),
            opt(r.tls_ms),
            opt(r.min_rtt_ms),
        ]);
    }
    let offer = match d.http3.as_ref() {
        Some(h) if h.https_rr.is_some() => {
            format!(
                " (HTTPS record: {})",
                h.https_rr.as_deref().unwrap_or_default()
            )
        }
        Some(h) if h.alt_svc.is_some() => {
            format!(" (Alt-Svc: {})", h.alt_svc.as_deref().unwrap_or_default())
        }
        _ => " (--http3)".into(),
    };
    let mut out = format!(
        "  protocols{offer}: fresh = a new connection with a full handshake; over \
         HTTP/3 connect is QUIC's handshake (transport + TLS) and min rtt QUIC's estimate\n"
    );
    out.push_str(&t.render(4));
    for e in errors {
        out.push_str(&e);
    }
    out
}

fn cache(d: &Diagnosis) -> String {
    let (Some(facts), Some(obs)) = (&d.facts.cache, &d.cache) else {
        return format!(
            "  cache audit       not run: {}\n",
            d.cache_error.as_deref().unwrap_or("no response")
        );
    };
    let a = audit(facts);
    let mut out = String::from("  cache audit\n");
    for hop in &obs.redirects {
        out.push_str(&format!(
            "    redirect        {} → {} ({})\n",
            hop.status,
            hop.location,
            fmt_ms(hop.time_ms)
        ));
    }
    if !obs.dropped_headers.is_empty() {
        out.push_str(&format!(
            "    not sent        {} (the redirect left the first origin)\n",
            obs.dropped_headers.join(", ")
        ));
    }
    let sc = &a.shared_cache;
    let rfc = rfc_verdict(
        sc.rfc_storable,
        sc.revalidate_every_use,
        sc.fresh_for_s,
        sc.heuristic,
        &sc.reasons,
    );
    out.push_str(&format!("    shared cache    RFC 9111: {rfc}\n"));
    let defaults: Vec<String> = a
        .default_caches
        .iter()
        .map(|(name, verdict)| match a.default_caches_why.get(name) {
            Some(why) => format!("{name} {verdict} ({why})"),
            None => format!("{name} {verdict}"),
        })
        .collect();
    out.push_str(&format!("    by default      {}\n", defaults.join(" · ")));
    let fresh = match a.freshness_s {
        Some(s) => format!("{s} s from {}", a.freshness_source),
        None => format!("none ({})", a.freshness_source),
    };
    out.push_str(&format!("    freshness       {fresh}\n"));
    if let Some(note) = &a.freshness_note {
        out.push_str(&format!("                    {note}\n"));
    }
    out.push_str(&format!(
        "    validators      ETag {} · Last-Modified {}\n",
        if a.etag.is_some() { "yes" } else { "no" },
        if a.last_modified.is_some() {
            "yes"
        } else {
            "no"
        }
    ));
    for (name, c) in [
        ("If-None-Match", &a.if_none_match),
        ("If-Modified-Since", &a.if_modified_since),
    ] {
        if let Some(c) = c {
            out.push_str(&format!(
                "    {name:<18}{} · {} · {}{}\n",
                c.status,
                fmt_bytes(c.body_bytes),
                fmt_ms(c.time_ms),
                if c.ok {
                    ""
                } else {
                    "  (expected 304 with no body)"
                }
            ));
        }
    }
    if let Some(full) = facts.full_time_ms {
        out.push_str(&format!(
            "    full GET        {} · {}\n",
            facts.status,
            fmt_ms(full)
        ));
    }
    let states: Vec<&str> = a.repeats.iter().map(|s| s.as_str()).collect();
    let via = match (a.cache, a.proxy) {
        (Some(c), Some(p)) => format!(" ({c}, from {p})"),
        (None, Some(p)) => format!(" (from {p})"),
        _ => String::new(),
    };
    if states.iter().all(|s| *s == "unknown") {
        out.push_str(
            "    repeated GETs   no cache status in the headers (no CDN or proxy cache seen)\n",
        );
    } else {
        out.push_str(&format!("    repeated GETs   {}{via}\n", states.join(", ")));
    }
    if let Some(d) = &a.cache_detail {
        out.push_str(&format!("    cache says      \"{d}\"\n"));
    }
    if let Some(edge) = &a.edge {
        out.push_str(&format!("    edge            {edge}\n"));
    }
    if let Some(r) = a.load_hit_ratio {
        out.push_str(&format!("    under load      {:.0}% hits\n", r * 100.0));
    }
    out
}

fn ramp(d: &Diagnosis) -> String {
    let Some(r) = &d.ramp else {
        return format!(
            "  load ramp         skipped: {}\n",
            d.skipped.as_deref().unwrap_or("not run")
        );
    };
    let mut t = Table::new(["connections", "req/s", "p50", "p99", "requests", "errors"]);
    for s in &r.steps {
        t.row([
            s.concurrency.to_string(),
            format!("{:.0}", s.rps),
            fmt_ms(s.p50_ms),
            fmt_ms(s.p99_ms),
            s.requests.to_string(),
            s.errors.to_string(),
        ]);
    }
    let mut out = String::from("  load ramp\n");
    out.push_str(&t.render(4));
    if let Some(why) = &r.stopped_early {
        out.push_str(&format!("    stopped early: {why}\n"));
    }
    if let Some(w) = &r.watch {
        let servers: Vec<&crate::watch::ServerSecond> = r
            .facts
            .timeline
            .iter()
            .filter_map(|s| s.server.as_ref())
            .collect();
        out.push_str(&format!(
            "    server (--watch): {}\n",
            super::load::server_line(&servers, w.seconds, w.gaps)
        ));
    }
    out
}

/// What RFC 9111 lets a shared cache do with the response, as every output says it:
/// "may store it, fresh for 300 s" or "may not store it (no-store)". The text and
/// the HTML report both show this one (issue 37 item 4: the HTML once said "false"
/// where the text said RFC 9111 allows it, from the common caches' stricter rules).
pub(crate) fn rfc_verdict(
    storable: bool,
    revalidate_every_use: bool,
    fresh_for_s: Option<i64>,
    heuristic: bool,
    reasons: &[impl AsRef<str>],
) -> String {
    if !storable {
        let reasons: Vec<&str> = reasons.iter().map(AsRef::as_ref).collect();
        return format!("may not store it ({})", reasons.join(", "));
    }
    let mut t = String::from("may store it");
    if revalidate_every_use {
        t.push_str(", revalidating it on every use");
    } else if let Some(f) = fresh_for_s {
        t.push_str(&format!(
            ", fresh for {f} s{}",
            if heuristic { " (heuristic)" } else { "" }
        ));
    } else if heuristic {
        t.push_str(", fresh for as long as the cache guesses (heuristic)");
    }
    t
}
