//! The lab's packet-level wire (issue 3): TCP over it sees the configured distance,
//! loss, outages and bandwidth; the devices, addresses and namespace go away on
//! exit; without root it says so. Root only (skipped with a note otherwise); one at
//! a time (`util_wire::lock`), each bounded in time.

use std::time::{Duration, Instant};

use latscope::lab::wire::{Outage, Wire, WireOptions};
use latscope::lab::{self, LabOptions, RunningLab};

use crate::util_require::require_tun;
use crate::util_wire::*;

/// A wire with `options` and a healthy lab served through it.
fn lab_on_wire(options: WireOptions) -> (Wire, RunningLab) {
    let wire = Wire::start(options).expect("wire starts");
    let listener = wire.bind_listener(0).expect("binds inside the namespace");
    let lab = lab::spawn_on(listener, LabOptions::default()).expect("lab starts");
    (wire, lab)
}

fn rtt(ms: u64) -> WireOptions {
    WireOptions {
        rtt: Duration::from_millis(ms),
        ..WireOptions::default()
    }
}

/// Asserts that nothing of a wire is left: no device of either name, no address of
/// its pair, nothing holding its namespace.
fn assert_gone(host_dev: &str, host_ip: &str, server_ip: &str, ns_inode: Option<u64>) {
    if have_ip() {
        assert_eq!(links_named(host_dev), Vec::<String>::new(), "device left");
        assert_eq!(addrs_with(host_ip), Vec::<String>::new(), "address left");
        assert_eq!(addrs_with(server_ip), Vec::<String>::new(), "address left");
    } else {
        eprintln!("note: `ip` missing; checked the device through /sys only");
    }
    assert!(
        !std::path::Path::new(&format!("/sys/class/net/{host_dev}")).exists(),
        "{host_dev} still exists"
    );
    if let Some(inode) = ns_inode {
        assert_eq!(namespace_holders(inode), Vec::<String>::new());
    }
}

/// `--rtt 40ms` against /delay/20ms over HTTP/1.1: connect ≈ 40 ms, fresh TTFB ≈
/// 100 ms, reused ≈ 60 ms, TCP_INFO rtt ≈ 40 ms, server time ≈ 20 ms, no
/// retransmissions; after teardown nothing is left behind.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn rtt_40ms_gives_real_round_trips_then_cleans_up() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (wire, lab) = lab_on_wire(rtt(40));
    assert_eq!(lab.addr().ip(), wire.server_ip());
    assert_eq!(wire.host_ip().octets()[..2], [198, 18]);
    let addr = lab.addr();
    let (mut connects, mut fresh, mut fresh_rtt) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..12 {
        let (s, conn) = fresh_get(addr, "/delay/20ms");
        assert_eq!(s.status, 200);
        connects.push(s.connect);
        fresh.push(s.ttfb);
        fresh_rtt.push(Duration::from_micros(info(&conn).rtt_us.into()));
    }
    let (_, mut conn) = fresh_get(addr, "/delay/20ms");
    let mut reused = Vec::new();
    for _ in 0..12 {
        let s = reused_get(&mut conn, addr, "/delay/20ms", &[]);
        assert_eq!(s.status, 200);
        reused.push(s.ttfb);
    }
    let tcp = info(&conn);
    let (connect, fresh, reused) = (p50_ms(connects), p50_ms(fresh), p50_ms(reused));
    let fresh_rtt = p50_ms(fresh_rtt);
    let server = reused - us_ms(tcp.min_rtt_us);
    eprintln!(
        "rtt 40ms: connect {connect:.1} ms, fresh TTFB {fresh:.1} ms, reused TTFB \
         {reused:.1} ms, TCP_INFO rtt {fresh_rtt:.1} ms after one request (after 13: \
         {:.1} ms, min {:.1} ms), server time {server:.1} ms",
        us_ms(tcp.rtt_us),
        us_ms(tcp.min_rtt_us)
    );
    assert_near("connect p50", connect, 40.0, 15.0);
    assert_near("fresh TTFB p50", fresh, 100.0, 15.0);
    assert_near("reused TTFB p50", reused, 60.0, 15.0);
    // After the handshake and one request the kernel's smoothed RTT is the wire's.
    // Later on a busy connection it also counts the server's delayed ACK (the ACK
    // rides on the response, 20 ms later), so the long-lived check is on min_rtt.
    assert_near("TCP_INFO rtt (fresh)", fresh_rtt, 40.0, 15.0);
    assert_near("TCP_INFO min rtt", us_ms(tcp.min_rtt_us), 40.0, 15.0);
    assert_near("server time", server, 20.0, 15.0);
    assert_eq!(tcp.total_retrans, 0, "a clean wire retransmits nothing");
    let stats = wire.stats();
    assert!(stats.to_server.delivered > 0 && stats.to_host.delivered > 0);
    assert_eq!(stats.to_server.lost + stats.to_host.lost, 0);

    let (dev, host_ip, server_ip) = (
        wire.host_device().to_string(),
        wire.host_ip().to_string(),
        wire.server_ip().to_string(),
    );
    let inode = wire.namespace_inode();
    assert_eq!(
        links_named(&dev).len(),
        1,
        "the device exists while running"
    );
    assert_eq!(addrs_with(&host_ip).len(), 1);
    drop(conn);
    drop(lab);
    drop(wire);
    assert_gone(&dev, &host_ip, &server_ip, Some(inode));
}

