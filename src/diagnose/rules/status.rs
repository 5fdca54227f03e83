//! `error-status`: the probed URL answers with an HTTP error, so every latency
//! measured is that of an error response (often far cheaper, or far dearer, than the
//! real page).

use crate::diagnose::facts::ProbeFacts;
use crate::diagnose::finding::{Category, Finding, Severity};

/// "404 Not Found", or just "599" for a status without a reason phrase.
fn status_text(status: u16) -> String {
    match http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// `error-status`: the probe's responses are HTTP ≥ 400 (`crit` when all of them are).
pub fn error_status(p: &ProbeFacts) -> Option<Finding> {
    let (errors, responses, status) = if p.statuses.is_empty() {
        (u64::from(p.status >= 400), 1, p.status)
    } else {
        let errors: u64 = p.statuses.range(400..).map(|(_, n)| n).sum();
        // The most frequent error status (the first on a tie).
        let status = p
            .statuses
            .range(400..)
            .fold(
                (0, 0),
                |best, (s, n)| if *n > best.1 { (*s, *n) } else { best },
            )
            .0;
        (errors, p.statuses.values().sum(), status)
    };
    if errors == 0 {
        return None;
    }
    let all = errors == responses;
    let text = status_text(status);
    let title = if all {
        format!("the URL answers {text}: every measurement is of an error response")
    } else {
        format!(
            "{errors} of {responses} responses were HTTP errors (mostly {text}): some \
             measurements are of error responses"
        )
    };
    Some(
        Finding::new(
            "error-status",
            Category::Server,
            if all { Severity::Crit } else { Severity::Warn },
            title,
        )
        .count("status", u64::from(status))
        .count("count", errors)
        .count("responses", responses)
        .advice(if status < 500 {
            "check the URL, method, headers and credentials (a 4xx is the client's \
             request being refused): the latency of an error page says little about the \
             real one"
        } else {
            "the server fails this request: fix the error first (its logs say why), then \
             measure the latency of a real answer"
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::rules::testutil::healthy_probe;

    /// Every response a 404: crit, with the status and count; a healthy 200 is quiet.
    #[test]
    fn error_status_both_ways() {
        let mut p = healthy_probe();
        assert!(error_status(&p).is_none());
        p.statuses.insert(200, 10);
        assert!(error_status(&p).is_none());
        p.status = 404;
        p.statuses = [(404, 11)].into();
        let f = error_status(&p).expect("fires");
        assert_eq!(f.severity, Severity::Crit);
        assert_eq!(f.category, Category::Server);
        assert_eq!(f.evidence_f64("status"), Some(404.0));
        assert_eq!(f.evidence_f64("count"), Some(11.0));
        assert_eq!(
            f.title,
            "the URL answers 404 Not Found: every measurement is of an error response"
        );
        p.statuses = [(200, 8), (503, 3)].into();
        let f = error_status(&p).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.evidence_f64("status"), Some(503.0));
        assert!(f.title.contains("3 of 11"), "{}", f.title);
        assert!(f.title.contains("503 Service Unavailable"), "{}", f.title);
        // Without per-request counts, the representative status decides.
        p.statuses.clear();
        p.status = 500;
        assert!(error_status(&p).is_some());
    }
}
