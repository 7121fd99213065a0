//! Configuration of the microvm backend.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where images/microvm-image.sh puts the kernel, initrd and /usr disk by default.
pub const DEFAULT_IMAGE_DIR: &str = "/var/lib/paddock/microvm";
/// Overrides [`DEFAULT_IMAGE_DIR`].
pub const IMAGE_DIR_ENV: &str = "PADDOCK_MICROVM_DIR";

#[derive(Debug, Clone)]
pub struct MicroVmConfig {
    /// The static `paddock-guest` on the host; it is appended to every VM's
    /// initramfs and run as its init.
    pub guest_bin: PathBuf,
    /// `qemu-system-x86_64` (Debian's qemu-system-x86).
    pub qemu: PathBuf,
    /// The kernel and initrd built by images/microvm-image.sh.
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// The read-only ext4 copy of the host's /usr the image script made,
    /// the VM's /usr (its programs) on a virtio-blk disk.
    pub system_image: PathBuf,
    /// Per-VM sockets and the staged initramfs live here (root only).
    pub run_dir: PathBuf,
    /// Parent cgroup of the QEMU processes; also names this owner, so orphan
    /// reaping only touches its own VMs.
    pub cgroup_parent: String,
    /// Where temporary workspaces are made; None: the system temp directory.
    pub temp_root: Option<PathBuf>,
    /// Guest memory when the sandbox asks no memory limit.
    pub default_memory_bytes: u64,
    /// What QEMU itself may use on the host above the guest's memory
    /// (its code, the TCG translation cache, 9p buffers).
    pub vmm_overhead_bytes: u64,
    /// Threads of the QEMU process (vCPUs, I/O and 9p workers).
    pub vmm_pids: u64,
    /// Try KVM first (probed once with the real image); off: TCG only.
    pub try_kvm: bool,
    /// How long the KVM probe boot may take before KVM counts as unusable.
    pub probe_timeout: Duration,
    /// How long `create` waits for the guest's Hello (TCG boots take seconds).
    pub start_timeout: Duration,
    /// How long `destroy` waits for the guest to stop before QEMU is killed.
    pub stop_timeout: Duration,
    /// How long saving a VM into its state file (or loading it) may take.
    pub save_timeout: Duration,
    /// A requested workspace that belongs to root is given to the sandbox
    /// uid instead of refused (as for the docker backend).
    pub adopt_root_workspaces: bool,
    /// The host-side egress of sandboxes with network (as native's).
    pub egress: paddock_egress::EgressConfig,
}

impl MicroVmConfig {
    /// Defaults around the image in `image_dir`.
    pub fn new(guest_bin: PathBuf, image_dir: &Path) -> Self {
        Self {
            guest_bin,
            qemu: PathBuf::from("/usr/bin/qemu-system-x86_64"),
            kernel: image_dir.join("vmlinuz"),
            initrd: image_dir.join("initrd.img"),
            system_image: image_dir.join("usr.img"),
            run_dir: PathBuf::from("/run/paddock-microvm"),
            cgroup_parent: "paddock-microvm".to_owned(),
            temp_root: None,
            default_memory_bytes: 256 << 20,
            vmm_overhead_bytes: 256 << 20,
            vmm_pids: 256,
            try_kvm: true,
            probe_timeout: Duration::from_secs(15),
            start_timeout: Duration::from_secs(120),
            stop_timeout: Duration::from_secs(2),
            save_timeout: Duration::from_secs(60),
            adopt_root_workspaces: false,
            egress: paddock_egress::EgressConfig::default(),
        }
    }

    /// The image directory from [`IMAGE_DIR_ENV`], else [`DEFAULT_IMAGE_DIR`].
    pub fn image_dir_from_env() -> PathBuf {
        std::env::var_os(IMAGE_DIR_ENV)
            .map_or_else(|| PathBuf::from(DEFAULT_IMAGE_DIR), PathBuf::from)
    }
}
