//! A full disk under a running store: writes fail with `Full`, and once
//! space is freed the same store writes again, without being reopened,
//! having lost nothing it had committed. Each engine's test puts its
//! database on a [`LoopFs`] and hands the store here.

use std::sync::Arc;

use paddock_core::store::{NewEvent, Session, Store, StoreError};

use super::loop_fs::LoopFs;
use super::{fixture, lease_session};

fn event(session: &Session, kind: &str, n: usize, bytes: usize) -> NewEvent {
    NewEvent {
        session: session.id.clone(),
        run: None,
        kind: kind.to_owned(),
        payload: format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(bytes)),
    }
}

/// Fills `fs` under `store`, writes until the store says `Full` and then
/// some more (each of the pool's connections meets the failure), frees the
/// space and writes again on the same store.
///
/// Postgres answers a full disk under its WAL with a PANIC and a restart of
/// every backend (crash recovery), so there a write meanwhile may also fail
/// `Unavailable` (`server_restarts`), and after the space is freed a write
/// is retried while the server comes back (at most 60 s).
pub async fn a_full_disk_fails_writes_then_they_work_again(
    store: Arc<dyn Store>,
    fs: &LoopFs,
    server_restarts: bool,
) -> anyhow::Result<()> {
    let f = fixture(&*store, "acme").await?;
    let lease = lease_session(&*store, &f.session, "node-a").await?;
    for n in 0..5 {
        store
            .append_event(&lease, &f.tenant, &event(&f.session, "before", n, 1000))
            .await?;
    }
    store.probe_write().await?;

    let filled = fs.fill()?;
    println!("filled the file system with {filled} bytes");
    // A WAL may still take a few pages in frames it reuses: write until the
    // store says it is full (64 KiB a time, 16 MiB at most).
    let mut landed = 0usize;
    let mut first_full = None;
    for n in 0..256 {
        match store
            .append_event(
                &lease,
                &f.tenant,
                &event(&f.session, "filling", n, 64 << 10),
            )
            .await
        {
            Ok(_) => landed += 1,
            Err(err) => {
                first_full = Some(err);
                break;
            }
        }
    }
    println!(
        "{landed} writes of 64 KiB landed after the fill, then: {}",
        first_full
            .as_ref()
            .map_or("nothing".to_owned(), |e| format!(
                "{e}: {:?}",
                std::error::Error::source(e).map(ToString::to_string)
            ))
    );
    match first_full {
        Some(StoreError::Full { operation, .. }) => assert_eq!(operation, "append_event"),
        Some(StoreError::Unavailable { .. }) if server_restarts => {}
        other => panic!("expected Full once the disk filled, got {other:?}"),
    }
    // every connection of the pool (8) meets the full disk, several times
    for n in 0..24 {
        match store
            .append_event(&lease, &f.tenant, &event(&f.session, "full", n, 64 << 10))
            .await
        {
            Err(StoreError::Full { .. }) => {}
            Err(StoreError::Unavailable { .. }) if server_restarts => {}
            other => panic!("write {n} on the full disk: expected Full, got {other:?}"),
        }
    }
    match store.probe_write().await {
        Err(StoreError::Full { .. }) => {}
        Err(StoreError::Unavailable { .. }) if server_restarts => {}
        other => panic!("the write probe on a full disk: expected Full, got {other:?}"),
    }
    if !server_restarts {
        // reads still answer
        store.ping().await?;
    }

    fs.free()?;
    // the same store, not reopened: every connection writes again
    let freed = std::time::Instant::now();
    for n in 0..24 {
        loop {
            match store
                .append_event(&lease, &f.tenant, &event(&f.session, "after", n, 1000))
                .await
            {
                Ok(_) => break,
                Err(StoreError::Unavailable { .. } | StoreError::Full { .. })
                    if server_restarts && freed.elapsed() < std::time::Duration::from_secs(60) =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => anyhow::bail!("write {n} after freeing space: {e:?}"),
            }
        }
    }
    println!(
        "writes work again {:?} after the space was freed",
        freed.elapsed()
    );
    // the probe counts a refused write for 2 s (see the store's probe.rs)
    let probing = std::time::Instant::now();
    while let Err(err) = store.probe_write().await {
        if probing.elapsed() > std::time::Duration::from_secs(5) {
            anyhow::bail!("the write probe still fails 5 s after writes work again: {err:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // nothing committed is lost, nothing refused was kept, no gap
    let events = store.list_events(&f.tenant, &f.session.id, 0, 1000).await?;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "before").count(), 5);
    assert_eq!(kinds.iter().filter(|k| **k == "filling").count(), landed);
    assert_eq!(kinds.iter().filter(|k| **k == "full").count(), 0);
    assert_eq!(kinds.iter().filter(|k| **k == "after").count(), 24);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    Ok(())
}
