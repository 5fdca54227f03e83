//! One io_uring worker thread, closed model: this thread's VUs (`i ≡ j mod T`), each
//! with its own connection in registered-file slot `i`, loop claim → send → read →
//! record, as the epoll worker's VUs do, but as states advanced by completions. A
//! loop turn reaps every completion, feeds received bytes to each connection's
//! parser, queues the next requests' sends, hands the buffers back, and submits all
//! of it with one system call that also waits for the next completions.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::open::Open;
use super::ring::{self, BufRing};
use crate::load::conn::{io_kind, Phase};
use crate::load::engine::{Control, Prepared, ABORT};
use crate::load::http1::{H1Error, Parser};
use crate::load::recorder::{ErrorKind, Live, Outcome, Recorder};
use crate::load::retrans::RetransWatch;
use crate::load::sys::ThreadTime;
use crate::load::worker::Picker;

/// Completion kinds (the top byte of `user_data`).
const CONNECT: u64 = 1;
const SEND: u64 = 2;
const RECV: u64 = 3;
const CANCEL: u64 = 4;
/// The provided-buffer group.
const BGID: u16 = 0;
/// Each provided buffer's size: a small response in one.
const BUF_SIZE: u32 = 8 * 1024;
/// How often the recorder's second and the CPU clock are looked at, and the longest
/// wait for completions (request timeouts are checked at least this often).
const TICK: Duration = Duration::from_millis(10);
const SECOND_TICK: Duration = Duration::from_millis(100);

fn ud(kind: u64, gen: u32, i: usize) -> u64 {
    kind << 56 | (u64::from(gen) & 0xff_ffff) << 32 | i as u64
}

/// One VU and its connection.
struct Vu {
    /// Declared before `fd`: reads TCP_INFO before the socket closes.
    watch: Option<RetransWatch>,
    fd: Option<OwnedFd>,
    /// Bumped at each close: completions of an older connection are ignored.
    gen: u32,
    /// `conn_opened` was recorded for this connection.
    opened: bool,
    recv_armed: bool,
    connect_t0: Instant,
    // The request in flight.
    busy: bool,
    done: bool,
    ep: usize,
    /// When the request was due (open model) or sent (closed).
    intended: Instant,
    sent: Instant,
    deadline: Instant,
    phase: Phase,
    fresh: bool,
    retried: bool,
    paid: Option<Duration>,
    sent_bytes: usize,
    first_byte: Option<Instant>,
    parser: Parser,
    /// Bytes received but not consumed yet: a partial head or chunk line, or bytes
    /// that arrived with no request in flight.
    carry: Vec<u8>,
    picker: Picker,
}

impl Vu {
    fn new(now: Instant, seed: u64) -> Vu {
        Vu {
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
            parser: Parser::new(false),
            carry: Vec::new(),
            picker: Picker::new(seed),
        }
    }
}

struct Driver<'a, 'p> {
    // Declared before `bufs`: the ring is gone before the buffers' memory is.
    ring: IoUring,
    bufs: BufRing,
    prep: &'a Prepared<'p>,
    ctl: &'a Control,
    rec: Recorder,
    vus: Vec<Vu>,
    /// Submissions queued this turn.
    queue: Vec<squeue::Entry>,
    addr: Box<(libc::sockaddr_storage, libc::socklen_t)>,
    family: libc::c_int,
    now: Instant,
    running: usize,
    /// Successful sends post no completion (5.17+): a send either completes whole
    /// (MSG_WAITALL) or fails, so only failures need one.
    quiet_sends: bool,
    /// The open model's schedule (None: closed model).
    open: Option<Open>,
    /// This thread's VUs' run-wide indexes (the open model makes VUs as needed).
    local: Vec<usize>,
    /// VUs whose request ended this turn: they start their next one after the
    /// turn's completions (no recursion through failures that end at once).
    ready: Vec<usize>,
}

