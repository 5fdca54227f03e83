//! The cache conformance suite (issue 13): real Varnish, nginx and Apache caches in
//! front of a Python origin that serves each header variant, checked three ways —
//! (1) latscope's model of each cache's defaults (`cache::defaults`) against what the
//! real cache did, counted at the origin (full responses and 304s); (2) latscope's
//! RFC 9111 answer against httplint's (the engine behind REDbot), where installed;
//! (3) the findings a user sees through each cache, both ways. Each test skips with a
//! printed reason only when its server binary is missing.

use latscope::cache::defaults::{DefaultCaches, DefaultVerdict, RequestFacts};
use latscope::cache::rfc::shared_cache;
use latscope::cache::{cache_status, CacheKind, Headers};
use serde_json::Value;

use crate::findings::{finding, ids};
use crate::util::run_json_within;
use crate::util_caches::{self as caches, get, installed, origin, origin_counts, Server};

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
    if !installed("varnishd") || !installed("python3") {
        eprintln!("SKIPPED varnish_defaults_conform: varnishd or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::varnish(o.port);
    conformance("varnish", &c, &o, |d| &d.varnish, CacheKind::Varnish);
}

/// nginx proxy_cache without proxy_cache_valid, variant by variant.
#[test]
fn nginx_defaults_conform() {
    if !installed("nginx") || !installed("python3") {
        eprintln!("SKIPPED nginx_defaults_conform: nginx or python3 missing");
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
    if !installed("apache2") || !installed("python3") {
        eprintln!("SKIPPED apache_defaults_conform: apache2 or python3 missing");
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
    if !installed("httplint") || !installed("python3") {
        eprintln!(
            "SKIPPED httplint_agrees_on_rfc_storability: httplint (pip install httplint) missing"
        );
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

/// `latscope diagnose --no-load` of `url`.
fn diagnose(url: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "diagnose",
        "--json",
        "--no-save",
        "--no-load",
        "-n",
        "3",
        url,
    ];
    args.extend_from_slice(extra);
    run_json_within(&args, std::time::Duration::from_secs(60))
}

/// Varnish + an origin sending `no-cache` + ETag (issue 13.2): the miss is explained
/// by the origin's `no-cache` (the built-in VCL makes it hit-for-miss), not by a
/// missing cache rule; RFC 9111 still lets a shared cache store it (revalidating each
/// use), which the audit says apart from the default. `public, max-age=600` through
/// the same Varnish: hits, named Varnish, and neither finding.
#[test]
fn varnish_miss_is_explained_by_the_origin() {
    if !installed("varnishd") || !installed("python3") {
        eprintln!("SKIPPED varnish_miss_is_explained_by_the_origin: varnishd or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::varnish(o.port);
    let v = diagnose(
        &format!("http://127.0.0.1:{}/v/nocache-etag/d", c.port),
        &[],
    );
    let f = finding(&v, "cdn-not-caching");
    let title = f["title"].as_str().unwrap();
    assert!(title.starts_with("Varnish answered MISS"), "{title}");
    assert!(title.contains("no-cache"), "{title}");
    assert!(
        !f["advice"].as_str().unwrap().contains("add a cache rule"),
        "{f}"
    );
    assert_eq!(f["evidence"]["cache"], "varnish");
    let cache = &v["cache"];
    assert_eq!(cache["shared_cache"]["rfc_storable"], true, "{cache}");
    assert_eq!(cache["shared_cache"]["revalidate_every_use"], true);
    assert_eq!(cache["default_caches"]["varnish"], "hit-for-miss");
    assert_eq!(cache["default_caches"]["apache"], "revalidate");
    let n = finding(&v, "not-shared-cacheable");
    assert!(
        n["title"]
            .as_str()
            .unwrap()
            .starts_with("RFC 9111 lets a shared cache store"),
        "{n}"
    );

    let v = diagnose(&format!("http://127.0.0.1:{}/v/public/d", c.port), &[]);
    assert_eq!(v["cache"]["cache"], "varnish", "{}", v["cache"]);
    assert!(v["cache"]["hits"].as_u64().unwrap() >= 3, "{}", v["cache"]);
    for id in [
        "cdn-not-caching",
        "not-shared-cacheable",
        "cached-set-cookie",
    ] {
        assert!(!ids(&v).contains(&id.to_string()), "{id}: {:?}", ids(&v));
    }
    let s = finding(&v, "cache-status");
    assert!(s["title"].as_str().unwrap().contains("Varnish"), "{s}");
}

/// Apache mod_cache stores a response with Set-Cookie and replays that one cookie
/// to every visitor (issue 13.5; RFC 9111 §7.3 does not forbid storing it): the same
/// session value comes back on cached answers → `cached-set-cookie` (crit), the
/// cookie's value never printed, and no "will not store" beside the hits. A public
/// page without a cookie through the same Apache: quiet.
#[test]
fn apache_replaying_a_session_cookie_is_crit() {
    if !installed("apache2") || !installed("python3") {
        eprintln!("SKIPPED apache_replaying_a_session_cookie_is_crit: apache2 or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::apache(o.port, false);
    let url = format!("http://127.0.0.1:{}/v/public-cookie/d", c.port);
    let sid = get(c.port, "/v/public-cookie/d", &[])
        .header("set-cookie")
        .to_string();
    let v = diagnose(&url, &[]);
    let f = finding(&v, "cached-set-cookie");
    assert_eq!(f["severity"], "crit");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .starts_with("Apache mod_cache replays"),
        "{f}"
    );
    assert_eq!(f["evidence"]["cookies"], "SESSID");
    let value = sid.split(';').next().unwrap().split('=').nth(1).unwrap();
    assert!(
        !v.to_string().contains(value),
        "the cookie value leaked into the JSON"
    );
    assert!(
        !ids(&v).contains(&"not-shared-cacheable".to_string()),
        "{:?}",
        ids(&v)
    );
    assert_eq!(v["cache"]["cache"], "apache", "{}", v["cache"]);

    let v = diagnose(&format!("http://127.0.0.1:{}/v/public/d", c.port), &[]);
    assert!(
        !ids(&v).contains(&"cached-set-cookie".to_string()),
        "{:?}",
        ids(&v)
    );
    assert!(v["cache"]["hits"].as_u64().unwrap() >= 3, "{}", v["cache"]);
}

/// Apache with `CacheDetailHeader on` (issue 13.5, name the cause): a page with no
/// freshness and no validators misses, and latscope quotes Apache's own explanation
/// (X-Cache-Detail) instead of guessing.
#[test]
fn apache_miss_quotes_its_own_explanation() {
    if !installed("apache2") || !installed("python3") {
        eprintln!("SKIPPED apache_miss_quotes_its_own_explanation: apache2 or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::apache(o.port, true);
    let v = diagnose(&format!("http://127.0.0.1:{}/v/none/d", c.port), &[]);
    let f = finding(&v, "cdn-not-caching");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.starts_with("Apache mod_cache answered MISS"),
        "{title}"
    );
    assert!(title.contains("No Last-Modified; Etag; Expires"), "{title}");
    let detail = v["cache"]["cache_detail"].as_str().unwrap();
    assert!(detail.starts_with("No Last-Modified"), "{detail}");
}

/// `latscope load --json` through `port`'s `path` for 2 s on 2 connections.
fn load(port: u16, path: &str) -> Value {
    let url = format!("http://127.0.0.1:{port}{path}");
    run_json_within(
        &["load", "--json", "--no-save", "-d", "2s", "-c", "2", &url],
        std::time::Duration::from_secs(60),
    )
}

/// One detector for audit and load (issue 13.5, "hits the load section cannot
/// see"): the wiki story's `public, s-maxage=1, max-age=0` through Varnish — Age
/// stays 0 and only the two ids in X-Varnish show the hits — and nginx's
/// X-Cache-Status, and Apache mod_cache whose only sign is `Age` (RFC 9111 §5.1):
/// the load JSON's `cache` object counts the hits, names the cache, and agrees with
/// the audit's repeated GETs.
#[test]
fn load_and_audit_see_the_same_hits() {
    let servers = ["varnishd", "nginx", "apache2", "python3"];
    if !servers.iter().all(|s| installed(s)) {
        eprintln!("SKIPPED load_and_audit_see_the_same_hits: one of {servers:?} missing");
        return;
    }
    let o = origin();
    for (name, cache) in [
        ("varnish", caches::varnish(o.port)),
        ("nginx", caches::nginx(o.port)),
        ("apache", caches::apache(o.port, false)),
    ] {
        let path = format!("/v/smaxage1/{name}");
        let v = load(cache.port, &path);
        let c = &v["cache"];
        assert_eq!(c["cache"], name, "{c}");
        let ok = v["ok"].as_u64().unwrap();
        let hits = c["hits"].as_u64().unwrap();
        assert!(ok > 50, "{v}");
        // s-maxage=1: at most a few origin fetches per second of the run.
        assert!(c["hit_ratio"].as_f64().unwrap() > 0.9, "{c}");
        assert_eq!(
            hits + c["misses"].as_u64().unwrap() + c["unknown"].as_u64().unwrap(),
            ok
        );
        let d = diagnose(
            &format!("http://127.0.0.1:{}/v/public/{name}-d", cache.port),
            &[],
        );
        assert_eq!(d["cache"]["cache"], name, "{}", d["cache"]);
        assert!(d["cache"]["hits"].as_u64().unwrap() >= 3, "{}", d["cache"]);
        // The diagnose ramp counts with the same detector as the audit.
        let url = format!("http://127.0.0.1:{}/v/public/{name}-r", cache.port);
        let r = run_json_within(
            &[
                "diagnose",
                "--json",
                "--no-save",
                "-n",
                "3",
                "--max-connections",
                "2",
                "--step",
                "300ms",
                &url,
            ],
            std::time::Duration::from_secs(60),
        );
        let lc = &r["load"]["cache"];
        assert_eq!(lc["cache"], name, "{lc}");
        assert!(lc["hit_ratio"].as_f64().unwrap() > 0.9, "{lc}");
        assert_eq!(r["cache"]["load_hit_ratio"], lc["hit_ratio"]);
    }
}

/// Apache's mod_deflate appends `-gzip` to the ETag of what it compresses, and the
/// origin's If-None-Match check no longer matches (issue 13.5): `no-304` fires and
/// names the compression suffix as the likely cause (RFC 9110 §8.8.3: a different
/// representation gets a different entity tag, so the origin must compare without
/// it). Straight to the origin, 304s work and `no-304` is quiet.
#[test]
fn no_304_names_the_compression_suffix() {
    if !installed("apache2") || !installed("python3") {
        eprintln!("SKIPPED no_304_names_the_compression_suffix: apache2 or python3 missing");
        return;
    }
    let o = origin();
    let a = caches::apache_with(o.port, false, "AddOutputFilterByType DEFLATE text/html\n");
    let v = diagnose(&format!("http://127.0.0.1:{}/v/public/gz", a.port), &[]);
    let f = finding(&v, "no-304");
    assert_eq!(f["evidence"]["etag_suffix"], "gzip", "{f}");
    assert!(
        f["advice"].as_str().unwrap().contains("DeflateAlterETag"),
        "{f}"
    );
    let v = diagnose(&format!("http://127.0.0.1:{}/v/public/gz", o.port), &[]);
    assert!(!ids(&v).contains(&"no-304".to_string()), "{:?}", ids(&v));
}

/// `Vary: User-Agent` (issue 13.3) fires `vary-fragments` and the audit notes the
/// heuristic freshness of a Last-Modified-only page (RFC 9111 §4.2.2; Varnish's
/// default TTL 120 s), straight against the origin; `public, max-age=600` is quiet on
/// both.
#[test]
fn vary_and_heuristic_freshness_notes() {
    if !installed("python3") {
        eprintln!("SKIPPED vary_and_heuristic_freshness_notes: python3 missing");
        return;
    }
    let o = origin();
    let url = |v: &str| format!("http://127.0.0.1:{}/v/{v}/notes", o.port);
    let v = diagnose(&url("vary-ua"), &[]);
    let f = finding(&v, "vary-fragments");
    assert_eq!(f["evidence"]["headers"], "User-Agent", "{f}");
    let v = diagnose(&url("lm-only"), &[]);
    let note = v["cache"]["freshness_note"].as_str().unwrap();
    assert!(
        note.contains("10 % of the time since Last-Modified (24 h)"),
        "{note}"
    );
    assert!(
        note.contains("Varnish's built-in VCL keeps it 120 s"),
        "{note}"
    );
    assert!(
        note.contains("nginx proxy_cache does not store it"),
        "{note}"
    );
    assert_eq!(v["cache"]["shared_cache"]["heuristic"], true);
    assert_eq!(v["cache"]["default_caches_ttl_s"]["varnish"], 120);
    let v = diagnose(&url("public"), &[]);
    assert!(v["cache"]["freshness_note"].is_null(), "{}", v["cache"]);
    assert!(
        !ids(&v).contains(&"vary-fragments".to_string()),
        "{:?}",
        ids(&v)
    );
}

/// A 304 that carries a body (issue 13.3; RFC 9110 §15.4.5: a 304 ends at its
/// head): the bytes after it are read as the next response on the connection, so
/// `no-304` fires naming it, where the audit used to record an ok 304 with no body.
/// A proper 304 from the same origin: quiet.
#[test]
fn a_304_with_a_body_is_flagged() {
    if !installed("python3") {
        eprintln!("SKIPPED a_304_with_a_body_is_flagged: python3 missing");
        return;
    }
    let o = origin();
    let v = diagnose(&format!("http://127.0.0.1:{}/v/304-body/x", o.port), &[]);
    let f = finding(&v, "no-304");
    assert_eq!(f["evidence"]["excess_body"], 1, "{f}");
    assert!(
        f["title"].as_str().unwrap().contains("304 carrying a body"),
        "{f}"
    );
    assert_eq!(v["cache"]["if_none_match"]["ok"], false);
    let v = diagnose(&format!("http://127.0.0.1:{}/v/public/x", o.port), &[]);
    assert!(!ids(&v).contains(&"no-304".to_string()), "{:?}", ids(&v));
    assert_eq!(v["cache"]["if_none_match"]["ok"], true);
}

/// nginx proxy_cache without any status header (issue 13.5): with `--origin` the
/// audit infers the hits from timing — repeated GETs far faster than the origin's
/// 60 ms — and labels them `inferred`; without `--origin` it claims nothing.
#[test]
fn hits_are_inferred_from_timing_with_origin() {
    if !installed("nginx") || !installed("python3") {
        eprintln!("SKIPPED hits_are_inferred_from_timing_with_origin: nginx or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::nginx_with(o.port, false);
    let url = format!("http://127.0.0.1:{}/v/public-slow/i", c.port);
    let origin_addr = format!("127.0.0.1:{}", o.port);
    let v = diagnose(&url, &["--origin", &origin_addr]);
    let f = finding(&v, "cache-status");
    assert_eq!(f["evidence"]["source"], "inferred", "{f}");
    assert!(f["evidence"]["hits"].as_u64().unwrap() >= 3, "{f}");
    let v = diagnose(&url, &[]);
    assert!(
        !ids(&v).contains(&"cache-status".to_string()),
        "{:?}",
        ids(&v)
    );
    assert_eq!(v["cache"]["hits"], 0, "{}", v["cache"]);
}

/// Logged-in readers (issue 13.5): with `-H 'Cookie: …'`, `private` is the right
/// answer — no `not-shared-cacheable` and no "send public" advice — and Varnish
/// passing the request (its built-in VCL passes any request with a Cookie) is `info`,
/// not a problem. The same page for an anonymous reader: `not-shared-cacheable`
/// (RFC 9111 §5.2.2.7).
#[test]
fn credentialed_requests_are_not_told_to_go_public() {
    if !installed("varnishd") || !installed("python3") {
        eprintln!(
            "SKIPPED credentialed_requests_are_not_told_to_go_public: varnishd or python3 missing"
        );
        return;
    }
    let o = origin();
    let c = caches::varnish(o.port);
    let url = format!("http://127.0.0.1:{}/v/private/cred", c.port);
    let v = diagnose(&url, &["-H", "Cookie: session=reader"]);
    assert!(
        !ids(&v).contains(&"not-shared-cacheable".to_string()),
        "{:?}",
        ids(&v)
    );
    let f = finding(&v, "cdn-not-caching");
    assert_eq!(f["severity"], "info", "{f}");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("request cookie/authorization"),
        "{f}"
    );
    let v = diagnose(&url, &[]);
    let f = finding(&v, "not-shared-cacheable");
    assert!(
        f["title"].as_str().unwrap().contains("(RFC 9111): private"),
        "{f}"
    );
}

/// The probe's first request through a cache is the miss that fills it (issue 13.3):
/// nginx answers it MISS in the origin's 60 ms, and `cache-status` counts it with its
/// time beside the hits of the repeated GETs.
#[test]
fn the_first_probe_request_counts_as_the_miss() {
    if !installed("nginx") || !installed("python3") {
        eprintln!("SKIPPED the_first_probe_request_counts_as_the_miss: nginx or python3 missing");
        return;
    }
    let o = origin();
    let c = caches::nginx(o.port);
    let v = diagnose(
        &format!("http://127.0.0.1:{}/v/public-slow/first", c.port),
        &[],
    );
    assert_eq!(
        v["probe"]["first_request"]["cache"], "miss",
        "{}",
        v["probe"]["first_request"]
    );
    let f = finding(&v, "cache-status");
    assert_eq!(f["evidence"]["misses"], 1, "{f}");
    assert!(
        f["evidence"]["miss_ttfb_ms"].as_f64().unwrap() >= 50.0,
        "{f}"
    );
    assert!(f["evidence"]["hits"].as_u64().unwrap() >= 3, "{f}");
    assert_eq!(f["evidence"]["source"], "x-cache-status", "{f}");
}
