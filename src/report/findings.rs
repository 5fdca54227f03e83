//! Findings as terminal text: most severe first and, within a severity, the largest
//! saving first (`diagnose::sort_findings`), each with what fixing it would save
//! (beside the severity, then as a phrase) and its advice.

use crate::diagnose::{Finding, Severity};
use crate::units::fmt_ms;

/// The heading of the findings block: says the order.
pub const HEADING: &str =
    "findings (most severe first; within a severity, the largest saving first)";

/// The findings block ("findings: none" when empty). When any finding is priced, a
/// column beside the severity shows its saving ("≈40.4 ms"), and a line under the
/// title says of what and per which requests.
pub fn render(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "  findings: none\n".to_string();
    }
    let priced = findings.iter().any(|f| f.saving_ms.is_some());
    let mut out = format!("  {HEADING}:\n");
    let indent = if priced { 21 } else { 10 };
    for f in findings {
        let sev = match f.severity {
            Severity::Crit => "CRIT",
            Severity::Warn => "warn",
            Severity::Info => "info",
        };
        let saving = if priced {
            let s = f
                .saving_ms
                .map(|s| format!("≈{}", fmt_ms(s)))
                .unwrap_or_default();
            format!("{s:<9}  ")
        } else {
            String::new()
        };
        out.push_str(&format!("    {sev:<4}  {saving}{:<22} {}\n", f.id, f.title));
        let pad = " ".repeat(indent);
        if let Some(t) = f.saving_text() {
            out.push_str(&format!("{pad}{:<22} {t}\n", ""));
        }
        for a in &f.advice_stack {
            out.push_str(&format!(
                "{pad}{:<22} → {}: {} [{}]\n",
                "", a.name, a.advice, a.source
            ));
        }
        if !f.advice.is_empty() {
            let head = if f.advice_stack.is_empty() {
                ""
            } else {
                "in any stack (HTTP): "
            };
            out.push_str(&format!("{pad}{:<22} → {head}{}\n", "", f.advice));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::finding::{basis, Category};

    /// A priced finding shows its saving beside the severity and as a phrase under
    /// its title; an unpriced one leaves the column blank; without any priced
    /// finding there is no column.
    #[test]
    fn saving_beside_the_severity() {
        let priced = Finding::new(
            "no-keepalive",
            Category::Connection,
            Severity::Warn,
            "closes".into(),
        )
        .saving(40.4, 82.1, basis::PER_REQUEST)
        .advice("enable keep-alive");
        let plain = Finding::new(
            "no-http2",
            Category::Connection,
            Severity::Info,
            "no h2".into(),
        );
        let text = render(&[priced, plain.clone()]);
        assert!(
            text.starts_with(
                "  findings (most severe first; within a severity, the largest saving first):\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("    warn  ≈40.4 ms   no-keepalive           closes\n"),
            "{text}"
        );
        assert!(
            text.contains("saves ≈40.4 ms of 82.1 ms (49 %) per request\n"),
            "{text}"
        );
        assert!(
            text.contains("    info             no-http2               no h2\n"),
            "{text}"
        );
        let text = render(&[plain]);
        assert!(
            text.contains("    info  no-http2               no h2\n"),
            "{text}"
        );
    }
}
