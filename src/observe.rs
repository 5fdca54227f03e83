//! What a running measurement tells whoever watches it: a step started, a second
//! closed, a step ended, a message ("probing…"). The pipelines (`pipeline`, the load
//! engine's callers) call an [`Observer`]; the progress line
//! (`report::progress::ProgressLine`), the live view (`report::live::LiveView`) and
//! `--out` (`output::Live`) implement it, each once, and a command hands them over
//! together ([`Fanout`]). Measurement never prints: it only names this trait.
//!
//! A leaf: the second's type is a parameter (`load::Progress` for load runs), so this
//! module names no other.

/// Where a run of steps (a capacity search, diagnose's ramp) is.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 0-based.
    pub index: usize,
    /// How many steps at most, when known beforehand (the ramp's levels).
    pub of: Option<usize>,
    /// The level as people read it: "210 req/s", "16 connections".
    pub level: String,
    /// The level's connections, for a closed-model step.
    pub connections: Option<u32>,
}

/// A step that ended and was judged.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDone {
    pub index: usize,
    pub level: String,
    /// Achieved requests per second over the step's window.
    pub rps: f64,
    pub p99_ms: f64,
    /// Whether every objective held.
    pub pass: bool,
}

/// A run of steps about to begin (diagnose's ramp), with what a view needs to set
/// itself up before the first step.
#[derive(Debug, Clone, PartialEq)]
pub struct Steps {
    /// What is loaded (after redirects).
    pub url: String,
    /// How many steps at most.
    pub of: usize,
    /// The last step's connections.
    pub max_connections: u32,
    /// Each step's length.
    pub length: std::time::Duration,
}

/// Hears a run while it goes. Every method does nothing by default, so an observer
/// implements only what it shows.
pub trait Observer<S: ?Sized> {
    /// A step begins (its seconds follow).
    fn step(&mut self, step: &Step) {
        let _ = step;
    }

    /// A second closed: what the engine measured so far.
    fn second(&mut self, second: &S) {
        let _ = second;
    }

    /// A step ended and was judged.
    fn step_done(&mut self, done: &StepDone) {
        let _ = done;
    }

    /// A run of steps begins: [`Observer::step`]s follow, then [`Observer::end`].
    fn begin(&mut self, steps: &Steps) {
        let _ = steps;
    }

    /// The run of steps ended (its last step, an early stop, or a failure).
    fn end(&mut self) {}

    /// What the run does now ("example.com: cache audit…"); an empty message says
    /// that nothing worth a line is going on.
    fn message(&mut self, text: &str) {
        let _ = text;
    }
}

/// No one watching.
pub struct Nobody;

impl<S: ?Sized> Observer<S> for Nobody {}

/// Several observers as one: each hears every event, in the order given.
pub struct Fanout<'a, S: ?Sized>(pub Vec<&'a mut dyn Observer<S>>);

impl<S: ?Sized> Observer<S> for Fanout<'_, S> {
    fn step(&mut self, step: &Step) {
        for o in &mut self.0 {
            o.step(step);
        }
    }

    fn second(&mut self, second: &S) {
        for o in &mut self.0 {
            o.second(second);
        }
    }

    fn step_done(&mut self, done: &StepDone) {
        for o in &mut self.0 {
            o.step_done(done);
        }
    }

    fn begin(&mut self, steps: &Steps) {
        for o in &mut self.0 {
            o.begin(steps);
        }
    }

    fn end(&mut self) {
        for o in &mut self.0 {
            o.end();
        }
    }

    fn message(&mut self, text: &str) {
        for o in &mut self.0 {
            o.message(text);
        }
    }
}

/// One event, as a [`Recorder`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<T> {
    Begin(Steps),
    End,
    Step(Step),
    /// What `keep` made of the second.
    Second(T),
    StepDone(StepDone),
    Message(String),
}

/// Keeps every event in order (tests, and whatever wants the run's story
/// afterwards); `keep` turns a second into what is worth keeping of it.
pub struct Recorder<S: ?Sized, T> {
    pub events: Vec<Event<T>>,
    keep: Box<dyn Fn(&S) -> T>,
}

impl<S: ?Sized, T> Recorder<S, T> {
    pub fn new(keep: impl Fn(&S) -> T + 'static) -> Recorder<S, T> {
        Recorder {
            events: Vec::new(),
            keep: Box::new(keep),
        }
    }
}

impl<S: ?Sized, T> Observer<S> for Recorder<S, T> {
    fn step(&mut self, step: &Step) {
        self.events.push(Event::Step(step.clone()));
    }

    fn second(&mut self, second: &S) {
        self.events.push(Event::Second((self.keep)(second)));
    }

    fn step_done(&mut self, done: &StepDone) {
        self.events.push(Event::StepDone(done.clone()));
    }

    fn begin(&mut self, steps: &Steps) {
        self.events.push(Event::Begin(steps.clone()));
    }

    fn end(&mut self) {
        self.events.push(Event::End);
    }

    fn message(&mut self, text: &str) {
        self.events.push(Event::Message(text.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: usize) -> Step {
        Step {
            index,
            of: None,
            level: format!("{} connections", index + 1),
            connections: Some(index as u32 + 1),
        }
    }

    /// A fan-out hands each event to every observer, in order, and an observer that
    /// implements nothing hears nothing.
    #[test]
    fn fanout_hands_every_event_to_each_in_order() {
        let mut a = Recorder::new(|s: &u32| *s);
        let mut b = Recorder::new(|s: &u32| s * 10);
        let mut nobody = Nobody;
        {
            let mut all = Fanout(vec![&mut a, &mut nobody, &mut b]);
            all.message("probing…");
            all.step(&step(0));
            all.second(&1);
            all.second(&2);
            all.message("");
        }
        let expected = |k: u32| {
            vec![
                Event::Message("probing…".to_string()),
                Event::Step(step(0)),
                Event::Second(k),
                Event::Second(2 * k),
                Event::Message(String::new()),
            ]
        };
        assert_eq!(a.events, expected(1));
        assert_eq!(b.events, expected(10));
    }
}
