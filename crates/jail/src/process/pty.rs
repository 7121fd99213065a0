//! Pseudo-terminals for interactive processes: open a pair, hand the slave
//! to a child as its controlling terminal, resize it. The system calls nix
//! does not wrap safely (TIOCSCTTY, TIOCSWINSZ) are in `sys`.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::process::Command;

use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::pty::{Winsize, openpty};

/// Both sides of a new pseudo-terminal.
#[derive(Debug)]
pub struct PtyPair {
    /// The side the supervisor reads output from and writes input to.
    pub master: OwnedFd,
    /// The side the child gets as stdin, stdout and stderr.
    pub slave: OwnedFd,
}

/// Opens a pseudo-terminal pair of `rows` x `cols`, both close-on-exec (a
/// child gets the slave only through its stdio, never the master).
pub fn open(rows: u16, cols: u16) -> io::Result<PtyPair> {
    let size = Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair = openpty(&size, None).map_err(io::Error::from)?;
    for fd in [&pair.master, &pair.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
    }
    Ok(PtyPair {
        master: pair.master,
        slave: pair.slave,
    })
}

/// Makes `command`'s child a session leader with its stdin (the slave) as
/// controlling terminal. Do not also set a process group on `command`.
pub fn attach_before_exec(command: &mut Command) {
    crate::sys::controlling_terminal_before_exec(command);
}

/// Resizes the terminal whose master (or slave) is `fd`.
pub fn resize(fd: impl AsFd, rows: u16, cols: u16) -> io::Result<()> {
    crate::sys::set_window_size(fd.as_fd(), rows, cols)
}

/// The window size (rows, cols) of the terminal `fd` is, or ENOTTY.
pub fn size(fd: impl AsFd) -> io::Result<(u16, u16)> {
    crate::sys::window_size(fd.as_fd())
}
