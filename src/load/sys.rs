//! What the engine samples from the host while it runs: TCP retransmissions of the
//! whole host (`/proc/net/snmp` `RetransSegs`, less those the receiver reported as
//! duplicates, from `/proc/net/netstat`) and the CPU time of latscope's own
//! worker threads (their thread CPU clocks, so a lab running in the same process is
//! not counted as load-tool CPU); and, once the workers end, hands the heap memory
//! they freed back to the system.

/// One second's host samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondSample {
    /// TCP segments the host retransmitted during the second (None: not readable).
    pub retrans: Option<u64>,
    /// Of those, SYN and SYN-ACK retransmissions (`TcpExt: TCPSynRetrans`): a
    /// connection that was never established, not a data segment lost on the path.
    pub syn_retrans: Option<u64>,
    /// CPU the worker threads used, percent of one core.
    pub cpu_pct: f64,
}

/// The host's TCP retransmissions so far that were not spurious: `Tcp:
/// RetransSegs` less the segments receivers reported as duplicates (D-SACK,
/// `TcpExt: TCPDSACKRecvSegs`, or `TCPDSACKRecv` on kernels without it). On a busy
/// machine's loopback a late ACK makes TCP resend (a tail-loss probe, an early
/// timeout) what already arrived; counted raw, every CPU-heavy run looked lossy.
/// A real loss is never reported as a duplicate. None when `/proc/net/snmp` is
/// unreadable.
pub fn retrans_segs() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let retrans = counter(&snmp, "Tcp:", "RetransSegs")?;
    let spurious = std::fs::read_to_string("/proc/net/netstat")
        .ok()
        .and_then(|t| {
            counter(&t, "TcpExt:", "TCPDSACKRecvSegs")
                .or_else(|| counter(&t, "TcpExt:", "TCPDSACKRecv"))
        })
        .unwrap_or(0);
    Some(retrans.saturating_sub(spurious))
}

/// The host's SYN and SYN-ACK retransmissions so far (`TcpExt: TCPSynRetrans`,
/// which `RetransSegs` includes). None when `/proc/net/netstat` is unreadable.
pub fn syn_retrans_segs() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    counter(&netstat, "TcpExt:", "TCPSynRetrans")
}

/// Counter `name` from a `/proc/net/snmp`-style text: a line of names, then a line of
/// values, both starting with `prefix`.
fn counter(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let idx = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(idx)?.parse().ok()
}

/// CPU time the calling thread has used, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Where a worker thread's time went: on a CPU, and runnable but waiting for one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTime {
    /// CPU time the thread used, ns.
    pub cpu_ns: u64,
    /// Time it was ready to run but waited for a CPU (the scheduler's run queue),
    /// ns; `None` where the kernel does not say (no /proc/thread-self/schedstat).
    pub wait_ns: Option<u64>,
}

impl ThreadTime {
    /// The calling thread's times so far.
    pub fn now() -> ThreadTime {
        ThreadTime {
            cpu_ns: thread_cpu_ns(),
            wait_ns: std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .as_deref()
                .and_then(parse_run_delay),
        }
    }
}

/// How long this process's threads have waited, runnable, for a CPU so far (the sum
/// of their schedstat run-queue delays), ns; `None` where the kernel does not say.
/// Threads that have ended no longer count: take the difference over a stretch in
/// which the threads that did the work live on.
pub fn process_run_delay_ns() -> Option<u64> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut total = None;
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok();
        if let Some(ns) = text.as_deref().and_then(parse_run_delay) {
            *total.get_or_insert(0) += ns;
        }
    }
    total
}

/// The run-queue delay, the second of schedstat's three numbers: on-CPU ns,
/// waiting-to-run ns, time slices.
fn parse_run_delay(text: &str) -> Option<u64> {
    let mut fields = text.split_whitespace();
    fields.next()?;
    fields.next()?.parse().ok()
}

/// Hands the heap memory freed so far back to the system: glibc keeps what a thread
/// freed in that thread's arena, so the finished worker threads' connections, futures
/// and runtimes would stay resident through the run's end (merging, the JSON, the
/// findings), where its memory peaks (issue 21).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas; any thread may call it.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_snmp() {
        let t = "Ip: A B\nIp: 1 2\nTcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 34 0\n";
        assert_eq!(counter(t, "Tcp:", "RetransSegs"), Some(34));
        assert_eq!(counter("Ip: A\nIp: 1\n", "Tcp:", "RetransSegs"), None);
        let netstat = "TcpExt: SyncookiesSent TCPDSACKRecv TCPDSACKRecvSegs\n\
                       TcpExt: 0 14356 14526\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(counter(netstat, "TcpExt:", "TCPDSACKRecvSegs"), Some(14526));
        assert_eq!(counter(netstat, "TcpExt:", "TCPDSACKRecv"), Some(14356));
        assert!(retrans_segs().is_some(), "this kernel has /proc/net/snmp");
        assert!(
            syn_retrans_segs().is_some(),
            "this kernel has TCPSynRetrans"
        );
        assert!(thread_cpu_ns() > 0);
    }

    #[test]
    fn parses_schedstat() {
        assert_eq!(parse_run_delay("535761486 536022 16\n"), Some(536022));
        assert_eq!(parse_run_delay("12"), None);
        assert_eq!(parse_run_delay(""), None);
    }
}
