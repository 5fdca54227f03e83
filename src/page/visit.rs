//! One visit of a page in a running browser: a new tab, the Network and Page
//! domains on, navigate, wait for the load event and a short quiet spell, read the
//! milestones and Resource Timing's `renderBlockingStatus` in the page (a
//! PerformanceObserver with `buffered: true`, through `Runtime.evaluate`), close the
//! tab; then the Network events become [`Request`] records. Never prints.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::cdp::{Browser, CdpError, Message};
use super::model::{origin_of, Milestones, Phases, Request, Visit, VisitKind};

/// How long the network must stay quiet after the load event before the page is
/// read (late images, LCP candidates).
const QUIET: Duration = Duration::from_millis(300);
/// The longest wait after the load event.
const AFTER_LOAD: Duration = Duration::from_secs(3);
/// One DevTools command's own bound.
const CALL: Duration = Duration::from_secs(10);
/// Past the run's bound, reading the page and closing the tab still get this long:
/// a page that never finished loading is still reported.
const GRACE: Duration = Duration::from_secs(2);

/// What the page itself says (the script below).
const READ_PAGE: &str = r#"(async () => {
  const lcp = await new Promise((resolve) => {
    let last = null;
    try {
      const po = new PerformanceObserver((l) => {
        const e = l.getEntries();
        if (e.length) last = e[e.length - 1];
      });
      po.observe({ type: 'largest-contentful-paint', buffered: true });
      setTimeout(() => { po.disconnect(); resolve(last); }, 50);
    } catch (e) { resolve(null); }
  });
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    ttfb: nav ? nav.responseStart : null,
    requestStart: nav ? nav.requestStart : null,
    dcl: nav && nav.domContentLoadedEventEnd > 0 ? nav.domContentLoadedEventEnd : null,
    load: nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : null,
    fcp: fcp ? fcp.startTime : null,
    lcp: lcp ? lcp.startTime : null,
    lcpUrl: lcp ? (lcp.url || '') : '',
    title: document.title || '',
    resources: performance.getEntriesByType('resource').map((r) => [r.name, r.renderBlockingStatus || '']),
  };
})()"#;

/// Visits `url` once in `browser`; `deadline` bounds the whole visit.
pub fn visit(
    browser: &mut Browser,
    url: &str,
    kind: VisitKind,
    index: u32,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<Visit, CdpError> {
    let call_limit = |d: Instant| d.saturating_duration_since(Instant::now()).min(CALL);
    let never = AtomicBool::new(false);
    let target = browser.call(
        None,
        "Target.createTarget",
        json!({"url": "about:blank"}),
        call_limit(deadline),
        stop,
    )?;
    let target_id = target["targetId"].as_str().unwrap_or_default().to_string();
    let result = (|| {
        let attached = browser.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
            call_limit(deadline),
            stop,
        )?;
        let session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let s = Some(session.as_str());
        browser.take_events();
        for (m, p) in [
            ("Network.enable", json!({})),
            ("Page.enable", json!({})),
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": "performance.setResourceTimingBufferSize(5000)"}),
            ),
        ] {
            browser.call(s, m, p, call_limit(deadline), stop)?;
        }
        let nav = browser.call(
            s,
            "Page.navigate",
            json!({"url": url}),
            call_limit(deadline),
            stop,
        )?;
        if let Some(e) = nav.get("errorText").and_then(Value::as_str) {
            if !e.is_empty() {
                return Err(CdpError::Command {
                    method: "Page.navigate".into(),
                    message: format!("the page did not load: {e}"),
                });
            }
        }
        let on_session = |m: &Message| m["sessionId"].as_str() == Some(session.as_str());
        // Ctrl-C or the bound while loading: the page is still read (below, with a
        // stop flag of its own and a short grace), so what it did is reported.
        let loaded = match browser.wait_event(deadline, stop, |m| {
            on_session(m) && m["method"] == "Page.loadEventFired"
        }) {
            Ok(l) => l,
            Err(CdpError::Interrupted) => false,
            Err(e) => return Err(e),
        };
        let stop = if loaded { stop } else { &never };
        if loaded {
            // A quiet spell: no Network event for QUIET, at most AFTER_LOAD.
            let end = (Instant::now() + AFTER_LOAD).min(deadline);
            loop {
                let quiet_until = (Instant::now() + QUIET).min(end);
                let busy = browser.wait_event(quiet_until, stop, |m| {
                    on_session(m)
                        && m["method"]
                            .as_str()
                            .is_some_and(|x| x.starts_with("Network."))
                })?;
                if !busy || Instant::now() >= end {
                    break;
                }
            }
        }
        let page = browser
            .call(
                s,
                "Runtime.evaluate",
                json!({"expression": READ_PAGE, "awaitPromise": true, "returnByValue": true}),
                if loaded {
                    call_limit(deadline + GRACE)
                } else {
                    GRACE
                },
                stop,
            )
            .map(|v| v["result"]["value"].clone())
            .unwrap_or(Value::Null);
        let events: Vec<Message> = browser
            .take_events()
            .into_iter()
            .filter(|m| on_session(m))
            .collect();
        Ok(build(kind, index, loaded, &events, &page))
    })();
    // The tab goes whatever happened (the browser itself is killed on drop).
    let _ = browser.call(
        None,
        "Target.closeTarget",
        json!({"targetId": target_id}),
        GRACE,
        &never,
    );
    result
}