/// `latscope lab --rtt 40ms` prints the wire URL first; curl (when installed) and a
/// plain client see the distance; after SIGINT it exits 0 and leaves nothing behind.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn lab_command_serves_on_the_wire_and_cleans_up_on_sigint() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (mut child, url) = start_lab(&["--rtt", "40ms", "--listen", "127.0.0.1:0"]);
    assert!(url.starts_with("http://198.18."), "{url}");
    let addr = url_addr(&url);
    let n = match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.octets()[2],
        other => panic!("{other}"),
    };
    assert!(addr.to_string().starts_with(&format!("198.18.{n}.2:")));
    assert_ne!(addr.port(), 0);
    let dev = format!("lsw{n}h");
    assert_eq!(
        links_named(&dev).len(),
        1,
        "{dev} exists while the lab runs"
    );

    let mut connects = Vec::new();
    let mut ttfbs = Vec::new();
    for _ in 0..10 {
        let (s, _) = fresh_get(addr, "/delay/20ms");
        connects.push(s.connect);
        ttfbs.push(s.ttfb);
    }
    let (connect, ttfb) = (p50_ms(connects), p50_ms(ttfbs));
    eprintln!("latscope lab --rtt 40ms: connect {connect:.1} ms, fresh TTFB {ttfb:.1} ms");
    assert_near("connect p50", connect, 40.0, 15.0);
    assert_near("fresh TTFB p50", ttfb, 100.0, 15.0);
    if let Some((c, t)) = curl_times(&format!("{url}delay/20ms"), 10) {
        eprintln!("curl: connect {c:.1} ms, TTFB {t:.1} ms");
        assert_near("curl connect p50", c, 40.0, 15.0);
        assert_near("curl TTFB p50", t, 100.0, 15.0);
    }

    child.signal(libc::SIGINT);
    let code = child.wait_for_exit(Duration::from_secs(15));
    assert_eq!(code, Some(0), "latscope lab exits 0 on SIGINT");
    assert_gone(
        &dev,
        &format!("198.18.{n}.1"),
        &format!("198.18.{n}.2"),
        None,
    );
}

