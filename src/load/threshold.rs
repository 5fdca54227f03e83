//! Pass/fail rules for CI (`--threshold 'p99<1s'`), as k6's thresholds: a metric, a
//! comparison and a value, for the whole run, one endpoint (`place:p99<300ms`) or
//! every endpoint (`*:p99<1s`). Parsing and evaluation only; a failed rule makes the
//! command exit 99.

use std::fmt;

use serde::Serialize;

/// Which requests a rule looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole run.
    All,
    /// One endpoint, by name.
    Endpoint(String),
    /// Each endpoint on its own (`*:`).
    Each,
}

/// What a rule measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency percentile (0.5, 0.9, 0.95, 0.99, 0.999, 0.9999), ms.
    Quantile(u32),
    Min,
    Mean,
    Max,
    /// Errors / requests, percent.
    ErrorRate,
    /// Completed requests per second.
    Rps,
    /// Completed requests.
    Requests,
    /// Scenario checks that passed, percent of checks run.
    Checks,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }
}

/// One rule, as typed and as understood.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub expr: String,
    pub scope: Scope,
    pub metric: Metric,
    pub op: Op,
    /// In the metric's unit: ms for latencies, percent for error_rate and checks.
    pub limit: f64,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// A bad rule (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--threshold '{expr}': {reason}")]
pub struct ThresholdError {
    pub expr: String,
    pub reason: String,
}

/// One rule's verdict (the `thresholds` array of the load JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub expr: String,
    /// The endpoint it was judged on (for `*:` rules and named ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub ok: bool,
    /// The measured value, in the metric's unit (None: the endpoint did not exist or
    /// saw no request).
    pub value: Option<f64>,
}

/// The numbers a rule can be judged on, for one scope.
pub trait MetricSource {
    /// The metric's value, None when there is nothing to judge.
    fn metric(&self, metric: Metric) -> Option<f64>;
}

/// Parses `[scope:]metric OP value`.
pub fn parse(expr: &str) -> Result<Threshold, ThresholdError> {
    let err = |reason: &str| ThresholdError {
        expr: expr.to_string(),
        reason: reason.to_string(),
    };
    let text: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let (scope, rest) = match text.rsplit_once(':') {
        Some(("*", rest)) => (Scope::Each, rest),
        Some(("", _)) => return Err(err("empty endpoint name before ':'")),
        Some((name, rest)) => (Scope::Endpoint(name.to_string()), rest),
        None => (Scope::All, text.as_str()),
    };
    let pos = rest
        .find(['<', '>'])
        .ok_or_else(|| err("expected a comparison: <, <=, > or >="))?;
    let (name, cmp) = rest.split_at(pos);
    let (op, value) = if let Some(v) = cmp.strip_prefix("<=") {
        (Op::Le, v)
    } else if let Some(v) = cmp.strip_prefix(">=") {
        (Op::Ge, v)
    } else if let Some(v) = cmp.strip_prefix('<') {
        (Op::Lt, v)
    } else {
        (Op::Gt, &cmp[1..])
    };
    let metric = match name.to_ascii_lowercase().as_str() {
        "p50" | "med" | "median" => Metric::Quantile(500_000),
        "p90" => Metric::Quantile(900_000),
        "p95" => Metric::Quantile(950_000),
        "p99" => Metric::Quantile(990_000),
        "p999" | "p99.9" => Metric::Quantile(999_000),
        "p9999" | "p99.99" => Metric::Quantile(999_900),
        "min" => Metric::Min,
        "mean" | "avg" => Metric::Mean,
        "max" => Metric::Max,
        "error_rate" | "errors" => Metric::ErrorRate,
        "rps" => Metric::Rps,
        "requests" => Metric::Requests,
        "checks" => Metric::Checks,
        "" => return Err(err("no metric before the comparison")),
        _ => {
            return Err(err(
                "unknown metric (use p50, p90, p95, p99, p999, p9999, min, mean, max, \
                 error_rate, checks, rps, requests)",
            ))
        }
    };
    let limit = match metric {
        Metric::ErrorRate | Metric::Checks => {
            crate::units::parse_percent(value).map_err(|e| err(&e))?
        }
        Metric::Rps | Metric::Requests => value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| err("expected a number after the comparison"))?,
        _ => crate::units::parse_duration(value)
            .map(crate::units::ms)
            .map_err(|e| err(&e))?,
    };
    Ok(Threshold {
        expr: expr.to_string(),
        scope,
        metric,
        op,
        limit,
    })
}

impl Threshold {
    /// Judges the rule. `all` gives the run's numbers, `endpoints` each endpoint's.
    pub fn judge(
        &self,
        all: &dyn MetricSource,
        endpoints: &[(String, &dyn MetricSource)],
    ) -> Vec<Verdict> {
        let one = |endpoint: Option<String>, src: Option<&dyn MetricSource>| {
            let value = src.and_then(|s| s.metric(self.metric));
            Verdict {
                expr: self.expr.clone(),
                endpoint,
                ok: value.is_some_and(|v| self.op.holds(v, self.limit)),
                value,
            }
        };
        match &self.scope {
            Scope::All => vec![one(None, Some(all))],
            Scope::Endpoint(name) => {
                let src = endpoints.iter().find(|(n, _)| n == name).map(|(_, s)| *s);
                vec![one(Some(name.clone()), src)]
            }
            Scope::Each => endpoints
                .iter()
                .map(|(n, s)| one(Some(n.clone()), Some(*s)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(f64);
    impl MetricSource for Fixed {
        fn metric(&self, m: Metric) -> Option<f64> {
            match m {
                Metric::ErrorRate => Some(0.5),
                _ => Some(self.0),
            }
        }
    }

    #[test]
    fn parses_rules() {
        let t = parse("p99<1s").unwrap();
        assert_eq!(
            (t.scope.clone(), t.metric, t.op, t.limit),
            (Scope::All, Metric::Quantile(990_000), Op::Lt, 1000.0)
        );
        let t = parse("place:p99 <= 300ms").unwrap();
        assert_eq!(t.scope, Scope::Endpoint("place".into()));
        assert_eq!((t.op, t.limit), (Op::Le, 300.0));
        let t = parse("error_rate<1%").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::ErrorRate, 1.0));
        let t = parse("rps>500").unwrap();
        assert_eq!((t.metric, t.op, t.limit), (Metric::Rps, Op::Gt, 500.0));
        assert_eq!(parse("*:p99<1s").unwrap().scope, Scope::Each);
        for bad in ["p99", "p98<1s", "p99<fast", "rps>x", ":p99<1s", "<1s"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn judges_scopes() {
        let all = Fixed(900.0);
        let a = Fixed(100.0);
        let b = Fixed(2000.0);
        let eps: Vec<(String, &dyn MetricSource)> = vec![("a".into(), &a), ("b".into(), &b)];
        let v = parse("p99<1s").unwrap().judge(&all, &eps);
        assert!(v[0].ok && v[0].value == Some(900.0));
        let v = parse("*:p99<1s").unwrap().judge(&all, &eps);
        assert_eq!(v.iter().map(|v| v.ok).collect::<Vec<_>>(), [true, false]);
        let v = parse("nope:p99<1s").unwrap().judge(&all, &eps);
        assert!(!v[0].ok && v[0].value.is_none());
        assert!(parse("error_rate<1%").unwrap().judge(&all, &eps)[0].ok);
    }
}
