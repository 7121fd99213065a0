//! The battery's scratch area in the sandbox's own /tmp.

use std::ffi::CStr;

pub const ROOT: &str = "/tmp/paddock-battery";
/// An empty directory used as a mount target.
pub const MOUNT_DIR: &CStr = c"/tmp/paddock-battery/mnt";
/// An existing directory that is not a mount point.
pub const PLAIN_DIR: &CStr = c"/tmp/paddock-battery/plain";
/// A path that does not exist.
pub const MISSING: &CStr = c"/tmp/paddock-battery/missing";
pub const DEV_NODE: &CStr = c"/tmp/paddock-battery/dev-node";
pub const WORKSPACE_DEV_NODE: &CStr = c"/workspace/.paddock-battery-dev-node";
pub const WORKSPACE_SETUID_FILE: &CStr = c"/workspace/.paddock-battery-setuid";
/// Mount target for the cgroup filesystem probes.
pub const CGROUP_DIR: &CStr = c"/tmp/paddock-battery/cgroup";

/// Creates the scratch directories; errors are reported by the controls.
pub fn ensure() -> std::io::Result<()> {
    for dir in [MOUNT_DIR, PLAIN_DIR, CGROUP_DIR] {
        std::fs::create_dir_all(dir.to_string_lossy().as_ref())?;
    }
    Ok(())
}

pub fn remove(path: &CStr) {
    let _ = std::fs::remove_file(path.to_string_lossy().as_ref());
}
