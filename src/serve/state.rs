//! What `latscope serve` knows of its targets: each one's latest outcome, the
//! findings it stands by, the counts, and the changes — as events a log line, a
//! counter and the page show.
//!
//! A change is confirmed, not read off one check: a finding appears when two checks
//! in a row find it and goes away when two in a row do not; a target starts failing
//! after two failed checks and recovers after two good ones. A check that disagrees
//! with the state once is noise on a busy machine (issue 29), never an event. The
//! first check of a target sets its state without an event: nothing changed yet.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

use crate::config::serve::ServeTarget;
use crate::diagnose::finding::Severity;

use super::check::Outcome;

/// How many checks in a row confirm a change.
pub const CONFIRM: u32 = 2;
/// How many events the state keeps for the page.
pub const EVENTS_KEPT: usize = 200;

/// A confirmed change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub at: SystemTime,
    pub target: String,
    /// `finding_appeared`, `finding_gone`, `probe_failing`, `probe_recovered`.
    pub what: &'static str,
    /// The finding's id (empty for the probe's own changes).
    pub id: String,
    /// What it says: the finding's title, or why the probe fails.
    pub detail: String,
}

impl Change {
    /// The log line: `target: finding_appeared cache-disabled (the title)`.
    pub fn line(&self) -> String {
        let id = if self.id.is_empty() {
            String::new()
        } else {
            format!(" {}", self.id)
        };
        format!("{}: {}{} ({})", self.target, self.what, id, self.detail)
    }
}

/// One target's state.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub target: ServeTarget,
    pub last: Option<Outcome>,
    /// The findings the state stands by, with their severity and title.
    pub active: BTreeMap<String, (Severity, String)>,
    /// Findings seen (or missed) in the last checks but not confirmed yet: how many
    /// checks in a row disagree with the state.
    pending: BTreeMap<String, u32>,
    /// Whether the state says the target fails, and how many checks disagree.
    pub failing: bool,
    failing_pending: u32,
    pub checks: u64,
    pub failures: u64,
    /// Confirmed changes by (what, id).
    pub changes: BTreeMap<(&'static str, String), u64>,
}

impl TargetState {
    fn new(target: ServeTarget) -> TargetState {
        TargetState {
            target,
            last: None,
            active: BTreeMap::new(),
            pending: BTreeMap::new(),
            failing: false,
            failing_pending: 0,
            checks: 0,
            failures: 0,
            changes: BTreeMap::new(),
        }
    }
}

/// Every target's state and the recent changes.
#[derive(Debug, Default)]
pub struct State {
    pub targets: BTreeMap<String, TargetState>,
    pub events: VecDeque<Change>,
}

impl State {
    /// Takes the targets of a (re)loaded configuration: a target kept by name (and
    /// URL) keeps its state; others start afresh; removed ones go.
    pub fn set_targets(&mut self, targets: &[ServeTarget]) {
        let mut next = BTreeMap::new();
        for t in targets {
            let s = match self.targets.remove(&t.name) {
                Some(mut s) if s.target.target.url == t.target.url => {
                    s.target = t.clone();
                    s
                }
                _ => TargetState::new(t.clone()),
            };
            next.insert(t.name.clone(), s);
        }
        self.targets = next;
    }

    /// Records one check of `name`; returns the changes it confirmed.
    pub fn record(&mut self, name: &str, outcome: Outcome) -> Vec<Change> {
        let Some(s) = self.targets.get_mut(name) else {
            return Vec::new();
        };
        let first = s.checks == 0;
        s.checks += 1;
        let ok = outcome.success();
        if !ok {
            s.failures += 1;
        }
        let mut changes = Vec::new();
        let change = |what: &'static str, id: &str, detail: String| Change {
            at: outcome.at,
            target: name.to_string(),
            what,
            id: id.to_string(),
            detail,
        };
        // The target's own health.
        if first {
            s.failing = !ok;
        } else if ok == s.failing {
            s.failing_pending += 1;
            if s.failing_pending >= CONFIRM {
                s.failing = !ok;
                s.failing_pending = 0;
                changes.push(if ok {
                    change("probe_recovered", "", "answers again".into())
                } else {
                    change("probe_failing", "", failure(&outcome))
                });
            }
        } else {
            s.failing_pending = 0;
        }
        // The findings, when the check measured (a failed check says nothing of them).
        if let Ok(c) = &outcome.result {
            let seen: BTreeMap<String, (Severity, String)> = c
                .findings
                .iter()
                .map(|f| (f.id.clone(), (f.severity, f.title.clone())))
                .collect();
            if first {
                s.active = seen;
                s.pending.clear();
            } else {
                let ids: Vec<String> = seen.keys().chain(s.active.keys()).cloned().collect();
                for id in ids {
                    let now = seen.contains_key(&id);
                    if now == s.active.contains_key(&id) {
                        s.pending.remove(&id);
                        if let (Some(n), Some(a)) = (seen.get(&id), s.active.get_mut(&id)) {
                            *a = n.clone();
                        }
                        continue;
                    }
                    let n = s.pending.entry(id.clone()).or_default();
                    *n += 1;
                    if *n < CONFIRM {
                        continue;
                    }
                    s.pending.remove(&id);
                    if let Some(f) = seen.get(&id) {
                        s.active.insert(id.clone(), f.clone());
                        changes.push(change("finding_appeared", &id, f.1.clone()));
                    } else if let Some(f) = s.active.remove(&id) {
                        changes.push(change("finding_gone", &id, f.1));
                    }
                }
            }
        }
        for c in &changes {
            *s.changes.entry((c.what, c.id.clone())).or_default() += 1;
            self.events.push_back(c.clone());
        }
        while self.events.len() > EVENTS_KEPT {
            self.events.pop_front();
        }
        s.last = Some(outcome);
        changes
    }
}

