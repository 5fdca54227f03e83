//! Scenario files (`latscope load -f FILE`, TOML; DESIGN.md, Commands): several named
//! requests walked in sequence by each VU or picked by weight, with the load settings
//! under `[load]`. Every problem is reported with the file, the line and the field
//! (a usage error); the values are checked here, the merge with flags is in `plan`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};
use serde::Deserialize;
use toml::Spanned;

use super::limits::{MAX_ENDPOINTS, MAX_WEIGHT};
use super::script::parse::{self as sp, RawCheck, RawExtract};
use super::script::{data, Capture, Pause, Script, Step};
use super::stages::{self, Stage};
use super::threshold::{self, Threshold};

/// How each VU picks its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Every VU walks the requests in order (story 5: every endpoint per iteration).
    #[default]
    Sequence,
    /// Each request is picked at random, in proportion to its `weight`.
    Weighted,
}

/// A bad scenario file: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scenario {file}{}: {field}{message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
pub struct ScenarioError {
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field, as `field `x`: `, or empty.
    pub field: String,
    pub message: String,
}

/// `[load]`: the same names as the flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioLoad {
    pub connections: Option<u32>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub rate: Option<f64>,
    pub stages: Option<Vec<Stage>>,
    pub threads: Option<usize>,
    pub streams: Option<u32>,
    pub timeout: Option<Duration>,
    pub no_keepalive: bool,
}

/// One `[[request]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioRequest {
    pub name: String,
    pub method: Method,
    /// A path (relative to `base_url`) or a full URL.
    pub path_or_url: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    pub weight: u32,
}

/// A checked scenario file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scenario {
    pub base_url: Option<String>,
    pub order: Order,
    pub think_time: Option<Duration>,
    pub thresholds: Vec<Threshold>,
    pub load: ScenarioLoad,
    /// `[[setup]]`: run once per VU before its requests.
    pub setup: Vec<ScenarioRequest>,
    pub requests: Vec<ScenarioRequest>,
    /// Checks, variables, setup, cookies, data (None: plain requests); its steps
    /// are `setup` then `requests`.
    pub script: Option<Script>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    base_url: Option<Spanned<String>>,
    order: Option<Spanned<String>>,
    think_time: Option<Spanned<String>>,
    #[serde(default)]
    thresholds: Vec<Spanned<String>>,
    cookies: Option<bool>,
    data: Option<Spanned<String>>,
    data_order: Option<Spanned<String>>,
    setup_scope: Option<Spanned<String>>,
    load: Option<RawLoad>,
    #[serde(default, deserialize_with = "bounded_requests")]
    setup: Vec<Spanned<RawRequest>>,
    #[serde(default, rename = "request", deserialize_with = "bounded_requests")]
    requests: Vec<Spanned<RawRequest>>,
}

/// The `[[request]]` array, refused past [`MAX_ENDPOINTS`] as it is read (an inline
/// `request = [{…}, …]` array too: [`count_tables`] counts only the tables).
fn bounded_requests<'de, D>(d: D) -> Result<Vec<Spanned<RawRequest>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Bounded;
    impl<'de> serde::de::Visitor<'de> for Bounded {
        type Value = Vec<Spanned<RawRequest>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("[[request]] tables")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(r) = seq.next_element()? {
                if out.len() == MAX_ENDPOINTS {
                    return Err(serde::de::Error::custom(too_many()));
                }
                out.push(r);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Bounded)
}

/// The message for a scenario with more requests than a run measures.
fn too_many() -> String {
    format!("more than {MAX_ENDPOINTS} [[request]] tables: one run measures at most {MAX_ENDPOINTS} requests")
}

