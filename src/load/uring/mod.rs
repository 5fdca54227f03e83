//! The io_uring engine for HTTP/1.1 (`--engine io_uring`, chosen by `auto` where the
//! kernel allows it and the plan is one it supports): per worker thread one ring,
//! the connections' sockets as registered files, one multishot receive per
//! connection taking its buffers from a provided-buffer ring, the pre-encoded
//! requests sent in one submission per loop turn, the request timeouts checked
//! between completions waited for with a ring timeout. Responses are read by the
//! same parser (`http1::Parser`) and recorded by the same [`Recorder`] calls as the
//! epoll engine, so the two engines' results are the same measurements.
//!
//! Supported: plain http, HTTP/1.1, the closed model (`-c`, `-d`, `-n`, keep-alive
//! or not, `--raw`) and the open model (`--rate`, with `--stages`), scenarios with
//! checks, setup, variables, cookies and data (`script`). Everything else (https,
//! HTTP/2, closed-model `--stages`, `--think-time`, a scenario's pauses) runs on the
//! epoll engine.

mod driver;
mod exchange;
mod open;
mod ring;
mod script;
mod stamp;

use std::io;
use std::sync::Arc;
use std::sync::OnceLock;

use io_uring::{opcode, IoUring, Probe};

use super::engine::{Control, Prepared};
use super::plan::{LoadPlan, Model};
use super::recorder::{Live, Recorder};
use super::sys::ThreadTime;
use super::LoadError;
use crate::load::LoadEngine;
use crate::net::Scheme;

/// The engine's name in the load JSON (`engine`).
pub const NAME: &str = "io_uring";
/// The fallback's name.
pub const EPOLL: &str = "epoll";

/// Why the io_uring engine cannot run `plan` (None: it can).
pub fn unsupported(plan: &LoadPlan, h2: bool) -> Option<&'static str> {
    if plan.target.scheme != Scheme::Http {
        Some("https")
    } else if h2 {
        Some("HTTP/2")
    } else if plan.model == Model::Closed && !plan.stages.is_empty() {
        Some("--stages in the closed model")
    } else if !plan.think_time.is_zero() {
        Some("--think-time")
    } else if plan.script.as_ref().is_some_and(|s| s.paces()) {
        Some("a scenario's sleep or think_time (pauses run on epoll)")
    } else {
        None
    }
}

/// Whether io_uring works here with what the engine uses (receive, send, connect,
/// cancel, provided-buffer rings, waiting with a timeout), checked once on a
/// throwaway ring. The error says why not (refused by the kernel's
/// `io_uring_disabled`, ENOSYS, EPERM, too old).
pub fn probe() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
                if v.trim() == "2" {
                    return Err(
                        "io_uring is disabled on this host (kernel.io_uring_disabled=2)".into(),
                    );
                }
            }
            try_ring().map_err(|e| format!("io_uring is refused here: {e}"))
        })
        .clone()
}

fn try_ring() -> io::Result<()> {
    let ring = IoUring::new(4)?;
    if !ring.params().is_feature_ext_arg() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the kernel's io_uring cannot wait with a timeout (before 5.11)",
        ));
    }
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    for code in [
        opcode::RecvMulti::CODE,
        opcode::RecvMsgMulti::CODE,
        opcode::Send::CODE,
        opcode::Connect::CODE,
        opcode::AsyncCancel::CODE,
    ] {
        if !probe.is_supported(code) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring lacks recv/send/connect/cancel",
            ));
        }
    }
    // Provided-buffer rings (5.19) and multishot receive (6.0) come together.
    ring::BufRing::new(&ring, 2, 64, 0).map(drop)
}

/// Whether this run uses io_uring: `--engine io_uring` insists (an error says why it
/// cannot), `epoll` never, `auto` where it is supported and allowed.
pub fn choose(plan: &LoadPlan, h2: bool) -> Result<bool, LoadError> {
    match plan.engine {
        LoadEngine::Epoll => Ok(false),
        LoadEngine::Auto => Ok(unsupported(plan, h2).is_none() && probe().is_ok()),
        LoadEngine::IoUring => {
            if let Some(what) = unsupported(plan, h2) {
                return Err(LoadError::Plan(format!(
                    "--engine io_uring does not support {what} yet: use --engine auto or epoll"
                )));
            }
            probe().map_err(|e| LoadError::Plan(format!("--engine io_uring: {e}")))?;
            Ok(true)
        }
    }
}

/// Runs one worker thread on io_uring; gives the recorder back with why when the
/// thread's ring could not be set up (`auto` runs the thread on epoll instead, an
/// explicit `--engine io_uring` fails the run).
pub fn run_thread(
    j: usize,
    threads: usize,
    prep: &Prepared<'_>,
    ctl: &Control,
    live: &Arc<Live>,
    rec: Recorder,
) -> Result<(Recorder, ThreadTime), (Box<Recorder>, String)> {
    driver::run(j, threads, prep, ctl, live, rec)
}

/// A test hook: worker threads listed in this variable (comma-separated indexes, or
/// `all`) have their ring set-up refused, as a kernel out of memory or descriptors
/// would refuse it after the probe passed. It exercises the real fallback and
/// failure paths; nothing else reads it.
pub const REFUSE_ENV: &str = "LATSCOPE_TEST_URING_REFUSE";

fn refused_by_test(j: usize) -> bool {
    static LIST: OnceLock<Option<String>> = OnceLock::new();
    LIST.get_or_init(|| std::env::var(REFUSE_ENV).ok())
        .as_deref()
        .is_some_and(|l| {
            l.split(',')
                .any(|w| w.trim() == "all" || w.trim().parse() == Ok(j))
        })
}

/// A test hook: with this variable set to `all`, each wake waits for every
/// response in flight (up to the tick), the worst case of batching, so a test can
/// show that recorded latencies come from the kernel's receive timestamps and not
/// from when the thread woke. `WINDOW_US,SHARE` sets the batching's window and share
/// instead (for measuring them).
pub const BATCH_ENV: &str = "LATSCOPE_TEST_URING_BATCH";

/// The test hook's (window µs, share); window 0 is `all`.
fn batch_by_test() -> Option<(u64, u64)> {
    static B: OnceLock<Option<(u64, u64)>> = OnceLock::new();
    *B.get_or_init(|| {
        let v = std::env::var(BATCH_ENV).ok()?;
        if v == "all" {
            return Some((0, 1));
        }
        let (w, s) = v.split_once(',')?;
        Some((w.parse().ok()?, s.parse().ok()?))
    })
}

/// What each worker thread ran on, for the JSON: `engine` is the one name when all
/// agree, "mixed" when not; `engine_workers` per thread; `engine_fallback` says why
/// each thread that fell back did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Engines {
    pub workers: Vec<&'static str>,
    pub fallback: Vec<String>,
}

/// The name when worker threads ran on different engines.
pub const MIXED: &str = "mixed";

impl Engines {
    /// The run's engine: the workers' one name, or [`MIXED`].
    pub fn name(&self) -> &'static str {
        match self.workers.split_first() {
            Some((first, rest)) if rest.iter().all(|w| w == first) => first,
            Some(_) => MIXED,
            None => EPOLL,
        }
    }
}