/// Runs the thread; gives the recorder back unused when the ring cannot be made.
pub fn run(
    j: usize,
    threads: usize,
    prep: &Prepared<'_>,
    ctl: &Control,
    live: &Arc<Live>,
    rec: Recorder,
) -> Result<(Recorder, ThreadTime), Box<Recorder>> {
    let local: Vec<usize> = (j..prep.plan.connections as usize)
        .step_by(threads)
        .collect();
    let n = local.len().max(1);
    let entries = (n * 2 + 16).next_power_of_two().min(4096) as u32;
    let cq = (n * 4 + 64).next_power_of_two().min(65_536) as u32;
    let Ok(ring) = ring::ring(entries, cq) else {
        return Err(Box::new(rec));
    };
    let count = (n * 2).next_power_of_two().clamp(64, 512) as u16;
    let Ok(bufs) = BufRing::new(&ring, count, BUF_SIZE, BGID) else {
        return Err(Box::new(rec));
    };
    if ring.submitter().register_files_sparse(n as u32).is_err() {
        return Err(Box::new(rec));
    }
    let (addr, family) = sockaddr(prep.connector.addr);
    let now = Instant::now();
    let quiet_sends = ring.params().is_feature_skip_cqe_on_success();
    let open = Open::new(prep, j, threads);
    let eager = if open.is_some() {
        &local[..0]
    } else {
        &local[..]
    };
    let mut d = Driver {
        ring,
        bufs,
        prep,
        ctl,
        rec,
        vus: eager.iter().map(|&i| Vu::new(now, i as u64)).collect(),
        queue: Vec::with_capacity(entries as usize),
        addr: Box::new(addr),
        family,
        now,
        running: eager.len(),
        quiet_sends: false,
        open,
        local: local.clone(),
        ready: Vec::with_capacity(n),
    };
    d.quiet_sends = quiet_sends;
    d.turns(live);
    let time = ThreadTime::now();
    live.cpu_ns.store(time.cpu_ns, Ordering::Relaxed);
    // Close every connection (their retransmissions are counted) before the ring.
    for i in 0..d.vus.len() {
        d.close(i);
    }
    let Driver { mut rec, .. } = d;
    rec.incomplete += rec.in_flight;
    rec.data_retrans = crate::load::retrans::data_retrans();
    Ok((rec.finish(Instant::now()), time))
}

