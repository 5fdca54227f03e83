//! The HTTPS DNS record (RFC 9460): how a browser learns, before it connects, that an
//! origin serves HTTP/3 (`alpn="h3"`) and on which port. The same query, for the
//! address records, gives their TTL (`dns-cold`). One query to the system's
//! resolver (the first `nameserver` of /etc/resolv.conf, as getaddrinfo would ask),
//! over UDP, bounded by a timeout; the record's wire format parsed here (small and
//! fixed: a DNS client crate would be far bigger than what this needs).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The HTTPS resource record type (RFC 9460 §14.2).
const TYPE_HTTPS: u16 = 65;
/// The address record types (RFC 1035 §3.2.2, RFC 3596).
const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
/// SvcParamKeys read here (RFC 9460 §14.3.2).
const KEY_ALPN: u16 = 1;
const KEY_NO_DEFAULT_ALPN: u16 = 2;
const KEY_PORT: u16 = 3;
/// The longest name a pointer chain may build, and the most pointers followed.
const MAX_NAME: usize = 255;
const MAX_POINTERS: usize = 32;

/// One HTTPS record's service: where, and with which protocols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsRecord {
    /// 0: AliasMode (the record only names another host); ≥ 1: ServiceMode.
    pub priority: u16,
    /// "." means the origin's own host.
    pub target: String,
    pub alpn: Vec<String>,
    pub no_default_alpn: bool,
    pub port: Option<u16>,
}

impl HttpsRecord {
    /// The UDP port HTTP/3 is offered on for `host:port`: a ServiceMode record on the
    /// same host (target "." or the host itself) with "h3" in its alpn.
    pub fn h3_port(&self, host: &str, port: u16) -> Option<u16> {
        let same =
            self.target == "." || self.target.trim_end_matches('.').eq_ignore_ascii_case(host);
        (self.priority > 0 && same && self.alpn.iter().any(|a| a == "h3"))
            .then_some(self.port.unwrap_or(port))
    }

    /// The record in presentation form (`1 . alpn="h3,h2" port=8443`).
    pub fn presentation(&self) -> String {
        let mut s = format!("{} {}", self.priority, self.target);
        if !self.alpn.is_empty() {
            s.push_str(&format!(" alpn=\"{}\"", self.alpn.join(",")));
        }
        if self.no_default_alpn {
            s.push_str(" no-default-alpn");
        }
        if let Some(p) = self.port {
            s.push_str(&format!(" port={p}"));
        }
        s
    }
}

/// The name to query for `host:port` (RFC 9460 §9.1: `_PORT._https.host` when the
/// port is not 443).
pub fn query_name(host: &str, port: u16) -> String {
    let host = host.trim_end_matches('.');
    if port == 443 {
        host.to_string()
    } else {
        format!("_{port}._https.{host}")
    }
}

/// Looks up the HTTPS records of `host:port`. Ok(empty): none (or no such name).
pub async fn lookup(host: &str, port: u16, timeout: Duration) -> Result<Vec<HttpsRecord>, String> {
    let id = query_id();
    let query = encode_query(id, &query_name(host, port), TYPE_HTTPS)?;
    let (server, answer) = exchange(id, &query, timeout).await;
    answer
        .and_then(|m| decode_response(&m))
        .map_err(|e| format!("HTTPS record lookup via {server}: {e}"))
}

/// The TTL of `host`'s address records as the system's resolver gives it (a caching
/// resolver: the time its cached copy has left), s: the smallest over the A records
/// (AAAA when there is no A). Ok(None): no address record.
pub async fn address_ttl(host: &str, timeout: Duration) -> Result<Option<u32>, String> {
    for qtype in [TYPE_A, TYPE_AAAA] {
        let id = query_id();
        let query = encode_query(id, host, qtype)?;
        let (server, answer) = exchange(id, &query, timeout).await;
        let ttl = answer
            .and_then(|m| answer_ttl(&m, qtype))
            .map_err(|e| format!("address lookup via {server}: {e}"))?;
        if ttl.is_some() {
            return Ok(ttl);
        }
    }
    Ok(None)
}

