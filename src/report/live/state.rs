//! What the live view shows, accumulated from the load engine's once-a-second feed:
//! the run's fixed description (target, model, planned length), one point per
//! completed second for the charts, the totals so far (status codes, error kinds,
//! per-endpoint counts and latency histograms) and the view's own switches (paused,
//! help, max line: [`Keys`]). Plain data, so the widgets can be tested on a fixed
//! state.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::{chrome, Keys, Screen};
use crate::load::result::SecondResult;
use crate::load::stages::Ramp;
use crate::load::{LoadPlan, Model, Progress};
use crate::stats::histogram::new_histogram;

/// What the run is, fixed for its whole length (the header's first line).
#[derive(Debug, Clone)]
pub struct Setup {
    /// "latscope load http://…" (or the command that runs it).
    pub title: String,
    /// "closed model, 10 VUs", "open model, 500 req/s, up to 64 connections", …
    pub model: String,
    /// Planned length (None: count mode).
    pub length: Option<Duration>,
    /// Count mode: requests to send.
    pub count: Option<u64>,
    /// Worker threads (latscope's CPU is shown against `threads` × 100 %).
    pub threads: usize,
    /// Endpoint names, plan order.
    pub endpoints: Vec<String>,
    /// Closed model: the VUs over time; open model: the arrival rate over time.
    pub target: Target,
    /// A ramp's whole seconds per step: a step's last partial second is folded into
    /// its last whole one, as the ramp's timeline does.
    pub step_s: Option<u32>,
}

/// What the run aims at, to show beside what it achieved.
#[derive(Debug, Clone)]
pub enum Target {
    /// Closed model: VUs over time.
    Vus(Ramp),
    /// Open model: requests per second over time.
    Rate(Ramp),
}

impl Setup {
    /// The description of `plan`, run by `command` ("load", "diagnose ramp", …).
    pub fn from_plan(command: &str, plan: &LoadPlan) -> Setup {
        let model = crate::report::load::model_text(plan);
        Setup {
            title: crate::redact::for_output(&format!("latscope {command} {}", plan.target.url))
                .into_owned(),
            model,
            length: plan.run_length(),
            count: plan.count,
            threads: plan.threads.max(1),
            endpoints: plan
                .endpoints
                .iter()
                .map(|e| crate::redact::for_output(&e.name).into_owned())
                .collect(),
            target: match plan.model {
                Model::Closed => Target::Vus(plan.ramp()),
                Model::Open { .. } => Target::Rate(plan.ramp()),
            },
            step_s: None,
        }
    }
}

impl Setup {
    /// The description of diagnose's load ramp on `url`: closed-model steps of
    /// `step` each, 1 to `max` connections, `steps` steps at most.
    pub fn ramp(url: &str, max: u32, step: Duration, steps: usize) -> Setup {
        let whole = step.as_secs_f64().ceil().max(1.0) as u64;
        Setup {
            title: crate::redact::for_output(&format!("latscope diagnose {url}")).into_owned(),
            model: format!(
                "load ramp: closed model, 1 → {max} connections, {} a step",
                humantime::format_duration(step)
            ),
            length: Some(Duration::from_secs(whole * steps as u64)),
            count: None,
            threads: crate::load::plan::default_threads(),
            endpoints: vec![crate::redact::for_output(url).into_owned()],
            target: Target::Vus(Ramp::constant(max as f64, None)),
            step_s: Some(whole as u32),
        }
    }
}

/// One completed second, as the charts draw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Point {
    /// Second of the run (0-based).
    pub t: u32,
    /// Requests completed in the second.
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// `--watch`: the watched server's CPU busy that second, % of all its CPUs.
    pub server_cpu: Option<f64>,
}

/// One endpoint's totals so far.
#[derive(Debug, Clone)]
pub struct EndpointLive {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    /// Latency so far, ns (empty with one endpoint or more than 100: the engine keeps
    /// per-endpoint seconds for 2 to 100 endpoints).
    pub latency: Histogram<u64>,
}

