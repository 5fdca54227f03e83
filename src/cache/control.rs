//! Cache-Control parsing (RFC 9111 §5.2) and the list helpers other cache headers
//! share: comma splitting outside quotes, unquoting.

use serde::Serialize;

/// A parsed Cache-Control header. Unknown directives are kept in `other`; a directive
/// whose value does not parse is listed in `bad`. Repeated directives: the first wins.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheControl {
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
    pub public: bool,
    /// `private` without field names.
    pub private: bool,
    pub no_store: bool,
    /// `no-cache` without field names.
    pub no_cache: bool,
    pub must_revalidate: bool,
    pub proxy_revalidate: bool,
    pub immutable: bool,
    pub no_transform: bool,
    pub stale_while_revalidate: Option<u64>,
    pub stale_if_error: Option<u64>,
    pub other: Vec<String>,
    pub bad: Vec<String>,
}

/// Splits a header list on commas outside double quotes.
pub(crate) fn split_list(value: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(value[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Removes surrounding double quotes (and backslash escapes) from a token.
pub(crate) fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        let mut out = String::new();
        let mut escaped = false;
        for c in s[1..s.len() - 1].chars() {
            if c == '\\' && !escaped {
                escaped = true;
                continue;
            }
            escaped = false;
            out.push(c);
        }
        out
    } else {
        s.to_string()
    }
}

impl CacheControl {
    /// Parses every Cache-Control value (already joined with commas).
    pub fn parse(value: &str) -> CacheControl {
        let mut cc = CacheControl::default();
        let mut seen: Vec<String> = Vec::new();
        for item in split_list(value) {
            let (name, arg) = match item.split_once('=') {
                Some((n, a)) => (n.trim().to_ascii_lowercase(), Some(unquote(a))),
                None => (item.trim().to_ascii_lowercase(), None),
            };
            if seen.contains(&name) {
                continue;
            }
            seen.push(name.clone());
            let secs = || arg.as_deref().and_then(|a| a.trim().parse::<u64>().ok());
            let mut bad = false;
            match name.as_str() {
                "max-age" => (cc.max_age, bad) = (secs(), secs().is_none()),
                "s-maxage" => (cc.s_maxage, bad) = (secs(), secs().is_none()),
                "stale-while-revalidate" => {
                    (cc.stale_while_revalidate, bad) = (secs(), secs().is_none())
                }
                "stale-if-error" => (cc.stale_if_error, bad) = (secs(), secs().is_none()),
                "public" => cc.public = true,
                "private" => cc.private = arg.is_none(),
                "no-cache" => cc.no_cache = arg.is_none(),
                "no-store" => cc.no_store = true,
                "must-revalidate" => cc.must_revalidate = true,
                "proxy-revalidate" => cc.proxy_revalidate = true,
                "immutable" => cc.immutable = true,
                "no-transform" => cc.no_transform = true,
                _ => cc.other.push(item.to_string()),
            }
            if bad {
                cc.bad.push(item.to_string());
            }
        }
        cc
    }
}
