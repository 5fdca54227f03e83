//! The long-running half of `latscope serve`: one task per target of the configuration
//! on its interval, each outcome into the [`State`], reloads of the targets file (a bad
//! one refused, the old kept), `--once`, and the shutdown. What becomes of an outcome
//! beyond the state — a log line, a run in the store — is the [`Recorder`]'s: this
//! module neither prints nor stores.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::config::serve::{ServeConfig, ServeTarget};
use crate::pipeline::Halt;

use super::check::{self, Outcome};
use super::state::{Change, State};

/// The longest one check may take, whatever it is.
const CHECK_LIMIT: Duration = Duration::from_secs(300);

/// Halts a check's own [`Halt`] when dropped: the check's future ended or was dropped.
struct HaltOnDrop(Halt);

impl Drop for HaltOnDrop {
    fn drop(&mut self) {
        self.0.halt("the check was ended");
    }
}

/// Where outcomes and the operator's lines go (the command: stderr and the store).
pub trait Recorder: Send + Sync {
    /// A check of `target` ended with `outcome`, confirming `changes`.
    fn outcome(&self, target: &ServeTarget, outcome: &Outcome, changes: &[Change]);
    /// A line for the operator: listening, reloaded, a reload refused, a change.
    fn say(&self, line: &str);
}

/// What the schedule, the HTTP handlers and the signals share.
pub struct Daemon {
    pub state: Mutex<State>,
    config: Mutex<Arc<ServeConfig>>,
    /// Set on SIGTERM/Ctrl-C: the checks end, the server stops.
    pub halt: Halt,
    /// Checks and `/probe`s at once.
    limit: Arc<Semaphore>,
    recorder: Box<dyn Recorder>,
    schedule: Mutex<Vec<JoinHandle<()>>>,
}

impl Daemon {
    /// A daemon for `config`, at most `max_concurrent` checks and probes at once.
    pub fn new(
        config: ServeConfig,
        max_concurrent: usize,
        recorder: Box<dyn Recorder>,
    ) -> Arc<Daemon> {
        Arc::new(Daemon {
            state: Mutex::new(State::default()),
            config: Mutex::new(Arc::new(config)),
            halt: Halt::new(),
            limit: Arc::new(Semaphore::new(max_concurrent)),
            recorder,
            schedule: Mutex::new(Vec::new()),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<ServeConfig> {
        self.config.lock().unwrap().clone()
    }

    /// A line for the operator.
    pub fn say(&self, line: &str) {
        self.recorder.say(line);
    }

    /// A permit for one check or probe: waits while `--max-concurrent` run.
    pub async fn permit(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.limit
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// Records an outcome of `t`: the state, then the recorder with the changes it
    /// confirmed.
    fn record(&self, t: &ServeTarget, o: Outcome) {
        let changes = self.state.lock().unwrap().record(&t.name, o.clone());
        for c in &changes {
            self.recorder.say(&c.line());
        }
        self.recorder.outcome(t, &o, &changes);
    }

    /// Starts one task per target of the current config, ending the old ones.
    pub fn reschedule(self: &Arc<Self>) {
        let config = self.config();
        self.state.lock().unwrap().set_targets(&config.targets);
        let mut tasks = self.schedule.lock().unwrap();
        for t in tasks.drain(..) {
            t.abort();
        }
        let n = config.targets.len().max(1) as u32;
        for (i, t) in config.targets.iter().enumerate() {
            let (daemon, t) = (self.clone(), t.clone());
            // The first checks spread over the shortest interval, not all at once.
            let offset = t.interval.min(Duration::from_secs(10)) * i as u32 / n;
            tasks.push(tokio::spawn(async move {
                let stop = daemon.halt.stop.clone();
                tokio::select! {
                    _ = tokio::time::sleep(offset) => {}
                    _ = stop.stopped() => return,
                }
                loop {
                    let o = daemon.check(&t).await;
                    if daemon.halt.is_halted() {
                        // Cut short by the shutdown: not an outcome of the target's.
                        return;
                    }
                    daemon.record(&t, o);
                    tokio::select! {
                        _ = tokio::time::sleep(t.interval) => {}
                        _ = stop.stopped() => return,
                    }
                }
            }));
        }
    }

    /// One check of `t`, within the concurrency limit and [`CHECK_LIMIT`]. The check
    /// has a halt of its own, set when this future ends or is dropped (a reload, the
    /// limit) or the daemon stops, so a diagnosis on its blocking thread stops too
    /// instead of running on unseen, its permit held.
    async fn check(&self, t: &ServeTarget) -> Outcome {
        let permit = self.permit().await;
        let at = SystemTime::now();
        let halt = Halt::new();
        let _ends = HaltOnDrop(halt.clone());
        let run = check::run(t, &halt, permit);
        let limited = async {
            tokio::select! {
                o = tokio::time::timeout(CHECK_LIMIT, run) => Some(o),
                _ = self.halt.stop.stopped() => None,
            }
        };
        let Some(outcome) = limited.await else {
            halt.halt(self.halt.reason());
            return Outcome {
                at,
                duration: Duration::ZERO,
                result: Err(self.halt.reason().to_string()),
            };
        };
        match outcome {
            Ok(o) => o,
            Err(_) => Outcome {
                at,
                duration: CHECK_LIMIT,
                result: Err(format!(
                    "the check took longer than {}s",
                    CHECK_LIMIT.as_secs()
                )),
            },
        }
    }

    /// Reads the targets file again; a bad file is refused and the old one kept.
    pub fn reload(self: &Arc<Self>) -> Result<usize, String> {
        let Some(path) = self.config().path.clone() else {
            return Err("no --config file to reload".into());
        };
        match ServeConfig::read(&path) {
            Ok(c) => {
                let n = c.targets.len();
                *self.config.lock().unwrap() = Arc::new(c);
                self.reschedule();
                self.say(&format!("reloaded {}: {n} targets", path.display()));
                Ok(n)
            }
            Err(e) => {
                self.say(&format!("reload refused, the old configuration stays: {e}"));
                Err(e.to_string())
            }
        }
    }

    /// `--once`: every target checked once (at most `--max-concurrent` at a time).
    pub async fn once(self: &Arc<Self>) {
        let config = self.config();
        self.state.lock().unwrap().set_targets(&config.targets);
        let mut running = Vec::new();
        for t in config.targets.clone() {
            let d = self.clone();
            running.push(tokio::spawn(async move {
                let o = d.check(&t).await;
                d.record(&t, o);
            }));
        }
        for r in running {
            let _ = r.await;
        }
    }

    /// Stops: checks under way are cut short (and not recorded), the schedule ends.
    pub fn stop(&self) {
        self.halt.halt("latscope serve is stopping");
        for t in self.schedule.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}
