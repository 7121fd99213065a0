//! A queued run (queue.rs says when one is): recorded `queued`, with a
//! `run.queued` event, under its session's lease, which it keeps renewed
//! while it waits on its task for a slot; then it enters and is driven like
//! any run. Cancelled while queued it ends `cancelled`; past the longest
//! wait `failed` (`queue_timeout`); at a shutdown it lets go and stays
//! `queued` in the store, for the next start to take up
//! ([`Runtime::queued_runs`], [`Runtime::restart_queued`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use paddock_core::store::{EndReason, Run, RunState};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use super::super::admission::{AdmissionAsk, AdmissionGrant, AdmissionRefused};
use super::super::queue::RECHECK;
use super::super::{RunHandle, RunOptions, StartRun, renew};
use super::check::Checked;
use super::enter::{Claimed, Entry, claim, end_early};
use super::{drive, register};
use crate::error::RuntimeError;
use crate::events::{Event, RunQueued};
use crate::runtime::{Runtime, Shared};
use crate::util::error_chain;

/// A run left `queued` in the store by a process that let go of it (a
/// shutdown, a crash) or by another node.
#[derive(Debug, Clone)]
pub struct QueuedRun {
    pub run: Run,
    /// What the front end recorded to start it again
    /// ([`Runtime::start_run_recorded`]); None when it recorded nothing.
    pub record: Option<serde_json::Value>,
}

/// How a queued run's wait ended.
enum Turn {
    /// A slot (None: no admission configured any more).
    Admitted(Option<Box<dyn AdmissionGrant>>),
    Cancelled,
    /// Waited past the longest wait; the last refusal says why.
    TimedOut {
        waited: Duration,
        last: String,
    },
    /// A refusal that waiting cannot change.
    Refused(AdmissionRefused),
    /// The runtime let go of its queue (a shutdown): the run stays queued.
    LetGo,
    /// Another holder took the session lease over.
    LeaseLost,
}

impl Runtime {
    /// Records the run `queued` and waits for its slot on a task of its own.
    pub(super) async fn queue(
        &self,
        checked: Checked,
        request: StartRun,
        mut options: RunOptions,
        reason: String,
    ) -> Result<RunHandle, RuntimeError> {
        let shared = &self.shared;
        let settings = shared.config.queue;
        let mut checked = checked;
        checked.run.state = RunState::Queued;
        let (tenant, id) = (checked.run.tenant.clone(), checked.run.id.clone());
        // the session first (a busy one answers so), then the queue's
        // bound, before anything is written
        let claimed = claim(shared, &checked.run, &options).await?;
        if let Err(full) = shared
            .queue
            .join(&tenant, &id, settings.max_queued_per_tenant)
        {
            claimed.journal.release().await;
            return Err(RuntimeError::QueueFull {
                tenant: tenant.clone(),
                queued: full.queued,
            });
        }
        let ahead = shared.queue.queued(&tenant).saturating_sub(1);
        let queued = RunQueued {
            reason,
            ahead: u64::try_from(ahead).unwrap_or(u64::MAX),
            max_wait_ms: u64::try_from(settings.max_wait.as_millis()).unwrap_or(u64::MAX),
            request: options.queue_record.take(),
        };
        let recorded = match claimed.journal.create_run(&checked.run).await {
            Ok(()) => claimed.journal.emit(&queued).await.map(|_| ()),
            Err(err) => Err(err),
        };
        if let Err(err) = recorded {
            shared.queue.leave(&tenant, &id);
            claimed.journal.release().await;
            return Err(err);
        }
        tracing::info!(run_id = %id, tenant = %tenant, ahead, reason = %queued.reason, "run queued");
        Ok(self.wait_for_slot(checked, claimed, request, options))
    }

    /// Registers the queued run and spawns its task: the wait, then the
    /// run.
    fn wait_for_slot(
        &self,
        checked: Checked,
        claimed: Claimed,
        request: StartRun,
        options: RunOptions,
    ) -> RunHandle {
        let (done_tx, done_rx) = watch::channel(None);
        let steerable = request.driver.capabilities().steer;
        register(
            &self.shared,
            &checked.run,
            steerable,
            &claimed.cancel,
            done_rx,
        );
        let run = checked.run.clone();
        let runtime = Runtime {
            shared: Arc::clone(&self.shared),
        };
        let span = tracing::info_span!("queued run", session_id = %run.session, run_id = %run.id);
        let task = tokio::spawn(
            wait_then_drive(runtime, checked, claimed, request, options, done_tx).instrument(span),
        );
        RunHandle {
            run,
            safety_checkpoint: None,
            task,
        }
    }

