//! Stack detection and stack advice on constructed responses (the real servers are
//! in tests/stack_*.rs).

use super::*;
use crate::diagnose::facts::{CacheFacts, Facts, Headers};
use crate::diagnose::finding::{Category, Finding, Severity};

fn seen(headers: &[(&str, &str)], body: &str, case_known: bool, error_page: bool) -> Observed {
    Observed {
        status: if error_page { 404 } else { 200 },
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        case_known,
        body: body.to_string(),
        error_page,
    }
}

/// WordPress on PHP behind nginx with Varnish in front: Server, X-Powered-By, Via,
/// X-Varnish, the REST API Link and the page's generator each count, and the text
/// line reads as the issue wants it.
#[test]
fn wordpress_on_php_fpm_behind_nginx_varnish_in_front() {
    let page = seen(
        &[
            ("Server", "nginx/1.22.1"),
            ("X-Powered-By", "PHP/8.2.36"),
            ("Via", "1.1 varnish (Varnish/7.1)"),
            ("X-Varnish", "32770 3"),
            (
                "Link",
                "<http://127.0.0.1/index.php?rest_route=/>; rel=\"https://api.w.org/\"",
            ),
            ("Content-Type", "text/html; charset=UTF-8"),
        ],
        "<html><head><meta name=\"generator\" content=\"WordPress 6.1.9\" />\
         <link rel='stylesheet' href='/wp-includes/css/x.css'></head>",
        true,
        false,
    );
    let s = detect(&[page]);
    assert_eq!(s.server.as_ref().unwrap().id, "nginx");
    assert_eq!(
        s.server.as_ref().unwrap().version.as_deref(),
        Some("1.22.1")
    );
    assert_eq!(s.cache.as_ref().unwrap().id, "varnish");
    assert_eq!(s.app.as_ref().unwrap().id, "wordpress");
    assert_eq!(s.app.as_ref().unwrap().version.as_deref(), Some("6.1.9"));
    assert_eq!(s.framework.as_ref().unwrap().id, "php-fpm");
    assert!(s.proxy.is_none(), "{s:?}");
    assert_eq!(
        s.summary,
        "WordPress 6 on PHP-FPM behind nginx, Varnish in front"
    );
    let sources: Vec<&str> = s
        .evidence
        .iter()
        .filter(|e| e.id == "wordpress")
        .map(|e| e.source.as_str())
        .collect();
    assert!(sources.contains(&"meta generator"), "{sources:?}");
    assert!(sources.contains(&"link header"), "{sources:?}");
    let v = serde_json::to_value(&s).unwrap();
    for k in [
        "server",
        "proxy",
        "cache",
        "cdn",
        "app",
        "framework",
        "evidence",
    ] {
        assert!(v.get(k).is_some(), "{k} in {v}");
    }
}

/// HAProxy writes every header name in lowercase over HTTP/1.1; behind it Apache
/// runs DokuWiki (session cookie `DokuWiki`, the generator). Apache's own 404 page
/// names it too.
#[test]
fn dokuwiki_behind_apache_haproxy_at_the_edge() {
    let page = seen(
        &[
            ("server", "Apache/2.4.66 (Debian)"),
            ("set-cookie", "DokuWiki=abcdef; path=/; HttpOnly"),
            ("cache-control", "no-store, no-cache, must-revalidate"),
            ("content-type", "text/html; charset=utf-8"),
        ],
        "<meta name=\"generator\" content=\"DokuWiki\"/>",
        true,
        false,
    );
    let missing = seen(
        &[
            ("server", "Apache"),
            ("content-type", "text/html"),
            ("content-length", "9"),
        ],
        "<address>Apache/2.4.66 (Debian) Server at 127.0.0.1 Port 80</address>",
        true,
        true,
    );
    let s = detect(&[page, missing]);
    assert_eq!(s.proxy.as_ref().unwrap().id, "haproxy");
    assert_eq!(s.server.as_ref().unwrap().id, "apache");
    assert_eq!(s.app.as_ref().unwrap().id, "dokuwiki");
    // A PHP application runs on PHP (behind Apache: mod_php or FPM, not told apart).
    assert_eq!(s.framework.as_ref().unwrap().id, "php");
    assert_eq!(
        s.summary,
        "DokuWiki on PHP behind Apache httpd, HAProxy at the edge"
    );
    // Lowercase names with no server named behind them (hyper-based servers write
    // them so too): no guess.
    let bare = seen(
        &[
            ("content-type", "text/html"),
            ("date", "x"),
            ("content-length", "9"),
        ],
        "",
        true,
        false,
    );
    assert!(detect(&[bare]).proxy.is_none());
    // The same names in their usual case: no HAProxy.
    let cased = seen(
        &[
            ("Server", "nginx"),
            ("Content-Type", "text/html"),
            ("Date", "x"),
        ],
        "",
        true,
        false,
    );
    assert!(detect(&[cased]).proxy.is_none());
}

