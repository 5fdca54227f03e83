//! Redaction of secrets before a run is stored, imported or reported:
//! - header values: the names in [`SECRET_HEADERS`], any name ending in one of
//!   [`SECRET_HEADER_SUFFIXES`], and any header the user marks secret
//!   (`--redact-header NAME`) become `[redacted]`;
//! - URLs: credentials (`user:pass@`) and the values of query parameters named in
//!   [`SECRET_QUERY_PARAMS`] (or ending in one of [`SECRET_QUERY_SUFFIXES`]) become
//!   `[redacted]`; the scheme, host, path and other parameters stay.
//!
//! Applied wherever these appear in a JSON document, in the run's target and in its
//! stored terminal text — and, by default, in everything printed while a run goes
//! and after it (stdout text and `--json`, progress, the live view, errors):
//! [`set_output`] records `--show-secrets` and the marked headers once, and
//! [`for_output`] / [`json_for_output`] apply them. A leaf: results, reports, outputs and the store import it;
//! it imports nothing of latscope's but the [`RunRecord`] it redacts.

use serde_json::Value;

use crate::record::RunRecord;

/// Headers whose values are always secret (compared without case).
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "x-auth-token",
    "x-csrf-token",
    "x-xsrf-token",
    "x-amz-security-token",
];

/// Header name endings that mark a secret (`X-Goog-Api-Key`, `X-Vault-Token`,
/// `X-Client-Secret`, …).
pub const SECRET_HEADER_SUFFIXES: &[&str] = &[
    "-token",
    "-secret",
    "-key",
    "-password",
    "-signature",
    "-credential",
    "-credentials",
];

/// Query parameters whose values are secret (compared without case, `-` as `_`).
pub const SECRET_QUERY_PARAMS: &[&str] = &[
    "token",
    "key",
    "apikey",
    "sig",
    "signature",
    "password",
    "passwd",
    "pwd",
    "secret",
    "auth",
    "session",
    "sessionid",
    "sid",
    "credential",
    "x_amz_credential",
];

/// Query parameter name endings that mark a secret (`access_token`, `api_key`,
/// `client_secret`, `X-Amz-Signature`, …).
pub const SECRET_QUERY_SUFFIXES: &[&str] = &[
    "_token",
    "_key",
    "_secret",
    "_password",
    "_signature",
    "_sig",
    "token",
];

/// The replacement text.
pub const REDACTED: &str = "[redacted]";

/// Whether a header named `name` carries a secret.
pub fn is_secret_header(name: &str, extra: &[String]) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    SECRET_HEADERS.contains(&lower.as_str())
        || SECRET_HEADER_SUFFIXES.iter().any(|s| lower.ends_with(s))
        || extra.iter().any(|s| s.trim().eq_ignore_ascii_case(&lower))
}

/// Whether a query parameter named `name` carries a secret.
pub fn is_secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase().replace(['-', '.'], "_");
    SECRET_QUERY_PARAMS.contains(&lower.as_str())
        || SECRET_QUERY_SUFFIXES.iter().any(|s| lower.ends_with(s))
}

/// Redacts a header value if its name is secret.
pub fn redact_value(name: &str, value: &str, extra: &[String]) -> String {
    if is_secret_header(name, extra) {
        REDACTED.to_string()
    } else {
        value.to_string()
    }
}

/// Redacts credentials and secret query values in every URL inside `text` (a URL
/// being `scheme://…` up to whitespace, a quote or an angle bracket). A path with a
/// query on its own (`/x?token=…`, as an endpoint is named) is redacted too.
pub fn redact_urls(text: &str) -> String {
    if !text.contains("://") && !text.contains('?') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        out.push_str(&redact_url_word(word));
        let sep = tail.chars().next().map_or(0, char::len_utf8);
        out.push_str(&tail[..sep]);
        rest = &tail[sep..];
    }
    out
}

