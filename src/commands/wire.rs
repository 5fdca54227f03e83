//! `latscope wire [--rtt …] -- COMMAND ARGS…`: any server behind the lab's wire. The
//! command runs inside the wire's network namespace; the first stdout line is the
//! address the host reaches it on. latscope ends when the command ends, with its exit
//! code; SIGINT or SIGTERM is passed on to the command. The wire (devices, namespace)
//! goes when latscope does, and anything the command left running inside it is
//! stopped first. Without root, the wire runs in a private namespace of latscope's
//! own (as `demo` does), which only processes that join it can reach: it says so.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::cli::WireArgs;
use crate::lab::wire::{self, Wire, WireError, WireOptions};
use crate::usage;

/// How long a command gets to end after the signal is passed on, before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// Runs `latscope wire`.
pub fn run(args: WireArgs) -> anyhow::Result<u8> {
    let options = crate::config::lab::wire(&args.wire)?.unwrap_or_default();
    let (wire, private) = start(options)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", wire.server_ip())?;
    out.flush()?;
    drop(out);
    eprintln!(
        "latscope wire: {} {} <-> {} {} ({}); `{}` runs behind it at {}; removed on exit",
        wire.host_device(),
        wire.host_ip(),
        wire.server_device(),
        wire.server_ip(),
        wire.options().describe(wire.seed()),
        args.command.join(" "),
        wire.server_ip(),
    );
    if private {
        eprintln!(
            "latscope wire: not root, so the wire runs in a private user + network \
             namespace of latscope's own: processes on the host cannot reach {}; run \
             clients inside it with `nsenter --preserve-credentials -U -n -t {} CLIENT`",
            wire.server_ip(),
            std::process::id()
        );
    }
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    wire.run_inside(&mut cmd)?;
    let child = cmd
        .spawn()
        .map_err(|e| usage!("cannot run {}: {e}", args.command[0]))?;
    let code = supervise(child)?;
    stop_leftovers(&wire);
    drop(wire);
    Ok(code)
}

/// The wire on the host as root; without root, in a private namespace (true).
fn start(options: WireOptions) -> anyhow::Result<(Wire, bool)> {
    match Wire::start(options.clone()) {
        Ok(w) => Ok((w, false)),
        Err(WireError::NeedsRoot { .. }) => {
            wire::enter_private_namespace()
                .context("the wire needs root, and no private namespace could be made")?;
            Ok((Wire::start(options)?, true))
        }
        Err(e) => Err(e.into()),
    }
}

/// Waits for the command, passing SIGINT and SIGTERM on to it; its exit code (128 +
/// the signal when a signal ended it, as shells report it).
fn supervise(mut child: std::process::Child) -> anyhow::Result<u8> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as i32;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let status = runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("cannot catch SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("cannot catch SIGINT")?;
        let waiter = tokio::task::spawn_blocking(move || child.wait());
        tokio::pin!(waiter);
        let mut signalled: Option<Instant> = None;
        loop {
            let grace = async {
                match signalled {
                    Some(at) => tokio::time::sleep_until((at + GRACE).into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = &mut waiter => break r.context("waiting for the command")?
                    .context("waiting for the command"),
                _ = term.recv() => {
                    forward(pid, libc::SIGTERM);
                    signalled.get_or_insert_with(Instant::now);
                }
                _ = int.recv() => {
                    forward(pid, libc::SIGINT);
                    signalled.get_or_insert_with(Instant::now);
                }
                _ = grace => {
                    eprintln!("latscope wire: the command did not end within {GRACE:?}: killing it");
                    forward(pid, libc::SIGKILL);
                    signalled = Some(Instant::now() + Duration::from_secs(3600));
                }
            }
        }
    })?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    })
}

fn forward(pid: i32, sig: i32) {
    // SAFETY: kill(2) on the pid of the child this process started and still owns
    // (not yet reaped: the waiter has not returned).
    unsafe { libc::kill(pid, sig) };
}

/// Stops what the command left running inside the wire's namespace (a daemon's
/// workers, a background job): they would keep the namespace alive with no way in.
fn stop_leftovers(wire: &Wire) {
    let left = wire.processes_inside();
    if left.is_empty() {
        return;
    }
    eprintln!(
        "latscope wire: stopping {} process(es) the command left inside the wire",
        left.len()
    );
    for pid in &left {
        // SAFETY: kill(2); these processes were started inside our namespace.
        unsafe { libc::kill(*pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && !wire.processes_inside().is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in wire.processes_inside() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
