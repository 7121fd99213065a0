//! Checkpoints and rewinds: positioned at the session's state when written,
//! fenced, tenant-scoped, and naming the blobs the collection must keep.

use paddock_core::ids::CheckpointId;
use paddock_core::model::Message;
use paddock_core::store::{Checkpoint, CheckpointReason, Rewind, Run, StoredMessage};

use super::{StoreFactory, assert_stale, clock, fixture, lease_session};

pub async fn checkpoints_record_the_session_position_and_keep_their_blobs(
    factory: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = factory.open(clock()).await?;
    let s = store.as_ref();
    let fx = fixture(s, "acme").await?;
    let lease = lease_session(s, &fx.session, "node/a").await?;
    let run = Run::new(fx.tenant.clone(), fx.session.id.clone(), "goal", s.now());
    s.create_run(&lease, &run).await?;
    let append = |n: u32| StoredMessage {
        tenant: fx.tenant.clone(),
        session: fx.session.id.clone(),
        run: run.id.clone(),
        seq: 0,
        message: Message::user(format!("m{n}")),
        created_at: s.now(),
    };
    let checkpoint = |reason, manifest: &str| Checkpoint {
        id: CheckpointId::generate(),
        tenant: fx.tenant.clone(),
        session: fx.session.id.clone(),
        run: run.id.clone(),
        workspace: fx.workspace.id.clone(),
        reason,
        message_seq: 99,
        event_seq: 99,
        plan_version: 99,
        manifest_hash: manifest.to_owned(),
        file_count: 3,
        bytes: 30,
        new_blobs: 1,
        new_bytes: 10,
        created_at: s.now(),
    };
    let first = s
        .create_checkpoint(
            &lease,
            &checkpoint(CheckpointReason::RunStart, &"a".repeat(64)),
            &["f".repeat(64)],
        )
        .await?;
    assert_eq!(
        (first.message_seq, first.event_seq, first.plan_version),
        (0, 0, 0),
        "the position comes from the session"
    );
    for n in 0..3 {
        s.append_message(&lease, &append(n)).await?;
    }
    // a blob a second checkpoint stores again adds nothing and is no error
    let second = s
        .create_checkpoint(
            &lease,
            &checkpoint(CheckpointReason::ToolBatch, &"b".repeat(64)),
            &["f".repeat(64), "e".repeat(64)],
        )
        .await?;
    assert_eq!(second.message_seq, 3);
    assert_eq!(
        s.list_checkpoints(&fx.tenant, &fx.session.id).await?,
        [first.clone(), second.clone()]
    );
    assert_eq!(s.get_checkpoint(&fx.tenant, &second.id).await?, second);
    for key in ["a", "b", "e", "f"] {
        assert!(s.snapshot_blob_referenced(&key.repeat(64)).await?, "{key}");
    }
    assert!(!s.snapshot_blob_referenced(&"9".repeat(64)).await?);

    // another tenant sees none of it
    let other = fixture(s, "globex").await?;
    assert!(s.get_checkpoint(&other.tenant, &first.id).await.is_err());
    assert!(
        s.list_checkpoints(&other.tenant, &fx.session.id)
            .await?
            .is_empty()
    );

    // a batch's results and the checkpoint after them: one write
    let (results, third) = s
        .append_message_with_checkpoint(
            &lease,
            &append(3),
            &checkpoint(CheckpointReason::ToolBatch, &"c".repeat(64)),
            &[],
        )
        .await?;
    assert_eq!(results.seq, 4);
    assert_eq!(third.message_seq, 4, "the checkpoint includes the message");
    let history = s.list_messages(&fx.tenant, &fx.session.id, None).await?;
    assert_eq!(history.last().map(|m| m.seq), Some(4));
    // a message of another session is refused, and nothing is written
    let mut elsewhere = append(9);
    elsewhere.session = other.session.id.clone();
    assert!(
        s.append_message_with_checkpoint(
            &lease,
            &elsewhere,
            &checkpoint(CheckpointReason::ToolBatch, &"c".repeat(64)),
            &[],
        )
        .await
        .is_err()
    );
    assert_eq!(
        s.list_checkpoints(&fx.tenant, &fx.session.id).await?.len(),
        3
    );
    let rewind = s
        .record_rewind(
            &lease,
            &Rewind {
                tenant: fx.tenant.clone(),
                session: fx.session.id.clone(),
                run: run.id.clone(),
                checkpoint: first.id.clone(),
                to_seq: first.message_seq,
                to_event_seq: first.event_seq,
                through_seq: 0,
                through_event_seq: 0,
                created_at: s.now(),
            },
        )
        .await?;
    assert_eq!((rewind.to_seq, rewind.through_seq), (0, 4));
    // where it happened in the events too: the session's last event then
    let events = s.list_events(&fx.tenant, &fx.session.id, 0, 1000).await?;
    assert_eq!(
        (rewind.to_event_seq, rewind.through_event_seq),
        (first.event_seq, events.last().map_or(0, |e| e.seq))
    );
    assert_eq!(
        s.list_rewinds(&fx.tenant, &fx.session.id).await?,
        std::slice::from_ref(&rewind)
    );

    // a newer lease holder fences the old one out
    s.release_lease(&lease).await?;
    let _newer = lease_session(s, &fx.session, "node/b").await?;
    assert_stale(
        s.create_checkpoint(
            &lease,
            &checkpoint(CheckpointReason::ToolBatch, &"d".repeat(64)),
            &[],
        )
        .await,
        &lease,
    );
    assert_stale(s.record_rewind(&lease, &rewind).await, &lease);
    assert_stale(
        s.append_message_with_checkpoint(
            &lease,
            &append(5),
            &checkpoint(CheckpointReason::ToolBatch, &"d".repeat(64)),
            &[],
        )
        .await,
        &lease,
    );
    assert_eq!(
        s.list_messages(&fx.tenant, &fx.session.id, None)
            .await?
            .len(),
        4,
        "a stale batch wrote no message"
    );
    Ok(())
}

