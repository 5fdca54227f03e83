//! Build script: links the `latscope` binary with packed relative relocations
//! (`-z pack-relative-relocs`, DT_RELR) where the C library loads them (glibc ≥ 2.36,
//! asked with `getconf GNU_LIBC_VERSION` on a native build). The position-independent
//! binary has ~21,000 relative relocations: as RELA entries they are 500 KiB that the
//! dynamic loader reads at every start, and that stay resident (issue 21: half a
//! megabyte of a 50-connection run's ~11 MB); packed they are 6 KiB. Elsewhere
//! (cross builds, musl, older glibc) nothing changes.
//!
//! It also hands the linker `link/hot-text.ld` (made by bench/hot-text.sh): the
//! functions a load run executes, placed together ahead of the rest of the code. The
//! kernel maps code in 64 KiB windows around each page faulted in, so scattered they
//! kept ~3.7 MB of code resident at 50 connections; together, ~2.8 MB (issue 21). lld
//! (rustc's default linker here since 1.90) and GNU ld take the script; gold does not
//! know `INSERT`, so a build that asks for gold goes without, as does one with
//! `LATSCOPE_HOT_TEXT=0`.
//!
//! A release build is linked with identical code folding (`--icf=all`) and `-O2`,
//! and without the index of the unwinding tables (`--no-eh-frame-hdr`).
//!
//! And it gives `latscope --version` the commit it was built from.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    commit();
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if glibc_version().is_some_and(|v| v >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // Identical code folding (functions whose machine code came out the same, as
    // generic code instantiated for types of one layout, kept once: −118 KB) and
    // lld's -O2 (duplicate strings merged): lld's flags, so only in a release build
    // with rustc's own linker, no `-fuse-ld`/`linker` of the user's (bench/RESULTS.md,
    // issue 36: the binary's size).
    // lld is rustc's default linker on x86_64 Linux from 1.90; GNU ld refuses the flags,
    // so a linker of the user's (`-C linker`, `target.*.linker`: RUSTC_LINKER) or
    // another target goes without.
    let rustflags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if std::env::var("PROFILE").is_ok_and(|p| p == "release")
        && target == "x86_64-unknown-linux-gnu"
        && rustc_minor().is_some_and(|m| m >= 90)
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !rustflags.contains("fuse-ld")
        && !rustflags.contains("linker")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo:rustc-link-arg-bins=-Wl,-O2");
    }
    // No unwinding-table index (−89 KB): the release binary aborts on a panic, so the
    // tables serve only a backtrace, and the panic's place and message still print.
    // A build with debug info (`--profile profiling`, for perf) keeps it.
    if std::env::var("PROFILE").is_ok_and(|p| p == "release")
        && std::env::var("DEBUG").is_ok_and(|d| d == "false" || d == "0" || d == "none")
        && !rustflags.contains("gold")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,--no-eh-frame-hdr");
    }
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-env-changed=LATSCOPE_HOT_TEXT");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let wanted = std::env::var("LATSCOPE_HOT_TEXT").map_or(true, |v| v != "0");
    let script = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link/hot-text.ld");
    if wanted && !flags.contains("gold") && script.is_file() {
        // -Xlinker passes its next argument as it is (`-Wl,` would split a path
        // with a comma in it).
        for arg in ["-Xlinker", "-T", "-Xlinker"] {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
        println!("cargo:rustc-link-arg-bins={}", script.display());
    }
}

/// The minor version of the rustc building this (`rustc 1.95.0 (…)`: 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

/// The build host's glibc version (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn glibc_version() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    Some((major, minor))
}

/// `latscope --version` names the commit it was built from (`git rev-parse --short
/// HEAD`), or "unknown commit" outside a git checkout (a source tarball, `cargo
/// install` from the registry). Rebuilt when HEAD moves.
fn commit() {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let commit = git(&["rev-parse", "--short=10", "HEAD"]);
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // HEAD names a branch whose ref file (or packed-refs) moves on a commit.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
                .unwrap_or(dir.clone());
            // Only files that exist: a missing one would rerun this script every build.
            for file in [format!("{common}/{head}"), format!("{common}/packed-refs")] {
                if std::path::Path::new(&file).exists() {
                    println!("cargo:rerun-if-changed={file}");
                }
            }
        }
    }
    let shown = commit.map_or("unknown commit".to_string(), |c| format!("commit {c}"));
    println!("cargo:rustc-env=LATSCOPE_COMMIT={shown}");
}
