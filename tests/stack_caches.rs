//! Issue 32: the cache's own advice, on the real cache, names exactly the blockers
//! that cache has for a response and nothing for a response it keeps. One origin
//! (tests/data/cache_origin.py) with the variants of RFC 9111 §3 (storing) and
//! §5.2.2 (response directives); nginx proxy_cache, Varnish's built-in VCL and
//! Apache mod_cache_disk in front, one test each, in parallel (5 diagnoses of
//! `-n 3` each, ≈6 s per cache).

use std::collections::BTreeSet;

use crate::util::diagnose_json;
use crate::util_caches::{apache, apache_with, nginx, origin, varnish, Server};
use crate::util_require::require;
use crate::util_stack::{advice_only_for_detected, role};

/// The cache topics of `cache`'s advice on the two cache findings for `/v/<variant>/`.
fn topics(c: &Server, cache: &str, variant: &str) -> (serde_json::Value, BTreeSet<String>) {
    let url = format!("http://127.0.0.1:{}/v/{variant}/stack", c.port);
    let doc = diagnose_json(&[&url, "-n", "3"]);
    advice_only_for_detected(&doc);
    assert_eq!(role(&doc, "cache"), cache, "{variant}: {}", doc["stack"]);
    let mut out = BTreeSet::new();
    for f in doc["findings"].as_array().unwrap() {
        if f["id"] != "cdn-not-caching" && f["id"] != "not-shared-cacheable" {
            continue;
        }
        for a in f["advice_stack"].as_array().into_iter().flatten() {
            if a["stack"] == cache && a["role"] == "cache" {
                out.insert(a["topic"].as_str().unwrap().to_string());
            }
        }
    }
    (doc, out)
}

/// Whether the cache answered every repeated GET from the origin.
fn missed(doc: &serde_json::Value) -> bool {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "cdn-not-caching")
}

/// Runs each `(variant, expected topics)` against `c` in front of the origin.
fn check(c: &Server, cache: &str, cases: &[(&str, &[&str])]) {
    for (variant, want) in cases {
        let (doc, got) = topics(c, cache, variant);
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{cache} on {variant}: {}", doc["findings"]);
        // A cache that names no blocker keeps the page: no miss finding either.
        assert_eq!(missed(&doc), !want.is_empty(), "{cache} on {variant}");
    }
}

/// nginx proxy_cache (no `proxy_cache_valid`): no lifetime, `max-age=0`, `private`
/// and `Vary: *` each name their own blocker; `public, max-age=600` none.
#[test]
fn nginx_proxy_cache_blockers() {
    if !require("python3") || !require("nginx") {
        return;
    }
    let o = origin();
    let c = nginx(o.port);
    check(
        &c,
        "nginx",
        &[
            ("none", &["cache:freshness"]),
            ("maxage0", &["cache:freshness"]),
            ("private", &["cache:private"]),
            ("vary-star", &["cache:vary-star"]),
            ("public", &[]),
        ],
    );
}

/// Varnish's built-in VCL: with no lifetime it keeps the page `default_ttl` (120 s),
/// so no advice; `max-age=0`, `private` and `Vary: *` each name their blocker.
#[test]
fn varnish_blockers() {
    if !require("python3") || !require("varnishd") {
        return;
    }
    let o = origin();
    let c = varnish(o.port);
    check(
        &c,
        "varnish",
        &[
            ("none", &[]),
            ("maxage0", &["cache:freshness"]),
            ("private", &["cache:private"]),
            ("vary-star", &["cache:vary-star"]),
            ("public", &[]),
        ],
    );
}

/// Apache mod_cache_disk with its defaults: an answer with no lifetime, validator
/// or Last-Modified is not kept (cache:freshness), nor `private`; `public,
/// max-age=600` is. Following Apache's freshness row (`CacheIgnoreNoLastMod On`,
/// `CacheDefaultExpire 600`) keeps the first: no advice, no miss.
#[test]
fn apache_mod_cache_blockers() {
    if !require("python3") || !require("apache2") {
        return;
    }
    let o = origin();
    let c = apache(o.port, true);
    check(
        &c,
        "apache",
        &[
            ("none", &["cache:freshness"]),
            ("private", &["cache:private"]),
            ("public", &[]),
        ],
    );
    drop(c);
    let c = apache_with(
        o.port,
        true,
        "CacheHeader on\nCacheDetailHeader on\nCacheIgnoreNoLastMod On\nCacheDefaultExpire 600\n",
    );
    check(&c, "apache", &[("none", &[])]);
}
