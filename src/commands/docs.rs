//! `latscope completions SHELL` and `latscope man`: what a packaged command-line tool
//! ships beside its binary, generated from the one clap definition (`cli.rs`), so
//! they never drift from the flags.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::exit;

/// Writes the shell's completion script to stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<u8> {
    let mut command = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "latscope", &mut out);
    out.flush()?;
    Ok(exit::OK)
}

/// Writes latscope.1 to stdout, or every page (latscope.1 and latscope-COMMAND.1)
/// into `--dir`.
pub fn man(args: ManArgs) -> anyhow::Result<u8> {
    let command = Cli::command();
    match args.dir {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(command).render(&mut out)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let written = write_pages(&command, &dir)?;
            eprintln!(
                "latscope: wrote {written} manual pages to {}",
                dir.display()
            );
        }
    }
    Ok(exit::OK)
}

/// The page of `command` and of each of its subcommands, named as git names its own
/// (`latscope-probe.1`); returns how many were written.
fn write_pages(command: &clap::Command, dir: &Path) -> anyhow::Result<usize> {
    let mut command = command.clone();
    command.build();
    let mut written = 0;
    let mut pending = vec![command];
    while let Some(cmd) = pending.pop() {
        let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
        let path = dir.join(format!("{name}.1"));
        let mut file = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        clap_mangen::Man::new(cmd.clone()).render(&mut file)?;
        written += 1;
        pending.extend(
            cmd.get_subcommands()
                .filter(|c| !c.is_hide_set() && c.get_name() != "help")
                .cloned(),
        );
    }
    Ok(written)
}
