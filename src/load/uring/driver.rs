//! One io_uring worker thread: this thread's VUs (`i ≡ j mod T`), each with its own
//! connection in registered-file slot `i`, loop claim → send → read → record (closed
//! model), or take the arrivals the schedule queues (open model, `open`), as the
//! epoll worker's VUs do, but as states advanced by completions (`exchange`). A loop
//! turn reaps every completion, feeds received bytes to each connection's parser,
//! queues the next requests' sends, hands the buffers back, and submits all of it
//! with one system call that also waits for the next completions.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, squeue, types, IoUring};

use super::exchange::{sockaddr, Vu};
use super::open::{Open, EARLY};
use super::ring::BufRing;
use super::stamp::{self, Clocks};
use crate::load::engine::{Control, Prepared, ABORT};
use crate::load::recorder::{Live, Outcome, Recorder};
use crate::load::sys::ThreadTime;

/// The provided-buffer group.
pub(super) const BGID: u16 = 0;
/// Each provided buffer's size: a small response in one.
const BUF_SIZE: u32 = 8 * 1024;
/// How often the recorder's second and the CPU clock are looked at, and the longest
/// wait for completions (request timeouts are checked at least this often).
const TICK: Duration = Duration::from_millis(10);
const SECOND_TICK: Duration = Duration::from_millis(100);
/// With receive timestamps, a wake waits for the responses expected within this
/// window at the recent pace, and no longer than the window once any came (kernel
/// 6.12+; before, the wait itself ends after it): a response's next request waits
/// at most about that long, and only when responses come faster than a few per
/// window (below, a wake per response costs little and the loop waits for one).
const BATCH_WINDOW: Duration = Duration::from_micros(500);
/// ... and for at most this share (1/n) of the requests in flight, so that the
/// connections' concurrency dips by at most about half of it while they wait: with
/// a quarter, `-c 50` kept ~41 requests outstanding against a saturated nginx (a
/// half gave more requests per CPU-second but only ~34 outstanding — a lighter load
/// than the user asked for; bench/RESULTS.md).
const BATCH_SHARE: u64 = 4;

pub(super) struct Driver<'a, 'p> {
    // Declared before `bufs`: the ring is gone before the buffers' memory is.
    pub(super) ring: IoUring,
    pub(super) bufs: BufRing,
    pub(super) prep: &'a Prepared<'p>,
    pub(super) ctl: &'a Control,
    pub(super) rec: Recorder,
    pub(super) vus: Vec<Vu>,
    /// Submissions queued this turn.
    pub(super) queue: Vec<squeue::Entry>,
    pub(super) addr: Box<(libc::sockaddr_storage, libc::socklen_t)>,
    pub(super) family: libc::c_int,
    pub(super) now: Instant,
    /// `now` and the wall clock read with it (kernel timestamps are wall-clock).
    pub(super) clocks: Clocks,
    /// The header multishot recvmsg lays its buffers out by.
    pub(super) msg: Box<libc::msghdr>,
    /// The last bytes received came with a kernel timestamp: a wake may wait for
    /// several completions without delaying any recorded end.
    pub(super) stamped: bool,
    /// Connections whose connect has not completed (its time is taken when the
    /// completion is reaped, so a wake waits for one while any is pending).
    pub(super) connecting: usize,
    /// VUs that began a request this turn: their send time is taken just before
    /// the turn's submission.
    pub(super) sending: Vec<usize>,
    /// The kernel can end a wait for several completions early (`min_wait_usec`).
    pub(super) min_wait: bool,
    /// Requests ended, and the pace they ended at over the last tick (per second).
    pub(super) ended: u64,
    pace: f64,
    pub(super) running: usize,
    /// Successful sends post no completion (5.17+): a send either completes whole
    /// (MSG_WAITALL) or fails, so only failures need one.
    pub(super) quiet_sends: bool,
    /// A scenario's sends whose completion has not been reaped (they post one:
    /// `script`): a wait counts them on top of the responses it waits for, so they
    /// do not end it early.
    pub(super) script_sends: u64,
    /// The open model's schedule (None: closed model).
    pub(super) open: Option<Open>,
    /// This thread's VUs' run-wide indexes (the open model makes VUs as needed).
    pub(super) local: Vec<usize>,
    /// VUs whose request ended this turn: they start their next one after the
    /// turn's completions (no recursion through failures that end at once).
    pub(super) ready: Vec<usize>,
}

