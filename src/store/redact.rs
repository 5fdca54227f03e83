//! Redaction of secrets before a run is stored or reported: the values of
//! Authorization, Cookie, Set-Cookie (and any header the user marks secret) become
//! `[redacted]`, wherever they appear in a JSON document.

use serde_json::Value;

/// Headers whose values are always secret.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// The replacement text.
pub const REDACTED: &str = "[redacted]";

fn is_secret(name: &str, extra: &[String]) -> bool {
    SECRET_HEADERS.iter().any(|s| s.eq_ignore_ascii_case(name))
        || extra.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// Redacts a header value if its name is secret.
pub fn redact_value(name: &str, value: &str, extra: &[String]) -> String {
    if is_secret(name, extra) {
        REDACTED.to_string()
    } else {
        value.to_string()
    }
}

/// Redacts secrets everywhere in a JSON document: object keys that are secret header
/// names (`{"set-cookie": "..."}`), `"Name: value"` strings (as `-H` arguments are
/// kept), and `[name, value]` pairs.
pub fn redact_json(value: &mut Value, extra: &[String]) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if is_secret(k, extra) && !v.is_boolean() && !v.is_null() {
                    *v = Value::String(REDACTED.to_string());
                } else {
                    redact_json(v, extra);
                }
            }
        }
        Value::Array(items) => {
            let pair_name = matches!(
                items.as_slice(),
                [Value::String(n), Value::String(_)] if is_secret(n, extra)
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
                if !name.contains(' ') && is_secret(name, extra) {
                    *s = format!("{name}: {REDACTED}");
                }
            }
        }
        _ => {}
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
            "args": ["Authorization: Bearer xyz", "Accept: text/html", "X-Api-Key: k"],
            "pairs": [["cookie", "a=b"], ["accept", "x"]],
        });
        redact_json(&mut v, &["x-api-key".to_string()]);
        assert_eq!(v["headers"]["Set-Cookie"], "[redacted]");
        assert_eq!(v["headers"]["cache-control"], "public");
        assert_eq!(v["headers"]["set_cookie_present"], true);
        assert_eq!(v["args"][0], "Authorization: [redacted]");
        assert_eq!(v["args"][1], "Accept: text/html");
        assert_eq!(v["args"][2], "X-Api-Key: [redacted]");
        assert_eq!(v["pairs"][0][1], "[redacted]");
        assert_eq!(v["pairs"][1][1], "x");
        assert!(!v.to_string().contains("Bearer"));
    }
}
