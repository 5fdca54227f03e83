//! The relay: one thread per direction moves IP packets from one TUN device into the
//! other, late, lost or paced. [`Shaper`] decides each packet's fate (pure logic,
//! unit-tested); [`run`] does the I/O around it.
//!
//! Every direction is independent: its own queue, its own random streams, its own
//! thread. Due times never decrease within a direction (jitter never reorders), so a
//! FIFO queue is enough. The thread sleeps in `ppoll` until the next packet is due
//! or one arrives (nanosecond timeout, timer slack 1 ns) and asks for SCHED_FIFO
//! when allowed, so the wire keeps its timing while other processes load the CPU.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::Outage;

/// Largest packet the relay moves (the devices' MTU is 1500).
const BUF: usize = 2048;
/// Most packets one direction holds at once, whatever the delay (a memory bound).
const MAX_QUEUED: usize = 32 * 1024;
/// Most packets read in one go before due packets get written again.
const READ_BATCH: usize = 64;

/// What one direction has seen, readable while it runs.
#[derive(Debug, Default)]
pub(crate) struct DirCounters {
    pub(crate) packets: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) outage: AtomicU64,
    pub(crate) queue_full: AtomicU64,
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Random loss (`--loss`).
    Loss,
    /// Inside an outage window.
    Outage,
    /// The bottleneck queue (`--bandwidth`) was full: tail drop.
    QueueFull,
}

/// One direction's shaping settings.
#[derive(Debug, Clone)]
pub(crate) struct ShaperConfig {
    /// One-way base delay (half the RTT).
    pub(crate) delay: Duration,
    /// Most extra one-way delay a packet may get.
    pub(crate) jitter: Duration,
    /// Probability of dropping a packet, 0..=1.
    pub(crate) loss: f64,
    /// Bottleneck rate in bits per second.
    pub(crate) rate: Option<u64>,
    /// Outage windows, counted from `start`.
    pub(crate) outage: Option<Outage>,
    /// When the wire started.
    pub(crate) start: Instant,
    /// Seed of this direction's random streams.
    pub(crate) seed: u64,
}

/// Decides, packet by packet, when each one leaves the wire or whether it is dropped.
#[derive(Debug)]
pub(crate) struct Shaper {
    cfg: ShaperConfig,
    loss_rng: SmallRng,
    jitter_rng: SmallRng,
    /// Longest backlog the bottleneck queue holds, in time at `rate`.
    queue_limit: Duration,
    /// When the bottleneck finishes sending the last accepted packet.
    last_departure: Instant,
    /// The due time of the last accepted packet.
    last_due: Instant,
}

impl Shaper {
    pub(crate) fn new(cfg: ShaperConfig) -> Shaper {
        // The bottleneck buffers 100 ms of traffic, or 64 full-size packets on very
        // slow links: about what a home router holds, so TCP sees tail drops when it
        // overruns the link, as it would for real.
        let queue_limit = match cfg.rate {
            Some(rate) => Duration::from_millis(100).max(transmit_time(64 * 1500, rate)),
            None => Duration::ZERO,
        };
        Shaper {
            loss_rng: SmallRng::seed_from_u64(cfg.seed),
            jitter_rng: SmallRng::seed_from_u64(cfg.seed ^ 0x6a09_e667_f3bc_c908),
            queue_limit,
            last_departure: cfg.start,
            last_due: cfg.start,
            cfg,
        }
    }

    /// Whether `now` falls inside an outage window.
    pub(crate) fn in_outage(&self, now: Instant) -> bool {
        self.cfg
            .outage
            .is_some_and(|o| o.covers(now.saturating_duration_since(self.cfg.start)))
    }

