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

/// The namespace of `dns-cold`: the slow responder as the authoritative server on
/// 127.0.0.2 (60 ms, TTL 60 s), Unbound (Debian's `unbound`) as the caching resolver
/// on 127.0.0.1 that resolv.conf names, forwarding `test.` to it. Three diagnoses of
/// `slow.test`: the first meets a cold cache, the second a warm one; then the IP.
const COLD_SCRIPT: &str = r#"
set -e
dir="$1"; latscope="$2"; responder="$3"; unbound="$4"
ip link set lo up
echo "nameserver 127.0.0.1" > "$dir/resolv.conf"
mount --bind "$dir/resolv.conf" /etc/resolv.conf
cat > "$dir/unbound.conf" <<CONF
server:
  interface: 127.0.0.1
  port: 53
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "$dir"
  pidfile: ""
  use-syslog: no
  logfile: "$dir/unbound.log"
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  do-not-query-localhost: no
  module-config: "iterator"
  local-zone: "test." nodefault
  domain-insecure: "test."
forward-zone:
  name: "test."
  forward-addr: 127.0.0.2
CONF
python3 "$responder" 60 "$dir/dns.ready" 127.0.0.2 60 > /dev/null 2>&1 &
dns=$!
"$unbound" -c "$dir/unbound.conf" > "$dir/unbound.out" 2>&1 &
resolver=$!
"$latscope" lab --listen 127.0.0.1:8080 > "$dir/lab.url" 2>/dev/null &
lab=$!
trap 'kill $dns $resolver $lab 2>/dev/null' EXIT
# Unbound answers `localhost.` itself (a default local zone): it is up when it does.
asked='import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(0.2); s.sendto(bytes.fromhex("abcd01000001000000000000096c6f63616c686f73740000010001"),("127.0.0.1",53)); s.recv(512)'
for _ in $(seq 200); do
  [ -s "$dir/lab.url" ] && [ -s "$dir/dns.ready" ] && python3 -c "$asked" 2>/dev/null && break
  sleep 0.05
done
echo SETUP-OK >&2
"$latscope" diagnose --json --no-save --no-load -n 6 http://slow.test:8080/cache/public > "$dir/cold.json"
"$latscope" diagnose --json --no-save --no-load -n 6 http://slow.test:8080/cache/public > "$dir/warm.json"
"$latscope" diagnose --json --no-save --no-load -n 6 http://127.0.0.1:8080/cache/public > "$dir/ip.json"
"#;

/// Issue 30 item 2, both ways, through a real caching resolver (Unbound) with the
/// authoritative answer 60 ms behind it: the first lookup is told apart from the
/// repeated ones (answered from Unbound's cache), `dns-cold` names it with the
/// record's TTL, and neither `cold-start` nor `slow-dns` takes it. Diagnosed again
/// within the TTL, the first lookup hits the cache: quiet; an IP literal looks
/// nothing up: no `dns` in the probe at all.
#[test]
fn a_cold_resolver_cache_is_dns_cold_not_cold_start() {
    let Some(unbound) = crate::util_require::which("unbound") else {
        crate::util_require::require("unbound");
        return;
    };
    let dir = crate::util::scratch().join(format!("latscope-dns-cold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let responder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/slow_dns.py");
    let test = "a_cold_resolver_cache_is_dns_cold_not_cold_start";
    let unbound = unbound.to_str().unwrap();
    let args = [env!("CARGO_BIN_EXE_latscope"), responder, unbound];
    if unshared(test, COLD_SCRIPT, &dir, &args, Duration::from_secs(90)).is_none() {
        return;
    }
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
    };
    let cold = read("cold.json");
    let dns = &cold["probe"]["dns"];
    let (first, repeat) = (
        dns["first_ms"].as_f64().unwrap(),
        dns["repeat_p50_ms"].as_f64().unwrap(),
    );
    assert!((55.0..=400.0).contains(&first), "{dns}");
    assert!(repeat < 20.0, "{dns}");
    let f = finding(&cold, "dns-cold");
    assert!((num(f, "first_lookup_ms") - first).abs() < 0.01, "{f}");
    let ttl = num(f, "ttl_s");
    assert!((1.0..=60.0).contains(&ttl), "the TTL Unbound gave: {f}");
    assert_eq!(f["saving_basis"], "first request", "{f}");
    assert_quiet(&cold, "cold-start", "a cold resolver cache");
    assert_quiet(&cold, "slow-dns", "repeated lookups come from the cache");

    let warm = read("warm.json");
    let first_warm = warm["probe"]["dns"]["first_ms"].as_f64().unwrap();
    assert!(first_warm < 20.0, "{}", warm["probe"]["dns"]);
    assert_quiet(&warm, "dns-cold", "a resolver cache still warm");
    let ip = read("ip.json");
    assert!(ip["probe"]["dns"].is_null(), "{}", ip["probe"]["dns"]);
    assert_quiet(&ip, "dns-cold", "an IP literal (no lookup)");
    let _ = std::fs::remove_dir_all(&dir);
}