/// One whitespace-free word: a URL (or a path with a query) redacted, anything else
/// unchanged.
fn redact_url_word(word: &str) -> String {
    let (before, url) = match word.find("://") {
        Some(i) => {
            // The scheme is the letters just before "://".
            let start = word[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
                .map_or(0, |p| p + 1);
            (&word[..start], &word[start..])
        }
        // A path with a query (`/x?token=…`, `latency:/x?key=…`).
        None if word.split_once('?').is_some_and(|(_, q)| q.contains('=')) => ("", word),
        None => return word.to_string(),
    };
    let mut out = before.to_string();
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    // Credentials: between "://" and the first '@' of the authority.
    match head.find("://") {
        Some(i) => {
            let after = &head[i + 3..];
            let auth_end = after.find(['/', '#']).unwrap_or(after.len());
            match after[..auth_end].rfind('@') {
                Some(at) => {
                    out.push_str(&head[..i + 3]);
                    out.push_str(REDACTED);
                    out.push_str(&after[at..]);
                }
                None => out.push_str(head),
            }
        }
        None => out.push_str(head),
    }
    if let Some(q) = query {
        out.push('?');
        let (q, fragment) = match q.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (q, None),
        };
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_param(k) => format!("{k}={REDACTED}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    out
}

/// Redacts secrets in terminal text: URLs as [`redact_urls`], and lines of the form
/// `Name: value` whose name is a secret header.
pub fn redact_text(text: &str, extra: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let line = redact_urls(line);
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        match body.split_once(':') {
            Some((name, _))
                if !name.is_empty()
                    && !name.contains(char::is_whitespace)
                    && is_secret_header(name, extra) =>
            {
                out.push_str(indent);
                out.push_str(name);
                out.push_str(": ");
                out.push_str(REDACTED);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => out.push_str(&line),
        }
    }
    out
}

/// Redacts secrets everywhere in a JSON document: object keys that are secret header
/// names (`{"set-cookie": "..."}`), `"Name: value"` strings (as `-H` arguments are
/// kept), `[name, value]` pairs, and every URL inside a string.
pub fn redact_json(value: &mut Value, extra: &[String]) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret_header(k, extra) && !v.is_boolean() && !v.is_null() {
                    *v = Value::String(REDACTED.to_string());
                } else {
                    redact_json(v, extra);
                }
            }
        }
        Value::Array(items) => {
            let pair_name = matches!(
                items.as_slice(),
                [Value::String(n), Value::String(_)] if is_secret_header(n, extra)
            );
            if pair_name {
                items[1] = Value::String(REDACTED.to_string());
            } else {
                for v in items.iter_mut() {
                    redact_json(v, extra);
                }
            }
        }
        Value::String(s) => {
            if let Some((name, _)) = s.split_once(':') {
                let name = name.trim();
                if !name.contains(' ') && !name.is_empty() && is_secret_header(name, extra) {
                    *s = format!("{name}: {REDACTED}");
                    return;
                }
            }
            let redacted = redact_urls(s);
            if redacted != *s {
                *s = redacted;
            }
        }
        _ => {}
    }
}

/// Whether printed output keeps secrets (`--show-secrets`).
static SHOW_SECRETS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The headers marked `--redact-header` for this process's command.
static MARKED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Sets, once per process, how output treats secrets: `show` (`--show-secrets`)
/// prints them as given; otherwise [`for_output`] redacts them, with `marked`
/// (`--redact-header`) counted as secret too.
pub fn set_output(show: bool, marked: Vec<String>) {
    SHOW_SECRETS.store(show, std::sync::atomic::Ordering::Relaxed);
    let _ = MARKED.set(marked);
}

fn marked() -> &'static [String] {
    MARKED.get().map_or(&[], Vec::as_slice)
}

/// Text about to be printed (stdout, stderr, the live view): redacted as
/// [`redact_text`] unless `--show-secrets` was given.
pub fn for_output(text: &str) -> std::borrow::Cow<'_, str> {
    if SHOW_SECRETS.load(std::sync::atomic::Ordering::Relaxed) {
        return std::borrow::Cow::Borrowed(text);
    }
    let out = redact_text(text, marked());
    if out == text {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(out)
    }
}

