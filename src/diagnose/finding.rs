//! A finding: what a rule concluded, with the numbers that led to it and what to do
//! about it (DESIGN.md, Findings). In the spirit of REDbot's notes and Lighthouse's
//! audits: a stable id, a severity, a title that carries the numbers, the evidence as
//! named fields, and concrete advice. This module only defines the type; rules live in
//! `diagnose::rules`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How bad a finding is. Ordered: `Info < Warn < Crit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong by itself.
    Info,
    /// Costs latency or capacity; fix it.
    Warn,
    /// Breaks users or makes the numbers meaningless.
    Crit,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Crit => "crit",
        })
    }
}

/// The area a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Round trips, distance, DNS, packet loss.
    Network,
    /// TCP/TLS handshakes, keep-alive, HTTP version.
    Connection,
    /// The server's own time, cold starts.
    Server,
    /// HTTP caching, CDNs and proxies.
    Cache,
    /// Response content: compression, redirects.
    Content,
    /// Behaviour under load: knee, errors, spikes, tails.
    Load,
    /// The measuring machine itself.
    Client,
    /// Storage latency.
    Disk,
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self).ok();
        f.write_str(s.as_ref().and_then(Value::as_str).unwrap_or("?"))
    }
}

/// One finding: `{id, category, severity, title, evidence, advice}` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id from DESIGN.md's catalogue (`cold-start`, `knee`, …).
    pub id: String,
    pub category: Category,
    pub severity: Severity,
    /// One line that carries the numbers ("first request 8.20 s, 117× the steady p50").
    pub title: String,
    /// The numbers (and a few strings) behind the title, as named fields.
    pub evidence: Map<String, Value>,
    /// What to do about it.
    pub advice: String,
}

impl Finding {
    /// A finding with empty evidence and advice; fill them with the builder methods.
    pub fn new(id: &str, category: Category, severity: Severity, title: String) -> Finding {
        Finding {
            id: id.to_string(),
            category,
            severity,
            title,
            evidence: Map::new(),
            advice: String::new(),
        }
    }

    /// Adds a number to the evidence, rounded to 3 decimals (non-finite numbers are
    /// left out: JSON has no NaN).
    pub fn num(mut self, key: &str, value: f64) -> Finding {
        if value.is_finite() {
            let rounded = (value * 1000.0).round() / 1000.0;
            if let Some(n) = serde_json::Number::from_f64(rounded) {
                self.evidence.insert(key.to_string(), Value::Number(n));
            }
        }
        self
    }

    /// Adds an integer count to the evidence.
    pub fn count(mut self, key: &str, value: u64) -> Finding {
        self.evidence.insert(key.to_string(), Value::from(value));
        self
    }

    /// Adds a string to the evidence.
    pub fn text(mut self, key: &str, value: impl Into<String>) -> Finding {
        self.evidence
            .insert(key.to_string(), Value::String(value.into()));
        self
    }

    /// Adds a number only when present.
    pub fn opt_num(self, key: &str, value: Option<f64>) -> Finding {
        match value {
            Some(v) => self.num(key, v),
            None => self,
        }
    }

    /// Sets the advice.
    pub fn advice(mut self, advice: impl Into<String>) -> Finding {
        self.advice = advice.into();
        self
    }

    /// A number from the evidence (for tests and reports).
    pub fn evidence_f64(&self, key: &str) -> Option<f64> {
        self.evidence.get(key).and_then(Value::as_f64)
    }

    /// A string from the evidence.
    pub fn evidence_str(&self, key: &str) -> Option<&str> {
        self.evidence.get(key).and_then(Value::as_str)
    }
}

/// Sorts findings most severe first; equal severities keep their order (rule order).
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON shape is DESIGN.md's contract: lowercase severity and category,
    /// evidence as an object, and it reads back.
    #[test]
    fn json_shape_round_trips() {
        let f = Finding::new("cold-start", Category::Server, Severity::Warn, "t".into())
            .num("first_ms", 8200.04449)
            .count("n", 3)
            .text("s", "x")
            .num("nan", f64::NAN)
            .advice("do it");
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["severity"], "warn");
        assert_eq!(v["category"], "server");
        assert_eq!(v["evidence"]["first_ms"], 8200.044);
        assert_eq!(v["evidence"]["n"], 3);
        assert!(v["evidence"].get("nan").is_none());
        let back: Finding = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
        assert_eq!(Category::Cache.to_string(), "cache");
    }

    /// Sorting puts crit before warn before info and keeps rule order within a level.
    #[test]
    fn sorts_most_severe_first() {
        let mk = |id: &str, s| Finding::new(id, Category::Load, s, String::new());
        let mut v = vec![
            mk("a", Severity::Info),
            mk("b", Severity::Crit),
            mk("c", Severity::Warn),
            mk("d", Severity::Crit),
        ];
        sort_findings(&mut v);
        let ids: Vec<_> = v.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["b", "d", "c", "a"]);
    }
}
