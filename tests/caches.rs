//! The cache conformance suite (issue 13): real Varnish, nginx and Apache caches in
//! front of a Python origin that serves each header variant, checked three ways —
//! (1) latscope's model of each cache's defaults (`cache::defaults`) against what the
//! real cache did, counted at the origin (full responses and 304s); (2) latscope's
//! RFC 9111 answer against httplint's (the engine behind REDbot), where installed;
//! (3) the findings a user sees through each cache, both ways (tests/caches_findings.rs).
//! Each test skips with a printed reason only when its server binary is missing.

use crate::util_caches::{self as caches, get, origin, origin_counts, Server};
use crate::util_require::require;
use latscope::cache::defaults::{DefaultCaches, DefaultVerdict, RequestFacts};
use latscope::cache::rfc::shared_cache;
use latscope::cache::{cache_status, CacheKind, Headers};

const GET: RequestFacts = RequestFacts {
    get: true,
    cookie: false,
    authorization: false,
    query: false,
};

/// The variants the origin serves (tests/data/cache_origin.py) and what each cache
/// does with them by default, as the conformance tests expect it (`uncached` = pass
/// or hit-for-miss: every request reaches the origin in full):
///
/// | variant | Varnish (builtin.vcl) | nginx (no proxy_cache_valid) | Apache mod_cache | why |
/// |---|---|---|---|---|
/// | public, max-age=600 + ETag | hit | hit | hit | explicit freshness (RFC 9111 §4.2.1) |
/// | same + Set-Cookie | uncached | uncached | hit | RFC §7.3 allows storing; Varnish and nginx refuse Set-Cookie, Apache stores and replays it |
/// | no-cache + ETag | uncached | uncached | revalidate | RFC §5.2.2.4: store, revalidate each use; Varnish/nginx refuse `no-cache` |
/// | max-age=0, must-revalidate + ETag | uncached | uncached | revalidate | RFC §4.2.4: stale at once, revalidate; Varnish/nginx: TTL 0 |
/// | max-age=0, must-revalidate, no validators | uncached | uncached | uncached | nothing to revalidate with (mod_cache: "s-maxage or max-age zero and no Last-Modified or Etag") |
/// | no headers | hit | uncached | uncached | Varnish default_ttl 120 s; nginx needs a lifetime; mod_cache: "No Last-Modified; Etag; Expires; …" |
/// | ETag only | hit | uncached | hit | Varnish 120 s; mod_cache CacheDefaultExpire 1 h |
/// | Last-Modified only | hit | uncached | hit | RFC §4.2.2 heuristic (10 % of its age); Varnish 120 s |
/// | private, max-age=600 | uncached | uncached | uncached | RFC §5.2.2.7 (shared caches must not store) |
/// | no-store | uncached | uncached | uncached | RFC §5.2.2.5 |
/// | Expires in the past | uncached | uncached | uncached | RFC §4.2.1: stale at once, no validators |
/// | Vary: User-Agent | hit | hit | hit | one User-Agent here; fragments caches in the wild |
/// | Vary: * | uncached | uncached | uncached | RFC §4.1: never matches |
const VARIANTS: [&str; 13] = [
    "public",
    "public-cookie",
    "nocache-etag",
    "maxage0-etag",
    "maxage0",
    "none",
    "etag-only",
    "lm-only",
    "private",
    "no-store",
    "expires-past",
    "vary-ua",
    "vary-star",
];

/// The expected table above, per server (same order as [`VARIANTS`]).
fn expected(server: &str) -> [&'static str; 13] {
    const U: &str = "uncached";
    match server {
        "varnish" => ["hit", U, U, U, U, "hit", "hit", "hit", U, U, U, "hit", U],
        "nginx" => ["hit", U, U, U, U, U, U, U, U, U, U, "hit", U],
        _ => [
            "hit",
            "hit",
            "revalidate",
            "revalidate",
            U,
            U,
            "hit",
            "hit",
            U,
            U,
            U,
            "hit",
            U,
        ],
    }
}

