//! Ctrl-C (and `--max-time`) for the measuring commands: one watcher that sets both
//! the probe's [`Stop`] and the load engine's flag, so a run ends promptly and keeps
//! what it measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;

use crate::probe::Stop;

/// Ctrl-C as both a probe [`Stop`] and a flag for the load engine; the watcher runs
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
            eprintln!(
                "\nlatscope: --max-time {} reached: concluding from what was measured",
                humantime::format_duration(limit)
            );
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
        let (s, f, w) = (stop.clone(), flag.clone(), why.clone());
        runtime.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = w.set("interrupted (Ctrl-C)");
                f.store(true, Ordering::SeqCst);
                s.stop();
            }
        });
        Ok(Interrupt {
            stop,
            flag,
            runtime,
            why,
        })
    }

    /// What stopped the run: Ctrl-C or `--max-time` ("interrupted" before either).
    pub fn reason(&self) -> &'static str {
        self.why.get().copied().unwrap_or("interrupted")
    }
}
