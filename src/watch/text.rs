//! The Prometheus text exposition format (version 0.0.4, what node_exporter and most
//! `/metrics` endpoints serve; OpenMetrics text reads the same for what we need):
//! `# TYPE name kind` lines and `name{label="value",…} value [timestamp]` samples.
//! Hand-rolled, because the one crate for it (prometheus-parse) pulls in regex, chrono
//! and itertools for a line format this small. A line that does not parse is skipped,
//! never fatal: a scrape is evidence, not input to validate.

use std::collections::HashMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    /// Label pairs, unescaped, in the order they came.
    pub labels: Vec<(&'a str, String)>,
    pub value: f64,
}

/// A parsed exposition: its samples and the `# TYPE` of each metric family.
#[derive(Debug, Default)]
pub struct Exposition<'a> {
    pub samples: Vec<Sample<'a>>,
    pub types: HashMap<&'a str, &'a str>,
}

impl Exposition<'_> {
    /// Whether `name` counts up: its family's `# TYPE` says counter (histogram and
    /// summary `_count`/`_sum`/`_bucket` series too), or, untyped, it ends in `_total`.
    pub fn is_counter(&self, name: &str) -> bool {
        if let Some(t) = self.types.get(name) {
            return *t == "counter";
        }
        for suffix in ["_count", "_sum", "_bucket"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if matches!(self.types.get(base), Some(&"histogram" | &"summary")) {
                    return true;
                }
            }
        }
        if let Some(base) = name.strip_suffix("_total") {
            // OpenMetrics names the family without `_total`.
            if let Some(t) = self.types.get(base) {
                return *t == "counter";
            }
        }
        name.ends_with("_total")
    }
}

/// Parses an exposition; lines that do not parse are skipped.
pub fn parse(text: &str) -> Exposition<'_> {
    let mut out = Exposition::default();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            if words.next() == Some("TYPE") {
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    out.types.insert(name, kind);
                }
            }
            continue;
        }
        if let Some(s) = sample(line) {
            out.samples.push(s);
        }
    }
    out
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// One sample line, or None.
fn sample(line: &str) -> Option<Sample<'_>> {
    let end = line.find(|c: char| !name_char(c)).unwrap_or(line.len());
    let name = &line[..end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        let (l, after) = label_set(r)?;
        labels = l;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    Some(Sample {
        name,
        labels,
        value: number(value)?,
    })
}

/// A sample value: a float, `+Inf`, `-Inf` or `NaN`.
pub fn number(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// `a="x",b="y"}` (after the `{`): the pairs and what follows the `}`.
pub fn label_set(mut r: &str) -> Option<(Vec<(&str, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        r = r.trim_start();
        if let Some(after) = r.strip_prefix('}') {
            return Some((labels, after));
        }
        let end = r.find(|c: char| !name_char(c))?;
        let key = &r[..end];
        r = r[end..].trim_start().strip_prefix('=')?.trim_start();
        r = r.strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = r.char_indices();
        let close = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                c => value.push(c),
            }
        };
        if key.is_empty() {
            return None;
        }
        labels.push((key, value));
        r = r[close + 1..].trim_start();
        r = r.strip_prefix(',').unwrap_or(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node_exporter's lines, escapes, special values and junk parse as the format says.
    #[test]
    fn parses_samples_types_and_escapes() {
        let text = "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
                    # TYPE node_cpu_seconds_total counter\n\
                    node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1234.5\n\
                    node_load1 0.42\n\
                    odd{path=\"a\\\"b\\\\c\\nd\",} +Inf 1700000000000\n\
                    # TYPE rq histogram\n\
                    rq_count 7\n\
                    garbage line here\n\
                    {x=\"1\"} 3\n\
                    trunc{a=\"1\" 5\n";
        let e = parse(text);
        assert_eq!(e.samples.len(), 4, "{:?}", e.samples);
        assert_eq!(e.samples[0].name, "node_cpu_seconds_total");
        assert_eq!(
            e.samples[0].labels,
            vec![("cpu", "0".to_string()), ("mode", "idle".to_string())]
        );
        assert_eq!(e.samples[0].value, 1234.5);
        assert_eq!(e.samples[1].value, 0.42);
        assert_eq!(e.samples[2].labels[0].1, "a\"b\\c\nd");
        assert!(e.samples[2].value.is_infinite());
        assert!(e.is_counter("node_cpu_seconds_total"));
        assert!(e.is_counter("rq_count"));
        assert!(!e.is_counter("node_load1"));
        assert!(e.is_counter("http_requests_total"));
    }
}
