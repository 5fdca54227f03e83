//! The debug and test builds' per-crate optimisation (Cargo.toml's
//! `[profile.dev.package]`, issue 27: the suite's build time): every crate named
//! there is one Cargo.lock holds (a misspelt or dropped name would silently cost
//! build time again), and none of the crates a request, a packet or a second of a
//! run goes through is among those built without optimisation — the tests time
//! those, and an unoptimised TLS record layer or HTTP/2 codec would be measured
//! instead of the lab's delays.

use std::collections::BTreeSet;

/// Crates on the measured path: what the load engines, the probe, the lab's server
/// and its wire run per request, per packet or per second.
const MEASURED_PATH: &[&str] = &[
    "bytes",
    "flate2",
    "futures-util",
    "h2",
    "h3",
    "h3-quinn",
    "hdrhistogram",
    "http",
    "httparse",
    "hyper",
    "hyper-util",
    "io-uring",
    "libc",
    "memchr",
    "mio",
    "quinn",
    "quinn-proto",
    "quinn-udp",
    "rand",
    "regex-lite",
    "ring",
    "rustls",
    "serde_json",
    "socket2",
    "tokio",
    "tokio-rustls",
    "url",
];

/// Cargo.toml, parsed.
fn manifest() -> toml::Table {
    include_str!("../Cargo.toml")
        .parse()
        .unwrap_or_else(|e| panic!("Cargo.toml: {e}"))
}

/// `[profile.dev.package]`: each crate named and its opt-level.
fn dev_packages() -> Vec<(String, i64)> {
    let manifest = manifest();
    let table = manifest["profile"]["dev"]["package"]
        .as_table()
        .expect("Cargo.toml has [profile.dev.package]");
    table
        .iter()
        .filter(|(name, _)| name.as_str() != "*")
        .map(|(name, settings)| {
            let level = settings
                .get("opt-level")
                .and_then(|l| l.as_integer())
                .unwrap_or_else(|| panic!("{name}: an integer opt-level"));
            (name.clone(), level)
        })
        .collect()
}

fn locked() -> BTreeSet<String> {
    let lock: toml::Table = include_str!("../Cargo.lock")
        .parse()
        .unwrap_or_else(|e| panic!("Cargo.lock: {e}"));
    lock["package"]
        .as_array()
        .expect("Cargo.lock lists packages")
        .iter()
        .map(|p| p["name"].as_str().expect("a package name").to_string())
        .collect()
}

#[test]
fn every_crate_with_its_own_opt_level_is_in_the_lock_file() {
    let locked = locked();
    let packages = dev_packages();
    assert!(packages.len() > 50, "{packages:?}");
    let unknown: Vec<_> = packages
        .iter()
        .filter(|(name, _)| !locked.contains(name))
        .collect();
    assert!(unknown.is_empty(), "not in Cargo.lock: {unknown:?}");
    // The measured path's crates are real names too, or the check below proves nothing.
    let gone: Vec<_> = MEASURED_PATH
        .iter()
        .filter(|name| !locked.contains(**name))
        .collect();
    assert!(gone.is_empty(), "not in Cargo.lock: {gone:?}");
}

#[test]
fn the_measured_path_is_optimised() {
    let slow: Vec<_> = dev_packages()
        .into_iter()
        .filter(|(name, level)| MEASURED_PATH.contains(&name.as_str()) && *level < 2)
        .collect();
    assert!(slow.is_empty(), "built without optimisation: {slow:?}");
    // And "*" (every crate not named) is optimised.
    assert_eq!(
        manifest()["profile"]["dev"]["package"]["*"]["opt-level"].as_integer(),
        Some(3)
    );
}
