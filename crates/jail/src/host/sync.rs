//! The monitor <-> sandbox init channel: a SOCK_SEQPACKET pair carrying one
//! byte per message. EOF means the other side is gone.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

/// Monitor -> init: the id maps are written, go on.
pub(crate) const START: u8 = b'G';
/// Init -> monitor: every layer is in place.
pub(crate) const READY: u8 = b'R';

pub(crate) fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

pub(crate) fn send(fd: &OwnedFd, message: u8) -> io::Result<()> {
    loop {
        match nix::unistd::write(fd, &[message]) {
            Ok(1) => return Ok(()),
            Ok(_) => return Err(io::ErrorKind::WriteZero.into()),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The next message, or None when the peer closed its end (exited).
pub(crate) fn recv(fd: &OwnedFd) -> io::Result<Option<u8>> {
    let mut buf = [0u8; 1];
    loop {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(buf[0])),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether the peer has closed its end, without blocking.
pub(crate) fn peer_gone(fd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_hangup_cross_the_pair() {
        let (a, b) = pair().unwrap();
        assert!(!peer_gone(&a));
        send(&a, START).unwrap();
        assert_eq!(recv(&b).unwrap(), Some(START));
        drop(b);
        assert!(peer_gone(&a));
        assert_eq!(recv(&a).unwrap(), None);
    }
}
