//! Issue 32 on a real framework: a Django application (Debian's `python3-django`,
//! run by Django's own WSGI handler under the standard library's server) behind
//! nginx. Django names itself only through its cookie (`csrftoken`, set by
//! `get_token` as `{% csrf_token %}` does): the advice is then Django's own,
//! beside nginx's and the generic HTTP advice. Two diagnoses, ≈3 s.

use std::process::Command;

use crate::util::diagnose_json;
use crate::util_real::python_server_with;
use crate::util_require::{require, require_that};
use crate::util_stack::{advice_only_for_detected, nginx_proxy, role, stack_advice};

/// A one-file Django site: `/form` gets a CSRF token (the `csrftoken` cookie and
/// `Vary: Cookie`), 20 KB of HTML, no Cache-Control, no validator. argv: `gzip`
/// adds `GZipMiddleware`, `etag` `ConditionalGetMiddleware`, `cc` wraps the view in
/// `cache_control(public=True, s_maxage=600)` — Django's rows for compression,
/// validators and freshness, applied.
const DJANGO: &str = r#"
import sys
from django.conf import settings
settings.configure(
    DEBUG=False, ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__,
    SECRET_KEY="latscope-test-not-a-secret",
    MIDDLEWARE=(["django.middleware.gzip.GZipMiddleware"] if "gzip" in sys.argv else [])
    + (["django.middleware.http.ConditionalGetMiddleware"] if "etag" in sys.argv else [])
    + ["django.middleware.csrf.CsrfViewMiddleware"],
    INSTALLED_APPS=[],
)
import django
django.setup()
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.urls import path
from django.views.decorators.cache import cache_control
BODY = "<p>plain text that compresses well</p>" * 550
def form(request):
    get_token(request)
    return HttpResponse("<html><body><form>" + BODY + "</form></body></html>")
if "cc" in sys.argv:
    form = cache_control(public=True, s_maxage=600)(form)
urlpatterns = [path("form", form)]
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from django.core.wsgi import get_wsgi_application
class S(ThreadingMixIn, WSGIServer):
    daemon_threads = True
class H(WSGIRequestHandler):
    def log_message(self, *a):
        pass
srv = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=S, handler_class=H)
print(srv.server_port, flush=True)
srv.serve_forever()
"#;

/// The Django site's diagnose JSON through nginx (`args` to the site).
fn diagnose(args: &[&str]) -> serde_json::Value {
    let (_site, port) = python_server_with(Command::new("/usr/bin/python3"), DJANGO, args);
    let nginx = nginx_proxy(port, "");
    let doc = diagnose_json(&[&format!("http://127.0.0.1:{}/form", nginx.port), "-n", "3"]);
    advice_only_for_detected(&doc);
    assert_eq!(role(&doc, "framework"), "django", "{}", doc["stack"]);
    assert_eq!(role(&doc, "server"), "nginx", "{}", doc["stack"]);
    doc
}

/// The topics Django's own advice covers in `doc`, over every finding.
fn django_topics(doc: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .flat_map(|id| stack_advice(doc, id))
        .filter(|(s, _, _)| s == "django")
        .map(|(_, t, _)| t)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Uncompressed, no validator, no lifetime, a CSRF cookie (RFC 9111 §3: no
/// explicit freshness for a shared cache; the Set-Cookie keeps nginx proxy_cache
/// and Varnish from storing it): Django's `GZipMiddleware`,
/// `ConditionalGetMiddleware`, `cache_control` and "keep them off public pages",
/// never "strip the cookie". With those three applied, compression, validators and
/// freshness are quiet; the CSRF cookie still blocks a cache, and Django's row
/// still says so.
#[test]
fn django_behind_nginx() {
    let django = Command::new("/usr/bin/python3")
        .args(["-c", "import django"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !require("nginx")
        || !require_that(
            django,
            "/usr/bin/python3 cannot import django",
            "apt-get install python3-django",
        )
    {
        return;
    }
    let doc = diagnose(&[]);
    assert_eq!(
        django_topics(&doc),
        [
            "cache:freshness",
            "cache:set-cookie",
            "no-compression",
            "no-validators"
        ],
        "{}",
        doc["findings"]
    );
    let a = stack_advice(&doc, "no-compression");
    assert!(
        a.iter()
            .any(|(s, _, x)| s == "django" && x.contains("GZipMiddleware")),
        "{a:?}"
    );
    assert!(a.iter().any(|(s, _, _)| s == "nginx"), "{a:?}");
    let a = stack_advice(&doc, "not-shared-cacheable");
    let cookie = a
        .iter()
        .find(|(s, t, _)| s == "django" && t == "cache:set-cookie")
        .unwrap_or_else(|| panic!("{a:?}"));
    assert!(cookie.2.contains("csrf_token"), "{cookie:?}");

    let doc = diagnose(&["gzip", "etag", "cc"]);
    assert_eq!(
        django_topics(&doc),
        ["cache:set-cookie"],
        "{}",
        doc["findings"]
    );
}