/// Runs the thread; gives the recorder back unused, with why, when the ring cannot
/// be set up.
pub fn run(
    j: usize,
    threads: usize,
    prep: &Prepared<'_>,
    ctl: &Control,
    live: &Arc<Live>,
    rec: Recorder,
) -> Result<(Recorder, ThreadTime), (Box<Recorder>, String)> {
    let local: Vec<usize> = (j..prep.plan.connections as usize)
        .step_by(threads)
        .collect();
    let n = local.len().max(1);
    let entries = (n * 2 + 16).next_power_of_two().min(4096) as u32;
    let cq = (n * 4 + 64).next_power_of_two().min(65_536) as u32;
    let refused = |what: &str, e: std::io::Error| format!("{what}: {e}");
    let set_up = || -> Result<(IoUring, BufRing), String> {
        if super::refused_by_test(j) {
            return Err(refused(
                "the ring",
                std::io::Error::other(format!("refused by {}", super::REFUSE_ENV)),
            ));
        }
        let ring = crate::uring::ring(entries, cq).map_err(|e| refused("the ring", e))?;
        let count = (n * 2).next_power_of_two().clamp(64, 512) as u16;
        let bufs = BufRing::new(&ring, count, BUF_SIZE, BGID)
            .map_err(|e| refused("the provided buffers", e))?;
        ring.submitter()
            .register_files_sparse(n as u32)
            .map_err(|e| refused("the registered files", e))?;
        Ok((ring, bufs))
    };
    let (ring, bufs) = match set_up() {
        Ok(rb) => rb,
        Err(why) => return Err((Box::new(rec), why)),
    };
    ctl.start_line.wait();
    let (addr, family) = sockaddr(prep.connector.addr);
    let clocks = Clocks::read();
    let now = clocks.now;
    let min_wait = ring.params().is_feature_min_timeout();
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
        vus: eager
            .iter()
            .map(|&i| {
                let mut v = Vu::new(now, i as u64);
                v.script = super::script::Scripted::for_vu(prep, i);
                v
            })
            .collect(),
        queue: Vec::with_capacity(entries as usize),
        addr: Box::new(addr),
        family,
        now,
        clocks,
        msg: stamp::msghdr(),
        stamped: false,
        connecting: 0,
        sending: Vec::with_capacity(n),
        min_wait,
        ended: 0,
        pace: 0.0,
        running: eager.len(),
        quiet_sends: false,
        script_sends: 0,
        open,
        local: local.clone(),
        ready: Vec::with_capacity(n),
    };
    // A scenario's own request buffers live until their sends complete (`script`).
    d.quiet_sends = quiet_sends && prep.plan.script.is_none();
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

