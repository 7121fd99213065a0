//! How every backend's sandbox start ends: committed, or torn down in one
//! place.
//!
//! A start is a sequence of steps (the workspace, egress, the container,
//! VM or jail monitor, the guest's connection). What a step sets up goes
//! into the backend's teardown ([`StartTeardown`]) as soon as it exists,
//! and a [`StartGuard`] holds that teardown until the start ends:
//! [`StartGuard::commit`] hands it to the running sandbox with the
//! sandbox's [`SandboxInfo`] (built here, the same way for every backend);
//! [`StartGuard::fail`] (the sandbox ran but its guest did not come up) and
//! [`StartGuard::abandon`] (a step before that failed) remove what was set
//! up and nothing else. A guard dropped on the way (a cancelled create)
//! drops its teardown, whose own `Drop` removes the rest in the background.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use paddock_core::sandbox::{BoxError, SandboxError, SandboxId, SandboxInfo, SandboxPolicy};

use super::stderr::StderrTail;

/// Milliseconds since the Unix epoch now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What one backend has set up for a sandbox, and how it goes away.
#[async_trait]
pub(crate) trait StartTeardown: Send {
    /// After a failed start: lets the guest's last words arrive (stopping
    /// the sandbox first where that is how they end) and says what became
    /// of it, the `status` of [`SandboxError::Startup`].
    async fn settle(&mut self) -> String;
    /// Removes what has been set up so far, and only that.
    async fn tear_down(&mut self) -> Result<(), BoxError>;
    /// The workspace was made for this sandbox and goes away with it.
    fn temporary_workspace(&self) -> bool;
}

/// A sandbox start under way: its id, its backend, when it began, and the
/// last lines its guest wrote.
#[derive(Debug)]
pub(crate) struct Start {
    pub id: SandboxId,
    pub backend: &'static str,
    pub created_at_ms: u64,
    pub tail: StderrTail,
}

impl Start {
    pub(crate) fn begin(backend: &'static str) -> Self {
        let id = SandboxId::generate();
        tracing::debug!(sandbox_id = %id, backend, "creating sandbox");
        Self {
            id,
            backend,
            created_at_ms: now_ms(),
            tail: StderrTail::default(),
        }
    }

    /// The start of a saved sandbox again, under its id.
    pub(crate) fn again(backend: &'static str, id: SandboxId) -> Self {
        tracing::debug!(sandbox_id = %id, backend, "restoring sandbox");
        Self {
            created_at_ms: now_ms(),
            id,
            backend,
            tail: StderrTail::default(),
        }
    }

    /// A step of the start failed before anything was set up.
    pub(crate) fn launch_error(&self, source: BoxError) -> SandboxError {
        SandboxError::Launch {
            id: self.id.clone(),
            source,
        }
    }

    /// From here on what the start sets up is in `teardown`.
    pub(crate) fn guard<T: StartTeardown>(self, teardown: T) -> StartGuard<T> {
        StartGuard {
            start: self,
            teardown,
        }
    }
}

/// Holds what a start has set up until it is committed or torn down.
#[derive(Debug)]
pub(crate) struct StartGuard<T> {
    start: Start,
    teardown: T,
}

impl<T: StartTeardown> StartGuard<T> {
    pub(crate) fn id(&self) -> &SandboxId {
        &self.start.id
    }

    pub(crate) fn tail(&self) -> &StderrTail {
        &self.start.tail
    }

    pub(crate) fn teardown(&self) -> &T {
        &self.teardown
    }

    /// Where a step records what it has just set up.
    pub(crate) fn teardown_mut(&mut self) -> &mut T {
        &mut self.teardown
    }

    /// See [`Start::launch_error`].
    pub(crate) fn launch_error(&self, source: BoxError) -> SandboxError {
        self.start.launch_error(source)
    }

    /// The guest is up: the sandbox's info, and its teardown for the
    /// running sandbox to keep (nothing is torn down).
    pub(crate) fn commit(
        self,
        policy: SandboxPolicy,
        workspace: PathBuf,
        agent_version: &str,
    ) -> (SandboxInfo, T) {
        let info = sandbox_info(
            &self.start,
            policy,
            workspace,
            self.teardown.temporary_workspace(),
            agent_version,
        );
        (info, self.teardown)
    }

    /// The sandbox ran but its guest did not come up (`source`): waits for
    /// its last words, removes what was set up, and reports both.
    pub(crate) async fn fail(mut self, source: BoxError) -> SandboxError {
        let status = self.teardown.settle().await;
        let detail = self.start.tail.joined();
        self.remove().await;
        SandboxError::Startup {
            id: self.start.id,
            status,
            detail,
            source,
        }
    }

