//! `latscope disk PATH`: measure storage latency, find what the numbers say
//! (`disk-tail`, `slow-fsync`), print text or the disk JSON, save the run. On a
//! terminal the measurement is shown in the full-screen live view (the progress
//! line with `--json`, `--no-tui`, `TERM=dumb` or when stdout or stderr is not a
//! terminal). Ctrl-C (or `q` in the view) ends the measurement early: what was
//! measured is still printed and saved, and the test file is removed.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use crate::cli::DiskArgs;
use crate::config::DiskConfig;
use crate::diagnose::{self, disk_verdict, Facts};
use crate::disk::{self, DiskOptions, Observer, SecondHists, SecondStats, Setup};
use crate::report;
use crate::report::live::{self, disk::DiskSecond, DiskSetup, DiskState, LiveView, Stopper};
use crate::report::progress::ProgressLine;
use crate::usage;

use super::saving::{self, NewRun};

/// Set by SIGINT/SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

/// The test file the run will create in a directory (a leaked C string, or null),
/// removed by a second signal before the process ends at once.
static TEST_FILE: std::sync::atomic::AtomicPtr<libc::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Registers the test file `disk` creates in a directory (`.latscope-disk-PID.tmp`,
/// when no file of that name is there yet: then it can only be this run's).
fn register_test_file(dir: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    if !dir.is_dir() {
        return;
    }
    let path = dir.join(format!(".latscope-disk-{}.tmp", std::process::id()));
    if path.exists() {
        return;
    }
    if let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) {
        TEST_FILE.store(c.into_raw(), Ordering::Relaxed);
    }
}

extern "C" fn on_signal(_: libc::c_int) {
    // A second signal while the run winds down: the user means it (exit 130, as
    // load and probe do). Only async-signal-safe calls here.
    if STOP.swap(true, Ordering::Relaxed) {
        const MSG: &[u8] = b"\nlatscope: stopped at once (a second signal)\n";
        let test_file = TEST_FILE.load(Ordering::Relaxed);
        // The live view's terminal first (tcsetattr and write only).
        live::leave_in_signal_handler();
        // SAFETY: unlink(2), write(2) and _exit(2) are async-signal-safe; MSG is a
        // valid buffer; TEST_FILE is null or a leaked, NUL-terminated path.
        unsafe {
            if !test_file.is_null() {
                libc::unlink(test_file);
            }
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(130);
        }
    }
}

/// Makes Ctrl-C (and SIGTERM) set [`STOP`] instead of killing the process, so the
/// run ends cleanly and the test file is removed.
fn catch_signals() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// Prints the header when measuring starts, and progress on a terminal: the live
/// view when `live`, else the progress line.
struct Printer<'a> {
    opts: &'a DiskOptions,
    json: bool,
    line: ProgressLine,
    live: bool,
    view: Option<LiveView<DiskState>>,
    total_s: u64,
    header: String,
    last_layout: Option<Instant>,
    /// The database suite runs: no live view, the header comes after the verdict.
    suite: bool,
    /// The suite's workload under way, for the progress line.
    current: String,
}

/// What `q` and Ctrl-C do in the view: what the signals do (raw mode turns Ctrl-C
/// into a key). A second Ctrl-C raises SIGINT, whose handler (STOP is set by then)
/// removes the test file and ends the process at once.
fn stopper() -> Stopper {
    Stopper {
        stop: Box::new(|| STOP.store(true, Ordering::Relaxed)),
        stopped: Box::new(|| STOP.load(Ordering::Relaxed)),
        at_once: Box::new(|| {
            STOP.store(true, Ordering::Relaxed);
            // SAFETY: raise(3) with a valid signal number; its handler is on_signal.
            unsafe {
                libc::raise(libc::SIGINT);
            }
        }),
    }
}

impl Observer for Printer<'_> {
    fn laying_out(&mut self, done: u64, total: u64) {
        if !self.line.is_on() {
            return;
        }
        let due = self
            .last_layout
            .is_none_or(|t| t.elapsed().as_millis() >= 100);
        if due || done == total {
            self.last_layout = Some(Instant::now());
            self.line.show(&report::disk::layout_progress(done, total));
        }
    }

    fn started(&mut self, setup: &Setup) {
        self.header = report::disk::header(self.opts, setup);
        self.line.clear();
        for w in setup.warnings.iter().chain(&setup.engine_note) {
            eprintln!("latscope: warning: {w}");
        }
        if !self.json && !self.suite {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(self.header.as_bytes());
            let _ = out.flush();
        }
        if self.live && !self.suite {
            // No view (a terminal that cannot take raw mode): the progress line.
            let state = DiskState::new(DiskSetup::new(self.opts, setup));
            self.view = LiveView::open(state, stopper()).ok();
        }
    }

    fn workload(&mut self, i: usize, n: usize, name: &str, what: &str) {
        self.current = format!("[{}/{n}] {name}", i + 1);
        let text = format!("  {}: {what}", self.current);
        self.line.show(&text);
    }

    fn second(&mut self, s: &SecondStats, hists: &SecondHists) {
        if let Some(view) = &self.view {
            let second = DiskSecond::new(s, hists);
            view.update(move |st| st.push(&second));
        } else if self.suite {
            let text = format!("  {} {}", self.current, report::disk::progress_rates(s));
            self.line.show(&text);
        } else {
            self.line.show(&report::disk::progress(s, self.total_s));
        }
    }
}

