//! Issue 28 item 10: one Content-Length rule for every command (RFC 9110 §8.6,
//! RFC 9112 §6.3). A server answering `Content-Length: -1` or a value past u64 was
//! counted by `load` as a 200 success while `probe` refused the same response; now
//! both call it invalid: load counts a protocol error per request, probe fails.

use std::time::Duration;

use crate::hostile_py::measure;
use crate::util_hostile::{Hostile, Reply};

fn server(length: &'static str) -> Hostile {
    Hostile::start(move |_| {
        Reply::Bytes(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nConnection: close\r\n\r\nhello"
            )
            .into_bytes(),
        )
    })
}

#[test]
fn invalid_content_length_is_an_error_for_load_and_probe() {
    for length in ["-1", "99999999999999999999999", "5, 6"] {
        let s = server(length);
        let url = s.url("/");
        let m = measure(
            &["load", "-n", "10", "-c", "2", "--no-save", "--json", &url],
            Duration::from_secs(60),
        );
        assert_ne!(m.code(), Some(101), "{}", m.stderr());
        let v: serde_json::Value = serde_json::from_str(&m.stdout())
            .unwrap_or_else(|e| panic!("{length}: {e}: {} {}", m.stdout(), m.stderr()));
        assert_eq!(v["ok"], 0, "{length}: {v}");
        assert_eq!(v["errors"]["protocol"], 10, "{length}: {}", v["errors"]);

        let m = measure(
            &["probe", "-n", "2", "--no-save", &url],
            Duration::from_secs(60),
        );
        assert_eq!(m.code(), Some(1), "{length}: probe: {}", m.stderr());
        assert!(
            m.stderr().to_ascii_lowercase().contains("content-length"),
            "{length}: {}",
            m.stderr()
        );
    }
    // The valid case stays a success for both.
    let s = server("5");
    let m = measure(
        &["load", "-n", "10", "--no-save", "--json", &s.url("/")],
        Duration::from_secs(60),
    );
    let v: serde_json::Value = serde_json::from_str(&m.stdout()).unwrap();
    assert_eq!(v["ok"], 10, "{v}");
}
