//! One worker thread: a current-thread tokio runtime driving this thread's share of
//! the VUs (closed model) or of the arrivals and connections (open model), all
//! recording into one thread-local [`Recorder`] without locks.
//!
//! Closed model: VU `i` (global index; thread `j` of `T` owns `i ≡ j mod T`) loops:
//! claim, pick its next request, exchange, record, think. Under stages it is active
//! while the ramp is above `i`. Open model: the thread's scheduler emits arrivals
//! `k ≡ j mod T` at the ramp's times into a bounded local queue (beyond it they are
//! dropped and counted); idle connections take them, and latency runs from the
//! intended time (coordinated omission corrected), service time from the send.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Notify;

use super::conn::Phase;
use super::engine::{Control, Prepared, ABORT};
use super::h2::H2Slot;
use super::http1::H1;
use super::http3::{self, H3Slot};
use super::plan::Model;
use super::raw::RawSink;
use super::recorder::{Live, Outcome, Recorder};
use super::scenario::Order;
use super::sys::ThreadTime;

mod dispatch;
mod exchange;
mod scripted;
mod wake;

use dispatch::Dispatch;
use exchange::{exchange, exchange_h2, exchange_h3, within, Own};

/// The timer's granularity.
const TICK: Duration = Duration::from_millis(1);

/// What a worker thread ran on: its engine's name, and why it fell back to epoll
/// from io_uring (`auto` only).
pub type Ran = (&'static str, Option<String>);

/// A test hook: `J:MS` makes worker thread `J` sleep `MS` milliseconds before it
/// sets up its engine, as a thread scheduled late on a busy host would start. It
/// shows that the other threads wait for it at the start line; nothing else reads it.
pub const SLOW_START_ENV: &str = "LATSCOPE_TEST_SLOW_START";

fn slow_start_by_test(j: usize) -> Option<Duration> {
    let v = std::env::var(SLOW_START_ENV).ok()?;
    let (thread, ms) = v.split_once(':')?;
    (thread.trim().parse() == Ok(j)).then_some(Duration::from_millis(ms.trim().parse().ok()?))
}

/// Runs one worker thread to the end; returns its recorder, its CPU time (ns) and
/// what it ran on. Err: `--engine io_uring` was asked for and this thread's ring
/// could not be set up (the run is aborted).
pub fn run_thread(
    j: usize,
    threads: usize,
    prep: &Prepared<'_>,
    ctl: &Control,
    live: Arc<Live>,
) -> Result<(Recorder, ThreadTime, Ran), String> {
    if let Some(late) = slow_start_by_test(j) {
        std::thread::sleep(late);
    }
    let open = matches!(prep.plan.model, Model::Open { .. });
    let raw = prep
        .raw
        .as_ref()
        .map(|f| RawSink::new(f.clone(), prep.raw_names.clone()));
    let rec = Recorder::new(
        ctl.start,
        prep.plan.endpoints.len(),
        open,
        live.clone(),
        raw,
    );
    // The io_uring engine, when chosen; a thread whose ring cannot be set up runs
    // here under `auto`, and fails the run when io_uring was asked for.
    let (rec, fallback) = match prep.uring {
        true => match super::uring::run_thread(j, threads, prep, ctl, &live, rec) {
            Ok((rec, time)) => return Ok((rec, time, (super::uring::NAME, None))),
            Err((_, why)) if prep.plan.engine == crate::load::LoadEngine::IoUring => {
                ctl.phase.store(ABORT, Ordering::Relaxed);
                drop(ctl.start_line.arrive());
                return Err(format!(
                    "--engine io_uring: worker thread {j} could not set up io_uring ({why}); \
                     --engine auto would run it on epoll"
                ));
            }
            Err((rec, why)) => (
                RefCell::new(*rec),
                Some(format!("worker thread {j}: {why}")),
            ),
        },
        false => (RefCell::new(rec), None),
    };
    rec.borrow_mut().time_ticks();
    let wake = wake::Wake::default();
    let park = wake.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(move || park.before_park())
        .build()
        .expect("a current-thread runtime");
    let w = Worker {
        j,
        threads,
        prep,
        ctl,
        rec: &rec,
        quic: prep.h3.as_ref().and_then(|h3| h3.client()),
    };
    ctl.start_line.wait();
    rt.block_on(async {
        let ticker = async {
            let mut paced = (Instant::now(), 0u64);
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let now = Instant::now();
                let mut r = rec.borrow_mut();
                r.tick(now);
                // The window for the next tick, from this one's responses; none
                // after a tick with too few to judge.
                let span = now.saturating_duration_since(paced.0).as_secs_f64();
                let pace = (r.requests - paced.1) as f64 / span.max(1e-3);
                wake.set(match r.take_tick_p10(wake::MIN_SAMPLES) {
                    Some(p10) => wake::window(p10, pace),
                    None => Duration::ZERO,
                });
                paced = (now, r.requests);
                drop(r);
                live.cpu_ns
                    .store(super::sys::thread_cpu_ns(), Ordering::Relaxed);
                if ctl.phase.load(Ordering::Relaxed) == ABORT {
                    break;
                }
            }
        };
        // All of this thread's VUs live in one task; tokio's cooperative budget
        // (128 operations per task poll) would make most of them yield and re-wake
        // at every turn. FuturesUnordered already yields every 32 polls.
        tokio::select! {
            _ = tokio::task::unconstrained(w.work()) => {}
            _ = ticker => {}
        }
    });
    drop(rt);
    let time = ThreadTime::now();
    live.cpu_ns.store(time.cpu_ns, Ordering::Relaxed);
    let mut rec = rec.into_inner();
    rec.wake_window = wake.longest();
    rec.incomplete += rec.in_flight;
    // Every connection closed with the runtime: their retransmissions are counted.
    rec.data_retrans = super::retrans::data_retrans();
    Ok((
        rec.finish(Instant::now()),
        time,
        (super::uring::EPOLL, fallback),
    ))
}

