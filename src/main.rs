//! The latscope binary: parse flags, run one command, map the outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use latscope::error::{exit, UsageError};

fn main() -> ExitCode {
    // `LATSCOPE_DB=` (set but empty) means no store was chosen: the default one.
    if std::env::var_os("LATSCOPE_DB").is_some_and(|v| v.is_empty()) {
        std::env::remove_var("LATSCOPE_DB");
    }
    let cli = latscope::cli::Cli::parse_from(with_default_command(std::env::args_os()));
    match latscope::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // `latscope … | head` closing the pipe is not a failure.
            if err.chain().any(latscope::error::is_broken_pipe) {
                return ExitCode::from(exit::OK);
            }
            let _ = std::io::stdout().flush();
            // An error can quote what a server or a file said: no terminal escapes.
            let text = format!("{err:#}");
            let shown: String = latscope::redact::for_output(&text)
                .chars()
                .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
                .collect();
            eprintln!("latscope: error: {shown}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(exit::USAGE)
            } else {
                ExitCode::from(exit::RUN_FAILED)
            }
        }
    }
}

/// `latscope URL …` means `latscope diagnose URL …`: insert the command when the
/// first argument is neither a command nor a flag.
fn with_default_command(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let mut args: Vec<_> = args.collect();
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let command = latscope::cli::Cli::command();
        let known = first == "help"
            || command
                .get_subcommands()
                .any(|c| c.get_name() == first || c.get_all_aliases().any(|a| a == first));
        if !known && !first.starts_with('-') {
            args.insert(1, "diagnose".into());
        }
    }
    args
}
