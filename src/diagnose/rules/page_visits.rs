//! Page findings decided across visits, not on one: each rule runs on every visit of
//! its kind, and a finding — a rule and the request or origin it names — is reported
//! only when more than half of those visits have it. One slow handshake on one visit,
//! or a redirect the server made once, does not make a verdict; a problem every visit
//! shows does, whichever visit happens to be the median one. The instance reported is
//! the median of those seen (by what fixing it would save), with how many visits had it.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnose::finding::Finding;
use crate::page::model::{Visit, VisitKind};

/// The findings `rules` makes on more than half of `visits` (those of `kind`).
pub fn decide<'a>(
    visits: impl Iterator<Item = &'a Visit>,
    kind: VisitKind,
    rules: impl Fn(&Visit) -> Vec<Finding>,
) -> Vec<Finding> {
    let mut seen: BTreeMap<(String, String), Vec<Finding>> = BTreeMap::new();
    let mut n = 0usize;
    for v in visits.filter(|v| v.kind == kind) {
        n += 1;
        let mut in_this = BTreeSet::new();
        for f in rules(v) {
            let key = (f.id.clone(), subject(&f));
            if in_this.insert(key.clone()) {
                seen.entry(key).or_default().push(f);
            }
        }
    }
    seen.into_values()
        .filter(|fs| fs.len() * 2 > n)
        .map(|mut fs| {
            let k = fs.len();
            fs.sort_by(|a, b| {
                a.saving_ms
                    .unwrap_or(0.0)
                    .total_cmp(&b.saving_ms.unwrap_or(0.0))
            });
            let mut f = fs.swap_remove((k - 1) / 2);
            if n > 1 {
                f.title
                    .push_str(&format!(" ({k} of {n} {} visits)", kind.name()));
            }
            f.count("visits_with", k as u64).count("visits", n as u64)
        })
        .collect()
}

/// The rules that make one finding per origin (naming the request that stood for it,
/// which may differ from visit to visit).
const PER_ORIGIN: &[&str] = &[
    "render-blocking-far-origin",
    "no-preconnect",
    "h1-connection-limit",
];

/// What a finding names: its origin for a per-origin rule; else its request's URL
/// without the query (a cache-busting `?v=…` differs on every visit), else its origin,
/// else nothing (a finding about the whole visit).
fn subject(f: &Finding) -> String {
    let origin = f.evidence_str("origin");
    if PER_ORIGIN.contains(&f.id.as_str()) {
        if let Some(o) = origin {
            return o.to_string();
        }
    }
    match f.evidence_str("url") {
        Some(u) => u.split(['?', '#']).next().unwrap_or(u).to_string(),
        None => origin.unwrap_or_default().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::finding::{basis, Category, Severity};
    use crate::page::model::Milestones;

    fn visit(kind: VisitKind, index: u32, urls: &[&str]) -> Visit {
        Visit {
            kind,
            index,
            milestones: Milestones::default(),
            requests: urls
                .iter()
                .map(|u| crate::page::model::Request::for_tests(u, "Image"))
                .collect(),
            started_wall_ms: 0.0,
            title: String::new(),
            loaded: true,
        }
    }

    /// A finding per request, saving = the visit's index × 10 ms.
    fn per_request(v: &Visit) -> Vec<Finding> {
        v.requests
            .iter()
            .map(|r| {
                Finding::new("x", Category::Content, Severity::Warn, r.url.clone())
                    .text("url", &r.url)
                    .saving(f64::from(v.index) * 10.0, 100.0, basis::PER_REQUEST)
            })
            .collect()
    }

    /// Of three first visits, a request all three show is reported with the median
    /// instance (saving 20 of 10, 20, 30 ms), one two show is reported "2 of 3", one
    /// only one visit shows is not; repeat visits do not count for first-visit rules.
    #[test]
    fn a_majority_of_visits_decides() {
        let visits = [
            visit(VisitKind::First, 1, &["http://a/always", "http://a/twice"]),
            visit(VisitKind::First, 2, &["http://a/always", "http://a/once"]),
            visit(VisitKind::First, 3, &["http://a/always", "http://a/twice"]),
            visit(VisitKind::Repeat, 1, &["http://a/once"]),
            visit(VisitKind::Repeat, 2, &["http://a/once"]),
        ];
        let f = decide(visits.iter(), VisitKind::First, per_request);
        let urls: Vec<_> = f.iter().map(|f| f.evidence_str("url").unwrap()).collect();
        assert_eq!(urls, ["http://a/always", "http://a/twice"]);
        assert_eq!(f[0].evidence["visits_with"], 3);
        assert_eq!(f[0].saving_ms, Some(20.0), "the median of 10, 20, 30");
        assert!(
            f[0].title.ends_with("(3 of 3 first visits)"),
            "{}",
            f[0].title
        );
        assert_eq!(f[1].evidence["visits_with"], 2);
        assert_eq!(f[1].evidence["visits"], 3);
        // Two visits: both must agree.
        let f = decide(visits[..2].iter(), VisitKind::First, per_request);
        assert_eq!(f.len(), 1);
        // A cache-busting query does not split a request's votes; a per-origin rule is
        // one finding per origin whichever of its requests stood for it.
        let busted: Vec<Visit> = (1..=3)
            .map(|i| visit(VisitKind::First, i, &[&format!("http://a/app.js?v={i}")]))
            .collect();
        assert_eq!(
            decide(busted.iter(), VisitKind::First, per_request).len(),
            1
        );
        let per_origin = |v: &Visit| {
            vec![Finding::new(
                "render-blocking-far-origin",
                Category::Network,
                Severity::Warn,
                String::new(),
            )
            .text("url", format!("http://cdn/{}.css", v.index))
            .text("origin", "http://cdn")]
        };
        let f = decide(busted.iter(), VisitKind::First, per_origin);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence["visits_with"], 3);
        // One visit decides alone, and its title stays as the rule wrote it.
        let f = decide(visits[1..2].iter(), VisitKind::First, per_request);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].title, "http://a/always");
    }
}