struct Worker<'a, 'p> {
    j: usize,
    threads: usize,
    prep: &'a Prepared<'p>,
    ctl: &'a Control,
    rec: &'a RefCell<Recorder>,
    /// `--http3`: this thread's QUIC client (one UDP endpoint).
    quic: Option<crate::net::quic::QuicClient>,
}

/// One VU's or one open-model connection's client state: its own HTTP/1.1
/// connection, or a share of an HTTP/2 connection.
struct Client<'a, 'p> {
    w: &'a Worker<'a, 'p>,
    conn: Option<H1>,
    slot: Option<&'a H2Slot>,
    h3: Option<&'a H3Slot>,
    phase: Cell<Phase>,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// When `timer` fires.
    armed: tokio::time::Instant,
}

impl<'a, 'p> Client<'a, 'p> {
    fn new(w: &'a Worker<'a, 'p>, slot: Option<&'a H2Slot>, h3: Option<&'a H3Slot>) -> Self {
        Client {
            w,
            conn: None,
            slot,
            h3,
            phase: Cell::new(Phase::Exchange),
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed: tokio::time::Instant::now(),
        }
    }

    fn is_connected(&self) -> bool {
        match (self.slot, self.h3) {
            (Some(s), _) => s.is_connected(),
            (None, Some(s)) => s.is_connected(),
            (None, None) => self.conn.is_some(),
        }
    }

    /// Closes this client's own HTTP/1.1 connection (an HTTP/2 one is shared).
    fn close(&mut self) {
        if self.conn.take().is_some() {
            self.w.rec.borrow_mut().conn_closed();
        }
    }

    /// Sends endpoint `ep` and reads the answer, within the request timeout
    /// counted from `sent`.
    async fn request(&mut self, ep: usize, sent: Instant) -> Outcome {
        self.request_with(ep, sent, None, None, &mut None).await
    }

    /// The VU's own request `one` (a scenario step's), encoded for the protocol
    /// this client speaks.
    fn encode(&self, one: &super::plan::Endpoint) -> Result<Own, String> {
        let plan = &self.w.prep.plan;
        match (self.slot, self.h3) {
            (Some(_), _) => super::h2::Request::new(&plan.target, one).map(Own::H2),
            (None, Some(_)) => http3::H3Request::new(&plan.target, one).map(Own::H3),
            (None, None) => Ok(Own::H1(super::http1::encode(
                &plan.target,
                one,
                plan.keepalive,
            ))),
        }
    }

