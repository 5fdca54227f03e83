//! Caching stories: `/cache/{policy}` pages with the headers a cache (or a cache
//! audit) reads, and real conditional GETs (304) where the policy has validators
//! (except `/cache/no-304`, which has them but ignores conditional requests);
//! `/cdn/{hit|miss|dynamic}` answers as a CDN edge would, a miss paying an origin
//! fetch.

use std::time::SystemTime;

use http::header::{self, HeaderName};
use http::request::Parts;
use http::{Response, StatusCode};

use super::body::{splitmix, LabBody};
use super::routes::{bad_request, dur_ms, plain, set, with_type, Resp};
use super::server::App;

/// A cache policy of `/cache/{policy}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Shared caches may keep it: public, max-age, s-maxage, ETag, Last-Modified.
    Public,
    /// Private, with a Set-Cookie on every response (defeats shared caches).
    PrivateCookie,
    /// No validators: every request is a full 200.
    NoValidators,
    /// ETag and Last-Modified, but conditional GETs still get a full 200.
    No304,
}

impl Policy {
    fn parse(s: &str) -> Option<Policy> {
        match s {
            "public" => Some(Policy::Public),
            "private-cookie" => Some(Policy::PrivateCookie),
            "no-validators" => Some(Policy::NoValidators),
            "no-304" => Some(Policy::No304),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Policy::Public => "public",
            Policy::PrivateCookie => "private-cookie",
            Policy::NoValidators => "no-validators",
            Policy::No304 => "no-304",
        }
    }

    fn cache_control(self) -> &'static str {
        match self {
            Policy::Public => "public, max-age=60, s-maxage=300",
            Policy::PrivateCookie => "private, max-age=0, must-revalidate",
            Policy::NoValidators => "no-cache",
            Policy::No304 => "public, max-age=60",
        }
    }

    fn has_validators(self) -> bool {
        self != Policy::NoValidators
    }
}

/// `/cache/{policy}`.
pub(crate) fn cache(arg: &str, parts: &Parts, app: &App) -> Resp {
    let Some(policy) = Policy::parse(arg) else {
        return bad_request(format!(
            "/cache/{arg}: unknown policy; use public, private-cookie, no-validators or no-304"
        ));
    };
    let etag = format!("\"lab-{}-{:08x}\"", policy.name(), app.nonce as u32);
    let last_modified = httpdate::fmt_http_date(app.modified);
    let fresh = policy.has_validators()
        && policy != Policy::No304
        && not_modified(parts, &etag, app.modified);
    let mut resp = if fresh {
        let mut r = Response::new(LabBody::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        with_type(
            StatusCode::OK,
            "text/html; charset=utf-8",
            LabBody::full(page(policy)),
        )
    };
    set(&mut resp, header::CACHE_CONTROL, policy.cache_control());
    if policy.has_validators() {
        set(&mut resp, header::ETAG, &etag);
        set(&mut resp, header::LAST_MODIFIED, &last_modified);
    }
    set(&mut resp, header::VARY, "Accept-Encoding");
    if policy == Policy::PrivateCookie {
        let id = splitmix(app.nonce ^ nanos_now());
        set(
            &mut resp,
            header::SET_COOKIE,
            &format!("lab_session={id:016x}; Path=/; HttpOnly; SameSite=Lax"),
        );
    }
    resp
}

/// Whether a conditional GET may be answered 304: If-None-Match wins over
/// If-Modified-Since (RFC 9110, 13.2.2); ETags compare weakly.
fn not_modified(parts: &Parts, etag: &str, modified: SystemTime) -> bool {
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let inm: Vec<_> = parts
        .headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .collect();
    if !inm.is_empty() {
        return inm
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim() == "*" || strip(t) == strip(etag));
    }
    parts
        .headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .is_some_and(|since| modified <= since)
}

