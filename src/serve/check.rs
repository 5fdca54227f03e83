//! One check of one target: a probe (bounded: exactly `samples` rounds, no adaptive
//! extension — a monitor's cost is the same every time) or a diagnosis (probe,
//! cache audit, HTTP/3, the stack; the load ramp only with `load = true`).
//!
//! A diagnosis runs in a process of its own (`latscope serve --diagnose-stdin`, the
//! target on its stdin, the outcome as JSON on its stdout): the release binary aborts
//! on a panic (Cargo.toml), so a bug met in one diagnosis ends that check, which says
//! so, and never the daemon. The process is killed when the check is cut short.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::oneshot;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::serve::{Check, Requesting, ServeConfig, ServeTarget};
use crate::config::{DiagnoseConfig, RampPlan};
use crate::diagnose::diagnosis::Diagnosis;
use crate::diagnose::Finding;
use crate::load::Progress;
use crate::net::Target;
use crate::observe::Nobody;
use crate::pipeline::probe::Rounds;
use crate::pipeline::{self, Halt};
use crate::probe::{ProbeConfig, ProbeResult, Stop};

/// The hidden flag of `latscope serve` that diagnoses the target on stdin.
pub const DIAGNOSE_STDIN: &str = "--diagnose-stdin";

/// What one check measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checked {
    pub probe: ProbeResult,
    pub findings: Vec<Finding>,
    /// "Where the time goes".
    pub summary: Option<String>,
    /// The diagnosis, for a diagnose check.
    pub diagnosis: Option<Box<Diagnosed>>,
}

/// A diagnosis as a check keeps it: what `latscope diagnose` prints, and its stored
/// document (a diagnose run's summary).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diagnosed {
    pub text: String,
    pub document: Value,
}

impl Diagnosed {
    pub fn of(d: &Diagnosis) -> Diagnosed {
        use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun};
        let doc = DiagnoseRun::of(
            vec![DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(d)))],
            false,
        );
        Diagnosed {
            text: crate::report::diagnose::render(d),
            document: crate::schema::to_value(&doc),
        }
    }
}

/// One check's outcome: when, how long, and what it measured or why it failed.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub at: SystemTime,
    pub duration: Duration,
    pub result: Result<Checked, String>,
}

impl Outcome {
    /// Whether the target answered as a monitor expects: a 2xx or 3xx (what
    /// blackbox_exporter's default `valid_status_codes` and Uptime Kuma accept, less
    /// 3xx for blackbox).
    pub fn success(&self) -> bool {
        self.result
            .as_ref()
            .is_ok_and(|c| c.probe.status.is_some_and(|s| (200..400).contains(&s)))
    }
}

/// The probe `target` gets from `requesting`: `samples` rounds exactly.
pub fn probe_config(target: &Target, r: &Requesting) -> ProbeConfig {
    ProbeConfig {
        target: target.clone(),
        count: r.samples,
        request: r.request.clone(),
        client: r.client.clone(),
        secret_headers: r.secret_headers.clone(),
    }
}

/// Probes `target` as `r` says.
pub async fn probe(target: &Target, r: &Requesting, stop: &Stop) -> Outcome {
    let at = SystemTime::now();
    let started = Instant::now();
    let config = probe_config(target, r);
    let result = pipeline::probe::run(&config, Rounds::Fixed, None, stop)
        .await
        .map(|p| Checked {
            probe: p.result,
            findings: p.findings,
            summary: p.summary,
            diagnosis: None,
        })
        .map_err(|e| e.to_string());
    Outcome {
        at,
        duration: started.elapsed(),
        result,
    }
}

