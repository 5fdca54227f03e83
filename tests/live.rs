//! The live view of `latscope load` in a real terminal: the binary runs in a detached
//! tmux session of fixed size against the in-process lab; the tests read the screen
//! with `capture-pane`, press keys with `send-keys`, and check what stays in the
//! scrollback after the view ends (the normal summary, the alternate screen left), the
//! exit code and the saved run. Skipped, with a reason, when tmux is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util;
use crate::util_lab::healthy;

/// A tmux server of our own (its own socket), killed on drop.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` (a shell line) in a detached 110×34 session, or None when tmux
    /// is not installed.
    pub(crate) fn start(name: &str, command: &str) -> Option<Tmux> {
        if !crate::util_require::require("tmux") {
            return None;
        }
        // A socket of its own per session, even for two sessions of one test in a
        // row: `kill-server` returns before the old server has gone, and a client
        // that reaches a server still exiting fails ("server exited unexpectedly").
        static SESSIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = Tmux {
            socket: format!("latscope-{name}-{}-{n}", std::process::id()),
        };
        let ok = t
            .tmux(&["new-session", "-d", "-s", "t", "-x", "110", "-y", "34"])
            .arg(command)
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux runs")
            .success();
        assert!(ok, "tmux new-session failed");
        Some(t)
    }

    pub(crate) fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]).args(args);
        c
    }

    /// The screen, as text, with up to 200 lines of scrollback above it (the normal
    /// screen's; the alternate screen has none).
    pub(crate) fn screen(&self) -> String {
        let out = self
            .tmux(&["capture-pane", "-p", "-S", "-200", "-t", "t"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once `ok` holds for it, polled every 100 ms; fails after `limit`.
    pub(crate) fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {limit:?}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn keys(&self, keys: &str) {
        assert!(self
            .tmux(&["send-keys", "-t", "t", keys])
            .status()
            .expect("tmux send-keys")
            .success());
    }

    /// Whether the pane is on the alternate screen.
    pub(crate) fn alternate_on(&self) -> bool {
        let out = self
            .tmux(&["display-message", "-p", "-t", "t", "#{alternate_on}"])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).status();
    }
}

/// A temp dir for the run store and scenario files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("latscope-live-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The shell line that runs latscope with `args` and the store `db`, then prints its
/// exit code and keeps the pane open for the test to read.
pub(crate) fn shell(db: &Path, args: &str) -> String {
    format!(
        "LATSCOPE_DB={} {} {args}; echo EXIT=$?; exec sleep 120",
        db.display(),
        env!("CARGO_BIN_EXE_latscope")
    )
}

/// The number after `name ` on the header's numbers line (`requests 12,345`).
pub(crate) fn number_after(screen: &str, name: &str) -> Option<u64> {
    let at = screen.find(&format!("{name} "))? + name.len() + 1;
    let digits: String = screen[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

pub(crate) fn braille(screen: &str) -> usize {
    screen
        .chars()
        .filter(|c| ('\u{2801}'..='\u{28ff}').contains(c))
        .count()
}

/// The stored runs, as `latscope runs --json` lists them.
pub(crate) fn runs(db: &Path) -> Vec<serde_json::Value> {
    let doc = util::run_json(&["runs", "--json", "--db", db.to_str().unwrap()]);
    doc.as_array()
        .cloned()
        .or_else(|| doc["runs"].as_array().cloned())
        .unwrap_or_default()
}

/// A 6 s load on a terminal shows the live view: the header's numbers, the latency
/// and req/s charts (drawn points) and the status codes, and two captures a second
/// apart differ (the request count grows, the chart gains points). `q` stops the run
/// as Ctrl-C does: the terminal leaves the alternate screen, the normal summary is in
/// the scrollback, the exit code is 0, the run stopped early and was saved.
#[test]
fn live_view_updates_and_q_keeps_the_run() {
    let lab = healthy();
    let dir = Dir::new("q");
    let db = dir.0.join("runs.db");
    let args = format!("load {} -c 4 -d 6s --threads 1", lab.url("/delay/1ms"));
    let Some(t) = Tmux::start("q", &shell(&db, &args)) else {
        return;
    };
    let first = t.wait_for(
        "live view with a second of data",
        Duration::from_secs(30),
        |s| s.contains("latency per second") && number_after(s, "requests").unwrap_or(0) > 0,
    );
    assert!(t.alternate_on(), "the view runs on the alternate screen");
    for want in [
        "req/s",
        "errors/s",
        "status codes",
        "200  ",
        "q stop",
        "/ 6s",
        "conns 4",
    ] {
        assert!(first.contains(want), "{want:?} on screen:\n{first}");
    }
    let n1 = number_after(&first, "requests").unwrap();
    let b1 = braille(&first);
    assert!(b1 > 0, "chart points drawn:\n{first}");
    std::thread::sleep(Duration::from_millis(1100));
    let second = t.wait_for("the view to move on", Duration::from_secs(10), |s| {
        number_after(s, "requests").is_some_and(|n| n > n1)
    });
    assert_ne!(first, second);
    assert!(braille(&second) > 0);

    t.keys("q");
    let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
        s.contains("EXIT=")
    });
    assert!(!t.alternate_on(), "the alternate screen was left:\n{end}");
    assert!(!end.contains("latency per second"), "{end}");
    assert!(end.contains("EXIT=0"), "{end}");
    for want in ["Transactions:", "Status codes: 200", "saved as run"] {
        assert!(end.contains(want), "{want:?} in the summary:\n{end}");
    }
    let elapsed: f64 = end
        .lines()
        .find(|l| l.contains("Elapsed time:"))
        .and_then(|l| l.split_whitespace().rev().nth(1)?.parse().ok())
        .expect("Elapsed time in the summary");
    assert!(elapsed < 5.5, "q stopped the 6 s run early: {elapsed} s");
    let runs = runs(&db);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["kind"], "load", "{runs:?}");
}

