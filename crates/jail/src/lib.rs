//! Linux hardening for every sandbox tier, sync code only.
//!
//! - `spec/`: the one guest spec frame every backend writes first
//!   ([`GuestSpec`]: the shared [`paddock_proto::SandboxPolicy`] plus the
//!   tier's own part, [`Tier`]).
//! - `host/`: the native jail's host set-up, run by the monitor in the
//!   host's namespaces (names, id maps and their pool, the idmapped
//!   workspace, the mount plan, the write scope, the workspace quota,
//!   cgroups and OOM counters, the clone), and the host probe.
//! - `init/`: the sandbox init, PID 1 inside, and its layers in order:
//!   mounts and pivot_root, /etc, loopback, rlimits, capabilities,
//!   landlock; the reaper it stays as.
//! - `seccomp/`: the allowlist with a reason per rule, its BPF and the
//!   container engine's profile made from it.
//! - `guest/`: the guest's own layers where a container engine or a microVM
//!   made the boundary ([`enter_container`], [`enter_microvm`]).
//! - `process/`: starting commands, terminals, the heap, the single-thread proof.
//!
//! Its `sys` module is the one place of the workspace's libraries allowed
//! `unsafe` (every block carries a `// SAFETY:` comment). [`enter`] is called
//! by `paddock-guest` in a fresh, single-threaded process and turns it into a
//! sandbox: namespaces -> mounts -> pivot_root -> cgroup -> rlimits -> caps ->
//! no_new_privs -> landlock -> seccomp. docs/security.md describes the result.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod error;
mod guest;
mod host;
mod init;
mod process;
mod seccomp;
mod spec;
// The system calls nix does not wrap safely: the only module allowed `unsafe`.
#[allow(unsafe_code)]
mod sys;
mod validate;

pub use error::JailError;
pub use guest::container::enter_container;
pub use guest::microvm::enter_microvm;
pub use host::cgroup::{HostCgroup, remove_cgroup_parent, remove_sandbox_cgroups};
pub use host::id_pool::{IdBlock, allocate_block, take_block};
pub use host::oom::{oom_counter_in, parse_oom_kills, sandbox_oom_counter};
pub use host::probe::{CgroupSupport, HostCapabilities, UserNamespaces, probe_host};
pub use host::workspace_quota::{workspace_in_sandbox_memory, workspace_tmpfs};
pub use init::reaper::{ReaperError, fork_reaper};
pub use process::{heap, pty, spawn};
pub use seccomp::bpf::CommandFilter;
pub use seccomp::docker::docker_seccomp_profile;
pub use seccomp::rules as seccomp_rules;
pub use spec::{
    CA_BUNDLE_PATH, CA_BUNDLE_VARS, ContainerSpec, ContainerTier, GUEST_PORT, GuestSpec, IdMapping,
    IdPool, JailSpec, JailTier, MAX_SPEC_FRAME, MicroVmNetwork, MicroVmSpec, MicroVmTier,
    SpecFrameError, Tier, WORKSPACE_TAG, volume_tag,
};

use paddock_proto::Enforcement;

/// Turns the calling process into a sandbox.
///
/// Must be called from a fresh single-threaded process (the guest's `main`,
/// before any thread exists; checked). The calling process becomes the
/// *monitor*: it creates and joins the sandbox cgroups, clones the sandbox
/// init into new namespaces, writes its id maps, waits for it, removes the
/// cgroups and exits with its status (128 + signal when it was killed); it
/// never returns `Ok`. It returns `Err` only when something failed before
/// the init could run (nothing is left behind then).
///
/// The cloned sandbox init (PID 1 of the new pid namespace) returns `Ok` with
/// what is really enforced, hardened and ready to serve: fd 0, 1 and 2 are
/// kept as they were, every other descriptor is closed, the environment is
/// empty, the working directory is `/`. An `Err` there means a layer could
/// not be applied and the caller did not allow that downgrade: the caller
/// must print it to stderr and exit non-zero; the monitor then exits with
/// that status.
pub fn enter(spec: &JailSpec) -> Result<Enforcement, JailError> {
    let prepared = host::prepare::prepare(spec)?;
    host::monitor::run(spec, prepared)
}
