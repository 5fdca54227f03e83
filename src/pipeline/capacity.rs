//! `load --find-max` as a library function: the search (`load::search`), the finding
//! rules on its capacity step, and the load document with its steps, one joined
//! timeline, the `capacity` object and the stored histograms.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

use crate::diagnose::{self, Facts, Finding};
use crate::load::capacity::{self, Joined};
use crate::load::search::{self, Event, Search, SearchPlan};
use crate::load::{LoadError, LoadPlan, Progress};
use crate::observe::{Observer, Step, StepDone};
use crate::schema::plan::FindMaxConfig;
use crate::schema::{CapacityDoc, LoadDoc, PlanDoc, StepDoc};
use crate::stats::StoredHistogram;

/// Why a search gave nothing to report.
#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    /// A step could not start at all.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The stop flag ended the search before its first step ended.
    #[error("stopped before the first step ended: nothing to report")]
    NoStep,
}

/// What a search found, as it is shown and stored.
pub struct Capacity {
    pub search: Search,
    /// The answer in one sentence ("capacity ≈ 180 req/s …").
    pub answer: String,
    /// The findings on the capacity step (the lowest step when none passed).
    pub findings: Vec<Finding>,
    /// The load document: the capacity step's numbers, every step, the joined
    /// timeline, the `capacity` object.
    pub doc: LoadDoc,
    /// The run's configuration, with its `find_max` part.
    pub config: PlanDoc,
    /// What is stored: the capacity step's histograms, each step's, each joined
    /// second's.
    pub histograms: Vec<StoredHistogram>,
    /// When the first step started, and the joined timeline's length.
    pub started: SystemTime,
    pub duration_s: f64,
}

