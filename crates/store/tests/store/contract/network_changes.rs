//! Network changes of a sandbox: numbered per sandbox from 1, listed oldest
//! first in pages, kept with the policies, who and what was cut, never seen
//! by another tenant, refused for a sandbox the tenant does not have.

use paddock_core::sandbox::{NetworkPolicy, SandboxId};
use paddock_core::store::{NetworkChangeRecord, StoreError};

use super::cases::sandbox;
use super::{StoreFactory, assert_not_found, clock, fixture};

fn allow(hosts: &str) -> NetworkPolicy {
    format!("allow:{hosts}")
        .parse()
        .unwrap_or_else(|e| panic!("{e}"))
}

pub async fn network_changes_are_numbered_per_sandbox_and_listed_in_pages(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let acme = fixture(&*store, "acme").await?.tenant;
    let globex = fixture(&*store, "globex").await?.tenant;
    let first = sandbox(&acme, None, "node-a", &*store);
    let second = sandbox(&acme, None, "node-a", &*store);
    let theirs = sandbox(&globex, None, "node-a", &*store);
    for sb in [&first, &second, &theirs] {
        store.create_sandbox(sb).await?;
    }
    let change = |sb: &paddock_core::store::SandboxRecord, from: &str, to: &str, cut: &[&str]| {
        NetworkChangeRecord {
            tenant: sb.tenant.clone(),
            sandbox: sb.id.clone(),
            seq: 0,
            old: allow(from),
            new: allow(to),
            by: sb.tenant.to_string(),
            cut: cut.iter().map(|c| (*c).to_owned()).collect(),
            at: store.now(),
        }
    };

    let one = store
        .append_network_change(&change(&first, "a.test", "b.test", &["a.test:443"]))
        .await?;
    assert_eq!(one.seq, 1);
    clock.advance(std::time::Duration::from_secs(1));
    // another sandbox counts its own
    let other = store
        .append_network_change(&change(&second, "a.test", "c.test", &[]))
        .await?;
    assert_eq!(other.seq, 1);
    let two = store
        .append_network_change(&change(&first, "b.test", "b.test,*.pypi.org", &[]))
        .await?;
    let three = store
        .append_network_change(&change(
            &first,
            "b.test,*.pypi.org",
            "d.test:8080",
            &["b.test:80", "b.test:443"],
        ))
        .await?;
    assert_eq!((two.seq, three.seq), (2, 3));
    assert!(two.at > one.at, "each keeps its own time");

    let all = store.list_network_changes(&acme, &first.id, 0, 100).await?;
    assert_eq!(all, [one.clone(), two.clone(), three.clone()]);
    assert_eq!(all[2].cut, ["b.test:80", "b.test:443"]);
    assert_eq!(all[2].new, allow("d.test:8080"));
    assert_eq!(all[0].by, "acme");
    // pages: after a seq, at most limit
    assert_eq!(
        store.list_network_changes(&acme, &first.id, 0, 2).await?,
        [one, two.clone()]
    );
    assert_eq!(
        store.list_network_changes(&acme, &first.id, 1, 1).await?,
        [two]
    );
    assert!(
        store
            .list_network_changes(&acme, &first.id, 3, 100)
            .await?
            .is_empty()
    );

    // another tenant sees none of them, and cannot add to them
    assert!(
        store
            .list_network_changes(&globex, &first.id, 0, 100)
            .await?
            .is_empty()
    );
    let forged = NetworkChangeRecord {
        tenant: globex.clone(),
        ..change(&first, "a.test", "e.test", &[])
    };
    assert_not_found(
        store.append_network_change(&forged).await,
        "sandbox",
        first.id.as_str(),
    );
    let ghost = SandboxId::generate();
    let nowhere = NetworkChangeRecord {
        sandbox: ghost.clone(),
        ..change(&first, "a.test", "e.test", &[])
    };
    assert!(matches!(
        store.append_network_change(&nowhere).await,
        Err(StoreError::NotFound {
            entity: "sandbox",
            ..
        })
    ));
    assert_eq!(
        store
            .list_network_changes(&acme, &first.id, 0, 100)
            .await?
            .len(),
        3,
        "nothing refused was kept"
    );
    Ok(())
}
