//! What `latscope serve` knows of its targets: each one's latest outcome, the
//! findings it stands by, the counts, and the changes — as events a log line, a
//! counter and the page show.
//!
//! A change is confirmed, not read off one check: a finding appears when two checks
//! in a row find it and goes away when two in a row do not; a target starts failing
//! after two failed checks and recovers after two good ones. A check that disagrees
//! with the state once is noise on a busy machine (issue 29), never an event. The
//! first [`CONFIRM`] checks of a target set its state without an event (nothing has
//! changed yet), and the state they set is confirmed too: a finding every one of them
//! found, a target that failed every one. A finding only the very first check saw (a
//! server's slow first answer: `cold-start`) is noise, not a state that later "goes".
//!
//! A quantity that shifts without a finding is a change too: the fresh connections'
//! TTFB of the last [`RECENT`] checks against the checks before them (up to
//! [`BASELINE`]), decided on the Hodges–Lehmann interval of their ratio and shift as
//! `compare` and the rules decide (`stats::interval`): `ttfb_slower` when the whole
//! 95 % interval is at least ×1.5 and 5 ms slower, `ttfb_faster` the other way. After
//! an event, the recent checks become the new baseline.

use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;

use crate::config::serve::ServeTarget;
use crate::diagnose::finding::Severity;

use super::check::Outcome;

/// How many checks in a row confirm a change.
pub const CONFIRM: u32 = 2;
/// How many events the state keeps for the page.
pub const EVENTS_KEPT: usize = 200;
/// The checks whose TTFB is set against the baseline.
pub const RECENT: usize = 3;
/// The most checks the baseline holds.
pub const BASELINE: usize = 9;
/// A TTFB shift is a change when its interval clears both: this ratio…
pub const SHIFT_RATIO: f64 = 1.5;
/// …and this many milliseconds.
pub const SHIFT_MS: f64 = 5.0;
/// How long the page's chart reaches back, and its most points.
pub const SERIES_SPAN: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
pub const SERIES_POINTS: usize = 1440;

