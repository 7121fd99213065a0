//! Taking the host connection off fd 0, so no command can inherit it.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use anyhow::{Context, bail};
use nix::sys::stat::{SFlag, fstat};

/// Moves the connection from fd 0 to a close-on-exec fd and puts /dev/null on
/// fd 0. The connection must be a unix stream socket.
pub fn take_connection() -> anyhow::Result<UnixStream> {
    let stdin = std::io::stdin();
    let stat = fstat(stdin.as_fd()).context("stat of fd 0")?;
    if stat.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFSOCK.bits() {
        bail!("fd 0 is not a socket; the host connection must be a unix stream socket");
    }
    // F_DUPFD_CLOEXEC: the duplicate is never inherited across exec.
    let conn = stdin
        .as_fd()
        .try_clone_to_owned()
        .context("duplicating fd 0")?;
    let devnull = File::open("/dev/null").context("opening /dev/null")?;
    nix::unistd::dup2_stdin(&devnull).context("putting /dev/null on fd 0")?;
    let stream = UnixStream::from(conn);
    stream
        .set_nonblocking(true)
        .context("making the connection non-blocking")?;
    Ok(stream)
}