    /// Admits a packet of `len` bytes arriving at `now`: its due time, or why it is
    /// dropped.
    pub(crate) fn admit(&mut self, now: Instant, len: usize) -> Result<Instant, Dropped> {
        if self.in_outage(now) {
            return Err(Dropped::Outage);
        }
        if self.cfg.loss > 0.0 && self.loss_rng.random::<f64>() < self.cfg.loss {
            return Err(Dropped::Loss);
        }
        let mut departure = now;
        if let Some(rate) = self.cfg.rate {
            let begin = self.last_departure.max(now);
            let tx = transmit_time(len as u64, rate);
            if (begin - now) + tx > self.queue_limit {
                return Err(Dropped::QueueFull);
            }
            self.last_departure = begin + tx;
            departure = self.last_departure;
        }
        let extra = if self.cfg.jitter.is_zero() {
            Duration::ZERO
        } else {
            let max = self.cfg.jitter.as_nanos() as u64;
            Duration::from_nanos(self.jitter_rng.random_range(0..=max))
        };
        let due = (departure + self.cfg.delay + extra).max(self.last_due);
        self.last_due = due;
        Ok(due)
    }
}

/// How long `bytes` take to serialise at `rate` bits per second.
fn transmit_time(bytes: u64, rate: u64) -> Duration {
    Duration::from_nanos(((bytes as u128 * 8 * 1_000_000_000) / rate.max(1) as u128) as u64)
}

/// Makes the calling thread's sleeps precise: 1 ns timer slack and, when the
/// process may, real-time FIFO scheduling at the lowest priority (the relay only
/// ever blocks or moves a packet, so it cannot hog a CPU).
fn tune_thread() {
    // SAFETY: prctl and sched_setscheduler on the calling thread with valid values.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param { sched_priority: 1 };
        let _ = libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
}

