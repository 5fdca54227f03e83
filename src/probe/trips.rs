//! Handshake round trips, counted from the phase rows: the connect (TCP) and TLS
//! phases of new connections over the kernel's minimum RTT (`TCP_INFO`), never from
//! a difference of TTFBs (issue 30 item 3). A fresh − reused TTFB difference also
//! holds whatever the server or a proxy behind it spends on a new connection (a
//! proxy's own upstream connection, a slow accept), so it overcounts; the phase rows
//! hold only the client's handshakes. DNS is its own phase and never counts.
//!
//! What the rows should read (RFC 9293 §3.5, RFC 5246 §7.3, RFC 8446 §2): TCP one
//! round trip; TLS 1.2 two for a full handshake and one resumed; TLS 1.3 one. So a
//! fresh TLS 1.2 connection takes 3, TLS 1.3 2, a resumed TLS 1.2 one 2, plain HTTP
//! 1. Over HTTP/3 the connect phase is QUIC's joined handshake (one round trip).

use serde::{Deserialize, Serialize};

/// Below this min RTT (loopback, a LAN) a count of round trips means nothing: the
/// handshakes' CPU time is most of them.
pub const MIN_RTT_MS: f64 = 0.5;

/// Where the counts come from, as the JSON says it (`round_trips_from`).
pub const FROM_PHASES: &str = "connect + TLS phase p50 / kernel min RTT";

/// A new connection's handshakes in round trips of the path's min RTT.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HandshakeTrips {
    /// The connect phase (TCP's handshake; QUIC's over HTTP/3) / min RTT.
    pub tcp: f64,
    /// The TLS phase / min RTT (0 on plain HTTP).
    pub tls: f64,
}

impl HandshakeTrips {
    /// Counts the handshakes of a new connection whose connect phase took
    /// `connect_ms` and TLS phase `tls_ms` (p50s, or one sample's) over a path of
    /// `min_rtt_ms`; None without an RTT or below [`MIN_RTT_MS`].
    pub fn count(connect_ms: f64, tls_ms: f64, min_rtt_ms: Option<f64>) -> Option<HandshakeTrips> {
        let rtt = min_rtt_ms.filter(|r| *r >= MIN_RTT_MS)?;
        (connect_ms > 0.0).then(|| HandshakeTrips {
            tcp: connect_ms.max(0.0) / rtt,
            tls: tls_ms.max(0.0) / rtt,
        })
    }

    /// Both handshakes together.
    pub fn total(&self) -> f64 {
        self.tcp + self.tls
    }

    /// "3.0 round trips (TCP 1.0 + TLS 2.0)", or "1.0 round trips (TCP)" without a
    /// TLS phase; `connect` names the connect phase ("TCP", or "QUIC" over HTTP/3,
    /// where it holds TLS too).
    pub fn text(&self, connect: &str) -> String {
        // The parts as shown, and their sum, so that the text adds up.
        let tenths = |v: f64| (v * 10.0).round() / 10.0;
        let (tcp, tls) = (tenths(self.tcp), tenths(self.tls));
        if tls == 0.0 {
            format!("{tcp:.1} round trips ({connect})")
        } else {
            format!(
                "{:.1} round trips ({connect} {tcp:.1} + TLS {tls:.1})",
                tcp + tls
            )
        }
    }

    /// The name of the connect phase for an HTTP version: "QUIC" for "HTTP/3" (or
    /// "h3"), else "TCP".
    pub fn connect_name(http_version: &str) -> &'static str {
        if http_version == "HTTP/3" || http_version == "h3" {
            "QUIC"
        } else {
            "TCP"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(what: &str, got: f64, want: f64) {
        assert!((got - want).abs() < 0.15, "{what}: {got:.2}, wanted {want}");
    }

    /// The counts the RFCs give, from phase rows at a 20 ms RTT with a little CPU
    /// time in each TLS row: TLS 1.2 fresh 3 (1 + 2), TLS 1.3 2 (1 + 1), TLS 1.2
    /// resumed 2 (1 + 1), plain HTTP 1.
    #[test]
    fn counts_by_protocol() {
        let rtt = Some(20.0);
        let t = HandshakeTrips::count(20.3, 41.2, rtt).unwrap();
        near("TLS 1.2 fresh", t.total(), 3.0);
        near("its TLS", t.tls, 2.0);
        near(
            "TLS 1.3",
            HandshakeTrips::count(20.2, 20.9, rtt).unwrap().total(),
            2.0,
        );
        let plain = HandshakeTrips::count(20.4, 0.0, rtt).unwrap();
        near("plain HTTP", plain.total(), 1.0);
        assert_eq!(plain.text("TCP"), "1.0 round trips (TCP)");
        assert_eq!(t.text("TCP"), "3.1 round trips (TCP 1.0 + TLS 2.1)");
        // The shown parts add up: 1.005 + 2.045 reads 1.0 + 2.0 = 3.0, not 3.1.
        let t = HandshakeTrips::count(40.3, 82.0, Some(40.1)).unwrap();
        assert_eq!(t.text("TCP"), "3.0 round trips (TCP 1.0 + TLS 2.0)");
        assert_eq!(HandshakeTrips::connect_name("HTTP/3"), "QUIC");
    }

    /// Issue 30 item 3: a resumed TLS 1.2 connection whose TLS row says 21.1 ms at a
    /// ~20 ms RTT is one TLS round trip (two with TCP's) — not the 3.4 that its
    /// resumed − reused TTFB difference (68.8 ms, with a proxy's upstream connect in
    /// it) made of it.
    #[test]
    fn resumed_tls12_is_one_tls_round_trip() {
        let t = HandshakeTrips::count(20.4, 21.1, Some(20.1)).unwrap();
        near("TLS", t.tls, 1.0);
        near("TCP + TLS", t.total(), 2.0);
        // 68.8 / 20.1 = 3.4: what the TTFB difference said.
        assert!((t.total() - 68.8 / 20.1).abs() > 1.0);
    }

    /// No count without a kernel RTT, on loopback (below 0.5 ms), or without a
    /// connect phase (a reused connection).
    #[test]
    fn no_count_without_a_path() {
        assert_eq!(HandshakeTrips::count(20.0, 20.0, None), None);
        assert_eq!(HandshakeTrips::count(0.1, 0.8, Some(0.03)), None);
        assert_eq!(HandshakeTrips::count(0.0, 0.0, Some(20.0)), None);
    }
}
