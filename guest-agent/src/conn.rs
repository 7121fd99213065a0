//! Taking the host connection off fd 0 (a unix socket: native sandboxes) or
//! off fds 0 and 1 (the attached stdio of a container), so no command can
//! inherit it.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;

use anyhow::{Context, bail};
use nix::sys::stat::{Mode, SFlag, fchmod, fstat};
use tokio::io::{AsyncRead, AsyncWrite};

/// The host connection before the runtime exists.
#[derive(Debug)]
pub enum Connection {
    Socket(UnixStream),
    /// Read from the first, write to the second.
    Stdio(OwnedFd, OwnedFd),
}

pub type Reader = Pin<Box<dyn AsyncRead + Send>>;
pub type Writer = Pin<Box<dyn AsyncWrite + Send>>;

impl Connection {
    /// Registers the connection with the current tokio runtime.
    pub fn into_async(self) -> anyhow::Result<(Reader, Writer)> {
        match self {
            Connection::Socket(stream) => {
                let stream = tokio::net::UnixStream::from_std(stream)?;
                let (reader, writer) = stream.into_split();
                Ok((Box::pin(reader), Box::pin(writer)))
            }
            Connection::Stdio(read, write) => Ok((async_reader(read)?, async_writer(write)?)),
        }
    }
}

fn is_fifo(fd: &OwnedFd) -> bool {
    fstat(fd.as_fd()).is_ok_and(|st| st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFIFO.bits())
}

/// Pipes go through the reactor; anything else an engine hands over (gVisor
/// may show host descriptors as other file types) through blocking reads.
fn async_reader(fd: OwnedFd) -> anyhow::Result<Reader> {
    if is_fifo(&fd) {
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
            .context("registering the stdin pipe")?;
        Ok(Box::pin(pipe))
    } else {
        Ok(Box::pin(tokio::fs::File::from_std(File::from(fd))))
    }
}

fn async_writer(fd: OwnedFd) -> anyhow::Result<Writer> {
    if is_fifo(&fd) {
        let pipe = tokio::net::unix::pipe::Sender::from_owned_fd(fd)
            .context("registering the stdout pipe")?;
        Ok(Box::pin(pipe))
    } else {
        Ok(Box::pin(tokio::fs::File::from_std(File::from(fd))))
    }
}

/// Moves the connection from fd 0 to a close-on-exec fd and puts /dev/null on
/// fd 0. The connection must be a unix stream socket.
pub fn take_connection() -> anyhow::Result<Connection> {
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
    Ok(Connection::Socket(stream))
}

/// Moves the container's stdin and stdout (the engine's attached streams) to
/// close-on-exec fds and puts /dev/null on fds 0 and 1; stderr stays the
/// engine's log stream.
///
/// With [`Seal::ModeZero`] the two streams and stderr get mode 0 (fchmod):
/// the agent keeps using what it holds, but no process without
/// CAP_DAC_OVERRIDE (no command) can reopen them through
/// /proc/PID/fd/N. That is the one guard under gVisor, whose sentry
/// ignores the dumpable flag there (measured with runsc 2022-12); the Linux
/// kernel refuses a command those links already, the agent being not
/// dumpable.
pub fn take_stdio(seal: Seal) -> anyhow::Result<Connection> {
    let read = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .context("duplicating fd 0")?;
    let write = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("duplicating fd 1")?;
    if seal == Seal::ModeZero {
        for (fd, name) in [
            (read.as_fd(), "stdin"),
            (write.as_fd(), "stdout"),
            (std::io::stderr().as_fd(), "stderr"),
        ] {
            fchmod(fd, Mode::empty())
                .with_context(|| format!("fchmod 0 of the attached {name}"))?;
        }
    }
    let devnull = File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
        .context("opening /dev/null")?;
    nix::unistd::dup2_stdin(&devnull).context("putting /dev/null on fd 0")?;
    nix::unistd::dup2_stdout(&devnull).context("putting /dev/null on fd 1")?;
    Ok(Connection::Stdio(read, write))
}

/// Whether [`take_stdio`] makes the streams unopenable by mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// A container's attached streams, the container user's own pipes.
    ModeZero,
    /// A microVM's port, a device node of root's that the guest (the
    /// workspace owner by then) cannot change; its kernel honours the
    /// dumpable flag.
    None,
}
