//! HTTP caching rules over the cache audit: `not-shared-cacheable` (what RFC 9111
//! allows a shared cache, set apart from what Varnish's built-in VCL, Apache
//! mod_cache and nginx proxy_cache do by default), `cached-set-cookie` (a shared
//! cache replaying one Set-Cookie to every visitor), `no-validators` and `no-304` (a
//! real conditional GET must come back 304 with no body).

use std::hash::{Hash, Hasher};

use super::ms;
use crate::cache::defaults::DefaultCaches;
use crate::cache::rfc::{has_validators, shared_cache, Unstorable};
use crate::cache::status::{cache_status, CacheLayer, CacheState, CacheStatus};
use crate::cache::{CacheControl, Headers};
use crate::diagnose::audit::request_facts;
use crate::diagnose::facts::{CacheFacts, ConditionalFacts};
use crate::diagnose::finding::{Category, Finding, Severity};

fn ok_get(c: &CacheFacts) -> bool {
    c.get && (200..300).contains(&c.status)
}

/// The cache status of each repeated GET (the first included), from the one
/// detector; when no header says anything and the origin's TTFB is known
/// (`--origin`), a hit is inferred from timing — at most half the origin's TTFB and
/// ≥ 5 ms faster, a margin no proxy hop's noise crosses (source `inferred`). A miss
/// is never inferred: as slow as the origin is what a proxy without any cache is
/// too (issue 30 item 5: HAProxy was called a cache that missed).
pub fn statuses(c: &CacheFacts) -> Vec<CacheStatus> {
    let mut all: Vec<CacheStatus> = c.repeats.iter().map(|r| cache_status(&r.headers)).collect();
    let silent = all.iter().all(|s| s.state == CacheState::Unknown);
    if let Some(o) = c.origin_ttfb_ms.filter(|o| silent && *o >= 5.0) {
        for (s, r) in all.iter_mut().zip(&c.repeats) {
            if r.ttfb_ms > 0.5 * o || o - r.ttfb_ms < 5.0 {
                continue;
            }
            let state = CacheState::Hit;
            s.state = state;
            s.layers.insert(
                0,
                CacheLayer {
                    source: "inferred",
                    raw: format!("{:.1} ms vs the origin's {o:.1} ms", r.ttfb_ms),
                    state,
                },
            );
        }
    }
    all
}

