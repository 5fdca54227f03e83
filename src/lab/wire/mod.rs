//! The lab's packet-level wire: real distance, loss, pacing and outages on one
//! machine.
//!
//! A user-space proxy cannot emulate distance (the kernel finishes the TCP handshake
//! before a proxy sees anything, and TCP_INFO shows loopback RTT), and this kernel has
//! no netem. So the server lives in a network namespace of its own, joined to the
//! host by two TUN devices, and latscope moves every IP packet between them itself:
//! held for half the RTT (plus jitter), dropped, paced or blacked out. SYNs, ACKs and
//! retransmissions cross the same wire, so TCP sees a real long link — for latscope,
//! curl, wrk or a browser alike.
//!
//! Layout for instance N (the first free 1 ≤ N ≤ 254):
//! ```text
//!  host namespace                         the wire's namespace
//!  lsw{N}h 198.18.N.1 ──relay threads──▶ lsw{N}s 198.18.N.2 (server listens here)
//! ```
//! Nothing is persistent: the TUN devices vanish when their descriptors close and the
//! unnamed namespace when its last reference goes, so even a killed process leaves
//! nothing behind. [`Wire`]'s `Drop` makes the teardown explicit and prompt.
//!
//! Modules: `options` (the flags, validated), `tun` (devices, ioctls), `netns`
//! (namespaces), `relay` (the shaping threads). Needs CAP_NET_ADMIN; [`enter_private_namespace`] is the non-root path.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

mod netns;
mod options;
mod relay;
mod tun;

pub use netns::enter_private_namespace;
pub use options::{Outage, WireOptions};

/// Why the wire could not start.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The options make no sense (a usage error).
    #[error("{0}")]
    Usage(String),
    /// Creating devices or namespaces was refused: not root.
    #[error(
        "the wire needs root (CAP_NET_ADMIN) to create TUN devices and a network \
         namespace; cannot {what}: {source}. Run as root (e.g. with sudo), or leave \
         out the wire flags (--rtt, --jitter, --loss, --bandwidth, --outage-*)"
    )]
    NeedsRoot {
        /// The step that was refused.
        what: String,
        /// The system's error.
        source: io::Error,
    },
    /// Every address pair 198.18.1.x … 198.18.254.x is taken.
    #[error("no free address pair for the wire: 198.18.1.0 to 198.18.254.0 are all in use")]
    NoFreeAddress,
    /// Any other set-up failure.
    #[error("cannot set up the wire: {0}")]
    Setup(String),
}

impl WireError {
    /// Classifies an OS error: permission problems mean "needs root".
    pub(crate) fn from_io(what: &str, e: io::Error) -> WireError {
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => WireError::NeedsRoot {
                what: what.to_string(),
                source: e,
            },
            _ => WireError::setup(what, e),
        }
    }

    pub(crate) fn setup(what: &str, e: io::Error) -> WireError {
        WireError::Setup(format!("{what}: {e}"))
    }
}

/// Packet counts of one direction of the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// IPv4 packets that entered the wire.
    pub packets: u64,
    /// Their bytes (IP headers included).
    pub bytes: u64,
    /// Packets written out the other side.
    pub delivered: u64,
    /// Dropped by random loss.
    pub lost: u64,
    /// Dropped during an outage.
    pub outage: u64,
    /// Dropped because the bottleneck queue was full.
    pub queue_full: u64,
}

/// Packet counts of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireStats {
    /// Host → server (requests, client ACKs).
    pub to_server: DirectionStats,
    /// Server → host (responses, server ACKs).
    pub to_host: DirectionStats,
}

/// A running wire: two TUN devices, the server's namespace and the relay threads.
/// Dropping it stops the relay and removes devices and namespace.
#[derive(Debug)]
pub struct Wire {
    index: u8,
    options: WireOptions,
    seed: u64,
    started: Instant,
    host_dev: String,
    server_dev: String,
    ns: OwnedFd,
    ns_inode: u64,
    stop: OwnedFd,
    counters: Arc<[relay::DirCounters; 2]>,
    threads: Vec<JoinHandle<()>>,
    tuns: Option<Arc<(tun::Tun, tun::Tun)>>,
}

