//! `Alt-Svc` (RFC 7838, section 3): how a server over TCP says it also speaks HTTP/3
//! (`h3=":443"; ma=86400`). Only parsing: diagnose decides what to do with an offer.

/// One alternative service of an `Alt-Svc` field value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltService {
    /// The ALPN protocol id ("h3", "h3-29", …), percent-decoded.
    pub protocol: String,
    /// The alternative host; None when the authority names only a port (the same
    /// host as the origin).
    pub host: Option<String>,
    pub port: u16,
    /// `ma` (freshness, seconds; RFC 7838 defaults it to 24 hours).
    pub max_age: u64,
}

/// Parses an `Alt-Svc` field value (several header lines may be joined with ", ").
/// `clear` and entries that do not parse yield nothing; never fails.
pub fn parse(value: &str) -> Vec<AltService> {
    let mut out = Vec::new();
    for entry in split_outside_quotes(value, ',') {
        let mut params = split_outside_quotes(&entry, ';').into_iter();
        let Some(first) = params.next() else { continue };
        let Some((proto, authority)) = first.trim().split_once('=') else {
            continue;
        };
        let authority = authority.trim().trim_matches('"');
        let Some((host, port)) = authority.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = port.parse::<u16>() else {
            continue;
        };
        let mut max_age = 86_400;
        for p in params {
            if let Some((k, v)) = p.trim().split_once('=') {
                if k.trim().eq_ignore_ascii_case("ma") {
                    max_age = v.trim().trim_matches('"').parse().unwrap_or(max_age);
                }
            }
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        out.push(AltService {
            protocol: percent_decode(proto.trim()),
            host: (!host.is_empty()).then(|| host.to_ascii_lowercase()),
            port,
            max_age,
        });
    }
    out
}

/// The first final-version HTTP/3 offer (`h3`, not a draft's `h3-29`) that is on
/// `host` itself (no alternative host, or the same one): its port.
pub fn h3_port(value: &str, host: &str) -> Option<u16> {
    parse(value)
        .into_iter()
        .find(|a| {
            a.protocol == "h3"
                && a.max_age > 0
                && a.host
                    .as_deref()
                    .is_none_or(|h| h.eq_ignore_ascii_case(host))
        })
        .map(|a| a.port)
}

fn split_outside_quotes(s: &str, sep: char) -> Vec<String> {
    let (mut parts, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            c if c == sep && !quoted => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        parts.push(cur);
    }
    parts
}

/// `%3D` → `=` (RFC 7838 percent-encodes the protocol id's unsafe characters).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caddy's and Cloudflare's forms, drafts beside the final version, `ma`,
    /// `clear`, another host, and junk (RFC 7838, section 3).
    #[test]
    fn offers_as_servers_send_them() {
        let caddy = parse("h3=\":18443\"; ma=2592000");
        assert_eq!(
            caddy,
            vec![AltService {
                protocol: "h3".into(),
                host: None,
                port: 18443,
                max_age: 2_592_000
            }]
        );
        assert_eq!(
            h3_port("h3=\":18443\"; ma=2592000", "localhost"),
            Some(18443)
        );
        let cf = "h3-29=\":443\"; ma=86400, h3=\":8443\"; ma=86400";
        assert_eq!(h3_port(cf, "example.com"), Some(8443));
        assert_eq!(h3_port("h3-29=\":443\"", "example.com"), None);
        assert_eq!(h3_port("clear", "example.com"), None);
        assert_eq!(h3_port("h3=\"other.example:443\"", "example.com"), None);
        assert_eq!(h3_port("h3=\"EXAMPLE.com:443\"", "example.com"), Some(443));
        assert_eq!(h3_port("h3=\":443\"; ma=0", "example.com"), None);
        assert_eq!(
            h3_port("h2=\":443\", h3=\":x\", garbage", "example.com"),
            None
        );
        assert_eq!(parse("h3%3D=\":1\"")[0].protocol, "h3=");
        assert_eq!(parse("")[0..], []);
    }
}
