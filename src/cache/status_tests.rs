//! Tests of the cache-status detector (`status.rs`).

use super::*;

fn state(pairs: &[(&str, &str)]) -> CacheState {
    cache_status(&Headers::from_pairs(pairs)).state
}

/// Cloudflare's vocabulary maps onto the five verdicts.
#[test]
fn cloudflare_statuses() {
    assert_eq!(state(&[("CF-Cache-Status", "HIT")]), CacheState::Hit);
    assert_eq!(state(&[("cf-cache-status", "MISS")]), CacheState::Miss);
    assert_eq!(state(&[("cf-cache-status", "EXPIRED")]), CacheState::Miss);
    assert_eq!(
        state(&[("cf-cache-status", "DYNAMIC")]),
        CacheState::Dynamic
    );
    assert_eq!(state(&[("cf-cache-status", "BYPASS")]), CacheState::Bypass);
    assert_eq!(state(&[("cf-cache-status", "UPDATING")]), CacheState::Stale);
    assert_eq!(state(&[("cf-cache-status", "NONE")]), CacheState::Unknown);
}

/// X-Cache from Fastly (each layer), CloudFront and Akamai.
#[test]
fn x_cache_layers() {
    let s = cache_status(&Headers::from_pairs(&[("x-cache", "HIT, MISS")]));
    assert_eq!(s.state, CacheState::Hit);
    assert_eq!(s.layers.len(), 2);
    assert_eq!(s.layers[1].state, CacheState::Miss);
    assert_eq!(state(&[("x-cache", "MISS, MISS")]), CacheState::Miss);
    assert_eq!(
        state(&[("X-Cache", "Miss from cloudfront")]),
        CacheState::Miss
    );
    assert_eq!(
        state(&[("X-Cache", "Hit from cloudfront")]),
        CacheState::Hit
    );
    assert_eq!(
        state(&[("X-Cache", "RefreshHit from cloudfront")]),
        CacheState::Hit
    );
    assert_eq!(
        state(&[("x-cache", "TCP_MEM_HIT from a23-1-2-3")]),
        CacheState::Hit
    );
    assert_eq!(
        state(&[("x-cache", "TCP_MISS from a23-1-2-3")]),
        CacheState::Miss
    );
    assert_eq!(
        state(&[("x-cache", "TCP_REFRESH_FAIL_HIT")]),
        CacheState::Stale
    );
    assert_eq!(
        state(&[("x-cache", "NotCacheable from child, Miss from parent")]),
        CacheState::Miss
    );
}

/// The source is the header the verdict came from: a hit only `Age` reports is
/// from `age`, not from the `cf-cache-status` MISS listed before it.
#[test]
fn source_is_where_the_verdict_came_from() {
    let s = cache_status(&Headers::from_pairs(&[
        ("cf-cache-status", "MISS"),
        ("age", "30"),
    ]));
    assert_eq!(s.state, CacheState::Hit);
    assert_eq!(s.source(), "age");
    let s = cache_status(&Headers::from_pairs(&[
        ("x-cache", "weird"),
        ("cf-cache-status", "DYNAMIC"),
    ]));
    assert_eq!(
        (s.state, s.source()),
        (CacheState::Dynamic, "cf-cache-status")
    );
    let s = cache_status(&Headers::from_pairs(&[("x-cache", "weird")]));
    assert_eq!((s.state, s.source()), (CacheState::Unknown, "x-cache"));
    assert_eq!(cache_status(&Headers::default()).source(), "");
}

/// X-Varnish: two ids (this request and the one that stored it) mean a hit.
#[test]
fn x_varnish_ids() {
    assert_eq!(state(&[("X-Varnish", "123 456")]), CacheState::Hit);
    assert_eq!(state(&[("X-Varnish", "32770")]), CacheState::Miss);
}

/// RFC 9211: any hit wins; otherwise the member nearest the user.
#[test]
fn rfc9211_cache_status() {
    let s = cache_status(&Headers::from_pairs(&[(
        "Cache-Status",
        "ExampleCache; hit, OtherCache; fwd=uri-miss",
    )]));
    assert_eq!(s.state, CacheState::Hit);
    assert_eq!(s.layers[1].state, CacheState::Miss);
    assert_eq!(s.source(), "cache-status");
    let st = |v| state(&[("cache-status", v)]);
    assert_eq!(
        st("Origin; fwd=uri-miss, Edge; fwd=bypass"),
        CacheState::Bypass
    );
    assert_eq!(st("Edge; fwd=stale; fwd-status=304"), CacheState::Stale);
    assert_eq!(st("Edge; hit; ttl=-12"), CacheState::Stale);
    assert_eq!(
        st("Edge; fwd=miss; stored; detail=\"a, b\""),
        CacheState::Miss
    );
}

