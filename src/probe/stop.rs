//! A stop signal a measurement checks between requests and waits on during one, so
//! Ctrl-C ends a run promptly and keeps what was measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Cloneable stop flag with a waker.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<(AtomicBool, Notify)>);

impl Stop {
    /// A flag that is not set.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Sets the flag and wakes every waiter.
    pub fn stop(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    /// Whether [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }

    /// Resolves once the flag is set.
    pub async fn stopped(&self) {
        loop {
            let notified = self.0 .1.notified();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}