/// Counts the `[[request]]` table headers line by line, before the TOML is parsed:
/// the line of the one past [`MAX_ENDPOINTS`], if there is one.
fn count_tables(text: &str) -> Option<usize> {
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("[[") else {
            continue;
        };
        let Some((name, _)) = rest.split_once("]]") else {
            continue;
        };
        let name = name.trim().trim_matches('"');
        if name == "request" || name == "setup" {
            n += 1;
            if n > MAX_ENDPOINTS {
                return Some(i + 1);
            }
        }
    }
    None
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    connections: Option<Spanned<i64>>,
    duration: Option<Spanned<String>>,
    requests: Option<Spanned<i64>>,
    rate: Option<Spanned<f64>>,
    stages: Option<Spanned<String>>,
    threads: Option<Spanned<i64>>,
    streams: Option<Spanned<i64>>,
    timeout: Option<Spanned<String>>,
    no_keepalive: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    path: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    body: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    sleep: Option<Spanned<String>>,
    check: Option<Spanned<RawCheck>>,
    #[serde(default)]
    extract: BTreeMap<String, Spanned<RawExtract>>,
}

/// The largest scenario file read: 64 MiB (10,000 requests with bodies of a few
/// KiB each).
pub const MAX_FILE: u64 = 64 << 20;

/// Reads and checks a scenario file (at most [`MAX_FILE`]; a device is refused).
/// A `data` file is read relative to the scenario's folder.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = crate::input::read_text_capped(path, MAX_FILE).map_err(|e| ScenarioError {
        file: path.display().to_string(),
        line: None,
        field: String::new(),
        message: format!("cannot read it: {e}"),
    })?;
    parse_in(&path.display().to_string(), &text, path.parent())
}

/// Parses scenario text; `file` names it in errors (a `data` file is read relative
/// to the working directory).
pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    parse_in(file, text, None)
}

