//! The cold start of `/cold`: the first `/cold` request after the server starts, or
//! after `cold_after` without any `/cold` request, pays `cold` (a JIT, a cache fill, a
//! container waking up). Requests that arrive while it warms up wait for the same
//! warm-up, as they would on a real server.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// The warm/cold state of `/cold`.
#[derive(Debug)]
pub(crate) struct ColdStart {
    cost: Duration,
    idle_limit: Duration,
    /// When the last `/cold` request was served warm (None: never warmed up).
    last: Mutex<Option<Instant>>,
}

impl ColdStart {
    pub(crate) fn new(cost: Duration, idle_limit: Duration) -> ColdStart {
        ColdStart {
            cost,
            idle_limit,
            last: Mutex::new(None),
        }
    }

    /// Waits until the server is warm; returns how long this request waited for a
    /// warm-up (zero when it was already warm).
    pub(crate) async fn enter(&self) -> Duration {
        let arrived = Instant::now();
        // Holding the lock through the warm-up makes concurrent requests wait for it.
        let mut last = self.last.lock().await;
        let cold = match *last {
            None => true,
            Some(t) => arrived.saturating_duration_since(t) >= self.idle_limit,
        };
        if cold && !self.cost.is_zero() {
            tokio::time::sleep(self.cost).await;
        }
        let now = Instant::now();
        *last = Some(now);
        if cold {
            now - arrived
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cold on the first request, warm while requests keep coming, cold again after
    /// the idle limit.
    #[tokio::test]
    async fn cold_once_then_warm_then_cold_after_idle() {
        let c = ColdStart::new(Duration::from_millis(30), Duration::from_secs(1));
        assert!(c.enter().await >= Duration::from_millis(30));
        assert_eq!(c.enter().await, Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(c.enter().await, Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(c.enter().await >= Duration::from_millis(30));
    }
}