/// p50 connect and TTFB (ms) over `n` curl runs, or None without curl.
fn curl_times(url: &str, n: usize) -> Option<(f64, f64)> {
    let mut connect = Vec::new();
    let mut ttfb = Vec::new();
    for _ in 0..n {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--max-time", "10"])
            .args(["-w", "%{time_connect} %{time_starttransfer}", url])
            .output()
            .ok()?;
        if !out.status.success() {
            panic!("curl {url} failed: {out:?}");
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut parts = text.split_whitespace().map(|s| s.parse::<f64>().unwrap());
        connect.push(Duration::from_secs_f64(parts.next()?));
        ttfb.push(Duration::from_secs_f64(parts.next()?));
    }
    Some((p50_ms(connect), p50_ms(ttfb)))
}

/// `--loss 3%` (seeded): over 50 requests on one connection the client's own
/// TCP_INFO counts retransmissions, and every request still succeeds.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn loss_shows_up_as_retransmissions_in_tcp_info() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (wire, lab) = lab_on_wire(WireOptions {
        rtt: Duration::from_millis(10),
        loss_pct: 3.0,
        seed: Some(7),
        ..WireOptions::default()
    });
    assert_eq!(wire.seed(), 7);
    let addr = lab.addr();
    // Each request carries 6 KB of header, about 5 segments, so the client sends
    // ~250 data segments: at 3% some are lost and the client must resend them.
    let pad = "x".repeat(6000);
    let (_, mut conn) = fresh_get(addr, "/delay/0ms");
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..50 {
        assert!(Instant::now() < deadline, "50 requests took over 60 s");
        let s = reused_get(&mut conn, addr, "/delay/0ms", &[("x-pad", &pad)]);
        assert_eq!(s.status, 200, "request {i}");
    }
    let tcp = info(&conn);
    let stats = wire.stats();
    eprintln!("loss 3%: {tcp:?}, wire {stats:?}");
    assert!(stats.to_server.lost > 0, "{stats:?}");
    assert!(
        tcp.total_retrans > 0,
        "no retransmissions in TCP_INFO: {tcp:?}"
    );
}

/// `--outage-every 1s --outage-for 300ms`: a request sent inside an outage takes at
/// least 200 ms more (TCP's retransmission timeout); one sent between outages does
/// not.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn outages_delay_requests_caught_in_them() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let outage = Outage {
        every: Duration::from_secs(1),
        length: Duration::from_millis(300),
    };
    let (wire, lab) = lab_on_wire(WireOptions {
        rtt: Duration::from_millis(10),
        outage: Some(outage),
        ..WireOptions::default()
    });
    let addr = lab.addr();
    let (_, mut conn) = fresh_get(addr, "/delay/0ms");
    let (mut caught, mut clear) = (Vec::new(), Vec::new());
    for window in 1..=5u32 {
        let start = wire.started() + outage.every * window;
        // Inside the outage: 20 ms after it starts — unless the request before ran
        // late (a busy machine's pause can push a request sent between outages into
        // the next one, where it waits for TCP's retransmission), so that this one
        // went out after the outage ended: then it was not caught, and is not counted.
        wait_until(start + Duration::from_millis(20));
        let at = Instant::now();
        let s = reused_get(&mut conn, addr, "/delay/0ms", &[]);
        // Counted once the outage held on past the send, not when it ended just then.
        if wire.in_outage(at) && wire.in_outage(at + Duration::from_millis(20)) {
            caught.push(s.total);
        }
        // Between outages: 800 ms into the period (if the request above is done).
        let after = start + Duration::from_millis(800);
        if Instant::now() < after {
            wait_until(after);
            let at = Instant::now();
            let s = reused_get(&mut conn, addr, "/delay/0ms", &[]);
            if !wire.in_outage(at) && !wire.in_outage(at + s.total) {
                clear.push(s.total);
            }
        }
    }
    let stats = wire.stats();
    eprintln!("outages: caught {caught:?}, clear {clear:?}, wire {stats:?}");
    assert!(stats.to_server.outage + stats.to_host.outage > 0);
    assert!(
        clear.len() >= 2,
        "too few requests between outages: {clear:?}"
    );
    assert!(
        caught.len() >= 2,
        "too few requests sent inside an outage: {caught:?}"
    );
    let (caught_p50, clear_p50) = (p50_ms(caught.clone()), p50_ms(clear.clone()));
    assert_near("between outages p50", clear_p50, 10.0, 15.0);
    for c in &caught {
        assert!(
            c.as_secs_f64() * 1e3 >= clear_p50 + 200.0,
            "a request caught in an outage took only {c:?}"
        );
    }
    assert!(caught_p50 < 2000.0, "{caught:?}");
}

