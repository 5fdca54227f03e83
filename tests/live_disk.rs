//! The live view of `latscope disk` in a real terminal: a short run on a small test
//! file in the test's scratch directory, in a detached tmux session (the helpers of
//! `live.rs`). The tests read the screen, press keys or send SIGTERM, and check what
//! stays in the scrollback after the view ends (the normal summary, the alternate
//! screen left), the exit code, the saved run and that the test file is gone.
//! Skipped, with a reason, when tmux is not installed.

use std::process::Command;
use std::time::Duration;

use crate::live::{braille, child_of_pane, number_after, runs, shell, Tmux};
use crate::util_disk::Dir;

/// The arguments of a bounded disk run on `dir`: a 8 MiB file, 4 random reads in
/// flight, buffered (scratch may be tmpfs, which refuses O_DIRECT), for `secs`.
fn disk_args(dir: &Dir, secs: u32) -> String {
    format!(
        "disk {} --pattern randread --size 8m --iodepth 4 --buffered -d {secs}s",
        dir.path()
    )
}

/// A 6 s disk run on a terminal shows the live view: the header (the workload, the
/// progress against 6 s, the I/Os so far), the latency and IOPS charts with drawn
/// points, the read row of the table; two captures a second apart differ (the I/Os
/// grow). `q` stops the run as Ctrl-C does: the alternate screen is left, the normal
/// summary (interrupted, with its numbers) is in the scrollback, the exit code is 0,
/// the run is saved and the test file removed.
#[test]
fn disk_live_view_updates_and_q_keeps_the_run() {
    let dir = Dir::tmp("live-q");
    let store = Dir::tmp("live-q-db");
    let db = store.0.join("runs.db");
    let Some(t) = Tmux::start("disk-q", &shell(&db, &disk_args(&dir, 6))) else {
        return;
    };
    let first = t.wait_for(
        "the disk view with a second of data",
        Duration::from_secs(30),
        |s| s.contains("I/O latency per second") && number_after(s, "I/Os").unwrap_or(0) > 0,
    );
    assert!(t.alternate_on(), "the view runs on the alternate screen");
    for want in [
        "randread · bs 4.0 KiB · iodepth 4",
        "8.0 MiB test file",
        "/ 6s",
        "━ IOPS",
        "MiB/s",
        "│read ",
        "latscope CPU",
        ".latscope-disk-",
        "q stop",
    ] {
        assert!(first.contains(want), "{want:?} on screen:\n{first}");
    }
    let n1 = number_after(&first, "I/Os").unwrap();
    assert!(braille(&first) > 0, "chart points drawn:\n{first}");
    std::thread::sleep(Duration::from_millis(1100));
    let second = t.wait_for("the view to move on", Duration::from_secs(10), |s| {
        number_after(s, "I/Os").is_some_and(|n| n > n1)
    });
    assert_ne!(first, second);

    t.keys("q");
    let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
        s.contains("EXIT=")
    });
    assert!(!t.alternate_on(), "the alternate screen was left:\n{end}");
    assert!(!end.contains("I/O latency per second"), "{end}");
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(
        end.contains("interrupted after"),
        "q stopped it early:\n{end}"
    );
    assert!(end.contains("IOPS"), "the summary:\n{end}");
    let runs = runs(&db);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["kind"], "disk", "{runs:?}");
    assert!(
        dir.entries().is_empty(),
        "test file left: {:?}",
        dir.entries()
    );
}

/// SIGTERM during the disk view: the run stops as Ctrl-C stops it, the terminal
/// is restored, the summary printed, exit 0, the test file removed.
#[test]
fn disk_live_view_sigterm_restores_the_terminal() {
    let dir = Dir::tmp("live-term");
    let store = Dir::tmp("live-term-db");
    let db = store.0.join("runs.db");
    let Some(t) = Tmux::start("disk-term", &shell(&db, &disk_args(&dir, 20))) else {
        return;
    };
    t.wait_for("the disk view", Duration::from_secs(30), |s| {
        s.contains("I/O latency per second") && number_after(s, "I/Os").unwrap_or(0) > 0
    });
    let pid = child_of_pane(&t);
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -TERM {pid}");
    let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
        s.contains("EXIT=")
    });
    assert!(!t.alternate_on(), "alternate screen left:\n{end}");
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(end.contains("interrupted after"), "{end}");
    assert_eq!(runs(&db).len(), 1);
    assert!(
        dir.entries().is_empty(),
        "test file left: {:?}",
        dir.entries()
    );
}

/// `--no-tui`, TERM=dumb and a stdout that is not a terminal keep the one-line
/// progress on the terminal (no alternate screen, no chart, the progress line's
/// "IOPS p99"); with stdout and stderr not a terminal there is neither the view's
/// escape sequences nor a progress line.
#[test]
fn disk_no_tui_dumb_and_pipes_keep_the_progress_line() {
    let store = Dir::tmp("live-plain-db");
    let db = store.0.join("runs.db");
    // The three terminals at once, each on a directory of its own.
    let mut terminals = Vec::new();
    for (name, prefix, flag) in [
        ("notui", "", " --no-tui"),
        ("dumb", "TERM=dumb ", ""),
        // stdout not a terminal (stderr still is): the progress line on stderr.
        ("stdout", "", " > /dev/null"),
    ] {
        let dir = Dir::tmp(&format!("live-{name}"));
        let args = format!("{}{flag}", disk_args(&dir, 3));
        let Some(t) = Tmux::start(
            &format!("disk-{name}"),
            &format!("{prefix}{}", shell(&db, &args)),
        ) else {
            return;
        };
        terminals.push((name, dir, t));
    }
    let terminals: [_; 3] = terminals.try_into().ok().unwrap();
    // Each screen watched by a thread of its own, while its run goes on.
    let watchers = terminals.map(|(name, dir, t)| {
        std::thread::spawn(move || {
            let _dir = dir;
            let s = t.wait_for("the progress line", Duration::from_secs(30), |s| {
                s.contains("IOPS p99") || s.contains("EXIT=")
            });
            assert!(s.contains("IOPS p99"), "{name}: the progress line:\n{s}");
            assert!(!s.contains("I/O latency per second"), "{name}:\n{s}");
            assert!(!t.alternate_on(), "{name}");
            let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
                s.contains("EXIT=")
            });
            assert!(end.contains("EXIT=0"), "{name}:\n{end}");
        })
    });
    for watcher in watchers {
        if let Err(panic) = watcher.join() {
            std::panic::resume_unwind(panic);
        }
    }
    let dir = Dir::tmp("live-pipe");
    let out = crate::util_disk::disk(&[
        dir.path(),
        "--pattern",
        "randread",
        "--size",
        "8m",
        "--buffered",
        "-d",
        "1s",
    ]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("\x1b[?1049h") && !err.contains('\r'),
        "{err:?}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("IOPS"));
}