    /// [`Client::request`] of a scenario step: `own` is the VU's own encoding of
    /// it (None: the run's), `capture` what to keep of the response into `kept`.
    async fn request_with(
        &mut self,
        ep: usize,
        sent: Instant,
        own: Option<&Own>,
        capture: Option<&std::sync::Arc<super::script::Capture>>,
        kept: &mut Option<Box<super::script::Kept>>,
    ) -> Outcome {
        let deadline = tokio::time::Instant::from_std(sent + self.w.prep.plan.client.timeout);
        // The timer is re-armed only when it has passed; an earlier deadline left
        // from a previous request is pushed out when it fires. That saves a timer
        // reset per request.
        if self.armed <= tokio::time::Instant::from_std(sent) {
            self.timer.as_mut().reset(deadline);
            self.armed = deadline;
        }
        let w = self.w;
        let phase = &self.phase;
        let timer = &mut self.timer;
        let armed = &mut self.armed;
        let result = match (self.slot, self.h3) {
            // Boxed: QUIC's and h3's futures are ~8 KiB, and inline they made every
            // VU's future as large, HTTP/1.1 ones too (5,000 epoll connections took
            // 70 MB instead of 28; issue 21). One allocation per HTTP/3 request.
            (None, Some(h3)) => {
                within(
                    timer,
                    armed,
                    deadline,
                    Box::pin(exchange_h3(
                        w,
                        h3,
                        phase,
                        ep,
                        own.and_then(Own::h3),
                        capture,
                        kept,
                    )),
                )
                .await
            }
            (None, None) => {
                within(
                    timer,
                    armed,
                    deadline,
                    exchange(
                        w,
                        &mut self.conn,
                        phase,
                        ep,
                        own.and_then(Own::h1),
                        capture,
                        kept,
                    ),
                )
                .await
            }
            (Some(slot), _) => {
                let own = own.and_then(Own::h2);
                within(
                    timer,
                    armed,
                    deadline,
                    exchange_h2(w, slot, phase, ep, own, capture, kept),
                )
                .await
            }
        };
        match result {
            Some(o) => o,
            None => {
                let kind = self.phase.get().timeout_kind();
                self.close();
                Outcome::failed(kind)
            }
        }
    }
}

/// What a VU does at the staged ramp's gate (`Worker::ramp_gate`).
enum Gate {
    /// Send: the ramp counts this VU now.
    Run,
    /// Slept until the ramp next reaches the VU: look again.
    Waited,
    /// The ramp never reaches the VU again.
    Done,
}

/// Picks endpoints in sequence or by weight.
pub(super) struct Picker {
    next: usize,
    rng: SmallRng,
}