/// Everything the view draws.
#[derive(Debug, Clone)]
pub struct LiveState {
    pub setup: Setup,
    /// Completed seconds, in order.
    pub points: Vec<Point>,
    pub elapsed: Duration,
    pub requests: u64,
    pub errors: u64,
    pub dropped: u64,
    /// A scenario's checks judged so far, and the failed ones (from the seconds).
    pub checks: u64,
    pub checks_failed: u64,
    /// Connections open now.
    pub active: u64,
    /// Status code → responses so far.
    pub statuses: BTreeMap<u16, u64>,
    /// Error kind → count so far.
    pub error_kinds: BTreeMap<String, u64>,
    pub endpoints: Vec<EndpointLive>,
    /// latscope's worker CPU in the last second, percent of one core.
    pub cpu_pct: Option<f64>,
    /// Latency over the whole run so far, ns.
    pub latency: Histogram<u64>,
    /// Pause, help, max line, stopping.
    pub keys: Keys,
    /// A ramp of several runs (diagnose): this step's connections, its number (from
    /// 1) and the number of steps.
    pub step: Option<(u32, usize, usize)>,
    /// What the steps before this one added (their seconds come first on the chart).
    before: Before,
}

/// The totals of a ramp's earlier steps, added to the engine's (per-run) numbers.
#[derive(Debug, Clone, Default)]
struct Before {
    seconds: u32,
    elapsed: Duration,
    requests: u64,
    errors: u64,
    dropped: u64,
    statuses: BTreeMap<u16, u64>,
    endpoints: Vec<(u64, u64)>,
}

impl LiveState {
    /// A state with nothing measured yet.
    pub fn new(setup: Setup) -> LiveState {
        let endpoints = setup
            .endpoints
            .iter()
            .map(|name| EndpointLive {
                name: name.clone(),
                requests: 0,
                ok: 0,
                latency: new_histogram(),
            })
            .collect();
        LiveState {
            setup,
            points: Vec::new(),
            elapsed: Duration::ZERO,
            requests: 0,
            errors: 0,
            dropped: 0,
            checks: 0,
            checks_failed: 0,
            active: 0,
            statuses: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            endpoints,
            cpu_pct: None,
            latency: new_histogram(),
            keys: Keys::default(),
            step: None,
            before: Before::default(),
        }
    }

    /// Starts the next step of a ramp (a new run of the engine, its seconds and totals
    /// counted from zero again): what the view has so far becomes the base they are
    /// added to, and its seconds follow the ones already drawn.
    pub fn begin_step(&mut self, connections: u32, number: usize, of: usize) {
        if self.step.is_some() {
            self.before = Before {
                seconds: self.points.last().map_or(0, |p| p.t + 1),
                elapsed: self.elapsed,
                requests: self.requests,
                errors: self.errors,
                dropped: self.dropped,
                statuses: self.statuses.clone(),
                endpoints: self.endpoints.iter().map(|e| (e.requests, e.ok)).collect(),
            };
        }
        self.step = Some((connections, number, of));
    }

    /// Adds one completed second: its chart point, its error kinds, its CPU, and its
    /// histograms (overall `latency`, and per endpoint from `ep_v2`) to the totals.
    pub fn push_second(&mut self, s: &SecondResult, latency: Option<&Histogram<u64>>) {
        let t = match self.setup.step_s {
            Some(whole) => s.t.min(whole.max(1) - 1),
            None => s.t,
        };
        let point = Point {
            t: t + self.before.seconds,
            requests: s.requests,
            errors: s.errors,
            p50_ms: s.p50_ms,
            p90_ms: s.p90_ms,
            p99_ms: s.p99_ms,
            max_ms: s.max_ms,
            server_cpu: s.server.as_ref().and_then(|v| v.cpu_pct),
        };
        // A ramp step's extra partial second joins its last whole one: counts add up,
        // percentiles take the worse.
        match self.points.last_mut() {
            Some(last) if last.t == point.t => {
                last.requests += point.requests;
                last.errors += point.errors;
                last.p50_ms = last.p50_ms.max(point.p50_ms);
                last.p90_ms = last.p90_ms.max(point.p90_ms);
                last.p99_ms = last.p99_ms.max(point.p99_ms);
                last.max_ms = last.max_ms.max(point.max_ms);
                last.server_cpu = last.server_cpu.or(point.server_cpu);
            }
            _ => self.points.push(point),
        }
        for (k, n) in &s.errors_by_kind {
            if *n > 0 {
                *self.error_kinds.entry(k.clone()).or_default() += n;
            }
        }
        self.checks += s.checks;
        self.checks_failed += s.checks_failed;
        if s.cpu_pct.is_some() {
            self.cpu_pct = s.cpu_pct;
        }
        if let Some(h) = latency {
            let _ = self.latency.add(h);
        }
        if !s.ep_v2.is_empty() {
            let mut de = Deserializer::new();
            for (ep, v2) in self.endpoints.iter_mut().zip(&s.ep_v2) {
                if v2.is_empty() {
                    continue;
                }
                if let Ok(h) = de.deserialize::<u64, _>(&mut v2.as_slice()) {
                    let _ = ep.latency.add(&h);
                }
            }
        }
    }

