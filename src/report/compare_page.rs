//! Page runs (`latscope page`) in `compare`: a section per kind of visit (first,
//! repeat) with the milestones — TTFB, FCP, LCP, DOMContentLoaded, load, each the
//! median over the run's visits and tested on its visits (one value per visit: a
//! visit is a block, independent of the next) — and what the page fetched (requests,
//! bytes on the wire, requests answered by the browser cache).

use crate::page::model::{median_value, Visit, VisitKind};
use crate::record::RunRecord;

use super::compare::{metric, Better, Metric, RunSections};

/// The sections of a stored page run: none when it holds no visits.
pub(super) fn page_sections(run: &RunRecord) -> RunSections {
    let visits = super::rundata::page_visits(run);
    let mut out = Vec::new();
    for kind in [VisitKind::First, VisitKind::Repeat] {
        let of: Vec<&Visit> = visits.iter().filter(|v| v.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let milestone = |name: &str, f: fn(&Visit) -> Option<f64>| -> Metric {
            let values: Vec<f64> = of.iter().filter_map(|v| f(v)).collect();
            metric(name, "ms", Better::Lower, median_value(values.clone()))
                .blocks(format!("{name} of each visit"), values)
        };
        let count = |name: &str, unit: &'static str, f: fn(&Visit) -> f64| -> Metric {
            let values: Vec<f64> = of.iter().map(|v| f(v)).collect();
            metric(name, unit, Better::Lower, median_value(values.clone()))
                .blocks(format!("{name} of each visit"), values)
        };
        let metrics = vec![
            milestone("TTFB", |v| v.milestones.ttfb_ms),
            milestone("FCP", |v| v.milestones.fcp_ms),
            milestone("LCP", |v| v.milestones.lcp_ms),
            milestone("DOMContentLoaded", |v| v.milestones.dom_content_loaded_ms),
            milestone("load", |v| v.milestones.load_ms),
            count("requests", "", |v| v.requests.len() as f64),
            count("transferred", "KiB", |v| {
                v.requests
                    .iter()
                    .map(|r| r.encoded_bytes as f64)
                    .sum::<f64>()
                    / 1024.0
            }),
            metric(
                "from the browser cache",
                "",
                Better::Higher,
                median_value(
                    of.iter()
                        .map(|v| v.requests.iter().filter(|r| r.from_cache).count() as f64)
                        .collect(),
                ),
            ),
        ];
        out.push((format!("page: {} visit", kind.name()), metrics));
    }
    out
}
