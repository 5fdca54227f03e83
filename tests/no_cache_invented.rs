//! Issue 30 item 5: no cache invented from timing. HAProxy (Debian's `haproxy`, no
//! cache configured) in front of the Python origin whose `/v/public-slow/` answers in
//! 60 ms with `Cache-Control: public, max-age=600`. With `--origin` every repeated GET
//! takes the origin's time through the proxy: nothing says a cache is there (RFC 9211
//! §2: a cache status comes from the cache), so neither `cache-status` nor
//! `cdn-not-caching` may appear — no MISS from timing alone. The other side (nginx
//! proxy_cache without a status header: hits inferred from timing) is
//! `caches_findings::hits_are_inferred_from_timing_with_origin`.

use std::process::{Command, Stdio};

use crate::findings::ids;
use crate::util::{free_port, run_json_within};
use crate::util_caches::{origin, temp_dir, wait_port};
use crate::util_require::require;
use crate::util_wire::ChildGuard;

#[test]
fn haproxy_without_a_cache_is_not_called_one() {
    if !require("haproxy") || !require("python3") {
        return;
    }
    let o = origin();
    let dir = temp_dir("haproxy");
    let port = free_port();
    let conf = dir.join("haproxy.cfg");
    std::fs::write(
        &conf,
        format!(
            "defaults\n  mode http\n  timeout connect 5s\n  timeout client 10s\n  \
             timeout server 10s\nfrontend fe\n  bind 127.0.0.1:{port}\n  \
             default_backend be\nbackend be\n  server origin 127.0.0.1:{}\n",
            o.port
        ),
    )
    .unwrap();
    let log = dir.join("stderr.log");
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("haproxy starts");
    let _haproxy = ChildGuard(child);
    wait_port(port, &log);
    let url = format!("http://127.0.0.1:{port}/v/public-slow/h");
    let origin_addr = format!("127.0.0.1:{}", o.port);
    let v = run_json_within(
        &[
            "diagnose",
            "--json",
            "--no-save",
            "--no-load",
            "-n",
            "3",
            &url,
            "--origin",
            &origin_addr,
        ],
        std::time::Duration::from_secs(60),
    );
    let found = ids(&v);
    for id in ["cache-status", "cdn-not-caching"] {
        assert!(!found.contains(&id.to_string()), "{id} in {found:?}");
    }
    assert_eq!(v["cache"]["hits"], 0, "{}", v["cache"]);
    assert!(
        !v["cache"].to_string().contains("inferred"),
        "{}",
        v["cache"]
    );
}
