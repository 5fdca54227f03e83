//! The io_uring worker's connections: a VU's state, and how a connection is opened
//! (socket, registered-file slot, ring connect), armed for multishot receive, sent
//! its pre-encoded request, fed what arrives (the one HTTP/1.1 parser), and closed
//! (its pending receive cancelled, its slot emptied, its late completions ignored).

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types};

use super::driver::{Driver, BGID};
use super::script::{self, Scripted};
use super::stamp;
use crate::load::conn::{io_kind, Phase};
use crate::load::http1::{H1Error, Parser};
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::retrans::RetransWatch;
use crate::load::worker::Picker;

/// Completion kinds (the top byte of `user_data`).
pub(super) const CONNECT: u64 = 1;
pub(super) const SEND: u64 = 2;
pub(super) const RECV: u64 = 3;
pub(super) const CANCEL: u64 = 4;

pub(super) fn ud(kind: u64, gen: u32, i: usize) -> u64 {
    kind << 56 | (u64::from(gen) & 0xff_ffff) << 32 | i as u64
}

/// One VU and its connection.
pub(super) struct Vu {
    /// Declared before `fd`: reads TCP_INFO before the socket closes.
    pub(super) watch: Option<RetransWatch>,
    pub(super) fd: Option<OwnedFd>,
    /// Bumped at each close: completions of an older connection are ignored.
    pub(super) gen: u32,
    /// `conn_opened` was recorded for this connection.
    pub(super) opened: bool,
    pub(super) recv_armed: bool,
    connect_t0: Instant,
    // The request in flight.
    pub(super) busy: bool,
    pub(super) done: bool,
    pub(super) ep: usize,
    /// When the request was due (open model) or sent (closed).
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    pub(super) deadline: Instant,
    pub(super) phase: Phase,
    pub(super) fresh: bool,
    pub(super) retried: bool,
    pub(super) paid: Option<Duration>,
    pub(super) sent_bytes: usize,
    pub(super) first_byte: Option<Instant>,
    /// When the bytes fed last arrived, by the kernel's receive timestamp.
    pub(super) arrived: Option<Instant>,
    pub(super) parser: Parser,
    /// Bytes received but not consumed yet: a partial head or chunk line, or bytes
    /// that arrived with no request in flight.
    pub(super) carry: Vec<u8>,
    pub(super) picker: Picker,
    /// Not before this instant: a connect found no file descriptor free.
    pub(super) hold_until: Option<Instant>,
    /// A scenario's VU: its variables, cookies and what its checks keep.
    pub(super) script: Option<Box<Scripted>>,
}

impl Vu {
    pub(super) fn new(now: Instant, seed: u64) -> Vu {
        Vu {
            hold_until: None,
            watch: None,
            fd: None,
            gen: 0,
            opened: false,
            recv_armed: false,
            connect_t0: now,
            busy: false,
            done: false,
            ep: 0,
            intended: now,
            sent: now,
            deadline: now,
            phase: Phase::Exchange,
            fresh: false,
            retried: false,
            paid: None,
            sent_bytes: 0,
            first_byte: None,
            arrived: None,
            parser: Parser::new(false),
            carry: Vec::new(),
            picker: Picker::new(seed),
            script: None,
        }
    }
}

pub(super) fn sockaddr(a: SocketAddr) -> ((libc::sockaddr_storage, libc::socklen_t), libc::c_int) {
    // SAFETY: sockaddr_storage is plain old data; zeroed is valid.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(&mut s as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from_ne_bytes(v4.ip().octets());
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            ((s, len), libc::AF_INET)
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut s as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            sin6.sin6_flowinfo = v6.flowinfo();
            sin6.sin6_scope_id = v6.scope_id();
            let len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            ((s, len), libc::AF_INET6)
        }
    }
}

impl Driver<'_, '_> {
    /// Sends VU `i`'s request, connecting first when it has no connection.
    pub(super) fn exchange(&mut self, i: usize) {
        if self.vus[i].fd.is_some() {
            self.vus[i].fresh = false;
            self.send(i);
        } else {
            self.connect(i);
        }
    }

