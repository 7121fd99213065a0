//! What every backend with network gives its sandbox from the host's
//! egress proxy: the variables commands get, the secrets' notices for the
//! enforcement report, the CA bundle, the egress log filled from the
//! proxy's decisions, and the directory that marks a sandbox with a
//! namespace for the reaper.

use std::path::Path;

use paddock_core::sandbox::{EgressLog, SandboxError, SandboxId, SandboxSpec};
use tokio::task::JoinHandle;

/// The host's system roots, put before the sandbox's CA in a container's
/// bundle (the image is Debian as the host; a root it lacks only makes a
/// TLS client refuse a host, never trust one more).
const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

pub(crate) type EgressReceiver = tokio::sync::mpsc::Receiver<paddock_egress::EgressDecision>;

/// The sandbox's egress log, filled from the proxy's decisions by a task
/// that ends when the proxy stops (its sender goes with it).
pub(crate) fn fill_egress_log(mut decisions: EgressReceiver) -> (EgressLog, JoinHandle<()>) {
    let log = EgressLog::default();
    let filled = log.clone();
    let task = tokio::spawn(async move {
        while let Some(decision) = decisions.recv().await {
            filled.push(decision);
        }
    });
    (log, task)
}

/// The variables every command gets besides the proxy's: the secrets'
/// placeholders (never a value) and the CA bundle's paths, only where the
/// proxy intercepts (`intercepted`: the sandbox has a CA).
pub(crate) fn egress_env(spec: &SandboxSpec, intercepted: bool) -> Vec<(String, String)> {
    if !intercepted {
        return Vec::new();
    }
    spec.secrets
        .iter()
        .map(|s| (s.name.clone(), s.placeholder()))
        .chain(
            paddock_jail::CA_BUNDLE_VARS
                .iter()
                .map(|var| ((*var).to_owned(), paddock_jail::CA_BUNDLE_PATH.to_owned())),
        )
        .collect()
}

/// The secrets' names and hosts for the enforcement report, where the
/// proxy intercepts.
pub(crate) fn secret_notices(
    spec: &SandboxSpec,
    intercepted: bool,
) -> Vec<paddock_proto::SecretNotice> {
    if !intercepted {
        return Vec::new();
    }
    spec.secrets.iter().map(|s| s.notice()).collect()
}

/// The bundle a container binds read-only at
/// [`paddock_jail::CA_BUNDLE_PATH`]: the host's roots, then the sandbox's CA.
pub(crate) fn ca_bundle(ca_pem: &str) -> String {
    let system = std::fs::read_to_string(HOST_CA_BUNDLE).unwrap_or_default();
    format!("{system}\n{ca_pem}")
}

/// `<temp_root>/paddock-<id>-<random>`, held while a sandbox with network
/// has its namespace: the namespace names no owner, so this is how the
/// reaper of a dead owner's configuration finds it (as a temporary
/// workspace, whose id it then clears).
pub(crate) fn net_marker(
    id: &SandboxId,
    spec: &SandboxSpec,
    temp_root: Option<&Path>,
) -> Result<Option<tempfile::TempDir>, SandboxError> {
    let Some(root) = temp_root else {
        return Ok(None);
    };
    if !spec.policy.network.has_egress() {
        return Ok(None);
    }
    tempfile::Builder::new()
        .prefix(&format!("paddock-{id}-"))
        .tempdir_in(root)
        .map(Some)
        .map_err(|e| SandboxError::Workspace {
            id: id.clone(),
            path: root.to_path_buf(),
            source: e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_the_bundle_only_where_the_proxy_intercepts() {
        let spec = SandboxSpec {
            secrets: vec![
                paddock_proto::SecretSpec::new(
                    "API_KEY",
                    paddock_proto::SecretValue::new("sk-never-here"),
                    &["api.test"],
                    None,
                )
                .unwrap(),
            ],
            ..SandboxSpec::default()
        };
        assert!(egress_env(&spec, false).is_empty());
        assert!(secret_notices(&spec, false).is_empty());
        let env = egress_env(&spec, true);
        assert_eq!(
            env[0],
            (
                "API_KEY".to_owned(),
                "paddock-secret-placeholder-API_KEY".to_owned()
            )
        );
        assert_eq!(env.len(), 1 + paddock_jail::CA_BUNDLE_VARS.len());
        assert!(!format!("{env:?}").contains("sk-never-here"));
        assert_eq!(secret_notices(&spec, true)[0].name, "API_KEY");
        assert!(ca_bundle("CA PEM").ends_with("\nCA PEM"));
    }
}
