//! How a timing-based rule decides (DESIGN.md, Findings, from the fourth wave): on the
//! confidence interval of its quantity (`stats::interval`), not on a point. It fires
//! when the whole interval clears the threshold, stays quiet when the whole interval
//! lies below it, and otherwise says so: a `warn` rule that cannot tell becomes an
//! `info` "not enough samples to tell" with about how many samples would tell, never a
//! warning; an `info` rule shows its finding on the point estimate, its confidence
//! saying "undecided". Too few samples for any interval count as "cannot tell" when
//! the point estimate would fire, and as quiet when it would not.

use crate::diagnose::finding::{Category, Finding, Severity};
use crate::stats::interval::{Confidence, Decision, Interval, Method};

/// A rule's quantity judged against its threshold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Judged {
    pub decision: Decision,
    /// The interval and verdict, for the finding's JSON (None: no samples and a point
    /// that stays below the threshold, nothing to show).
    pub confidence: Option<Confidence>,
}

impl Judged {
    /// The whole interval cleared the threshold.
    pub fn fires(&self) -> bool {
        self.decision == Decision::Above
    }

    /// The interval straddled the threshold (or there were too few samples for one
    /// and the point would have fired).
    pub fn undecided(&self) -> bool {
        self.decision == Decision::Undecided
    }

    /// The whole interval lay below the threshold (quiet for sure). An `info` rule
    /// shows its finding unless this holds: while undecided, on its point estimate,
    /// its confidence saying "undecided" (so the sampler takes more rounds).
    pub fn decision_is_below(&self) -> bool {
        self.decision == Decision::Below
    }
}

/// Judges `iv` (or, without one, the `point` estimate from `n` samples) against
/// `threshold`.
pub(crate) fn judge(
    quantity: &str,
    iv: Option<Interval>,
    point: f64,
    n: [usize; 2],
    threshold: f64,
    method: Method,
) -> Judged {
    match iv {
        Some(iv) => Judged {
            decision: iv.against(threshold),
            confidence: Some(Confidence::new(quantity, &iv, threshold, method)),
        },
        None if point.is_finite() && point >= threshold => {
            let iv = Interval {
                estimate: point,
                low: f64::NEG_INFINITY,
                high: f64::INFINITY,
                n,
            };
            Judged {
                decision: Decision::Undecided,
                confidence: Some(Confidence::new(quantity, &iv, threshold, method)),
            }
        }
        None => Judged {
            decision: Decision::Below,
            confidence: None,
        },
    }
}

/// Both of two conditions (a quantity and a share, say): fires when both fire, quiet
/// when either is quiet, undecided otherwise. The confidence shown is the deciding
/// one: the quiet or undecided side, else the first.
pub(crate) fn both(a: Judged, b: Judged) -> Judged {
    match (a.decision, b.decision) {
        (Decision::Above, Decision::Above) => a,
        (Decision::Below, _) => a,
        (_, Decision::Below) => b,
        (Decision::Undecided, _) => a,
        (_, Decision::Undecided) => b,
    }
}

/// The info a `warn` rule gives when its interval straddles the threshold: "not
/// enough samples to tell", the interval, and the command that would tell (`rerun`:
/// a command line with `{n}` where the sample count goes).
pub(crate) fn not_enough(
    id: &str,
    category: Category,
    question: &str,
    unit: &str,
    c: Confidence,
    rerun: &str,
) -> Finding {
    let n = c.samples.iter().copied().min().unwrap_or(0);
    let needed = c.needed();
    let fmt = |v: f64| {
        if unit == "ms" {
            crate::units::fmt_ms(v)
        } else {
            format!("{v:.2}{unit}")
        }
    };
    let range = match (c.low, c.high) {
        (Some(l), Some(h)) => format!("95 % interval {} .. {}", fmt(l), fmt(h)),
        (Some(l), None) => format!("at least {} with 95 % confidence", fmt(l)),
        (None, Some(h)) => format!("at most {} with 95 % confidence", fmt(h)),
        (None, None) => "too few samples for an interval".to_string(),
    };
    let title = format!(
        "{question}: not enough samples to tell — {} {} ({range}, {n} samples) against the \
         {} threshold",
        c.quantity,
        fmt(c.estimate),
        fmt(c.threshold)
    );
    let more = needed.unwrap_or(n * 4).max(n + 1);
    let command = rerun.replace("{n}", &more.to_string());
    let mut f = Finding::new(id, category, Severity::Info, title)
        .text("verdict", "undecided")
        .count("samples", n);
    if let Some(k) = needed {
        f = f.count("samples_needed", k);
    }
    f.text("command", command.clone())
        .advice(format!(
            "measure with more samples, so the interval can clear the threshold or rule it \
             out: `{command}`; on a busy machine, also stop what else runs here"
        ))
        .confidence(c)
}