impl Picker {
    pub(super) fn new(seed: u64) -> Self {
        Picker {
            next: 0,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    #[inline]
    pub(super) fn pick(&mut self, prep: &Prepared<'_>) -> usize {
        let n = prep.cumulative.len();
        if n == 1 {
            return prep.first;
        }
        prep.first
            + match prep.plan.order {
                Order::Sequence => {
                    let e = self.next % n;
                    self.next = e + 1;
                    e
                }
                Order::Weighted => {
                    let total = *prep.cumulative.last().expect("endpoints");
                    let x = self.rng.random_range(0..total);
                    prep.cumulative.partition_point(|&c| c <= x)
                }
            }
    }
}

impl<'a, 'p> Worker<'a, 'p> {
    async fn work(&self) {
        match self.prep.plan.model {
            Model::Closed => self.closed().await,
            Model::Open { .. } => self.open().await,
        }
        if self.quic.is_some() {
            http3::settle().await;
        }
    }

    fn share(&self, total: usize) -> impl Iterator<Item = usize> {
        (self.j..total).step_by(self.threads)
    }

    /// This thread's workers (global indexes) and, for HTTP/2, their shared
    /// connections: connections are split between threads, and each HTTP/2
    /// connection carries `--streams` workers.
    fn layout(&self) -> (Vec<usize>, Vec<H2Slot>, Vec<H3Slot>, usize) {
        let streams = self.prep.streams();
        let conns: Vec<usize> = self.share(self.prep.plan.connections as usize).collect();
        let local: Vec<usize> = conns
            .iter()
            .flat_map(|g| (g * streams)..((g + 1) * streams))
            .collect();
        let slots = if self.prep.h2 {
            conns.iter().map(|_| H2Slot::default()).collect()
        } else {
            Vec::new()
        };
        let h3 = if self.prep.h3.is_some() {
            conns.iter().map(|_| H3Slot::default()).collect()
        } else {
            Vec::new()
        };
        (local, slots, h3, streams)
    }

    async fn closed(&self) {
        let (local, slots, h3, streams) = self.layout();
        let vu = |li: usize| self.vu(local[li], slots.get(li / streams), h3.get(li / streams));
        if self.prep.plan.stages.is_empty() {
            let mut all: FuturesUnordered<_> = (0..local.len()).map(vu).collect();
            while all.next().await.is_some() {}
            return;
        }
        // Staged: a VU's state is made when the ramp first reaches it, so VUs that
        // are not running yet (or never will) take no memory.
        let shard = self.prep.plan.shard;
        let mut all = FuturesUnordered::new();
        let mut next = 0;
        loop {
            let t = self.ctl.start.elapsed().as_secs_f64();
            while next < local.len()
                && self.ctl.running()
                && self.prep.ramp.at(t) > shard.global(local[next] as u64) as f64
            {
                all.push(vu(next));
                next += 1;
            }
            let due = match local.get(next) {
                Some(&i) if self.ctl.running() => {
                    self.prep.ramp.next_above(shard.global(i as u64) as f64, t)
                }
                _ => None,
            };
            let Some(at) = due else {
                // The ramp never reaches the rest: run the started VUs to their end.
                while all.next().await.is_some() {}
                return;
            };
            let wake = (self.ctl.start + Duration::from_secs_f64(at))
                .min(Instant::now() + Duration::from_millis(50));
            tokio::select! {
                Some(_) = all.next(), if !all.is_empty() => {}
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    /// The staged ramp's gate for the VU of run-wide index `g` (k6's `stages`): above
    /// the ramp's VU count now, the VU closes its connection and sleeps until the
    /// ramp next reaches it (`Waited`: look again), or stops when it never will.
    async fn ramp_gate(&self, g: f64, client: &mut Client<'_, '_>) -> Gate {
        let ramp = &self.prep.ramp;
        let t = self.ctl.start.elapsed().as_secs_f64();
        if ramp.at(t) > g {
            return Gate::Run;
        }
        client.close();
        match ramp.next_above(g, t) {
            Some(at) => {
                let when = self.ctl.start + Duration::from_secs_f64(at);
                tokio::time::sleep_until(when.into()).await;
                Gate::Waited
            }
            None => Gate::Done,
        }
    }

    async fn vu(&self, i: usize, slot: Option<&H2Slot>, h3: Option<&H3Slot>) {
        let prep = self.prep;
        if let Some(script) = &prep.plan.script {
            return self.vu_scripted(i, script, slot, h3).await;
        }
        let staged = !prep.plan.stages.is_empty();
        let think = prep.plan.think_time;
        let mut client = Client::new(self, slot, h3);
        // The run-wide VU index: what the stages count (shards split the VUs).
        let g = prep.plan.shard.global(i as u64) as f64;
        let mut picker = Picker::new(i as u64);
        loop {
            if staged {
                match self.ramp_gate(g, &mut client).await {
                    Gate::Run => {}
                    Gate::Waited => continue,
                    Gate::Done => break,
                }
            }
            if !self.ctl.claim() {
                break;
            }
            let ep = picker.pick(prep);
            self.rec.borrow_mut().in_flight += 1;
            let sent = Instant::now();
            let o = client.request(ep, sent).await;
            let end = Instant::now();
            {
                let mut r = self.rec.borrow_mut();
                r.in_flight -= 1;
                r.record(ep, sent, sent, end, &o);
            }
            if !think.is_zero() {
                tokio::time::sleep(think).await;
            }
        }
        client.close();
    }

    async fn open(&self) {
        let Model::Open { rate } = self.prep.plan.model else {
            return;
        };
        let peak = if self.prep.plan.stages.is_empty() {
            rate
        } else {
            self.prep.ramp.peak()
        };
        let backlog = self
            .prep
            .plan
            .backlog
            .unwrap_or((peak.ceil() as u64).min(super::plan::MAX_BACKLOG))
            .div_ceil(self.threads as u64 * u64::from(self.prep.plan.shard.count))
            .max(1) as usize;
        let d = Dispatch {
            queue: RefCell::new(VecDeque::with_capacity(backlog.min(65_536))),
            warm: Notify::new(),
            cold: Notify::new(),
            idle_warm: Cell::new(0),
            idle_cold: Cell::new(0),
            wanted: Cell::new(0),
            spawn: Notify::new(),
            closed: Cell::new(false),
        };
        let (local, slots, h3, streams) = self.layout();
        let sched = self.schedule(&d, backlog);
        // Connections are made when an arrival finds none idle, up to this thread's
        // share of `-c`: a large `-c` that the rate never needs takes no memory.
        let drive = async {
            let mut workers = FuturesUnordered::new();
            let mut next = 0;
            loop {
                for _ in 0..d.wanted.replace(0) {
                    if let Some(&i) = local.get(next) {
                        workers.push(self.open_conn(
                            i,
                            &d,
                            slots.get(next / streams),
                            h3.get(next / streams),
                        ));
                        next += 1;
                    }
                }
                if d.closed.get() && workers.is_empty() {
                    break;
                }
                tokio::select! {
                    Some(_) = workers.next(), if !workers.is_empty() => {}
                    _ = d.spawn.notified() => {}
                }
            }
        };
        tokio::join!(sched, drive);
    }

    /// Emits this thread's arrivals into the queue.
    async fn schedule(&self, d: &Dispatch, backlog: usize) {
        let count = self.prep.plan.count;
        let mut k = self.j as u64;
        let mut behind = 0u32;
        loop {
            if !self.ctl.running() || count.is_some_and(|n| k >= n) {
                break;
            }
            // Arrival k of this shard is the run's arrival `shard.global(k)`: the
            // shards' arrivals interleave into the whole run's schedule.
            let Some(at) = self
                .prep
                .ramp
                .arrival(self.prep.plan.shard.global(k) as f64)
            else {
                // No arrival before the end: the run still lasts its planned time
                // (`--rate 0.0001 -d 2s` is 2 s with one request, not 0.02 s).
                self.until_end().await;
                break;
            };
            let due = self.ctl.start + Duration::from_secs_f64(at);
            // tokio's timer fires on the next millisecond tick after its deadline:
            // aim one tick early so requests leave on time, not up to 1 ms late (a
            // lateness that would be counted as latency).
            if due > Instant::now() + TICK {
                tokio::time::sleep_until((due - TICK).into()).await;
                if !self.ctl.running() {
                    break;
                }
                behind = 0;
            } else {
                // Behind schedule: let the connections run now and then.
                behind += 1;
                if behind.is_multiple_of(256) {
                    tokio::task::yield_now().await;
                }
            }
            if d.queue.borrow().len() >= backlog {
                self.rec.borrow_mut().dropped(due);
            } else {
                d.push(due);
            }
            k += self.threads as u64;
        }
        d.close();
    }

    /// Waits until the run's planned end (or until it stops).
    async fn until_end(&self) {
        let Some(length) = self.prep.plan.run_length() else {
            return;
        };
        let end = self.ctl.start + length;
        while self.ctl.running() && Instant::now() < end {
            let wake = end.min(Instant::now() + Duration::from_millis(50));
            tokio::time::sleep_until(wake.into()).await;
        }
    }

    async fn open_conn(&self, i: usize, d: &Dispatch, slot: Option<&H2Slot>, h3: Option<&H3Slot>) {
        let mut client = Client::new(self, slot, h3);
        let mut picker = Picker::new(i as u64 ^ 0x5eed);
        // A scenario's checks (the open model has no VUs: no variables, setup,
        // cookies or data; `plan` refuses them).
        let script = self.prep.plan.script.as_deref();
        let mut state = script.map(|s| super::script::VuState::new(s, i as u64));
        while let Some(due) = d.take(client.is_connected()).await {
            if !self.ctl.running() {
                // Due before the end but never sent: the run ended first.
                self.rec.borrow_mut().incomplete += 1;
                continue;
            }
            let ep = picker.pick(self.prep);
            if let (Some(script), Some(state)) = (script, &mut state) {
                self.step(&mut client, state, script, ep, due).await;
                continue;
            }
            self.rec.borrow_mut().in_flight += 1;
            let sent = Instant::now();
            let o = client.request(ep, sent).await;
            let end = Instant::now();
            let mut r = self.rec.borrow_mut();
            r.in_flight -= 1;
            // Latency counts from the intended time, or from the send when the timer
            // let it leave a little early.
            r.record(ep, due.min(sent), sent, end, &o);
        }
        client.close();
    }
}
