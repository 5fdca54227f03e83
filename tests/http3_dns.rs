//! HTTP/3 discovered from the HTTPS DNS record (RFC 9460), as browsers learn it before
//! their first connection: an origin whose TCP responses carry no `Alt-Svc` but whose
//! record says `alpn=h3 port=9443` is probed over QUIC there. Everything runs inside a
//! network + mount namespace this test creates (root only): loopback up,
//! /etc/resolv.conf bound to `nameserver 127.0.0.1`, a small DNS responder
//! (tests/data/https_rr_dns.py), two labs and latscope — no query leaves the namespace.

use std::time::Duration;

use serde_json::Value;

use crate::findings::{assert_quiet, finding};
use crate::util_netns::unshared;

/// The lab on 8443 serves TLS over TCP only (so no `Alt-Svc`); the one on 9443 serves
/// HTTP/3 on UDP 9443. h3.test's record offers h3 on 9443, h2only.test's only h2, and
/// dead.test's h3 on UDP 9999, where nothing listens.
const SCRIPT: &str = r#"
set -e
dir="$1"; latscope="$2"; responder="$3"
ip link set lo up
echo "nameserver 127.0.0.1" > "$dir/resolv.conf"
mount --bind "$dir/resolv.conf" /etc/resolv.conf
python3 "$responder" "$dir/dns.ready" h3.test=h3,h2:9443 h2only.test=h2 dead.test=h3:9999 \
  > /dev/null 2>"$dir/dns.err" &
dns=$!
"$latscope" lab --tls --listen 127.0.0.1:8443 > "$dir/tcp.url" 2>/dev/null &
tcp=$!
"$latscope" lab --tls --http3 --listen 127.0.0.1:9443 > "$dir/h3.url" 2>/dev/null &
h3=$!
trap 'kill $dns $tcp $h3 2>/dev/null' EXIT
for _ in $(seq 200); do
  [ -s "$dir/tcp.url" ] && [ -s "$dir/h3.url" ] && [ -s "$dir/dns.ready" ] && break
  sleep 0.05
done
echo SETUP-OK >&2
for name in h3 h2only dead; do
  "$latscope" diagnose --json --no-save --no-load -n 3 -k "https://$name.test:8443/" \
    > "$dir/$name.json"
done
"#;

/// RFC 9460 §9.1 (the `_8443._https.` query name) and §7.1 (alpn, port): h3 offered
/// by the record is probed on its port and shown beside the TCP protocol, and
/// `no-http3` stays quiet; a record without h3 is said in `no-http3`; a record
/// pointing at a dead UDP port makes `http3-slower` fire with the record as evidence.
#[test]
fn https_record_offers_http3() {
    let dir = crate::util::scratch().join(format!("latscope-https-rr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let responder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/https_rr_dns.py");
    let test = "https_record_offers_http3";
    let args = [env!("CARGO_BIN_EXE_latscope"), responder];
    if unshared(test, SCRIPT, &dir, &args, Duration::from_secs(120)).is_none() {
        return;
    }
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap()
    };

    let d = read("h3.json");
    let h3 = &d["http3"];
    assert_eq!(
        h3["alt_svc"],
        Value::Null,
        "the TCP lab sends no Alt-Svc: {h3}"
    );
    assert_eq!(h3["offered_by"], "https-rr", "{h3}");
    assert_eq!(h3["https_rr"], "1 . alpn=\"h3,h2\" port=9443", "{h3}");
    assert_eq!(h3["port"], 9443, "{h3}");
    assert_eq!(h3["error"], Value::Null, "{h3}");
    assert_eq!(h3["probe"]["http_version"], "HTTP/3", "{h3}");
    let versions: Vec<&str> = d["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["http_version"].as_str())
        .collect();
    assert!(versions.contains(&"HTTP/3"), "{versions:?}");
    assert_quiet(&d, "no-http3", "h3 offered by the HTTPS record");
    assert_quiet(&d, "http3-slower", "h3 answering on the record's port");

    let d = read("h2only.json");
    assert_eq!(d["http3"]["offered"], false, "{}", d["http3"]);
    assert_eq!(d["http3"]["https_rr_checked"], true, "{}", d["http3"]);
    let f = finding(&d, "no-http3");
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("nor in its HTTPS DNS record"), "{title}");

    let d = read("dead.json");
    assert_eq!(d["http3"]["port"], 9999, "{}", d["http3"]);
    let f = finding(&d, "http3-slower");
    assert_eq!(
        f["evidence"]["https_rr"], "1 . alpn=\"h3\" port=9999",
        "{f}"
    );
    assert!(f["title"].as_str().unwrap().contains("HTTPS record"), "{f}");
    let _ = std::fs::remove_dir_all(&dir);
}
