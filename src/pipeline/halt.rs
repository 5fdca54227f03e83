//! How a pipeline is told to stop: one [`Halt`] joins the probe's [`Stop`] (which
//! wakes waiting futures) and the load engine's flag, and keeps why it was set
//! (Ctrl-C, SIGTERM, `--max-time`, the live view's `q`, a server shutting down), so
//! that what was not measured can say why. Whoever owns the run sets it; the
//! pipeline only reads it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::probe::Stop;

/// Stops a pipeline: shared by clones, set once, never unset.
#[derive(Clone, Default)]
pub struct Halt {
    /// What the probe, the cache audit and the peek wait on.
    pub stop: Stop,
    /// What the load engine polls.
    pub flag: Arc<AtomicBool>,
    /// The first reason given.
    why: Arc<OnceLock<&'static str>>,
}

impl Halt {
    /// Not set.
    pub fn new() -> Halt {
        Halt::default()
    }

    /// Sets both flags; the first `why` given is the one [`Halt::reason`] says.
    pub fn halt(&self, why: &'static str) {
        let _ = self.why.set(why);
        self.flag.store(true, Ordering::SeqCst);
        self.stop.stop();
    }

    /// Whether [`Halt::halt`] (or the probe's stop) was called.
    pub fn is_halted(&self) -> bool {
        self.stop.is_stopped() || self.flag.load(Ordering::SeqCst)
    }

    /// Why the run was stopped ("interrupted" when no reason was given).
    pub fn reason(&self) -> &'static str {
        self.why.get().copied().unwrap_or("interrupted")
    }

    /// [`Halt::halt`] with `why`, as a callback (the live view's `q`).
    pub fn halter(&self, why: &'static str) -> Box<dyn Fn() + Send> {
        let h = self.clone();
        Box::new(move || h.halt(why))
    }
}

#[cfg(test)]
mod tests {
    use super::Halt;
    use std::sync::atomic::Ordering;

    /// A clone sees the halt; the first reason stays; both flags are set.
    #[test]
    fn a_halt_reaches_every_clone_and_keeps_its_first_reason() {
        let h = Halt::new();
        let seen = h.clone();
        assert!(!seen.is_halted());
        assert_eq!(seen.reason(), "interrupted");
        h.halt("--max-time reached");
        h.halt("interrupted (Ctrl-C)");
        assert!(seen.is_halted());
        assert!(seen.stop.is_stopped());
        assert!(seen.flag.load(Ordering::SeqCst));
        assert_eq!(seen.reason(), "--max-time reached");
    }
}
