//! Volume rows: unique names per tenant, listed by name in pages, never
//! seen by another tenant, deleted.

use paddock_core::store::{Page, StoreError};
use paddock_core::volume::{VolumeName, VolumeRecord};

use super::{StoreFactory, assert_conflict, assert_not_found, clock, fixture};

pub async fn volumes_are_per_tenant_and_listed_by_name(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let a = fixture(&*store, "acme").await?.tenant;
    let b = fixture(&*store, "globex").await?.tenant;
    let volume = |tenant: &paddock_core::ids::TenantId, name: &str, quota_bytes| VolumeRecord {
        tenant: tenant.clone(),
        name: VolumeName::parse(name).unwrap_or_else(|e| panic!("{e}")),
        quota_bytes,
        created_at: store.now(),
    };
    let cache = volume(&a, "cache", 8 << 20);
    for v in [
        &volume(&a, "zeta", 1 << 20),
        &cache,
        &volume(&a, "data", 1 << 30),
    ] {
        store.create_volume(v).await?;
    }
    // the same name in another tenant is another volume
    store.create_volume(&volume(&b, "cache", 2 << 20)).await?;
    assert_conflict(store.create_volume(&cache).await, "volume");

    assert_eq!(store.get_volume(&a, &cache.name).await?, cache);
    assert_eq!(
        store.get_volume(&b, &cache.name).await?.quota_bytes,
        2 << 20
    );
    let names = |page: Vec<VolumeRecord>| {
        page.into_iter()
            .map(|v| v.name.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(store.list_volumes(&a, &Page::default()).await?),
        ["cache", "data", "zeta"]
    );
    let second = Page {
        after: Some("cache".to_owned()),
        limit: 1,
    };
    assert_eq!(names(store.list_volumes(&a, &second).await?), ["data"]);

    assert_not_found(
        store
            .get_volume(
                &b,
                &VolumeName::parse("zeta").unwrap_or_else(|e| panic!("{e}")),
            )
            .await,
        "volume",
        "zeta",
    );
    store.delete_volume(&a, &cache.name).await?;
    assert_not_found(store.get_volume(&a, &cache.name).await, "volume", "cache");
    assert_not_found(
        store.delete_volume(&a, &cache.name).await,
        "volume",
        "cache",
    );
    // b's of the same name stays
    assert_eq!(
        store.get_volume(&b, &cache.name).await?.quota_bytes,
        2 << 20
    );
    // a tenant that does not exist has none to create
    let ghost = paddock_core::ids::TenantId::parse("ghost")?;
    assert!(matches!(
        store.create_volume(&volume(&ghost, "x", 1 << 20)).await,
        Err(StoreError::NotFound {
            entity: "tenant",
            ..
        })
    ));
    Ok(())
}