/// The interval as a title shows it: " (95 % interval 12.1 ms .. 30.4 ms)", or ""
/// without bounds.
pub(crate) fn interval_text(c: Option<&Confidence>, unit: &str) -> String {
    let Some(c) = c else {
        return String::new();
    };
    let fmt = |v: f64| {
        if unit == "ms" {
            crate::units::fmt_ms(v)
        } else {
            format!("{v:.2}{unit}")
        }
    };
    match (c.low, c.high) {
        (Some(l), Some(h)) => format!(" (95 % interval {} .. {})", fmt(l), fmt(h)),
        (Some(l), None) => format!(" (≥ {} with 95 % confidence)", fmt(l)),
        _ => String::new(),
    }
}

/// The command that re-measures a probed URL with `{n}` samples per series.
pub(crate) fn rerun_diagnose(url: &str, extra: &str) -> String {
    format!("latscope diagnose {url}{extra} --samples {{n}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::interval::shift;

    /// Too few samples for an interval: a point that would fire is undecided (with
    /// its point estimate and unbounded interval in the JSON), one that would not is
    /// quiet; with an interval, the verdict is the interval's.
    #[test]
    fn judging_with_and_without_an_interval() {
        let j = judge("x, ms", None, 30.0, [3, 3], 20.0, Method::HodgesLehmann);
        assert!(j.undecided());
        let c = j.confidence.unwrap();
        assert_eq!((c.low, c.high), (None, None));
        let j = judge("x, ms", None, 10.0, [3, 3], 20.0, Method::HodgesLehmann);
        assert_eq!(j.decision, Decision::Below);
        assert!(j.confidence.is_none());
        let a: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 50.0).collect();
        let j = judge(
            "x, ms",
            shift(&a, &b),
            50.0,
            [10, 10],
            20.0,
            Method::HodgesLehmann,
        );
        assert!(j.fires());
    }

    /// Both conditions: any quiet side is quiet, an undecided one undecided.
    #[test]
    fn both_conditions() {
        let mk = |d| Judged {
            decision: d,
            confidence: None,
        };
        let (a, b, u) = (Decision::Above, Decision::Below, Decision::Undecided);
        assert_eq!(both(mk(a), mk(a)).decision, a);
        assert_eq!(both(mk(a), mk(b)).decision, b);
        assert_eq!(both(mk(u), mk(b)).decision, b);
        assert_eq!(both(mk(a), mk(u)).decision, u);
    }

    /// The info names the interval, the samples and the command that would tell.
    #[test]
    fn not_enough_says_what_would_tell() {
        let a: Vec<f64> = (0..8).map(|i| 100.0 + 9.0 * i as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 20.0).collect();
        let j = judge(
            "d, ms",
            shift(&a, &b),
            20.0,
            [8, 8],
            20.0,
            Method::HodgesLehmann,
        );
        assert!(j.undecided(), "{j:?}");
        let f = not_enough(
            "cdn-cost",
            Category::Cache,
            "does the edge cost time",
            "ms",
            j.confidence.unwrap(),
            &rerun_diagnose("http://x/", " --origin 10.0.0.1"),
        );
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.title.contains("not enough samples to tell"),
            "{}",
            f.title
        );
        assert!(f.title.contains("8 samples"), "{}", f.title);
        let cmd = f.evidence_str("command").unwrap();
        assert!(
            cmd.starts_with("latscope diagnose http://x/ --origin 10.0.0.1 --samples "),
            "{cmd}"
        );
        assert!(f.undecided());
    }
}
