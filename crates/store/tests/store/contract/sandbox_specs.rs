//! Contract cases for a sandbox row's `spec`: it is stored as JSON and read
//! back typed ([`RecordedSpec`]). The rows today's code wrote before it
//! existed, in the sandbox API's shape and in the runtime's (a whole
//! `SandboxSpec` without its workspace), read as they were meant; a spec
//! that does not read makes the row corrupt: quarantined (copied, left in
//! place), skipped by the listings, an error when asked for by id.

use std::collections::BTreeSet;

use paddock_core::ids::SnapshotId;
use paddock_core::sandbox::{DowngradeLayer, SandboxId, SandboxLimits, SandboxPolicy, SandboxSpec};
use paddock_core::store::{Page, RecordedSpec, SandboxRecord, SandboxState, Store, StoreError};

use super::{StoreFactory, clock, fixture};

const LIMITS: &str = r#"{"memory_bytes":268435456,"pids":64,"cpu_millis":500,"tmp_bytes":67108864,"open_files":1024,"workspace_bytes":1048576,"workspace_inodes":null}"#;

fn limits() -> SandboxLimits {
    SandboxLimits {
        memory_bytes: Some(256 << 20),
        pids: Some(64),
        cpu_millis: Some(500),
        tmp_bytes: 64 << 20,
        open_files: 1024,
        workspace_bytes: Some(1 << 20),
        workspace_inodes: None,
    }
}

async fn raw(f: &dyn StoreFactory) -> anyhow::Result<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    Ok(sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&f.url())
        .await?)
}

fn record(store: &dyn Store, fx: &super::Fixture) -> SandboxRecord {
    SandboxRecord {
        id: SandboxId::generate(),
        tenant: fx.tenant.clone(),
        workspace: Some(fx.workspace.id.clone()),
        backend: "native".to_owned(),
        node: "node-a".to_owned(),
        state: SandboxState::Running,
        spec: RecordedSpec::of(&SandboxSpec::default()),
        pid: Some(4242),
        created_at: store.now(),
        updated_at: store.now(),
        last_active_at: store.now(),
        expires_at: None,
        run: None,
        pause: None,
    }
}

pub async fn old_sandbox_specs_read_and_a_bad_one_is_quarantined(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let [api, run, bad, not_json] = [(); 4].map(|()| record(s, &fx));
    for sb in [&api, &run, &bad, &not_json] {
        s.create_sandbox(sb).await?;
    }
    let parent = SnapshotId::generate();
    // the rows as today's two writers left them: the sandbox API's
    // `StoredSpec` and the runtime's `SandboxSpec` without its workspace
    let api_spec = format!(
        r#"{{"read_only":true,"network":{{"allowlist":["example.com:443"]}},"limits":{LIMITS},"restored_from":"{parent}","image":"alpine:3","console":true}}"#
    );
    let run_spec = format!(
        r#"{{"workspace":null,"read_only":false,"writable_paths":["src","docs/a.md"],"network":"full","limits":{LIMITS},"allow_downgrade":["landlock"]}}"#
    );
    let pool = raw(f).await?;
    for (sb, spec) in [
        (&api, api_spec.as_str()),
        (&run, run_spec.as_str()),
        // limits missing: the old readers showed the defaults
        (&bad, r#"{"read_only":false,"network":"none"}"#),
        (&not_json, "{\"read_only"),
    ] {
        let done = sqlx::query("UPDATE sandboxes SET spec = $1 WHERE id = $2")
            .bind(spec)
            .bind(sb.id.as_str())
            .execute(&pool)
            .await?;
        assert_eq!(done.rows_affected(), 1);
    }

    let api_read = SandboxRecord {
        spec: RecordedSpec {
            policy: SandboxPolicy {
                read_only: true,
                network: serde_json::from_str(r#"{"allowlist":["example.com:443"]}"#)?,
                limits: limits(),
                ..SandboxPolicy::default()
            },
            restored_from: Some(parent.clone()),
            image: Some("alpine:3".to_owned()),
            console: true,
            on_idle: None,
            metadata: Default::default(),
            env: Default::default(),
        },
        ..api.clone()
    };
    let run_read = SandboxRecord {
        spec: RecordedSpec {
            policy: SandboxPolicy {
                writable_paths: vec!["src".to_owned(), "docs/a.md".to_owned()],
                network: serde_json::from_str(r#""full""#)?,
                limits: limits(),
                // the runtime's rows carried the whole policy: all of it reads
                allow_downgrade: BTreeSet::from([DowngradeLayer::Landlock]),
                ..SandboxPolicy::default()
            },
            restored_from: None,
            image: None,
            console: false,
            on_idle: None,
            metadata: Default::default(),
            env: Default::default(),
        },
        ..run.clone()
    };
    assert_eq!(s.get_sandbox(t, &api.id).await?, api_read);
    assert_eq!(s.get_sandbox(t, &run.id).await?, run_read);

    // the bad rows are left out of every listing, and again on a second read
    let mut good = vec![api_read.clone(), run_read.clone()];
    good.sort_by(|a, b| a.id.cmp(&b.id));
    for _ in 0..2 {
        assert_eq!(s.list_sandboxes(t, None, &Page::default()).await?, good);
        assert_eq!(
            s.list_node_sandboxes("node-a", SandboxState::Running)
                .await?,
            good
        );
    }
    // asked for by id, a bad row is a loud error naming the column
    for sb in [&bad, &not_json] {
        match s.get_sandbox(t, &sb.id).await {
            Err(StoreError::Corrupt { entity, id, reason }) => {
                assert_eq!((entity, id.as_str()), ("sandbox", sb.id.as_str()));
                assert!(reason.contains("spec"), "{reason}");
            }
            other => anyhow::bail!("{} read as {other:?}", sb.id),
        }
    }
    // quarantined once each, copied: the row stays (snapshots name it)
    let rows = s.list_quarantined(Some(t), 100).await?;
    let found: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.table.clone(), r.key.clone()))
        .collect();
    let expected: BTreeSet<(String, String)> = [&bad, &not_json]
        .iter()
        .map(|sb| ("sandboxes".to_owned(), format!("id={}", sb.id)))
        .collect();
    assert_eq!(found, expected);
    assert_eq!(rows.len(), 2);
    let row = rows
        .iter()
        .find(|r| r.key == format!("id={}", bad.id))
        .ok_or_else(|| anyhow::anyhow!("the row without limits"))?;
    let columns: serde_json::Value = serde_json::from_str(&row.raw)?;
    assert_eq!(columns["spec"], r#"{"read_only":false,"network":"none"}"#);
    assert_eq!(row.tenant.as_deref(), Some(t.as_str()));
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sandboxes WHERE tenant_id = $1")
        .bind(t.as_str())
        .fetch_one(&pool)
        .await?;
    assert_eq!(left, 4);

    // a row written now is the one typed shape and reads back as written
    let now = SandboxRecord {
        spec: api_read.spec.clone(),
        ..record(s, &fx)
    };
    s.create_sandbox(&now).await?;
    assert_eq!(s.get_sandbox(t, &now.id).await?, now);
    pool.close().await;
    Ok(())
}
