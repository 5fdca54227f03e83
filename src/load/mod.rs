//! The load engine (`latscope load`, and the ramp of `diagnose`): closed, open, count
//! and staged workloads over HTTP/1.1 and HTTP/2, recording every request into
//! per-thread HdrHistograms and a per-second timeline (DESIGN.md, Measurements → Load).
//!
//! [`plan`] checks what to do (flags, scenario files), [`run`] does it: `engine`
//! controls the run and starts one worker thread per core (`worker`, each a
//! current-thread tokio runtime), `http1` is the pre-encoded HTTP/1.1 hot path,
//! `h2` its own lean HTTP/2 client, `http3` HTTP/3 over `net::quic`, `recorder` the lock-free per-thread recording,
//! [`result`] the merged outcome and its JSON. [`steps`] runs and judges one step at
//! one level (diagnose's ramp and `--find-max`), [`search`] finds the highest level
//! meeting objectives, [`capacity`] keeps it as one run. Nothing here prints.

pub mod capacity;
pub mod early;
pub mod engine;
pub mod har;
pub mod limits;
mod live;
pub mod merge;
pub mod plan;
pub mod raw;
pub mod recorder;
pub mod result;
pub mod scenario;
pub mod script;
pub mod search;
pub(crate) mod seconds;
pub mod shard;
pub mod stages;
pub mod steps;
pub mod sys;
pub mod threshold;
mod window;

mod conn;
mod fields;
mod h2;
mod h3;
mod http1;
mod http3;
mod retrans;
mod spare;
pub(crate) mod uring;
mod worker;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use conn::{fd_exhausted, h2_floods, head_too_large, tls_failure};
pub use engine::Progress;
#[doc(hidden)]
pub use h2::{
    fuzz_conn as fuzz_h2_conn, fuzz_hpack as fuzz_h2_hpack, fuzz_huffman as fuzz_h2_huffman,
};
pub use h2::{MAX_CONTINUATIONS as H2_MAX_CONTINUATIONS, MAX_PENDING_ACKS as H2_MAX_PENDING_ACKS};
#[doc(hidden)]
pub use h3::{
    fuzz_control as fuzz_h3_control, fuzz_qpack as fuzz_h3_qpack, fuzz_response as fuzz_h3_response,
};
#[doc(hidden)]
pub use http1::fuzz_parser as fuzz_h1_parser;
pub use live::LiveSecond;
pub use plan::{Endpoint, LoadEngine, LoadPlan, Model, PlanError};
pub use result::LoadResult;
pub use scenario::Order;

/// Why a run could not be done (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, String),
    #[error("{0}")]
    Tls(String),
    #[error("--raw {0}: {1}")]
    Raw(String, std::io::Error),
    #[error("{0}")]
    Plan(String),
    /// `--http3`: no QUIC connection could be made before the run.
    #[error("{0}")]
    Quic(String),
}

/// Runs a load plan until its duration or count is done, or until `stop` is set
/// (then in-flight requests are abandoned and counted as incomplete).
pub fn run(plan: &LoadPlan, stop: &Arc<AtomicBool>) -> Result<LoadResult, LoadError> {
    engine::run(plan, stop, &mut |_| {})
}

/// [`run`], calling `progress` about 200 ms after each second ends (on the calling
/// thread) with the seconds every worker has closed (the live feed), and once more
/// when the run is over (`finished`).
pub fn run_with_progress(
    plan: &LoadPlan,
    stop: &Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<LoadResult, LoadError> {
    engine::run(plan, stop, progress)
}