    /// Sets the running totals the engine reports with every call.
    #[allow(clippy::too_many_arguments)]
    pub fn set_totals(
        &mut self,
        elapsed: Duration,
        requests: u64,
        errors: u64,
        dropped: u64,
        active: u64,
        statuses: &BTreeMap<u16, u64>,
        endpoints: &[(u64, u64)],
    ) {
        let b = &self.before;
        self.elapsed = b.elapsed + elapsed;
        self.requests = b.requests + requests;
        self.errors = b.errors + errors;
        self.dropped = b.dropped + dropped;
        self.active = active;
        self.statuses.clone_from(&b.statuses);
        for (code, n) in statuses {
            *self.statuses.entry(*code).or_default() += n;
        }
        for (i, (ep, &(n, ok))) in self.endpoints.iter_mut().zip(endpoints).enumerate() {
            let (bn, bok) = b.endpoints.get(i).copied().unwrap_or_default();
            ep.requests = bn + n;
            ep.ok = bok + ok;
        }
    }

    /// Folds one progress report of the engine in: its new seconds, then its totals.
    pub fn apply(&mut self, p: &Progress) {
        for s in &p.seconds {
            self.push_second(&s.second, Some(&s.latency));
        }
        self.set_totals(
            p.elapsed,
            p.requests,
            p.errors,
            p.dropped,
            p.active,
            &p.statuses,
            &p.endpoints,
        );
    }

    /// The last completed second (what the header's "now" numbers are).
    pub fn last(&self) -> Option<&Point> {
        self.points.last()
    }

    /// The second the chart ends at: the pause point, or the newest second.
    pub fn chart_end(&self) -> u32 {
        self.keys.paused_at.unwrap_or_else(|| self.newest())
    }

    /// Toggles the pause of the chart's scroll.
    pub fn toggle_pause(&mut self) {
        let newest = self.newest();
        self.keys.toggle_pause(newest);
    }

    /// The x range the charts show, seconds (see [`chrome::x_range`]).
    pub fn x_range(&self, window: u32) -> (u32, u32) {
        chrome::x_range(self.setup.length, self.chart_end(), window)
    }

    /// The points of the seconds in `range` (end excluded).
    pub fn visible(&self, range: (u32, u32)) -> &[Point] {
        chrome::visible(&self.points, range, |p| p.t)
    }
}

impl Screen for LiveState {
    fn draw(&self, frame: &mut ratatui::Frame) {
        super::view::draw(frame, self);
    }

    fn keys(&mut self) -> &mut Keys {
        &mut self.keys
    }

