//! Issue 28 item 3: HTTP/2 control-frame floods against `load --http2`. A raw-frame
//! Python server on loopback (tests/data/h2_flood.py) floods PING, SETTINGS or
//! empty CONTINUATION frames and never reads. Before, every ACK was queued without
//! bound (2.0–2.7 GB in 25 s); now each such connection ends with GOAWAY
//! ENHANCE_YOUR_CALM (RFC 9113 §10.5, as nghttp2 and the h2 crate do), its
//! requests count as protocol errors, the run says why, and memory stays small.

use std::process::Command;
use std::time::Duration;

use crate::hostile_py::{measure_cmd, Measured, PyServer};

/// `load --http2` for 4 s against a flooding server, under a 4 GB address-space
/// limit (so a regression fails instead of eating the machine).
fn flooded(mode: &str) -> Measured {
    let server = PyServer::start("h2_flood.py", &[mode]);
    let url = format!("http://127.0.0.1:{}/", server.port);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 4000000; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_latscope"))
        .args(["load", "--http2", "-c", "2", "-d", "4s", "--timeout", "3s"])
        .args(["--threads", "1", "--no-save", "--json", &url]);
    crate::util::echo_panics();
    measure_cmd(cmd, Duration::from_secs(60))
}

fn check(mode: &str) {
    let m = flooded(mode);
    assert_ne!(m.code(), Some(101), "{mode}: a panic: {}", m.stderr());
    assert!(
        matches!(m.code(), Some(0 | 1)),
        "{mode}: exit {:?}: {}",
        m.code(),
        m.stderr()
    );
    assert!(
        m.peak_mib() < 200,
        "{mode}: peak memory {} MiB",
        m.peak_mib()
    );
    let err = m.stderr();
    assert!(err.contains("ENHANCE_YOUR_CALM"), "{mode}: {err}");
    let v: serde_json::Value = serde_json::from_str(&m.stdout())
        .unwrap_or_else(|e| panic!("{mode}: not JSON ({e}): {}", m.stdout()));
    assert!(v["h2_flood_connections"].as_u64().unwrap_or(0) >= 1, "{v}");
    assert!(v["errors"]["protocol"].as_u64().unwrap_or(0) >= 1, "{v}");
    // Ended by the flood rule, not left to time out.
    assert_eq!(v["errors"]["timeout"].as_u64().unwrap_or(0), 0, "{v}");
}

#[test]
fn a_ping_flood_ends_the_connection_not_the_memory() {
    check("ping");
}

#[test]
fn a_settings_flood_ends_the_connection_not_the_memory() {
    check("settings");
}

#[test]
fn a_continuation_flood_ends_the_connection() {
    check("continuation");
}
