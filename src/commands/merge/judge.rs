//! The shards of a merge joined and judged: histograms added and seconds aligned
//! (`load::merge`), the plan's thresholds judged on the whole, and the finding rules
//! run on the merged data — with `client-bound` judged on the busiest shard, since one
//! busy shard's CPU would vanish in a sum or a max over every shard's threads.

use serde_json::json;

use crate::diagnose::{self, Facts, Finding};
use crate::load::{merge, threshold, LoadResult};
use crate::schema::{LoadDoc, PlanDoc};

/// The merged run of `parts` (each shard's `(doc, config)` in `docs`, the plan they
/// share in `plan`) and its findings.
pub(super) fn merged(
    parts: Vec<LoadResult>,
    docs: &[(LoadDoc, PlanDoc)],
    plan: &PlanDoc,
) -> (LoadResult, Vec<Finding>) {
    // client-bound is judged per shard: a busy shard's CPU would vanish in a sum or
    // a max over all the shards' threads. The merged facts carry the busiest shard's.
    let busiest = parts
        .iter()
        .zip(docs)
        .map(|(p, (_, config))| (diagnose::from_load::load_facts(p), config.shard))
        .max_by(|(a, _), (b, _)| busy(a).total_cmp(&busy(b)));
    let mut merged = merge::merge(parts);
    for expr in &plan.thresholds {
        if let Ok(t) = threshold::parse(expr) {
            let verdicts = merged.judge(&t);
            merged.thresholds.extend(verdicts);
        }
    }
    let mut load = diagnose::from_load::load_facts(&merged);
    let mut busiest_shard = None;
    if let Some((b, shard)) = busiest {
        (load.client_cpu_pct, load.client_wait_pct, load.threads) =
            (b.client_cpu_pct, b.client_wait_pct, b.threads);
        busiest_shard = shard.map(|s| format!("{}/{}", s.index, s.count));
    }
    let facts = Facts {
        load: Some(load),
        ..Default::default()
    };
    let mut findings = diagnose::run_rules(&facts);
    for f in findings.iter_mut().filter(|f| f.id == "client-bound") {
        if let Some(shard) = &busiest_shard {
            f.title = format!("shard {shard}: {}", f.title);
            f.evidence.insert("shard".into(), json!(shard));
        }
    }
    (merged, findings)
}

/// How busy a run's threads were (on a CPU or waiting for one), percent each.
fn busy(l: &diagnose::LoadFacts) -> f64 {
    l.client_cpu_pct.map_or(0.0, |cpu| {
        diagnose::facts::busy_per_thread(cpu, l.client_wait_pct, l.threads)
    })
}
