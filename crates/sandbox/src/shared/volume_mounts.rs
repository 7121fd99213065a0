//! A spec's named volumes on the host side of a container or jail: each
//! read-write volume's top directory is given to the sandbox's user before
//! it is bound (the volume host makes it root's), so that user can create
//! files in it; a read-only one is left as it is (the bind is read-only).

use std::os::unix::fs::chown;

use paddock_core::sandbox::{HostVolumeMount, SandboxError, SandboxId};

/// Gives each read-write volume's top directory to `uid:gid`.
pub(crate) fn give_to(
    id: &SandboxId,
    volumes: &[HostVolumeMount],
    uid: u32,
    gid: u32,
) -> Result<(), SandboxError> {
    for volume in volumes.iter().filter(|v| !v.read_only) {
        chown(&volume.host, Some(uid), Some(gid)).map_err(|source| SandboxError::Workspace {
            id: id.clone(),
            path: volume.host.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The engine's bind of each volume (`host:path:ro|rw`).
pub(crate) fn binds(volumes: &[HostVolumeMount]) -> impl Iterator<Item = String> + '_ {
    volumes.iter().map(|v| {
        let mode = if v.read_only { "ro" } else { "rw" };
        format!("{}:{}:{mode}", v.host.display(), v.path)
    })
}