    /// The queued runs no task of this runtime drives, oldest first, each
    /// with what its front end recorded.
    pub async fn queued_runs(&self) -> Result<Vec<QueuedRun>, RuntimeError> {
        let store = &self.shared.store;
        let mut runs: Vec<Run> = store
            .list_unfinished_runs()
            .await
            .map_err(RuntimeError::store("list_unfinished_runs"))?
            .into_iter()
            .filter(|run| run.state == RunState::Queued)
            .filter(|run| !self.shared.active().contains_key(&run.id))
            .collect();
        runs.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let mut queued = Vec::with_capacity(runs.len());
        for run in runs {
            // its first event (nothing of the run is written before it)
            let first = store
                .list_run_events(&run.tenant, &run.id, 0, 1)
                .await
                .map_err(RuntimeError::store("list_run_events"))?;
            let record = first.iter().find_map(|e| match Event::of(e) {
                Event::RunQueued(queued) => queued.request,
                _ => None,
            });
            queued.push(QueuedRun { run, record });
        }
        Ok(queued)
    }

    /// Takes up `run`, a queued run of [`Runtime::queued_runs`], with
    /// `request` as its front end rebuilt it: it waits again in its
    /// tenant's queue (behind the runs taken up before it; the queue's
    /// bound is not applied again), and its wait counts from when it was
    /// first queued. [`RuntimeError::SessionBusy`]: another process holds
    /// it.
    pub async fn restart_queued(
        &self,
        run: Run,
        mut request: StartRun,
    ) -> Result<RunHandle, RuntimeError> {
        if run.state != RunState::Queued {
            return Err(RuntimeError::Invalid {
                reason: format!("run {} is {}, not queued", run.id, run.state),
            });
        }
        let options = RunOptions::default();
        let mut checked = self
            .check(&run.tenant, &run.session, &mut request, &options)
            .await?;
        checked.run = run;
        let shared = &self.shared;
        let (tenant, id) = (checked.run.tenant.clone(), checked.run.id.clone());
        let _ = shared.queue.join(&tenant, &id, usize::MAX);
        let claimed = match claim(shared, &checked.run, &options).await {
            Ok(claimed) => claimed,
            Err(err) => {
                shared.queue.leave(&tenant, &id);
                return Err(err);
            }
        };
        tracing::info!(run_id = %id, tenant = %tenant, "queued run taken up again");
        Ok(self.wait_for_slot(checked, claimed, request, options))
    }

    /// Ends `run`, a queued run of [`Runtime::queued_runs`] that cannot be
    /// taken up again (its front end says why), `failed`.
    pub async fn fail_queued(&self, run: &Run, reason: &str) -> Result<Run, RuntimeError> {
        let claimed = claim(&self.shared, run, &RunOptions::default()).await?;
        tracing::warn!(run_id = %run.id, reason, "a queued run cannot start again");
        end_early(
            &claimed.journal,
            RunState::Failed,
            EndReason::InfrastructureError,
            Some(format!("the queued run cannot start again: {reason}")),
        )
        .await;
        claimed.journal.release().await;
        self.get_run(&run.tenant, &run.id).await
    }

    /// Lets go of every run waiting in this runtime's queue (at a
    /// shutdown): each stays `queued` in the store, its session lease
    /// released, for [`Runtime::queued_runs`] at the next start. They are no
    /// longer active here, so a shutdown's cancel does not end them.
    pub fn let_go_of_queued(&self) {
        let ids = self.shared.queue.close();
        let mut active = self.shared.active();
        for id in &ids {
            active.remove(id);
        }
        if !ids.is_empty() {
            tracing::info!(
                runs = ids.len(),
                "queued runs left queued for the next start"
            );
        }
    }
}

