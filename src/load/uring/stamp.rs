//! When a response's bytes arrived, from the kernel: each connection asks for
//! receive timestamps (`SO_TIMESTAMPNS`: the time the segment was queued on the
//! receiving side, for loopback the moment the server sent it), and the multishot
//! `recvmsg` writes them as a control message into the provided buffer, ahead of the
//! payload. With the arrival time read from the kernel, the worker may wait for
//! several completions per wake without lengthening any latency it records: the
//! response ends when its last bytes arrived, not when the thread woke to read them.

use std::time::{Duration, Instant, SystemTime};

/// Control-message space for one timestamp (`CMSG_SPACE(sizeof(struct timespec))`).
pub const CONTROL_LEN: u32 = 32;

/// The `msghdr` the multishot `recvmsg` describes its buffers with: no address, room
/// for one control message.
pub fn msghdr() -> Box<libc::msghdr> {
    // SAFETY: msghdr is plain old data; zeroed is a valid empty header.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_controllen = CONTROL_LEN as _;
    Box::new(m)
}

/// Asks the kernel to timestamp what `fd` receives; false when it refuses.
pub fn enable(fd: libc::c_int) -> bool {
    let one: libc::c_int = 1;
    // SAFETY: a valid socket and option value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// The receive timestamp in `control` (a recvmsg's control messages), as
/// nanoseconds since the epoch (CLOCK_REALTIME).
pub fn received_ns(control: &[u8]) -> Option<i128> {
    // SAFETY: CMSG_LEN only computes a length.
    let head = unsafe { libc::CMSG_LEN(0) } as usize;
    let mut at = 0usize;
    while at + head <= control.len() {
        // SAFETY: `head` bytes from `at` are inside `control`; read unaligned.
        let c: libc::cmsghdr = unsafe {
            control
                .as_ptr()
                .add(at)
                .cast::<libc::cmsghdr>()
                .read_unaligned()
        };
        // cmsg_len is a size_t with glibc, a u32 with musl.
        #[allow(clippy::unnecessary_cast)]
        let len = c.cmsg_len as usize;
        if len < head || at + len > control.len() {
            return None;
        }
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
            let data = &control[at + head..at + len];
            return match data.len() {
                16 => {
                    let s = i64::from_ne_bytes(data[..8].try_into().ok()?);
                    let ns = i64::from_ne_bytes(data[8..16].try_into().ok()?);
                    Some(i128::from(s) * 1_000_000_000 + i128::from(ns))
                }
                8 => {
                    let s = i32::from_ne_bytes(data[..4].try_into().ok()?);
                    let ns = i32::from_ne_bytes(data[4..8].try_into().ok()?);
                    Some(i128::from(s) * 1_000_000_000 + i128::from(ns))
                }
                _ => None,
            };
        }
        // CMSG_ALIGN: the next header starts on a size_t boundary.
        let align = std::mem::size_of::<usize>();
        at += len.div_ceil(align) * align;
    }
    None
}

/// The two clocks read together once per loop turn: kernel timestamps (realtime)
/// become instants (monotonic) by their age.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    pub now: Instant,
    wall_ns: i128,
}

impl Clocks {
    pub fn read() -> Clocks {
        let now = Instant::now();
        let wall_ns = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        Clocks { now, wall_ns }
    }

    /// The instant of a kernel timestamp: `now` less its age (a timestamp from the
    /// future, which a clock step could make, is `now`).
    pub fn instant(&self, stamp_ns: i128) -> Instant {
        let age = (self.wall_ns - stamp_ns).clamp(0, 3_600_000_000_000) as u64;
        self.now
            .checked_sub(Duration::from_nanos(age))
            .unwrap_or(self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmsg(level: i32, ty: i32, data: &[u8]) -> Vec<u8> {
        // SAFETY: CMSG_LEN and CMSG_SPACE only compute lengths.
        let (len, space) = unsafe {
            (
                libc::CMSG_LEN(data.len() as u32) as usize,
                libc::CMSG_SPACE(data.len() as u32) as usize,
            )
        };
        let head = len - data.len();
        let mut b = vec![0u8; space];
        // SAFETY: zeroed cmsghdr, written unaligned into a buffer of `space` bytes.
        let mut c: libc::cmsghdr = unsafe { std::mem::zeroed() };
        c.cmsg_len = len as _;
        c.cmsg_level = level;
        c.cmsg_type = ty;
        unsafe { b.as_mut_ptr().cast::<libc::cmsghdr>().write_unaligned(c) };
        b[head..head + data.len()].copy_from_slice(data);
        b
    }

    /// A receive timestamp is found among control messages, after another one, and
    /// turned into the instant its age says.
    #[test]
    fn reads_the_receive_timestamp() {
        let mut ts = Vec::new();
        ts.extend_from_slice(&1_700_000_000i64.to_ne_bytes());
        ts.extend_from_slice(&123_456_789i64.to_ne_bytes());
        let mut control = cmsg(libc::IPPROTO_IP, libc::IP_TOS, &[0u8; 4]);
        control.extend(cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts));
        assert_eq!(received_ns(&control), Some(1_700_000_000_123_456_789));
        assert_eq!(received_ns(&control[..20]), None);
        assert_eq!(received_ns(&[]), None);
        assert!(CONTROL_LEN as usize >= cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts).len());

        let c = Clocks::read();
        assert_eq!(
            c.instant(c.wall_ns - 5_000_000),
            c.now - Duration::from_millis(5)
        );
        assert_eq!(c.instant(c.wall_ns + 5_000_000), c.now);
    }
}