/// Parses scenario text whose `data` file is relative to `dir`.
pub fn parse_in(file: &str, text: &str, dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let at = |span: std::ops::Range<usize>, field: &str, message: String| ScenarioError {
        file: file.to_string(),
        line: Some(line_of(span.start)),
        field: format!("field `{field}`: "),
        message,
    };
    if let Some(line) = count_tables(text) {
        return Err(ScenarioError {
            file: file.to_string(),
            line: Some(line),
            field: String::new(),
            message: too_many(),
        });
    }
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        // serde names the field in its message ("unknown field `x`", "missing field").
        ScenarioError {
            file: file.to_string(),
            line: e.span().map(|s| line_of(s.start)),
            field: String::new(),
            message,
        }
    })?;
    let dur = |s: &Spanned<String>, field: &str| {
        crate::units::parse_duration(s.get_ref()).map_err(|m| at(s.span(), field, m))
    };
    let positive = |s: &Spanned<i64>, field: &str, min: i64| {
        let v = *s.get_ref();
        if v < min {
            Err(at(s.span(), field, format!("must be at least {min}")))
        } else {
            Ok(v)
        }
    };

    let mut out = Scenario {
        base_url: raw.base_url.as_ref().map(|b| b.get_ref().clone()),
        ..Default::default()
    };
    if let Some(o) = &raw.order {
        out.order = match o.get_ref().as_str() {
            "sequence" => Order::Sequence,
            "weighted" => Order::Weighted,
            other => {
                return Err(at(
                    o.span(),
                    "order",
                    format!("'{other}': use \"sequence\" or \"weighted\""),
                ))
            }
        };
    }
    let mut think_range = None;
    if let Some(t) = &raw.think_time {
        let p = sp::pause(t, "think_time").map_err(|(s, f, m)| at(s, &f, m))?;
        out.think_time = Some(p.min);
        if p.max > p.min {
            think_range = Some(p);
        }
    }
    for t in &raw.thresholds {
        out.thresholds
            .push(threshold::parse(t.get_ref()).map_err(|e| at(t.span(), "thresholds", e.reason))?);
    }
    if let Some(l) = &raw.load {
        let mut load = ScenarioLoad {
            no_keepalive: l.no_keepalive.unwrap_or(false),
            ..Default::default()
        };
        if let Some(c) = &l.connections {
            load.connections =
                Some(positive(c, "load.connections", 1)?.min(u32::MAX as i64) as u32);
        }
        if let Some(d) = &l.duration {
            let v = dur(d, "load.duration")?;
            if v.is_zero() {
                return Err(at(d.span(), "load.duration", "must be more than 0".into()));
            }
            load.duration = Some(v);
        }
        if let Some(n) = &l.requests {
            load.requests = Some(positive(n, "load.requests", 1)? as u64);
        }
        if let Some(r) = &l.rate {
            let v = *r.get_ref();
            if !(v.is_finite() && v > 0.0) {
                return Err(at(r.span(), "load.rate", "must be more than 0".into()));
            }
            load.rate = Some(v);
        }
        if let Some(s) = &l.stages {
            load.stages = Some(
                stages::parse(s.get_ref()).map_err(|e| at(s.span(), "load.stages", e.reason))?,
            );
        }
        if let Some(t) = &l.threads {
            load.threads = Some(positive(t, "load.threads", 1)? as usize);
        }
        if let Some(t) = &l.streams {
            load.streams = Some(positive(t, "load.streams", 1)?.min(u32::MAX as i64) as u32);
        }
        if let Some(t) = &l.timeout {
            let v = dur(t, "load.timeout")?;
            if v.is_zero() {
                return Err(at(t.span(), "load.timeout", "must be more than 0".into()));
            }
            load.timeout = Some(v);
        }
        out.load = load;
    }
    if let Some(s) = &raw.setup_scope {
        if !matches!(s.get_ref().as_str(), "vu" | "run") {
            return Err(at(
                s.span(),
                "setup_scope",
                format!(
                    "'{}': use \"vu\" (each VU logs in) or \"run\" (once)",
                    s.get_ref()
                ),
            ));
        }
    }
    // Variables: what the requests extract, then the data file's columns.
    let feeder = match &raw.data {
        Some(d) => {
            Some(read_data(d, raw.data_order.as_ref(), dir).map_err(|(s, f, m)| at(s, &f, m))?)
        }
        None => None,
    };
    let mut vars: Vec<String> = Vec::new();
    for r in raw.setup.iter().chain(&raw.requests) {
        for (name, x) in &r.get_ref().extract {
            if !sp::is_var_name(name) {
                return Err(at(
                    x.span(),
                    "extract",
                    format!("'{name}' is not a variable name (letters, digits, _ - .)"),
                ));
            }
            if !vars.contains(name) {
                vars.push(name.clone());
            }
        }
    }
    for c in feeder.iter().flat_map(|f| &f.columns) {
        if !vars.contains(c) {
            vars.push(c.clone());
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    let n_setup = raw.setup.len();
    let mut names = std::collections::HashSet::with_capacity(raw.requests.len() + raw.setup.len());
    for (k, r) in raw.setup.iter().chain(raw.requests.iter()).enumerate() {
        let (kind, i) = if k < n_setup {
            ("setup", k)
        } else {
            ("request", k - n_setup)
        };
        let span = r.span();
        let r = r.get_ref();
        let field = |f: &str| format!("{kind}[{}].{f}", i + 1);
        let script_err = |(s, f, m): sp::At| at(s, &field(&f), m);
        let mut step = Step::default();
        let name = match &r.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err(at(n.span(), &field("name"), "must not be empty".into()))
            }
            Some(n) => n.get_ref().trim().to_string(),
            None => format!("{kind}{}", i + 1),
        };
        if !names.insert(name.clone()) {
            let s = r.name.as_ref().map_or(span.clone(), |n| n.span());
            return Err(at(s, &field("name"), format!("'{name}' is used twice")));
        }
        let method = match &r.method {
            Some(m) => {
                Method::from_bytes(m.get_ref().to_ascii_uppercase().as_bytes()).map_err(|_| {
                    at(
                        m.span(),
                        &field("method"),
                        format!("'{}' is not a method", m.get_ref()),
                    )
                })?
            }
            None if r.body.is_some() => Method::POST,
            None => Method::GET,
        };
        let path_or_url = match (&r.path, &r.url) {
            (Some(_), Some(u)) => {
                return Err(at(
                    u.span(),
                    &field("url"),
                    "give either path or url, not both".into(),
                ))
            }
            (Some(p), None) => {
                if !p.get_ref().starts_with('/') {
                    return Err(at(p.span(), &field("path"), "must start with '/'".into()));
                }
                // Raw into the request line: CR/LF would split it (a header or a
                // second request injected), a space would end it.
                if p.get_ref().contains(' ') || crate::net::target::has_control(p.get_ref()) {
                    return Err(at(
                        p.span(),
                        &field("path"),
                        "must not hold spaces, CR, LF or other control characters (percent-encode them: %20, %0D, %0A)".into(),
                    ));
                }
                if p.get_ref().contains("{{") {
                    step.path = Some(sp::template(p, "path", &vars).map_err(script_err)?);
                }
                p.get_ref().clone()
            }
            (None, Some(u)) if u.get_ref().contains("{{") => {
                return Err(at(
                    u.span(),
                    &field("url"),
                    "variables go in `path` (with base_url), not in `url`".into(),
                ))
            }
            (None, Some(u)) => {
                crate::net::Target::parse(u.get_ref())
                    .map_err(|e| at(u.span(), &field("url"), e.to_string()))?;
                u.get_ref().clone()
            }
            (None, None) => {
                return Err(at(
                    span,
                    &field("path"),
                    "missing (give path or url)".into(),
                ))
            }
        };
        let mut headers = Vec::new();
        for (n, v) in &r.headers {
            let name = HeaderName::from_bytes(n.trim().as_bytes()).map_err(|_| {
                at(
                    v.span(),
                    &field("headers"),
                    format!("'{n}' is not a header name"),
                )
            })?;
            if v.get_ref().contains("{{") {
                let t = Spanned::new(v.span(), v.get_ref().trim().to_string());
                step.headers.push((
                    name,
                    sp::template(&t, "headers", &vars).map_err(script_err)?,
                ));
                continue;
            }
            let value = HeaderValue::from_str(v.get_ref().trim()).map_err(|_| {
                at(
                    v.span(),
                    &field("headers"),
                    format!("the value of '{n}' has characters a header cannot carry"),
                )
            })?;
            headers.push((name, value));
        }
        let weight = match &r.weight {
            Some(w) if *w.get_ref() > MAX_WEIGHT => {
                return Err(at(
                    w.span(),
                    &field("weight"),
                    format!(
                        "{} is more than {MAX_WEIGHT}, the largest weight",
                        w.get_ref()
                    ),
                ))
            }
            Some(w) => positive(w, &field("weight"), 1)? as u32,
            None => 1,
        };
        if let Some(b) = r.body.as_ref().filter(|b| b.get_ref().contains("{{")) {
            step.body = Some(sp::template(b, "body", &vars).map_err(script_err)?);
        }
        if let Some(c) = &r.check {
            (step.checks, step.check_names) = sp::checks(c.get_ref(), &vars).map_err(script_err)?;
        }
        step.extract = sp::extracts(&r.extract, &vars).map_err(script_err)?;
        if let Some(s) = &r.sleep {
            step.sleep = Some(sp::pause(s, "sleep").map_err(script_err)?);
        }
        // A body read by a check or an extraction comes gzip at most (decoded
        // then), unless the request says what it accepts.
        if step_reads_body(&step)
            && !headers
                .iter()
                .any(|(n, _): &(HeaderName, HeaderValue)| n == http::header::ACCEPT_ENCODING)
        {
            headers.push((
                http::header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip"),
            ));
        }
        let req = ScenarioRequest {
            name,
            method,
            path_or_url,
            headers,
            body: r
                .body
                .as_ref()
                .map(|b| Bytes::from(b.get_ref().clone()))
                .unwrap_or_default(),
            weight,
        };
        if kind == "setup" {
            out.setup.push(req);
        } else {
            out.requests.push(req);
        }
        steps.push(step);
    }
    out.script = script(&raw, steps, vars, feeder, think_range);
    // `weight` alone means weighted selection (issue 34: weights were silently
    // ignored); with an explicit `order = "sequence"` it is a contradiction.
    if let Some(w) = raw
        .requests
        .iter()
        .find_map(|r| r.get_ref().weight.as_ref())
    {
        match raw.order.as_ref().map(|o| o.get_ref().as_str()) {
            None => out.order = Order::Weighted,
            Some("sequence") => {
                return Err(at(
                    w.span(),
                    "weight",
                    "weights pick requests at random in proportion, but order = \"sequence\" \
                     walks them in turn: remove `order` (weights alone mean weighted) or the weights"
                        .into(),
                ))
            }
            Some(_) => {}
        }
    }
    if out.requests.is_empty() {
        return Err(ScenarioError {
            file: file.to_string(),
            line: None,
            field: String::new(),
            message: "no [[request]] given".into(),
        });
    }
    Ok(out)
}

