//! `slow-dns` both ways (priced: the lookup, per new visitor), with a resolver that
//! answers after 120 ms — and the lookup kept out of the handshake's cost. Everything runs
//! inside a network + mount namespace this test creates (root only): loopback up,
//! /etc/resolv.conf bound to `nameserver 127.0.0.1`, a small DNS responder
//! (tests/data/slow_dns.py), the lab and latscope — no query leaves the namespace.

use std::time::Duration;

use serde_json::Value;

use crate::findings::{assert_quiet, finding, num};
use crate::util_netns::unshared;

const SCRIPT: &str = r#"
set -e
dir="$1"; latscope="$2"; responder="$3"
ip link set lo up
echo "nameserver 127.0.0.1" > "$dir/resolv.conf"
mount --bind "$dir/resolv.conf" /etc/resolv.conf
python3 "$responder" 120 "$dir/dns.ready" > /dev/null 2>&1 &
dns=$!
"$latscope" lab --listen 127.0.0.1:8080 > "$dir/lab.url" 2>/dev/null &
lab=$!
trap 'kill $dns $lab 2>/dev/null' EXIT
for _ in $(seq 200); do [ -s "$dir/lab.url" ] && [ -s "$dir/dns.ready" ] && break; sleep 0.05; done
echo SETUP-OK >&2
"$latscope" diagnose --json --no-save --no-load -n 5 http://slow.test:8080/cache/public > "$dir/slow.json"
"$latscope" diagnose --json --no-save --no-load -n 5 http://127.0.0.1:8080/cache/public > "$dir/ip.json"
"#;

#[test]
fn slow_dns_fires_with_a_slow_resolver() {
    let dir = crate::util::scratch().join(format!("latscope-slow-dns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let responder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/slow_dns.py");
    let test = "slow_dns_fires_with_a_slow_resolver";
    let args = [env!("CARGO_BIN_EXE_latscope"), responder];
    if unshared(test, SCRIPT, &dir, &args, Duration::from_secs(60)).is_none() {
        return;
    }
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
    };
    let slow = read("slow.json");
    let f = finding(&slow, "slow-dns");
    let dns = num(f, "dns_ms");
    assert!((100.0..=400.0).contains(&dns), "dns p50 {dns} ms");
    // A caching resolver near the client would save the lookup, per new visitor.
    assert_eq!(f["saving_ms"].as_f64(), Some(dns), "{f}");
    assert_eq!(f["saving_basis"], "fresh", "{f}");
    assert_eq!(slow["probe"]["addresses"][0], "127.0.0.1");
    // Issue 30 item 1: the lookup is its own phase, never a handshake cost — a 120 ms
    // DNS in front of a loopback connect is not "a new connection costs 120 ms".
    assert_quiet(
        &slow,
        "handshake-dominates",
        "a slow lookup, not a handshake",
    );
    let cost = slow["probe"]["handshake_cost_ms"].as_f64().unwrap();
    assert!(cost < 20.0, "handshake cost {cost} ms includes the lookup");
    let ip = read("ip.json");
    assert_quiet(&ip, "slow-dns", "an IP literal (no lookup)");
    let _ = std::fs::remove_dir_all(&dir);
}
