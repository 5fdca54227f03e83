//! The error kinds that decide latscope's exit code.
//!
//! Library modules return their own typed errors; the command layer wraps a problem
//! in [`UsageError`] when the user asked for something impossible (exit 2, clap's
//! convention), and lets every other error through as a run failure (exit 1).

/// The user asked for something that cannot be done as written: a bad URL, value,
/// scenario file or combination of flags. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl UsageError {
    /// Builds a usage error from anything printable.
    pub fn new(msg: impl Into<String>) -> Self {
        UsageError(msg.into())
    }
}

/// Shorthand for returning a usage error from a command.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        ::anyhow::Error::new($crate::error::UsageError(format!($($arg)*)))
    };
}

/// Whether `e` is a write to a closed pipe (`latscope … | head`): not a failure,
/// the reader has all it wanted. Seen through a JSON serialiser too, whose error
/// does not expose the `io::Error` as its source.
pub fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io.kind() == std::io::ErrorKind::BrokenPipe;
    }
    e.downcast_ref::<serde_json::Error>()
        .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
}

/// Exit codes, as DESIGN.md fixes them.
pub mod exit {
    /// The run succeeded.
    pub const OK: u8 = 0;
    /// The run failed: unreachable, TLS refused, every request failed, I/O error.
    pub const RUN_FAILED: u8 = 1;
    /// Usage error: bad flag or value, bad URL, bad scenario file.
    pub const USAGE: u8 = 2;
    /// A `--threshold` failed (as k6).
    pub const THRESHOLD: u8 = 99;
}