/// A JSON document about to be printed: redacted as [`redact_json`] unless
/// `--show-secrets` was given.
pub fn json_for_output(doc: &mut Value) {
    if !SHOW_SECRETS.load(std::sync::atomic::Ordering::Relaxed) {
        redact_json(doc, marked());
    }
}

/// Redacts a whole run before it is stored (after a run, and on import): its JSON
/// documents, target, label, stored text and histogram names.
pub fn redact_record(run: &mut RunRecord, extra: &[String]) {
    for doc in [
        &mut run.config,
        &mut run.summary,
        &mut run.timeline,
        &mut run.findings,
    ] {
        redact_json(doc, extra);
    }
    run.target = redact_urls(&run.target);
    run.label = run.label.as_deref().map(redact_urls);
    run.text = redact_text(&run.text, extra);
    for h in &mut run.histograms {
        h.name = redact_urls(&h.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_keys_strings_and_pairs() {
        let mut v = json!({
            "headers": {"Set-Cookie": "sid=abc", "cache-control": "public", "set_cookie_present": true},
            "args": ["Authorization: Bearer xyz", "Accept: text/html", "X-Custom: k"],
            "pairs": [["cookie", "a=b"], ["accept", "x"], ["X-Vault-Token", "v"]],
        });
        redact_json(&mut v, &["x-custom".to_string()]);
        assert_eq!(v["headers"]["Set-Cookie"], "[redacted]");
        assert_eq!(v["headers"]["cache-control"], "public");
        assert_eq!(v["headers"]["set_cookie_present"], true);
        assert_eq!(v["args"][0], "Authorization: [redacted]");
        assert_eq!(v["args"][1], "Accept: text/html");
        assert_eq!(v["args"][2], "X-Custom: [redacted]");
        assert_eq!(v["pairs"][0][1], "[redacted]");
        assert_eq!(v["pairs"][1][1], "x");
        assert_eq!(v["pairs"][2][1], "[redacted]");
        assert!(!v.to_string().contains("Bearer"));
    }

    #[test]
    fn header_names_by_list_and_suffix() {
        for n in [
            "Proxy-Authorization",
            "X-Api-Key",
            "X-Auth-Token",
            "X-Goog-Api-Key",
            "X-Client-Secret",
        ] {
            assert!(is_secret_header(n, &[]), "{n}");
        }
        for n in ["Accept", "Cache-Control", "X-Cache", "Keep-Alive", "Age"] {
            assert!(!is_secret_header(n, &[]), "{n}");
        }
    }

    #[test]
    fn urls_lose_credentials_and_secret_query_values_only() {
        assert_eq!(
            redact_urls("GET https://alice:s3cret@api.example.com:8443/v1/x?page=2&access_token=abc&api_key=k#top done"),
            "GET https://[redacted]@api.example.com:8443/v1/x?page=2&access_token=[redacted]&api_key=[redacted]#top done"
        );
        assert_eq!(
            redact_urls("\"http://h/p?sig=1&X-Amz-Signature=2&monkey=3&key=4\""),
            "\"http://h/p?sig=[redacted]&X-Amz-Signature=[redacted]&monkey=3&key=[redacted]\""
        );
        assert_eq!(
            redact_urls("/search?q=x&token=t"),
            "/search?q=x&token=[redacted]"
        );
        assert_eq!(
            redact_urls("latency:/x?api_key=1"),
            "latency:/x?api_key=[redacted]"
        );
        assert_eq!(redact_urls("why? because"), "why? because");
        assert_eq!(redact_urls("no url here: 3 ms"), "no url here: 3 ms");
        assert_eq!(redact_urls("http://h:80/a@b"), "http://h:80/a@b");
    }

    #[test]
    fn text_lines_with_secret_headers() {
        let t = "  set-cookie: sid=1\n  server: nginx\nurl http://u:p@h/\n";
        assert_eq!(
            redact_text(t, &[]),
            "  set-cookie: [redacted]\n  server: nginx\nurl http://[redacted]@h/\n"
        );
    }
}
