//! Checkpoint files are de-duplicated per tenant (issue 26): a tenant's
//! checkpoint counts as new the content only it has not stored, whatever
//! other tenants hold, so `new_blobs`/`new_bytes` tell nothing of them; and
//! checkpoints taken before tenants had their own part of the blob store
//! (files in the store itself) still diff, fork and rewind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::fs;
use std::path::Path;

use paddock_core::ids::TenantId;
use paddock_core::store::{Checkpoint, Session, Tenant};
use paddock_runtime::StartRun;
use serde_json::json;
use support::{Harness, call, seed, turn};

/// A run of `tenant` in a session over `project` that edits README.md;
/// the session and its checkpoints (start, after the edit).
async fn edit_run(h: &Harness, tenant: &TenantId, project: &Path) -> (Session, Vec<Checkpoint>) {
    let workspace = h.runtime.workspace_for_dir(tenant, project).await.unwrap();
    let session = h
        .runtime
        .create_session(tenant, &workspace.id, "edit")
        .await
        .unwrap();
    let script = h.script(
        &format!("edit-{tenant}"),
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
        .start_run(tenant, &session.id, StartRun::new("Edit", script))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let checkpoints = h
        .runtime
        .list_checkpoints(tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(checkpoints.len(), 2, "{checkpoints:?}");
    (session, checkpoints)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_files_do_not_count_as_stored() {
    let h = Harness::new().await;
    seed(&h.project);
    let (_, acme) = edit_run(&h, &h.tenant, &h.project).await;
    // 3 contents at the start, the edited README after
    assert_eq!((acme[0].new_blobs, acme[1].new_blobs), (3, 1));

    let globex = TenantId::parse("globex").unwrap();
    h.store
        .ensure_tenant(&Tenant {
            id: globex.clone(),
            name: "Globex".into(),
            created_at: h.store.now(),
        })
        .await
        .unwrap();
    let project = h.dir.path().join("globex-project");
    seed(&project);
    let (_, theirs) = edit_run(&h, &globex, &project).await;
    assert_eq!(
        theirs
            .iter()
            .map(|c| (c.new_blobs, c.new_bytes))
            .collect::<Vec<_>>(),
        acme.iter()
            .map(|c| (c.new_blobs, c.new_bytes))
            .collect::<Vec<_>>(),
        "the same files count the same for a tenant that never stored them"
    );
    // each tenant's files are in its own part of the store
    for tenant in ["acme", "globex"] {
        assert!(
            h.dir.path().join("blobs/tenants").join(tenant).is_dir(),
            "{tenant}"
        );
    }
}

/// Moves every blob of `part` into `root`, where checkpoints stored them
/// before tenants had parts, and removes the part.
fn move_to_the_old_layout(part: &Path, root: &Path) {
    for shard in fs::read_dir(part).unwrap() {
        let shard = shard.unwrap();
        let name = shard.file_name().into_string().unwrap();
        if name.len() != 2 {
            continue;
        }
        fs::create_dir_all(root.join(&name)).unwrap();
        for blob in fs::read_dir(shard.path()).unwrap() {
            let blob = blob.unwrap();
            fs::rename(blob.path(), root.join(&name).join(blob.file_name())).unwrap();
        }
    }
    fs::remove_dir_all(part).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_stored_before_tenant_parts_still_diff_fork_and_rewind() {
    let h = Harness::new().await;
    seed(&h.project);
    let (session, checkpoints) = edit_run(&h, &h.tenant, &h.project).await;
    let blobs = h.dir.path().join("blobs");
    move_to_the_old_layout(&blobs.join("tenants").join(h.tenant.as_str()), &blobs);

    let diff = h
        .runtime
        .diff_checkpoints(
            &h.tenant,
            &session.id,
            Some(&checkpoints[0].id),
            Some(&checkpoints[1].id),
        )
        .await
        .unwrap();
    assert_eq!(diff.changes.len(), 1, "{diff:?}");
    let patch = diff.changes[0].patch.as_deref().unwrap_or_default();
    assert!(
        patch.contains("-hello") && patch.contains("+changed"),
        "{patch}"
    );

    let fork = h
        .runtime
        .fork_at_checkpoint(&h.tenant, &session.id, &checkpoints[0].id, "old")
        .await
        .unwrap();
    let dir = h.workspaces_root().join(fork.workspace.as_str());
    assert_eq!(
        h.read(&dir, "README.md").as_deref(),
        Some("# Project\n\nhello\n")
    );
    assert_eq!(fs::read(dir.join("data.bin")).unwrap().len(), 65_536);

    h.runtime
        .rewind_session(&h.tenant, &session.id, &checkpoints[0].id, false)
        .await
        .unwrap();
    assert_eq!(
        h.read(&h.project, "README.md").as_deref(),
        Some("# Project\n\nhello\n")
    );
}
