//! The command layer: turns parsed flags into validated configuration, runs the
//! measurement, hands the result to `report`. The only place (with `main.rs`) that
//! uses anyhow, prints, and decides exit codes.

use crate::cli::{Cli, Command};

mod capacity;
mod compare;
mod demo;
mod diagnose;
mod disk;
mod docs;
mod interrupt;
mod k8s;
mod lab;
mod load;
mod merge;
mod observing;
mod output;
mod page;
mod probe;
mod report;
mod runs;
pub(crate) mod saving;
mod serve;
mod watching;
mod wire;

/// Runs one parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    let marked = match &cli.command {
        Command::Diagnose(a) => a.http.redact_headers.clone(),
        Command::Probe(a) => a.http.redact_headers.clone(),
        Command::Load(a) => a.http.redact_headers.clone(),
        _ => Vec::new(),
    };
    crate::redact::set_output(cli.show_secrets, marked);
    crate::report::progress::set_quiet(cli.quiet);
    match cli.command {
        Command::Diagnose(args) => diagnose::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Load(args) => load::run(args),
        Command::Disk(args) => disk::run(args),
        Command::Page(args) => page::run(args),
        Command::Lab(args) => lab::run(args),
        Command::Wire(args) => wire::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Runs(args) => runs::list(args),
        Command::Show(args) => runs::show(args),
        Command::Export(args) => runs::export(args),
        Command::Import(args) => runs::import(args),
        Command::Merge(args) => merge::run(args),
        Command::K8s(args) => k8s::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}
