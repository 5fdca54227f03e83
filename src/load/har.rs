//! Recorded browser sessions (`latscope load --har FILE`, as k6's har-to-k6): a
//! HAR 1.2 file (what a browser's DevTools export) becomes a scenario: its requests
//! to the page's origin, in the order they started, with their method, headers
//! and body, the pause a user left before the next one as that request's `sleep`,
//! the recorded status as a check, and a cookie jar per VU (recorded `Cookie`
//! headers are left out: the jar carries what the replayed responses set). One run
//! talks to one origin: requests to other hosts (CDNs, analytics, fonts) are left
//! out and counted. Parsing only; `config` turns it into a plan.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};
use serde::Deserialize;

use super::limits::MAX_ENDPOINTS;
use super::scenario::{Order, Scenario, ScenarioError, ScenarioRequest};
use super::script::{Check, Pause, Script, Step};
use crate::net::Target;

/// The largest HAR file read (recordings with bodies run large): 256 MiB.
pub const MAX_HAR: u64 = 256 << 20;
/// The longest pause kept between two recorded requests (a user away for longer is
/// not part of the session's pace).
pub const MAX_PAUSE: Duration = Duration::from_secs(60);

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    /// Milliseconds from start to the end of the response.
    #[serde(default)]
    time: f64,
    request: Request,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(rename = "postData")]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    text: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: i64,
}