/// A server that claims nothing is not recognised: advice stays generic; CDNs name
/// themselves in their own headers; framework cookies count by name.
#[test]
fn nothing_claimed_and_cdns_and_frameworks() {
    let s = detect(&[seen(
        &[("Content-Type", "text/html")],
        "<p>hi</p>",
        true,
        false,
    )]);
    assert!(s.is_empty());
    assert!(s.summary.starts_with("not recognised"), "{}", s.summary);
    let s = detect(&[seen(
        &[
            ("server", "cloudflare"),
            ("cf-ray", "8abc-AMS"),
            ("cf-cache-status", "HIT"),
            ("set-cookie", "csrftoken=x; Path=/"),
        ],
        "",
        false,
        false,
    )]);
    assert_eq!(s.cdn.as_ref().unwrap().id, "cloudflare");
    assert!(s.server.is_none(), "a CDN is not the origin's server");
    assert_eq!(s.framework.as_ref().unwrap().id, "django");
    let s = detect(&[seen(&[("Set-Cookie", "_shop_session=x")], "", false, false)]);
    assert_eq!(s.framework.as_ref().unwrap().id, "rails");
    let s = detect(&[seen(&[], "Whitelabel Error Page", false, true)]);
    assert_eq!(s.framework.as_ref().unwrap().id, "spring");
    assert_eq!(
        detect::generators("<META content='Hugo 0.1' NAME='generator'>"),
        ["Hugo 0.1"]
    );
}

fn stack_of(cache: Option<&str>, server: &str, app: Option<&str>) -> Stack {
    let c = |id: &str| Component {
        id: id.into(),
        name: id.into(),
        version: None,
    };
    Stack {
        server: Some(c(server)),
        cache: cache.map(c),
        app: app.map(c),
        ..Stack::default()
    }
}

fn cache_facts(headers: &[(&str, &str)]) -> Facts {
    Facts {
        cache: Some(CacheFacts {
            get: true,
            anonymous: true,
            status: 200,
            headers: Headers::from_pairs(headers),
            ..CacheFacts::default()
        }),
        ..Facts::default()
    }
}

fn finding(id: &str) -> Finding {
    Finding::new(id, Category::Cache, Severity::Warn, "t".into()).advice("generic")
}

/// nginx proxy_cache refusing a page for no freshness *and* a Set-Cookie: both
/// blockers get nginx's own advice at once (proxy_cache_valid and the Set-Cookie
/// one), and WordPress' beside it; the generic advice is kept.
#[test]
fn nginx_names_every_blocker() {
    let facts = cache_facts(&[("set-cookie", "PHPSESSID=1; path=/")]);
    let stack = stack_of(Some("nginx"), "nginx", Some("wordpress"));
    let mut fs = vec![finding("not-shared-cacheable")];
    attach(&mut fs, &facts, &stack);
    let topics: Vec<(&str, &str)> = fs[0]
        .advice_stack
        .iter()
        .map(|a| (a.stack.as_str(), a.topic.as_str()))
        .collect();
    assert!(topics.contains(&("nginx", "cache:freshness")), "{topics:?}");
    assert!(
        topics.contains(&("nginx", "cache:set-cookie")),
        "{topics:?}"
    );
    assert!(
        topics.contains(&("wordpress", "cache:freshness")),
        "{topics:?}"
    );
    assert_eq!(fs[0].advice, "generic");
    let nginx: Vec<&str> = fs[0]
        .advice_stack
        .iter()
        .filter(|a| a.stack == "nginx")
        .map(|a| a.advice.as_str())
        .collect();
    assert!(nginx.iter().any(|a| a.contains("proxy_cache_valid")));
    assert!(fs[0].advice_stack.iter().all(|a| !a.source.is_empty()));
    // nginx as the server only (no cache in front): none of proxy_cache's rows.
    let mut fs = vec![finding("not-shared-cacheable")];
    attach(&mut fs, &facts, &stack_of(None, "nginx", None));
    assert!(fs[0].advice_stack.iter().all(|a| a.stack != "nginx"));
}

