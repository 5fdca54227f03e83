//! What makes a scenario behave like a user (issue 34): checks on responses,
//! values extracted into per-VU variables and used as `{{name}}` in later paths,
//! headers and bodies, a setup run once per VU (log in), think time per request, a
//! cookie jar per VU ([`cookies`]) and per-VU rows of data ([`data`]).
//!
//! A plan carries a [`Script`] only when its scenario uses one of these; plain runs
//! never touch this module, and their requests stay encoded once. Scripted runs go
//! over HTTP/1.1, HTTP/2 or HTTP/3 on the epoll engine (`worker`), and over
//! HTTP/1.1 on io_uring (`uring::script`; pauses on epoll only). Each VU encodes
//! the requests that need its variables or cookies in the run's protocol, and the
//! response reader keeps only what the checks and extractions read (`Capture`):
//! the named headers, and the body (up to [`MAX_KEPT_BODY`]) only for requests
//! whose checks or extractions read it.
//! Parsing of the TOML is in `scenario`; nothing here prints.

pub mod cookies;
pub mod data;
pub mod json;
pub(crate) mod parse;
mod run;

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

pub use run::{Kept, VuState};

/// The most body bytes a response keeps for checks and extraction (1 MiB); past it
/// the body is cut, and checks see the first MiB.
pub const MAX_KEPT_BODY: usize = 1 << 20;

/// The scenario features of a run, per endpoint in plan order (setup first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    /// `endpoints[..setup]` are the `[[setup]]` requests: run once per VU, in order,
    /// before its first iteration.
    pub setup: usize,
    /// `setup_scope = "run"`: the setup runs once (by the first VU of each process),
    /// and every VU starts with the variables it extracted and the cookies it got.
    pub setup_once: bool,
    /// Per endpoint (plan order).
    pub steps: Vec<Step>,
    /// Variable names; a variable's id is its index.
    pub vars: Vec<String>,
    /// A cookie jar per VU.
    pub cookies: bool,
    /// Per-VU rows (`data = "users.csv"`).
    pub data: Option<Arc<data::Feeder>>,
    /// `think_time = "1s..3s"`: a pause drawn between these after every request
    /// (a fixed `think_time` stays the plan's `think_time`).
    pub think: Option<Pause>,
    /// `--har`: the recording's requests to other origins, left out (one run talks
    /// to one origin).
    pub left_out: usize,
}

impl Script {
    /// Whether anything needs a VU's own state (variables, setup, cookies, data):
    /// what the open model, which has no VUs, cannot run.
    pub fn needs_vus(&self) -> bool {
        self.setup > 0
            || self.cookies
            || self.data.is_some()
            || self
                .steps
                .iter()
                .any(|s| !s.extract.is_empty() || s.dynamic())
    }

    /// Whether the scenario pauses a VU (a `sleep` on a request, a think-time range,
    /// a recording's pauses): what the open model, which sends at a rate, cannot honour.
    pub fn paces(&self) -> bool {
        let pauses = |p: &Option<Pause>| p.is_some_and(|p| !p.max.is_zero());
        pauses(&self.think) || self.steps.iter().any(|s| pauses(&s.sleep))
    }

    /// Whether any request has checks.
    pub fn has_checks(&self) -> bool {
        self.steps.iter().any(|s| !s.checks.is_empty())
    }
}

/// A pause: fixed (`min == max`) or drawn uniformly between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    pub min: Duration,
    pub max: Duration,
}

/// One endpoint's scenario features.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// The path and query when they hold `{{variables}}` (the endpoint's own path is
    /// then only its name's).
    pub path: Option<Template>,
    /// Headers whose values hold variables (the endpoint keeps the others).
    pub headers: Vec<(HeaderName, Template)>,
    /// The body, when it holds variables.
    pub body: Option<Template>,
    pub checks: Vec<Check>,
    /// How each check is named in reports (`status`, `header content-type`, …).
    pub check_names: Vec<String>,
    pub extract: Vec<Extract>,
    /// `sleep` after this request (instead of the scenario's think time).
    pub sleep: Option<Pause>,
    /// What the response reader keeps for the checks and extractions.
    pub capture: Option<Arc<Capture>>,
}

impl Step {
    /// Whether the request is rendered per VU (variables in it).
    pub fn dynamic(&self) -> bool {
        self.path.is_some() || !self.headers.is_empty() || self.body.is_some()
    }
}

/// A text with `{{variable}}` holes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Template {
    pub parts: Vec<Part>,
}

/// A piece of a [`Template`].
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Var(usize),
}

/// One check on a response.
#[derive(Debug, Clone)]
pub enum Check {
    /// The status is one of these.
    Status(Vec<u16>),
    /// The header (lowercase name) is there and its value contains the text (empty:
    /// only there).
    Header(String, Template),
    BodyContains(Template),
    BodyRegex(regex_lite::Regex),
    /// The JSON body's value at the path equals the text (a string as it is, any
    /// other value as its JSON text: `3`, `true`, `null`).
    Json(json::Path, Template),
}

impl PartialEq for Check {
    fn eq(&self, o: &Check) -> bool {
        match (self, o) {
            (Check::Status(a), Check::Status(b)) => a == b,
            (Check::Header(a, x), Check::Header(b, y)) => a == b && x == y,
            (Check::BodyContains(a), Check::BodyContains(b)) => a == b,
            (Check::BodyRegex(a), Check::BodyRegex(b)) => a.as_str() == b.as_str(),
            (Check::Json(a, x), Check::Json(b, y)) => a == b && x == y,
            _ => false,
        }
    }
}