/// The page a cache policy serves: about 2 KB of HTML, and about 5 KB for
/// `no-validators` — enough that compressing it would save ≥ 1.4 KiB (the demo's
/// planted `no-compression`), still within a fresh connection's first round trip.
fn page(policy: Policy) -> String {
    let mut html = format!(
        "<!doctype html>\n<html><head><title>lab page ({0})</title></head><body>\n\
         <h1>A page served with the {0} cache policy</h1>\n",
        policy.name()
    );
    let paragraphs = match policy {
        Policy::NoValidators => 70,
        Policy::Public | Policy::No304 | Policy::PrivateCookie => 24,
    };
    for i in 1..=paragraphs {
        html.push_str(&format!(
            "<p>Paragraph {i}: the content a cache would keep, if it may.</p>\n"
        ));
    }
    html.push_str("</body></html>\n");
    html
}

fn nanos_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64
}

/// `/cdn/{hit|miss|dynamic}`: headers as Cloudflare, Fastly and Varnish send them.
pub(crate) async fn cdn(arg: &str, app: &App) -> Resp {
    let (status, x_cache, origin, cache_control) = match arg {
        "hit" => ("HIT", "HIT", false, "public, max-age=300"),
        "miss" => ("MISS", "MISS", true, "public, max-age=300"),
        "dynamic" => ("DYNAMIC", "MISS", true, "private, no-store"),
        _ => {
            return bad_request(format!(
                "/cdn/{arg}: unknown; use /cdn/hit, /cdn/miss or /cdn/dynamic"
            ))
        }
    };
    let mut timing = format!("cdn-cache;desc={status}");
    if origin {
        let t0 = tokio::time::Instant::now();
        tokio::time::sleep(app.options.cdn_origin_delay).await;
        timing.push_str(&format!(", origin;dur={}", dur_ms(t0.elapsed())));
    }
    let age = if arg == "hit" {
        1 + app.start.elapsed().as_secs() % 300
    } else {
        0
    };
    let ray = splitmix(app.nonce ^ nanos_now());
    let mut resp = plain(StatusCode::OK, format!("cdn {arg}"));
    let h = HeaderName::from_static;
    set(&mut resp, h("cf-cache-status"), status);
    set(&mut resp, h("x-cache"), x_cache);
    set(&mut resp, header::AGE, &age.to_string());
    set(&mut resp, header::VIA, "1.1 varnish (latscope-lab-cdn)");
    set(&mut resp, h("cf-ray"), &format!("{ray:016x}-LAB"));
    set(&mut resp, h("x-served-by"), "cache-lab-edge1");
    set(&mut resp, header::CACHE_CONTROL, cache_control);
    set(&mut resp, h("server-timing"), &timing);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri("/cache/public");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn conditional_gets() {
        let lm = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let etag = "\"lab-public-1\"";
        assert!(not_modified(&parts(&[("if-none-match", etag)]), etag, lm));
        assert!(not_modified(
            &parts(&[("if-none-match", "\"x\", W/\"lab-public-1\"")]),
            etag,
            lm
        ));
        assert!(not_modified(&parts(&[("if-none-match", "*")]), etag, lm));
        assert!(!not_modified(
            &parts(&[("if-none-match", "\"x\"")]),
            etag,
            lm
        ));
        let date = httpdate::fmt_http_date(lm);
        assert!(not_modified(
            &parts(&[("if-modified-since", &date)]),
            etag,
            lm
        ));
        let earlier = httpdate::fmt_http_date(lm - Duration::from_secs(10));
        assert!(!not_modified(
            &parts(&[("if-modified-since", &earlier)]),
            etag,
            lm
        ));
        // If-None-Match wins: a mismatching tag means a full answer whatever the date.
        assert!(!not_modified(
            &parts(&[("if-none-match", "\"x\""), ("if-modified-since", &date)]),
            etag,
            lm
        ));
        assert!(!not_modified(&parts(&[]), etag, lm));
    }
}