    /// A step before the sandbox ran failed with `error`: removes what was
    /// set up and returns `error` as it is.
    pub(crate) async fn abandon(mut self, error: SandboxError) -> SandboxError {
        self.remove().await;
        error
    }

    async fn remove(&mut self) {
        if let Err(err) = self.teardown.tear_down().await {
            tracing::warn!(sandbox_id = %self.start.id, error = %err, "removing a failed sandbox");
        }
    }
}

/// A started sandbox's info: what the backend knows of it and what its
/// policy asked (the one place a [`SandboxInfo`] is made).
fn sandbox_info(
    start: &Start,
    policy: SandboxPolicy,
    workspace: PathBuf,
    workspace_is_temporary: bool,
    agent_version: &str,
) -> SandboxInfo {
    SandboxInfo {
        id: start.id.clone(),
        backend: start.backend.to_owned(),
        workspace,
        workspace_is_temporary,
        read_only: policy.read_only,
        network: policy.network,
        limits: policy.limits,
        agent_version: agent_version.to_owned(),
        created_at_ms: start.created_at_ms,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use paddock_core::sandbox::SandboxLimits;
    use paddock_proto::NetworkPolicy;

    use super::*;

    /// Records what was set up and what was torn down, in order.
    #[derive(Debug, Default)]
    struct Fake {
        set_up: Vec<&'static str>,
        log: Arc<Mutex<Vec<String>>>,
        fails_removing: bool,
        temporary: bool,
    }

    #[async_trait]
    impl StartTeardown for Fake {
        async fn settle(&mut self) -> String {
            self.log.lock().unwrap().push("settle".to_owned());
            "stopped".to_owned()
        }

        async fn tear_down(&mut self) -> Result<(), BoxError> {
            for step in self.set_up.drain(..).rev() {
                self.log.lock().unwrap().push(format!("remove {step}"));
            }
            if self.fails_removing {
                return Err("busy".into());
            }
            Ok(())
        }

        fn temporary_workspace(&self) -> bool {
            self.temporary
        }
    }

    fn started(fake: Fake) -> (StartGuard<Fake>, Arc<Mutex<Vec<String>>>) {
        let log = fake.log.clone();
        (Start::begin("fake").guard(fake), log)
    }

    #[tokio::test]
    async fn a_failed_start_settles_then_removes_what_was_set_up_and_only_that() {
        let (mut guard, log) = started(Fake::default());
        guard.teardown_mut().set_up.push("workspace");
        guard.tail().push_line("guest: no landlock");
        guard.teardown_mut().set_up.push("container");
        let id = guard.id().clone();
        match guard.fail("no handshake".into()).await {
            SandboxError::Startup {
                id: failed,
                status,
                detail,
                source,
            } => {
                assert_eq!(failed, id);
                assert_eq!(status, "stopped");
                assert_eq!(detail, "guest: no landlock");
                assert_eq!(source.to_string(), "no handshake");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            *log.lock().unwrap(),
            ["settle", "remove container", "remove workspace"]
        );
    }

    #[tokio::test]
    async fn an_abandoned_start_removes_what_was_set_up_and_keeps_the_error() {
        let (mut guard, log) = started(Fake {
            fails_removing: true,
            ..Fake::default()
        });
        guard.teardown_mut().set_up.push("workspace");
        let err = guard.launch_error("no container".into());
        match guard.abandon(err).await {
            SandboxError::Launch { source, .. } => assert_eq!(source.to_string(), "no container"),
            other => panic!("{other:?}"),
        }
        // a failed removal is logged, never in place of the start's error
        assert_eq!(*log.lock().unwrap(), ["remove workspace"]);
    }

    #[tokio::test]
    async fn a_committed_start_tears_down_nothing_and_says_what_it_made() {
        let (mut guard, log) = started(Fake {
            temporary: true,
            ..Fake::default()
        });
        guard.teardown_mut().set_up.push("workspace");
        let id = guard.id().clone();
        let created_at_ms = guard.start.created_at_ms;
        let policy = SandboxPolicy {
            read_only: true,
            network: NetworkPolicy::None,
            limits: SandboxLimits {
                pids: Some(7),
                ..SandboxLimits::default()
            },
            ..SandboxPolicy::default()
        };
        let (info, teardown) = guard.commit(policy.clone(), PathBuf::from("/ws"), "0.1.0");
        assert_eq!(
            info,
            SandboxInfo {
                id,
                backend: "fake".to_owned(),
                workspace: PathBuf::from("/ws"),
                workspace_is_temporary: true,
                read_only: true,
                network: policy.network,
                limits: policy.limits,
                agent_version: "0.1.0".to_owned(),
                created_at_ms,
            }
        );
        assert!(created_at_ms > 0);
        assert_eq!(teardown.set_up, ["workspace"]);
        assert!(log.lock().unwrap().is_empty());
    }
}
