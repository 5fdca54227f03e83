//! Findings as terminal text: most severe first, each with its advice.

use crate::diagnose::{Finding, Severity};

/// The findings block ("findings: none" when empty).
pub fn render(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "  findings: none\n".to_string();
    }
    let mut out = String::from("  findings:\n");
    for f in findings {
        let sev = match f.severity {
            Severity::Crit => "CRIT",
            Severity::Warn => "warn",
            Severity::Info => "info",
        };
        out.push_str(&format!("    {sev:<4}  {:<22} {}\n", f.id, f.title));
        if !f.advice.is_empty() {
            out.push_str(&format!("          {:<22} → {}\n", "", f.advice));
        }
    }
    out
}
