//! The suite cannot go green by skipping (issue 27): in strict mode (`.ci/run` sets
//! it) a test whose tool is missing fails with the tool's install hint; outside it the
//! test is skipped, loudly; and no test skips on its own, past `util_require`.
//! The first two run this test binary again on one probe test.

use std::process::{Command, Output};
use std::time::Duration;

use crate::util::output_within;
use crate::util_require::require;

/// The probe test's name and the variable that arms it.
const PROBE: &str = "skipping::a_test_that_needs_a_missing_tool";
const ARM: &str = "LATSCOPE_SKIPPING_PROBE";

/// Needs a program no machine has; does nothing unless the tests below arm it.
#[test]
fn a_test_that_needs_a_missing_tool() {
    if std::env::var_os(ARM).is_none() {
        return;
    }
    if !require("latscope-no-such-tool") {
        return;
    }
    panic!("a program that is not installed was found");
}

/// This test binary, on the probe alone, with `env` set (and `CI`,
/// `LATSCOPE_STRICT` cleared first).
fn run_probe(env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([PROBE, "--exact", "--test-threads=1"])
        .env(ARM, "1")
        .env_remove("CI")
        .env_remove("LATSCOPE_STRICT")
        .envs(env.iter().copied());
    output_within(cmd, Duration::from_secs(60)).0
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn strict_mode_fails_a_test_whose_tool_is_missing_with_its_hint() {
    for env in [&[("LATSCOPE_STRICT", "1")][..], &[("CI", "true")][..]] {
        let out = run_probe(env);
        let text = text(&out);
        assert_eq!(out.status.code(), Some(101), "{env:?}: {text}");
        assert!(text.contains("1 failed"), "{env:?}: {text}");
        assert!(
            text.contains(&format!(
                "{PROBE} cannot run: latscope-no-such-tool is not installed \
                 (apt-get install latscope-no-such-tool)"
            )),
            "{env:?}: {text}"
        );
        assert!(!text.contains("SKIPPED"), "{env:?}: {text}");
    }
}

#[test]
fn outside_strict_mode_a_missing_tool_is_skipped_loudly() {
    for env in [&[][..], &[("LATSCOPE_STRICT", "0"), ("CI", "true")][..]] {
        let out = run_probe(env);
        let text = text(&out);
        assert_eq!(out.status.code(), Some(0), "{env:?}: {text}");
        // On the process's own stderr, not the harness's captured output.
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!(
                "SKIPPED {PROBE}: latscope-no-such-tool is not installed"
            )),
            "{env:?}: {text}"
        );
    }
}

/// Every skip goes through `util_require` (which fails in strict mode): no test file
/// prints a skip of its own and returns.
#[test]
fn no_test_skips_past_util_require() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name == "util_require.rs" || name == "skipping.rs" {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        for (at, _) in src.match_indices("println!(") {
            let call = &src[at..];
            let call = &call[..call.find(");").unwrap_or(call.len())];
            let lower = call.to_lowercase();
            if lower.contains("skip") {
                let line = src[..at].matches('\n').count() + 1;
                found.push(format!("{name}:{line}: {}", call.lines().next().unwrap()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "tests that skip on their own (use util_require's require…):\n{}",
        found.join("\n")
    );
}
