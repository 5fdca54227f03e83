//! Issue 32 on real software: DokuWiki from Debian's package (run by PHP-FPM with a
//! copy of its config and data) behind nginx and behind Apache with Varnish in
//! front. One DokuWiki for the module; ≈10 s in all.

use crate::util::diagnose_json;
use crate::util_caches::varnish;
use crate::util_require::require;
use crate::util_stack::{apache_fcgi, dokuwiki, finding, nginx_fcgi, role, stack_advice};

fn diagnose(port: u16) -> serde_json::Value {
    diagnose_json(&[&format!("http://127.0.0.1:{port}/doku.php"), "-n", "3"])
}

/// DokuWiki starts a PHP session for every visitor: the `DokuWiki` cookie and PHP's
/// `no-store, no-cache`. Behind nginx it is "DokuWiki on PHP-FPM behind nginx";
/// behind Apache with Varnish in front, Varnish passes it for both reasons at once
/// (its `private`/`no-cache` rule and the Set-Cookie), and the advice says so in VCL
/// terms and DokuWiki's — and never to strip the session cookie.
#[test]
fn dokuwiki_stacks() {
    if !require("varnishd") || !require("apache2") {
        return;
    }
    let Some(dw) = dokuwiki() else {
        return;
    };
    let nginx = nginx_fcgi(&dw, "");
    let doc = diagnose(nginx.port);
    assert_eq!(
        doc["stack"]["summary"], "DokuWiki on PHP-FPM behind nginx",
        "{}",
        doc["stack"]
    );
    let cookie = doc["stack"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["id"] == "dokuwiki" && e["source"] == "set-cookie name");
    assert!(cookie, "{}", doc["stack"]);
    // The session cookie is a session cookie: DokuWiki's advice keeps it.
    let a = stack_advice(&doc, "not-shared-cacheable");
    let d = a
        .iter()
        .find(|(s, t, _)| s == "dokuwiki" && t == "cache:set-cookie")
        .unwrap_or_else(|| panic!("{a:?}"));
    assert!(d.2.contains("never strip"), "{d:?}");
    drop(nginx);

    let apache = apache_fcgi(&dw);
    let v = varnish(apache.port);
    let doc = diagnose(v.port);
    assert_eq!(role(&doc, "cache"), "varnish", "{}", doc["stack"]);
    assert_eq!(role(&doc, "server"), "apache");
    assert_eq!(role(&doc, "app"), "dokuwiki");
    assert_eq!(
        doc["stack"]["summary"],
        "DokuWiki on PHP behind Apache httpd, Varnish in front"
    );
    let miss = finding(&doc, "cdn-not-caching");
    assert_eq!(miss["severity"], "warn", "{miss}");
    let a = stack_advice(&doc, "cdn-not-caching");
    let topics: Vec<&str> = a
        .iter()
        .filter(|(s, _, _)| s == "varnish")
        .map(|(_, t, _)| t.as_str())
        .collect();
    assert!(topics.contains(&"cache:private"), "{a:?}");
    assert!(topics.contains(&"cache:set-cookie"), "{a:?}");
    assert!(
        a.iter().any(|(s, _, _)| s == "dokuwiki"),
        "DokuWiki's own advice beside Varnish's: {a:?}"
    );
    // Nothing tells Varnish to drop DokuWiki's session cookie without the caveat.
    for (s, _, x) in &a {
        if x.contains("unset beresp.http.Set-Cookie") {
            assert!(x.contains("session"), "{s}: {x}");
        }
    }
}