/// `not-shared-cacheable`: for an anonymous GET, RFC 9111 forbids a shared cache to
/// store the response, or it allows it but common caches do not keep it by default
/// (named, with their reasons). Quiet for credentialed requests (`private` is then
/// right) and whenever a cache in front was seen serving it from cache.
pub fn not_shared_cacheable(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) || !c.anonymous {
        return None;
    }
    if statuses(c).iter().any(|s| s.state.from_cache()) {
        // A cache in front stores it: never say "will not store" beside hits.
        return None;
    }
    let req = request_facts(c);
    let rfc = shared_cache(c.get, c.status, &c.headers, req.authorization);
    let defaults = DefaultCaches::of(req, c.status, &c.headers);
    let passing: Vec<(&str, &str, &[Unstorable])> = defaults
        .each()
        .iter()
        .filter(|(_, _, v)| v.verdict.uncached())
        .map(|(n, name, v)| (*n, *name, v.why.as_slice()))
        .collect();
    if rfc.rfc_storable && passing.is_empty() {
        return None;
    }
    let codes = |why: &[Unstorable]| {
        why.iter()
            .map(|u| match u {
                Unstorable::SetCookie => "Set-Cookie on an anonymous GET",
                other => other.as_str(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rfc_reasons = crate::cache::rfc::rfc_unstorable(c.get, c.status, &c.headers, false);
    let validated = has_validators(&c.headers) && !c.headers.has("set-cookie");
    let (severity, title) = if !rfc.rfc_storable {
        let mut extra: Vec<Unstorable> = Vec::new();
        for (_, _, why) in &passing {
            for u in why.iter() {
                if !rfc_reasons.contains(u) && !extra.contains(u) {
                    extra.push(*u);
                }
            }
        }
        (
            Severity::Warn,
            format!(
                "a shared cache may not store this response (RFC 9111): {}{}",
                codes(&rfc_reasons),
                if extra.is_empty() {
                    String::new()
                } else {
                    format!("; common caches also refuse it for {}", codes(&extra))
                }
            ),
        )
    } else {
        let who: Vec<String> = passing
            .iter()
            .map(|(_, name, why)| format!("{name} ({})", codes(why)))
            .collect();
        let rfc_says = if rfc.revalidate_every_use {
            "RFC 9111 lets a shared cache store this response and revalidate it on every use"
        } else {
            "RFC 9111 lets a shared cache store this response"
        };
        // Revalidated on every use with working validators is a deliberate choice:
        // the 304 saves the body; only the round trip remains.
        let severity = if rfc.revalidate_every_use && validated {
            Severity::Info
        } else {
            Severity::Warn
        };
        (
            severity,
            format!(
                "{rfc_says}, but by default {} {} not keep it",
                who.join(" and "),
                if who.len() == 1 { "does" } else { "do" }
            ),
        )
    };
    let mut all: Vec<Unstorable> = rfc_reasons.clone();
    for (_, _, why) in &passing {
        for u in why.iter() {
            if !all.contains(u) {
                all.push(*u);
            }
        }
    }
    all.sort_by_key(|u| *u as u8);
    let fixes: Vec<&str> = all.iter().map(|r| r.fix()).collect();
    let mut fixes_dedup: Vec<&str> = Vec::new();
    for f in fixes {
        if !fixes_dedup.contains(&f) {
            fixes_dedup.push(f);
        }
    }
    let cc = c.headers.get("cache-control").unwrap_or_default();
    let mut f = Finding::new("not-shared-cacheable", Category::Cache, severity, title)
        .text(
            "reasons",
            crate::cache::defaults::common_unstorable(req, c.status, &c.headers)
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )
        .text("rfc_storable", if rfc.rfc_storable { "yes" } else { "no" })
        .text("cache_control", cc)
        .count("set_cookie", c.headers.get_all("set-cookie").count() as u64);
    for (n, _, v) in defaults.each() {
        f = f.text(n, v.verdict.as_str());
    }
    Some(f.advice(format!("for anonymous readers: {}", fixes_dedup.join("; "))))
}

/// A hash of a Set-Cookie's `name=value` (the attributes left out): values are
/// compared, never kept or shown.
fn cookie_hash(set_cookie: &str) -> u64 {
    let pair = set_cookie.split(';').next().unwrap_or("").trim();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pair.hash(&mut h);
    h.finish()
}

/// The names of the cookies a response sets (no values).
fn cookie_names(h: &Headers) -> Vec<String> {
    h.get_all("set-cookie")
        .filter_map(|c| c.split_once('=').map(|(n, _)| n.trim().to_string()))
        .collect()
}

/// `cached-set-cookie`: the same Set-Cookie value came back on repeated GETs that a
/// shared cache answered — one visitor's cookie (often a session) is replayed to
/// every visitor. RFC 9111 §7.3 does not forbid storing Set-Cookie and Apache
/// mod_cache does; values are compared by hash, never stored or printed.
pub fn cached_set_cookie(c: &CacheFacts) -> Option<Finding> {
    let st = statuses(c);
    let mut seen: Vec<u64> = Vec::new();
    let mut replayed = 0usize;
    let mut names: Vec<String> = Vec::new();
    for (r, s) in c.repeats.iter().zip(&st) {
        let hashes: Vec<u64> = r.headers.get_all("set-cookie").map(cookie_hash).collect();
        if s.state.from_cache() && hashes.iter().any(|h| seen.contains(h)) {
            replayed += 1;
            for n in cookie_names(&r.headers) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        seen.extend(hashes);
    }
    if replayed == 0 {
        return None;
    }
    let cache = st
        .iter()
        .rev()
        .find_map(|s| s.kind)
        .map_or("a shared cache", |k| k.name());
    let with_cookie = c
        .repeats
        .iter()
        .filter(|r| r.headers.has("set-cookie"))
        .count();
    Some(
        Finding::new(
            "cached-set-cookie",
            Category::Cache,
            Severity::Crit,
            format!(
                "{cache} replays one Set-Cookie ({}) to every visitor: the same value came \
                 back on {replayed} cached answers of {} GETs",
                names.join(", "),
                c.repeats.len()
            ),
        )
        .count("replayed", replayed as u64)
        .count("requests", c.repeats.len() as u64)
        .count("with_set_cookie", with_cookie as u64)
        .text("cookies", names.join(", "))
        .advice(
            "a session cookie served from a shared cache logs every visitor into the same \
             session: never set cookies on cacheable responses (send `Cache-Control: \
             private` or no-store where a cookie is set), or make the cache drop \
             Set-Cookie (Apache: `CacheIgnoreHeaders Set-Cookie`) or pass such responses",
        ),
    )
}

/// Request headers with nearly one value per visitor: a cache that varies on them
/// keeps one copy per value (httplint warns on the same two).
const HIGH_CARDINALITY: [&str; 2] = ["user-agent", "referer"];

/// `vary-fragments`: a storable response that varies on a high-cardinality request
/// header (`Vary: User-Agent`): RFC 9111 §4.1 makes a cache keep one copy per value,
/// so in the wild almost every request misses.
pub fn vary_fragments(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) {
        return None;
    }
    let vary = c.headers.get("vary")?;
    let high: Vec<&str> = crate::cache::control::split_list(&vary)
        .into_iter()
        .filter(|v| HIGH_CARDINALITY.iter().any(|h| h.eq_ignore_ascii_case(v)))
        .collect();
    if high.is_empty() || !shared_cache(c.get, c.status, &c.headers, false).rfc_storable {
        return None;
    }
    Some(
        Finding::new(
            "vary-fragments",
            Category::Cache,
            Severity::Warn,
            format!(
                "`Vary: {vary}` makes shared caches keep one copy per distinct {} (hundreds \
                 of browser versions in the wild): most visitors miss the cache",
                high.join(" and ")
            ),
        )
        .text("vary", vary.clone())
        .text("headers", high.join(", "))
        .advice(
            "vary only on what really changes the response: drop `Vary: User-Agent` (serve \
             one responsive page), or let the cache compute a small device class and vary \
             on that header instead",
        ),
    )
}

/// `no-validators`: no ETag or Last-Modified, so nothing can be revalidated cheaply.
pub fn no_validators(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) || has_validators(&c.headers) {
        return None;
    }
    let cc = CacheControl::parse(&c.headers.get("cache-control").unwrap_or_default());
    if cc.no_store {
        return None;
    }
    Some(
        Finding::new(
            "no-validators",
            Category::Cache,
            Severity::Warn,
            format!(
                "no ETag or Last-Modified: every refresh is a full {} response{}",
                c.status,
                c.full_time_ms
                    .map(|t| format!(" ({})", ms(t)))
                    .unwrap_or_default()
            ),
        )
        .opt_num("full_time_ms", c.full_time_ms)
        .text(
            "cache_control",
            c.headers.get("cache-control").unwrap_or_default(),
        )
        .advice(
            "send ETag or Last-Modified and answer If-None-Match / If-Modified-Since with \
             304 Not Modified (no body): browsers and caches then revalidate in one cheap \
             round trip",
        ),
    )
}

/// The compression suffix an ETag carries (`"abc-gzip"` → `gzip`), if any.
fn compression_suffix(etag: &str) -> Option<&'static str> {
    let t = etag.trim().trim_end_matches('"');
    ["gzip", "br", "deflate", "zstd"]
        .into_iter()
        .find(|s| t.ends_with(&format!("-{s}")) || t.ends_with(&format!("+{s}")))
}

/// `no-304`: validators are sent, but a conditional GET is not answered 304 without a
/// body.
pub fn no_304(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) || !has_validators(&c.headers) {
        return None;
    }
    let bad = |r: &Option<ConditionalFacts>| {
        r.filter(|r| r.status != 304 || r.body_bytes > 0 || r.excess_body)
    };
    let (inm, ims) = (bad(&c.if_none_match), bad(&c.if_modified_since));
    let worst = inm.or(ims)?;
    let which = match (inm.is_some(), ims.is_some()) {
        (true, true) => "If-None-Match and If-Modified-Since",
        (true, false) => "If-None-Match",
        _ => "If-Modified-Since",
    };
    let what = if worst.excess_body {
        "304 carrying a body after its head (the next response on that connection read \
         it as its own: clients that keep connections alive break)"
            .to_string()
    } else if worst.status == 304 {
        format!("304 with a {}-byte body", worst.body_bytes)
    } else {
        format!("{} with {} bytes", worst.status, worst.body_bytes)
    };
    let mut f = Finding::new(
        "no-304",
        Category::Cache,
        Severity::Warn,
        format!("a conditional GET ({which}) came back {what} instead of an empty 304"),
    )
    .count("status", worst.status as u64)
    .count("body_bytes", worst.body_bytes)
    .count("excess_body", worst.excess_body as u64)
    .num("time_ms", worst.time_ms)
    .opt_num("full_time_ms", c.full_time_ms)
    .advice(
        "answer If-None-Match (matching the ETag) and If-Modified-Since (not newer than \
         Last-Modified) with 304 Not Modified and no body; many frameworks do it with a \
         conditional-GET middleware",
    );
    if let Some(suffix) = compression_suffix(&c.headers.get("etag").unwrap_or_default()) {
        // Apache's mod_deflate appends "-gzip" to the ETag of what it compresses; the
        // If-None-Match that comes back no longer matches what the application sent.
        f.title.push_str(&format!(
            "; the ETag ends in \"-{suffix}\", added by compression"
        ));
        f = f.text("etag_suffix", suffix).advice(format!(
            "the ETag carries a compression suffix (-{suffix}): a compressing proxy or \
             module (Apache mod_deflate does this) changed it, so the application's \
             If-None-Match check no longer matches; make the application (or the proxy: \
             Apache `DeflateAlterETag NoChange`, or strip the suffix from If-None-Match \
             before the application sees it) compare the ETag without the suffix"
        ));
    }
    if let Some(r) = c.if_none_match {
        f = f.count("inm_status", r.status as u64);
    }
    if let Some(r) = c.if_modified_since {
        f = f.count("ims_status", r.status as u64);
    }
    Some(f)
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
