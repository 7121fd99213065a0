//! Network setup inside a fresh network namespace: only `lo`, brought up.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `struct ifreq` with the flags member of its union.
#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[0] = b'l' as libc::c_char;
    req.name[1] = b'o' as libc::c_char;
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of a
    // 40-byte struct ifreq, which IfReqFlags is.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    req.flags |= libc::IFF_UP as libc::c_short;
    // SAFETY: as above; SIOCSIFFLAGS only reads the struct.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ifreq_has_the_kernel_size() {
        assert_eq!(std::mem::size_of::<super::IfReqFlags>(), 40);
    }
}
