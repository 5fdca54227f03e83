//! TCP connections and the kernel's view of them (`TCP_INFO`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;

/// Opens a TCP connection with `TCP_NODELAY` set, failing after `timeout`.
pub async fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("connect to {addr} timed out after {timeout:?}"),
            ))
        }
    };
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// The fields of the kernel's `struct tcp_info` that latscope reads. Times in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Smoothed round-trip time.
    pub rtt_us: u32,
    /// Round-trip time variance.
    pub rttvar_us: u32,
    /// Windowed minimum RTT (0 when the kernel does not report it).
    pub min_rtt_us: u32,
    /// Consecutive retransmission timeouts right now (not a running total).
    pub retransmits: u8,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Congestion window, in segments.
    pub snd_cwnd: u32,
    /// Retransmission timeout.
    pub rto_us: u32,
    /// Bytes retransmitted (0 on kernels that do not report it).
    pub bytes_retrans: u64,
}

/// Reads `TCP_INFO` from a connected socket. Fields beyond the length the kernel
/// filled in stay zero.
pub fn tcp_info<S: AsRawFd>(socket: &S) -> io::Result<TcpInfo> {
    // SAFETY: tcp_info is plain old data; zeroed is a valid value.
    let mut raw: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: raw is a valid, writable buffer of `len` bytes for the kernel to fill.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let filled = len as usize;
    let has = |end: usize| end <= filled;
    macro_rules! field {
        ($f:ident) => {
            if has(std::mem::offset_of!(libc::tcp_info, $f) + std::mem::size_of_val(&raw.$f)) {
                raw.$f
            } else {
                Default::default()
            }
        };
    }
    Ok(TcpInfo {
        rtt_us: field!(tcpi_rtt),
        rttvar_us: field!(tcpi_rttvar),
        min_rtt_us: field!(tcpi_min_rtt),
        retransmits: field!(tcpi_retransmits),
        total_retrans: field!(tcpi_total_retrans),
        snd_cwnd: field!(tcpi_snd_cwnd),
        rto_us: field!(tcpi_rto),
        bytes_retrans: field!(tcpi_bytes_retrans),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connect_and_read_tcp_info_on_loopback() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = tokio::spawn(async move { listener.accept().await.unwrap() });
        let stream = connect(addr, Duration::from_secs(5)).await.unwrap();
        let _server = accept.await.unwrap();
        let info = tcp_info(&stream).unwrap();
        assert!(info.rtt_us > 0, "{info:?}");
        assert!(info.snd_cwnd > 0, "{info:?}");
    }

    #[tokio::test]
    async fn refused_is_an_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = connect(addr, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