/// Sends `query` (whose ID is `id`) to the resolver over UDP and waits, bounded by
/// `timeout`, for the answer with that ID; the resolver asked, and the answer.
async fn exchange(
    id: u16,
    query: &[u8],
    timeout: Duration,
) -> (SocketAddr, Result<Vec<u8>, String>) {
    let server = nameserver(&std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default());
    let bind: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let ask = async {
        let sock = tokio::net::UdpSocket::bind(bind)
            .await
            .map_err(|e| e.to_string())?;
        sock.connect(server).await.map_err(|e| e.to_string())?;
        sock.send(query).await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 4096];
        loop {
            let n = sock.recv(&mut buf).await.map_err(|e| e.to_string())?;
            // Not ours (a late answer to another query): keep waiting.
            if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id {
                buf.truncate(n);
                return Ok(buf);
            }
        }
    };
    let answer = match tokio::time::timeout(timeout, ask).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {timeout:?}")),
    };
    (server, answer)
}

/// A random query ID (the kernel's getrandom; a guessable one would let an off-path
/// sender spoof the answer).
fn query_id() -> u16 {
    let mut id = [0u8; 2];
    // SAFETY: writes at most 2 bytes into `id`.
    let n = unsafe { libc::getrandom(id.as_mut_ptr().cast(), 2, 0) };
    if n != 2 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return (t.subsec_nanos() ^ std::process::id()) as u16;
    }
    u16::from_be_bytes(id)
}

/// The first `nameserver` of resolv.conf, or 127.0.0.1 (resolv.conf(5)'s default).
fn nameserver(conf: &str) -> SocketAddr {
    conf.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|a| a.trim().split('%').next()?.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .next()
        .unwrap_or_else(|| (Ipv4Addr::LOCALHOST, 53).into())
}