/// Diagnoses `t` (blocking: run it off the async threads). Its probes block on a
/// runtime of the check's own.
pub fn diagnose(t: &ServeTarget, halt: &Halt) -> Result<Checked, String> {
    let r = &t.requesting;
    let plan = DiagnoseConfig {
        force_load: t.load,
        no_load: (!t.load)
            .then(|| "latscope serve runs no load unless the target says load = true".into()),
        secret_headers: r.secret_headers.clone(),
        ..DiagnoseConfig::new(
            r.samples,
            r.request.clone(),
            r.client.clone(),
            RampPlan {
                max_connections: 8,
                step: Duration::from_secs(1),
            },
        )
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime for the check: {e}"))
        .and_then(|rt| {
            pipeline::diagnose::run(
                &rt,
                &t.target,
                &plan,
                halt,
                &mut Nobody as &mut dyn crate::observe::Observer<Progress>,
            )
            .map_err(|e| e.to_string())
        })
        .map(|d| Checked {
            diagnosis: Some(Box::new(Diagnosed::of(&d))),
            probe: d.probe,
            findings: d.findings,
            summary: d.summary,
        })
}

/// What `latscope serve --diagnose-stdin` answers for `alone` (a
/// [`ServeTarget::alone`]): its diagnosis as JSON, `{"Ok": Checked}` or `{"Err":
/// why}`.
pub fn diagnose_alone(alone: &str) -> String {
    let result = ServeConfig::parse(alone, Path::new("."))
        .and_then(|c| {
            c.targets
                .into_iter()
                .next()
                .ok_or_else(|| "no [[target]] to diagnose".to_string())
        })
        .and_then(|t| diagnose(&t, &Halt::new()));
    serde_json::to_string(&result).unwrap_or_else(|e| {
        serde_json::to_string(&Err::<Checked, _>(format!(
            "cannot write the diagnosis: {e}"
        )))
        .unwrap_or_default()
    })
}

/// Diagnoses `t` in a process of its own (the module's doc says why), killed when
/// `halt` is set or this future is dropped.
async fn diagnose_apart(t: &ServeTarget, halt: &Halt) -> Result<Checked, String> {
    let mut apart = Apart::spawn(&t.alone)?;
    let out = tokio::select! {
        o = apart.ended() => o.map_err(|e| format!("the check's process: {e}"))?,
        _ = halt.stop.stopped() => return Err(halt.reason().to_string()),
    };
    if !out.status.success() {
        let words = last_words(&String::from_utf8_lossy(&out.stderr));
        return Err(match words.is_empty() {
            true => format!("the check ended abnormally ({})", out.status),
            false => format!("the check ended abnormally ({}): {words}", out.status),
        });
    }
    crate::schema::from_reader::<Result<Checked, String>>(&mut out.stdout.as_slice())
        .map_err(|e| format!("the check's process answered what is not a check: {e}"))?
}

/// A diagnose check's process, started and waited for with std's process API on a
/// thread of its own, and killed when dropped before it ended. Not tokio's
/// `process`: that feature adds a sweep for orphaned children to every park of
/// every runtime in the binary, the load engine's included (bench/RESULTS.md).
struct Apart {
    pid: libc::pid_t,
    /// Set, under its lock, just before the process is reaped: until then its pid
    /// is still its own (running or a zombie), so the kill on drop cannot reach a
    /// process that took the number over.
    reaped: Arc<Mutex<bool>>,
    done: oneshot::Receiver<std::io::Result<Output>>,
}

impl Apart {
    /// Starts `latscope serve --diagnose-stdin` with `input` on its stdin.
    fn spawn(input: &str) -> Result<Apart, String> {
        use std::os::unix::process::CommandExt;
        let reaped = Arc::new(Mutex::new(false));
        let (tx, done) = oneshot::channel();
        let (give, take) = std::sync::mpsc::channel::<Child>();
        let (lock, input) = (reaped.clone(), input.to_owned());
        // The thread first: a process is started only once something waits for it.
        std::thread::Builder::new()
            .name("serve-check".into())
            .spawn(move || {
                // None when the process could not start.
                if let Ok(child) = take.recv() {
                    let _ = tx.send(wait_for(child, input, &lock));
                }
            })
            .map_err(|e| format!("cannot wait for a check's process: {e}"))?;
        // The running binary itself, even once a new one was installed over its path.
        let mut cmd = Command::new("/proc/self/exe");
        cmd.args(["serve", DIAGNOSE_STDIN])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: the closure runs in the forked child before exec and only calls
        // prctl(2) and signal(2), which are async-signal-safe. Should the daemon die
        // without killing it (SIGKILL), the check goes too instead of running on
        // unseen. The signals that stop the daemon (Ctrl-C to the terminal's process
        // group, systemd's SIGTERM to the whole unit) are ignored, across the exec:
        // the daemon ends its checks itself, and a check they reached first would be
        // stored as one that ended abnormally.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the check's process: {e}"))?;
        let pid = child.id() as libc::pid_t;
        // The thread waits in `recv` until this (or the drop of `give`): it is there.
        let _ = give.send(child);
        Ok(Apart { pid, reaped, done })
    }

    /// The process's output and exit status, once it ended.
    async fn ended(&mut self) -> std::io::Result<Output> {
        (&mut self.done)
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("its waiting thread ended")))
    }
}