/// A scenario of three endpoints shows the per-endpoint table: each name with its
/// requests so far and p50/p99 from the endpoint's own histograms (the 20 ms
/// endpoint's p50 is in tens of ms, the others' are not), and the share of the
/// scenario's checks passed so far. The run then ends on its own: summary, exit 0.
#[test]
fn live_view_shows_the_endpoint_table() {
    let lab = healthy();
    let dir = Dir::new("ep");
    let db = dir.0.join("runs.db");
    let file = dir.0.join("s.toml");
    std::fs::write(
        &file,
        format!(
            "base_url = \"{}\"\n\
             [[request]]\nname = \"fast\"\npath = \"/\"\n\
             [[request]]\nname = \"text\"\npath = \"/text/2k\"\ncheck = {{ status = 200 }}\n\
             [[request]]\nname = \"slow\"\npath = \"/delay/20ms\"\n",
            lab.url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    let args = format!("load -f {} -c 6 -d 4s --threads 1", file.display());
    let Some(t) = Tmux::start("ep", &shell(&db, &args)) else {
        return;
    };
    let s = t.wait_for(
        "the endpoint table with numbers",
        Duration::from_secs(30),
        |s| {
            s.contains("endpoints so far")
                && s.contains("checks ")
                && s.lines()
                    .find(|l| l.contains("│slow "))
                    .is_some_and(|l| l.contains(" ms"))
        },
    );
    for want in ["endpoint", "requests", "p50", "p99", "errors"] {
        assert!(s.contains(want), "{want:?}:\n{s}");
    }
    let row = |name: &str| {
        s.lines()
            .find(|l| l.contains(&format!("│{name} ")))
            .unwrap_or_else(|| panic!("row {name}:\n{s}"))
            .to_string()
    };
    let cols = |name: &str| -> Vec<String> {
        let r = row(name);
        let inner = r.split('│').nth(1).unwrap().to_string();
        inner.split_whitespace().map(str::to_string).collect()
    };
    // name, requests, req/s, p50 value, "ms", p99 value, "ms", errors
    let slow = cols("slow");
    let fast = cols("fast");
    assert!(slow.len() >= 8 && fast.len() >= 8, "{slow:?} {fast:?}");
    let p50 = |c: &[String]| c[3].parse::<f64>().unwrap();
    assert!(p50(&slow) >= 15.0, "slow p50 {slow:?}");
    assert!(p50(&fast) < 15.0, "fast p50 {fast:?}");
    assert!(cols("text")[1].replace(',', "").parse::<u64>().unwrap() > 0);
    // The scenario's checks (text's status), all passed so far.
    assert!(s.contains("checks 100.00% of"), "{s}");
    let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
        s.contains("EXIT=")
    });
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(!t.alternate_on());
    assert!(end.contains("saved as run"), "{end}");
}

