//! Per-turn checkpoints end to end: a scripted run that empties its
//! workspace with `rm -rf ./*`, then a rewind that restores the workspace
//! byte for byte and the history to that point, a fork at a checkpoint,
//! diffs, content stored once, and a hostile manifest refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use paddock_core::blob::BlobStore;
use paddock_core::ids::CheckpointId;
use paddock_core::store::{Checkpoint, CheckpointReason, Lease, RunState};
use paddock_runtime::StartRun;
use paddock_snapshot::LocalBlobStore;
use paddock_snapshot::checkpoint::{ChangeKind, Entry, Manifest, Node};
use serde_json::json;
use support::{Harness, call, seed, turn};

/// Every path under `root` with its bytes (None for a directory).
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else {
                out.insert(rel, Some(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn reasons(checkpoints: &[Checkpoint]) -> Vec<(CheckpointReason, u64)> {
    checkpoints
        .iter()
        .map(|c| (c.reason, c.new_blobs))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rm_rf_then_rewind_restores_the_workspace_and_the_history() {
    let h = Harness::new().await;
    seed(&h.project);
    let original = tree(&h.project);
    let session = h.session("destructive").await;
    let script = h.script(
        "destroy",
        json!([
            turn(
                "Writing notes.",
                vec![call(
                    "write_file",
                    json!({"path": "notes.txt", "content": "v1\nsecond line\n"})
                )]
            ),
            turn(
                "Cleaning up.",
                vec![call("run_command", json!({"command": "rm -rf ./*"}))]
            ),
            turn("All clean.", vec![]),
        ]),
    );
    let run = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Tidy the project", script),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(run.state.is_terminal(), "{run:?}");
    assert!(tree(&h.project).is_empty(), "the run emptied the workspace");

    // a checkpoint before the run and after each batch that changed something;
    // lib.rs and nested/same.rs hold the same bytes: stored once
    let checkpoints = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(
        reasons(&checkpoints),
        [
            (CheckpointReason::RunStart, 3),
            (CheckpointReason::ToolBatch, 1),
            (CheckpointReason::ToolBatch, 0),
        ]
    );
    let (start, written, emptied) = (&checkpoints[0], &checkpoints[1], &checkpoints[2]);
    assert_eq!(start.message_seq, 0, "before the run's first message");
    assert!(written.message_seq < emptied.message_seq);
    assert_eq!(emptied.file_count, 0);
    // a batch's checkpoint is written with its results: its position is them
    let history = h
        .store
        .list_messages(&h.tenant, &session.id, None)
        .await
        .unwrap();
    for batch in [written, emptied] {
        let at = history.iter().find(|m| m.seq == batch.message_seq).unwrap();
        assert_eq!(
            at.message.role,
            paddock_core::model::Role::Tool,
            "{batch:?}"
        );
        let next = history.iter().find(|m| m.seq == batch.message_seq + 1);
        assert!(
            next.is_none_or(|m| m.message.role == paddock_core::model::Role::Assistant),
            "{next:?}"
        );
    }
    let created = h.payloads(&session.id, "checkpoint.created").await;
    assert_eq!(created.len(), 3);
    assert_eq!(created[1]["checkpoint_id"], written.id.to_string());
    assert_eq!(created[1]["hashed_files"], 1, "only the new file was read");

    // diffs: what the write added (with its text), what rm removed
    let added = h
        .runtime
        .diff_checkpoints(&h.tenant, &session.id, Some(&start.id), Some(&written.id))
        .await
        .unwrap();
    assert_eq!(added.changes.len(), 1);
    assert_eq!(
        (added.changes[0].path.as_str(), added.changes[0].change),
        ("notes.txt", ChangeKind::Added)
    );
    let patch = added.changes[0].patch.as_deref().unwrap();
    assert!(
        patch.contains("+++ b/notes.txt") && patch.contains("+v1\n"),
        "{patch}"
    );
    let removed = h
        .runtime
        .diff_checkpoints(&h.tenant, &session.id, None, Some(&emptied.id))
        .await
        .unwrap();
    assert_eq!(removed.from.as_ref(), Some(&written.id));
    let mut paths: Vec<(&str, ChangeKind)> = removed
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.change))
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            ("README.md", ChangeKind::Removed),
            ("data.bin", ChangeKind::Removed),
            ("notes.txt", ChangeKind::Removed),
            ("src", ChangeKind::Removed),
            ("src/lib.rs", ChangeKind::Removed),
            ("src/nested", ChangeKind::Removed),
            ("src/nested/same.rs", ChangeKind::Removed),
        ]
    );
    let binary = removed
        .changes
        .iter()
        .find(|c| c.path == "data.bin")
        .unwrap();
    assert!(binary.patch.is_none(), "no text diff of a binary file");
    let now = h
        .runtime
        .diff_checkpoints(&h.tenant, &session.id, None, None)
        .await
        .unwrap();
    assert!(
        now.changes.is_empty(),
        "nothing changed since the last checkpoint"
    );

    // rewind to just after the write: files back byte for byte, as a new run
    let rewound = h
        .runtime
        .rewind_session(&h.tenant, &session.id, &written.id, false)
        .await
        .unwrap();
    assert_eq!(rewound.run.state, RunState::Completed);
    assert_ne!(rewound.run.id, run.id);
    let mut expected = original.clone();
    expected.insert("notes.txt".into(), Some(b"v1\nsecond line\n".to_vec()));
    assert_eq!(tree(&h.project), expected);
    assert_eq!(rewound.files_written, 5);
    let after = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(
        after.last().map(|c| (c.reason, c.new_blobs, c.file_count)),
        Some((CheckpointReason::Rewind, 0, 5)),
        "the restored state is a checkpoint that stored nothing new"
    );

    // the next run sees the history up to the checkpoint: the write, not the rm
    let next = h.script("next", json!([turn("Looks fine.", vec![])]));
    h.runtime
        .start_run(&h.tenant, &session.id, StartRun::new("Check", next.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let request = serde_json::to_string(&next.requests()[0].messages).unwrap();
    assert!(request.contains("Writing notes."), "{request}");
    assert!(request.contains("notes.txt"), "{request}");
    assert!(
        !request.contains("rm -rf"),
        "the rewound turn is gone: {request}"
    );
    assert!(!request.contains("Cleaning up."), "{request}");

    // the tenant's part of the blob store holds each content once: 4 files + manifests
    let blobs = LocalBlobStore::open(h.dir.path().join("blobs")).unwrap();
    let file_blobs: u64 = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap()
        .iter()
        .map(|c| c.new_blobs)
        .sum();
    assert_eq!(file_blobs, 4);
    assert!(blobs.tenant(&h.tenant).list().unwrap().len() >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_at_a_checkpoint_is_a_new_session_with_that_workspace() {
    let h = Harness::new().await;
    seed(&h.project);
    let original = tree(&h.project);
    let session = h.session("forkable").await;
    let script = h.script(
        "edit",
        json!([
            turn(
                "Editing.",
                vec![call(
                    "write_file",
                    json!({"path": "README.md", "content": "changed\n"})
                )]
            ),
            turn("Done.", vec![]),
        ]),
    );
    h.runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Edit the readme", script),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let checkpoints = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(checkpoints.len(), 2);
    let fork = h
        .runtime
        .fork_at_checkpoint(
            &h.tenant,
            &session.id,
            &checkpoints[0].id,
            "before the edit",
        )
        .await
        .unwrap();
    assert_eq!(fork.forked_from.as_ref(), Some(&session.id));
    assert_ne!(fork.workspace, session.workspace);
    let dir = h.workspaces_root().join(fork.workspace.as_str());
    assert_eq!(
        tree(&dir),
        original,
        "the fork has the workspace from before the run"
    );
    assert_eq!(
        h.read(&h.project, "README.md").as_deref(),
        Some("changed\n"),
        "the source is untouched"
    );
    let messages = h
        .store
        .list_messages(&h.tenant, &fork.id, None)
        .await
        .unwrap();
    assert!(
        messages.is_empty(),
        "the checkpoint was taken before the run's first message"
    );

    let at_edit = h
        .runtime
        .fork_at_checkpoint(&h.tenant, &session.id, &checkpoints[1].id, "after")
        .await
        .unwrap();
    let dir = h.workspaces_root().join(at_edit.workspace.as_str());
    assert_eq!(h.read(&dir, "README.md").as_deref(), Some("changed\n"));
    let copied = h
        .store
        .list_messages(&h.tenant, &at_edit.id, None)
        .await
        .unwrap();
    assert_eq!(copied.len() as u64, checkpoints[1].message_seq);

    // a checkpoint of another session is not this one's
    let other = h.session("other").await;
    let err = h
        .runtime
        .rewind_session(&h.tenant, &other.id, &checkpoints[0].id, false)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is not one of session"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_whose_manifest_escapes_the_workspace_is_refused() {
    let h = Harness::new().await;
    seed(&h.project);
    let session = h.session("hostile").await;
    let script = h.script("noop", json!([turn("Nothing to do.", vec![])]));
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, StartRun::new("Look", script))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let blobs = LocalBlobStore::open(h.dir.path().join("blobs")).unwrap();
    let put = |bytes: &[u8]| {
        let mut writer = blobs.writer().unwrap();
        std::io::Write::write_all(&mut writer, bytes).unwrap();
        writer.commit().unwrap().key
    };
    let content = put(b"escaped");
    let outside = h.dir.path().join("outside.txt");
    for path in [
        "../outside.txt",
        "/tmp/paddock-escape.txt",
        "src/../../outside.txt",
    ] {
        let mut manifest = Manifest::new(0);
        manifest.entries.insert(
            path.into(),
            Entry {
                node: Node::File {
                    hash: content.clone(),
                    size: 7,
                },
                mode: 0o644,
                stat: None,
            },
        );
        let manifest_key = put(&manifest.to_bytes());
        let lease = h
            .store
            .acquire_lease(
                &Lease::session_resource(&session.id),
                "test/forger",
                std::time::Duration::from_secs(5),
            )
            .await
            .unwrap();
        let forged = h
            .store
            .create_checkpoint(
                &lease,
                &Checkpoint {
                    id: CheckpointId::generate(),
                    tenant: h.tenant.clone(),
                    session: session.id.clone(),
                    run: run.id.clone(),
                    workspace: session.workspace.clone(),
                    reason: CheckpointReason::ToolBatch,
                    message_seq: 0,
                    event_seq: 0,
                    plan_version: 0,
                    manifest_hash: manifest_key.to_string(),
                    file_count: 1,
                    bytes: 7,
                    new_blobs: 0,
                    new_bytes: 0,
                    created_at: h.store.now(),
                },
                &[],
            )
            .await
            .unwrap();
        h.store.release_lease(&lease).await.unwrap();
        let err = h
            .runtime
            .rewind_session(&h.tenant, &session.id, &forged.id, true)
            .await
            .unwrap_err();
        let mut chain = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            chain.push_str(": ");
            chain.push_str(&cause.to_string());
            source = cause.source();
        }
        assert!(chain.contains("refusing"), "{path}: {chain}");
        assert!(!outside.exists(), "{path}: written outside the workspace");
        assert!(!Path::new("/tmp/paddock-escape.txt").exists());
        assert!(
            h.project.join("README.md").exists(),
            "{path}: the workspace was left alone"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_names_an_edit_made_since_keeps_it_and_can_be_undone() {
    let h = Harness::new().await;
    seed(&h.project);
    let original = tree(&h.project);
    let session = h.session("edited").await;
    let script = h.script(
        "write",
        json!([
            turn(
                "Writing notes.",
                vec![call(
                    "write_file",
                    json!({"path": "notes.txt", "content": "v1\n"})
                )]
            ),
            turn("Done.", vec![]),
        ]),
    );
    h.runtime
        .start_run(&h.tenant, &session.id, StartRun::new("Write notes", script))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let checkpoints = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    let (start, written) = (&checkpoints[0], &checkpoints[1]);
    assert_eq!(start.reason, CheckpointReason::RunStart);

    // the user's own edits, made after the run, outside paddock
    fs::write(h.project.join("README.md"), "# Project\n\nmy own edit\n").unwrap();
    fs::write(h.project.join("mine.txt"), "mine\n").unwrap();
    let edited = tree(&h.project);

    // refused, naming both, and nothing written
    let err = h
        .runtime
        .rewind_session(&h.tenant, &session.id, &start.id, false)
        .await
        .unwrap_err();
    match &err {
        paddock_runtime::RuntimeError::WorkspaceChanged {
            checkpoint, paths, ..
        } => {
            assert_eq!(checkpoint, &written.id, "compared with the last checkpoint");
            assert_eq!(paths, &["README.md", "mine.txt"]);
        }
        other => panic!("{other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("README.md, mine.txt") && message.contains("--force"),
        "{message}"
    );
    assert_eq!(tree(&h.project), edited, "a refused rewind writes nothing");
    let unchanged = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(unchanged.len(), checkpoints.len(), "and records nothing");

    // forced: the workspace as it was is a checkpoint of the rewind's run
    let rewound = h
        .runtime
        .rewind_session(&h.tenant, &session.id, &start.id, true)
        .await
        .unwrap();
    assert_eq!(tree(&h.project), original);
    assert_eq!(rewound.changed, ["README.md", "mine.txt"]);
    let after = h
        .runtime
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap();
    let safety = after
        .iter()
        .find(|c| c.id == rewound.safety_checkpoint)
        .unwrap();
    assert_eq!(
        (safety.reason, safety.run.clone(), safety.file_count),
        (CheckpointReason::RunStart, rewound.run.id.clone(), 6)
    );
    assert_eq!(
        after.last().map(|c| c.reason),
        Some(CheckpointReason::Rewind)
    );

    // the undo: a rewind to it puts the edits back (nothing changed since)
    let undone = h
        .runtime
        .rewind_session(&h.tenant, &session.id, &rewound.safety_checkpoint, false)
        .await
        .unwrap();
    assert_eq!(tree(&h.project), edited, "the user's edits are back");
    assert!(undone.changed.is_empty());
    // and so is the history: the next run sees the first run's whole turn
    let next = h.script("next", json!([turn("Looks fine.", vec![])]));
    h.runtime
        .start_run(&h.tenant, &session.id, StartRun::new("Check", next.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let request = serde_json::to_string(&next.requests()[0].messages).unwrap();
    assert!(request.contains("Writing notes."), "{request}");
    assert!(request.contains("Done."), "{request}");
}
