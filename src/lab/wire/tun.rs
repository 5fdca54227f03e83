//! TUN devices and their IPv4 set-up, through ioctls only (no `ip` at run time).
//!
//! A TUN device opened here is not persistent: it exists while its file descriptor
//! is open and vanishes with it, so even a crash leaves nothing behind. Opening
//! `/dev/net/tun` creates the device in the network namespace of the calling
//! thread. Each `read` on the descriptor returns one whole IP packet, each `write`
//! injects one (`IFF_NO_PI`: no extra header).
//!
//! Not here: moving packets (`relay`) or namespaces (`netns`).

use std::ffi::CStr;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The kernel's `IFNAMSIZ`: interface names are at most 15 bytes plus a NUL.
const IFNAMSIZ: usize = 16;

/// `struct ifreq`: a name and a 24-byte union (address, flags, MTU…). Written by
/// hand so each ioctl below fills exactly the member it means.
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    data: [u8; 24],
}

impl IfReq {
    fn new(name: &str) -> io::Result<IfReq> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name {name:?}"),
            ));
        }
        let mut req = IfReq {
            name: [0; IFNAMSIZ],
            data: [0; 24],
        };
        req.name[..bytes.len()].copy_from_slice(bytes);
        Ok(req)
    }

    fn set_short(&mut self, value: i16) {
        self.data[..2].copy_from_slice(&value.to_ne_bytes());
    }

    fn short(&self) -> i16 {
        i16::from_ne_bytes([self.data[0], self.data[1]])
    }

    fn set_addr(&mut self, ip: Ipv4Addr) {
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(ip).to_be(),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: sockaddr_in is 16 bytes of plain data; data has 24.
        let raw: [u8; 16] = unsafe { std::mem::transmute(sin) };
        self.data[..16].copy_from_slice(&raw);
    }

    /// The name the kernel gave back (after TUNSETIFF).
    fn name(&self) -> String {
        CStr::from_bytes_until_nul(&self.name)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// One open TUN device; dropping it removes the device.
#[derive(Debug)]
pub(crate) struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates TUN device `name` in the calling thread's network namespace, with a
    /// non-blocking descriptor. `EBUSY` means another process owns that name;
    /// `EPERM`/`EACCES` mean the caller lacks CAP_NET_ADMIN or may not open
    /// `/dev/net/tun`.
    pub(crate) fn create(name: &str) -> io::Result<Tun> {
        let mut req = IfReq::new(name)?;
        // SAFETY: a NUL-terminated path and plain flags.
        let fd = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        req.set_short((libc::IFF_TUN | libc::IFF_NO_PI) as i16);
        // SAFETY: req is a valid ifreq the kernel reads and writes.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun {
            fd,
            name: req.name(),
        })
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The raw descriptor, for poll.
    pub(crate) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An AF_INET datagram socket, the handle interface ioctls go through (in the
/// network namespace of the thread that makes it).
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl(sock: &OwnedFd, request: libc::c_ulong, req: &mut IfReq, what: &str) -> io::Result<()> {
    // SAFETY: req is a valid ifreq for these SIOC* requests.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), request as _, req as *mut IfReq) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// Brings interface `name` up (IFF_UP), in the calling thread's namespace.
pub(crate) fn set_up(name: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = IfReq::new(name)?;
    ioctl(&sock, libc::SIOCGIFFLAGS, &mut req, "read flags")?;
    let flags = req.short() | libc::IFF_UP as i16 | libc::IFF_RUNNING as i16;
    req.set_short(flags);
    ioctl(&sock, libc::SIOCSIFFLAGS, &mut req, "set flags")
}

/// Gives point-to-point interface `name` the address `local` with `peer` at the
/// other end (a /32 each side; the kernel adds the host route to `peer`), then
/// brings it up.
pub(crate) fn configure(name: &str, local: Ipv4Addr, peer: Ipv4Addr) -> io::Result<()> {
    let sock = control_socket()?;
    let mut req = IfReq::new(name)?;
    req.set_addr(local);
    ioctl(&sock, libc::SIOCSIFADDR, &mut req, "set address")?;
    let mut req = IfReq::new(name)?;
    req.set_addr(Ipv4Addr::BROADCAST);
    ioctl(&sock, libc::SIOCSIFNETMASK, &mut req, "set netmask")?;
    let mut req = IfReq::new(name)?;
    req.set_addr(peer);
    ioctl(&sock, libc::SIOCSIFDSTADDR, &mut req, "set peer address")?;
    set_up(name)
}

/// `struct rtentry` (linux/route.h) for SIOCADDRT; libc has it for musl only.
#[repr(C)]
struct RtEntry {
    pad1: libc::c_ulong,
    dst: libc::sockaddr,
    gateway: libc::sockaddr,
    genmask: libc::sockaddr,
    flags: libc::c_ushort,
    pad2: libc::c_short,
    pad3: libc::c_ulong,
    tos: libc::c_uchar,
    class: libc::c_uchar,
    pad4: [libc::c_short; 3],
    metric: libc::c_short,
    dev: *mut libc::c_char,
    mtu: libc::c_ulong,
    window: libc::c_ulong,
    irtt: libc::c_ushort,
}

/// Routes everything not local out of point-to-point interface `name` (a default
/// route on the device, no gateway), in the calling thread's namespace: replies to
/// any address go back over the wire, so hosts routed through the host side (other
/// namespaces, other machines) reach the server too, not only 198.18.N.1.
pub(crate) fn default_route(name: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let dev = std::ffi::CString::new(name).map_err(io::Error::other)?;
    let any = || {
        // SAFETY: sockaddr is plain data; all zeroes is 0.0.0.0.
        let mut sa: libc::sockaddr = unsafe { std::mem::zeroed() };
        sa.sa_family = libc::AF_INET as libc::sa_family_t;
        sa
    };
    // SAFETY: rtentry is plain data (the null device pointer is replaced below).
    let mut rt: RtEntry = unsafe { std::mem::zeroed() };
    rt.dst = any();
    rt.genmask = any();
    rt.gateway = any();
    rt.flags = libc::RTF_UP;
    rt.dev = dev.as_ptr() as *mut libc::c_char;
    // SAFETY: rt is a valid rtentry whose dev points into `dev`, alive for the call.
    let rc = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCADDRT as _,
            &mut rt as *mut RtEntry,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("add the default route: {e}"),
        ));
    }
    Ok(())
}