/// Sleeps until `t` (a scheduled send time, not a wait for a condition).
fn wait_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// `--bandwidth 8mbit`: /bytes/1MB takes about the time 1 MiB (plus TCP/IP headers)
/// needs at 8 Mbit/s, ≈ 1.09 s.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn bandwidth_paces_a_download() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (wire, lab) = lab_on_wire(WireOptions {
        bandwidth: Some(8_000_000),
        ..WireOptions::default()
    });
    let addr = lab.addr();
    let mut totals = Vec::new();
    for _ in 0..10 {
        let (s, _) = fresh_get(addr, "/bytes/1MB");
        assert_eq!(s.body, 1 << 20);
        totals.push(s.total);
    }
    // 1 MiB in 1448-byte segments of 1500-byte packets, at 8 Mbit/s.
    let packets = (1u64 << 20).div_ceil(1448);
    let expected = (packets * 1500 * 8) as f64 / 8e6 * 1e3;
    let p50 = p50_ms(totals.clone());
    eprintln!(
        "bandwidth 8mbit: /bytes/1MB p50 {p50:.0} ms (expected {expected:.0} ms), {totals:?}, {:?}",
        wire.stats()
    );
    assert_near("/bytes/1MB p50", p50, expected, 25.0);
}

/// `--rtt 20ms --jitter 10ms`: round trips land between 20 and 30 ms (plus
/// scheduling noise) and vary.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn jitter_spreads_round_trips_above_the_rtt() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_wire, lab) = lab_on_wire(WireOptions {
        rtt: Duration::from_millis(20),
        jitter: Duration::from_millis(10),
        seed: Some(3),
        ..WireOptions::default()
    });
    let mut connects = Vec::new();
    for _ in 0..20 {
        let (_, c) = connect(lab.addr());
        connects.push(c);
    }
    connects.sort();
    let (min, max) = (connects[0], connects[connects.len() - 1]);
    let p50 = p50_ms(connects.clone());
    eprintln!("jitter: connects {connects:?}");
    assert!(min >= Duration::from_millis(19), "{min:?} below the RTT");
    assert_near("connect p50", p50, 25.0, 8.0);
    assert!(
        max - min >= Duration::from_millis(3),
        "no spread: {connects:?}"
    );
}

/// Two wires at once get different address pairs and devices, each with its own
/// distance; both vanish when dropped.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn several_wires_run_side_by_side() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (near, near_lab) = lab_on_wire(rtt(10));
    let (far, far_lab) = lab_on_wire(rtt(50));
    assert_ne!(near.server_ip(), far.server_ip());
    assert_ne!(near.host_device(), far.host_device());
    let times = |lab: &RunningLab| {
        p50_ms(
            (0..10)
                .map(|_| connect(lab.addr()).1)
                .collect::<Vec<Duration>>(),
        )
    };
    assert_near("near connect", times(&near_lab), 10.0, 15.0);
    assert_near("far connect", times(&far_lab), 50.0, 15.0);
    let gone: Vec<_> = [&near, &far]
        .iter()
        .map(|w| {
            (
                w.host_device().to_string(),
                w.host_ip().to_string(),
                w.server_ip().to_string(),
                w.namespace_inode(),
            )
        })
        .collect();
    drop((near_lab, far_lab, near, far));
    for (dev, h, s, ino) in gone {
        assert_gone(&dev, &h, &s, Some(ino));
    }
}