/// What the real cache did with three GETs, from the origin's counts.
fn observed(full: u64, cond: u64) -> &'static str {
    match (full, cond) {
        (1, 0) => "hit",
        (1, c) if c >= 1 => "revalidate",
        (f, _) if f >= 3 => "uncached",
        _ => "unexpected",
    }
}

fn model(v: &DefaultVerdict) -> &'static str {
    if v.verdict.uncached() {
        "uncached"
    } else {
        v.verdict.as_str()
    }
}

/// Runs every variant through `cache`: the real behaviour, the table and latscope's
/// model agree, and the one detector reads a hit exactly when the cache served one,
/// naming the cache.
fn conformance(
    server: &str,
    cache: &Server,
    origin: &Server,
    pick: fn(&DefaultCaches) -> &DefaultVerdict,
    kind: CacheKind,
) {
    let want = expected(server);
    for (i, v) in VARIANTS.iter().enumerate() {
        let path = format!("/v/{v}/{server}");
        let direct = get(origin.port, &format!("/v/{v}/{server}-direct"), &[]);
        let replies: Vec<_> = (0..3).map(|_| get(cache.port, &path, &[])).collect();
        assert!(
            replies.iter().all(|r| r.status == 200),
            "{server} {v}: {replies:?}"
        );
        let (full, cond) = origin_counts(origin.port, &path);
        let real = observed(full, cond);
        assert_eq!(
            real, want[i],
            "{server} {v}: the real cache ({full} full, {cond} 304)"
        );
        let defaults = DefaultCaches::of(GET, 200, &Headers::from_pairs(&direct.headers));
        assert_eq!(
            model(pick(&defaults)),
            real,
            "{server} {v}: latscope's model"
        );
        let last = cache_status(&Headers::from_pairs(&replies[2].headers));
        if real == "hit" {
            assert!(last.state.from_cache(), "{server} {v}: {last:?}");
            assert_eq!(last.kind, Some(kind), "{server} {v}: {last:?}");
        } else {
            assert!(!last.state.from_cache(), "{server} {v}: {last:?}");
        }
    }
}

/// Varnish 7 with the built-in VCL, variant by variant (table on [`VARIANTS`]).
#[test]
fn varnish_defaults_conform() {
    if !require("varnishd") || !require("python3") {
        return;
    }
    let o = origin();
    let c = caches::varnish(o.port);
    conformance("varnish", &c, &o, |d| &d.varnish, CacheKind::Varnish);
}

/// nginx proxy_cache without proxy_cache_valid, variant by variant.
#[test]
fn nginx_defaults_conform() {
    if !require("nginx") || !require("python3") {
        return;
    }
    let o = origin();
    let c = caches::nginx(o.port);
    conformance("nginx", &c, &o, |d| &d.nginx, CacheKind::Nginx);
}

/// Apache mod_cache_disk with default directives, variant by variant; its only sign
/// of a hit is an `Age` header (RFC 9111 §5.1), which the detector reads.
#[test]
fn apache_defaults_conform() {
    if !require("apache2") || !require("python3") {
        return;
    }
    let o = origin();
    let c = caches::apache(o.port, false);
    conformance("apache", &c, &o, |d| &d.apache, CacheKind::Apache);
}

/// latscope's RFC 9111 storability (`shared_cache.rfc_storable`) agrees with
/// httplint's on every variant: "allows all caches to store it" ⇔ storable.
#[test]
fn httplint_agrees_on_rfc_storability() {
    if !require("httplint") || !require("python3") {
        return;
    }
    let o = origin();
    for v in VARIANTS {
        let r = get(o.port, &format!("/v/{v}/lint"), &[]);
        let mut child = std::process::Command::new("httplint")
            .arg("-n")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&r.raw).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lint = text.contains("allows all caches to store it");
        let ours = shared_cache(true, 200, &Headers::from_pairs(&r.headers), false).rfc_storable;
        assert_eq!(ours, lint, "{v}: httplint said:\n{text}");
    }
}
