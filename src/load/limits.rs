//! The load engine's limits, each a usage error naming it when a plan passes it: how
//! many connections, VUs, requests per second, endpoints, and the open-file limit
//! (`ulimit -n`) a run's connections must fit in, a scenario request's weight.

use super::plan::PlanError;

/// The most connections one run may open: one client address holds at most ~64k
/// connections to one server address (ephemeral ports).
pub const MAX_CONNECTIONS: u32 = 65_535;
/// The most VUs (connections × `--streams`) one run may drive.
pub const MAX_VUS: u64 = 200_000;
/// The highest `--rate` (and open-model stage target): 2,000,000 requests per
/// second, beyond what one process can send.
pub const MAX_RATE: f64 = 2_000_000.0;
/// The open model's queue of due requests waiting for a connection, at most (the
/// default is one second of the rate, capped here); arrivals beyond it are dropped
/// and counted as `dropped`.
pub const MAX_BACKLOG: u64 = 10_000;
/// The most requests (endpoints) a scenario may name.
pub const MAX_ENDPOINTS: usize = 10_000;
/// The largest `weight` of a scenario request: one request a million times as
/// likely as another is as fine a ratio as a run can show.
pub const MAX_WEIGHT: i64 = 1_000_000;
/// File descriptors kept free for everything but connections (store, files,
/// runtime).
const FD_RESERVE: u64 = 64;

/// The soft open-file limit (`ulimit -n`) now (0 when unknown).
pub fn fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    lim.rlim_cur
}

/// Checks `connections` against the open-file limit (`ulimit -n`) before anything
/// is allocated: raises the soft limit up to the hard one when the run needs it;
/// beyond the hard limit an explicit `-c` is a usage error saying the limit and how
/// to raise it, and a default (open model) is lowered to fit.
pub(crate) fn fit_fd_limit(connections: u32, explicit: bool) -> Result<u32, PlanError> {
    let need = connections as u64 + FD_RESERVE;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(connections);
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    if need <= soft {
        return Ok(connections);
    }
    if need <= hard {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: raised is a valid rlimit within the hard limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(connections);
        }
    }
    let room = hard.max(soft).saturating_sub(FD_RESERVE).max(1);
    if !explicit {
        return Ok(connections.min(room.min(u32::MAX as u64) as u32));
    }
    Err(PlanError::Usage(format!(
        "-c {connections} needs {need} open files but this process may open at most {} (ulimit -n): \
         raise the limit (`ulimit -n {need}`, or nofile in /etc/security/limits.conf) or use -c {room} or fewer",
        hard.max(soft)
    )))
}
