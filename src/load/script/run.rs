//! A VU's side of a script while the run goes: its variables and cookie jar, the
//! request it encodes when variables or cookies make it its own, and what it makes
//! of each response (cookies stored, checks judged, values extracted).

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::cookies::{set_cookie_value, Jar};
use super::{Capture, Check, Pause, Script, Source, Step, MAX_KEPT_BODY};
use crate::load::plan::Endpoint;
use crate::net::{Scheme, Target};

/// What a response reader (HTTP/1.1, an HTTP/2 or HTTP/3 stream) kept of one
/// response for its checks and extractions.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    pub capture: Arc<Capture>,
    /// Kept headers, names lowercase, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body was longer than [`MAX_KEPT_BODY`]: `body` is its start.
    pub cut: bool,
}

impl Kept {
    /// Keeps what `capture` asks for.
    pub fn new(capture: Arc<Capture>) -> Kept {
        Kept {
            capture,
            ..Default::default()
        }
    }

    /// `reuse` emptied for a response whose `capture` is wanted (its allocations
    /// kept), or a new one.
    pub fn reused(reuse: Option<Box<Kept>>, capture: &Arc<Capture>) -> Box<Kept> {
        match reuse {
            Some(mut k) => {
                k.reset(capture);
                k
            }
            None => Box::new(Kept::new(capture.clone())),
        }
    }

    /// Empties it for the next response, keeping its allocations.
    pub fn reset(&mut self, capture: &Arc<Capture>) {
        if !Arc::ptr_eq(&self.capture, capture) {
            self.capture = capture.clone();
        }
        self.headers.clear();
        self.body.clear();
        self.cut = false;
    }

    /// A header's value (the first of that name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Offers a header of the response (kept when asked for).
    #[inline]
    pub fn offer_header(&mut self, name: &str, value: &[u8]) {
        if self.capture.wants(name) {
            self.headers.push((
                name.to_ascii_lowercase(),
                String::from_utf8_lossy(value).into_owned(),
            ));
        }
    }

    /// Offers body bytes (kept, up to the limit, when the body is asked for).
    #[inline]
    pub fn offer_body(&mut self, bytes: &[u8]) {
        if !self.capture.body || bytes.is_empty() {
            return;
        }
        let room = MAX_KEPT_BODY - self.body.len();
        if bytes.len() > room {
            self.cut = true;
        }
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The body, decoded when it came gzip- or deflate-encoded (bounded as kept).
    fn decoded(&self) -> Cow<'_, [u8]> {
        let enc = self.header("content-encoding").unwrap_or("").trim();
        let mut out = Vec::new();
        let limit = MAX_KEPT_BODY as u64;
        let ok = if enc.eq_ignore_ascii_case("gzip") || enc.eq_ignore_ascii_case("x-gzip") {
            flate2::read::MultiGzDecoder::new(&self.body[..])
                .take(limit)
                .read_to_end(&mut out)
                .is_ok()
        } else if enc.eq_ignore_ascii_case("deflate") {
            flate2::read::ZlibDecoder::new(&self.body[..])
                .take(limit)
                .read_to_end(&mut out)
                .is_ok()
        } else {
            return Cow::Borrowed(&self.body);
        };
        if ok {
            Cow::Owned(out)
        } else {
            Cow::Borrowed(&[][..])
        }
    }
}

/// One VU's script state.
#[derive(Debug)]
pub struct VuState {
    /// Values by variable id ("" when not set).
    pub vars: Vec<String>,
    pub jar: Jar,
    /// The path and query of the last request.
    pub path: String,
    /// Per check of the last response: passed.
    pub results: Vec<bool>,
    /// The last response's kept headers and body, for the next one to reuse.
    pub spare: Option<Box<Kept>>,
    rng: SmallRng,
}

