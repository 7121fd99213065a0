//! This terminal in raw mode (keys pass through unread: Ctrl-C reaches the
//! sandbox's shell, not us) for as long as the guard lives.

use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};

/// Restores the saved settings when dropped. None when stdin is no terminal.
#[derive(Debug)]
pub struct RawMode {
    saved: Termios,
}

impl RawMode {
    pub fn enter() -> nix::Result<Option<Self>> {
        let stdin = std::io::stdin();
        if !nix::unistd::isatty(&stdin)? {
            return Ok(None);
        }
        let saved = tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(&stdin, SetArg::TCSANOW, &raw)?;
        Ok(Some(Self { saved }))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // TCSADRAIN: the shell's last output is written before the settings change.
        if let Err(err) = tcsetattr(std::io::stdin(), SetArg::TCSADRAIN, &self.saved) {
            tracing::warn!(error = %err, "restoring the terminal's settings failed");
        }
    }
}