/// Whether a check or an extraction of `s` reads the response body.
fn step_reads_body(s: &Step) -> bool {
    use super::script::{Check, Source};
    s.checks.iter().any(|c| {
        matches!(
            c,
            Check::BodyContains(_) | Check::BodyRegex(_) | Check::Json(..)
        )
    }) || s
        .extract
        .iter()
        .any(|x| matches!(x.from, Source::Json(_) | Source::Regex(_)))
}

/// What the response reader keeps for a step's checks and extractions (None:
/// nothing, the plain reader).
pub(crate) fn capture(s: &Step, cookies: bool) -> Option<Arc<Capture>> {
    use super::script::{Check, Source};
    let mut c = Capture {
        set_cookie: cookies,
        body: step_reads_body(s),
        headers: Vec::new(),
    };
    for check in &s.checks {
        if let Check::Header(n, _) = check {
            c.headers.push(n.clone());
        }
    }
    for x in &s.extract {
        match &x.from {
            Source::Header(n) => c.headers.push(n.clone()),
            Source::Cookie(_) => c.set_cookie = true,
            _ => {}
        }
    }
    if c.body {
        c.headers.push("content-encoding".into());
    }
    (c != Capture::default()).then(|| Arc::new(c))
}

/// The script of a scenario, when it uses any of checks, extraction, variables,
/// setup, sleeps, a think-time range, cookies or data. The cookie jar is on by
/// default when VUs carry state (setup, extraction, variables, data), where a
/// session matters; `cookies = true` turns it on for any scenario, `false` off.
fn script(
    raw: &RawScenario,
    mut steps: Vec<Step>,
    vars: Vec<String>,
    feeder: Option<data::Feeder>,
    think: Option<Pause>,
) -> Option<Script> {
    let stateful = !raw.setup.is_empty()
        || feeder.is_some()
        || steps.iter().any(|s| !s.extract.is_empty() || s.dynamic());
    let cookies = raw.cookies.unwrap_or(stateful);
    let any = stateful
        || cookies
        || think.is_some()
        || steps
            .iter()
            .any(|s| !s.checks.is_empty() || s.sleep.is_some());
    if !any {
        return None;
    }
    for s in &mut steps {
        s.capture = capture(s, cookies);
    }
    Some(Script {
        setup: raw.setup.len(),
        setup_once: matches!(
            raw.setup_scope.as_ref().map(|s| s.get_ref().as_str()),
            Some("run")
        ),
        steps,
        vars,
        cookies,
        data: feeder.map(Arc::new),
        think,
        left_out: 0,
    })
}

