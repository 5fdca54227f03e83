//! The cache conformance suite, part two (issue 13): the findings and numbers a user
//! sees through real Varnish, nginx and Apache caches in front of the Python origin
//! (tests/util_caches.rs), each both ways. Part one (tests/caches.rs) checks the
//! defaults model and RFC 9111 answers variant by variant.

use serde_json::Value;

use crate::findings::{finding, ids};
use crate::util::run_json_within;
use crate::util_caches::{self as caches, get, origin};
use crate::util_require::require;

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
    if !require("varnishd") || !require("python3") {
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
    if !require("apache2") || !require("python3") {
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
    if !require("apache2") || !require("python3") {
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
    if !servers.iter().all(|s| require(s)) {
        return;
    }
    let o = origin();
    // The three caches at once, each on paths of its own.
    let checks = [
        ("varnish", caches::varnish(o.port)),
        ("nginx", caches::nginx(o.port)),
        ("apache", caches::apache(o.port, false)),
    ]
    .map(|(name, cache)| {
        std::thread::spawn(move || {
            // The whole server moves in (not just its port), and stops when done.
            let cache = cache;
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
        })
    });
    for check in checks {
        if let Err(panic) = check.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Apache's mod_deflate appends `-gzip` to the ETag of what it compresses, and the
/// origin's If-None-Match check no longer matches (issue 13.5): `no-304` fires and
/// names the compression suffix as the likely cause (RFC 9110 §8.8.3: a different
/// representation gets a different entity tag, so the origin must compare without
/// it). Straight to the origin, 304s work and `no-304` is quiet.
#[test]
fn no_304_names_the_compression_suffix() {
    if !require("apache2") || !require("python3") {
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
    if !require("python3") {
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
    if !require("python3") {
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
    if !require("nginx") || !require("python3") {
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
    if !require("varnishd") || !require("python3") {
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
/// time beside the hits of the repeated GETs — and prices it: a hit instead of a miss
/// saves miss − hit TTFB (≈60 ms of ≈60 ms) per cache miss.
#[test]
fn the_first_probe_request_counts_as_the_miss() {
    if !require("nginx") || !require("python3") {
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
    let (hit, miss) = (
        f["evidence"]["hit_ttfb_ms"].as_f64().unwrap(),
        f["evidence"]["miss_ttfb_ms"].as_f64().unwrap(),
    );
    let saving = f["saving_ms"].as_f64().expect("cache-status is priced");
    assert!(
        (saving - (miss - hit)).abs() < 0.01 && saving >= 45.0,
        "{f}"
    );
    assert_eq!(f["saving_of_ms"].as_f64(), Some(miss), "{f}");
    assert_eq!(f["saving_basis"], "per miss", "{f}");
}
