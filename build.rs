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

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if glibc_version().is_some_and(|v| v >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
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