/// `--no-tui` (and TERM=dumb) keep the one-line progress: no alternate screen, no
/// chart, while the run goes on.
#[test]
fn no_tui_and_dumb_terminals_keep_the_progress_line() {
    let lab = healthy();
    let dir = Dir::new("plain");
    let db = dir.0.join("runs.db");
    // Both terminals at once, each screen watched by a thread of its own while its
    // run goes on.
    let mut terminals = Vec::new();
    for (name, prefix, flag) in [("notui", "", " --no-tui"), ("dumb", "TERM=dumb ", "")] {
        let args = format!("load {} -c 2 -d 3s --threads 1{flag}", lab.url("/"));
        let Some(t) = Tmux::start(name, &format!("{prefix}{}", shell(&db, &args))) else {
            return;
        };
        terminals.push((name, t));
    }
    let watchers: Vec<_> = terminals
        .into_iter()
        .map(|(name, t)| {
            std::thread::spawn(move || {
                let s = t.wait_for("the progress line", Duration::from_secs(30), |s| {
                    s.contains("req/s") || s.contains("EXIT=")
                });
                assert!(!s.contains("latency per second"), "{name}:\n{s}");
                assert!(!t.alternate_on(), "{name}");
                let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
                    s.contains("EXIT=")
                });
                assert!(
                    end.contains("EXIT=0") && end.contains("Transactions:"),
                    "{end}"
                );
            })
        })
        .collect();
    for watcher in watchers {
        if let Err(panic) = watcher.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The pid of the program the pane's shell runs (its only child).
pub(crate) fn child_of_pane(t: &Tmux) -> u32 {
    let out = t
        .tmux(&["display-message", "-p", "-t", "t", "#{pane_pid}"])
        .output()
        .expect("tmux display-message");
    let shell = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
        .expect("the pane's shell");
    children
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the shell runs latscope")
}

/// Ctrl-C (a key in raw mode, not a signal) and SIGTERM both stop a 20 s run early as
/// Ctrl-C always did: the terminal is restored (alternate screen left), the summary
/// printed, the exit code 0 and the run saved.
#[test]
fn ctrl_c_key_and_sigterm_restore_the_terminal_and_keep_the_run() {
    let lab = healthy();
    let dir = Dir::new("sig");
    let db = dir.0.join("runs.db");
    for how in ["ctrl-c", "sigterm"] {
        let args = format!("load {} -c 2 -d 20s --threads 1", lab.url("/"));
        let Some(t) = Tmux::start(how, &shell(&db, &args)) else {
            return;
        };
        t.wait_for("the live view", Duration::from_secs(30), |s| {
            s.contains("latency per second") && number_after(s, "requests").unwrap_or(0) > 0
        });
        if how == "ctrl-c" {
            t.keys("C-c");
        } else {
            let pid = child_of_pane(&t);
            let ok = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .expect("kill runs")
                .success();
            assert!(ok, "kill -TERM {pid}");
        }
        let end = t.wait_for("the command to end", Duration::from_secs(30), |s| {
            s.contains("EXIT=")
        });
        assert!(!t.alternate_on(), "{how}: alternate screen left:\n{end}");
        assert!(end.contains("EXIT=0"), "{how}:\n{end}");
        assert!(
            end.contains("Transactions:") && end.contains("saved as run"),
            "{how}:\n{end}"
        );
        let elapsed: f64 = end
            .lines()
            .find(|l| l.contains("Elapsed time:"))
            .and_then(|l| l.split_whitespace().rev().nth(1)?.parse().ok())
            .expect("Elapsed time in the summary");
        assert!(elapsed < 15.0, "{how} stopped the 20 s run: {elapsed} s");
        let why = if how == "ctrl-c" {
            "stopped from the live view (q or Ctrl-C): kept what was measured"
        } else {
            "terminated (SIGTERM): kept what was measured"
        };
        assert!(end.contains(why), "{how}:\n{end}");
    }
    assert_eq!(runs(&db).len(), 2);
}

/// diagnose's load ramp runs in the live view too: the header names the step and its
/// connections, and when the ramp ends the view gives the terminal back before the
/// diagnosis (its load ramp table) is printed, exit 0.
#[test]
fn diagnose_ramp_shows_its_steps() {
    let lab = healthy();
    let dir = Dir::new("ramp");
    let db = dir.0.join("runs.db");
    let args = format!(
        "diagnose {} -n 3 --max-connections 8 --step 2s",
        lab.url("/delay/2ms")
    );
    let Some(t) = Tmux::start("ramp", &shell(&db, &args)) else {
        return;
    };
    let s = t.wait_for("the ramp in the live view", Duration::from_secs(60), |s| {
        s.contains("ramp step 2/4, 2 connections") && s.contains("latency per second")
    });
    assert!(
        s.contains("load ramp: closed model, 1 → 8 connections"),
        "{s}"
    );
    let end = t.wait_for("the command to end", Duration::from_secs(60), |s| {
        s.contains("EXIT=")
    });
    assert!(!t.alternate_on());
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(end.contains("connections  req/s"), "the ramp table:\n{end}");
    assert!(!end.contains("latency per second"), "{end}");
}

/// The view's screen with its escape sequences (`capture-pane -e`).
fn screen_with_escapes(t: &Tmux) -> String {
    let out = t
        .tmux(&["capture-pane", "-p", "-e", "-t", "t"])
        .output()
        .expect("tmux capture-pane -e");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `screen` sets a foreground or background colour (SGR 30–37, 40–47,
/// 90–97, 38;…/48;…), in any parameter position.
fn coloured(screen: &str) -> bool {
    screen.split("\x1b[").skip(1).any(|seq| {
        let params = seq.split('m').next().unwrap_or("");
        params.split(';').any(|p| {
            matches!(
                p.parse::<u32>(),
                Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
            )
        })
    })
}

/// NO_COLOR (https://no-color.org) set: the live view draws without a colour; the
/// same run without it draws in colour.
#[test]
fn no_color_turns_the_colours_off() {
    let lab = healthy();
    let dir = Dir::new("nocolor");
    let db = dir.0.join("runs.db");
    let args = format!(
        "load {} -c 2 -d 4s --threads 1 --no-save",
        lab.url("/delay/1ms")
    );
    for (env, want) in [("", true), ("NO_COLOR=1 ", false)] {
        let Some(t) = Tmux::start("nocolor", &format!("{env}{}", shell(&db, &args))) else {
            return;
        };
        t.wait_for(
            "live view with a second of data",
            Duration::from_secs(30),
            |s| s.contains("latency per second") && number_after(s, "requests").unwrap_or(0) > 0,
        );
        let screen = screen_with_escapes(&t);
        assert_eq!(coloured(&screen), want, "{env:?}:\n{screen:?}");
        t.keys("q");
        t.wait_for("the command to end", Duration::from_secs(30), |s| {
            s.contains("EXIT=")
        });
    }
}