/// Pruning deletes tool-batch checkpoints only: never a run's start, one a
/// rewind went to, or the session's latest; the blobs a pruned checkpoint
/// stored first stay named (by the latest), and a stale lease prunes nothing.
pub async fn pruning_keeps_starts_rewind_targets_and_the_latest(
    factory: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = factory.open(clock()).await?;
    let s = store.as_ref();
    let fx = fixture(s, "acme").await?;
    let lease = lease_session(s, &fx.session, "node/a").await?;
    let run = Run::new(fx.tenant.clone(), fx.session.id.clone(), "goal", s.now());
    s.create_run(&lease, &run).await?;
    let checkpoint = |reason, manifest: &str| Checkpoint {
        id: CheckpointId::generate(),
        tenant: fx.tenant.clone(),
        session: fx.session.id.clone(),
        run: run.id.clone(),
        workspace: fx.workspace.id.clone(),
        reason,
        message_seq: 0,
        event_seq: 0,
        plan_version: 0,
        manifest_hash: manifest.to_owned(),
        file_count: 1,
        bytes: 1,
        new_blobs: 1,
        new_bytes: 1,
        created_at: s.now(),
    };
    let mut made = Vec::new();
    for (reason, manifest, blobs) in [
        (CheckpointReason::RunStart, "1", vec!["a".repeat(64)]),
        (CheckpointReason::ToolBatch, "2", vec!["b".repeat(64)]),
        (CheckpointReason::ToolBatch, "3", vec!["c".repeat(64)]),
        (CheckpointReason::ToolBatch, "4", vec![]),
        (CheckpointReason::ToolBatch, "5", vec![]),
    ] {
        let c = checkpoint(reason, &manifest.repeat(64));
        made.push(s.create_checkpoint(&lease, &c, &blobs).await?);
    }
    // a rewind went to the second
    s.record_rewind(
        &lease,
        &Rewind {
            tenant: fx.tenant.clone(),
            session: fx.session.id.clone(),
            run: run.id.clone(),
            checkpoint: made[1].id.clone(),
            to_seq: 0,
            to_event_seq: 0,
            through_seq: 0,
            through_event_seq: 0,
            created_at: s.now(),
        },
    )
    .await?;
    let all: Vec<CheckpointId> = made.iter().map(|c| c.id.clone()).collect();
    let other = fixture(s, "globex").await?;
    assert_eq!(s.tenant_row_bytes(&other.tenant).await?, 0);
    let rows_before = s.tenant_row_bytes(&fx.tenant).await?;
    assert!(rows_before >= 5 * 256, "{rows_before}");

    let pruned = s
        .prune_checkpoints(&lease, &fx.tenant, &fx.session.id, &all)
        .await?;
    let pruned: Vec<CheckpointId> = pruned.into_iter().map(|c| c.id).collect();
    assert_eq!(pruned, [all[2].clone(), all[3].clone()]);
    let kept: Vec<CheckpointId> = s
        .list_checkpoints(&fx.tenant, &fx.session.id)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(kept, [all[0].clone(), all[1].clone(), all[4].clone()]);
    // the blob the pruned third stored first is still kept for the collection
    assert!(s.snapshot_blob_referenced(&"c".repeat(64)).await?);
    assert_eq!(
        s.checkpoint_manifests(&fx.tenant).await?,
        ["1", "2", "5"].map(|m| m.repeat(64))
    );
    assert!(s.checkpoint_manifests(&other.tenant).await?.is_empty());
    assert!(s.tenant_row_bytes(&fx.tenant).await? < rows_before);

    // another tenant's ids prune nothing; nor does a stale lease
    assert!(
        s.prune_checkpoints(&lease, &other.tenant, &fx.session.id, &all)
            .await?
            .is_empty()
    );
    s.release_lease(&lease).await?;
    let _newer = lease_session(s, &fx.session, "node/b").await?;
    assert_stale(
        s.prune_checkpoints(&lease, &fx.tenant, &fx.session.id, &all)
            .await,
        &lease,
    );
    Ok(())
}
