//! The open model's dispatch: arrivals wait in a thread-local queue for an idle
//! connection, warm ones first.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::Instant;

use tokio::sync::Notify;

/// The open model's local queue of due requests, and idle connections waiting on it.
/// Idle connected ("warm") connections are woken before unconnected ("cold") ones,
/// so new connections open only when the warm ones are all busy; when none is idle
/// at all, the thread is asked for one more (`wanted`, `spawn`).
pub(super) struct Dispatch {
    pub(super) queue: RefCell<VecDeque<Instant>>,
    pub(super) warm: Notify,
    pub(super) cold: Notify,
    /// Warm connections waiting and not yet notified.
    pub(super) idle_warm: Cell<usize>,
    /// Cold connections waiting and not yet notified.
    pub(super) idle_cold: Cell<usize>,
    /// Connections asked for since the thread last made some.
    pub(super) wanted: Cell<usize>,
    pub(super) spawn: Notify,
    pub(super) closed: Cell<bool>,
}

impl Dispatch {
    pub(super) fn push(&self, due: Instant) {
        self.queue.borrow_mut().push_back(due);
        let (warm, cold) = (self.idle_warm.get(), self.idle_cold.get());
        if warm > 0 {
            // The connection idle the shortest time takes it: a few connections
            // carry a steady rate (and stay warm), as on the io_uring engine; the
            // longest-idle one first would spread it over every connection ever opened.
            self.idle_warm.set(warm - 1);
            self.warm.notify_last();
        } else if cold > 0 {
            self.idle_cold.set(cold - 1);
            self.cold.notify_one();
        } else {
            self.wanted.set(self.wanted.get() + 1);
            self.spawn.notify_one();
        }
    }

    pub(super) fn close(&self) {
        self.closed.set(true);
        self.idle_warm.set(0);
        self.idle_cold.set(0);
        self.warm.notify_waiters();
        self.cold.notify_waiters();
        self.spawn.notify_one();
    }

    pub(super) async fn take(&self, warm: bool) -> Option<Instant> {
        loop {
            if let Some(due) = self.queue.borrow_mut().pop_front() {
                return Some(due);
            }
            if self.closed.get() {
                return None;
            }
            if warm {
                self.idle_warm.set(self.idle_warm.get() + 1);
                self.warm.notified().await;
            } else {
                self.idle_cold.set(self.idle_cold.get() + 1);
                self.cold.notified().await;
            }
        }
    }
}
