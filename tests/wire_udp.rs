//! The wire carries UDP as it carries TCP (issue 20): datagrams to a server inside
//! the wire's namespace see the configured RTT and loss, and the lab's HTTP/3 over
//! `--rtt 40ms` shows QUIC's round trips — handshake ≈ 1 RTT, fresh TTFB on
//! `/delay/20ms` ≈ 2 RTT + 20 ms, a resumed 0-RTT request ≈ 1 RTT + 20 ms (RFC 9000,
//! section 7; RFC 9001, section 4.6.1). Root only; one wire at a time.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use latscope::lab::wire::{Wire, WireOptions};
use latscope::lab::{self, LabOptions, LabTls};

use crate::util_h3::{client_on, connect};
use crate::util_require::require_tun;
use crate::util_wire::{assert_near, lock, p50_ms, IO_TIMEOUT};

/// A UDP echo server on the wire's server side (port 0): answers every datagram
/// until the wire's namespace socket is closed by the test's end (bounded: it stops
/// after `limit` datagrams or 30 s).
fn echo_on(wire: &Wire, limit: usize) -> SocketAddr {
    let sock = wire.bind_udp(0).expect("binds UDP inside the namespace");
    let addr = sock.local_addr().unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(30);
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while n < limit && Instant::now() < end {
            if let Ok((len, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(&buf[..len], from);
                n += 1;
            }
        }
    });
    addr
}

/// `--rtt 40ms`: a UDP datagram's round trip to an echo server on the wire takes
/// ≈ 40 ms, as a TCP round trip does; the wire counts the datagrams.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn udp_round_trips_see_the_rtt() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let wire = Wire::start(WireOptions {
        rtt: Duration::from_millis(40),
        ..WireOptions::default()
    })
    .expect("wire starts");
    let server = echo_on(&wire, 100);
    let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
    sock.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut rtts = Vec::new();
    let mut buf = [0u8; 64];
    for i in 0..10u8 {
        let t = Instant::now();
        sock.send_to(&[i; 32], server).unwrap();
        let (len, from) = sock.recv_from(&mut buf).expect("the echo comes back");
        rtts.push(t.elapsed());
        assert_eq!((len, from, buf[0]), (32, server, i));
    }
    let rtt = p50_ms(rtts);
    eprintln!(
        "udp echo over rtt 40ms: p50 {rtt:.1} ms; wire {:?}",
        wire.stats()
    );
    assert_near("UDP round trip p50", rtt, 40.0, 15.0);
    let stats = wire.stats();
    assert!(stats.to_server.delivered >= 10 && stats.to_host.delivered >= 10);
}

/// `--loss 30%` (seeded) drops datagrams both ways: of 200 echoes about
/// 0.7 × 0.7 = 49 % come back, and the wire counts the lost ones.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn udp_datagrams_are_lost_as_configured() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let wire = Wire::start(WireOptions {
        rtt: Duration::from_millis(2),
        loss_pct: 30.0,
        seed: Some(7),
        ..WireOptions::default()
    })
    .expect("wire starts");
    let server = echo_on(&wire, 400);
    let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let mut buf = [0u8; 64];
    let mut back = 0;
    for i in 0..200u32 {
        sock.send_to(&i.to_be_bytes(), server).unwrap();
        // Wait for an echo at most 60 ms (30 RTT), draining whatever arrives.
        let end = Instant::now() + Duration::from_millis(60);
        while Instant::now() < end {
            if let Ok((4, _)) = sock.recv_from(&mut buf) {
                back += 1;
                if buf[..4] == i.to_be_bytes() {
                    break;
                }
            }
        }
    }
    let stats = wire.stats();
    eprintln!("udp over loss 30%: {back}/200 echoes; wire {stats:?}");
    assert!((60..=140).contains(&back), "{back} of 200 came back");
    assert!(
        stats.to_server.lost >= 30 && stats.to_host.lost >= 15,
        "{stats:?}"
    );
}

