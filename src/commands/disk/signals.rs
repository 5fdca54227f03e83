//! Ctrl-C and SIGTERM for `latscope disk`: a flag the measurement polls, so the run
//! ends cleanly and keeps what it measured; a second signal removes the test file
//! and ends the process at once (exit 130). A handler of its own rather than
//! `commands::interrupt`'s: the second signal must unlink the test file from the
//! handler itself, with async-signal-safe calls only.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::report::live::{self, Stopper};

/// Set by SIGINT/SIGTERM.
pub(super) static STOP: AtomicBool = AtomicBool::new(false);

/// The test file the run will create in a directory (a leaked C string, or null),
/// removed by a second signal before the process ends at once.
static TEST_FILE: std::sync::atomic::AtomicPtr<libc::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Registers the test file `disk` creates in a directory (`.latscope-disk-PID.tmp`,
/// when no file of that name is there yet: then it can only be this run's).
pub(super) fn register_test_file(dir: &std::path::Path) {
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
pub(super) fn catch_signals() {
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

/// What `q` and Ctrl-C do in the view: what the signals do (raw mode turns Ctrl-C
/// into a key). A second Ctrl-C raises SIGINT, whose handler (STOP is set by then)
/// removes the test file and ends the process at once.
pub(super) fn stopper() -> Stopper {
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
