//! `Server-Timing` parsing (W3C Server Timing): `name;dur=…;desc=…` metrics, set by
//! the rules against the measured server time.

use super::cache::{split_list, unquote};

/// One Server-Timing metric.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTimingMetric {
    pub name: String,
    pub dur_ms: Option<f64>,
    pub desc: Option<String>,
}

/// Parses `Server-Timing: db;dur=53, cache;desc="Cache Read";dur=23.2, missedCache`.
pub fn server_timing(value: &str) -> Vec<ServerTimingMetric> {
    split_list(value)
        .into_iter()
        .filter_map(|m| {
            let mut parts = m.split(';');
            let name = parts.next()?.trim().to_string();
            if name.is_empty() {
                return None;
            }
            let mut metric = ServerTimingMetric {
                name,
                dur_ms: None,
                desc: None,
            };
            for p in parts {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                match k.trim().to_ascii_lowercase().as_str() {
                    "dur" if metric.dur_ms.is_none() => {
                        metric.dur_ms = unquote(v).parse().ok().filter(|d: &f64| d.is_finite())
                    }
                    "desc" if metric.desc.is_none() => metric.desc = Some(unquote(v)),
                    _ => {}
                }
            }
            Some(metric)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Server-Timing metrics with dur, desc, quotes and bare names.
    #[test]
    fn parses_server_timing() {
        let m = server_timing("db;dur=53, cache;desc=\"Cache Read\";dur=23.2, missedCache, ;dur=1");
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].name.as_str(), m[0].dur_ms), ("db", Some(53.0)));
        assert_eq!(m[1].desc.as_deref(), Some("Cache Read"));
        assert_eq!(m[1].dur_ms, Some(23.2));
        assert_eq!((m[2].name.as_str(), m[2].dur_ms), ("missedCache", None));
        let lab = server_timing("cdn-cache;desc=MISS, origin;dur=50.3");
        assert_eq!(lab[1].dur_ms, Some(50.3));
    }
}
