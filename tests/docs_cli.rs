//! The files a packaged command-line tool ships beside its binary, generated from the
//! one clap definition: shell completions (`latscope completions SHELL`), manual pages
//! (`latscope man`), and `--version` naming the commit it was built from.

use std::process::Command;

use crate::util::{run, temp_dir};
use crate::util_require::require;

/// Every visible command of the binary, from its own help.
fn commands() -> Vec<String> {
    let out = run(&["help"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// bash loads the completion script and registers it for `latscope`; asked to
/// complete `latscope co`, it offers the commands that start so, and the load
/// command's flags complete too.
#[test]
fn bash_completes_commands_and_flags() {
    if !require("bash") {
        return;
    }
    let dir = temp_dir("completions");
    let out = run(&["completions", "bash"]);
    assert!(out.status.success(), "{out:?}");
    let script = dir.join("latscope.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // COMP_* set as bash sets them for `latscope co<TAB>` and `latscope load --ra<TAB>`.
    let check = format!(
        r#"source {script}
complete -p latscope
COMP_WORDS=(latscope co); COMP_CWORD=1; COMP_LINE="latscope co"; COMP_POINT=${{#COMP_LINE}}
_latscope latscope co latscope; echo "commands: ${{COMPREPLY[*]}}"
COMP_WORDS=(latscope load --ra); COMP_CWORD=2; COMP_LINE="latscope load --ra"; COMP_POINT=${{#COMP_LINE}}
_latscope latscope --ra load; echo "flags: ${{COMPREPLY[*]}}""#,
        script = script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &check])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("_latscope") && text.contains("latscope"),
        "{text}"
    );
    let commands = text.lines().find(|l| l.starts_with("commands: ")).unwrap();
    assert!(
        commands.contains("compare") && commands.contains("completions"),
        "{text}"
    );
    assert!(
        !commands.contains("probe"),
        "only what starts with `co`: {text}"
    );
    let flags = text.lines().find(|l| l.starts_with("flags: ")).unwrap();
    assert!(flags.contains("--rate"), "{text}");
}

/// Every shell clap knows gets a script that names every command; an unknown shell
/// is a usage error listing the ones there are.
#[test]
fn completions_for_every_shell_and_a_clear_error_for_others() {
    let commands = commands();
    assert!(commands.len() >= 15, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        for c in &commands {
            assert!(text.contains(c.as_str()), "{shell} completions lack `{c}`");
        }
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bash") && err.contains("zsh"), "{err}");
}

/// `latscope man` is a roff page with the name, synopsis and every command; `--dir`
/// writes one page per command beside it, each naming its own flags.
#[test]
fn man_pages_for_the_tool_and_each_command() {
    let out = run(&["man"]);
    assert!(out.status.success(), "{out:?}");
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH latscope"),
        "{page}"
    );
    assert!(page.contains(".TH latscope 1"), "{page}");
    assert!(
        page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"),
        "{page}"
    );
    let commands = commands();
    for c in &commands {
        assert!(page.contains(c.as_str()), "latscope.1 lacks `{c}`");
    }

    let dir = temp_dir("man");
    let out = run(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    for c in &commands {
        let path = dir.join(format!("latscope-{c}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.contains(&format!(".TH latscope-{c} 1")), "{text}");
    }
    let probe = std::fs::read_to_string(dir.join("latscope-probe.1")).unwrap();
    assert!(
        probe.contains("http3"),
        "the probe page names its flags: {probe}"
    );
    // `k8s job` is a command of a command: it has its page too.
    assert!(dir.join("latscope-k8s-job.1").is_file());
}

/// `--version` names the version and the commit this checkout is at.
#[test]
fn version_names_the_commit() {
    let out = run(&["--version"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(concat!("latscope ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let head = Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match head {
        Ok(h) if h.status.success() => {
            let commit = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert!(
                text.contains(&format!("commit {commit}")),
                "{text} vs {commit}"
            );
        }
        // A source tree outside git (a tarball) says so.
        _ => assert!(text.contains("unknown commit"), "{text}"),
    }
}

/// `-q` on a terminal (a pty from util-linux `script`): the result, and neither the
/// progress line nor the "saved as run" line, which the same command shows without
/// it.
#[test]
fn quiet_leaves_only_the_result() {
    if !require("script") {
        return;
    }
    let lab = crate::util_lab::healthy();
    let dir = temp_dir("quiet");
    let db = dir.join("runs.db");
    let on_a_terminal = |quiet: &str| {
        let cmd = format!(
            "{} {quiet} diagnose {} --samples 4 --no-load --no-tui --db {}",
            env!("CARGO_BIN_EXE_latscope"),
            lab.url("/"),
            db.display()
        );
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let loud = on_a_terminal("");
    assert!(
        loud.contains("saved as run") && loud.contains("\r\x1b[2K"),
        "{loud:?}"
    );
    let quiet = on_a_terminal("-q");
    assert!(quiet.contains("where the time goes"), "{quiet}");
    assert!(
        !quiet.contains("saved as run") && !quiet.contains("\x1b[2K"),
        "{quiet:?}"
    );
}
