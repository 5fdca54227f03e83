//! `latscope serve`: the targets file checked, then `serve::daemon` on the schedule
//! and `serve::http` serving until a signal (or `--once`: every target once, printed,
//! saved). Here: the flags' checks, `--print-config`, and (in `log`) the
//! [`serve::Recorder`] that logs each confirmed change on stderr and stores every check
//! as a run labelled `serve:NAME` (with `--retention`), on a thread of its own.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use crate::cli::{PrintKind, ServeArgs};
use crate::config::serve::ServeConfig;
use crate::serve::print::PrintConfig;
use crate::serve::{self, Daemon};
use crate::usage;

mod log;

use log::Log;

/// Runs `latscope serve`.
pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    if args.diagnose_stdin {
        return diagnose_stdin();
    }
    if let Some(kind) = args.print_config {
        let kind = match kind {
            PrintKind::Prometheus => PrintConfig::Prometheus,
            PrintKind::Rules => PrintConfig::Rules,
            PrintKind::Systemd => PrintConfig::Systemd,
            PrintKind::Grafana => PrintConfig::Grafana,
            PrintKind::K8s => PrintConfig::K8s,
        };
        return print_config(kind, &args);
    }
    if args.max_concurrent == 0 || args.max_concurrent > 256 {
        return Err(usage!("--max-concurrent must be between 1 and 256"));
    }
    if args.retention < Duration::from_secs(60) {
        return Err(usage!("--retention must be at least 1m"));
    }
    let config = match &args.config {
        Some(p) => ServeConfig::read(p)?,
        None => ServeConfig::parse("", Path::new(".")).map_err(|e| usage!("{e}"))?,
    };
    if args.once && config.targets.is_empty() {
        return Err(usage!(
            "--once checks the targets of --config FILE: give one with at least one [[target]]"
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (log, saving) = Log::start(&args);
    let daemon = Daemon::new(config, args.max_concurrent, Box::new(log));
    let code = if args.once {
        runtime.block_on(daemon.once());
        let (text, failed) = serve::state::once_text(&daemon.state.lock().unwrap());
        super::output::say(&text)?;
        u8::from(failed)
    } else {
        runtime.block_on(serve::http::serve_forever(&daemon, &args.listen))?;
        0
    };
    // The store takes every check made before it stops: the last sender goes with
    // the daemon (its tasks may still hold it while the runtime shuts down).
    drop(daemon);
    drop(runtime);
    let saved = saving.join().unwrap_or(0);
    if args.once && !args.no_save {
        eprintln!("latscope serve: {saved} checks saved (label serve:NAME; `latscope runs --label serve:NAME`)");
    }
    Ok(code)
}

/// `--diagnose-stdin`: one diagnose check of the daemon's, in a process of its own
/// (`serve::check`). The answer is the daemon's to read, written as it is.
fn diagnose_stdin() -> anyhow::Result<u8> {
    use std::io::{Read, Write};
    let mut text = String::new();
    std::io::stdin()
        .take(crate::config::serve::MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .context("reading the target on stdin")?;
    let answer = serve::check::diagnose_alone(&text);
    let mut out = std::io::stdout().lock();
    out.write_all(answer.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the diagnosis")?;
    Ok(0)
}

/// `--print-config KIND`: the file, and exit.
fn print_config(kind: PrintConfig, args: &ServeArgs) -> anyhow::Result<u8> {
    let config = args.config.as_ref().map(|p| p.display().to_string());
    // The ConfigMap holds the file as it is, once it is known to be good.
    let (targets, secret) = match &args.config {
        Some(p) if kind == PrintConfig::K8s => {
            let secret = ServeConfig::read(p)?.has_secret_headers();
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            (Some(text), secret)
        }
        _ => (None, false),
    };
    let text = serve::print::render(
        kind,
        &args.listen,
        config.as_deref(),
        targets.as_deref(),
        secret,
    );
    if secret {
        eprintln!("latscope: the targets file holds secret headers: it goes into Secret latscope-targets, not a ConfigMap");
        // The Secret must hold the real values: not redacted for output.
        super::output::say_verbatim(&text)?;
    } else {
        super::output::say(&text)?;
    }
    Ok(0)
}
