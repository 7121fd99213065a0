//! Network setup inside a fresh network namespace: only `lo`, brought up.

use std::io;

use crate::sys;

pub(crate) fn loopback_up() -> io::Result<()> {
    sys::set_interface_up(b"lo")
}
