//! Ctrl-C, SIGTERM and `--max-time` for the measuring commands: one watcher that sets
//! both the probe's [`Stop`] and the load engine's flag, so a run ends promptly and
//! keeps what it measured. A second signal ends the process at once (exit 130).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};

use crate::probe::Stop;

/// Ctrl-C or SIGTERM as both a probe [`Stop`] and a flag for the load engine; the watcher runs
/// on a runtime of its own so it fires while a blocking ramp runs too.
pub(crate) struct Interrupt {
    pub stop: Stop,
    pub flag: Arc<AtomicBool>,
    pub runtime: tokio::runtime::Runtime,
    /// What stopped the run, once something did.
    why: Arc<OnceLock<&'static str>>,
}

impl Interrupt {
    /// Stops the measurement once `limit` has passed, as Ctrl-C would: what was
    /// measured so far is concluded from, printed and saved.
    pub fn deadline(&self, limit: Duration) {
        let (stop, flag, why) = (self.stop.clone(), self.flag.clone(), self.why.clone());
        self.runtime.spawn(async move {
            tokio::time::sleep(limit).await;
            let _ = why.set("--max-time reached");
            if !crate::report::live::active() {
                eprintln!(
                    "\nlatscope: --max-time {} reached: concluding from what was measured",
                    humantime::format_duration(limit)
                );
            }
            flag.store(true, Ordering::SeqCst);
            stop.stop();
        });
    }

    pub fn install() -> anyhow::Result<Interrupt> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let stop = Stop::new();
        let flag = Arc::new(AtomicBool::new(false));
        let why = Arc::new(OnceLock::new());
        // Registered before install returns, so a signal never finds the default
        // action (which would end the process and lose the run).
        let (mut int, mut term) = {
            let _rt = runtime.enter();
            (
                signal(SignalKind::interrupt()).context("cannot catch SIGINT")?,
                signal(SignalKind::terminate()).context("cannot catch SIGTERM")?,
            )
        };
        let (s, f, w) = (stop.clone(), flag.clone(), why.clone());
        runtime.spawn(async move {
            let first = tokio::select! {
                _ = int.recv() => "interrupted (Ctrl-C)",
                _ = term.recv() => "terminated (SIGTERM)",
            };
            let _ = w.set(first);
            f.store(true, Ordering::SeqCst);
            s.stop();
            // The live view shows "stopping" itself; a line on its screen would smear it.
            if !crate::report::live::active() {
                eprintln!(
                    "\nlatscope: {first}: stopping, keeping what was measured (signal again \
                     to stop at once)"
                );
            }
            // A second signal while the run winds down: the user means it.
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            crate::report::live::leave();
            eprintln!("\nlatscope: stopped at once (a second signal)");
            std::process::exit(130);
        });
        Ok(Interrupt {
            stop,
            flag,
            runtime,
            why,
        })
    }

    /// What Ctrl-C does, for a live view that reads it as a key (raw mode): the same
    /// flag and stop, the same reason.
    pub fn stopper(&self) -> Box<dyn Fn() + Send> {
        let (stop, flag, why) = (self.stop.clone(), self.flag.clone(), self.why.clone());
        Box::new(move || {
            let _ = why.set("stopped from the live view (q or Ctrl-C)");
            flag.store(true, Ordering::SeqCst);
            stop.stop();
        })
    }

    /// What stopped the run: Ctrl-C, SIGTERM or `--max-time` ("interrupted" before
    /// any).
    pub fn reason(&self) -> &'static str {
        self.why.get().copied().unwrap_or("interrupted")
    }
}
