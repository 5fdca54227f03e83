//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The latscope binary under test.
pub fn latscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

/// Runs latscope with `args`, returning its output.
pub fn run(args: &[&str]) -> Output {
    latscope().args(args).output().expect("latscope runs")
}
