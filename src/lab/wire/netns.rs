//! Network namespaces for the wire: the server's side lives in a namespace of its
//! own, made by a short-lived thread (`unshare(CLONE_NEWNET)` changes only the
//! calling thread), which creates the server-side TUN device there and hands back
//! the device and a handle on the namespace. Later sockets are bound inside it by a
//! thread that joins it with `setns` (a socket keeps the namespace it was made in).
//!
//! The namespace is unnamed: it lives while something references it (the handle,
//! the device, a socket) and vanishes with the last reference — nothing under
//! /run/netns to clean up. [`enter_private_namespace`] is the non-root path: the
//! whole process moves into a user + network namespace of its own.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use super::tun::{self, Tun};
use super::WireError;

/// The server side, made inside a fresh network namespace.
#[derive(Debug)]
pub(crate) struct ServerSide {
    /// The server-side TUN device.
    pub(crate) tun: Tun,
    /// A handle on the namespace (`/proc/thread-self/ns/net`), for `setns`.
    pub(crate) ns: OwnedFd,
    /// The namespace's inode number (what `/proc/*/ns/net` links show as
    /// `net:[INODE]`).
    pub(crate) inode: u64,
}

/// Makes a new network namespace on a thread of its own, brings `lo` up there,
/// creates TUN device `name` with address `local` and peer `peer`, and returns it.
pub(crate) fn server_side(
    name: String,
    local: Ipv4Addr,
    peer: Ipv4Addr,
) -> Result<ServerSide, WireError> {
    let thread = std::thread::Builder::new()
        .name("latscope-netns".into())
        .spawn(move || -> Result<ServerSide, WireError> {
            // SAFETY: unshare only changes this thread's namespaces.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(WireError::from_io(
                    "create a network namespace",
                    io::Error::last_os_error(),
                ));
            }
            tun::set_up("lo").map_err(|e| WireError::setup("bring lo up in the namespace", e))?;
            let tun = Tun::create(&name)
                .map_err(|e| WireError::from_io("create the server-side TUN device", e))?;
            tun::configure(&name, local, peer)
                .map_err(|e| WireError::setup(&format!("configure {name}"), e))?;
            tun::default_route(&name)
                .map_err(|e| WireError::setup(&format!("route through {name}"), e))?;
            let file = File::open("/proc/thread-self/ns/net")
                .map_err(|e| WireError::setup("open the namespace handle", e))?;
            let inode = file
                .metadata()
                .map_err(|e| WireError::setup("stat the namespace handle", e))?
                .ino();
            Ok(ServerSide {
                tun,
                ns: file.into(),
                inode,
            })
        })
        .map_err(|e| WireError::setup("start the namespace thread", e))?;
    thread
        .join()
        .map_err(|_| WireError::setup("namespace thread", io::Error::other("panicked")))?
}

/// Binds a TCP listener to `addr` inside the namespace `ns` (from a thread that
/// joins it, then ends).
pub(crate) fn bind_in(ns: &OwnedFd, addr: SocketAddr) -> io::Result<TcpListener> {
    in_namespace(ns, move || TcpListener::bind(addr))
}

/// Binds a UDP socket to `addr` inside the namespace `ns`.
pub(crate) fn bind_udp_in(ns: &OwnedFd, addr: SocketAddr) -> io::Result<UdpSocket> {
    in_namespace(ns, move || UdpSocket::bind(addr))
}

/// Runs `make` on a thread that joins the namespace `ns` first (a socket keeps the
/// namespace it was made in).
fn in_namespace<T: Send + 'static>(
    ns: &OwnedFd,
    make: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let ns = ns.try_clone()?;
    std::thread::Builder::new()
        .name("latscope-bind".into())
        .spawn(move || {
            // SAFETY: setns with a namespace descriptor we own; affects this thread.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            make()
        })?
        .join()
        .map_err(|_| io::Error::other("the bind thread panicked"))?
}

/// Moves the whole process into a new user namespace (mapping the current user to
/// root there) and a new network namespace, so an ordinary user can create the
/// wire's devices — if the system lets that user open `/dev/net/tun` at all.
/// Brings `lo` up in the new namespace, so loopback keeps working.
///
/// Must run while the process has a single thread (before any runtime or helper
/// thread starts): the kernel refuses a new user namespace to a threaded process.
pub fn enter_private_namespace() -> Result<(), WireError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0);
    if threads > 1 {
        return Err(WireError::Setup(format!(
            "enter a private namespace: the process already runs {threads} threads \
             (this must happen first, before any runtime starts)"
        )));
    }
    // SAFETY: plain getters.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: unshare on a single-threaded process.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err(WireError::from_io(
            "create a user + network namespace",
            io::Error::last_os_error(),
        ));
    }
    let write = |path: &str, text: String| {
        std::fs::write(path, text).map_err(|e| WireError::setup(&format!("write {path}"), e))
    };
    // setgroups may be absent on old kernels; the gid map needs "deny" where it exists.
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    tun::set_up("lo").map_err(|e| WireError::setup("bring lo up in the private namespace", e))
}

/// Pids of the processes whose network namespace is the one with inode `inode`.
pub(crate) fn processes_in(inode: u64) -> Vec<i32> {
    let target = format!("net:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .is_ok_and(|l| l.to_string_lossy() == target)
        })
        .collect()
}
