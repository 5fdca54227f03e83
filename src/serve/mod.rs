//! `latscope serve`: keep watching. Each scheduled target is checked at its interval
//! (a probe, or a diagnosis without load unless allowed: [`check`]); every outcome
//! goes into the [`state`] — the latest numbers, the active findings, and the
//! changes (a finding that appeared or went away, a target that started or stopped
//! failing), each confirmed by two checks in a row so one noisy check is no event —
//! and the state is shown as Prometheus metrics and a small page ([`metrics`],
//! [`page`]). `/probe?target=URL&module=NAME` answers as blackbox_exporter's http
//! prober does, so existing scrape configs and dashboards work.
//!
//! The [`daemon`] runs the schedule, the reloads and `--once`; [`http`] serves the
//! endpoints until a signal stops it. Neither prints nor stores: each outcome and
//! each line for the operator goes to a [`daemon::Recorder`], which
//! `commands/serve.rs` implements with stderr and the run store.

pub mod check;
pub mod daemon;
pub mod http;
pub mod metrics;
pub mod page;
pub mod print;
pub mod state;
pub mod stored;

pub use check::{Checked, Outcome};
pub use daemon::{Daemon, Recorder};
pub use state::{Change, State};
