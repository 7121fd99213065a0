//! The host-wide lock around every change to the NAT rules and addresses,
//! so servers on one host never pick the same /30.

use std::time::{Duration, Instant};

use crate::EgressError;

const LOCK_PATH: &str = "/run/paddock-nat.lock";
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The host-wide lock around every change to the NAT rules and addresses.
pub(super) struct HostLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl HostLock {
    pub(super) async fn take() -> Result<Self, EgressError> {
        let fail = |source| EgressError::NatLock {
            path: LOCK_PATH.into(),
            source,
        };
        let taken = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + LOCK_TIMEOUT;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(LOCK_PATH)?;
            loop {
                match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                    Ok(lock) => return Ok(HostLock(lock)),
                    Err((back, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
                        if Instant::now() >= deadline {
                            return Err(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("not free within {LOCK_TIMEOUT:?}"),
                            ));
                        }
                        file = back;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err((_, errno)) => return Err(std::io::Error::from(errno)),
                }
            }
        })
        .await
        .map_err(|e| fail(std::io::Error::other(e.to_string())))?;
        taken.map_err(fail)
    }
}
