//! The scenario file's script fields, as read by `scenario`: a request's `check`,
//! `extract` and `sleep`, and `{{variables}}` in its path, headers and body. Every
//! error names the field; `scenario` adds the file and line from the span.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::{json, Check, Extract, Pause, Source, Template};

/// An error: the span, the field (after `request[N].`) and the message.
pub type At = (Range<usize>, String, String);

fn at(span: Range<usize>, field: &str, message: impl Into<String>) -> At {
    (span, field.to_string(), message.into())
}

/// `check = { … }` of one request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    status: Option<Spanned<toml::Value>>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    body_contains: Option<Spanned<String>>,
    body_regex: Option<Spanned<String>>,
    #[serde(default)]
    json: BTreeMap<String, Spanned<toml::Value>>,
}

/// One `extract.NAME = { json | regex | header | cookie = "…" }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExtract {
    json: Option<Spanned<String>>,
    regex: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
    cookie: Option<Spanned<String>>,
}

/// A variable name as `{{name}}` takes it.
pub fn is_var_name(n: &str) -> bool {
    !n.is_empty()
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// A template of `s`, variables looked up in `vars`.
pub fn template(s: &Spanned<String>, field: &str, vars: &[String]) -> Result<Template, At> {
    Template::parse(s.get_ref(), |name| {
        vars.iter().position(|v| v == name).ok_or_else(|| {
            if vars.is_empty() {
                format!("{{{{{name}}}}} is not set: no request extracts a variable and there is no data file")
            } else {
                format!(
                    "{{{{{name}}}}} is not set by any extract or data column (there are: {})",
                    vars.join(", ")
                )
            }
        })
    })
    .map_err(|m| at(s.span(), field, m))
}

fn regex(s: &Spanned<String>, field: &str) -> Result<regex_lite::Regex, At> {
    // Bounded: a pattern compiles to at most 1 MiB (regex-lite's default is larger).
    regex_lite::RegexBuilder::new(s.get_ref())
        .size_limit(1 << 20)
        .build()
        .map_err(|e| at(s.span(), field, format!("not a regex: {e}")))
}

/// A check's expected value as text: a string as it is, a number or a boolean as
/// written.
fn value_text(v: &Spanned<toml::Value>, field: &str) -> Result<Spanned<String>, At> {
    let text = match v.get_ref() {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        _ => {
            return Err(at(
                v.span(),
                field,
                "expected a string, a number or a boolean",
            ))
        }
    };
    Ok(Spanned::new(v.span(), text))
}

/// A request's checks and their names.
pub fn checks(c: &RawCheck, vars: &[String]) -> Result<(Vec<Check>, Vec<String>), At> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    if let Some(s) = &c.status {
        let one = |v: &toml::Value| match v {
            toml::Value::Integer(n) if (100..=999).contains(n) => Ok(*n as u16),
            _ => Err(at(
                s.span(),
                "check.status",
                "expected a status (100..999) or a list of them",
            )),
        };
        let list = match s.get_ref() {
            toml::Value::Array(a) if !a.is_empty() => {
                a.iter().map(one).collect::<Result<_, _>>()?
            }
            v => vec![one(v)?],
        };
        out.push(Check::Status(list));
        names.push("status".to_string());
    }
    for (name, want) in &c.headers {
        let n = name.trim().to_ascii_lowercase();
        if http::HeaderName::from_bytes(n.as_bytes()).is_err() {
            return Err(at(
                want.span(),
                "check.headers",
                format!("'{name}' is not a header name"),
            ));
        }
        out.push(Check::Header(
            n.clone(),
            template(want, "check.headers", vars)?,
        ));
        names.push(format!("header {n}"));
    }
    if let Some(b) = &c.body_contains {
        if b.get_ref().is_empty() {
            return Err(at(b.span(), "check.body_contains", "must not be empty"));
        }
        out.push(Check::BodyContains(template(
            b,
            "check.body_contains",
            vars,
        )?));
        names.push("body_contains".to_string());
    }
    if let Some(r) = &c.body_regex {
        out.push(Check::BodyRegex(regex(r, "check.body_regex")?));
        names.push("body_regex".to_string());
    }
    for (path, want) in &c.json {
        let p = json::Path::parse(path).map_err(|m| at(want.span(), "check.json", m))?;
        let want = value_text(want, "check.json")?;
        out.push(Check::Json(p, template(&want, "check.json", vars)?));
        names.push(format!("json {path}"));
    }
    Ok((out, names))
}

/// A request's extractions into the variables named by `extract`'s keys.
pub fn extracts(
    raw: &BTreeMap<String, Spanned<RawExtract>>,
    vars: &[String],
) -> Result<Vec<Extract>, At> {
    let mut out = Vec::new();
    for (name, x) in raw {
        let var = vars
            .iter()
            .position(|v| v == name)
            .expect("extract names are registered first");
        let r = x.get_ref();
        let given = [&r.json, &r.regex, &r.header, &r.cookie]
            .iter()
            .filter(|v| v.is_some())
            .count();
        if given != 1 {
            return Err(at(
                x.span(),
                &format!("extract.{name}"),
                "give exactly one of json, regex, header or cookie",
            ));
        }
        let field = format!("extract.{name}");
        let from = if let Some(p) = &r.json {
            Source::Json(json::Path::parse(p.get_ref()).map_err(|m| at(p.span(), &field, m))?)
        } else if let Some(re) = &r.regex {
            Source::Regex(regex(re, &field)?)
        } else if let Some(h) = &r.header {
            let n = h.get_ref().trim().to_ascii_lowercase();
            if http::HeaderName::from_bytes(n.as_bytes()).is_err() {
                return Err(at(h.span(), &field, format!("'{n}' is not a header name")));
            }
            Source::Header(n)
        } else {
            let c = r.cookie.as_ref().expect("one is given");
            if c.get_ref().trim().is_empty() {
                return Err(at(c.span(), &field, "name the cookie"));
            }
            Source::Cookie(c.get_ref().trim().to_string())
        };
        out.push(Extract { var, from });
    }
    Ok(out)
}

/// `"1s"` or a range `"1s..3s"` (think time, sleep).
pub fn pause(s: &Spanned<String>, field: &str) -> Result<Pause, At> {
    let d = |t: &str| crate::units::parse_duration(t).map_err(|m| at(s.span(), field, m));
    let p = match s.get_ref().split_once("..") {
        Some((a, b)) => Pause {
            min: d(a)?,
            max: d(b)?,
        },
        None => {
            let v = d(s.get_ref())?;
            Pause { min: v, max: v }
        }
    };
    if p.max < p.min {
        return Err(at(
            s.span(),
            field,
            "the range ends before it starts (write \"1s..3s\")",
        ));
    }
    if p.max > std::time::Duration::from_secs(3600) {
        return Err(at(s.span(), field, "at most 1h"));
    }
    Ok(p)
}