/// Every IPv4 address on an interface of the calling thread's namespace (local and
/// point-to-point peer), to find a free address pair.
pub(crate) fn addresses_in_use() -> io::Result<Vec<Ipv4Addr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills head with a list we free below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur walks the list getifaddrs returned, still alive.
        let ifa = unsafe { &*cur };
        for sa in [ifa.ifa_addr, ifa.ifa_ifu] {
            // SAFETY: a non-null sockaddr whose family says it is a sockaddr_in.
            if !sa.is_null() && unsafe { (*sa).sa_family } as i32 == libc::AF_INET {
                let sin = unsafe { &*(sa as *const libc::sockaddr_in) };
                out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: head came from getifaddrs.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// Whether an interface called `name` exists in the calling thread's namespace.
pub(crate) fn exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a NUL-terminated name.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written ifreq has the kernel's size and places name and address right.
    #[test]
    fn ifreq_layout_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
        assert!(IfReq::new("").is_err());
        assert!(IfReq::new("sixteen-chars-xx").is_err());
        let mut r = IfReq::new("lsw1h").unwrap();
        r.set_addr(Ipv4Addr::new(198, 18, 1, 2));
        assert_eq!(&r.data[..2], &(libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(&r.data[4..8], &[198, 18, 1, 2]);
        assert_eq!(r.name(), "lsw1h");
    }

    /// Interface lookups see loopback and its address.
    #[test]
    fn loopback_is_listed_and_exists() {
        assert!(exists("lo"));
        assert!(!exists("lsw-nonexistent"));
        assert!(addresses_in_use().unwrap().contains(&Ipv4Addr::LOCALHOST));
    }
}
