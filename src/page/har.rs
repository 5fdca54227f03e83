//! A page run as a HAR 1.2 file (`latscope page --har FILE`): one page per visit,
//! one entry per request with its timings (blocked, dns, connect, ssl, send, wait,
//! receive; -1 where a phase did not happen, as the format says). The file
//! `latscope load --har` reads to replay the page under load. Secrets are redacted
//! as in every other output (URL credentials and token parameters, Authorization,
//! Cookie and Set-Cookie values) unless `--show-secrets`. Building only: the
//! command writes the file.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use super::model::{PageRun, Request, Visit};

/// An RFC 3339 time with milliseconds, UTC, from ms since the Unix epoch.
fn rfc3339(ms: f64) -> String {
    let t = UNIX_EPOCH + Duration::from_micros((ms.max(0.0) * 1000.0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

fn headers(h: &[(String, String)]) -> Value {
    Value::Array(
        h.iter()
            .map(|(k, v)| json!({"name": k, "value": crate::redact::redact_value(k, v, &[])}))
            .collect(),
    )
}

/// HAR's "httpVersion": HTTP/1.1, HTTP/2, HTTP/3.
fn http_version(protocol: &str) -> String {
    match protocol {
        "h2" => "HTTP/2".into(),
        "h3" | "h3-29" => "HTTP/3".into(),
        "" => String::new(),
        p => p.to_ascii_uppercase(),
    }
}

fn ms(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!((x * 1000.0).round() / 1000.0),
        _ => json!(-1),
    }
}

fn entry(page: &str, visit: &Visit, r: &Request) -> Value {
    let p = &r.phases;
    let total = (r.end_ms - r.start_ms).max(0.0);
    let wall = if r.wall_ms > 0.0 {
        r.wall_ms
    } else {
        visit.started_wall_ms + r.start_ms
    };
    let status_text = http::StatusCode::from_u16(r.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let version = http_version(&r.protocol);
    let body_size = if r.from_cache {
        0
    } else {
        r.encoded_bytes as i64
    };
    let error = if r.error.is_empty() {
        Value::Null
    } else {
        json!(r.error)
    };
    json!({
        "pageref": page,
        "startedDateTime": rfc3339(wall),
        "time": (total * 1000.0).round() / 1000.0,
        "request": {
            "method": r.method,
            "url": r.url,
            "httpVersion": version,
            "cookies": [],
            "headers": headers(&r.request_headers),
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": r.status,
            "statusText": status_text,
            "httpVersion": version,
            "cookies": [],
            "headers": headers(&r.response_headers),
            "content": {"size": r.encoded_bytes, "mimeType": r.mime_type},
            "redirectURL": r.location,
            "headersSize": -1,
            "bodySize": body_size,
            "_error": error,
        },
        "cache": {},
        "timings": {
            "blocked": ms(Some(p.queued)),
            "dns": ms(p.dns),
            // HAR's connect includes ssl.
            "connect": ms(p.connect.map(|c| c + p.tls.unwrap_or(0.0))),
            "ssl": ms(p.tls),
            "send": ms(Some(p.send.unwrap_or(0.0))),
            "wait": ms(Some(p.wait.unwrap_or(0.0))),
            "receive": ms(Some(p.receive.unwrap_or(0.0))),
        },
        "serverIPAddress": r.remote_address,
        "connection": r.connection_id.to_string(),
        "_fromCache": r.from_cache,
        "_renderBlocking": r.render_blocking,
        "_resourceType": r.resource_type,
    })
}

/// The run as a HAR document (redacted for output).
pub fn document(run: &PageRun) -> Value {
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    for v in &run.visits {
        let id = format!("{}_{}", v.kind.name(), v.index);
        let title = if v.title.is_empty() {
            run.url.clone()
        } else {
            v.title.clone()
        };
        pages.push(json!({
            "startedDateTime": rfc3339(v.started_wall_ms),
            "id": id,
            "title": title,
            "pageTimings": {
                "onContentLoad": ms(v.milestones.dom_content_loaded_ms),
                "onLoad": ms(v.milestones.load_ms),
            },
        }));
        entries.extend(v.requests.iter().map(|r| entry(&id, v, r)));
    }
    let mut doc = json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "latscope", "version": env!("CARGO_PKG_VERSION")},
            "browser": {"name": "Chromium", "version": run.browser},
            "pages": pages,
            "entries": entries,
        }
    });
    crate::redact::json_for_output(&mut doc);
    doc
}