impl Drop for Apart {
    fn drop(&mut self) {
        let reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if !*reaped {
            // SAFETY: kill(2) on this process's own child, not yet reaped (the lock
            // is held), so the pid is still its.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

/// Feeds `input` to `child`'s stdin, collects its stdout and stderr, and reaps it.
fn wait_for(mut child: Child, input: String, reaped: &Mutex<bool>) -> std::io::Result<Output> {
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) = (stdin, stdout, stderr) else {
        unreachable!("the three are piped");
    };
    // stdin, then stderr, on a second thread while stdout is read here: stdout never
    // waits on stderr (the process reads its whole input before it writes). A process
    // that ended before reading is told by its exit status.
    let errors = std::thread::Builder::new()
        .name("serve-check-err".into())
        .spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
            drop(stdin);
            let mut e = Vec::new();
            let _ = stderr.read_to_end(&mut e);
            e
        });
    let read = match errors {
        Ok(errors) => {
            let mut out = Vec::new();
            let read = stdout.read_to_end(&mut out);
            let err = errors.join().unwrap_or_default();
            read.map(|_| (out, err))
        }
        Err(e) => {
            // Never fed (its stdin went with the thread that did not start): it goes.
            let _ = child.kill();
            Err(e)
        }
    };
    let status = reap(&mut child, reaped);
    let (stdout, stderr) = read?;
    Ok(Output {
        status: status?,
        stdout,
        stderr,
    })
}

/// Waits for `child` to end and reaps it, `reaped` set first (under its lock, so a
/// kill on drop either comes before or not at all).
fn reap(child: &mut Child, reaped: &Mutex<bool>) -> std::io::Result<ExitStatus> {
    let ended = exited(child.id() as libc::pid_t);
    // Set whatever waitid said: after an error (ECHILD, when SIGCHLD is ignored and
    // the kernel reaped it) the number may already be another process's.
    *reaped.lock().unwrap_or_else(PoisonError::into_inner) = true;
    ended?;
    child.wait()
}

/// Waits until child `pid` has ended, leaving it to be reaped.
fn exited(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: all-zero is a valid siginfo_t, which waitid(2) only writes to.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on a child of this process; WNOWAIT leaves it unreaped.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// What a check's process said before it ended abnormally, on one line (at most 300
/// characters, secrets redacted): a panic's place and message (Rust prints them on
/// the lines after `panicked at`, then a `note:` and maybe a backtrace), else its
/// last line that is not a note.
fn last_words(stderr: &str) -> String {
    // Redacted a line at a time, as `Authorization: …` lines and URLs are found.
    let redacted: Vec<String> = stderr
        .lines()
        .map(|l| crate::redact::for_output(l.trim()).into_owned())
        .collect();
    let lines: Vec<&str> = redacted.iter().map(String::as_str).collect();
    let said = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => {
            let place = lines[i]
                .split_once("panicked at")
                .map_or("", |(_, p)| p.trim());
            let message = lines[i + 1..]
                .iter()
                .take_while(|l| !l.starts_with("note:") && !l.starts_with("stack backtrace:"))
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            format!("panicked at {place} {message}")
        }
        None => lines
            .iter()
            .rev()
            .find(|l| !l.is_empty() && !l.starts_with("note:"))
            .map_or(String::new(), |l| l.to_string()),
    };
    said.trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}

/// The check `t` asks for. `permit` (its place under `--max-concurrent`) is held
/// until the work ends: dropping this future (a reload, the time limit) ends it, a
/// diagnosis's process killed with it.
pub async fn run(
    t: &ServeTarget,
    halt: &Halt,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Outcome {
    match t.check {
        Check::Probe => {
            let _permit = permit;
            probe(&t.target, &t.requesting, &halt.stop).await
        }
        Check::Diagnose => {
            let _permit = permit;
            let at = SystemTime::now();
            let started = Instant::now();
            let result = diagnose_apart(t, halt).await;
            Outcome {
                at,
                duration: started.elapsed(),
                result,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic's place and message are the check's last words, not the note after
    /// them or a backtrace; a secret in them is redacted.
    #[test]
    fn last_words_are_the_panic_not_the_note() {
        let panic = "\nthread 'main' (7) panicked at src/probe/x.rs:10:5:\nindex out of bounds\nAuthorization: Bearer s3cr3t\nat https://u:pw@wiki.example/\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        let w = last_words(panic);
        assert!(
            w.starts_with("panicked at src/probe/x.rs:10:5: index out of bounds"),
            "{w}"
        );
        assert!(
            !w.contains("s3cr3t") && !w.contains("pw@") && !w.contains("note"),
            "{w}"
        );
        let traced =
            "thread 'main' panicked at src/a.rs:1:1:\nboom\nstack backtrace:\n   0: std::x\n";
        assert_eq!(last_words(traced), "panicked at src/a.rs:1:1: boom");
        assert_eq!(last_words("warming up\nout of memory\n\n"), "out of memory");
        assert_eq!(last_words(""), "");
    }

    /// The check's process answers in JSON whatever it was given: a file without a
    /// target, or not a targets file at all, is a failed check naming why.
    #[test]
    fn a_process_given_no_target_answers_why() {
        for (alone, why) in [("", "no [[target]]"), ("[[target]]\nurl = 3\n", "line 2")] {
            let answer: Result<Checked, String> =
                serde_json::from_str(&diagnose_alone(alone)).unwrap();
            let e = answer.unwrap_err();
            assert!(e.contains(why), "{alone:?}: {e}");
        }
    }
}
