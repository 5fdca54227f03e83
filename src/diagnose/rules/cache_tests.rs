//! Tests of the caching rules (`cache.rs`).

use super::*;
use crate::diagnose::facts::RepeatFacts;

fn facts(pairs: &[(&str, &str)]) -> CacheFacts {
    CacheFacts {
        get: true,
        anonymous: true,
        status: 200,
        headers: Headers::from_pairs(pairs),
        full_time_ms: Some(70.0),
        ..CacheFacts::default()
    }
}

fn cond(status: u16, body: u64) -> Option<ConditionalFacts> {
    Some(ConditionalFacts {
        status,
        body_bytes: body,
        time_ms: 20.0,
        excess_body: false,
    })
}

/// The lab's `/cache/public` headers, answering 304s properly.
fn public() -> CacheFacts {
    let mut c = facts(&[
        ("cache-control", "public, max-age=60, s-maxage=300"),
        ("etag", "\"lab-public-1\""),
        ("last-modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("vary", "Accept-Encoding"),
    ]);
    c.if_none_match = cond(304, 0);
    c.if_modified_since = cond(304, 0);
    c
}

/// The lab's `/cache/private-cookie`: private, max-age=0 and Set-Cookie on an
/// anonymous GET (RFC 9111 §5.2.2.7: a shared cache must not store `private`); a
/// logged-in request is quiet (`private` is right for it).
#[test]
fn not_shared_cacheable_both_ways() {
    let mut c = facts(&[
        ("cache-control", "private, max-age=0, must-revalidate"),
        ("set-cookie", "lab_session=abc; Path=/"),
        ("etag", "\"x\""),
    ]);
    let f = not_shared_cacheable(&c).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(
        f.evidence_str("reasons"),
        Some("private, ttl<=0, set-cookie")
    );
    assert!(
        f.title
            .starts_with("a shared cache may not store this response (RFC 9111): private")
            && f.title.contains("Set-Cookie on an anonymous GET"),
        "{}",
        f.title
    );
    assert_eq!(f.evidence_f64("set_cookie"), Some(1.0));
    c.anonymous = false;
    c.cookie = true;
    assert!(not_shared_cacheable(&c).is_none());
    assert!(not_shared_cacheable(&public()).is_none());
    let vary = facts(&[("vary", "*"), ("cache-control", "max-age=60")]);
    assert_eq!(
        not_shared_cacheable(&vary).unwrap().evidence_str("reasons"),
        Some("vary-star")
    );
}

/// RFC 9111 vs the defaults: `max-age=0, must-revalidate` + ETag and `no-cache` +
/// ETag are the same thing (storable, revalidated on every use, §4.2.4 and
/// §5.2.2.4) and get the same verdict (info); `public, max-age=600` + Set-Cookie
/// is storable (§7.3) but Varnish and nginx do not keep it (warn); hits seen in
/// front silence the rule.
#[test]
fn rfc_apart_from_defaults() {
    let mut verdicts = Vec::new();
    for cc in ["max-age=0, must-revalidate", "no-cache"] {
        let mut c = facts(&[("cache-control", cc), ("etag", "\"a\"")]);
        c.if_none_match = cond(304, 0);
        let f = not_shared_cacheable(&c).expect(cc);
        assert_eq!(f.severity, Severity::Info, "{cc}");
        assert!(
            f.title.starts_with(
                "RFC 9111 lets a shared cache store this response and revalidate it on every use"
            ),
            "{}",
            f.title
        );
        assert!(f.title.contains("Varnish's built-in VCL"), "{}", f.title);
        assert_eq!(f.evidence_str("rfc_storable"), Some("yes"));
        verdicts.push([
            f.evidence_str("varnish").unwrap().to_string(),
            f.evidence_str("apache").unwrap().to_string(),
            f.evidence_str("nginx").unwrap().to_string(),
        ]);
    }
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], ["hit-for-miss", "revalidate", "pass"]);
    let c = facts(&[
        ("cache-control", "public, max-age=600"),
        ("set-cookie", "s=1"),
    ]);
    let f = not_shared_cacheable(&c).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert!(f
        .title
        .starts_with("RFC 9111 lets a shared cache store this response, but"));
    assert_eq!(f.evidence_str("apache"), Some("hit"));
    assert_eq!(f.evidence_str("varnish"), Some("hit-for-miss"));
    let mut cached = c.clone();
    cached.repeats = vec![
        RepeatFacts {
            headers: Headers::from_pairs(&[("age", "0")]),
            ttfb_ms: 1.0
        };
        3
    ];
    assert!(not_shared_cacheable(&cached).is_none());
}