/// Reads `data` (relative to `dir`) in `data_order`; errors as (span, field,
/// message), a bad row naming the data file's line.
fn read_data(
    d: &Spanned<String>,
    order: Option<&Spanned<String>>,
    dir: Option<&Path>,
) -> Result<data::Feeder, sp::At> {
    let random = match order.map(|o| (o, o.get_ref().as_str())) {
        None | Some((_, "sequence")) => false,
        Some((_, "random")) => true,
        Some((o, other)) => {
            return Err((
                o.span(),
                "data_order".into(),
                format!("'{other}': use \"sequence\" or \"random\""),
            ))
        }
    };
    let rel = Path::new(d.get_ref());
    let path = match dir {
        Some(dir) if rel.is_relative() => dir.join(rel),
        _ => rel.to_path_buf(),
    };
    let text = crate::input::read_text_capped(&path, data::MAX_DATA_FILE).map_err(|e| {
        (
            d.span(),
            "data".to_string(),
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    data::parse(&text, random).map_err(|e| {
        (
            d.span(),
            "data".to_string(),
            format!(
                "{}{}: {}",
                path.display(),
                e.line.map(|l| format!(", line {l}")).unwrap_or_default(),
                e.message
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
base_url = "http://127.0.0.1:8080"
order = "weighted"
think_time = "10ms"
thresholds = ["p99<1s", "place:p99<300ms"]

[load]
connections = 4
duration = "3s"

[[request]]
name = "places"
path = "/places"

[[request]]
name = "search"
method = "post"
path = "/search"
body = '{"q":"seoul"}'
headers = { Accept = "application/json" }
weight = 2
"#;

    #[test]
    fn parses_the_design_example() {
        let s = parse("s.toml", GOOD).unwrap();
        assert_eq!(s.order, Order::Weighted);
        assert_eq!(s.think_time, Some(Duration::from_millis(10)));
        assert_eq!(s.thresholds.len(), 2);
        assert_eq!(s.load.connections, Some(4));
        assert_eq!(s.requests[1].method, Method::POST);
        assert_eq!(s.requests[1].weight, 2);
        assert_eq!(s.requests[1].headers[0].0.as_str(), "accept");
    }

    fn err(text: &str) -> ScenarioError {
        parse("s.toml", text).unwrap_err()
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = err("[load]\nduration = \"3 parsecs\"\n[[request]]\npath = \"/\"\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.to_string().contains("load.duration"), "{e}");
        let e = err("[[request]]\npath = \"/\"\n\n[[request]]\npath = \"nope\"\n");
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.to_string().contains("request[2].path"), "{e}");
        let e = err("[[request]]\npath = \"/\"\nwieght = 3\n");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().contains("wieght"), "{e}");
        let e = err("order = \"random\"\n[[request]]\npath = \"/\"\n");
        assert!(
            e.to_string().contains("line 1") && e.to_string().contains("order"),
            "{e}"
        );
        let e = err("thresholds = [\"p98<1s\"]\n[[request]]\npath = \"/\"\n");
        assert!(e.to_string().contains("thresholds"), "{e}");
        assert!(err("base_url = \"http://x\"\n")
            .to_string()
            .contains("no [[request]]"));
        let e = err("[[request]]\npath = \"/\"\nweight = 0\n");
        assert!(e.to_string().contains("request[1].weight"), "{e}");
        let e = err(
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/\"\n",
        );
        assert!(e.to_string().contains("used twice"), "{e}");
        let e = err("x = [\n");
        assert!(e.line.is_some(), "{e}");
    }

    /// Issue 34 item 6: weights alone mean weighted order; with an explicit
    /// sequence they are refused naming the line.
    #[test]
    fn weights_alone_mean_weighted() {
        let s = parse(
            "s.toml",
            "[[request]]\npath = \"/a\"\nweight = 3\n[[request]]\npath = \"/b\"\n",
        )
        .unwrap();
        assert_eq!(s.order, Order::Weighted);
        assert!(s.script.is_none(), "a plain scenario has no script");
        let s = parse("s.toml", "[[request]]\npath = \"/a\"\n").unwrap();
        assert_eq!(s.order, Order::Sequence);
        let e = err("order = \"sequence\"\n[[request]]\npath = \"/a\"\nweight = 3\n");
        assert_eq!(e.line, Some(4), "{e}");
    }

    const API: &str = r#"
base_url = "http://127.0.0.1:8080"
think_time = "1s..2s"
[[setup]]
name = "login"
path = "/login"
body = '{"u":"kim"}'
extract = { token = { json = "$.token" }, sid = { cookie = "session" } }
[[request]]
name = "me"
path = "/users/{{token}}"
headers = { Authorization = "Bearer {{token}}", Accept = "application/json" }
sleep = "250ms"
check = { status = [200, 204], headers = { X-Id = "" }, json = { "a.b" = 3 } }
"#;

    /// Issue 34 items 1–3: setup, extraction, templates, checks, sleeps; the
    /// response reader keeps what they read; the jar is on when VUs carry state.
    #[test]
    fn parses_a_login_scenario() {
        use crate::load::script::{Check, Part};
        let s = parse("s.toml", API).unwrap();
        assert_eq!((s.setup.len(), s.requests.len()), (1, 1));
        let sc = s.script.as_ref().unwrap();
        assert_eq!(sc.setup, 1);
        assert_eq!(sc.vars, ["sid", "token"]);
        assert!(sc.cookies && sc.needs_vus() && sc.has_checks());
        assert_eq!(sc.think.unwrap().max, Duration::from_secs(2));
        assert_eq!(s.think_time, Some(Duration::from_secs(1)));
        let me = &sc.steps[1];
        assert_eq!(me.path.as_ref().unwrap().parts[1], Part::Var(1));
        assert_eq!(me.headers.len(), 1, "only the templated header");
        assert_eq!(
            s.requests[0].headers.len(),
            2,
            "Accept and accept-encoding: gzip"
        );
        assert!(matches!(me.checks[0], Check::Status(ref l) if l == &[200, 204]));
        assert_eq!(me.check_names, ["status", "header x-id", "json a.b"]);
        assert_eq!(me.sleep.unwrap().min, Duration::from_millis(250));
        let cap = me.capture.as_ref().unwrap();
        assert!(cap.body && cap.set_cookie && cap.wants("X-Id") && !cap.wants("server"));
        let login = sc.steps[0].capture.as_ref().unwrap();
        assert!(login.body && login.set_cookie);
        assert_eq!(sc.steps[0].extract.len(), 2);
        // `cookies = false` turns the jar off; checks alone keep it off.
        let s = parse("s.toml", &format!("cookies = false\n{API}")).unwrap();
        assert!(!s.script.unwrap().cookies);
        let s = parse(
            "s.toml",
            "[[request]]\npath = \"/\"\ncheck = { status = 200 }\n",
        )
        .unwrap();
        let sc = s.script.unwrap();
        assert!(!sc.cookies && !sc.needs_vus());
        assert_eq!(
            sc.steps[0].capture, None,
            "a status check reads nothing more"
        );
    }

    #[test]
    fn script_errors_name_line_and_field() {
        let e = err("[[request]]\npath = \"/{{who}}\"\n");
        assert_eq!(e.line, Some(2), "{e}");
        assert!(
            e.to_string().contains("request[1].path") && e.to_string().contains("{{who}}"),
            "{e}"
        );
        let e = err("[[request]]\nurl = \"http://h/{{x}}\"\n");
        assert!(e.to_string().contains("not in `url`"), "{e}");
        let e = err("[[request]]\npath = \"/\"\nsleep = \"3s..1s\"\n");
        assert_eq!(e.line, Some(3), "{e}");
        let e = err("[[request]]\npath = \"/\"\ncheck = { json = { \"a..b\" = 1 } }\n");
        assert!(e.to_string().contains("request[1].check.json"), "{e}");
        let e = err("[[request]]\npath = \"/\"\ncheck = { stauts = 200 }\n");
        assert!(e.to_string().contains("stauts"), "{e}");
        let e = err("[[setup]]\npath = \"/\"\n[[setup]]\npath = \"/\"\nextract = { \"a b\" = { json = \"x\" } }\n[[request]]\npath = \"/\"\n");
        assert_eq!(e.line, Some(5), "{e}");
        let e = err("data_order = \"shuffled\"\ndata = \"x.csv\"\n[[request]]\npath = \"/\"\n");
        assert!(e.to_string().contains("data_order"), "{e}");
        let e = err("setup_scope = \"once\"\n[[request]]\npath = \"/\"\n");
        assert!(
            e.to_string().contains("setup_scope") && e.line == Some(1),
            "{e}"
        );
        let s = parse("s.toml", &format!("setup_scope = \"run\"\n{API}")).unwrap();
        assert!(s.script.unwrap().setup_once);
        let e = err("data = \"/nonexistent/users.csv\"\n[[request]]\npath = \"/\"\n");
        assert!(
            e.to_string().contains("cannot read") && e.line == Some(1),
            "{e}"
        );
    }

    /// Issue 28 item 2: CR/LF (or a space) in a path would split the request line;
    /// refused naming the line, as in headers and methods.
    #[test]
    fn control_characters_in_paths_are_refused() {
        for path in ["/ok\\r\\nX: y", "/a\\nb", "/a b", "/a\\tb", "/a\\u0000"] {
            let e = err(&format!("\n[[request]]\npath = \"{path}\"\n"));
            assert_eq!(e.line, Some(3), "{path}: {e}");
            assert!(e.to_string().contains("request[1].path"), "{e}");
            assert!(e.to_string().contains("control characters"), "{e}");
        }
        let e = err("[[request]]\nurl = \"http://h/a\\r\\nX: y\"\n");
        assert!(e.to_string().contains("request[1].url"), "{e}");
        assert!(parse("s.toml", "[[request]]\npath = \"/a%0D%0Ab\"\n").is_ok());
    }

    /// Issue 28 item 4: a weight past the cap is refused naming it; the largest
    /// weights on 10,000 requests still sum within u64 (the engine's type).
    #[test]
    fn weights_are_capped() {
        let e = err("[[request]]\npath = \"/\"\nweight = 4294967295\n");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.to_string().contains("request[1].weight"), "{e}");
        assert!(e.to_string().contains("1000000"), "{e}");
        let s = parse("s.toml", "[[request]]\npath = \"/\"\nweight = 1000000\n").unwrap();
        assert_eq!(s.requests[0].weight, 1_000_000);
        assert!((MAX_ENDPOINTS as u64)
            .checked_mul(MAX_WEIGHT as u64)
            .is_some());
    }

    /// Issue 28 item 8: the request limit is enforced as the file is read (the
    /// table past it is named by line), also for an inline array; 10,000 requests
    /// parse in linear time (names checked with a set).
    #[test]
    fn the_request_limit_is_enforced_while_reading() {
        let tables = |n: usize| {
            let mut t = String::from("base_url = \"http://127.0.0.1:9\"\n");
            for i in 0..n {
                t.push_str(&format!("[[request]]\nname = \"r{i}\"\npath = \"/p{i}\"\n"));
            }
            t
        };
        let e = err(&tables(MAX_ENDPOINTS + 1));
        assert_eq!(e.line, Some(2 + 3 * MAX_ENDPOINTS), "{e}");
        assert!(e.to_string().contains("at most 10000"), "{e}");
        let inline = format!(
            "request = [{}]\n",
            vec!["{path = \"/\"}"; MAX_ENDPOINTS + 1].join(", ")
        );
        let e = err(&inline);
        assert!(e.to_string().contains("at most 10000"), "{e}");
        let start = std::time::Instant::now();
        let s = parse("s.toml", &tables(MAX_ENDPOINTS)).unwrap();
        assert_eq!(s.requests.len(), MAX_ENDPOINTS);
        // Generous: linear parsing takes well under a second even unoptimised.
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }
}
