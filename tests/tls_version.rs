//! Issue 30 item 6: `old-tls-version`. Real nginx on 127.0.0.1, one certificate made
//! by openssl, three servers: `ssl_protocols TLSv1.2` (nginx's default session
//! tickets: sessions resume), TLS 1.2 with tickets and the session cache off, and
//! `ssl_protocols TLSv1.3`. A full TLS 1.2 handshake takes two round trips (RFC 5246
//! §7.3), TLS 1.3's one (RFC 8446 §2): the finding fires on both 1.2 servers, says
//! whether resumption works, and stays quiet on 1.3.

use std::net::SocketAddr;

use serde_json::Value;

use crate::util::{free_port, run_json};
use crate::util_nginx::{nginx_bin, openssl_self_signed, start, temp_dir, tls_server, write_conf};

fn probe(url: &str, ca: &str) -> Value {
    let v = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "-n",
        "3",
        "--cacert",
        ca,
        url,
    ]);
    v.get("results").map_or(v.clone(), |r| r[0].clone())
}

fn old_tls(v: &Value) -> Option<&Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "old-tls-version")
}

#[test]
fn tls12_only_costs_a_round_trip_and_tls13_is_quiet() {
    let Some(bin) = nginx_bin() else {
        return;
    };
    let dir = temp_dir("tls-version");
    let crt = openssl_self_signed(&dir, "leaf");
    let ports = [free_port(), free_port(), free_port()];
    let listen = |p: u16| format!("127.0.0.1:{p}");
    write_conf(
        &dir,
        &[
            tls_server(&listen(ports[0]), &crt, "ssl_protocols TLSv1.2;"),
            tls_server(
                &listen(ports[1]),
                &crt,
                "ssl_protocols TLSv1.2; ssl_session_tickets off; ssl_session_cache off;",
            ),
            tls_server(&listen(ports[2]), &crt, "ssl_protocols TLSv1.3;"),
        ]
        .concat(),
    );
    let _nginx = start(&bin, &dir, SocketAddr::from(([127, 0, 0, 1], ports[2])));
    crate::util_nginx::wait_for_port(
        SocketAddr::from(([127, 0, 0, 1], ports[0])),
        std::time::Duration::from_secs(10),
        &dir,
    );
    let ca = crt.to_str().unwrap();
    let url = |p: u16| format!("https://localhost:{p}/");

    let v = probe(&url(ports[0]), ca);
    assert_eq!(v["tls"]["version"], "TLSv1.2", "{v}");
    let f = old_tls(&v).unwrap_or_else(|| panic!("fires on TLS 1.2: {v}"));
    assert_eq!(f["evidence"]["round_trips"], 2, "{f}");
    assert_eq!(f["evidence"]["resumption"], "works", "{f}");
    assert!(f["saving_ms"].as_f64().unwrap() > 0.0, "{f}");
    assert!(f["advice"].as_str().unwrap().contains("TLS 1.3"), "{f}");

    let v = probe(&url(ports[1]), ca);
    let f = old_tls(&v).unwrap_or_else(|| panic!("fires on TLS 1.2: {v}"));
    assert_eq!(f["evidence"]["resumption"], "none", "{f}");

    let v = probe(&url(ports[2]), ca);
    assert_eq!(v["tls"]["version"], "TLSv1.3", "{v}");
    assert!(old_tls(&v).is_none(), "quiet on TLS 1.3: {v}");
}
