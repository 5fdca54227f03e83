//! Network events as Chromium sends them (shapes copied from a real run) become the
//! right records: phases from `response.timing`, a redirect hop as a request of its
//! own, the browser cache, a blocked origin, render-blocking joined by URL, and the
//! clock aligned on the Performance API's `requestStart`.

use serde_json::{json, Value};

use super::build;
use crate::page::model::VisitKind;

fn ev(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "sessionId": "S"})
}

fn sent(id: &str, url: &str, ty: &str, ts: f64, redirect: Option<Value>) -> Value {
    let mut p = json!({"requestId": id, "request": {"url": url, "method": "GET",
        "headers": {"Accept": "*/*"}}, "timestamp": ts, "wallTime": 1_700_000_000.0 + ts,
        "initiator": {"type": "parser", "url": "http://a.test/"}, "type": ty});
    if let Some(r) = redirect {
        p["redirectResponse"] = r;
    }
    ev("Network.requestWillBeSent", p)
}

fn response(url: &str, status: u16, request_time: f64, timing: Value, headers: Value) -> Value {
    let mut t = json!({"requestTime": request_time, "proxyStart": -1, "proxyEnd": -1,
        "dnsStart": -1, "dnsEnd": -1, "connectStart": -1, "connectEnd": -1, "sslStart": -1,
        "sslEnd": -1, "sendStart": 1.0, "sendEnd": 1.5, "receiveHeadersStart": 20.0,
        "receiveHeadersEnd": 21.0});
    for (k, v) in timing.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({"url": url, "status": status, "protocol": "http/1.1", "timing": t,
        "headers": headers, "mimeType": "text/html", "connectionId": 7,
        "connectionReused": false, "remoteIPAddress": "127.0.0.1", "encodedDataLength": 100})
}

/// The two events of a request that was answered: its response, then its end at
/// `finished` (s) with `bytes` on the wire.
fn answered(id: &str, ty: &str, response: Value, finished: f64, bytes: u64) -> [Value; 2] {
    [
        ev(
            "Network.responseReceived",
            json!({"requestId": id, "type": ty, "response": response}),
        ),
        ev(
            "Network.loadingFinished",
            json!({"requestId": id, "timestamp": finished, "encodedDataLength": bytes}),
        ),
    ]
}

/// A document on a new connection, a stylesheet redirected once, a cached script and
/// a blocked one.
#[test]
fn events_become_records() {
    let doc = response(
        "http://a.test/",
        200,
        100.000,
        json!({"dnsStart": 0.5, "dnsEnd": 2.5, "connectStart": 2.5, "connectEnd": 10.0,
               "sendStart": 10.5, "sendEnd": 11.0}),
        json!({"Content-Type": "text/html"}),
    );
    let hop = response(
        "http://a.test/old.css",
        301,
        100.050,
        json!({}),
        json!({"Location": "/new.css", "Cache-Control": "max-age=60"}),
    );
    let css = response("http://a.test/new.css", 200, 100.080, json!({}), json!({}));
    let js = response("http://a.test/app.js", 200, 100.060, json!({}), json!({}));
    let mut events = vec![sent("1", "http://a.test/", "Document", 99.999, None)];
    events.extend(answered("1", "Document", doc, 100.030, 500));
    events.push(sent(
        "2",
        "http://a.test/old.css",
        "Stylesheet",
        100.040,
        None,
    ));
    events.push(sent(
        "2",
        "http://a.test/new.css",
        "Stylesheet",
        100.075,
        Some(hop),
    ));
    events.extend(answered("2", "Stylesheet", css, 100.110, 300));
    events.push(sent("3", "http://a.test/app.js", "Script", 100.045, None));
    events.push(ev(
        "Network.requestServedFromCache",
        json!({"requestId": "3"}),
    ));
    events.extend(answered("3", "Script", js, 100.046, 0));
    events.push(sent("4", "http://b.test/x.js", "Script", 100.047, None));
    events.push(ev(
        "Network.loadingFailed",
        json!({"requestId": "4", "timestamp": 100.048,
            "errorText": "net::ERR_PROXY_CONNECTION_FAILED", "canceled": false}),
    ));
    // The page's requestStart 10.5 ms after its time origin: the network clock's
    // 100.0105 s is 10.5 ms, so the origin is 100.000 s.
    let page = json!({"ttfb": 20.0, "requestStart": 10.5, "fcp": 150.0, "lcp": 160.0,
        "lcpUrl": "", "dcl": 120.0, "load": 140.0, "title": "T",
        "resources": [["http://a.test/old.css", "blocking"], ["http://a.test/new.css", "blocking"],
                      ["http://b.test/x.js", "non-blocking"]]});
    let v = build(VisitKind::First, 1, true, &events, &page);
    assert_eq!(v.requests.len(), 5, "{:#?}", v.requests);
    let d = &v.requests[0];
    assert_eq!(d.resource_type, "Document");
    assert!((d.start_ms - -1.0).abs() < 1e-6, "{}", d.start_ms);
    let p = &d.phases;
    assert_eq!((p.dns, p.connect, p.tls), (Some(2.0), Some(7.5), None));
    assert!((p.queued - 1.5).abs() < 1e-6, "{}", p.queued);
    assert_eq!(p.send, Some(1.0)); // from connectEnd: the gap before sendStart too
    assert_eq!(p.wait, Some(9.0)); // to receiveHeadersStart (20) from sendEnd (11)
    assert!((p.receive.unwrap() - 10.0).abs() < 1e-6);
    assert!((d.end_ms - 30.0).abs() < 1e-6);
    assert_eq!(d.encoded_bytes, 500);
    // The network's first byte is the page's responseStart.
    assert!((d.start_ms + d.ttfb() - 20.0).abs() < 1e-6, "{}", d.ttfb());

    let hop = &v.requests[1];
    assert_eq!(hop.url, "http://a.test/old.css");
    assert_eq!((hop.status, hop.location.as_str()), (301, "/new.css"));
    assert!(hop.is_redirect());
    assert_eq!(hop.cache_control, "max-age=60");
    assert_eq!(hop.render_blocking, "blocking");
    let js = &v.requests[2];
    assert!(js.from_cache && js.url.ends_with("app.js"));
    let blocked = &v.requests[3];
    assert!(blocked.blocked && blocked.status == 0, "{blocked:?}");
    assert_eq!(blocked.render_blocking, "non-blocking");
    let css = &v.requests[4];
    assert_eq!((css.status, css.initiator.as_str()), (200, "redirect"));
    assert_eq!(css.render_blocking, "blocking");
    assert_eq!(v.milestones.lcp_ms, Some(160.0));
    assert_eq!(v.document().map(|r| r.status), Some(200));
}
