//! HTTP caching rules over the cache audit: `not-shared-cacheable` (httplint's
//! storability plus Varnish's hit-for-miss triggers, and the Set-Cookie check REDbot
//! lacks), `no-validators` and `no-304` (a real conditional GET must come back 304
//! with no body).

use super::ms;
use crate::diagnose::cache::{has_validators, shared_unstorable, CacheControl, Unstorable};
use crate::diagnose::facts::{CacheFacts, ConditionalFacts};
use crate::diagnose::finding::{Category, Finding, Severity};

fn ok_get(c: &CacheFacts) -> bool {
    c.get && (200..300).contains(&c.status)
}

/// `not-shared-cacheable`: a shared cache (CDN, Varnish) will not store this response.
pub fn not_shared_cacheable(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) {
        return None;
    }
    let mut reasons = shared_unstorable(c.get, c.status, &c.headers, !c.anonymous);
    if !c.anonymous {
        // A cookie set on a logged-in request is expected.
        reasons.retain(|r| *r != Unstorable::SetCookie);
    }
    if reasons.is_empty() {
        return None;
    }
    let names: Vec<String> = reasons
        .iter()
        .map(|r| match r {
            Unstorable::SetCookie => "Set-Cookie on an anonymous GET".to_string(),
            other => other.as_str().to_string(),
        })
        .collect();
    let fixes: Vec<&str> = reasons.iter().map(|r| r.fix()).collect();
    let cc = c.headers.get("cache-control").unwrap_or_default();
    Some(
        Finding::new(
            "not-shared-cacheable",
            Category::Cache,
            Severity::Warn,
            format!(
                "a shared cache will not store this response: {}",
                names.join(", ")
            ),
        )
        .text(
            "reasons",
            reasons
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        )
        .text("cache_control", cc)
        .count("set_cookie", c.headers.get_all("set-cookie").count() as u64)
        .advice(format!(
            "for anonymous readers: {} (Varnish and most CDNs pass such responses to the \
             origin every time)",
            fixes.join("; ")
        )),
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

/// `no-304`: validators are sent, but a conditional GET is not answered 304 without a
/// body.
pub fn no_304(c: &CacheFacts) -> Option<Finding> {
    if !ok_get(c) || !has_validators(&c.headers) {
        return None;
    }
    let bad = |r: &Option<ConditionalFacts>| r.filter(|r| r.status != 304 || r.body_bytes > 0);
    let (inm, ims) = (bad(&c.if_none_match), bad(&c.if_modified_since));
    let worst = inm.or(ims)?;
    let which = match (inm.is_some(), ims.is_some()) {
        (true, true) => "If-None-Match and If-Modified-Since",
        (true, false) => "If-None-Match",
        _ => "If-Modified-Since",
    };
    let what = if worst.status == 304 {
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
    .num("time_ms", worst.time_ms)
    .opt_num("full_time_ms", c.full_time_ms)
    .advice(
        "answer If-None-Match (matching the ETag) and If-Modified-Since (not newer than \
         Last-Modified) with 304 Not Modified and no body; many frameworks do it with a \
         conditional-GET middleware",
    );
    if let Some(r) = c.if_none_match {
        f = f.count("inm_status", r.status as u64);
    }
    if let Some(r) = c.if_modified_since {
        f = f.count("ims_status", r.status as u64);
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::Headers;

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
    /// anonymous GET; a logged-in request's cookie does not count.
    #[test]
    fn not_shared_cacheable_both_ways() {
        let mut c = facts(&[
            ("cache-control", "private, max-age=0, must-revalidate"),
            ("set-cookie", "lab_session=abc; Path=/"),
            ("etag", "\"x\""),
        ]);
        let f = not_shared_cacheable(&c).expect("fires");
        assert_eq!(
            f.evidence_str("reasons"),
            Some("private, ttl<=0, set-cookie")
        );
        assert!(
            f.title.contains("Set-Cookie on an anonymous GET"),
            "{}",
            f.title
        );
        assert_eq!(f.evidence_f64("set_cookie"), Some(1.0));
        c.anonymous = false;
        assert_eq!(
            not_shared_cacheable(&c).unwrap().evidence_str("reasons"),
            Some("private, ttl<=0")
        );
        assert!(not_shared_cacheable(&public()).is_none());
        let vary = facts(&[("vary", "*"), ("cache-control", "max-age=60")]);
        assert_eq!(
            not_shared_cacheable(&vary).unwrap().evidence_str("reasons"),
            Some("vary-star")
        );
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
}