/// Runs `latscope disk`.
pub fn run(args: DiskArgs) -> anyhow::Result<u8> {
    let DiskConfig {
        options: opts,
        output,
    } = DiskConfig::from_args(&args)?;
    register_test_file(&opts.path);
    catch_signals();
    let started = SystemTime::now();
    let mut printer = Printer {
        opts: &opts,
        json: output.json,
        line: ProgressLine::stderr(),
        live: live::wanted(output.json, output.no_tui),
        view: None,
        total_s: opts.duration.as_secs_f64().ceil() as u64,
        header: String::new(),
        last_layout: None,
        suite: opts.suite,
        current: String::new(),
    };
    if opts.suite {
        return run_suite(&output, &opts, started, printer);
    }
    let outcome = disk::run(&opts, &STOP, &mut printer);
    if let Some(view) = printer.view.take() {
        // The terminal back before the summary (and any error) is printed.
        view.finish();
    } else {
        printer.line.clear();
    }
    let result = match outcome {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(usage!("{e}")),
        Err(e) => return Err(anyhow::Error::new(e)),
    };

    let (findings, verdict, doc) = judge(
        diagnose::from_disk::disk_facts(&result),
        crate::schema::DiskDoc::from(&result),
    )?;
    let body = format!(
        "\n{}{}",
        report::disk_suite::verdict_text(&verdict),
        report::disk::render(&result, &findings)
    );
    let text = format!("{}{body}", printer.header);
    // Saved before it is printed: a stdout that cannot be written loses nothing.
    let saved = saving::save(
        &output,
        NewRun {
            kind: "disk",
            target: opts.path.display().to_string(),
            started,
            duration_s: result.elapsed.as_secs_f64(),
            config: crate::schema::to_value(&crate::schema::DiskConfigDoc::of(
                &opts,
                result.setup.size,
            )),
            summary: doc.clone(),
            timeline: crate::schema::to_value(&crate::schema::disk::timeline(&result)),
            findings: serde_json::to_value(&findings)?,
            text,
            histograms: result.histograms(),
            secret_headers: Vec::new(),
        },
    );
    // The verdict first (DESIGN.md, fourth wave), the rest in their usual order.
    super::output::print_first(output.json, doc, "verdict", &body)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}

/// The findings and the verdict of a disk run's facts, and its document with both.
fn judge(
    disk: diagnose::facts::DiskFacts,
    mut doc: crate::schema::DiskDoc,
) -> anyhow::Result<(
    Vec<diagnose::Finding>,
    disk_verdict::DiskVerdict,
    serde_json::Value,
)> {
    let facts = Facts {
        disk: Some(disk),
        ..Facts::default()
    };
    let findings = diagnose::run_rules(&facts);
    let verdict = disk_verdict::verdict(facts.disk.as_ref().expect("disk facts"), &findings);
    doc.findings = findings.clone();
    doc.verdict = Some(serde_json::to_value(&verdict)?);
    Ok((findings, verdict, crate::schema::to_value(&doc)))
}

/// Runs the database suite (no workload flags): its workloads and the commit test,
/// the verdict first, then what was measured.
fn run_suite(
    output: &crate::config::OutputConfig,
    opts: &DiskOptions,
    started: SystemTime,
    mut printer: Printer<'_>,
) -> anyhow::Result<u8> {
    let outcome = disk::suite::run(opts, &STOP, &mut printer);
    printer.line.clear();
    let result = match outcome {
        Ok(r) => r,
        Err(e) if e.is_usage() => return Err(usage!("{e}")),
        Err(e) => return Err(anyhow::Error::new(e)),
    };
    let (findings, verdict, doc) = judge(
        diagnose::from_disk::suite_facts(&result),
        crate::schema::DiskDoc::from(&result),
    )?;
    let text = report::disk_suite::render_suite(&result, &verdict, &findings);
    let saved = saving::save(
        output,
        NewRun {
            kind: "disk",
            target: opts.path.display().to_string(),
            started,
            duration_s: result.elapsed.as_secs_f64(),
            config: serde_json::json!({
                "path": opts.path.display().to_string(),
                "pattern": "suite",
                "size": result.setup.size,
                "direct": format!("{:?}", opts.direct).to_lowercase(),
                "write": opts.allow_write,
                "engine": format!("{:?}", opts.engine).to_lowercase(),
            }),
            summary: doc.clone(),
            timeline: doc["timeline"].clone(),
            findings: serde_json::to_value(&findings)?,
            text: text.clone(),
            histograms: result.histograms(),
            secret_headers: Vec::new(),
        },
    );
    super::output::print_first(output.json, doc, "verdict", &text)?;
    super::output::say_saved(output.json, &saved)?;
    Ok(saved.exit_code(0))
}