/// Why a check failed, in a few words.
pub fn failure(o: &Outcome) -> String {
    match &o.result {
        Err(e) => e.clone(),
        Ok(c) => match c.probe.status {
            Some(s) => format!("status {s}"),
            None => "no answer".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::serve::ServeConfig;
    use crate::diagnose::finding::{Category, Finding};
    use crate::serve::check::Checked;
    use std::time::Duration;

    fn state() -> State {
        let c = ServeConfig::parse(
            "[[target]]\nurl = \"http://127.0.0.1:9/\"\nname = \"blog\"\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let mut s = State::default();
        s.set_targets(&c.targets);
        s
    }

    fn finding(id: &str) -> Finding {
        Finding::new(id, Category::Cache, Severity::Warn, format!("{id} title"))
    }

    fn outcome(status: Option<u16>, ids: &[&str]) -> Outcome {
        let probe = crate::probe::ProbeResult {
            status,
            ..Default::default()
        };
        Outcome {
            at: SystemTime::now(),
            duration: Duration::from_millis(5),
            result: match status {
                None => Err("connection refused".into()),
                Some(_) => Ok(Checked {
                    probe,
                    findings: ids.iter().map(|i| finding(i)).collect(),
                    summary: None,
                    diagnosis: None,
                }),
            },
        }
    }

    fn whats(c: &[Change]) -> Vec<String> {
        c.iter().map(|c| format!("{} {}", c.what, c.id)).collect()
    }

    /// A finding that comes and stays is one event, on the second check that finds
    /// it; one check without it is noise; two in a row make it go.
    #[test]
    fn a_finding_is_an_event_once_two_checks_agree() {
        let mut s = state();
        assert!(
            s.record("blog", outcome(Some(200), &["a"])).is_empty(),
            "the first check sets the state"
        );
        assert!(
            s.record("blog", outcome(Some(200), &["a", "b"])).is_empty(),
            "b once: not yet"
        );
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &["a", "b"]))),
            ["finding_appeared b"]
        );
        assert!(s.record("blog", outcome(Some(200), &["a", "b"])).is_empty());
        // Once without a, then with it again: noise.
        assert!(s.record("blog", outcome(Some(200), &["b"])).is_empty());
        assert!(s.record("blog", outcome(Some(200), &["a", "b"])).is_empty());
        assert!(s.record("blog", outcome(Some(200), &["b"])).is_empty());
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &["b"]))),
            ["finding_gone a"]
        );
        let t = &s.targets["blog"];
        assert_eq!(t.changes[&("finding_appeared", "b".to_string())], 1);
        assert_eq!(t.changes[&("finding_gone", "a".to_string())], 1);
        assert_eq!(t.active.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(s.events.len(), 2);
    }

    /// Failing and recovering take two checks each; a failed check neither adds nor
    /// removes findings.
    #[test]
    fn failing_and_recovering_are_confirmed_too() {
        let mut s = state();
        s.record("blog", outcome(Some(200), &["a"]));
        assert!(s.record("blog", outcome(None, &[])).is_empty());
        assert_eq!(
            whats(&s.record("blog", outcome(Some(503), &[]))),
            ["probe_failing "]
        );
        assert!(s.targets["blog"].failing);
        assert_eq!(
            s.targets["blog"].active.keys().collect::<Vec<_>>(),
            ["a"],
            "a refused connection says nothing of the findings"
        );
        assert!(s.record("blog", outcome(Some(200), &["a"])).is_empty());
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &["a"]))),
            ["probe_recovered "]
        );
        assert_eq!(
            (s.targets["blog"].checks, s.targets["blog"].failures),
            (5, 2)
        );
    }

    /// A reload keeps the state of a target it keeps, and drops removed ones.
    #[test]
    fn a_reload_keeps_what_it_keeps() {
        let mut s = state();
        s.record("blog", outcome(Some(200), &["a"]));
        let same = s.targets["blog"].target.clone();
        s.set_targets(std::slice::from_ref(&same));
        assert_eq!(s.targets["blog"].checks, 1);
        s.set_targets(&[]);
        assert!(s.targets.is_empty());
    }
}