/// Runs the search of `plan` from `base`. `obs` hears each step start, its seconds
/// and its verdict.
pub fn run(
    base: &LoadPlan,
    plan: &SearchPlan,
    stop: &Arc<AtomicBool>,
    obs: &mut dyn Observer<Progress>,
) -> Result<Capacity, CapacityError> {
    let mut current = (0usize, String::new());
    let s = search::run(base, plan, stop, &mut |e| match e {
        Event::Start { index, level } => {
            current = (index, level.to_string());
            obs.step(&Step {
                index,
                of: None,
                level: level.to_string(),
                connections: match level {
                    crate::load::steps::Level::Connections(c) => Some(c),
                    crate::load::steps::Level::Rate(_) => None,
                },
            });
        }
        Event::Progress(p) => obs.second(p),
        Event::Done(step) => obs.step_done(&StepDone {
            index: current.0,
            level: current.1.clone(),
            rps: step.achieved_rps(),
            p99_ms: step.window.latency.value_at_quantile(0.99) as f64 / 1e6,
            pass: step.pass(),
        }),
    })?;
    if s.steps.is_empty() {
        return Err(CapacityError::NoStep);
    }
    let answer = crate::report::capacity::answer(&s);
    // The run's top-level numbers are the capacity step's (the lowest step's when
    // none passed), so `compare` sets searches side by side at their capacity.
    let r = &s.capacity().unwrap_or(&s.steps[0]).result;
    let facts = Facts {
        load: Some(diagnose::from_load::load_facts(r)),
        ..Default::default()
    };
    let findings = diagnose::run_rules(&facts);
    let mut joined = Joined::default();
    let mut steps = Vec::new();
    let mut histograms: Vec<_> = r
        .histograms()
        .into_iter()
        .filter(|h| h.second.is_none())
        .collect();
    for (i, st) in s.steps.iter().enumerate() {
        let t = joined.push(i, st, None, false);
        steps.push(StepDoc::of(st, t));
        histograms.extend(capacity::step_histograms(st));
    }
    if let Some(st) = &s.interrupted {
        joined.push(s.steps.len(), st, None, true);
    }
    histograms.extend(std::mem::take(&mut joined.histograms));
    let mut doc = LoadDoc::from(r);
    doc.findings = findings.clone();
    doc.timeline = crate::schema::capacity::joined_rows(&joined.timeline);
    doc.steps = Some(steps);
    let capacity = CapacityDoc::of(&s, &answer);
    let model = capacity.model.clone();
    doc.capacity = Some(capacity);
    let mut config = PlanDoc::from(base);
    config.find_max = Some(FindMaxConfig {
        objectives: plan.objectives.iter().map(|o| o.expr.clone()).collect(),
        model,
        min: plan.min,
        max: plan.max,
        precision_pct: plan.precision * 100.0,
        step_s: plan.step.as_secs_f64(),
        settle_s: plan.settle.as_secs_f64(),
        max_time_s: plan.max_time.as_secs_f64(),
        early_stop: plan.early_stop,
    });
    Ok(Capacity {
        started: s.steps[0].result.started,
        duration_s: joined.offset as f64,
        search: s,
        answer,
        findings,
        doc,
        config,
        histograms,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::lab::{self, LabOptions};
    use crate::load::search::{SearchModel, Stopped};
    use crate::load::threshold;
    use crate::observe::{Event, Recorder};

    fn plan(max: f64) -> SearchPlan {
        SearchPlan {
            model: SearchModel::Closed,
            objectives: vec![threshold::parse("p99<5s").unwrap()],
            min: 1.0,
            max,
            precision: 0.05,
            step: Duration::from_secs(1),
            settle: Duration::ZERO,
            max_time: Duration::from_secs(20),
            early_stop: true,
        }
    }

    /// A search the lab passes at every level: the observer hears each step start,
    /// then its seconds, then its verdict, step after step in order; the document
    /// holds as many steps as were judged, and the search stops at the cap.
    #[test]
    fn the_observer_hears_each_step_then_its_seconds_then_its_verdict() {
        let lab = lab::spawn(LabOptions::default()).expect("lab starts");
        let base = LoadPlan::closed(&lab.url("/"), 2, Duration::from_secs(1)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut rec = Recorder::new(|p: &Progress| p.requests);
        let c = run(&base, &plan(2.0), &stop, &mut rec).expect("the search runs");
        assert_eq!(c.search.stopped, Stopped::Cap, "{}", c.answer);
        let mut steps = Vec::new();
        let mut in_step: Option<(usize, usize)> = None;
        for e in &rec.events {
            match e {
                Event::Step(s) => {
                    assert!(in_step.is_none(), "a step began inside another: {e:?}");
                    assert_eq!(s.index, steps.len());
                    assert_eq!(s.connections, Some(s.index as u32 + 1));
                    in_step = Some((s.index, 0));
                }
                Event::Second(_) => in_step.as_mut().expect("a second outside a step").1 += 1,
                Event::StepDone(d) => {
                    let (index, seconds) = in_step.take().expect("a verdict outside a step");
                    assert_eq!(d.index, index);
                    assert!(seconds > 0, "step {index} ended without a second");
                    assert!(d.pass && d.rps > 0.0, "{d:?}");
                    steps.push(d.level.clone());
                }
                Event::Message(m) => panic!("unexpected message {m}"),
                Event::Begin(_) | Event::End => panic!("a search is no ramp"),
            }
        }
        assert_eq!(steps, ["1 connections", "2 connections"]);
        assert_eq!(c.doc.steps.as_ref().map(Vec::len), Some(2));
        assert!(c.doc.capacity.is_some() && c.config.find_max.is_some());
        assert!(!c.histograms.is_empty());
    }

    /// A search stopped before its first step reports nothing, and nothing is sent
    /// (the target is a port nothing listens on: a step would count errors).
    #[test]
    fn a_search_stopped_before_its_first_step_has_nothing_to_report() {
        let base = LoadPlan::closed("http://127.0.0.1:9/", 1, Duration::from_secs(1)).unwrap();
        let stop = Arc::new(AtomicBool::new(true));
        let mut rec = Recorder::new(|_: &Progress| ());
        let r = run(&base, &plan(1.0), &stop, &mut rec);
        assert!(matches!(r, Err(CapacityError::NoStep)));
        assert!(rec.events.is_empty(), "{:?}", rec.events);
    }
}
