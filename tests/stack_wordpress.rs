//! Issue 32 on real software: WordPress from Debian's package (on MariaDB, run by
//! PHP-FPM) behind nginx, Apache and Caddy, with Varnish, nginx proxy_cache or an
//! HAProxy edge in front. One WordPress for the whole module (one test: installing
//! it takes ~5 s); each front is a diagnose of ~2 s (`--no-load -n 3`), the module
//! ≈30 s in all. Each step asserts the recognised stack and that the advice is that
//! stack's own, beside the generic HTTP advice.

use crate::util::diagnose_json;
use crate::util_caches::{nginx as nginx_cache, varnish};
use crate::util_require::require;
use crate::util_stack::{
    apache_fcgi, caddy_fcgi, finding, haproxy, nginx_fcgi, role, stack_advice, wordpress,
};

fn diagnose(port: u16) -> serde_json::Value {
    diagnose_json(&[&format!("http://127.0.0.1:{port}/"), "-n", "3"])
}

/// WordPress 6 behind nginx + PHP-FPM, behind Apache (mod_proxy_fcgi) and behind
/// Caddy (php_fastcgi); Varnish and nginx proxy_cache in front; HAProxy as the
/// edge. Compression advice comes as `gzip on` / `AddOutputFilterByType DEFLATE` /
/// `encode gzip`; caching as WordPress' page-cache plugins and the cache's own
/// directives; HAProxy's keep-alive as `http-reuse`, never nginx's syntax.
#[test]
fn wordpress_stacks() {
    if !require("varnishd") || !require("apache2") || !require("caddy") || !require("haproxy") {
        return;
    }
    let Some(wp) = wordpress() else {
        return;
    };
    let nginx = nginx_fcgi(&wp, "");

    // nginx + PHP-FPM: the page names WordPress (generator, REST API link), nginx
    // names itself, and PHP behind nginx is PHP-FPM.
    let doc = diagnose(nginx.port);
    assert_eq!(role(&doc, "server"), "nginx", "{}", doc["stack"]);
    assert_eq!(role(&doc, "app"), "wordpress");
    assert_eq!(role(&doc, "framework"), "php-fpm");
    assert!(doc["stack"]["app"]["version"]
        .as_str()
        .is_some_and(|v| v.starts_with("6.")));
    assert_eq!(
        doc["stack"]["summary"], "WordPress 6 on PHP-FPM behind nginx",
        "{}",
        doc["stack"]
    );
    // A 50 KiB page sent uncompressed over loopback saves ~0.01 ms: info, with the
    // mobile path stated; the advice is nginx's, the generic one beside it.
    let nc = finding(&doc, "no-compression");
    assert_eq!(nc["severity"], "info", "{nc}");
    assert!(nc["title"]
        .as_str()
        .unwrap()
        .contains("typical mobile path"));
    assert!(!nc["advice"].as_str().unwrap().is_empty());
    let a = stack_advice(&doc, "no-compression");
    assert!(
        a.iter()
            .any(|(s, _, t)| s == "nginx" && t.contains("gzip on")),
        "{a:?}"
    );
    // No Cache-Control: nginx proxy_cache and Apache would not keep it; the fix is
    // WordPress' own (a page-cache plugin).
    let a = stack_advice(&doc, "not-shared-cacheable");
    assert!(
        a.iter()
            .any(|(s, t, x)| s == "wordpress" && t == "cache:freshness" && x.contains("plugin")),
        "{a:?}"
    );

    // Varnish in front: the issue's own line.
    let v = varnish(nginx.port);
    let doc = diagnose(v.port);
    assert_eq!(
        doc["stack"]["summary"], "WordPress 6 on PHP-FPM behind nginx, Varnish in front",
        "{}",
        doc["stack"]
    );
    // WordPress sets no cookie for an anonymous reader and Varnish keeps the page
    // its default_ttl: no miss, no cache advice from Varnish.
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["id"] != "cdn-not-caching"),
        "{}",
        doc["findings"]
    );
    // A signed-in reader (WordPress' login cookie): Varnish's built-in VCL passes
    // it, which is right — info, and WordPress' and Varnish's rows both say to keep
    // passing it, never to strip it. The cookie's value stays out of the output.
    let doc = diagnose_json(&[
        &format!("http://127.0.0.1:{}/", v.port),
        "-n",
        "3",
        "-H",
        "Cookie: wordpress_logged_in_0123abcd=admin%7Cs3cr3t-value",
    ]);
    let f = finding(&doc, "cdn-not-caching");
    assert_eq!(f["severity"], "info", "{f}");
    let a = stack_advice(&doc, "cdn-not-caching");
    for stack in ["wordpress", "varnish"] {
        assert!(
            a.iter()
                .any(|(s, t, _)| s == stack && t == "cache:request-cookie-session"),
            "{stack}: {a:?}"
        );
    }
    assert!(a.iter().all(|(_, _, x)| !x.contains("regsuball")), "{a:?}");
    assert!(
        !doc.to_string().contains("s3cr3t"),
        "cookie values stay out"
    );
    drop(v);

    // HAProxy at the edge, closing every connection: it is recognised by its
    // lowercase header names, and the keep-alive advice is HAProxy's.
    let edge = haproxy(nginx.port, "  option httpclose");
    let doc = diagnose(edge.port);
    assert_eq!(role(&doc, "proxy"), "haproxy", "{}", doc["stack"]);
    assert_eq!(role(&doc, "server"), "nginx");
    let a = stack_advice(&doc, "no-keepalive");
    let h = a
        .iter()
        .find(|(s, _, _)| s == "haproxy")
        .unwrap_or_else(|| panic!("{a:?}"));
    assert!(h.2.contains("http-reuse"), "{h:?}");
    assert!(!h.2.contains("proxy_http_version"), "{h:?}");
    drop(edge);

    // Apache + PHP-FPM through mod_proxy_fcgi.
    let apache = apache_fcgi(&wp);
    let doc = diagnose(apache.port);
    assert_eq!(role(&doc, "server"), "apache", "{}", doc["stack"]);
    assert_eq!(role(&doc, "app"), "wordpress");
    assert_eq!(role(&doc, "framework"), "php");
    let a = stack_advice(&doc, "no-compression");
    assert!(
        a.iter()
            .any(|(s, _, t)| s == "apache" && t.contains("AddOutputFilterByType DEFLATE")),
        "{a:?}"
    );

    // nginx proxy_cache (with X-Cache-Status) in front of Apache: the page has no
    // lifetime, so proxy_cache misses every time; its advice is proxy_cache_valid.
    let cache = nginx_cache(apache.port);
    let doc = diagnose(cache.port);
    assert_eq!(role(&doc, "cache"), "nginx", "{}", doc["stack"]);
    let mut a = stack_advice(&doc, "cdn-not-caching");
    a.extend(stack_advice(&doc, "not-shared-cacheable"));
    assert!(
        a.iter().any(|(s, t, x)| s == "nginx"
            && t == "cache:freshness"
            && x.contains("proxy_cache_valid")),
        "{a:?}"
    );
    drop(cache);
    drop(apache);

    // Caddy + PHP-FPM through php_fastcgi.
    let caddy = caddy_fcgi(&wp);
    let doc = diagnose(caddy.port);
    assert_eq!(role(&doc, "server"), "caddy", "{}", doc["stack"]);
    assert_eq!(role(&doc, "framework"), "php-fpm");
    let a = stack_advice(&doc, "no-compression");
    assert!(
        a.iter()
            .any(|(s, _, t)| s == "caddy" && t.contains("encode gzip")),
        "{a:?}"
    );
}
