//! Ctrl-C, SIGTERM and `--max-time` for the measuring commands: one watcher that sets
//! both the probe's [`Stop`] and the load engine's flag, so a run ends promptly and
//! keeps what it measured. A second signal ends the process at once (exit 130).

use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};

use crate::pipeline::Halt;

/// Ctrl-C or SIGTERM as a [`Halt`] (the probe's stop and the load engine's flag); the
/// watcher runs on a runtime of its own so it fires while a blocking ramp runs too.
/// Derefs to its [`Halt`] (`interrupt.stop`, `interrupt.flag`, `interrupt.reason()`).
pub(crate) struct Interrupt {
    pub halt: Halt,
    pub runtime: tokio::runtime::Runtime,
}

impl std::ops::Deref for Interrupt {
    type Target = Halt;

    fn deref(&self) -> &Halt {
        &self.halt
    }
}

impl Interrupt {
    /// Stops the measurement once `limit` has passed, as Ctrl-C would: what was
    /// measured so far is concluded from, printed and saved.
    pub fn deadline(&self, limit: Duration) {
        let halt = self.halt.clone();
        self.runtime.spawn(async move {
            tokio::time::sleep(limit).await;
            if !crate::report::live::active() {
                eprintln!(
                    "\nlatscope: --max-time {} reached: concluding from what was measured",
                    humantime::format_duration(limit)
                );
            }
            halt.halt("--max-time reached");
        });
    }

    pub fn install() -> anyhow::Result<Interrupt> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let halt = Halt::new();
        // Registered before install returns, so a signal never finds the default
        // action (which would end the process and lose the run).
        let (mut int, mut term) = {
            let _rt = runtime.enter();
            (
                signal(SignalKind::interrupt()).context("cannot catch SIGINT")?,
                signal(SignalKind::terminate()).context("cannot catch SIGTERM")?,
            )
        };
        let h = halt.clone();
        runtime.spawn(async move {
            let first = tokio::select! {
                _ = int.recv() => "interrupted (Ctrl-C)",
                _ = term.recv() => "terminated (SIGTERM)",
            };
            h.halt(first);
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
        Ok(Interrupt { halt, runtime })
    }

    /// What Ctrl-C does, for a live view that reads it as a key (raw mode): the same
    /// flag and stop, its own reason.
    pub fn stopper(&self) -> Box<dyn Fn() + Send> {
        self.halt.halter("stopped from the live view (q or Ctrl-C)")
    }
}
