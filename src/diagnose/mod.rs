//! The findings engine: pure rules over plain facts (DESIGN.md, Findings).
//!
//! Adapters turn probe, cache-audit, load and disk results into the structs of
//! [`facts`]; [`run_rules`] turns those into findings, most severe first, and
//! [`summary`] into the one-paragraph "where the time goes". Nothing here measures or
//! prints.

pub mod audit;
pub mod cache;
pub mod cache_status;
pub mod diagnosis;
pub mod disk_verdict;
pub mod facts;
pub mod finding;
pub mod from_disk;
pub mod from_load;
pub mod from_probe;
pub mod rules;
pub mod server_timing;
pub mod stack;
pub mod summary;

pub use facts::{
    CacheFacts, ClientNoise, ConditionalFacts, DiskFacts, DownloadFacts, Facts, Headers,
    Http3Facts, LoadFacts, LoadStep, Phases, ProbeFacts, RedirectHop, RepeatFacts, Second,
    SeriesFacts, TcpFacts, TlsFacts,
};
pub use finding::{sort_findings, Category, Finding, Severity};

/// Every finding the facts support, most severe first; within a severity the largest
/// saving first, then rule order ([`sort_findings`]).
/// Load findings are left out when latscope itself was the bottleneck; `client-bound`
/// says so.
pub fn run_rules(facts: &Facts) -> Vec<Finding> {
    let mut findings = rules::all(facts);
    sort_findings(&mut findings);
    findings
}

/// Whether every timing-based rule could decide on these facts — no finding says
/// "not enough samples to tell": what the adaptive sampler (`probe::sampler`) asks
/// before it takes more rounds.
pub fn decided(facts: &Facts) -> bool {
    !rules::all(facts).iter().any(Finding::undecided)
}

/// The one-paragraph "where the time goes" for the probed URL, if there is a probe.
/// A 3xx answer is named first (its timings are the redirect's, not the page's); a
/// chain followed before the page is said after.
pub fn summary(facts: &Facts) -> Option<String> {
    let probe = facts.probe.as_ref()?;
    let text = summary::where_the_time_goes(probe, rules::behind_proxy(facts))?;
    Some(redirect_note(probe, text))
}

fn redirect_note(p: &ProbeFacts, text: String) -> String {
    if (300..400).contains(&p.status) && p.status != 304 {
        return format!(
            "a {} redirect{} answered, not the page (-L follows it): {text}",
            p.status,
            p.headers
                .get("location")
                .map(|l| format!(" to {l}"))
                .unwrap_or_default()
        );
    }
    let mut text = text;
    if !p.redirects.is_empty() {
        let total: f64 = p.redirects.iter().map(|r| r.time_ms).sum();
        let n = p.redirects.len();
        text.push_str(&format!(
            " Before it, {n} redirect{} cost {}.",
            if n == 1 { "" } else { "s" },
            rules::ms(total)
        ));
    }
    text
}

#[cfg(test)]
mod tests;