/// A value taken from a response into a variable.
#[derive(Debug, Clone)]
pub struct Extract {
    pub var: usize,
    pub from: Source,
}

impl PartialEq for Extract {
    fn eq(&self, o: &Extract) -> bool {
        self.var == o.var
            && match (&self.from, &o.from) {
                (Source::Json(a), Source::Json(b)) => a == b,
                (Source::Regex(a), Source::Regex(b)) => a.as_str() == b.as_str(),
                (Source::Header(a), Source::Header(b)) => a == b,
                (Source::Cookie(a), Source::Cookie(b)) => a == b,
                _ => false,
            }
    }
}

/// Where an extracted value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The JSON body at a path (a string as it is, other values as JSON text).
    Json(json::Path),
    /// The first capture group of a regex on the body (the whole match without one).
    Regex(regex_lite::Regex),
    /// A response header (lowercase name).
    Header(String),
    /// A cookie the response sets (`Set-Cookie`), by name.
    Cookie(String),
}

/// What the HTTP/1.1 reader keeps of a response: these headers (lowercase), every
/// `Set-Cookie`, and the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    pub headers: Vec<String>,
    pub set_cookie: bool,
    pub body: bool,
}

impl Capture {
    /// Whether a header of this name is kept.
    #[inline]
    pub fn wants(&self, name: &str) -> bool {
        (self.set_cookie && name.eq_ignore_ascii_case("set-cookie"))
            || self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }
}

/// Characters a variable's value keeps in a path; any other byte is
/// percent-encoded, so a value never splits the request line.
fn path_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b)
}

impl Template {
    /// Parses `text`: `{{name}}` is a variable, looked up with `var` (Err: the
    /// message to show).
    pub fn parse(
        text: &str,
        mut var: impl FnMut(&str) -> Result<usize, String>,
    ) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| "'{{' without a closing '}}'".to_string())?;
            let name = after[..close].trim();
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return Err(format!(
                    "'{{{{{}}}}}' is not a variable name (letters, digits, _ - .)",
                    &after[..close]
                ));
            }
            parts.push(Part::Var(var(name)?));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Whether it holds any variable.
    pub fn has_vars(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Var(_)))
    }

    /// Appends the text with `vars` filled in (an unset variable is empty).
    pub fn render_into(&self, vars: &[String], out: &mut String) {
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var(i) => out.push_str(vars.get(*i).map_or("", |v| v.as_str())),
            }
        }
    }

    /// The text with `vars` filled in.
    pub fn render(&self, vars: &[String]) -> String {
        let mut s = String::new();
        self.render_into(vars, &mut s);
        s
    }

    /// The text with `vars` filled in, borrowed when it is one piece (no copy per
    /// check for a fixed text or a lone variable).
    pub fn text<'a>(&'a self, vars: &'a [String]) -> std::borrow::Cow<'a, str> {
        match self.parts.as_slice() {
            [] => "".into(),
            [Part::Text(t)] => t.as_str().into(),
            [Part::Var(i)] => vars.get(*i).map_or("", |v| v.as_str()).into(),
            _ => self.render(vars).into(),
        }
    }

    /// For a path: variables' values percent-encoded where they hold a byte a path
    /// cannot carry (space, CR, LF, controls, non-ASCII).
    pub fn render_path(&self, vars: &[String]) -> String {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => s.push_str(t),
                Part::Var(i) => {
                    for b in vars.get(*i).map_or("", |v| v.as_str()).bytes() {
                        if path_safe(b) {
                            s.push(b as char);
                        } else {
                            s.push_str(&format!("%{b:02X}"));
                        }
                    }
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Result<usize, String> {
        match name {
            "token" => Ok(0),
            "user" => Ok(1),
            other => Err(format!("{other} unknown")),
        }
    }

    /// A pause of 0 s paces nothing (the open model takes it); any other does.
    #[test]
    fn only_real_pauses_pace() {
        let zero = Pause {
            min: Duration::ZERO,
            max: Duration::ZERO,
        };
        let one = Pause {
            min: Duration::ZERO,
            max: Duration::from_millis(1),
        };
        let with = |think, sleep| Script {
            think,
            steps: vec![Step {
                sleep,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(!with(None, None).paces());
        assert!(!with(Some(zero), Some(zero)).paces());
        assert!(with(Some(one), None).paces());
        assert!(with(None, Some(one)).paces());
    }

    #[test]
    fn templates_fill_variables() {
        let t = Template::parse("Bearer {{token}} for {{ user }}", vars).unwrap();
        assert!(t.has_vars());
        let v = vec!["abc".to_string(), "kim".to_string()];
        assert_eq!(t.render(&v), "Bearer abc for kim");
        assert_eq!(t.render(&[]), "Bearer  for ");
        assert!(Template::parse("{{nope}}", vars)
            .unwrap_err()
            .contains("nope"));
        assert!(Template::parse("{{token", vars).is_err());
        assert!(Template::parse("{{a b}}", vars).is_err());
        assert!(!Template::parse("plain", vars).unwrap().has_vars());
    }

    /// A value with a space, CR/LF or non-ASCII never reaches the request line raw.
    #[test]
    fn paths_percent_encode_values() {
        let t = Template::parse("/users/{{user}}?t={{token}}", vars).unwrap();
        let v = vec!["a b\r\nX: y".to_string(), "é/1".to_string()];
        assert_eq!(t.render_path(&v), "/users/%C3%A9/1?t=a%20b%0D%0AX:%20y");
    }
}