/// A request carrying a session cookie that Varnish passes: the advice says it is
/// right and never to strip it; analytics cookies alone get the VCL that strips them.
#[test]
fn session_cookie_is_kept_analytics_stripped() {
    let mut facts = cache_facts(&[("cache-control", "public, max-age=600")]);
    let c = facts.cache.as_mut().unwrap();
    c.anonymous = false;
    c.cookie = true;
    c.request_cookies = vec!["_ga".into(), "wordpress_logged_in_abc".into()];
    let stack = stack_of(Some("varnish"), "nginx", Some("wordpress"));
    let mut fs = vec![finding("cdn-not-caching")];
    attach(&mut fs, &facts, &stack);
    let v: Vec<&StackAdvice> = fs[0].advice_stack.iter().collect();
    assert!(v
        .iter()
        .any(|a| a.stack == "varnish" && a.topic == "cache:request-cookie-session"));
    assert!(v.iter().all(|a| !a.topic.contains("analytics")), "{v:?}");
    assert!(v
        .iter()
        .all(|a| !a.advice.contains("regsuball") && !a.advice.contains("unset req.http.Cookie")));
    facts.cache.as_mut().unwrap().request_cookies = vec!["_ga".into(), "_gid".into()];
    let mut fs = vec![finding("cdn-not-caching")];
    attach(&mut fs, &facts, &stack);
    let varnish = fs[0]
        .advice_stack
        .iter()
        .find(|a| a.stack == "varnish")
        .unwrap();
    assert_eq!(varnish.topic, "cache:request-cookie-analytics");
    assert!(varnish.advice.contains("regsuball"));
}

/// Compression and keep-alive in each server's own terms; an HAProxy edge gets
/// `http-reuse`, never nginx's syntax; a server with no table gets none.
#[test]
fn each_server_in_its_own_terms() {
    let facts = Facts::default();
    let want = [
        ("nginx", "no-compression", "gzip on"),
        ("apache", "no-compression", "DEFLATE"),
        ("caddy", "no-compression", "encode gzip"),
        ("haproxy", "no-keepalive", "http-reuse"),
        ("nginx", "no-keepalive", "proxy_http_version 1.1"),
    ];
    for (server, id, needle) in want {
        let mut fs = vec![finding(id)];
        attach(&mut fs, &facts, &stack_of(None, server, None));
        let a = &fs[0].advice_stack;
        assert_eq!(a.len(), 1, "{server} {id}: {a:?}");
        assert!(a[0].advice.contains(needle), "{server}: {}", a[0].advice);
        if server == "haproxy" {
            assert!(!a[0].advice.contains("proxy_http_version"));
        }
    }
    let mut fs = vec![finding("no-compression")];
    attach(&mut fs, &facts, &stack_of(None, "python", None));
    assert!(fs[0].advice_stack.is_empty());
    assert!(catalogue::covered().contains(&"Varnish (VCL)"));
}

/// docs/findings.md says what every stack's advice means: its "Advice in your own
/// stack" section names every catalogue table and has a row for every topic; every
/// catalogue row names its documentation source, and topics are finding ids or
/// cache blockers.
#[test]
fn catalogue_is_documented() {
    let doc = include_str!("../../../docs/findings.md");
    let start = doc.find("## Advice in your own stack").unwrap();
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    for t in catalogue::TABLES {
        assert!(
            section.contains(t.name),
            "{} is not in docs/findings.md",
            t.name
        );
        for r in t.rows {
            assert!(
                section.contains(&format!("| `{}` |", r.topic)),
                "{}'s topic {} has no row in docs/findings.md",
                t.id,
                r.topic
            );
            assert!(!r.source.is_empty() && !r.advice.is_empty(), "{}", t.id);
            assert!(
                r.topic.starts_with("cache:") || crate::diagnose::rules::IDS.contains(&r.topic),
                "{}: {} is neither a finding id nor a cache blocker",
                t.id,
                r.topic
            );
        }
    }
}
