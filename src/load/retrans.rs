//! What latscope's own HTTP/1.1 connections retransmitted, from each socket's
//! `TCP_INFO` (never the host-wide counters, which other traffic shares): the SYNs
//! (read right after connect, by the connector), what was resent before the first
//! response (the server had not taken the connection: a full accept queue drops the
//! handshake's last ACK and the request), and data resent once established (read
//! when the connection closes, into a per-thread tally the worker collects).

use std::cell::Cell;
use std::os::fd::RawFd;

thread_local! {
    /// This thread's HTTP/1.1 connections closed so far and the data segments they
    /// retransmitted after their first response.
    static DATA_RETRANS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// (connections watched, data segments they retransmitted after their first
/// response) on this thread so far.
pub fn data_retrans() -> (u64, u64) {
    DATA_RETRANS.with(|c| c.get())
}

/// Reads a connection's TCP_INFO at its first answer and when it is dropped (before
/// its socket closes: the owner declares it before the stream).
pub struct RetransWatch {
    fd: RawFd,
    syn_retrans: u32,
    /// `total_retrans` when the first response arrived.
    answered: Option<u32>,
}

impl RetransWatch {
    /// Watches socket `fd`, which resent `syn_retrans` SYNs while connecting.
    pub fn new(fd: RawFd, syn_retrans: u32) -> Self {
        RetransWatch {
            fd,
            syn_retrans,
            answered: None,
        }
    }

    /// The first response arrived: the segments resent between the connect and now
    /// (once; 0 afterwards). Only later ones count as data retransmissions.
    pub fn answered(&mut self) -> u32 {
        if self.answered.is_some() {
            return 0;
        }
        let Ok(info) = crate::net::tcp::tcp_info(&self.fd) else {
            return 0;
        };
        self.answered = Some(info.total_retrans);
        info.total_retrans.saturating_sub(self.syn_retrans)
    }
}

impl Drop for RetransWatch {
    fn drop(&mut self) {
        let Ok(info) = crate::net::tcp::tcp_info(&self.fd) else {
            return;
        };
        let base = self.answered.unwrap_or(info.total_retrans);
        let data = u64::from(info.total_retrans.saturating_sub(base));
        DATA_RETRANS.with(|c| {
            let (n, r) = c.get();
            c.set((n + 1, r + data));
        });
    }
}
