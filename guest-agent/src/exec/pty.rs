//! A pseudo-terminal's master side as async reader and writer.
//!
//! The master is made non-blocking and driven by the runtime's reactor
//! through tokio's pipe ends (which take any pollable descriptor unchecked).
//! Once every slave descriptor is closed (the session ended) Linux answers a
//! read with EIO; [`PtyReader`] turns that into end of file.

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe;

fn non_blocking(fd: &OwnedFd) -> io::Result<()> {
    let flags = fcntl(fd, FcntlArg::F_GETFL).map_err(io::Error::from)?;
    let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
    fcntl(fd, FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
    Ok(())
}

/// The terminal's output, read from (a dup of) its master.
#[derive(Debug)]
pub struct PtyReader {
    inner: pipe::Receiver,
}

impl PtyReader {
    pub fn new(master: OwnedFd) -> io::Result<Self> {
        non_blocking(&master)?;
        Ok(Self {
            inner: pipe::Receiver::from_owned_fd_unchecked(master)?,
        })
    }
}

/// The terminal's input, written to (a dup of) its master.
pub fn writer(master: OwnedFd) -> io::Result<pipe::Sender> {
    non_blocking(&master)?;
    pipe::Sender::from_owned_fd_unchecked(master)
}

impl AsyncRead for PtyReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            // The last slave closed: end of file.
            Poll::Ready(Err(e)) if e.raw_os_error() == Some(nix::errno::Errno::EIO as i32) => {
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}
