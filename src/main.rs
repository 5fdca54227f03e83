//! The latscope binary: parse flags, run one command, map the outcome to an exit code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use latscope::error::{exit, UsageError};

fn main() -> ExitCode {
    // The release binary aborts on a panic (Cargo.toml), which runs no destructor:
    // what a run made on disk (a disk run's test file, the browser's profile) is
    // removed here instead, after the panic's message.
    if cfg!(panic = "abort") {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            report(info);
            latscope::cleanup::remove_all();
        }));
    }
    // `LATSCOPE_DB=` (set but empty) means no store was chosen: the default one.
    if std::env::var_os("LATSCOPE_DB").is_some_and(|v| v.is_empty()) {
        std::env::remove_var("LATSCOPE_DB");
    }
    let args = match with_default_command(std::env::args_os()) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("latscope: error: {message}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let cli = latscope::cli::Cli::parse_from(args);
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
/// first argument is neither a command nor a flag. A bare word that cannot be a
/// target — no scheme, dot, port or IP, and not `localhost` — is a mistyped command
/// (`latscope comapre last last~1`), refused with the nearest command's name.
fn with_default_command(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Result<Vec<std::ffi::OsString>, String> {
    use clap::CommandFactory;
    let mut args: Vec<_> = args.collect();
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let command = latscope::cli::Cli::command();
        let names: Vec<String> = command
            .get_subcommands()
            .flat_map(|c| {
                std::iter::once(c.get_name().to_string())
                    .chain(c.get_all_aliases().map(str::to_string))
            })
            .chain(std::iter::once("help".to_string()))
            .collect();
        let known = names.iter().any(|n| n == first);
        if !known && !first.starts_with('-') {
            if !looks_like_target(first) {
                let hint = match nearest(first, &names) {
                    Some(n) => format!("did you mean `{n}`? "),
                    None => String::new(),
                };
                return Err(format!(
                    "'{first}' is not a latscope command: {hint}(a target is a URL, a host with a dot or a port, an IP address or localhost: http://{first}/ works; `latscope help` lists the commands)"
                ));
            }
            args.insert(1, "diagnose".into());
        }
    }
    Ok(args)
}

/// Whether a bare first argument can be a target: a scheme, a dot, a port (or
/// IPv6's colons), brackets, or `localhost`.
fn looks_like_target(word: &str) -> bool {
    word.contains("://")
        || word.contains(['.', ':', '[', '/'])
        || word.eq_ignore_ascii_case("localhost")
        || word.parse::<std::net::IpAddr>().is_ok()
}

/// The command nearest to `word` by edit distance, when near enough to be a typo
/// (at most 2 edits, or a third of its length).
fn nearest<'n>(word: &str, names: &'n [String]) -> Option<&'n str> {
    let limit = (word.chars().count() / 3).max(2);
    names
        .iter()
        .map(|n| (edits(&word.to_ascii_lowercase(), n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance, with a swap of two neighbours counting as one edit.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Vec<String>, String> {
        with_default_command(
            std::iter::once("latscope")
                .chain(words.iter().copied())
                .map(Into::into),
        )
        .map(|v| v.into_iter().map(|a| a.into_string().unwrap()).collect())
    }

    /// Issue 28 item 14: a mistyped command is a usage error naming the nearest
    /// command; every kind of target still means `diagnose`.
    #[test]
    fn a_typo_is_not_a_host() {
        let e = args(&["comapre", "last", "last~1"]).unwrap_err();
        assert!(e.contains("did you mean `compare`?"), "{e}");
        assert!(args(&["prboe", "x"]).unwrap_err().contains("`probe`"));
        assert!(args(&["lod"]).unwrap_err().contains("`load`"));
        let e = args(&["zzzzzzzz"]).unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        for target in [
            "localhost",
            "LOCALHOST",
            "example.com",
            "http://x",
            "myhost:8080",
            "127.0.0.1",
            "::1",
            "[::1]:80",
            "host/path",
        ] {
            assert_eq!(args(&[target]).unwrap()[1], "diagnose", "{target}");
        }
        assert_eq!(args(&["compare", "a", "b"]).unwrap()[1], "compare");
        assert_eq!(args(&["--help"]).unwrap()[1], "--help");
        assert_eq!(args(&["help"]).unwrap()[1], "help");
    }
}
