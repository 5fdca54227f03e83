//! The latscope binary: parse flags, run one command, map the outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use latscope::error::{exit, UsageError};

fn main() -> ExitCode {
    let cli = latscope::cli::Cli::parse();
    match latscope::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // `latscope … | head` closing the pipe is not a failure.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::from(exit::OK);
            }
            let _ = std::io::stdout().flush();
            eprintln!("latscope: error: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(exit::USAGE)
            } else {
                ExitCode::from(exit::RUN_FAILED)
            }
        }
    }
}