impl VuState {
    /// The state of the VU with run-wide index `vu`: its data row filled in.
    pub fn new(script: &Script, vu: u64) -> VuState {
        let mut vars = vec![String::new(); script.vars.len()];
        if let Some(d) = &script.data {
            for (c, v) in d.columns.iter().zip(d.row(vu)) {
                if let Some(i) = script.vars.iter().position(|n| n == c) {
                    vars[i] = v.clone();
                }
            }
        }
        VuState {
            vars,
            jar: Jar::default(),
            path: String::new(),
            results: Vec::new(),
            spare: None,
            rng: SmallRng::seed_from_u64(vu ^ 0x7417),
        }
    }

    /// Prepares step `e`: when its variables or this VU's cookies make the request
    /// its own, returns it (for the caller to encode in its protocol); None: the
    /// endpoint's request encoded once for the run is sent as it is.
    pub fn prepare(
        &mut self,
        target: &Target,
        e: &Endpoint,
        step: &Step,
        cookies: bool,
    ) -> Option<Endpoint> {
        self.path.clear();
        match &step.path {
            Some(t) => self.path.push_str(&t.render_path(&self.vars)),
            None => self.path.push_str(&e.path_and_query),
        }
        let cookie = if cookies {
            self.jar.header(
                &target.host,
                &self.path,
                target.scheme == Scheme::Https,
                Instant::now(),
            )
        } else {
            None
        };
        if cookie.is_none() && !step.dynamic() {
            return None;
        }
        let mut headers = e.headers.clone();
        for (n, t) in &step.headers {
            // A value a header cannot carry (CR, LF, controls) is left out, never sent.
            if let Ok(v) = HeaderValue::from_str(&t.render(&self.vars)) {
                headers.push((n.clone(), v));
            }
        }
        if let Some(v) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.push((HeaderName::from_static("cookie"), v));
        }
        Some(Endpoint {
            name: String::new(),
            method: e.method.clone(),
            path_and_query: self.path.clone(),
            headers,
            body: match &step.body {
                Some(b) => Bytes::from(b.render(&self.vars)),
                None => e.body.clone(),
            },
            weight: 1,
        })
    }

    /// Takes in the response to `step` (status 0: none came) from what its reader
    /// left in `kept` (stale unless a response came and the step captures), which
    /// then serves the next response; the checks' results when the step has any.
    pub fn took(
        &mut self,
        script: &Script,
        step: &Step,
        host: &str,
        status: u16,
        kept: Option<Box<Kept>>,
    ) -> Option<&[bool]> {
        let fresh = kept
            .as_deref()
            .filter(|_| status != 0 && step.capture.is_some());
        self.take(script, step, host, status, fresh);
        self.spare = kept;
        (!step.checks.is_empty()).then_some(&self.results[..])
    }

    /// Takes in one response to `step` (status 0: none came): stores its cookies,
    /// judges its checks into `results`, sets the variables it extracts (an
    /// extraction that finds nothing empties its variable).
    pub fn take(
        &mut self,
        script: &Script,
        step: &Step,
        host: &str,
        status: u16,
        kept: Option<&Kept>,
    ) {
        if let (true, Some(k)) = (script.cookies, kept) {
            let now = Instant::now();
            for (n, v) in &k.headers {
                if n == "set-cookie" {
                    self.jar.store(host, &self.path, v, now);
                }
            }
        }
        let body = kept.map(|k| k.decoded());
        let body: &[u8] = body.as_deref().unwrap_or(&[]);
        // Parsed once, when a check or an extraction reads JSON.
        let wants_json = step.checks.iter().any(|c| matches!(c, Check::Json(..)))
            || step
                .extract
                .iter()
                .any(|x| matches!(x.from, Source::Json(_)));
        let json: Option<serde_json::Value> = if wants_json {
            serde_json::from_slice(body).ok()
        } else {
            None
        };
        self.results.clear();
        let answered = status != 0;
        for c in &step.checks {
            let ok = answered
                && match c {
                    Check::Status(list) => list.contains(&status),
                    Check::Header(name, want) => kept
                        .and_then(|k| k.header(name))
                        .is_some_and(|v| v.contains(&*want.text(&self.vars))),
                    Check::BodyContains(want) => {
                        memchr::memmem::find(body, want.text(&self.vars).as_bytes()).is_some()
                    }
                    Check::BodyRegex(re) => re.is_match(&String::from_utf8_lossy(body)),
                    Check::Json(path, want) => json
                        .as_ref()
                        .and_then(|v| path.find(v).map(super::json::text))
                        .is_some_and(|v| v == want.text(&self.vars)),
                };
            self.results.push(ok);
        }
        for x in &step.extract {
            let v = if !answered {
                None
            } else {
                match &x.from {
                    Source::Json(path) => json
                        .as_ref()
                        .and_then(|v| path.find(v).map(super::json::text)),
                    Source::Regex(re) => {
                        let text = String::from_utf8_lossy(body);
                        re.captures(&text).and_then(|c| {
                            c.get(1)
                                .or_else(|| c.get(0))
                                .map(|m| m.as_str().to_string())
                        })
                    }
                    Source::Header(name) => kept.and_then(|k| k.header(name)).map(str::to_string),
                    Source::Cookie(name) => kept.and_then(|k| {
                        k.headers
                            .iter()
                            .filter(|(n, _)| n == "set-cookie")
                            .find_map(|(_, v)| set_cookie_value(v, name))
                            .map(str::to_string)
                    }),
                }
            };
            self.vars[x.var] = v.unwrap_or_default();
        }
    }

    /// Starts from what a run-wide setup left: the variables its requests extract
    /// (this VU's data columns stay its own) and its cookies.
    pub fn adopt(&mut self, script: &Script, vars: &[String], jar: &Jar) {
        for step in &script.steps[..script.setup] {
            for x in &step.extract {
                if let Some(v) = vars.get(x.var) {
                    self.vars[x.var] = v.clone();
                }
            }
        }
        self.jar = jar.clone();
    }

    /// How long to pause after `step`: its own `sleep`, else the scenario's think
    /// time range, else `fixed`.
    pub fn pause(
        &mut self,
        script: &Script,
        step: &Step,
        fixed: std::time::Duration,
    ) -> std::time::Duration {
        match step.sleep.or(script.think) {
            Some(Pause { min, max }) if max > min => {
                let span = (max - min).as_nanos() as u64;
                min + std::time::Duration::from_nanos(self.rng.random_range(0..=span))
            }
            Some(p) => p.min,
            None => fixed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn kept(body: bool) -> Kept {
        Kept::new(Arc::new(Capture {
            headers: vec!["content-encoding".into()],
            set_cookie: false,
            body,
        }))
    }

    /// A body past [`MAX_KEPT_BODY`] is cut there (memory per VU stays bounded
    /// whatever a server sends) and says so; without a body check none is kept.
    #[test]
    fn kept_bodies_are_bounded() {
        let mut k = kept(true);
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..40 {
            k.offer_body(&chunk);
        }
        assert_eq!(k.body.len(), MAX_KEPT_BODY);
        assert!(k.cut);
        let mut k = kept(false);
        k.offer_body(&chunk);
        assert!(k.body.is_empty() && !k.cut);
    }

    /// A gzip body is decoded before checks read it; a corrupt one reads as empty
    /// (its checks fail), never panics.
    #[test]
    fn gzip_bodies_are_decoded() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(br#"{"user":"kim"}"#).unwrap();
        let mut k = kept(true);
        k.offer_header("Content-Encoding", b"gzip");
        k.offer_body(&gz.finish().unwrap());
        assert_eq!(&*k.decoded(), br#"{"user":"kim"}"#);
        let mut k = kept(true);
        k.offer_header("Content-Encoding", b"gzip");
        k.offer_body(b"not gzip at all");
        assert!(k.decoded().is_empty());
    }
}