/// A request under way: what its events said so far.
#[derive(Default)]
struct Pending {
    issued_s: f64,
    wall_s: f64,
    url: String,
    method: String,
    resource_type: String,
    initiator: String,
    initiator_url: String,
    request_headers: Vec<(String, String)>,
    response: Option<Value>,
    from_cache: bool,
    end_s: Option<f64>,
    encoded: Option<u64>,
    error: String,
}

fn headers(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn header(h: &[(String, String)], name: &str) -> String {
    h.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// The Network events of one visit (and what the page said) as its record.
pub fn build(kind: VisitKind, index: u32, loaded: bool, events: &[Message], page: &Value) -> Visit {
    let mut open: HashMap<String, Pending> = HashMap::new();
    let mut done: Vec<Pending> = Vec::new();
    for m in events {
        let p = &m["params"];
        let id = p["requestId"].as_str().unwrap_or_default().to_string();
        match m["method"].as_str().unwrap_or_default() {
            "Network.requestWillBeSent" => {
                let ts = p["timestamp"].as_f64().unwrap_or(0.0);
                if let Some(mut prev) = open.remove(&id) {
                    // A redirect: the previous hop ends here, with its 3xx answer.
                    if !p["redirectResponse"].is_null() {
                        prev.response = Some(p["redirectResponse"].clone());
                        prev.end_s = Some(ts);
                        prev.encoded = p["redirectResponse"]["encodedDataLength"].as_u64();
                    }
                    done.push(prev);
                }
                let init = &p["initiator"];
                let init_url = init["url"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| {
                        init["stack"]["callFrames"][0]["url"]
                            .as_str()
                            .map(str::to_string)
                    })
                    .unwrap_or_default();
                let redirected = !p["redirectResponse"].is_null();
                open.insert(
                    id,
                    Pending {
                        issued_s: ts,
                        wall_s: p["wallTime"].as_f64().unwrap_or(0.0),
                        url: p["request"]["url"].as_str().unwrap_or_default().to_string(),
                        method: p["request"]["method"].as_str().unwrap_or("GET").to_string(),
                        resource_type: p["type"].as_str().unwrap_or("Other").to_string(),
                        initiator: if redirected {
                            "redirect".to_string()
                        } else {
                            init["type"].as_str().unwrap_or("other").to_string()
                        },
                        initiator_url: init_url,
                        request_headers: headers(&p["request"]["headers"]),
                        ..Pending::default()
                    },
                );
            }
            "Network.requestServedFromCache" => {
                if let Some(r) = open.get_mut(&id) {
                    r.from_cache = true;
                }
            }
            "Network.responseReceived" => {
                if let Some(r) = open.get_mut(&id) {
                    r.response = Some(p["response"].clone());
                    if let Some(t) = p["type"].as_str() {
                        r.resource_type = t.to_string();
                    }
                }
            }
            "Network.loadingFinished" => {
                if let Some(mut r) = open.remove(&id) {
                    r.end_s = p["timestamp"].as_f64();
                    r.encoded = p["encodedDataLength"].as_u64();
                    done.push(r);
                }
            }
            "Network.loadingFailed" => {
                if let Some(mut r) = open.remove(&id) {
                    r.end_s = p["timestamp"].as_f64();
                    r.error = p["errorText"].as_str().unwrap_or("failed").to_string();
                    if p["canceled"].as_bool() == Some(true) && r.error.is_empty() {
                        r.error = "canceled".into();
                    }
                    done.push(r);
                }
            }
            _ => {}
        }
    }
    // Still open when the page was read: kept, unfinished, drawn up to the last
    // event seen.
    let last_s = events
        .iter()
        .filter_map(|m| m["params"]["timestamp"].as_f64())
        .fold(0.0, f64::max);
    done.extend(open.into_values().map(|mut r| {
        r.end_s = Some(last_s.max(r.issued_s));
        r.error = "unfinished when the page was read".into();
        r
    }));
    done.sort_by(|a, b| a.issued_s.total_cmp(&b.issued_s));

    let num = |k: &str| page[k].as_f64();
    // The network clock (s) at the page's time origin: the document's send start
    // is the Performance API's requestStart.
    let doc = done.iter().rev().find(|r| {
        r.resource_type == "Document"
            && r.response
                .as_ref()
                .is_some_and(|x| !(300..400).contains(&x["status"].as_u64().unwrap_or(0)))
    });
    let first_issue = done.first().map(|r| r.issued_s * 1000.0).unwrap_or(0.0);
    let origin_ms = doc
        .and_then(|d| {
            let t = &d.response.as_ref()?["timing"];
            let send = t["sendStart"].as_f64().filter(|v| *v >= 0.0)?;
            Some(t["requestTime"].as_f64()? * 1000.0 + send - num("requestStart")?)
        })
        .unwrap_or(first_issue);
    let started_wall_ms = done
        .first()
        .map(|r| r.wall_s * 1000.0 - (r.issued_s * 1000.0 - origin_ms))
        .unwrap_or(0.0);

    let blocking: Vec<(String, String)> = page["resources"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e[0].as_str().unwrap_or_default().to_string(),
                        e[1].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut used = vec![false; blocking.len()];

    let requests = done
        .into_iter()
        .map(|p| {
            let mut r = record(p, origin_ms);
            if let Some(i) = (0..blocking.len()).find(|&i| !used[i] && blocking[i].0 == r.url) {
                used[i] = true;
                r.render_blocking = blocking[i].1.clone();
            }
            r
        })
        .collect();
    Visit {
        kind,
        index,
        milestones: Milestones {
            ttfb_ms: num("ttfb"),
            fcp_ms: num("fcp"),
            lcp_ms: num("lcp"),
            lcp_url: page["lcpUrl"].as_str().unwrap_or_default().to_string(),
            dom_content_loaded_ms: num("dcl"),
            load_ms: num("load"),
        },
        requests,
        started_wall_ms,
        title: page["title"].as_str().unwrap_or_default().to_string(),
        loaded,
    }
}

/// One finished (or unfinished) request as its record; `origin_ms` is the page's
/// time origin on the network clock, ms.
fn record(p: Pending, origin_ms: f64) -> Request {
    let resp = p.response.clone().unwrap_or(Value::Null);
    let t = &resp["timing"];
    let at = |k: &str| t[k].as_f64().filter(|v| *v >= 0.0);
    let span = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let issued_ms = p.issued_s * 1000.0;
    let mut phases = Phases::default();
    let mut ttfb_at = None;
    if let Some(base) = t["requestTime"].as_f64().map(|s| s * 1000.0) {
        let first = [
            at("proxyStart"),
            at("dnsStart"),
            at("connectStart"),
            at("sendStart"),
        ]
        .into_iter()
        .flatten()
        .next();
        phases.queued = (base + first.unwrap_or(0.0) - issued_ms).max(0.0);
        phases.dns = span(at("dnsStart"), at("dnsEnd"));
        let ssl = at("sslStart");
        phases.connect = span(at("connectStart"), ssl.or(at("connectEnd")));
        phases.tls = span(ssl, at("sslEnd"));
        // Each phase from the end of the one before (DESIGN.md), so they add up to
        // the first byte: send takes in the gap between connecting and sending.
        let before_send = [first, at("dnsEnd"), at("connectEnd"), at("sslEnd")]
            .into_iter()
            .flatten()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        phases.send = span(before_send.or(at("sendStart")), at("sendEnd"));
        let first_byte = at("receiveHeadersStart")
            .filter(|v| *v > 0.0)
            .or(at("receiveHeadersEnd"));
        phases.wait = span(at("sendEnd"), first_byte);
        if let Some(fb) = first_byte {
            ttfb_at = Some(base + fb);
            if let Some(end) = p.end_s {
                phases.receive = Some((end * 1000.0 - (base + fb)).max(0.0));
            }
        }
    }
    let end_ms = p.end_s.map(|e| e * 1000.0).or(ttfb_at).unwrap_or(issued_ms);
    let response_headers = headers(&resp["headers"]);
    let from_cache = p.from_cache
        || resp["fromDiskCache"].as_bool() == Some(true)
        || resp["fromPrefetchCache"].as_bool() == Some(true)
        || resp["fromServiceWorker"].as_bool() == Some(true);
    let blocked = p.error.contains("PROXY") || p.error.contains("TUNNEL");
    Request {
        origin: origin_of(&p.url),
        url: p.url,
        method: p.method,
        resource_type: p.resource_type,
        initiator: p.initiator,
        initiator_url: p.initiator_url,
        start_ms: issued_ms - origin_ms,
        end_ms: end_ms - origin_ms,
        phases,
        protocol: resp["protocol"].as_str().unwrap_or_default().to_string(),
        status: resp["status"].as_u64().unwrap_or(0) as u16,
        encoded_bytes: p
            .encoded
            .or_else(|| resp["encodedDataLength"].as_u64())
            .unwrap_or(0),
        from_cache,
        render_blocking: String::new(),
        connection_id: resp["connectionId"].as_u64().unwrap_or(0),
        connection_reused: resp["connectionReused"].as_bool() == Some(true),
        remote_address: resp["remoteIPAddress"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        cache_control: header(&response_headers, "cache-control"),
        location: header(&response_headers, "location"),
        mime_type: resp["mimeType"].as_str().unwrap_or_default().to_string(),
        error: if blocked {
            "not fetched: origin not allowed (--allow-origin)".into()
        } else {
            p.error
        },
        blocked,
        request_headers: p.request_headers,
        response_headers,
        wall_ms: p.wall_s * 1000.0,
    }
}

#[cfg(test)]
#[path = "visit_tests.rs"]
mod tests;
