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
pub mod summary;

pub use facts::{
    CacheFacts, ConditionalFacts, DiskFacts, DownloadFacts, Facts, Headers, Http3Facts, LoadFacts,
    LoadStep, Phases, ProbeFacts, RedirectHop, RepeatFacts, Second, SeriesFacts, TcpFacts,
    TlsFacts,
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

/// The one-paragraph "where the time goes" for the probed URL, if there is a probe.
pub fn summary(facts: &Facts) -> Option<String> {
    let probe = facts.probe.as_ref()?;
    summary::where_the_time_goes(probe, rules::behind_proxy(facts))
}

#[cfg(test)]
mod tests;
