//! What the host asks of a sandbox's guest: one [`GuestSpec`] for every
//! backend, the shared [`SandboxPolicy`] plus the part only that backend's
//! tier has ([`Tier`]). Serialized by the host and written as one frame
//! ([`frame`]: u32 little-endian length, then the JSON) at the start of the
//! guest's connection (the native guest's fd 0, a container's attached stdin,
//! a microVM's virtio-serial port), never on the command line or in the
//! environment: the sandbox's PID 1 is a clone of the monitor, so its
//! `/proc/1/cmdline` would show the host paths and the cgroup parent the spec
//! names, and `ps` inside a container would show them too.

mod container;
mod frame;
mod microvm;
mod native;

use std::os::fd::AsFd;

use paddock_proto::{SandboxPolicy, WorkspaceQuotaEnforcement};
use serde::{Deserialize, Serialize};

pub use container::ContainerTier;
pub use frame::{MAX_SPEC_FRAME, SpecFrameError};
pub use microvm::{GUEST_PORT, MicroVmNetwork, MicroVmTier, WORKSPACE_TAG, volume_tag};
pub use native::{CA_BUNDLE_PATH, CA_BUNDLE_VARS, IdMapping, IdPool, JailTier};

/// One sandbox's guest spec: `T` is the tier's own part, [`Tier`] on the
/// wire and one of its variants' types once the guest knows which.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestSpec<T> {
    /// Names the sandbox's cgroup, hostname and log fields.
    pub sandbox_id: String,
    /// What the sandbox may do and hold, exactly as the caller asked it
    /// (the container tier's write scope sorted and deduplicated).
    pub policy: SandboxPolicy,
    /// The quota the host holds the persistent workspace to (a btrfs qgroup
    /// of the server's volume pool: the host's kernel refuses the write
    /// past it, however the directory reaches the sandbox); None: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_quota: Option<WorkspaceQuotaEnforcement>,
    pub tier: T,
}

/// The backend-specific part of a guest spec: which tier made the
/// isolation boundary, and what the guest must know of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Tier {
    /// The native backend: the guest is the jail's monitor and makes it.
    Jail(JailTier),
    /// A container of the engine (docker or gVisor) made it.
    Container(ContainerTier),
    /// A QEMU microVM made it.
    #[serde(rename = "microvm")]
    MicroVm(MicroVmTier),
}

impl Tier {
    /// The guest subcommand this tier's spec is for.
    pub fn mode(&self) -> &'static str {
        match self {
            Tier::Jail(_) => "jail",
            Tier::Container(_) => "container",
            Tier::MicroVm(_) => "microvm",
        }
    }
}

impl From<JailTier> for Tier {
    fn from(tier: JailTier) -> Self {
        Tier::Jail(tier)
    }
}

impl From<ContainerTier> for Tier {
    fn from(tier: ContainerTier) -> Self {
        Tier::Container(tier)
    }
}

impl From<MicroVmTier> for Tier {
    fn from(tier: MicroVmTier) -> Self {
        Tier::MicroVm(tier)
    }
}

/// The native jail's spec.
pub type JailSpec = GuestSpec<JailTier>;
/// A container guest's spec.
pub type ContainerSpec = GuestSpec<ContainerTier>;
/// A microVM guest's spec.
pub type MicroVmSpec = GuestSpec<MicroVmTier>;

impl<T> GuestSpec<T> {
    /// The same sandbox and policy with another tier part.
    pub fn with_tier<U>(self, tier: U) -> GuestSpec<U> {
        GuestSpec {
            sandbox_id: self.sandbox_id,
            policy: self.policy,
            workspace_quota: self.workspace_quota,
            tier,
        }
    }

    /// May `layer` be missing in this sandbox?
    pub(crate) fn allowed(&self, layer: paddock_proto::DowngradeLayer) -> bool {
        self.policy.allows_downgrade(layer)
    }
}

impl<T: Clone + Into<Tier>> GuestSpec<T> {
    /// The frame the host writes first on the guest's connection.
    pub fn to_frame(&self) -> Result<Vec<u8>, SpecFrameError> {
        frame::encode_frame(&GuestSpec {
            sandbox_id: self.sandbox_id.clone(),
            policy: self.policy.clone(),
            workspace_quota: self.workspace_quota.clone(),
            tier: self.tier.clone().into(),
        })
    }
}

impl GuestSpec<Tier> {
    /// The sandbox and policy apart from the tier, to match on it.
    pub fn split(self) -> (GuestSpec<()>, Tier) {
        let tier = self.tier;
        (
            GuestSpec {
                sandbox_id: self.sandbox_id,
                policy: self.policy,
                workspace_quota: self.workspace_quota,
                tier: (),
            },
            tier,
        )
    }

