//! Secrets redacted in typed documents, as `store::redact_json` does in JSON (header
//! values of secret names, URL credentials and secret query values): each document
//! goes through its JSON form piece by piece — a long timeline or sample list one row
//! at a time — so an imported run is never held as one JSON tree.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{DiagnoseRun, ProbeRun, Summary};
use crate::redact::redact_json;

/// Redacts `x` through its JSON form. It reads back through [`super::from_value`], the
/// way the store reads every document: one deserializer per document type in the
/// binary, not two (issue 36: the binary's size).
pub fn value<T: Serialize + DeserializeOwned>(x: &mut T, extra: &[String]) {
    let Ok(mut v) = serde_json::to_value(&*x) else {
        return;
    };
    redact_json(&mut v, extra);
    if let Ok(back) = super::from_value(&v) {
        *x = back;
    }
}

/// Redacts each item on its own.
pub fn each<T: Serialize + DeserializeOwned>(items: &mut [T], extra: &[String]) {
    for item in items {
        value(item, extra);
    }
}

/// Redacts a list, then the rest of its owner (`rest`), the list taken out meanwhile.
fn apart<O, T>(owner: &mut O, list: fn(&mut O) -> &mut Vec<T>, extra: &[String])
where
    O: Serialize + DeserializeOwned,
    T: Serialize + DeserializeOwned,
{
    let mut items = std::mem::take(list(owner));
    each(&mut items, extra);
    value(owner, extra);
    *list(owner) = items;
}

/// Redacts a probe result (its samples one at a time).
pub fn probe(p: &mut crate::probe::ProbeResult, extra: &[String]) {
    apart(p, |p| &mut p.samples, extra);
}

/// Redacts a run's summary.
pub fn summary(s: &mut Summary, extra: &[String]) {
    match s {
        Summary::Load(l) => apart(&mut **l, |l| &mut l.timeline, extra),
        Summary::Disk(d) => apart(&mut **d, |d| &mut d.timeline, extra),
        Summary::Page(p) => apart(&mut **p, |p| &mut p.visits, extra),
        Summary::Probe(run) => {
            let docs: Vec<&mut super::ProbeDoc> = match run {
                ProbeRun::One(d) => vec![&mut **d],
                ProbeRun::Several { results, .. } => results
                    .iter_mut()
                    .filter_map(|e| match e {
                        super::ProbeEntry::Measured(d) => Some(&mut **d),
                        super::ProbeEntry::Failed { url, error } => {
                            *url = crate::redact::redact_urls(url);
                            *error = crate::redact::redact_urls(error);
                            None
                        }
                    })
                    .collect(),
            };
            for d in docs {
                probe(&mut d.result, extra);
                each(&mut d.findings, extra);
            }
        }
        Summary::Diagnose(run) => {
            let docs: Vec<&mut super::DiagnoseDoc> = match run {
                DiagnoseRun::One(d) => vec![&mut **d],
                DiagnoseRun::Several(s) => {
                    if let Some(f) = &mut s.findings {
                        each(f, extra);
                    }
                    if let Some(w) = &mut s.wire_skipped {
                        *w = crate::redact::redact_urls(w);
                    }
                    s.results
                        .iter_mut()
                        .filter_map(|e| match e {
                            super::DiagnoseEntry::Diagnosed(d) => Some(&mut **d),
                            super::DiagnoseEntry::Failed { url, error } => {
                                *url = crate::redact::redact_urls(url);
                                *error = crate::redact::redact_urls(error);
                                None
                            }
                        })
                        .collect()
                }
            };
            for d in docs {
                diagnosis(d, extra);
            }
        }
    }
}

/// Redacts one diagnosis: its probes' samples and its ramp's timeline apart.
fn diagnosis(d: &mut super::DiagnoseDoc, extra: &[String]) {
    let mut main = std::mem::take(&mut d.probe);
    let mut origin = d.origin.take();
    let mut h3 = d.http3.as_mut().and_then(|h| h.probe.take());
    let mut timeline = d.load.as_mut().map(|l| std::mem::take(&mut l.timeline));
    probe(&mut main, extra);
    for p in origin.iter_mut().chain(h3.iter_mut()) {
        probe(p, extra);
    }
    if let Some(t) = &mut timeline {
        each(t, extra);
    }
    value(d, extra);
    d.probe = main;
    d.origin = origin;
    if let Some(h) = &mut d.http3 {
        h.probe = h3;
    }
    if let (Some(l), Some(t)) = (&mut d.load, timeline) {
        l.timeline = t;
    }
}