fn sockaddr(a: SocketAddr) -> ((libc::sockaddr_storage, libc::socklen_t), libc::c_int) {
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
    /// The loop: until every VU is done, or the run is aborted.
    fn turns(&mut self, live: &Live) {
        for i in 0..self.vus.len() {
            self.start(i);
        }
        let mut next_second = self.now + SECOND_TICK;
        let mut next_check = self.now + TICK;
        let mut cqes: Vec<cqueue::Entry> = Vec::with_capacity(256);
        loop {
            self.dispatch();
            self.bufs.publish();
            if self.submit_queued().is_err() || self.finished() {
                break;
            }
            let mut wait = TICK;
            if let Some(due) = self.open.as_ref().and_then(|o| o.next_due) {
                wait = wait.min(due.saturating_duration_since(Instant::now()));
            }
            let ts = types::Timespec::new().nsec(wait.as_nanos() as u32);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(_) => break,
            }
            self.now = Instant::now();
            cqes.clear();
            cqes.extend(self.ring.completion());
            for c in &cqes {
                self.complete(c.user_data(), c.result(), c.flags());
            }
            let mut ready = std::mem::take(&mut self.ready);
            for &i in &ready {
                self.start(i);
            }
            ready.clear();
            // Requests that failed at once while starting wait for the next turn.
            let again = std::mem::replace(&mut self.ready, ready);
            self.ready.extend(again);
            if self.now >= next_check {
                next_check = self.now + TICK;
                self.timeouts();
                if self.ctl.phase.load(Ordering::Relaxed) == ABORT {
                    break;
                }
            }
            if self.now >= next_second {
                next_second = self.now + SECOND_TICK;
                self.rec.tick(self.now);
                live.cpu_ns
                    .store(crate::load::sys::thread_cpu_ns(), Ordering::Relaxed);
            }
        }
    }

    /// Pushes the queued submissions and submits (without waiting) when the
    /// submission queue fills; the caller's wait submits the rest.
    fn submit_queued(&mut self) -> std::io::Result<()> {
        let mut at = 0;
        while at < self.queue.len() {
            let mut sq = self.ring.submission();
            while at < self.queue.len() {
                // SAFETY: every buffer an entry points to (the pre-encoded requests,
                // the address, the provided buffers) lives as long as the ring.
                if unsafe { sq.push(&self.queue[at]) }.is_err() {
                    break;
                }
                at += 1;
            }
            drop(sq);
            if at < self.queue.len() {
                match self.ring.submit() {
                    Ok(_) => {}
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.queue.clear();
        Ok(())
    }

    /// Whether the thread's work is over: every VU done (closed model), or nothing
    /// in flight or queued and no arrival to come (open model: not before the run's
    /// planned end, unless it counts requests).
    fn finished(&self) -> bool {
        match &self.open {
            None => self.running == 0,
            Some(o) => {
                self.rec.in_flight == 0
                    && o.queue.is_empty()
                    && (!self.ctl.running() || (o.arrivals_done && self.prep.plan.count.is_some()))
            }
        }
    }

    /// Open model: queues the arrivals now due and hands them to idle VUs (connected
    /// ones first), making new VUs up to this thread's share of `-c`.
    fn dispatch(&mut self) {
        let Some(o) = self.open.as_mut() else {
            return;
        };
        if self.ctl.running() {
            let rec = &mut self.rec;
            o.schedule(self.prep, self.ctl.start, self.now, |due| rec.dropped(due));
        } else {
            // Arrivals due before the planned end that the loop had not reached yet
            // (it woke after the end) are queued too; all that were due before the
            // end but never sent are incomplete: the run ended first.
            if let (false, Some(length)) = (o.arrivals_done, self.prep.plan.run_length()) {
                let end = (self.ctl.start + length).min(self.now);
                let rec = &mut self.rec;
                o.schedule(self.prep, self.ctl.start, end, |due| rec.dropped(due));
            }
            self.rec.incomplete += o.queue.len() as u64;
            o.queue.clear();
            o.arrivals_done = true;
            o.next_due = None;
        }
        loop {
            let Some(o) = self.open.as_mut() else {
                return;
            };
            if o.queue.is_empty() {
                return;
            }
            let i = match o.warm.pop().or_else(|| o.cold.pop()) {
                Some(i) => i,
                None if self.vus.len() < self.local.len() => {
                    let seed = self.local[self.vus.len()] as u64 ^ 0x5eed;
                    self.vus.push(Vu::new(self.now, seed));
                    self.vus.len() - 1
                }
                None => return,
            };
            let Some(due) = self.open.as_mut().and_then(|o| o.queue.pop_front()) else {
                return;
            };
            self.begin(i, due);
        }
    }

    /// VU `i` starts its next request, or is done when no more may start.
    fn start(&mut self, i: usize) {
        if !self.ctl.claim() {
            self.close(i);
            if !self.vus[i].done {
                self.vus[i].done = true;
                self.running -= 1;
            }
            return;
        }
        self.begin(i, self.now);
    }

    /// VU `i` sends its next request, due at `intended`.
    fn begin(&mut self, i: usize, intended: Instant) {
        let now = self.now;
        let timeout = self.prep.plan.client.timeout;
        let v = &mut self.vus[i];
        v.ep = v.picker.pick(self.prep);
        v.busy = true;
        v.intended = intended;
        v.sent = now;
        v.deadline = now + timeout;
        v.retried = false;
        v.paid = None;
        v.first_byte = None;
        self.rec.in_flight += 1;
        self.exchange(i);
    }

    /// Sends VU `i`'s request, connecting first when it has no connection.
    fn exchange(&mut self, i: usize) {
        if self.vus[i].fd.is_some() {
            self.vus[i].fresh = false;
            self.send(i);
        } else {
            self.connect(i);
        }
    }

    fn connect(&mut self, i: usize) {
        let v = &mut self.vus[i];
        v.phase = Phase::Connect;
        v.fresh = true;
        v.connect_t0 = self.now;
        // SAFETY: plain socket(2); the result is checked.
        let fd = unsafe { libc::socket(self.family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
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
        if self
            .ring
            .submitter()
            .register_files_update(i as u32, &[fd])
            .is_err()
        {
            return self.fail(i, ErrorKind::Connect);
        }
        v.fd = Some(owned);
        let e = opcode::Connect::new(
            types::Fixed(i as u32),
            &self.addr.0 as *const _ as *const libc::sockaddr,
            self.addr.1,
        )
        .build()
        .user_data(ud(CONNECT, v.gen, i));
        self.queue.push(e);
    }

    fn connected(&mut self, i: usize, res: i32) {
        if res < 0 {
            self.close(i);
            return self.fail(i, ErrorKind::Connect);
        }
        let v = &mut self.vus[i];
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

    fn arm_recv(&mut self, i: usize) {
        let v = &mut self.vus[i];
        if v.recv_armed || v.fd.is_none() {
            return;
        }
        v.recv_armed = true;
        let e = opcode::RecvMulti::new(types::Fixed(i as u32), BGID)
            .build()
            .user_data(ud(RECV, v.gen, i));
        self.queue.push(e);
    }

    fn send(&mut self, i: usize) {
        let v = &mut self.vus[i];
        v.phase = Phase::Exchange;
        v.parser = Parser::new(self.prep.is_head[v.ep]);
        v.sent_bytes = 0;
        self.queue_send(i);
        if !self.vus[i].carry.is_empty() {
            // Bytes that came before the request are read as its response, as the
            // epoll engine reads what its buffer still holds.
            self.data(i, None);
        }
    }

    fn queue_send(&mut self, i: usize) {
        let v = &self.vus[i];
        let req = &self.prep.encoded[v.ep][v.sent_bytes..];
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
    fn complete(&mut self, user_data: u64, res: i32, flags: u32) {
        let kind = user_data >> 56;
        let gen = ((user_data >> 32) & 0xff_ffff) as u32;
        let i = (user_data & 0xffff_ffff) as usize;
        let bid = cqueue::buffer_select(flags);
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
                if v.sent_bytes < self.prep.encoded[v.ep].len() {
                    self.queue_send(i);
                }
            }
            RECV => {
                if !cqueue::more(flags) {
                    self.vus[i].recv_armed = false;
                }
                if res > 0 {
                    if let Some(b) = bid {
                        self.data(i, Some((b, res as usize)));
                        self.bufs.recycle(b);
                    }
                    self.arm_recv(i);
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

    /// Bytes for VU `i` (provided buffer `buf`, or what it carries).
    fn data(&mut self, i: usize, buf: Option<(u16, usize)>) {
        let v = &mut self.vus[i];
        let bytes = buf.map_or(&[][..], |(b, n)| self.bufs.get(b, n));
        if !v.busy {
            v.carry.extend_from_slice(bytes);
            if v.carry.len() > crate::net::http::MAX_RESPONSE_HEAD {
                self.close(i);
            }
            return;
        }
        if v.first_byte.is_none() && self.prep.raw.is_some() {
            v.first_byte = Some(self.now);
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
    fn eof(&mut self, i: usize) {
        if !self.vus[i].busy {
            return self.close(i);
        }
        match self.vus[i].parser.eof() {
            Ok(()) => self.answered(i),
            Err(e) => self.failed(i, e),
        }
    }

    /// VU `i`'s response is complete.
    fn answered(&mut self, i: usize) {
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
        if resp.close || !self.prep.plan.keepalive {
            self.close(i);
        }
        self.record(i, o);
    }

    /// VU `i`'s exchange failed: a reused connection the server had closed is
    /// retried once on a new one, as the epoll engine does.
    fn failed(&mut self, i: usize, e: H1Error) {
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
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let mut o = Outcome::failed(kind);
        o.connect = self.vus[i].paid;
        self.record(i, o);
    }

    fn record(&mut self, i: usize, o: Outcome) {
        let v = &mut self.vus[i];
        v.busy = false;
        self.rec.in_flight -= 1;
        // Latency counts from the intended time (open model), or from the send.
        self.rec
            .record(v.ep, v.intended.min(v.sent), v.sent, self.now, &o);
        match &mut self.open {
            None => self.ready.push(i),
            Some(open) if v.fd.is_some() => open.warm.push(i),
            Some(open) => open.cold.push(i),
        }
    }

    /// Requests past their timeout fail (a connect that never completed is a
    /// connect error), and their connections close.
    fn timeouts(&mut self) {
        for i in 0..self.vus.len() {
            let v = &self.vus[i];
            if v.busy && self.now >= v.deadline {
                let kind = v.phase.timeout_kind();
                self.close(i);
                let mut o = Outcome::failed(kind);
                o.connect = None;
                self.record(i, o);
            }
        }
    }

    /// Closes VU `i`'s connection: its pending receive (or connect) is cancelled,
    /// its slot emptied, its completions still to come ignored.
    fn close(&mut self, i: usize) {
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
        self.queue.retain(|e| {
            !(mine(e.get_user_data()) && (e.get_user_data() >> 32) & 0xff_ffff == u64::from(gen))
        });
        let v = &mut self.vus[i];
        v.gen = v.gen.wrapping_add(1);
        v.recv_armed = false;
        v.carry.clear();
        v.watch = None;
        drop(fd);
        let _ = self.ring.submitter().register_files_update(i as u32, &[-1]);
        if std::mem::take(&mut self.vus[i].opened) {
            self.rec.conn_closed();
        }
    }
}
