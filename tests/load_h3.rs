//! `load --http3` (issue 20) against the lab's HTTP/3 (`lab --tls --http3`): exact
//! counts, statuses and error kinds, `--streams` concurrent streams per QUIC
//! connection, per-endpoint recording from a scenario file, the open model, and a
//! port with nothing on UDP: a clear error within the timeout, exit 1.

use std::time::Duration;

use latscope::lab::{self, LabOptions, LabTls, RunningLab};

use crate::util::{self, json_of, output_within, run_within};

/// A TLS lab (HTTP/3 on when `http3`) and its certificate written for --cacert.
fn lab_and_ca(http3: bool, tag: &str) -> (RunningLab, String) {
    let lab = lab::spawn(LabOptions {
        tls: Some(LabTls::self_signed(&[]).unwrap()),
        http2: true,
        http3,
        ..LabOptions::default()
    })
    .expect("lab starts");
    let ca = util::scratch().join(format!("load-h3-{tag}.pem"));
    std::fs::write(&ca, lab.cert_pem().unwrap()).unwrap();
    (lab, ca.display().to_string())
}

fn load_json(args: &[&str]) -> serde_json::Value {
    let out = run_within(args, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

/// `-n 200 -c 3 --streams 4`: exactly 200 requests over 3 QUIC connections (plus
/// the check before the run), all 200s, nothing over TCP; 12 streams at once make
/// 24 requests of 50 ms take about two rounds.
#[test]
fn count_is_exact_over_quic_with_streams() {
    let (lab, ca) = lab_and_ca(true, "count");
    let j = load_json(&[
        "load",
        &lab.url("/delay/1ms"),
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "200",
        "-c",
        "3",
        "--streams",
        "4",
        "--json",
        "--no-save",
    ]);
    assert_eq!(
        (j["requests"].as_u64(), j["ok"].as_u64()),
        (Some(200), Some(200)),
        "{j}"
    );
    assert_eq!(j["statuses"]["200"], 200);
    assert_eq!(j["connections_opened"], 3);
    assert!(j["connect_ms"]["p50"].as_f64().unwrap() > 0.0, "{j}");
    let stats = lab.stats();
    assert_eq!(stats.total, 200);
    assert_eq!(stats.connections, 0, "nothing went over TCP");
    assert_eq!(stats.quic_connections, 4, "3 + the check before the run");

    let j = load_json(&[
        "load",
        &lab.url("/delay/50ms"),
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "24",
        "-c",
        "1",
        "--threads",
        "1",
        "--streams",
        "12",
        "--json",
        "--no-save",
    ]);
    assert_eq!(j["ok"], 24);
    let secs = j["duration_s"].as_f64().unwrap();
    assert!(secs < 0.6, "24 × 50 ms over 12 streams took {secs} s");
}

/// Statuses and error kinds are recorded as over TCP: per endpoint of a scenario
/// file (one VU walks them in sequence), 4xx and 5xx counted as http_4xx / http_5xx; `/reset` (the lab closes the
/// QUIC connection) is a `reset` and the next request gets a new connection.
#[test]
fn statuses_and_errors_per_endpoint() {
    let (lab, ca) = lab_and_ca(true, "statuses");
    let file = util::scratch().join("load-h3-scenario.toml");
    std::fs::write(
        &file,
        format!(
            "base_url = \"{}\"\n[load]\nconnections = 1\nrequests = 90\n\
             [[request]]\nname = \"made\"\npath = \"/status/201\"\n\
             [[request]]\nname = \"missing\"\npath = \"/status/404\"\n\
             [[request]]\nname = \"broken\"\npath = \"/status/503\"\n",
            lab.base_url()
        ),
    )
    .unwrap();
    let j = load_json(&[
        "load",
        "-f",
        file.to_str().unwrap(),
        "--http3",
        "--cacert",
        &ca,
        "--json",
        "--no-save",
    ]);
    assert_eq!(j["requests"], 90);
    let s = &j["statuses"];
    assert_eq!(
        (s["201"].as_u64(), s["404"].as_u64(), s["503"].as_u64()),
        (Some(30), Some(30), Some(30)),
        "{s}"
    );
    assert_eq!(j["errors"]["http_4xx"], 30);
    assert_eq!(j["errors"]["http_5xx"], 30);
    let eps = j["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 3);
    for e in eps {
        assert_eq!(e["requests"], 30, "{e}");
        assert!(e["latency_ms"]["p50"].as_f64().is_some(), "{e}");
    }
    assert_eq!(lab.stats().route("status"), 90);

    // Every request failing is exit 1; the JSON is still printed.
    let out = run_within(
        &[
            "load",
            &lab.url("/reset"),
            "--http3",
            "--cacert",
            &ca,
            "-n",
            "5",
            "-c",
            "1",
            "--json",
            "--no-save",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    let j = json_of(&out);
    assert_eq!(j["errors"]["reset"], 5, "{j}");
    assert_eq!(
        j["connections_opened"], 5,
        "a new connection after each reset"
    );
}

/// The open model over HTTP/3: `--rate 100 -d 1s` sends about 100 requests on
/// time, none dropped, all in the per-second timeline; thresholds judge the run
/// (a missed one exits 99).
#[test]
fn open_model_over_quic() {
    let (lab, ca) = lab_and_ca(true, "open");
    let j = load_json(&[
        "load",
        &lab.url("/delay/2ms"),
        "--http3",
        "--cacert",
        &ca,
        "--rate",
        "100",
        "-d",
        "1s",
        "--threshold",
        "p50>1ms",
        "--json",
        "--no-save",
    ]);
    let n = j["requests"].as_u64().unwrap();
    assert!((95..=101).contains(&n), "{n} requests at 100/s for 1 s");
    assert_eq!(j["ok"].as_u64(), Some(n));
    assert_eq!(j["dropped"], 0);
    assert_eq!(lab.stats().total, n);
    // The per-second timeline holds every request.
    let timeline = j["timeline"].as_array().unwrap();
    let per_second: u64 = timeline
        .iter()
        .map(|t| t["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(per_second, n);
    assert_eq!(j["thresholds"].as_array().unwrap().len(), 1);

    // A threshold the run misses (the lab answers /delay/2ms in more than 1 ms):
    // exit 99, as over TCP.
    let out = run_within(
        &[
            "load",
            &lab.url("/delay/2ms"),
            "--http3",
            "--cacert",
            &ca,
            "-n",
            "20",
            "--threshold",
            "p50<1ms",
            "--no-save",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Nothing listens on the UDP port (a TLS lab without --http3): `load --http3`
/// says so — the address, "no answer over UDP" — within its timeout and exits 1,
/// without a run of 200 timeouts; an untrusted certificate is a TLS error; an
/// http:// URL is a usage error (exit 2).
#[test]
fn no_udp_listener_is_a_clear_error_in_bounded_time() {
    let (lab, ca) = lab_and_ca(false, "noudp");
    let mut cmd = util::latscope();
    cmd.args([
        "load",
        &lab.url("/"),
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "200",
        "--timeout",
        "2s",
        "--no-save",
    ]);
    let (out, took) = output_within(cmd, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no answer over UDP"), "{err}");
    assert!(err.contains(&lab.addr().to_string()), "{err}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(lab.stats().total, 0);

    let (h3lab, _) = lab_and_ca(true, "untrusted");
    let out = run_within(
        &["load", &h3lab.url("/"), "--http3", "-n", "5", "--no-save"],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("TLS"), "{err}");

    let out = run_within(
        &[
            "load",
            "http://127.0.0.1:9/",
            "--http3",
            "-n",
            "5",
            "--no-save",
        ],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--http3 needs an https:// URL"), "{err}");
}