/// One session cookie replayed from cache fires crit (names only, no values); a
/// fresh cookie per response, or the same cookie without a cache, is quiet.
#[test]
fn cached_set_cookie_both_ways() {
    let r = |pairs: &[(&str, &str)]| RepeatFacts {
        headers: Headers::from_pairs(pairs),
        ttfb_ms: 1.0,
    };
    let mut c = facts(&[]);
    c.repeats = vec![
        r(&[("set-cookie", "PHPSESSID=secret1; path=/")]),
        r(&[("set-cookie", "PHPSESSID=secret1; path=/"), ("age", "1")]),
        r(&[("set-cookie", "PHPSESSID=secret1; path=/"), ("age", "2")]),
    ];
    let f = cached_set_cookie(&c).expect("fires");
    assert_eq!(f.severity, Severity::Crit);
    assert_eq!(f.evidence_f64("replayed"), Some(2.0));
    assert_eq!(f.evidence_str("cookies"), Some("PHPSESSID"));
    let all = format!("{f:?}");
    assert!(!all.contains("secret1"), "{all}");
    let fresh = |i: usize| format!("PHPSESSID=s{i}; path=/");
    let mut c2 = c.clone();
    for (i, rep) in c2.repeats.iter_mut().enumerate() {
        rep.headers.0[0].1 = fresh(i);
    }
    assert!(cached_set_cookie(&c2).is_none());
    let mut c3 = c.clone();
    for rep in &mut c3.repeats {
        rep.headers.0.retain(|(n, _)| n != "age");
    }
    assert!(cached_set_cookie(&c3).is_none());
}

/// `Vary: User-Agent` on a storable response fires (RFC 9111 §4.1: one copy per
/// value); `Vary: Accept-Encoding` and an unstorable response are quiet.
#[test]
fn vary_fragments_both_ways() {
    let c = facts(&[
        ("cache-control", "max-age=60"),
        ("vary", "Accept-Encoding, User-Agent"),
    ]);
    let f = vary_fragments(&c).expect("fires");
    assert_eq!(f.evidence_str("headers"), Some("User-Agent"));
    assert!(vary_fragments(&public()).is_none());
    let p = facts(&[("cache-control", "private"), ("vary", "User-Agent")]);
    assert!(vary_fragments(&p).is_none());
}

/// The lab's `/cache/no-validators` fires; public and no-store responses don't.
#[test]
fn no_validators_both_ways() {
    let f = no_validators(&facts(&[("cache-control", "no-cache")])).expect("fires");
    assert_eq!(f.evidence_f64("full_time_ms"), Some(70.0));
    assert!(f.advice.contains("If-None-Match"));
    assert!(no_validators(&public()).is_none());
    assert!(no_validators(&facts(&[("cache-control", "no-store")])).is_none());
}

/// A conditional GET answered 200 (or 304 with a body) fires; proper 304s don't.
#[test]
fn no_304_both_ways() {
    let mut c = public();
    c.if_none_match = cond(200, 2048);
    let f = no_304(&c).expect("fires");
    assert_eq!(f.evidence_f64("status"), Some(200.0));
    assert_eq!(f.evidence_f64("body_bytes"), Some(2048.0));
    assert_eq!(f.evidence_f64("ims_status"), Some(304.0));
    assert!(f.title.contains("If-None-Match)"), "{}", f.title);
    c.if_none_match = cond(304, 0);
    c.if_modified_since = cond(304, 10);
    assert!(no_304(&c)
        .unwrap()
        .title
        .contains("304 with a 10-byte body"));
    assert!(no_304(&public()).is_none());
}

/// Issue 30 item 5: with `--origin` and no cache header, repeated GETs far faster
/// than the origin (1 ms vs 60 ms) are inferred hits; as slow as the origin (a
/// proxy without a cache) infers nothing — never a MISS from timing alone — and
/// neither does a gain inside the noise (55 of 60 ms).
#[test]
fn timing_infers_hits_never_misses() {
    let with = |ttfb: f64| {
        let mut c = facts(&[("cache-control", "public, max-age=60")]);
        c.origin_ttfb_ms = Some(60.0);
        c.repeats = (0..4)
            .map(|_| RepeatFacts {
                headers: Headers::from_pairs(&[("cache-control", "public, max-age=60")]),
                ttfb_ms: ttfb,
            })
            .collect();
        c
    };
    let hits = statuses(&with(1.0));
    assert!(hits.iter().all(|s| s.state == CacheState::Hit), "{hits:?}");
    assert_eq!(hits[0].layers[0].source, "inferred");
    for ttfb in [61.0, 55.0, 120.0] {
        let c = with(ttfb);
        let s = statuses(&c);
        assert!(s.iter().all(|s| s.state == CacheState::Unknown), "{s:?}");
        assert!(crate::diagnose::rules::cdn::cdn_not_caching(&c).is_none());
        assert!(crate::diagnose::rules::cdn::cache_status(&c).is_none());
    }
}
