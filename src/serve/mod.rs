//! `latscope serve`: keep watching. Each scheduled target is checked at its interval
//! (a probe, or a diagnosis without load unless allowed: [`check`]); every outcome
//! goes into the [`state`] — the latest numbers, the active findings, and the
//! changes (a finding that appeared or went away, a target that started or stopped
//! failing), each confirmed by two checks in a row so one noisy check is no event —
//! and the state is shown as Prometheus metrics and a small page ([`metrics`],
//! [`page`]). `/probe?target=URL&module=NAME` answers as blackbox_exporter's http
//! prober does, so existing scrape configs and dashboards work.
//!
//! This module measures and renders; `commands/serve.rs` owns the HTTP listener's
//! lifetime, the schedule, the reloads, the signals and the store.

pub mod check;
pub mod metrics;
pub mod page;
pub mod print;
pub mod state;

pub use check::{Checked, Outcome};
pub use state::{Change, State};
