//! A spec's named volumes on the host side of a container or microVM:
//! every file of a volume is the volume owner's on disk
//! ([`VOLUME_OWNER_ID`]), so a sandbox with a read-write volume runs as
//! that owner, and the volume's top directory (the volume host makes it
//! root's) is given to it before it is bound. A read-only volume is left as
//! it is (the bind is read-only; its files are readable by all).

use std::os::unix::fs::chown;

use paddock_core::sandbox::{HostVolumeMount, SandboxError, SandboxId, SandboxSpec};
use paddock_proto::VOLUME_OWNER_ID;

/// The spec mounts a volume read-write: the sandbox must run as the volume
/// owner (a temporary workspace is made the owner's, with no id block of
/// its own).
pub(crate) fn writes_a_volume(spec: &SandboxSpec) -> bool {
    spec.policy.volumes.iter().any(|v| !v.read_only)
}

/// Gives each read-write volume's top directory to the volume owner; a
/// sandbox that would run as anyone else (a workspace of another owner) is
/// refused, since it could not change the files of the volume.
pub(crate) fn give_to_owner(
    backend: &'static str,
    id: &SandboxId,
    volumes: &[HostVolumeMount],
    sandbox_uid: u32,
) -> Result<(), SandboxError> {
    for volume in volumes.iter().filter(|v| !v.read_only) {
        if sandbox_uid != VOLUME_OWNER_ID {
            return Err(SandboxError::Unsupported {
                backend,
                what: format!(
                    "mounting volume {:?} read-write in a sandbox that runs as uid \
                     {sandbox_uid} (its workspace's owner): a volume's files are uid \
                     {VOLUME_OWNER_ID}'s; mount it read-only, or use a workspace the server \
                     adopts",
                    volume.name
                ),
            });
        }
        chown(&volume.host, Some(VOLUME_OWNER_ID), Some(VOLUME_OWNER_ID)).map_err(|source| {
            SandboxError::Workspace {
                id: id.clone(),
                path: volume.host.clone(),
                source,
            }
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