    fn newest(&self) -> u32 {
        self.points.last().map_or(0, |p| p.t)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fixed state for the widget tests: a 30 s closed run of three endpoints, 12 s
    /// in, with one second of errors.
    pub(crate) fn fixed() -> LiveState {
        let setup = Setup {
            title: "latscope load http://127.0.0.1:8080/".into(),
            model: "closed model, 16 connections".into(),
            length: Some(Duration::from_secs(30)),
            count: None,
            threads: 2,
            endpoints: vec!["home".into(), "search".into(), "checkout".into()],
            target: Target::Vus(Ramp::constant(16.0, Some(Duration::from_secs(30)))),
            step_s: None,
        };
        let mut st = LiveState::new(setup);
        for t in 0..12u32 {
            let base = 2.0 + (t % 4) as f64 * 0.5;
            let mut s = SecondResult {
                t,
                requests: 4000 + 100 * t as u64,
                ok: 4000 + 100 * t as u64,
                p50_ms: base,
                p90_ms: base * 2.0,
                p99_ms: base * 4.0,
                max_ms: base * 8.0,
                cpu_pct: Some(120.0 + t as f64),
                ..Default::default()
            };
            if t == 7 {
                s.errors = 25;
                s.ok -= 25;
                s.errors_by_kind.insert("timeout".into(), 25);
            }
            let mut ep = Vec::new();
            for (i, ms) in [1.0f64, 3.0, 9.0].iter().enumerate() {
                let mut h = new_histogram();
                for k in 0..100u64 {
                    h.saturating_record(((ms + (k as f64) / 100.0 * ms) * 1e6) as u64);
                }
                let _ = i;
                let mut buf = Vec::new();
                use hdrhistogram::serialization::Serializer;
                hdrhistogram::serialization::V2DeflateSerializer::new()
                    .serialize(&h, &mut buf)
                    .unwrap();
                ep.push(buf);
            }
            s.ep_v2 = ep;
            st.push_second(&s, None);
        }
        let statuses = BTreeMap::from([(200u16, 52_575u64), (503, 25)]);
        st.set_totals(
            Duration::from_millis(12_200),
            54_600,
            25,
            0,
            16,
            &statuses,
            &[(27_300, 27_300), (18_200, 18_175), (9_100, 9_100)],
        );
        st
    }

    /// Errors by kind add up over seconds; a repeated second joins the point; the
    /// per-endpoint histograms add up.
    #[test]
    fn seconds_accumulate() {
        let st = fixed();
        assert_eq!(st.points.len(), 12);
        assert_eq!(st.error_kinds.get("timeout"), Some(&25));
        assert_eq!(st.endpoints[0].latency.len(), 1200);
        let p50 = st.endpoints[2].latency.value_at_quantile(0.5) as f64 / 1e6;
        assert!((13.0..14.0).contains(&p50), "{p50}");
        let mut st = st;
        st.push_second(
            &SecondResult {
                t: 11,
                requests: 1,
                ..Default::default()
            },
            None,
        );
        assert_eq!(st.points.len(), 12);
        assert_eq!(st.points[11].requests, 5101);
    }

    /// A ramp's second step continues the first: its seconds follow on the chart and
    /// its totals add to the first step's.
    #[test]
    fn ramp_steps_add_up() {
        let mut st = fixed();
        st.begin_step(1, 1, 2);
        st.begin_step(2, 2, 2);
        st.push_second(
            &SecondResult {
                t: 0,
                requests: 10,
                ..Default::default()
            },
            None,
        );
        st.set_totals(
            Duration::from_secs(1),
            10,
            0,
            0,
            2,
            &BTreeMap::from([(200u16, 10u64)]),
            &[(10, 10)],
        );
        assert_eq!(st.points.last().unwrap().t, 12);
        assert_eq!(st.requests, 54_610);
        assert_eq!(st.statuses[&200], 52_585);
        assert_eq!(st.endpoints[0].requests, 27_310);
        assert_eq!(st.elapsed, Duration::from_millis(13_200));
        assert_eq!(st.step, Some((2, 2, 2)));
    }

    /// A run that fits the window is shown whole; a longer one scrolls, and a pause
    /// freezes the right edge while seconds keep coming.
    #[test]
    fn x_range_fits_scrolls_and_pauses() {
        let mut st = fixed();
        assert_eq!(st.x_range(60), (0, 30));
        st.setup.length = Some(Duration::from_secs(600));
        for t in 12..100u32 {
            st.push_second(
                &SecondResult {
                    t,
                    ..Default::default()
                },
                None,
            );
        }
        assert_eq!(st.x_range(60), (40, 100));
        st.toggle_pause();
        st.push_second(
            &SecondResult {
                t: 100,
                ..Default::default()
            },
            None,
        );
        assert_eq!(st.x_range(60), (40, 100));
        assert_eq!(st.visible((40, 100)).len(), 60);
        st.toggle_pause();
        assert_eq!(st.x_range(60), (41, 101));
    }
}