/// A confirmed change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub at: SystemTime,
    pub target: String,
    /// `finding_appeared`, `finding_gone`, `probe_failing`, `probe_recovered`,
    /// `ttfb_slower`, `ttfb_faster`.
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
    /// The fresh connections' TTFB samples (ms) of the last checks, oldest first:
    /// the baseline, then the recent ones.
    ttfb: VecDeque<Vec<f64>>,
    /// Each check's fresh TTFB median (ms) over the last day, for the page's chart.
    pub series: VecDeque<(SystemTime, f64)>,
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
            ttfb: VecDeque::new(),
            series: VecDeque::new(),
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
        // One of the checks that set the state: no events, only what all agree on.
        let settling = s.checks < u64::from(CONFIRM);
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
        } else if settling {
            s.failing &= !ok;
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
            } else if settling {
                s.active.retain(|id, _| seen.contains_key(id));
                for (id, f) in &mut s.active {
                    *f = seen[id].clone();
                }
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
        if let Ok(c) = &outcome.result {
            let fresh: Vec<f64> = c
                .probe
                .ok_samples(crate::probe::Series::Fresh)
                .map(|x| x.phases_ms.ttfb)
                .collect();
            if !fresh.is_empty() {
                s.series
                    .push_back((outcome.at, crate::stats::median(&fresh)));
                while s.series.len() > SERIES_POINTS
                    || s.series.front().is_some_and(|(t, _)| {
                        outcome.at.duration_since(*t).unwrap_or_default() > SERIES_SPAN
                    })
                {
                    s.series.pop_front();
                }
                s.ttfb.push_back(fresh);
                while s.ttfb.len() > BASELINE + RECENT {
                    s.ttfb.pop_front();
                }
                if let Some((what, detail)) = ttfb_shift(&s.ttfb) {
                    // The recent checks are the new baseline.
                    while s.ttfb.len() > RECENT {
                        s.ttfb.pop_front();
                    }
                    changes.push(change(what, "", detail));
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

/// Whether the last [`RECENT`] checks' TTFB moved from the ones before them: the
/// change and what it says, once the baseline has at least as many checks.
fn ttfb_shift(checks: &VecDeque<Vec<f64>>) -> Option<(&'static str, String)> {
    if checks.len() < 2 * RECENT {
        return None;
    }
    let split = checks.len() - RECENT;
    let base: Vec<f64> = checks.iter().take(split).flatten().copied().collect();
    let recent: Vec<f64> = checks.iter().skip(split).flatten().copied().collect();
    let ratio = crate::stats::interval::ratio(&base, &recent)?;
    let shift = crate::stats::interval::shift(&base, &recent)?;
    let said = |what: &'static str| {
        let detail = format!(
            "fresh TTFB {:.1} ms → {:.1} ms (×{:.2}; 95 % interval ×{:.2} .. ×{:.2}), {} checks against {}",
            crate::stats::median(&base),
            crate::stats::median(&recent),
            ratio.estimate,
            ratio.low,
            ratio.high,
            RECENT,
            split
        );
        Some((what, detail))
    };
    if ratio.low >= SHIFT_RATIO && shift.low >= SHIFT_MS {
        said("ttfb_slower")
    } else if ratio.high <= 1.0 / SHIFT_RATIO && shift.high <= -SHIFT_MS {
        said("ttfb_faster")
    } else {
        None
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

/// `--once`'s text: each target's latest outcome (status and time, or why it failed),
/// its "where the time goes" and findings; and whether one failed.
pub fn once_text(state: &State) -> (String, bool) {
    let mut failed = false;
    let mut text = String::new();
    for (name, t) in &state.targets {
        let Some(o) = &t.last else { continue };
        let head = if o.success() {
            let c = o.result.as_ref().ok();
            format!(
                "{} in {:.0} ms",
                c.and_then(|c| c.probe.status).unwrap_or(0),
                o.duration.as_secs_f64() * 1e3
            )
        } else {
            failed = true;
            format!("FAILED: {}", failure(o))
        };
        text.push_str(&format!("{name}  {head}\n"));
        if let Ok(c) = &o.result {
            if let Some(s) = &c.summary {
                text.push_str(&format!("  {s}\n"));
            }
            for f in &c.findings {
                text.push_str(&format!("  {} {}: {}\n", f.severity, f.id, f.title));
            }
        }
    }
    (text, failed)
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
        timed(status, ids, &[])
    }

    /// An outcome whose fresh requests took `ttfb` ms each.
    fn timed(status: Option<u16>, ids: &[&str], ttfb: &[f64]) -> Outcome {
        let samples = ttfb
            .iter()
            .map(|&t| {
                let mut s = crate::probe::Sample::failed(
                    crate::probe::Series::Fresh,
                    0.0,
                    &crate::net::NetError::Interrupted,
                );
                s.error = None;
                s.error_kind = None;
                s.status = status;
                s.phases_ms.ttfb = t;
                s
            })
            .collect();
        let probe = crate::probe::ProbeResult {
            status,
            samples,
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
            s.record("blog", outcome(Some(200), &["a"])).is_empty(),
            "the second confirms it"
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
            (6, 2)
        );
    }

    /// The first two checks set the state together: a finding only the first saw (a
    /// server's slow first answer, `cold-start`) and a failure only the first had are
    /// not part of it, so their absence later is no event; what both saw is, and goes
    /// away as any finding does.
    #[test]
    fn the_first_two_checks_set_the_state_together() {
        let mut s = state();
        assert!(s
            .record("blog", outcome(Some(200), &["cold-start", "a"]))
            .is_empty());
        assert!(s.record("blog", outcome(Some(200), &["a"])).is_empty());
        assert_eq!(s.targets["blog"].active.keys().collect::<Vec<_>>(), ["a"]);
        for _ in 0..4 {
            assert!(s.record("blog", outcome(Some(200), &["a"])).is_empty());
        }
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &[]))),
            Vec::<String>::new()
        );
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &[]))),
            ["finding_gone a"]
        );
        assert_eq!(s.events.len(), 1);

        let mut s = state();
        assert!(s.record("blog", outcome(None, &[])).is_empty());
        assert!(s.targets["blog"].failing, "one check so far: it failed");
        assert!(s.record("blog", outcome(Some(200), &[])).is_empty());
        assert!(!s.targets["blog"].failing);
        for _ in 0..3 {
            assert!(s.record("blog", outcome(Some(200), &[])).is_empty());
        }
        assert!(s.events.is_empty());

        let mut s = state();
        s.record("blog", outcome(None, &[]));
        s.record("blog", outcome(Some(503), &[]));
        assert!(s.targets["blog"].failing, "two failed checks: failing");
        assert!(s.record("blog", outcome(Some(200), &[])).is_empty());
        assert_eq!(
            whats(&s.record("blog", outcome(Some(200), &[]))),
            ["probe_recovered "]
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

    /// A TTFB that trebles for good is one `ttfb_slower` after three checks of it;
    /// noise around a steady TTFB, and a single slow check, are none; coming back
    /// is one `ttfb_faster`.
    #[test]
    fn a_ttfb_that_moves_for_good_is_one_change() {
        let mut s = state();
        let noisy = |i: usize| [20.0 + (i % 3) as f64, 21.0 + (i % 2) as f64, 19.5];
        for i in 0..12 {
            assert!(
                s.record("blog", timed(Some(200), &[], &noisy(i)))
                    .is_empty(),
                "steady check {i}"
            );
        }
        assert!(
            s.record("blog", timed(Some(200), &[], &[80.0, 85.0, 90.0]))
                .is_empty(),
            "one slow check"
        );
        let mut seen = Vec::new();
        for i in 0..6 {
            let t = 60.0 + i as f64;
            seen.extend(whats(
                &s.record("blog", timed(Some(200), &[], &[t, t + 2.0, t + 4.0])),
            ));
        }
        assert_eq!(seen, ["ttfb_slower "], "{:?}", s.events);
        assert!(s.events[0].detail.contains("→"), "{:?}", s.events[0]);
        let mut back = Vec::new();
        for i in 0..6 {
            back.extend(whats(&s.record("blog", timed(Some(200), &[], &noisy(i)))));
        }
        assert_eq!(back, ["ttfb_faster "]);
        assert_eq!(s.targets["blog"].series.len(), 25);
    }
}
