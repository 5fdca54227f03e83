//! A finding: what a rule concluded, with the numbers that led to it and what to do
//! about it (DESIGN.md, Findings). In the spirit of REDbot's notes and Lighthouse's
//! audits: a stable id, a severity, a title that carries the numbers, the evidence as
//! named fields, and concrete advice. Like Lighthouse's "opportunities", a finding
//! that can be priced from what was measured says what fixing it would save
//! (`saving_ms`, per `saving_basis`, out of `saving_of_ms`); a timing-based finding
//! carries the interval it decided on (`confidence`). This module only defines
//! the type; rules live in `diagnose::rules`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::stats::interval::Confidence;

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

/// Which requests a saving is counted on (`saving_basis` in JSON; docs/findings.md).
pub mod basis {
    /// Each request on a new connection with a full handshake (a first visit, a curl
    /// loop): the probe's fresh series.
    pub const FRESH: &str = "fresh";
    /// Each new connection that resumes its TLS session (a returning visitor).
    pub const RESUMED: &str = "resumed";
    /// Each request on a kept-alive connection: the probe's reused series.
    pub const REUSED: &str = "reused";
    /// Each request that pays it today, whatever its connection.
    pub const PER_REQUEST: &str = "per request";
    /// Once: the first request after a start or an idle period.
    pub const FIRST_REQUEST: &str = "first request";
    /// Each request a cache misses.
    pub const PER_MISS: &str = "per miss";
    /// Each connect whose SYN had to be sent again.
    pub const PER_RETRIED_CONNECT: &str = "per retried connect";
}

