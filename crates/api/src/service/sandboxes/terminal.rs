//! Following a background process's output as it comes (a terminal's
//! screen), and resizing its terminal. A follower names the offset it has
//! read up to, so reattaching after a disconnect resumes, and a follower
//! from 0 gets the scrollback the guest still keeps.

use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{GuestOps, ProcessOutput, SandboxId};
use paddock_proto::PtySize;

use super::commands::ResizeTerminal;
use super::{ActivityGuard, SandboxService, ServiceError};

/// Bytes one step of a follow reads at most.
const FOLLOW_CHUNK: u64 = 64 << 10;
/// How long one step waits at the end of the output: under the HTTP layer's
/// idle limits, so a quiet terminal still answers (with nothing) now and then.
const FOLLOW_WAIT_MS: u64 = 10_000;

/// An attached follower. The sandbox counts as in use while it exists.
#[derive(Debug)]
pub struct ProcessFollow {
    pub sandbox: SandboxId,
    pub handle: u64,
    /// The next byte of the output to read.
    pub offset: u64,
    guest: Arc<dyn GuestOps>,
    _activity: ActivityGuard,
}

impl SandboxService {
    /// Attaches to a process's output from `offset`.
    pub async fn follow_process(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        handle: u64,
        offset: u64,
    ) -> Result<ProcessFollow, ServiceError> {
        let (live, activity) = self.use_sandbox(tenant, id).await?;
        // Refuse an unknown handle now, as an HTTP error rather than an event.
        if let Err(e) = live.guest.process_read(handle, offset, 1).await {
            return Err(self.guest_failed(id, "process_read", e).await);
        }
        Ok(ProcessFollow {
            sandbox: id.clone(),
            handle,
            offset,
            guest: live.guest.clone(),
            _activity: activity,
        })
    }

    /// The next output (possibly none, after a quiet wait), advancing the
    /// follower's offset. The answer's `exit` is set once the process ended;
    /// with `data` empty then, nothing more will come.
    pub async fn next_process_output(
        &self,
        follow: &mut ProcessFollow,
    ) -> Result<ProcessOutput, ServiceError> {
        let out = follow
            .guest
            .process_follow(follow.handle, follow.offset, FOLLOW_CHUNK, FOLLOW_WAIT_MS)
            .await;
        match out {
            Ok(out) => {
                follow.offset = out.next_offset;
                Ok(out)
            }
            Err(e) => Err(self.guest_failed(&follow.sandbox, "process_read", e).await),
        }
    }

    pub async fn resize_process(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        handle: u64,
        command: ResizeTerminal,
    ) -> Result<(), ServiceError> {
        let size = command.validate()?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.process_resize(handle, size).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "process_resize", e).await),
        }
    }
}

pub(crate) fn check_size(field: &str, size: PtySize) -> Result<PtySize, ServiceError> {
    size.check()
        .map_err(|reason| ServiceError::invalid(field, reason))
}