/// The queued run's task: its turn, then its run (or its end).
async fn wait_then_drive(
    runtime: Runtime,
    checked: Checked,
    claimed: Claimed,
    request: StartRun,
    options: RunOptions,
    done: watch::Sender<Option<Run>>,
) -> Run {
    let shared = Arc::clone(&runtime.shared);
    let run = checked.run.clone();
    let turn = wait_turn(&shared, &run, &claimed).await;
    let journal = Arc::clone(&claimed.journal);
    let ended = match turn {
        Turn::Admitted(grant) => {
            match runtime
                .enter(checked, claimed, request, options, grant, Entry::Dequeued)
                .await
            {
                Ok(entered) => return drive::drive(shared, entered.launched, done).await,
                Err(err) => {
                    tracing::warn!(run_id = %run.id, error = %error_chain(&err), "a run out of the queue failed to start");
                    true
                }
            }
        }
        Turn::Cancelled => {
            end_early(&journal, RunState::Cancelled, EndReason::Cancelled, None).await;
            true
        }
        Turn::TimedOut { waited, last } => {
            let error = format!(
                "waited {} s in tenant {}'s run queue, the most runs.max_queue_wait_secs allows, \
                 without a sandbox slot: {last}",
                waited.as_secs(),
                run.tenant
            );
            tracing::info!(run_id = %run.id, error, "queued run timed out");
            end_early(
                &journal,
                RunState::Failed,
                EndReason::QueueTimeout,
                Some(error),
            )
            .await;
            true
        }
        Turn::Refused(refused) => {
            let error = format!("no sandbox slot for the run: {refused}");
            end_early(
                &journal,
                RunState::Failed,
                EndReason::InfrastructureError,
                Some(error),
            )
            .await;
            true
        }
        Turn::LetGo => false,
        Turn::LeaseLost => {
            tracing::warn!(run_id = %run.id, "a queued run's session lease was taken over");
            false
        }
    };
    shared.queue.leave(&run.tenant, &run.id);
    journal.release().await;
    let last = if ended {
        runtime.get_run(&run.tenant, &run.id).await.unwrap_or(run)
    } else {
        run
    };
    shared.active().remove(&last.id);
    done.send_replace(Some(last.clone()));
    last
}

/// Waits for the run's turn: it asks for a slot while it is first in its
/// tenant's line, again at each freed slot and every [`RECHECK`], until
/// admitted, cancelled, let go or past its longest wait (counted from when
/// it was queued).
async fn wait_turn(shared: &Shared, run: &Run, claimed: &Claimed) -> Turn {
    let Some(admission) = shared.admission.get() else {
        return Turn::Admitted(None);
    };
    let queue = &shared.queue;
    let cancel = &claimed.cancel;
    let max_wait = shared.config.queue.max_wait;
    let queued_for = u64::try_from(shared.store.now().as_millis() - run.created_at.as_millis())
        .map_or(Duration::ZERO, Duration::from_millis);
    let started = Instant::now();
    let deadline = started + max_wait.saturating_sub(queued_for);
    let lost = Arc::new(AtomicBool::new(false));
    let renewal = renew::spawn(
        Arc::clone(&shared.store),
        claimed.journal.lease().clone(),
        shared.config.lease_ttl,
        cancel.clone(),
        Arc::clone(&lost),
    );
    let mut last = String::from("no slot was free");
    let turn = loop {
        let notified = queue.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if lost.load(Ordering::SeqCst) {
            break Turn::LeaseLost;
        }
        if cancel.is_cancelled() {
            break Turn::Cancelled;
        }
        if queue.closing().is_cancelled() {
            break Turn::LetGo;
        }
        if Instant::now() >= deadline {
            break Turn::TimedOut {
                waited: queued_for + started.elapsed(),
                last,
            };
        }
        if queue.is_head(&run.tenant, &run.id) {
            let ask = AdmissionAsk {
                tenant: &run.tenant,
                run: &run.id,
                subagent: false,
                limits: &shared.config.sandbox.policy.limits,
            };
            match admission.admit(ask).await {
                // the grant goes back (dropped) when the queue closed meanwhile
                Ok(grant) if queue.take_turn(&run.tenant, &run.id) => {
                    break Turn::Admitted(Some(grant));
                }
                Ok(_) => break Turn::LetGo,
                Err(refused) if admission.can_wait(refused.as_ref()) => {
                    last = refused.to_string();
                }
                Err(refused) => break Turn::Refused(refused),
            }
        }
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep(RECHECK) => {}
            () = cancel.cancelled() => {}
            () = queue.closing().cancelled() => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    };
    renewal.cancel();
    turn
}