    /// Reads one spec frame from `fd`, exactly: not a byte of what follows
    /// (the guest protocol) is consumed.
    pub fn read_frame(fd: impl AsFd) -> Result<Self, SpecFrameError> {
        frame::decode_frame(fd)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::io::Write;
    use std::path::PathBuf;

    use paddock_proto::{DowngradeLayer, NetworkPolicy, SandboxLimits, VmEnforcement};

    use super::*;

    fn policy() -> SandboxPolicy {
        SandboxPolicy {
            read_only: false,
            writable_paths: vec!["src".to_owned()],
            network: NetworkPolicy::None,
            limits: SandboxLimits::default(),
            allow_downgrade: BTreeSet::from([DowngradeLayer::Landlock]),
            volumes: Vec::new(),
        }
    }

    fn spec() -> GuestSpec<Tier> {
        GuestSpec {
            sandbox_id: "sb-frame".to_owned(),
            policy: policy(),
            workspace_quota: None,
            tier: Tier::Jail(JailTier {
                workspace: PathBuf::from("/host/secret/ws"),
                temporary_workspace: true,
                netns: None,
                egress_env: Vec::new(),
                secrets: Vec::new(),
                egress_ca: None,
                id_mapping: None,
                id_pool: None,
                rootfs: None,
                volume_dirs: Vec::new(),
                cgroup_parent: "tenant-parent".to_owned(),
            }),
        }
    }

    fn microvm() -> MicroVmSpec {
        GuestSpec {
            sandbox_id: "sb-vm".to_owned(),
            policy: SandboxPolicy {
                read_only: true,
                writable_paths: Vec::new(),
                ..policy()
            },
            workspace_quota: None,
            tier: MicroVmTier {
                uid: 100_000,
                gid: 100_000,
                cgroup: None,
                vm: VmEnforcement {
                    accelerator: "tcg".to_owned(),
                    accelerator_reason: "test".to_owned(),
                    vcpus: 1,
                    memory_bytes: 256 << 20,
                    kernel: String::new(),
                    workspace_transport: "virtio-9p".to_owned(),
                },
                temporary_workspace: true,
                network: Some(MicroVmNetwork {
                    resolver: std::net::Ipv4Addr::new(100, 127, 255, 253),
                    egress_env: vec![("HTTPS_PROXY".to_owned(), "http://gw:3128".to_owned())],
                    secrets: Vec::new(),
                    ca_bundle: Some("PEM".to_owned()),
                }),
                clock_unix_ms: Some(1_700_000_000_000),
            },
        }
    }

    #[test]
    fn a_frame_reads_back_and_leaves_what_follows() {
        let (reader, writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut writer = writer;
        writer.write_all(&spec().to_frame().unwrap()).unwrap();
        writer.write_all(b"protocol bytes").unwrap();
        drop(writer);
        assert_eq!(GuestSpec::read_frame(&reader).unwrap(), spec());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut &reader, &mut rest).unwrap();
        assert_eq!(rest, "protocol bytes");
    }

    #[test]
    fn a_tier_spec_is_framed_with_its_kind_and_read_back_as_that_tier() {
        let (read, write) = nix::unistd::pipe().unwrap();
        let mut write = std::fs::File::from(write);
        write.write_all(&microvm().to_frame().unwrap()).unwrap();
        write.write_all(b"protocol").unwrap();
        drop(write);
        let read_back = GuestSpec::read_frame(&read).unwrap();
        assert_eq!(read_back.tier.mode(), "microvm");
        assert_eq!(
            read_back,
            microvm().with_tier(Tier::MicroVm(microvm().tier))
        );
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut rest).unwrap();
        assert_eq!(rest, b"protocol");
    }

    #[test]
    fn the_policy_is_one_object_beside_the_tier() {
        let json: serde_json::Value =
            serde_json::from_slice(&spec().to_frame().unwrap()[4..]).unwrap();
        assert_eq!(
            json["policy"],
            serde_json::to_value(policy()).unwrap(),
            "{json}"
        );
        assert_eq!(json["tier"]["kind"], "jail");
        assert_eq!(json["tier"]["cgroup_parent"], "tenant-parent");
    }

    #[test]
    fn short_oversized_and_invalid_frames_are_clear_errors() {
        let read = |bytes: &[u8]| {
            let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
            writer.write_all(bytes).unwrap();
            drop(writer);
            GuestSpec::read_frame(&reader).unwrap_err()
        };
        assert!(matches!(
            read(&[10, 0, 0, 0, b'{']),
            SpecFrameError::Truncated { got: 1, want: 10 }
        ));
        assert!(matches!(
            read(&u32::MAX.to_le_bytes()),
            SpecFrameError::TooLarge { .. }
        ));
        let mut bad = 9u32.to_le_bytes().to_vec();
        bad.extend(b"{not json");
        assert!(matches!(read(&bad), SpecFrameError::Decode(_)));
        assert!(matches!(
            read(&[]),
            SpecFrameError::Truncated { got: 0, want: 4 }
        ));
    }
}