impl Wire {
    /// Creates the devices, the namespace and the relay for `options`. Takes the first
    /// free address pair 198.18.N.1 / 198.18.N.2 (a device name is claimed atomically
    /// by the kernel, so concurrent instances never share one).
    pub fn start(options: WireOptions) -> Result<Wire, WireError> {
        options.validate()?;
        let used = tun::addresses_in_use()
            .map_err(|e| WireError::setup("list the host's addresses", e))?;
        for n in 1..=254u8 {
            let host_ip = Ipv4Addr::new(198, 18, n, 1);
            let server_ip = Ipv4Addr::new(198, 18, n, 2);
            let host_dev = format!("lsw{n}h");
            if used.contains(&host_ip) || used.contains(&server_ip) || tun::exists(&host_dev) {
                continue;
            }
            let host_tun = match tun::Tun::create(&host_dev) {
                Ok(t) => t,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EEXIST)) => continue,
                Err(e) => {
                    return Err(WireError::from_io(
                        "create a TUN device (open /dev/net/tun)",
                        e,
                    ))
                }
            };
            tun::configure(&host_dev, host_ip, server_ip)
                .map_err(|e| WireError::from_io(&format!("configure {host_dev}"), e))?;
            let server = netns::server_side(format!("lsw{n}s"), server_ip, host_ip)?;
            return Wire::run(n, options, host_tun, server);
        }
        Err(WireError::NoFreeAddress)
    }

    fn run(
        index: u8,
        options: WireOptions,
        host_tun: tun::Tun,
        server: netns::ServerSide,
    ) -> Result<Wire, WireError> {
        let seed = options.seed.unwrap_or_else(random_seed);
        // SAFETY: plain eventfd(2).
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop < 0 {
            return Err(WireError::setup("eventfd", io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor we own.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        let started = Instant::now();
        let host_dev = host_tun.name().to_string();
        let server_dev = server.tun.name().to_string();
        let tuns = Arc::new((host_tun, server.tun));
        let counters: Arc<[relay::DirCounters; 2]> = Arc::default();
        let mut wire = Wire {
            index,
            options,
            seed,
            started,
            host_dev,
            server_dev,
            ns: server.ns,
            ns_inode: server.inode,
            stop,
            counters,
            threads: Vec::new(),
            tuns: Some(tuns.clone()),
        };
        for dir in 0..2usize {
            let (input, output) = if dir == 0 {
                (tuns.0.raw(), tuns.1.raw())
            } else {
                (tuns.1.raw(), tuns.0.raw())
            };
            let shaper = relay::Shaper::new(relay::ShaperConfig {
                delay: wire.options.rtt / 2,
                jitter: wire.options.jitter / 2,
                loss: wire.options.loss_pct / 100.0,
                rate: wire.options.bandwidth,
                outage: wire.options.outage,
                start: started,
                seed: seed ^ (dir as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            });
            let stop = wire.stop.as_raw_fd();
            let counters = wire.counters.clone();
            let keep = tuns.clone();
            let name = if dir == 0 { "to-server" } else { "to-host" };
            let handle = std::thread::Builder::new()
                .name(format!("latscope-wire-{name}"))
                .spawn(move || {
                    let _devices = keep;
                    relay::run(input, output, stop, shaper, &counters[dir]);
                })
                .map_err(|e| WireError::setup("start a relay thread", e))?;
            wire.threads.push(handle);
        }
        Ok(wire)
    }

    /// The host side's address, 198.18.N.1.
    pub fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.index, 1)
    }

    /// The server side's address, 198.18.N.2: where clients connect.
    pub fn server_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.index, 2)
    }

    /// The host-side device's name (`lsw{N}h`).
    pub fn host_device(&self) -> &str {
        &self.host_dev
    }

    /// The server-side device's name (`lsw{N}s`, inside the namespace).
    pub fn server_device(&self) -> &str {
        &self.server_dev
    }

    /// The namespace's inode: `/proc/PID/ns/net` links of anything inside it read
    /// `net:[INODE]`.
    pub fn namespace_inode(&self) -> u64 {
        self.ns_inode
    }

    /// The options the wire runs with.
    pub fn options(&self) -> &WireOptions {
        &self.options
    }

    /// The seed of loss and jitter (the given one, or the random one picked).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// When the wire started (outage windows count from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether `at` falls inside an outage window.
    pub fn in_outage(&self, at: Instant) -> bool {
        self.options
            .outage
            .is_some_and(|o| o.covers(at.saturating_duration_since(self.started)))
    }

    /// Packet counts so far.
    pub fn stats(&self) -> WireStats {
        let read = |c: &relay::DirCounters| DirectionStats {
            packets: c.packets.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            delivered: c.delivered.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            outage: c.outage.load(Ordering::Relaxed),
            queue_full: c.queue_full.load(Ordering::Relaxed),
        };
        WireStats {
            to_server: read(&self.counters[0]),
            to_host: read(&self.counters[1]),
        }
    }

    /// Binds a TCP listener inside the wire's namespace on the server address and
    /// `port` (0 picks a free one). Clients reach it through the wire.
    pub fn bind_listener(&self, port: u16) -> io::Result<TcpListener> {
        let addr = SocketAddr::V4(SocketAddrV4::new(self.server_ip(), port));
        netns::bind_in(&self.ns, addr)
    }

    /// Binds a UDP socket inside the wire's namespace on the server address and
    /// `port` (0 picks a free one): the lab's HTTP/3, or any UDP server. The wire
    /// carries UDP as it carries TCP, packet by packet.
    pub fn bind_udp(&self, port: u16) -> io::Result<std::net::UdpSocket> {
        let addr = SocketAddr::V4(SocketAddrV4::new(self.server_ip(), port));
        netns::bind_udp_in(&self.ns, addr)
    }

    /// Makes `cmd` start inside the wire's namespace (its network is the server
    /// side: it listens on the server address and reaches the host through the wire).
    pub fn run_inside(&self, cmd: &mut std::process::Command) -> io::Result<()> {
        use std::os::unix::process::CommandExt;
        let ns = self.ns.try_clone()?;
        // SAFETY: the closure runs in the forked child before exec and only makes
        // system calls (prctl(2), setns(2)), which are async-signal-safe; `ns` is a
        // descriptor we own.
        unsafe {
            cmd.pre_exec(move || {
                // Should latscope die without cleaning up (SIGKILL), the command goes
                // too, instead of living on in a namespace nothing can reach.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Processes still inside the wire's namespace (e.g. what a command left running
    /// in the background), by pid.
    pub fn processes_inside(&self) -> Vec<i32> {
        netns::processes_in(self.ns_inode)
    }

    fn teardown(&mut self) {
        if !self.threads.is_empty() {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes to our eventfd.
            let _ = unsafe {
                libc::write(
                    self.stop.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
        }
        // The last references to the devices: closing them removes both.
        self.tuns = None;
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A seed for when the user gave none: time, process id and an address mixed.
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let local = 0u8;
    let addr = &local as *const u8 as u64;
    (nanos ^ (std::process::id() as u64).rotate_left(32) ^ addr).wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EPERM/EACCES from the kernel become the plain "needs root" error.
    #[test]
    fn permission_errors_say_root_is_needed() {
        let e = WireError::from_io(
            "open /dev/net/tun",
            io::Error::from_raw_os_error(libc::EPERM),
        );
        assert!(e.to_string().contains("needs root (CAP_NET_ADMIN)"), "{e}");
        let e = WireError::from_io("x", io::Error::from_raw_os_error(libc::EIO));
        assert!(matches!(e, WireError::Setup(_)));
    }
}