/// The lab's HTTP/3 on the wire (`--rtt 40ms`): the QUIC handshake ≈ 1 RTT, a
/// fresh `/delay/20ms` ≈ 2 RTT + 20 ms to the end of its response, a request on the
/// open connection ≈ 1 RTT + 20 ms, and a resumed connection sending its request as
/// 0-RTT data ≈ 1 RTT + 20 ms from the start — one round trip less than fresh.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn h3_over_the_wire_counts_quic_round_trips() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let wire = Wire::start(WireOptions {
        rtt: Duration::from_millis(40),
        ..WireOptions::default()
    })
    .expect("wire starts");
    let server_ip = wire.server_ip().to_string();
    let listener = wire.bind_listener(0).expect("binds TCP");
    let udp = wire
        .bind_udp(listener.local_addr().unwrap().port())
        .expect("binds UDP on the same port");
    let tls = LabTls::self_signed(std::slice::from_ref(&server_ip)).unwrap();
    let lab = lab::spawn_with(
        listener,
        Some(udp),
        LabOptions {
            tls: Some(tls),
            http3: true,
            ..LabOptions::default()
        },
    )
    .expect("lab starts");
    let addr = lab.addr();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut handshakes, mut fresh, mut reused, mut resumed) = (vec![], vec![], vec![], vec![]);
    rt.block_on(async {
        for _ in 0..5 {
            // A new endpoint: nothing to resume.
            let endpoint = client_on(lab.cert_pem().unwrap(), "0.0.0.0:0");
            let t = Instant::now();
            let mut c = connect(&endpoint, addr, &server_ip, false).await.unwrap();
            handshakes.push(t.elapsed());
            let r = c.get("/delay/20ms").await.unwrap();
            assert_eq!(r.status, 200);
            fresh.push(t.elapsed());
            let r = c.get("/delay/20ms").await.unwrap();
            reused.push(r.elapsed);
            c.quic.close(0u32.into(), b"");
            // The same endpoint again: resumed, the request as 0-RTT data.
            let t = Instant::now();
            let mut c = connect(&endpoint, addr, &server_ip, true).await.unwrap();
            let r = c.get("/delay/20ms").await.unwrap();
            assert_eq!(r.status, 200);
            resumed.push(t.elapsed());
            assert!(c.zero_rtt_accepted().await, "0-RTT accepted");
            c.quic.close(0u32.into(), b"");
            endpoint.wait_idle().await;
        }
    });
    let (handshake, fresh, reused, resumed) = (
        p50_ms(handshakes),
        p50_ms(fresh),
        p50_ms(reused),
        p50_ms(resumed),
    );
    eprintln!(
        "h3 over rtt 40ms: handshake {handshake:.1} ms, fresh /delay/20ms {fresh:.1} ms, \
         reused {reused:.1} ms, resumed 0-RTT {resumed:.1} ms; lab {:?}",
        lab.stats()
    );
    assert_near("QUIC handshake p50", handshake, 40.0, 15.0);
    assert_near("fresh request p50", fresh, 100.0, 15.0);
    assert_near("reused request p50", reused, 60.0, 15.0);
    assert_near("resumed 0-RTT request p50", resumed, 60.0, 15.0);
    assert_eq!(lab.stats().quic_resumed, 5);
}

/// `latscope lab --tls --http3 --rtt 40ms` binds its UDP twin inside the wire's
/// namespace: an HTTP/3 request to the printed URL's address works and takes ≈ 2
/// RTT fresh; SIGINT stops it with exit 0.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn lab_command_serves_http3_on_the_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let cert = crate::util::scratch().join("wire-h3-lab.pem");
    let cert_arg = cert.to_str().unwrap().to_string();
    let (mut child, url) = crate::util_wire::start_lab(&[
        "--tls",
        "--http3",
        "--rtt",
        "40ms",
        "--listen",
        "127.0.0.1:0",
        "--cert-out",
        &cert_arg,
    ]);
    let addr = crate::util_wire::url_addr(&url);
    let pem = std::fs::read_to_string(&cert).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, took) = rt.block_on(async {
        let endpoint = client_on(&pem, "0.0.0.0:0");
        let t = Instant::now();
        let mut c = connect(&endpoint, addr, &addr.ip().to_string(), false)
            .await
            .unwrap();
        let r = c.get("/status/200").await.unwrap();
        (r.status, t.elapsed())
    });
    assert_eq!(status, 200);
    assert!(
        took >= Duration::from_millis(75) && took < Duration::from_millis(200),
        "{took:?}"
    );
    child.signal(libc::SIGINT);
    assert_eq!(child.wait_for_exit(Duration::from_secs(10)), Some(0));
}