/// Headers a replay never copies: pseudo-headers, framing and hop-by-hop ones,
/// `Host` (the run's), and `Cookie` (the jar's).
fn skipped_header(name: &str) -> bool {
    name.starts_with(':')
        || [
            "host",
            "content-length",
            "connection",
            "keep-alive",
            "transfer-encoding",
            "upgrade",
            "te",
            "trailer",
            "proxy-connection",
            "http2-settings",
            "cookie",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// A HAR file as a scenario, and how many of its requests went to other origins.
pub struct Recording {
    pub scenario: Scenario,
    /// Requests to other origins, left out.
    pub other_hosts: usize,
}

/// Reads a HAR file (at most [`MAX_HAR`]).
/// Reads a HAR file; `origin` (scheme://host[:port]) picks the origin replayed, the
/// page's (the first request's) when None.
pub fn load(path: &Path, origin: Option<&str>) -> Result<Recording, ScenarioError> {
    let file = path.display().to_string();
    let text = crate::input::read_text_capped(path, MAX_HAR).map_err(|e| ScenarioError {
        file: file.clone(),
        line: None,
        field: String::new(),
        message: format!("cannot read it: {e}"),
    })?;
    parse(&file, &text, origin)
}

/// Parses HAR text; `file` names it in errors, `origin` as in [`load`].
pub fn parse(file: &str, text: &str, origin: Option<&str>) -> Result<Recording, ScenarioError> {
    let fail = |line: Option<usize>, message: String| ScenarioError {
        file: file.to_string(),
        line,
        field: String::new(),
        message,
    };
    let har: Har = serde_json::from_str(text)
        .map_err(|e| fail(Some(e.line()), format!("not a HAR file: {e}")))?;
    let mut entries: Vec<(SystemTime, Entry, Target)> = Vec::new();
    for (i, e) in har.log.entries.into_iter().enumerate() {
        // data:, blob:, ws: and the like are not HTTP requests to replay.
        if !(e.request.url.starts_with("http://") || e.request.url.starts_with("https://")) {
            continue;
        }
        let started = rfc3339(&e.started).ok_or_else(|| {
            fail(
                None,
                format!(
                    "entry {}: startedDateTime '{}' is not an RFC 3339 time",
                    i + 1,
                    e.started
                ),
            )
        })?;
        let t = Target::parse(&e.request.url)
            .map_err(|err| fail(None, format!("entry {}: {err}", i + 1)))?;
        entries.push((started, e, t));
    }
    entries.sort_by_key(|(s, _, _)| *s);
    let Some(first) = entries.first().map(|(_, _, t)| t.clone()) else {
        return Err(fail(None, "no http:// or https:// request in it".into()));
    };
    let origin = match origin {
        None => first,
        Some(o) => {
            let want =
                Target::parse(o).map_err(|e| fail(None, format!("--har-origin {o}: {e}")))?;
            let found = entries.iter().find(|(_, _, t)| t.same_origin(&want));
            match found {
                Some((_, _, t)) => t.clone(),
                None => {
                    let mut seen: Vec<String> = Vec::new();
                    for (_, _, t) in &entries {
                        let o = t.origin();
                        if !seen.contains(&o) {
                            seen.push(o);
                        }
                    }
                    let more = seen.len().saturating_sub(10);
                    seen.truncate(10);
                    return Err(fail(
                        None,
                        format!(
                            "--har-origin {}: no request to it was recorded (the recording's \
                             origins: {}{})",
                            want.origin(),
                            seen.join(", "),
                            if more > 0 {
                                format!(" and {more} more")
                            } else {
                                String::new()
                            }
                        ),
                    ));
                }
            }
        }
    };
    let other_hosts = entries
        .iter()
        .filter(|(_, _, t)| !t.same_origin(&origin))
        .count();
    entries.retain(|(_, _, t)| t.same_origin(&origin));
    if entries.len() > MAX_ENDPOINTS {
        return Err(fail(
            None,
            format!(
                "{} requests to {}: one run measures at most {MAX_ENDPOINTS}",
                entries.len(),
                origin.authority()
            ),
        ));
    }
    let mut requests = Vec::new();
    let mut steps = Vec::new();
    let mut names = HashSet::new();
    for (k, (started, e, t)) in entries.iter().enumerate() {
        let method = Method::from_bytes(e.request.method.as_bytes())
            .map_err(|_| fail(None, format!("'{}' is not a method", e.request.method)))?;
        let path = crate::redact::redact_urls(&t.path_and_query);
        let mut name = format!("{method} {path}");
        let mut n = 1;
        while !names.insert(name.clone()) {
            n += 1;
            name = format!("{method} {path} #{n}");
        }
        let headers = e
            .request
            .headers
            .iter()
            .filter(|h| !skipped_header(&h.name))
            .filter_map(|h| {
                Some((
                    HeaderName::from_bytes(h.name.trim().as_bytes()).ok()?,
                    HeaderValue::from_str(h.value.trim()).ok()?,
                ))
            })
            .collect();
        // The user's pause: from this response's end to the next request's start.
        let sleep = entries.get(k + 1).and_then(|(next, _, _)| {
            let end = *started + Duration::from_secs_f64(e.time.max(0.0) / 1000.0);
            next.duration_since(end)
                .ok()
                .filter(|d| *d >= Duration::from_millis(1))
                .map(|d| d.min(MAX_PAUSE))
        });
        let mut step = Step {
            sleep: sleep.map(|d| Pause { min: d, max: d }),
            ..Default::default()
        };
        if let Some(status) = e
            .response
            .as_ref()
            .map(|r| r.status)
            .filter(|s| (100..=999).contains(s))
        {
            step.checks.push(Check::Status(vec![status as u16]));
            step.check_names.push("status".into());
        }
        step.capture = super::scenario::capture(&step, true);
        steps.push(step);
        requests.push(ScenarioRequest {
            name,
            method,
            path_or_url: t.path_and_query.clone(),
            headers,
            body: e
                .request
                .post_data
                .as_ref()
                .and_then(|p| p.text.clone())
                .map(Bytes::from)
                .unwrap_or_default(),
            weight: 1,
        });
    }
    let base = origin.origin();
    Ok(Recording {
        scenario: Scenario {
            base_url: Some(base),
            order: Order::Sequence,
            requests,
            script: Some(Script {
                setup: 0,
                setup_once: false,
                steps,
                vars: Vec::new(),
                cookies: true,
                data: None,
                think: None,
                left_out: other_hosts,
            }),
            ..Default::default()
        },
        other_hosts,
    })
}

/// An RFC 3339 time as HAR writers put it: `…T10:00:00.500Z` (Chromium) or with an
/// offset, `…T11:00:00.500+01:00` (Firefox).
fn rfc3339(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    if let Some(base) = s.strip_suffix('Z').or_else(|| s.strip_suffix('z')) {
        return humantime::parse_rfc3339_weak(base).ok();
    }
    // A trailing ±HH:MM after the time part.
    let (base, off) = s.split_at(s.len().checked_sub(6)?);
    let sign = match off.as_bytes().first()? {
        b'+' => 1i64,
        b'-' => -1,
        _ => return humantime::parse_rfc3339_weak(s).ok(),
    };
    let (h, m) = off[1..].split_once(':')?;
    let secs = sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60);
    let local = humantime::parse_rfc3339_weak(base).ok()?;
    if secs >= 0 {
        local.checked_sub(Duration::from_secs(secs as u64))
    } else {
        local.checked_add(Duration::from_secs((-secs) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HAR: &str = r#"{"log": {"version": "1.2", "entries": [
      {"startedDateTime": "2026-11-27T10:00:00.500Z", "time": 20,
       "request": {"method": "GET", "url": "http://127.0.0.1:8080/app.js", "headers": [{"name": "Accept", "value": "*/*"}]},
       "response": {"status": 200}},
      {"startedDateTime": "2026-11-27T10:00:00.000Z", "time": 100,
       "request": {"method": "GET", "url": "http://127.0.0.1:8080/?q=1",
         "headers": [{"name": ":authority", "value": "x"}, {"name": "Host", "value": "x"},
                     {"name": "Cookie", "value": "sid=old"}, {"name": "User-Agent", "value": "Chrome"}]},
       "response": {"status": 200}},
      {"startedDateTime": "2026-11-27T10:00:00.510Z", "time": 5,
       "request": {"method": "GET", "url": "https://cdn.example.test/font.woff2"}, "response": {"status": 200}},
      {"startedDateTime": "2026-11-27T10:00:03.000Z", "time": 10,
       "request": {"method": "POST", "url": "http://127.0.0.1:8080/api/login",
         "postData": {"mimeType": "application/json", "text": "{\"u\":1}"}},
       "response": {"status": 302}},
      {"startedDateTime": "2026-11-27T10:00:03.100Z", "time": 1,
       "request": {"method": "GET", "url": "data:image/png;base64,AAAA"}},
      {"startedDateTime": "2026-11-27T10:00:03.200Z", "time": 10,
       "request": {"method": "GET", "url": "http://127.0.0.1:8080/app.js"}, "response": {"status": 304}}
    ]}}"#;

    /// The page's origin only, in start order, with the user's pauses as sleeps,
    /// recorded statuses as checks, and neither Host nor Cookie copied.
    #[test]
    fn a_recording_becomes_a_scenario() {
        let r = parse("s.har", HAR, None).unwrap();
        assert_eq!(r.other_hosts, 1);
        let s = &r.scenario;
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080"));
        let names: Vec<&str> = s.requests.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "GET /?q=1",
                "GET /app.js",
                "POST /api/login",
                "GET /app.js #2"
            ]
        );
        let h: Vec<&str> = s.requests[0]
            .headers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(h, ["user-agent"]);
        assert_eq!(&s.requests[2].body[..], b"{\"u\":1}");
        let sc = s.script.as_ref().unwrap();
        assert!(sc.cookies);
        // 0.1 s → 0.5 s: 400 ms; app.js ends at 0.52 s, the login starts at 3 s.
        assert_eq!(sc.steps[0].sleep.unwrap().min, Duration::from_millis(400));
        assert_eq!(sc.steps[1].sleep.unwrap().min, Duration::from_millis(2480));
        assert_eq!(sc.steps[3].sleep, None);
        assert!(matches!(&sc.steps[2].checks[0], Check::Status(s) if s == &[302]));
        assert_eq!(
            rfc3339("2026-11-27T11:00:00.500+01:00"),
            rfc3339("2026-11-27T10:00:00.500Z")
        );
        assert!(rfc3339("yesterday").is_none());
        assert!(parse("s.har", "{}", None).is_err());
        assert!(parse("s.har", r#"{"log":{"entries":[]}}"#, None).is_err());
    }

    /// `--har-origin` replays another recorded origin (the CDN's font alone here,
    /// the page's requests left out and counted); one that was never recorded is an
    /// error naming the recording's origins.
    #[test]
    fn another_recorded_origin_is_replayed_when_asked() {
        let r = parse("s.har", HAR, Some("https://CDN.example.test")).unwrap();
        let s = &r.scenario;
        assert_eq!(s.base_url.as_deref(), Some("https://cdn.example.test"));
        let names: Vec<&str> = s.requests.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["GET /font.woff2"]);
        assert_eq!(r.other_hosts, 4);
        let Err(e) = parse("s.har", HAR, Some("http://127.0.0.1:9999")) else {
            panic!("an origin never recorded");
        };
        let e = e.to_string();
        assert!(e.contains("no request to it was recorded"), "{e}");
        assert!(
            e.contains("http://127.0.0.1:8080") && e.contains("cdn.example.test"),
            "{e}"
        );
    }
}