/// A recursive query for `name`'s records of type `qtype`, with an EDNS(0) OPT
/// record offering 1,232-byte answers (RFC 6891).
fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, String> {
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        if label.len() > 63 {
            return Err(format!("DNS label longer than 63 bytes in {name}"));
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    if q.len() - 12 > MAX_NAME + 1 {
        return Err(format!("DNS name longer than 255 bytes: {name}"));
    }
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    // OPT: root name, type 41, class = UDP payload size, TTL 0, no data.
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    Ok(q)
}

/// The HTTPS records in a response's answer section (CNAMEs and other types skipped).
pub fn decode_response(msg: &[u8]) -> Result<Vec<HttpsRecord>, String> {
    answers(msg)?
        .into_iter()
        .filter(|a| a.rtype == TYPE_HTTPS)
        .map(|a| decode_rdata(msg, a.start, a.end))
        .collect()
}

/// The smallest TTL of the answer records of type `rtype` (None: none; CNAMEs on the
/// way count too, since a resolver re-asks when any of the chain expires).
fn answer_ttl(msg: &[u8], rtype: u16) -> Result<Option<u32>, String> {
    let all = answers(msg)?;
    if !all.iter().any(|a| a.rtype == rtype) {
        return Ok(None);
    }
    Ok(all
        .iter()
        .filter(|a| a.rtype == rtype || a.rtype == TYPE_CNAME)
        .map(|a| a.ttl)
        .min())
}

/// The CNAME record type (RFC 1035 §3.2.2).
const TYPE_CNAME: u16 = 5;

/// One answer record: its type, TTL and where its RDATA lies in the message.
struct Answer {
    rtype: u16,
    ttl: u32,
    start: usize,
    end: usize,
}

/// The answer section of a response (empty for NXDOMAIN); errors for a message that
/// is not a response, a truncated one, or a resolver error.
fn answers(msg: &[u8]) -> Result<Vec<Answer>, String> {
    let mut r = Reader { msg, at: 0 };
    r.u16()?;
    let flags = r.u16()?;
    let (qd, an) = (r.u16()?, r.u16()?);
    r.u16()?;
    r.u16()?;
    if flags & 0x8000 == 0 {
        return Err("the answer is not a DNS response".into());
    }
    if flags & 0x0200 != 0 {
        return Err("the answer was truncated (TCP fallback is not done)".into());
    }
    match flags & 0x000f {
        0 => {}
        3 => return Ok(Vec::new()),
        rcode => return Err(format!("the resolver answered with error code {rcode}")),
    }
    for _ in 0..qd {
        r.name()?;
        r.take(4)?;
    }
    let mut out = Vec::new();
    for _ in 0..an {
        r.name()?;
        let (rtype, _class) = (r.u16()?, r.u16()?);
        let ttl = (u32::from(r.u16()?) << 16) | u32::from(r.u16()?);
        let len = usize::from(r.u16()?);
        let start = r.at;
        r.take(len)?;
        out.push(Answer {
            rtype,
            ttl,
            start,
            end: start + len,
        });
    }
    Ok(out)
}

/// One HTTPS record's RDATA: priority, target name, SvcParams (RFC 9460 §2.2).
fn decode_rdata(msg: &[u8], start: usize, end: usize) -> Result<HttpsRecord, String> {
    let mut r = Reader {
        msg: &msg[..end],
        at: start,
    };
    let priority = r.u16()?;
    let target = r.name()?;
    let mut rec = HttpsRecord {
        priority,
        target,
        alpn: Vec::new(),
        no_default_alpn: false,
        port: None,
    };
    while r.at < end {
        let key = r.u16()?;
        let len = usize::from(r.u16()?);
        let value = r.take(len)?;
        match key {
            KEY_ALPN => {
                let mut v = value;
                while let Some((&n, rest)) = v.split_first() {
                    let n = usize::from(n);
                    if n == 0 || n > rest.len() {
                        return Err("malformed alpn in an HTTPS record".into());
                    }
                    rec.alpn
                        .push(String::from_utf8_lossy(&rest[..n]).into_owned());
                    v = &rest[n..];
                }
            }
            KEY_NO_DEFAULT_ALPN => rec.no_default_alpn = true,
            KEY_PORT if len == 2 => rec.port = Some(u16::from_be_bytes([value[0], value[1]])),
            KEY_PORT => return Err("malformed port in an HTTPS record".into()),
            _ => {}
        }
    }
    Ok(rec)
}

/// A bounds-checked cursor over a DNS message.
struct Reader<'a> {
    msg: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.msg.len());
        let end = end.ok_or("the DNS answer ends early")?;
        let s = &self.msg[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A name, following compression pointers (RFC 1035 §4.1.4); "." for the root.
    fn name(&mut self) -> Result<String, String> {
        let mut labels: Vec<String> = Vec::new();
        let mut at = self.at;
        let mut jumped = false;
        let mut total = 0;
        for _ in 0..MAX_POINTERS + MAX_NAME {
            let &len = self.msg.get(at).ok_or("the DNS answer ends in a name")?;
            match len {
                0 => {
                    if !jumped {
                        self.at = at + 1;
                    }
                    return Ok(if labels.is_empty() {
                        ".".into()
                    } else {
                        labels.join(".")
                    });
                }
                0xc0..=0xff => {
                    let &low = self
                        .msg
                        .get(at + 1)
                        .ok_or("the DNS answer ends in a name")?;
                    if !jumped {
                        self.at = at + 2;
                        jumped = true;
                    }
                    at = usize::from(len & 0x3f) << 8 | usize::from(low);
                }
                1..=63 => {
                    let n = usize::from(len);
                    let label = self
                        .msg
                        .get(at + 1..at + 1 + n)
                        .ok_or("the DNS answer ends in a name")?;
                    total += n + 1;
                    if total > MAX_NAME {
                        return Err("a DNS name longer than 255 bytes".into());
                    }
                    labels.push(String::from_utf8_lossy(label).into_owned());
                    at += 1 + n;
                }
                _ => return Err("a DNS name with a reserved label type".into()),
            }
        }
        Err("a DNS name with a compression loop".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response to `encode_query` carrying `answers` (type, rdata) for the question.
    fn response(id: u16, name: &str, answers: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let q = encode_query(id, name, TYPE_HTTPS).unwrap();
        let question = &q[12..q.len() - 11];
        let mut m = Vec::new();
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&[0x81, 0x80, 0, 1]);
        m.extend_from_slice(&(answers.len() as u16).to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m.extend_from_slice(question);
        for (t, rdata) in answers {
            m.extend_from_slice(&[0xc0, 0x0c]);
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            m.extend_from_slice(rdata);
        }
        m
    }

    /// The address records' TTL (the answers here carry 60 s): Some for an A answer,
    /// None where only other types answered; an error response stays an error.
    #[test]
    fn address_ttl_from_the_answers() {
        let a = response(
            9,
            "example.com",
            &[(TYPE_CNAME, vec![0]), (TYPE_A, vec![192, 0, 2, 1])],
        );
        assert_eq!(answer_ttl(&a, TYPE_A), Ok(Some(60)));
        let other = response(9, "example.com", &[(TYPE_HTTPS, vec![0, 1, 0])]);
        assert_eq!(answer_ttl(&other, TYPE_A), Ok(None));
        let mut failed = a.clone();
        failed[3] = 0x82; // SERVFAIL
        assert!(answer_ttl(&failed, TYPE_A).is_err());
    }

    /// RFC 9460 Appendix D.2, Figure 4 ("16 foo.example.org. alpn=h2,h3-19
    /// mandatory=ipv4hint,alpn ipv4hint=192.0.2.1"), wire format as printed there.
    #[test]
    fn decodes_the_rfc_9460_service_mode_vector() {
        let rdata: Vec<u8> = [
            &[0x00, 0x10][..],
            b"\x03foo\x07example\x03org\x00",
            &[0x00, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00, 0x04],
            &[0x00, 0x01, 0x00, 0x09, 0x02],
            b"h2",
            &[0x05],
            b"h3-19",
            &[0x00, 0x04, 0x00, 0x04, 0xc0, 0x00, 0x02, 0x01],
        ]
        .concat();
        let m = response(7, "example.com", &[(TYPE_HTTPS, rdata)]);
        let recs = decode_response(&m).unwrap();
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!(r.priority, 16);
        assert_eq!(r.target, "foo.example.org");
        assert_eq!(r.alpn, ["h2", "h3-19"]);
        assert_eq!(r.port, None);
        // A different target host and no plain "h3": nothing to probe.
        assert_eq!(r.h3_port("example.com", 443), None);
    }

    /// `1 . alpn=h3,h2 port=8443` offers h3 on 8443 of the origin's own host; AliasMode
    /// (priority 0) and records without h3 offer nothing; CNAMEs are skipped.
    #[test]
    fn h3_port_from_service_mode_on_the_same_host() {
        let mut rdata = vec![0, 1, 0];
        rdata.extend_from_slice(&[0, 1, 0, 6, 2, b'h', b'3', 2, b'h', b'2']);
        rdata.extend_from_slice(&[0, 3, 0, 2, 0x20, 0xfb]);
        let cname = b"\x03www\x07example\x03com\x00".to_vec();
        let m = response(
            9,
            "_8443._https.example.com",
            &[(5, cname), (TYPE_HTTPS, rdata)],
        );
        let recs = decode_response(&m).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].h3_port("example.com", 8443), Some(8443));
        assert_eq!(recs[0].presentation(), "1 . alpn=\"h3,h2\" port=8443");
        let alias = HttpsRecord {
            priority: 0,
            ..recs[0].clone()
        };
        assert_eq!(alias.h3_port("example.com", 8443), None);
        let h2_only = HttpsRecord {
            alpn: vec!["h2".into()],
            ..recs[0].clone()
        };
        assert_eq!(h2_only.h3_port("example.com", 8443), None);
    }

    /// RFC 9460 §9.1: `_PORT._https.` before the host unless the port is 443.
    #[test]
    fn query_names() {
        assert_eq!(query_name("example.com", 443), "example.com");
        assert_eq!(query_name("example.com.", 8443), "_8443._https.example.com");
        let q = encode_query(1, "_8443._https.example.com", TYPE_HTTPS).unwrap();
        assert_eq!(&q[12..18], b"\x05_8443");
        assert!(encode_query(1, &"a".repeat(64), TYPE_HTTPS).is_err());
    }

    /// NXDOMAIN is "no record"; errors, truncation, loops and cut messages are errors,
    /// never panics.
    #[test]
    fn bad_answers_are_errors() {
        let mut m = response(3, "x.test", &[]);
        m[3] = 0x83;
        assert_eq!(decode_response(&m).unwrap(), vec![]);
        m[3] = 0x82;
        assert!(decode_response(&m).unwrap_err().contains("error code 2"));
        let mut t = response(3, "x.test", &[]);
        t[2] |= 0x02;
        assert!(decode_response(&t).unwrap_err().contains("truncated"));
        // A pointer to itself as the answer's name.
        let mut l = response(3, "x.test", &[(TYPE_HTTPS, vec![0, 1, 0])]);
        let at = 12 + "x.test".len() + 2 + 4;
        l[at] = 0xc0;
        l[at + 1] = at as u8;
        assert!(decode_response(&l).is_err());
        let full = response(
            3,
            "x.test",
            &[(TYPE_HTTPS, vec![0, 1, 0, 0, 1, 0, 3, 2, b'h'])],
        );
        for n in 0..full.len() {
            let _ = decode_response(&full[..n]);
        }
        assert!(decode_response(&full).is_err());
        assert_eq!(
            nameserver("# x\nnameserver fe80::1%eth0\nnameserver 10.0.0.1\n"),
            "[fe80::1]:53".parse().unwrap()
        );
        assert_eq!(nameserver(""), "127.0.0.1:53".parse().unwrap());
    }
}
