//! The JSON paths of checks and extractions: `$.user.name`, `items[0].id`,
//! `data.0.token` (a dotted path from the root, `$` optional, an index as `[n]` or a
//! bare number). A path's value as text: a string as it is, anything else as its
//! JSON (`3`, `true`, `null`, `{"a":1}`).

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A checked path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub text: String,
    pub segs: Vec<Seg>,
}

impl Path {
    /// Parses a path (Err: why not).
    pub fn parse(text: &str) -> Result<Path, String> {
        let t = text.trim();
        let body = t.strip_prefix('$').unwrap_or(t);
        let body = body.strip_prefix('.').unwrap_or(body);
        let mut segs = Vec::new();
        for part in body.split('.') {
            if part.is_empty() {
                if body.is_empty() {
                    break;
                }
                return Err(format!(
                    "'{text}': an empty step (two dots, or a dot at an end)"
                ));
            }
            let (key, mut idx) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                segs.push(match key.parse::<usize>() {
                    Ok(n) => Seg::Index(n),
                    Err(_) => Seg::Key(key.to_string()),
                });
            }
            while let Some(rest) = idx.strip_prefix('[') {
                let close = rest
                    .find(']')
                    .ok_or_else(|| format!("'{text}': '[' without ']'"))?;
                let n = rest[..close]
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("'{text}': [{}] is not an index", &rest[..close]))?;
                segs.push(Seg::Index(n));
                idx = &rest[close + 1..];
            }
            if !idx.is_empty() {
                return Err(format!("'{text}': '{idx}' after an index"));
            }
        }
        Ok(Path {
            text: text.to_string(),
            segs,
        })
    }

    /// The value at the path, if there is one.
    pub fn find<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        let mut v = root;
        for s in &self.segs {
            v = match (s, v) {
                (Seg::Key(k), Value::Object(m)) => m.get(k)?,
                (Seg::Index(i), Value::Array(a)) => a.get(*i)?,
                (Seg::Index(i), Value::Object(m)) => m.get(&i.to_string())?,
                _ => return None,
            };
        }
        Some(v)
    }
}

/// A value as text: a string as it is, anything else as JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_find_values() {
        let v: Value = serde_json::from_str(
            r#"{"user":{"name":"kim","id":7},"items":[{"id":"a"},{"id":"b"}],"ok":true}"#,
        )
        .unwrap();
        let at = |p: &str| Path::parse(p).unwrap().find(&v).map(text);
        assert_eq!(at("$.user.name").as_deref(), Some("kim"));
        assert_eq!(at("user.id").as_deref(), Some("7"));
        assert_eq!(at("items[1].id").as_deref(), Some("b"));
        assert_eq!(at("$.items.0.id").as_deref(), Some("a"));
        assert_eq!(at("ok").as_deref(), Some("true"));
        assert_eq!(at("nope"), None);
        assert_eq!(at("items[5]"), None);
        assert!(at("$").unwrap().starts_with('{'));
        for bad in ["a..b", "a[", "a[x]", "a[0]x"] {
            assert!(Path::parse(bad).is_err(), "{bad}");
        }
    }
}