/// Moves packets from `input` to `output` through `shaper` until `stop` (an
/// eventfd) becomes readable. Only IPv4 packets cross; anything else (IPv6 router
/// solicitations the kernel sends on new devices) is dropped uncounted.
pub(crate) fn run(
    input: RawFd,
    output: RawFd,
    stop: RawFd,
    mut shaper: Shaper,
    counters: &DirCounters,
) {
    tune_thread();
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    loop {
        let now = Instant::now();
        while let Some((due, _)) = queue.front() {
            if *due > now {
                break;
            }
            let (_, packet) = queue.pop_front().expect("front exists");
            // A failed write (device going down) just loses the packet, as a wire would.
            // SAFETY: packet is an initialised buffer of packet.len() bytes.
            let _ = unsafe { libc::write(output, packet.as_ptr().cast(), packet.len()) };
            counters.delivered.fetch_add(1, Ordering::Relaxed);
            pool.push(packet);
        }
        let timeout = queue
            .front()
            .map(|(due, _)| due.saturating_duration_since(Instant::now()));
        let mut fds = [
            libc::pollfd {
                fd: input,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: fds is a valid array of 2 pollfds; ts_ptr is null or valid.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..READ_BATCH {
            let mut buf = pool.pop().unwrap_or_else(|| Vec::with_capacity(BUF));
            buf.clear();
            // SAFETY: buf has BUF bytes of spare capacity for the kernel to fill.
            let n = unsafe { libc::read(input, buf.as_mut_ptr().cast(), buf.capacity()) };
            if n <= 0 {
                pool.push(buf);
                break;
            }
            // SAFETY: the kernel initialised n bytes.
            unsafe { buf.set_len(n as usize) };
            if buf[0] >> 4 != 4 {
                pool.push(buf);
                continue;
            }
            counters.packets.fetch_add(1, Ordering::Relaxed);
            counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
            let arrived = Instant::now();
            if queue.len() >= MAX_QUEUED {
                counters.queue_full.fetch_add(1, Ordering::Relaxed);
                pool.push(buf);
                continue;
            }
            match shaper.admit(arrived, buf.len()) {
                Ok(due) => queue.push_back((due, buf)),
                Err(why) => {
                    let c = match why {
                        Dropped::Loss => &counters.lost,
                        Dropped::Outage => &counters.outage,
                        Dropped::QueueFull => &counters.queue_full,
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                    pool.push(buf);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(start: Instant) -> ShaperConfig {
        ShaperConfig {
            delay: Duration::from_millis(20),
            jitter: Duration::ZERO,
            loss: 0.0,
            rate: None,
            outage: None,
            start,
            seed: 7,
        }
    }

    /// Every packet is held for the one-way delay, no more.
    #[test]
    fn delay_only_holds_each_packet_for_the_delay() {
        let t0 = Instant::now();
        let mut s = Shaper::new(cfg(t0));
        for i in 0..10 {
            let now = t0 + Duration::from_millis(i);
            assert_eq!(s.admit(now, 100), Ok(now + Duration::from_millis(20)));
        }
    }

    /// Jitter adds up to its maximum and never lets a packet overtake an earlier one.
    #[test]
    fn jitter_stays_in_range_and_never_reorders() {
        let t0 = Instant::now();
        let mut s = Shaper::new(ShaperConfig {
            jitter: Duration::from_millis(10),
            ..cfg(t0)
        });
        // Dense packets (0.5 ms apart): jitter would reorder them; the wire must not.
        let mut last = t0;
        for i in 0..1000u64 {
            let now = t0 + Duration::from_micros(i * 500);
            let due = s.admit(now, 100).unwrap();
            assert!(due >= last, "reordered at {i}");
            assert!(due >= now + Duration::from_millis(20));
            assert!(due <= now + Duration::from_millis(30));
            last = due;
        }
        // Sparse packets (20 ms apart): each gets its own extra, spread over 0..10 ms.
        let base = last;
        let mut extras = Vec::new();
        for i in 1..=500u64 {
            let now = base + Duration::from_millis(i * 20);
            let due = s.admit(now, 100).unwrap();
            extras.push(due - now - Duration::from_millis(20));
        }
        assert!(extras.iter().all(|e| *e <= Duration::from_millis(10)));
        assert!(extras.iter().any(|e| *e < Duration::from_millis(1)));
        assert!(extras.iter().any(|e| *e > Duration::from_millis(9)));
    }

    /// Seeded loss drops about the asked fraction, identically for the same seed.
    #[test]
    fn loss_is_about_right_and_reproducible() {
        let t0 = Instant::now();
        let pattern = |seed| {
            let mut s = Shaper::new(ShaperConfig {
                loss: 0.03,
                seed,
                ..cfg(t0)
            });
            (0..20_000)
                .map(|_| s.admit(t0, 100).is_err())
                .collect::<Vec<_>>()
        };
        let a = pattern(42);
        assert_eq!(a, pattern(42));
        assert_ne!(a, pattern(43));
        let lost = a.iter().filter(|l| **l).count();
        assert!((450..750).contains(&lost), "{lost} of 20000 lost at 3%");
    }

    /// Outage windows start `every` after the start and last `length`.
    #[test]
    fn outages_drop_everything_inside_their_windows() {
        let t0 = Instant::now();
        let mut s = Shaper::new(ShaperConfig {
            outage: Some(Outage {
                every: Duration::from_secs(3),
                length: Duration::from_millis(300),
            }),
            ..cfg(t0)
        });
        let at = |ms| t0 + Duration::from_millis(ms);
        for (ms, dropped) in [
            (0, false),
            (100, false),
            (2999, false),
            (3000, true),
            (3299, true),
            (3300, false),
            (5999, false),
            (6100, true),
            (6400, false),
        ] {
            assert_eq!(s.admit(at(ms), 100).is_err(), dropped, "at {ms} ms");
        }
    }

    /// A bottleneck serialises packets at its rate and tail-drops past its buffer.
    #[test]
    fn bandwidth_paces_and_tail_drops() {
        let t0 = Instant::now();
        let mut s = Shaper::new(ShaperConfig {
            delay: Duration::ZERO,
            rate: Some(8_000_000),
            ..cfg(t0)
        });
        // 1000 bytes at 8 Mbit/s take 1 ms each.
        assert_eq!(s.admit(t0, 1000), Ok(t0 + Duration::from_millis(1)));
        assert_eq!(s.admit(t0, 1000), Ok(t0 + Duration::from_millis(2)));
        // After an idle gap the link starts from the arrival time again.
        let later = t0 + Duration::from_millis(50);
        assert_eq!(s.admit(later, 1000), Ok(later + Duration::from_millis(1)));
        // A burst fills the 100 ms buffer, then packets are dropped at the tail.
        let mut accepted = 0;
        let mut dropped = 0;
        for _ in 0..200 {
            match s.admit(later, 1000) {
                Ok(_) => accepted += 1,
                Err(Dropped::QueueFull) => dropped += 1,
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(accepted, 99);
        assert_eq!(dropped, 101);
    }
}
