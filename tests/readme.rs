//! The README's first screen, followed literally (issue 37 items 1 and 2): its
//! quick-start block holds exactly the two commands CI runs (`.ci/run` execs
//! `scripts/test.sh`; the demo through cargo, whose arguments the demo's test in
//! tests/diagnose.rs runs as they stand), the set-up times it states are the
//! ones `bench/RESULTS.md` records, `cargo install --path .` comes before the first
//! `latscope …` command a reader would type, every `$ latscope …` example is a command
//! the CLI accepts, and every docs/ page it links exists.

use std::path::Path;

const README: &str = include_str!("../README.md");

/// The arguments the quick start gives latscope (`cargo run -- ARGS`): what
/// `diagnose::the_demo_finds_every_planted_problem` runs, through the binary cargo
/// built for the tests.
pub(crate) fn quick_start_args() -> Vec<String> {
    let cmds = quick_start();
    let (_, args) = cmds[0]
        .split_once(" -- ")
        .unwrap_or_else(|| panic!("the quick start runs latscope through cargo: {cmds:?}"));
    args.split_whitespace().map(str::to_string).collect()
}

/// The commands of the README's quick-start block, comments stripped.
fn quick_start() -> Vec<String> {
    let start = README
        .find("<!-- quick-start")
        .expect("README has a quick-start block");
    let block = &README[start..];
    let block = &block[block.find('\n').unwrap() + 1..block.find("<!-- /quick-start -->").unwrap()];
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The two commands are CI's: the test command is the one `.ci/run` runs, the demo
/// goes through cargo to the `demo` command the CLI has.
#[test]
fn quick_start_is_what_ci_runs() {
    let cmds = quick_start();
    assert_eq!(
        cmds,
        ["cargo run -- demo", "bash scripts/test.sh"],
        "{cmds:?}"
    );
    let ci = include_str!("../.ci/run");
    let runs: Vec<&str> = ci
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && l.contains("scripts/"))
        .collect();
    assert_eq!(runs, ["exec bash scripts/test.sh"], "{ci}");
    assert!(Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/test.sh")
        .exists());
    let demo: Vec<&str> = cmds[0].split(" -- ").nth(1).unwrap().split(' ').collect();
    let mut argv = vec!["latscope"];
    argv.extend(demo);
    <latscope::cli::Cli as clap::Parser>::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    // What the test script installs is what the README names: a few of its packages.
    let script = include_str!("../scripts/test.sh");
    for pkg in [
        "nginx",
        "varnish",
        "chromium",
        "httplint",
        "kubernetes-validate",
    ] {
        assert!(script.contains(pkg) && README.contains(pkg), "{pkg}");
    }
}

/// The times the first screen states are bench/RESULTS.md's, and `cargo install
/// --path .` comes before the first command that needs `latscope` on PATH.
#[test]
fn set_up_cost_and_path_come_first() {
    let results = include_str!("../bench/RESULTS.md");
    let cost = &results[results
        .find("## Set-up cost (issue 37)")
        .expect("bench/RESULTS.md records the set-up cost")..];
    for (readme, bench) in [
        ("~3 minutes", "~3 min"),
        ("186 s", "186 s"),
        ("~6 minutes", "~6 min"),
        ("372 s", "372 s"),
        ("843 s", "843 s"),
        ("~30 s", "~30 s"),
    ] {
        assert!(README.contains(readme), "README lacks {readme}");
        assert!(
            cost.contains(bench),
            "RESULTS.md's set-up cost lacks {bench}"
        );
    }
    let install = README
        .find("cargo install --path .")
        .expect("cargo install");
    let first_use = README.find("\n    latscope ").expect("a latscope command");
    assert!(
        install < first_use,
        "cargo install comes after a latscope command"
    );
    // The first screen: the quick start sits within the first 40 lines.
    let line = README[..README.find("<!-- /quick-start -->").unwrap()]
        .lines()
        .count();
    assert!(line < 40, "the quick start ends on line {line}");
}

/// Every `$ latscope …` example in the README parses as the CLI would (a renamed
/// command or flag fails here), and every docs/ page the README links exists.
#[test]
fn readme_examples_parse_and_links_resolve() {
    let mut n = 0;
    for line in README.lines() {
        let Some(cmd) = line.trim_start().strip_prefix("$ latscope ") else {
            continue;
        };
        let mut argv = vec!["latscope"];
        argv.extend(cmd.split_whitespace());
        <latscope::cli::Cli as clap::Parser>::try_parse_from(&argv)
            .unwrap_or_else(|e| panic!("README: {cmd}: {e}"));
        n += 1;
    }
    assert!(n >= 5, "{n} examples");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut links = 0;
    for part in README.split("](").skip(1) {
        let target = part.split(')').next().unwrap().split('#').next().unwrap();
        if target.starts_with("http") || target.is_empty() {
            continue;
        }
        assert!(
            root.join(target).exists(),
            "README links {target}, which is missing"
        );
        links += 1;
    }
    assert!(links >= 10, "{links} links");
}