    pub(super) fn connect(&mut self, i: usize) {
        let v = &mut self.vus[i];
        v.phase = Phase::Connect;
        v.fresh = true;
        v.connect_t0 = self.now;
        // SAFETY: plain socket(2); the result is checked.
        let fd = unsafe { libc::socket(self.family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            if crate::load::conn::fd_shortage(&std::io::Error::last_os_error()) {
                // No descriptor frees up until a connection closes: the VU waits
                // instead of failing in a tight loop, as on the epoll engine.
                self.vus[i].hold_until = Some(self.now + crate::load::conn::FD_BACKOFF);
            }
            return self.fail(i, ErrorKind::Connect);
        }
        // SAFETY: fd is a new socket this VU owns.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let one: libc::c_int = 1;
        // SAFETY: a valid socket and option value.
        unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        stamp::enable(fd);
        if self
            .ring
            .submitter()
            .register_files_update(i as u32, &[fd])
            .is_err()
        {
            return self.fail(i, ErrorKind::Connect);
        }
        v.fd = Some(owned);
        self.connecting += 1;
        let e = opcode::Connect::new(
            types::Fixed(i as u32),
            &self.addr.0 as *const _ as *const libc::sockaddr,
            self.addr.1,
        )
        .build()
        .user_data(ud(CONNECT, v.gen, i));
        self.queue.push(e);
    }

    pub(super) fn connected(&mut self, i: usize, res: i32) {
        if res < 0 {
            self.close(i);
            return self.fail(i, ErrorKind::Connect);
        }
        let v = &mut self.vus[i];
        self.connecting -= 1;
        let connect = self.now.saturating_duration_since(v.connect_t0);
        let fd: RawFd = v.fd.as_ref().map_or(-1, |f| f.as_raw_fd());
        let syn = crate::net::tcp::tcp_info(&fd).map_or(0, |t| t.total_retrans);
        self.rec.conn_opened(connect, None, syn);
        v.opened = true;
        v.paid = Some(connect);
        v.watch = Some(RetransWatch::new(fd, syn));
        self.arm_recv(i);
        self.send(i);
    }

    pub(super) fn arm_recv(&mut self, i: usize) {
        let v = &mut self.vus[i];
        if v.recv_armed || v.fd.is_none() {
            return;
        }
        v.recv_armed = true;
        let e = opcode::RecvMsgMulti::new(types::Fixed(i as u32), &*self.msg, BGID)
            .build()
            .user_data(ud(RECV, v.gen, i));
        self.queue.push(e);
    }

    pub(super) fn send(&mut self, i: usize) {
        let v = &mut self.vus[i];
        v.phase = Phase::Exchange;
        v.parser = script::parser(self.prep, v);
        v.sent_bytes = 0;
        v.arrived = None;
        self.queue_send(i);
        if !self.vus[i].carry.is_empty() {
            // Bytes that came before the request are read as its response, as the
            // epoll engine reads what its buffer still holds.
            self.data(i, None);
        }
    }

    pub(super) fn queue_send(&mut self, i: usize) {
        self.script_sends(i, 1);
        let v = &self.vus[i];
        let req = &script::request(self.prep, v)[v.sent_bytes..];
        let mut e = opcode::Send::new(types::Fixed(i as u32), req.as_ptr(), req.len() as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .user_data(ud(SEND, v.gen, i));
        if self.quiet_sends {
            e = e.flags(squeue::Flags::SKIP_SUCCESS);
        }
        self.queue.push(e);
    }

    /// One completion.
    pub(super) fn complete(&mut self, user_data: u64, res: i32, flags: u32) {
        let kind = user_data >> 56;
        let gen = ((user_data >> 32) & 0xff_ffff) as u32;
        let i = (user_data & 0xffff_ffff) as usize;
        let bid = cqueue::buffer_select(flags);
        if kind == SEND {
            // A scenario VU's own request buffer may be let go once no send of it
            // is with the kernel (its completion comes also for an old connection).
            self.script_sends(i, -1);
        }
        let current = self
            .vus
            .get(i)
            .is_some_and(|v| v.gen & 0xff_ffff == gen && v.fd.is_some());
        if !current || kind == CANCEL {
            if let Some(b) = bid {
                self.bufs.recycle(b);
            }
            return;
        }
        match kind {
            CONNECT => self.connected(i, res),
            SEND => {
                let v = &mut self.vus[i];
                if !v.busy {
                    return;
                }
                if res < 0 {
                    let e = std::io::Error::from_raw_os_error(-res);
                    return self.failed(i, H1Error::Io(e));
                }
                v.sent_bytes += res as usize;
                if v.sent_bytes < script::request(self.prep, v).len() {
                    self.queue_send(i);
                }
            }
            RECV => {
                if !cqueue::more(flags) {
                    self.vus[i].recv_armed = false;
                }
                if res > 0 {
                    let Some(b) = bid else {
                        return self.arm_recv(i);
                    };
                    let (n, at) = self.received(b, res as usize);
                    if n > 0 {
                        self.vus[i].arrived = at;
                        self.data(i, Some((b, n)));
                        self.bufs.recycle(b);
                        self.arm_recv(i);
                    } else {
                        // No payload: the server closed (EOF ends the multishot).
                        self.bufs.recycle(b);
                        self.eof(i);
                    }
                } else if res == 0 {
                    self.eof(i);
                } else if res == -libc::ENOBUFS {
                    self.arm_recv(i);
                } else if res != -libc::ECANCELED {
                    let e = std::io::Error::from_raw_os_error(-res);
                    if self.vus[i].busy {
                        self.failed(i, H1Error::Io(e));
                    } else {
                        self.close(i);
                    }
                }
            }
            _ => {}
        }
    }

    /// What multishot recvmsg wrote into buffer `b` (`len` bytes with its header):
    /// the payload's length, and when it arrived (None: no kernel timestamp).
    fn received(&mut self, b: u16, len: usize) -> (usize, Option<Instant>) {
        let Ok(out) = types::RecvMsgOut::parse(self.bufs.get(b, len), &self.msg) else {
            return (0, None);
        };
        let at = stamp::received_ns(out.control_data()).map(|ns| self.clocks.instant(ns));
        self.stamped = at.is_some();
        (out.payload_data().len(), at)
    }

    /// Bytes for VU `i` (the payload in provided buffer `buf`, or what it carries).
    pub(super) fn data(&mut self, i: usize, buf: Option<(u16, usize)>) {
        let v = &mut self.vus[i];
        let bytes = buf.map_or(&[][..], |(b, n)| self.bufs.payload(b, n));
        if !v.busy {
            v.carry.extend_from_slice(bytes);
            if v.carry.len() > crate::net::http::MAX_RESPONSE_HEAD {
                self.close(i);
            }
            return;
        }
        if v.first_byte.is_none() && self.prep.raw.is_some() {
            v.first_byte = Some(v.arrived.unwrap_or(self.now));
        }
        let r = if v.carry.is_empty() {
            v.parser.feed(bytes).map(|used| {
                if used < bytes.len() {
                    v.carry.extend_from_slice(&bytes[used..]);
                }
            })
        } else {
            v.carry.extend_from_slice(bytes);
            v.parser.feed(&v.carry).map(|used| {
                v.carry.drain(..used);
            })
        };
        match r {
            Err(e) => self.failed(i, e),
            Ok(()) if self.vus[i].parser.is_done() => self.answered(i),
            Ok(()) => {}
        }
    }

    /// The server closed VU `i`'s connection.
    pub(super) fn eof(&mut self, i: usize) {
        if !self.vus[i].busy {
            return self.close(i);
        }
        match self.vus[i].parser.eof() {
            Ok(()) => self.answered(i),
            Err(e) => self.failed(i, e),
        }
    }

    /// VU `i`'s response is complete.
    pub(super) fn answered(&mut self, i: usize) {
        let v = &mut self.vus[i];
        let resp = v.parser.response();
        if v.fresh {
            let early = v.watch.as_mut().map_or(0, |w| w.answered());
            if early > 0 {
                self.rec.early_retrans(early);
            }
        }
        let o = Outcome {
            status: resp.status,
            error: ErrorKind::of_status(resp.status),
            bytes: resp.bytes,
            cache: resp.cache,
            first_byte: v.first_byte,
            connect: v.paid,
            tls: None,
        };
        // The response ended when its last bytes arrived (the kernel's timestamp),
        // however long the thread took to read them.
        let end = v
            .arrived
            .take()
            .map_or(self.now, |t| t.max(v.sent).min(self.now));
        if resp.close || !self.prep.plan.keepalive {
            self.close(i);
        }
        self.record_at(i, o, end);
    }

    /// VU `i`'s exchange failed: a reused connection the server had closed is
    /// retried once on a new one, as the epoll engine does.
    pub(super) fn failed(&mut self, i: usize, e: H1Error) {
        self.close(i);
        let v = &mut self.vus[i];
        let kind = match e {
            H1Error::EmptyEof if !v.fresh && !v.retried => {
                v.retried = true;
                return self.exchange(i);
            }
            H1Error::EmptyEof | H1Error::Truncated => ErrorKind::Reset,
            H1Error::Io(e) => io_kind(&e),
            H1Error::Protocol(_) => ErrorKind::Protocol,
        };
        self.fail(i, kind);
    }

    /// Records a failure of VU `i`'s request.
    pub(super) fn fail(&mut self, i: usize, kind: ErrorKind) {
        let mut o = Outcome::failed(kind);
        o.connect = self.vus[i].paid;
        self.record(i, o);
    }

    /// Closes VU `i`'s connection: its pending receive (or connect) is cancelled,
    /// its slot emptied, its completions still to come ignored.
    pub(super) fn close(&mut self, i: usize) {
        let v = &mut self.vus[i];
        let Some(fd) = v.fd.take() else {
            return;
        };
        if v.recv_armed {
            self.queue.push(
                opcode::AsyncCancel::new(ud(RECV, v.gen, i))
                    .build()
                    .user_data(ud(CANCEL, v.gen, i)),
            );
        }
        if !v.opened {
            self.queue.push(
                opcode::AsyncCancel::new(ud(CONNECT, v.gen, i))
                    .build()
                    .user_data(ud(CANCEL, v.gen, i)),
            );
        }
        // Submissions of this connection not handed to the kernel yet would go to
        // the slot's next socket.
        let mine = |u: u64| (u & 0xffff_ffff) as usize == i && (u >> 56) != CANCEL;
        let gen = v.gen & 0xff_ffff;
        let this = |u: u64| mine(u) && (u >> 32) & 0xff_ffff == u64::from(gen);
        if v.script.is_some() {
            // Sends never handed to the kernel post no completion.
            let unsent = self
                .queue
                .iter()
                .filter(|e| this(e.get_user_data()) && e.get_user_data() >> 56 == SEND)
                .count();
            self.script_sends(i, -(unsent as i32));
        }
        self.queue.retain(|e| !this(e.get_user_data()));
        let v = &mut self.vus[i];
        if !v.opened {
            self.connecting -= 1;
        }
        v.gen = v.gen.wrapping_add(1);
        v.recv_armed = false;
        v.carry.clear();
        v.watch = None;
        if v.script.as_deref().is_some_and(Scripted::sending) {
            // A send the kernel still holds (a server that stopped reading) keeps
            // the VU's request buffers alive until it completes: shut the socket
            // down so that it fails now instead.
            // SAFETY: `fd` is this connection's open socket, owned here.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
        drop(fd);
        let _ = self.ring.submitter().register_files_update(i as u32, &[-1]);
        if std::mem::take(&mut self.vus[i].opened) {
            self.rec.conn_closed();
        }
    }
}