/// Age > 0 alone says a cache served a stored copy; Age 0 says nothing.
#[test]
fn age_and_nothing() {
    assert_eq!(state(&[("age", "17")]), CacheState::Hit);
    // RFC 9111 §5.1: an Age at all means a cache answered (Apache mod_cache
    // marks its hits only so, often with Age 0).
    assert_eq!(state(&[("age", "0")]), CacheState::Hit);
    assert_eq!(
        state(&[("age", "0"), ("x-varnish", "32770")]),
        CacheState::Miss
    );
    assert_eq!(state(&[("server", "nginx")]), CacheState::Unknown);
    // The lab's /cdn/miss headers.
    assert_eq!(
        state(&[
            ("cf-cache-status", "MISS"),
            ("x-cache", "MISS"),
            ("age", "0"),
            ("via", "1.1 varnish (latscope-lab-cdn)")
        ]),
        CacheState::Miss
    );
}

/// Proxy detection and the edge that answered.
#[test]
fn proxy_and_edge() {
    let cf = Headers::from_pairs(&[("CF-RAY", "8a1b2c3d4e5f6789-SJC")]);
    assert_eq!(proxy_header(&cf), Some("cf-ray"));
    assert_eq!(edge(&cf).as_deref(), Some("Cloudflare SJC"));
    let cfront = Headers::from_pairs(&[
        ("via", "1.1 abc.cloudfront.net (CloudFront)"),
        ("x-amz-cf-pop", "SFO53-C1"),
    ]);
    assert_eq!(edge(&cfront).as_deref(), Some("CloudFront SFO53-C1"));
    let fastly = Headers::from_pairs(&[("x-served-by", "cache-iad2136-IAD, cache-sjc3125-SJC")]);
    assert_eq!(edge(&fastly).as_deref(), Some("Fastly cache-sjc3125-SJC"));
    assert_eq!(
        proxy_header(&Headers::from_pairs(&[("server", "nginx")])),
        None
    );
}

/// nginx's X-Cache-Status, Apache's X-Cache / X-Cache-Detail and a bare Age behind an
/// Apache Server header: each read, each cache named.
#[test]
fn named_caches() {
    let st = |pairs: &[(&str, &str)]| cache_status(&Headers::from_pairs(pairs));
    let n = st(&[("X-Cache-Status", "HIT")]);
    assert_eq!((n.state, n.kind), (CacheState::Hit, Some(CacheKind::Nginx)));
    assert_eq!(st(&[("x-cache-status", "EXPIRED")]).state, CacheState::Miss);
    let a = st(&[
        ("x-cache", "MISS from localhost"),
        (
            "x-cache-detail",
            "\"No Last-Modified; Etag; Expires; Cache-Control:max-age or Cache-Control:s-maxage headers\" from localhost",
        ),
    ]);
    assert_eq!(
        (a.state, a.kind),
        (CacheState::Miss, Some(CacheKind::Apache))
    );
    assert_eq!(
        apache_reason(
            &a.layers
                .iter()
                .find(|l| l.source == "x-cache-detail")
                .unwrap()
                .raw
        ),
        "No Last-Modified; Etag; Expires; Cache-Control:max-age or Cache-Control:s-maxage headers"
    );
    assert_eq!(
        st(&[("x-cache-detail", "\"cache hit\" from h")]).state,
        CacheState::Hit
    );
    assert_eq!(
        st(&[("x-cache", "REVALIDATE from h")]).state,
        CacheState::Hit
    );
    let age = st(&[("server", "Apache/2.4.71 (Debian)"), ("age", "1")]);
    assert_eq!(
        (age.state, age.kind),
        (CacheState::Hit, Some(CacheKind::Apache))
    );
    let v = st(&[("x-varnish", "5 3"), ("via", "1.1 varnish (Varnish/7.1)")]);
    assert_eq!(v.kind, Some(CacheKind::Varnish));
    // Fastly runs Varnish: its own headers name it.
    let f = st(&[
        ("via", "1.1 varnish"),
        ("x-served-by", "cache-sjc3125-SJC"),
        ("x-cache", "HIT"),
    ]);
    assert_eq!(f.kind, Some(CacheKind::Fastly));
}
