//! The diagnosis as a library call, against the lab on loopback: what an observer
//! hears and in which order, and a halt in the middle of the ramp that keeps what
//! was measured.

use std::time::Duration;

use super::{local_enough, run};
use crate::config::{DiagnoseConfig, RampPlan};
use crate::lab::{self, LabOptions};
use crate::load::Progress;
use crate::net::{ClientOptions, RequestSpec, Target};
use crate::observe::{Event, Observer, Recorder, Step, StepDone, Steps};
use crate::pipeline::Halt;

fn plan() -> DiagnoseConfig {
    DiagnoseConfig::new(
        4,
        RequestSpec::default(),
        ClientOptions {
            timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        },
        RampPlan {
            max_connections: 2,
            step: Duration::from_secs(1),
        },
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Each message's first words, each ramp event by its kind: the story an observer
/// hears, compact enough to compare.
fn story(events: &[Event<u64>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let said = match e {
            Event::Message(m) if m.is_empty() => continue,
            Event::Message(m) => m
                .split_once(": ")
                .map_or(m.as_str(), |(_, w)| w)
                .to_string(),
            Event::Begin(s) => format!("begin {} steps", s.of),
            Event::End => "end".into(),
            Event::Step(s) => format!("step {}", s.index),
            Event::Second(_) => "second".into(),
            Event::StepDone(_) => "step done".into(),
        };
        if out.last() != Some(&said) {
            out.push(said);
        }
    }
    out
}

/// The lab's cookie page, diagnosed by the library function: the observer hears the
/// probe, the audit, then the ramp between `begin` and `end` (each step before its
/// seconds), then the stack; the diagnosis holds all of them, and a page marked
/// `Cache-Control: private` is found not storable by a shared cache (RFC 9111
/// §5.2.2.7).
#[test]
fn an_observer_hears_probe_audit_ramp_and_stack_in_order() {
    let lab = lab::spawn(LabOptions::default()).expect("lab starts");
    let target = Target::parse(&lab.url("/cache/private-cookie")).unwrap();
    let mut rec = Recorder::new(|p: &Progress| p.requests);
    let d = run(&runtime(), &target, &plan(), &Halt::new(), &mut rec).expect("diagnosed");
    let told = story(&rec.events);
    let at = |what: &str| {
        told.iter()
            .position(|s| s.starts_with(what))
            .unwrap_or_else(|| panic!("{what:?} never told: {told:?}"))
    };
    assert!(at("probing") < at("cache audit…"), "{told:?}");
    assert!(at("cache audit…") < at("begin 2 steps"), "{told:?}");
    assert_eq!(
        told[at("begin")..=at("end")]
            .iter()
            .filter(|s| !s.starts_with("load ramp"))
            .map(String::as_str)
            .collect::<Vec<_>>(),
        [
            "begin 2 steps",
            "step 0",
            "second",
            "step 1",
            "second",
            "end"
        ],
        "{told:?}"
    );
    assert!(at("end") < at("recognising the stack…"), "{told:?}");
    let Some(Event::Begin(Steps { url, .. })) =
        rec.events.iter().find(|e| matches!(e, Event::Begin(_)))
    else {
        unreachable!()
    };
    assert_eq!(url, &target.url);
    let ramp = d.ramp.as_ref().expect("a ramp on loopback");
    assert_eq!(ramp.steps.len(), 2, "{:?}", ramp.stopped_early);
    assert!(d.cache.is_some(), "{:?}", d.cache_error);
    assert!(d.stack.is_some());
    assert!(
        d.findings.iter().any(|f| f.id == "not-shared-cacheable"),
        "{:?}",
        d.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
}

/// Stops the run at its first closed second, as Ctrl-C would.
struct HaltAtFirstSecond(Halt);

impl Observer<Progress> for HaltAtFirstSecond {
    fn second(&mut self, _: &Progress) {
        self.0.halt("stopped by the test");
    }

    fn step(&mut self, _: &Step) {}

    fn step_done(&mut self, _: &StepDone) {}
}

/// A halt during the ramp's first step ends the ramp there and the diagnosis
/// concludes from what was measured: the probe, the audit, the one step.
#[test]
fn a_halt_during_the_ramp_keeps_what_was_measured() {
    let lab = lab::spawn(LabOptions::default()).expect("lab starts");
    let target = Target::parse(&lab.url("/")).unwrap();
    let halt = Halt::new();
    let mut obs = HaltAtFirstSecond(halt.clone());
    let plan = DiagnoseConfig {
        ramp: RampPlan {
            max_connections: 8,
            step: Duration::from_secs(2),
        },
        ..plan()
    };
    let d = run(&runtime(), &target, &plan, &halt, &mut obs).expect("diagnosed");
    let ramp = d.ramp.as_ref().expect("the ramp that ran");
    assert_eq!(
        ramp.steps.len(),
        1,
        "the halt ends the ramp in its first step"
    );
    assert_eq!(ramp.stopped_early.as_deref(), Some("interrupted"));
    assert!(d.probe.fresh.count >= 4 && d.cache.is_some());
    assert_eq!(
        d.stack.as_ref().and_then(|s| s.error.as_deref()),
        None,
        "the stack reads what was seen and sends nothing once halted"
    );
}

#[test]
fn only_loopback_private_and_the_lab_range_are_local_enough() {
    let yes = |a: &[&str]| local_enough(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert!(yes(&["127.0.0.1", "::1"]));
    assert!(yes(&[
        "10.1.2.3",
        "192.168.0.1",
        "198.18.0.1",
        "198.19.255.1"
    ]));
    assert!(yes(&["fd00::1"]));
    assert!(!yes(&[]));
    assert!(!yes(&["127.0.0.1", "93.184.216.34"]));
    assert!(!yes(&["198.20.0.1"]));
    assert!(!yes(&["localhost"]));
}