/// A panic while a wire is up still removes it (Drop runs while unwinding).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn a_panic_still_removes_the_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let seen = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let wire = Wire::start(rtt(10)).expect("wire starts");
        *seen.lock().unwrap() = Some((
            wire.host_device().to_string(),
            wire.host_ip().to_string(),
            wire.server_ip().to_string(),
            wire.namespace_inode(),
        ));
        panic!("planted panic with the wire up");
    });
    assert!(result.is_err());
    let (dev, h, s, ino) = seen.lock().unwrap().take().expect("the wire started");
    assert_gone(&dev, &h, &s, Some(ino));
}

/// Without root, `latscope lab --rtt 40ms` says the wire needs root and exits 1.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn without_root_the_wire_says_what_it_needs() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    use std::os::unix::process::CommandExt;
    let out = crate::util::latscope()
        .args(["lab", "--rtt", "40ms", "--listen", "127.0.0.1:0"])
        .uid(65534)
        .gid(65534)
        .output()
        .expect("runs as nobody");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("needs root (CAP_NET_ADMIN)"), "{err}");
    assert!(out.stdout.is_empty(), "no URL without a wire");
}

/// `latscope lab --rtt 40ms --tls`: the certificate covers the wire address, and a
/// fresh request pays one more round trip for the TLS 1.3 handshake: connect ≈ 40
/// ms, handshake ≈ 40 ms, TTFB on /delay/20ms ≈ 140 ms.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn tls_over_the_wire_adds_one_round_trip() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let dir = crate::util::scratch().join(format!("latscope-wire-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = dir.join("lab.pem");
    let cert_arg = cert.to_str().unwrap();
    let (mut child, url) = start_lab(&[
        "--rtt",
        "40ms",
        "--tls",
        "--cert-out",
        cert_arg,
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(url.starts_with("https://198.18."), "{url}");
    let addr = url_addr(&url);
    let host = addr.ip().to_string();
    let pem = std::fs::read_to_string(&cert).expect("certificate written");
    let config = crate::util_lab::trusting(&pem, &[b"http/1.1"]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut handshakes, mut ttfbs, mut versions) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..10 {
            let start = Instant::now();
            let tcp = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connects");
            tcp.set_nodelay(true).unwrap();
            let connected = start.elapsed();
            let name = rustls::pki_types::ServerName::try_from(host.clone()).unwrap();
            let connector = tokio_rustls::TlsConnector::from(config.clone());
            let mut tls = tokio::time::timeout(IO_TIMEOUT, connector.connect(name, tcp))
                .await
                .expect("handshake in time")
                .expect("the certificate covers the wire address");
            handshakes.push(start.elapsed() - connected);
            versions.push(tls.get_ref().1.protocol_version());
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let req = format!("GET /delay/20ms HTTP/1.1\r\nHost: {addr}\r\n\r\n");
            tls.write_all(req.as_bytes()).await.unwrap();
            let mut first = [0u8; 1];
            tokio::time::timeout(IO_TIMEOUT, tls.read_exact(&mut first))
                .await
                .expect("response in time")
                .expect("response");
            ttfbs.push(start.elapsed());
        }
    });
    // The fastest of the ten: this test counts round trips, and beside the suite's
    // other tests a p50 once read 160.6 ms (handshake 49.9): every crossing a few ms
    // late while the test process or the lab waited for a CPU (the relay itself runs
    // SCHED_FIFO). A round trip too many or too few moves all ten by 40 ms.
    let (handshake, ttfb) = (min_ms(&handshakes), min_ms(&ttfbs));
    eprintln!(
        "TLS over --rtt 40ms: handshake {handshake:.1} ms (p50 {:.1}), fresh TTFB {ttfb:.1} ms (p50 {:.1})",
        p50_ms(handshakes.clone()),
        p50_ms(ttfbs.clone())
    );
    assert!(versions
        .iter()
        .all(|v| *v == Some(rustls::ProtocolVersion::TLSv1_3)));
    assert_near("fastest TLS handshake", handshake, 40.0, 15.0);
    assert_near("fastest fresh TLS TTFB", ttfb, 140.0, 15.0);
    if let Some(t) = curl_tls_ttfb(&format!("{url}delay/20ms"), cert_arg, 10) {
        eprintln!("curl --cacert: fastest fresh TTFB {t:.1} ms");
        assert_near("curl's fastest TLS TTFB", t, 140.0, 15.0);
    }
    child.signal(libc::SIGTERM);
    assert_eq!(child.wait_for_exit(Duration::from_secs(15)), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fastest TTFB (ms) of `n` curl runs trusting `cacert`, or None without curl.
fn curl_tls_ttfb(url: &str, cacert: &str, n: usize) -> Option<f64> {
    let mut ttfb = Vec::new();
    for _ in 0..n {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--max-time", "10", "--tlsv1.3"])
            .args(["--cacert", cacert, "-w", "%{time_starttransfer}", url])
            .output()
            .ok()?;
        assert!(out.status.success(), "curl {url} failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        ttfb.push(Duration::from_secs_f64(text.trim().parse().unwrap()));
    }
    Some(min_ms(&ttfb))
}

/// `latscope probe` itself over `lab --rtt 40ms` on /delay/20ms: connect ≈ 40 ms,
/// fresh TTFB ≈ 100 ms, reused ≈ 60 ms, kernel RTT ≈ 40 ms, server time ≈ 20 ms,
/// handshake ≈ one round trip; with --tls the fresh TTFB adds the TLS 1.3 round trip.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn probe_sees_the_wire_in_every_phase() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_lab, url) = start_lab(&["--listen", "127.0.0.1:0", "--rtt", "40ms"]);
    let out = crate::util::run_within(
        &[
            "probe",
            "--json",
            "--no-save",
            &format!("{url}delay/20ms"),
            "-n",
            "10",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::util::json_of(&out);
    let get = |path: &[&str]| {
        let mut cur = &v;
        for p in path {
            cur = &cur[*p];
        }
        cur.as_f64().unwrap()
    };
    let connect = get(&["fresh", "phases_ms", "connect", "p50"]);
    let fresh = get(&["fresh", "phases_ms", "ttfb", "p50"]);
    let reused = get(&["reused", "phases_ms", "ttfb", "p50"]);
    let rtt = get(&["tcp", "min_rtt_ms"]);
    let server = get(&["server_time_ms", "p50"]);
    let trips = get(&["handshake_round_trips"]);
    eprintln!(
        "probe over rtt 40ms: connect {connect:.1}, fresh {fresh:.1}, reused {reused:.1}, \
         min_rtt {rtt:.1}, server {server:.1}, handshake {trips:.2} RTT"
    );
    assert_near("connect p50", connect, 40.0, 15.0);
    assert_near("fresh TTFB p50", fresh, 100.0, 15.0);
    assert_near("reused TTFB p50", reused, 60.0, 15.0);
    assert_near("kernel min RTT", rtt, 40.0, 15.0);
    assert_near("server time p50", server, 20.0, 15.0);
    assert!((0.6..1.5).contains(&trips), "handshake {trips} round trips");
    drop(_lab);

    let dir = crate::util::scratch().join(format!("latscope-wire-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem = dir.join("lab.pem");
    let (_lab, url) = start_lab(&[
        "--listen",
        "127.0.0.1:0",
        "--rtt",
        "40ms",
        "--tls",
        "--cert-out",
        pem.to_str().unwrap(),
    ]);
    let out = crate::util::run_within(
        &[
            "probe",
            "--json",
            "--no-save",
            &format!("{url}delay/20ms"),
            "-n",
            "10",
            "--cacert",
            pem.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::util::json_of(&out);
    let fresh = v["fresh"]["phases_ms"]["ttfb"]["p50"].as_f64().unwrap();
    let tls = v["fresh"]["phases_ms"]["tls"]["p50"].as_f64().unwrap();
    eprintln!("probe over rtt 40ms with TLS: fresh TTFB {fresh:.1}, tls {tls:.1}");
    assert_near("TLS handshake p50", tls, 40.0, 15.0);
    assert_near("fresh TTFB p50 with TLS", fresh, 140.0, 20.0);
}