impl Driver<'_, '_> {
    /// The loop: until every VU is done, or the run is aborted.
    pub(super) fn turns(&mut self, live: &Live) {
        for i in 0..self.vus.len() {
            self.start(i);
        }
        let mut next_second = self.now + SECOND_TICK;
        let mut paced = (self.now, 0u64);
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
            let (want, window) = self.wanted();
            if want > 1 && !self.min_wait && !window.is_zero() {
                wait = wait.min(window);
            }
            let ts = types::Timespec::new().nsec(wait.as_nanos() as u32);
            let mut args = types::SubmitArgs::new().timespec(&ts);
            if want > 1 && self.min_wait && !window.is_zero() {
                args = args.min_wait_usec(window.as_micros() as u32);
            }
            match self.ring.submitter().submit_with_args(want, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(_) => break,
            }
            self.clocks = Clocks::read();
            self.now = self.clocks.now;
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
                let span = self.now.saturating_duration_since(paced.0).as_secs_f64();
                self.pace = (self.ended - paced.1) as f64 / span.max(1e-3);
                paced = (self.now, self.ended);
                self.rec.tick(self.now);
                live.cpu_ns
                    .store(crate::load::sys::thread_cpu_ns(), Ordering::Relaxed);
            }
        }
    }

    /// How many completions the next wait is for: with receive timestamps, a share
    /// of the responses in flight (one wake reaps several; each still ends when
    /// its bytes arrived); one while a connect is pending or without timestamps.
    /// And the window they are expected in (zero: wait for all in flight, the
    /// test hook).
    fn wanted(&self) -> (usize, Duration) {
        if !self.stamped || self.connecting > 0 {
            return (1, BATCH_WINDOW);
        }
        let (window, share) = match super::batch_by_test() {
            Some((0, _)) => return (self.rec.in_flight.max(1) as usize, Duration::ZERO),
            Some((us, share)) => (Duration::from_micros(us), share.max(1)),
            None => (BATCH_WINDOW, BATCH_SHARE),
        };
        let expected = (self.pace * window.as_secs_f64()) as u64;
        let most = self.rec.in_flight / share;
        (
            (expected.min(most).max(1) + self.script_sends) as usize,
            window,
        )
    }

    /// Pushes the queued submissions and submits (without waiting) when the
    /// submission queue fills; the caller's wait submits the rest. The requests
    /// begun this turn are sent from now on: their send time is now.
    pub(super) fn submit_queued(&mut self) -> std::io::Result<()> {
        if !self.sending.is_empty() {
            let t = Instant::now();
            let closed = self.open.is_none();
            let timeout = self.prep.plan.client.timeout;
            for &i in &self.sending {
                let v = &mut self.vus[i];
                if v.busy {
                    if closed {
                        v.intended = t;
                    }
                    v.sent = t;
                    v.deadline = t + timeout;
                }
            }
            self.sending.clear();
        }
        let mut at = 0;
        while at < self.queue.len() {
            let mut sq = self.ring.submission();
            while at < self.queue.len() {
                // SAFETY: every buffer an entry points to (the pre-encoded requests,
                // the address, the provided buffers) lives as long as the ring; a
                // scenario VU's own request lives until its send completes, or as
                // long as the ring (`script`).
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
    pub(super) fn finished(&self) -> bool {
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
    pub(super) fn dispatch(&mut self) {
        let Some(o) = self.open.as_mut() else {
            return;
        };
        if self.ctl.running() {
            let rec = &mut self.rec;
            o.schedule(self.prep, self.ctl.start, self.now, EARLY, |due| {
                rec.dropped(due)
            });
        } else {
            // Arrivals due before the planned end that the loop had not reached yet
            // (it woke after the end) are queued too; all that were due before the
            // end but never sent are incomplete: the run ended first.
            if let (false, Some(length)) = (o.arrivals_done, self.prep.plan.run_length()) {
                let end = (self.ctl.start + length).min(self.now);
                let rec = &mut self.rec;
                o.schedule(self.prep, self.ctl.start, end, Duration::ZERO, |due| {
                    rec.dropped(due)
                });
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
                    let g = self.local[self.vus.len()];
                    let mut v = Vu::new(self.now, g as u64 ^ 0x5eed);
                    v.script = super::script::Scripted::for_vu(self.prep, g);
                    self.vus.push(v);
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
    pub(super) fn start(&mut self, i: usize) {
        if let Some(t) = self.vus[i].hold_until {
            if self.now < t {
                // Looked at again next turn (turns wait at most a tick).
                self.ready.push(i);
                return;
            }
            self.vus[i].hold_until = None;
        }
        if self.ctl.running() && super::script::waits(self.prep, &mut self.vus[i]) {
            // Looked at again next turn, until the run-wide setup is over.
            self.vus[i].hold_until = Some(self.now + TICK);
            self.ready.push(i);
            return;
        }
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
    pub(super) fn begin(&mut self, i: usize, intended: Instant) {
        let now = self.now;
        let timeout = self.prep.plan.client.timeout;
        let v = &mut self.vus[i];
        v.ep = super::script::next_ep(self.prep, v);
        super::script::prepare(self.prep, v);
        v.busy = true;
        v.intended = intended;
        v.sent = now;
        v.deadline = now + timeout;
        v.retried = false;
        v.paid = None;
        v.first_byte = None;
        self.rec.in_flight += 1;
        self.sending.push(i);
        self.exchange(i);
    }

    pub(super) fn record(&mut self, i: usize, o: Outcome) {
        self.record_at(i, o, self.now);
    }

    /// Records VU `i`'s request as ended at `end`.
    pub(super) fn record_at(&mut self, i: usize, o: Outcome, end: Instant) {
        let v = &mut self.vus[i];
        v.busy = false;
        self.rec.in_flight -= 1;
        self.ended += 1;
        // Latency counts from the intended time (open model), or from the send.
        self.rec
            .record(v.ep, v.intended.min(v.sent), v.sent, end, &o);
        super::script::taken(self.prep, v, &mut self.rec, o.status);
        match &mut self.open {
            None => self.ready.push(i),
            Some(open) if v.fd.is_some() => open.warm.push(i),
            Some(open) => open.cold.push(i),
        }
    }

    /// Requests past their timeout fail (a connect that never completed is a
    /// connect error), and their connections close.
    pub(super) fn timeouts(&mut self) {
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
}
