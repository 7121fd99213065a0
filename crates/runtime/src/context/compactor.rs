//! Summarising compaction. Before a model call, when the estimated request
//! passes the profile's compaction threshold (90% of the effective window),
//! the history before a recent tail (about 10% of the window, less when the
//! system prompt and tool schemas leave no room for it under half the
//! window; cut where [`cut_point`] says) is summarised by the model in one call and replaced by
//! the summary; the run goes on with the summary, the tail and what follows.
//! The stored messages are never changed: the compaction is recorded on its
//! own (summary, the last message it replaces, token counts), and a later
//! run of the session starts from it ([`super::load_history`]). When the
//! summary call fails, a deterministic summary from the history itself is
//! used instead ([`summary::fallback`]) and the run goes on.

use paddock_core::model::{
    ContextProfile, Message, ModelProvider, Usage, collect, estimate_tokens,
};
use paddock_core::store::Compaction;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ContextBase;
use super::cut::cut_point;
use super::summary;
use crate::error::RuntimeError;
use crate::events::journal::Journal;
use crate::events::pipeline::Pipeline;
use crate::events::{ContextCompacted, ContextCompacting};
use crate::util::error_chain;

/// What a compaction needs from its run.
pub(crate) struct Env<'a> {
    pub(crate) provider: &'a dyn ModelProvider,
    pub(crate) journal: &'a Journal,
    pub(crate) pipe: &'a Pipeline,
    pub(crate) goal: &'a str,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) deadline: Instant,
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Compacted {
    pub(crate) tokens_before: u64,
    pub(crate) tokens_after: u64,
    /// What the summary call spent (none for a fallback).
    pub(crate) usage: Usage,
    pub(crate) fallback: bool,
    pub(crate) summary: String,
}

/// A run's compaction state: the model's profile and where its history sits
/// in the stored messages.
#[derive(Debug, Clone)]
pub(crate) struct Compactor {
    profile: ContextProfile,
    base: ContextBase,
}

fn history_tokens(history: &[Message]) -> u64 {
    history.iter().map(Message::estimate_tokens).sum()
}

impl Compactor {
    pub(crate) fn new(profile: ContextProfile, base: ContextBase) -> Self {
        Self { profile, base }
    }

    pub(crate) fn profile(&self) -> &ContextProfile {
        &self.profile
    }

    /// Compacts `history` if a request of it (plus `fixed` tokens of system
    /// prompt and tool schemas) would pass the threshold and something old
    /// enough can go. Ok(None): left as it is (also when the run was
    /// cancelled or ran out of time during the summary call).
    pub(crate) async fn compact_if_needed(
        &mut self,
        env: &Env<'_>,
        history: &mut Vec<Message>,
        fixed: u64,
    ) -> Result<Option<Compacted>, RuntimeError> {
        let threshold = self.profile.compaction_threshold();
        let tokens_before = fixed + history_tokens(history);
        if tokens_before <= threshold {
            return Ok(None);
        }
        let protected = usize::from(self.base.summarised);
        let tail = self.profile.tail_budget_with(fixed);
        let Some(cut) = cut_point(history, tail, protected) else {
            return Ok(None);
        };
        let Some(through_seq) = self.base.seq_of(cut - 1) else {
            return Ok(None);
        };
        let replaced = u64::try_from(cut).unwrap_or(u64::MAX);
        env.pipe
            .emit(&ContextCompacting {
                tokens_before,
                context_window: self.profile.context_window,
                threshold,
                messages_replaced: replaced,
            })
            .await?;
        let old = &history[..cut];
        let request = summary::summary_request(old, env.goal, &self.profile);
        let call = collect(env.provider.stream(&request, env.cancel.child_token()));
        let outcome = tokio::select! {
            biased;
            () = env.cancel.cancelled() => return Ok(None),
            () = tokio::time::sleep_until(env.deadline) => return Ok(None),
            out = call => out,
        };
        let (text, usage, error) = match outcome {
            Ok(response) => match summary::accept(&response.text, env.goal, &self.profile) {
                Some(text) => {
                    let usage = response.usage.unwrap_or_else(|| Usage {
                        input_tokens: request.estimate_tokens(),
                        output_tokens: estimate_tokens(&response.text),
                    });
                    (text, usage, None)
                }
                None => (
                    summary::fallback(old, env.goal),
                    Usage::default(),
                    Some("the summary call answered nothing".to_owned()),
                ),
            },
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "summary call failed; using the fallback summary");
                (
                    summary::fallback(old, env.goal),
                    Usage::default(),
                    Some(error_chain(&err)),
                )
            }
        };
        let mut compacted = Vec::with_capacity(history.len() - cut + 1);
        compacted.push(summary::summary_message(&text));
        compacted.extend(history.drain(cut..));
        *history = compacted;
        let tokens_after = fixed + history_tokens(history);
        let kept = u64::try_from(history.len() - 1).unwrap_or(u64::MAX);
        // the messages the compaction names are written before it
        env.pipe.barrier().await?;
        let stored = env
            .journal
            .record_compaction(Compaction {
                tenant: env.journal.tenant().clone(),
                session: env.journal.session().clone(),
                run: env.journal.run_id().clone(),
                seq: 0,
                through_seq,
                replaced_messages: replaced,
                summary: text.clone(),
                fallback: error.is_some(),
                tokens_before,
                tokens_after,
                created_at: env.journal.store().now(),
            })
            .await?;
        // what the session knows now; a failure here costs the run nothing
        if let Err(err) = env
            .journal
            .put_session_memory(crate::memory::candidates::from_summary(&text))
            .await
        {
            tracing::warn!(error = %error_chain(&err), "updating the session memory");
        }
        self.base = self.base.after_cut(cut);
        env.pipe
            .emit(&ContextCompacted {
                seq: stored.seq,
                tokens_before,
                tokens_after,
                messages_replaced: replaced,
                messages_kept: kept,
                fallback: error.is_some(),
                error: error.clone(),
                summary_tokens: estimate_tokens(&text),
            })
            .await?;
        tracing::info!(
            tokens_before,
            tokens_after,
            replaced,
            kept,
            fallback = error.is_some(),
            "compacted the context"
        );
        Ok(Some(Compacted {
            tokens_before,
            tokens_after,
            usage,
            fallback: error.is_some(),
            summary: text,
        }))
    }
}