/// One finding: `{id, category, severity, title, evidence, advice, saving_ms,
/// saving_basis, saving_of_ms}` in JSON (the saving fields are null when the finding
/// is not priced).
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
    /// What to do about it, in generic HTTP terms.
    pub advice: String,
    /// The same advice in the detected stack's own terms (diagnose only; empty when
    /// nothing was recognised or the catalogue has nothing for it): one entry per
    /// component and topic, each naming its documentation source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advice_stack: Vec<crate::diagnose::stack::StackAdvice>,
    /// What fixing it would save, ms, estimated from the measurements the finding
    /// already has (None: not priced — the data does not say).
    #[serde(default)]
    pub saving_ms: Option<f64>,
    /// Which requests the saving is counted on: one of [`basis`].
    #[serde(default)]
    pub saving_basis: Option<String>,
    /// What those requests take today, ms: the saving is `saving_ms / saving_of_ms`
    /// of it.
    #[serde(default)]
    pub saving_of_ms: Option<f64>,
    /// The interval a timing-based finding decided on (DESIGN.md, Findings: it fires
    /// only when the interval clears the threshold); absent on findings that count or
    /// read headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
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
            advice_stack: Vec::new(),
            saving_ms: None,
            saving_basis: None,
            saving_of_ms: None,
            confidence: None,
        }
    }

    /// Sets the interval the finding decided on.
    pub fn confidence(mut self, c: Confidence) -> Finding {
        self.confidence = Some(c);
        self
    }

    /// Whether the finding says it could not tell (its interval straddled the
    /// threshold).
    pub fn undecided(&self) -> bool {
        self.confidence.as_ref().is_some_and(Confidence::undecided)
    }

    /// Prices the finding: fixing it saves `saving` ms of the `of` ms that the requests
    /// of `basis` take today (rounded to 3 decimals; a saving that is not a positive
    /// finite number leaves the finding unpriced).
    pub fn saving(mut self, saving: f64, of: f64, basis: &str) -> Finding {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        if saving.is_finite() && saving > 0.0 {
            self.saving_ms = Some(round(saving));
            self.saving_basis = Some(basis.to_string());
            self.saving_of_ms = (of.is_finite() && of >= saving).then(|| round(of));
        }
        self
    }

    /// The saving as one phrase: "saves ≈40.4 ms of 82.1 ms (49 %) per request"
    /// (None when not priced).
    pub fn saving_text(&self) -> Option<String> {
        let s = self.saving_ms?;
        let mut t = format!("saves ≈{}", crate::units::fmt_ms(s));
        if let Some(of) = self.saving_of_ms.filter(|o| *o > 0.0) {
            t.push_str(&format!(
                " of {} ({:.0} %)",
                crate::units::fmt_ms(of),
                100.0 * s / of
            ));
        }
        if let Some(b) = &self.saving_basis {
            t.push(' ');
            t.push_str(basis_phrase(b));
        }
        Some(t)
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

    /// Adds a string only when present.
    pub fn opt_text(self, key: &str, value: Option<String>) -> Finding {
        match value {
            Some(v) => self.text(key, v),
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

/// How a basis reads after a saving ("per new visitor (fresh connection)").
pub fn basis_phrase(b: &str) -> &str {
    match b {
        basis::FRESH => "per new visitor (fresh connection)",
        basis::RESUMED => "per returning visitor (resumed TLS session)",
        basis::REUSED => "per request on a kept-alive connection",
        basis::PER_REQUEST => "per request",
        basis::FIRST_REQUEST => "on the first request",
        basis::PER_MISS => "per cache miss",
        basis::PER_RETRIED_CONNECT => "per retried connect",
        other => other,
    }
}

/// Sorts findings: most severe first; within a severity, the largest `saving_ms`
/// first and unpriced findings after the priced ones; otherwise the order they came
/// in (rule order). Stable.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity.cmp(&a.severity).then_with(|| {
            let s = |f: &Finding| f.saving_ms.unwrap_or(f64::NEG_INFINITY);
            s(b).total_cmp(&s(a))
        })
    });
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

    /// Within a severity the larger saving comes first and unpriced findings last;
    /// severity still wins over any saving.
    #[test]
    fn sorts_by_saving_within_a_severity() {
        let mk = |id: &str, s, saving: Option<f64>| {
            let f = Finding::new(id, Category::Connection, s, String::new());
            match saving {
                Some(v) => f.saving(v, 100.0, basis::FRESH),
                None => f,
            }
        };
        let mut v = vec![
            mk("warn-none", Severity::Warn, None),
            mk("info-big", Severity::Info, Some(90.0)),
            mk("warn-small", Severity::Warn, Some(2.0)),
            mk("warn-big", Severity::Warn, Some(40.0)),
            mk("crit-none", Severity::Crit, None),
        ];
        sort_findings(&mut v);
        let ids: Vec<_> = v.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "crit-none",
                "warn-big",
                "warn-small",
                "warn-none",
                "info-big"
            ]
        );
    }

    /// The saving in JSON and as a phrase: 40.4 of 82.1 ms is 49 %; a saving that is
    /// not positive leaves the finding unpriced (null in JSON).
    #[test]
    fn saving_json_and_text() {
        let f = Finding::new(
            "no-keepalive",
            Category::Connection,
            Severity::Warn,
            "t".into(),
        )
        .saving(40.4444, 82.1, basis::PER_REQUEST);
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["saving_ms"], 40.444);
        assert_eq!(v["saving_basis"], "per request");
        assert_eq!(v["saving_of_ms"], 82.1);
        assert_eq!(
            f.saving_text().unwrap(),
            "saves ≈40.4 ms of 82.1 ms (49 %) per request"
        );
        let back: Finding = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
        let none = Finding::new("x", Category::Server, Severity::Info, "t".into())
            .saving(-3.0, 10.0, basis::FRESH)
            .saving(f64::NAN, 10.0, basis::FRESH);
        let v = serde_json::to_value(&none).unwrap();
        assert!(v["saving_ms"].is_null() && v["saving_basis"].is_null());
        assert_eq!(none.saving_text(), None);
        // A stored finding from before savings existed still reads.
        let old = serde_json::json!({"id": "x", "category": "server", "severity": "info",
            "title": "t", "evidence": {}, "advice": ""});
        let f: Finding = serde_json::from_value(old).unwrap();
        assert_eq!(f.saving_ms, None);
    }
}
