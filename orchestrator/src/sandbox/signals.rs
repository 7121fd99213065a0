//! Termination signals sent to paddock while a sandbox runs.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGINT, SIGTERM and SIGHUP, caught so the sandbox is torn down in order.
#[derive(Debug)]
pub struct TermSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl TermSignals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The number of the next signal received.
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => libc::SIGINT,
            _ = self.terminate.recv() => libc::SIGTERM,
            _ = self.hangup.recv() => libc::SIGHUP,
        }
    }
}
