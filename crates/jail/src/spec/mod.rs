//! What the host asks of a sandbox. Serialized by the host and written as
//! one frame (u32 little-endian length, then the JSON) at the start of the
//! connection on the guest's fd 0, never on the command line: the sandbox's
//! PID 1 is a clone of the monitor, so its `/proc/1/cmdline` would show the
//! host paths and the cgroup parent the spec names.

use std::collections::BTreeSet;
use std::os::fd::AsFd;
use std::path::PathBuf;

use paddock_proto::{DowngradeLayer, NetworkPolicy, SandboxLimits};
use serde::{Deserialize, Serialize};

/// Where a sandbox with secrets finds its CA bundle.
pub const CA_BUNDLE_PATH: &str = "/etc/paddock-ca.pem";

/// The variables naming the CA bundle, for the usual TLS clients (OpenSSL,
/// curl, Python requests, Node, git).
pub const CA_BUNDLE_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JailSpec {
    /// Names the sandbox's cgroup, hostname and log fields.
    pub sandbox_id: String,
    /// Host directory bound at /workspace.
    pub workspace: PathBuf,
    /// Mount /workspace read-only and make landlock read-only there too.
    #[serde(default)]
    pub read_only: bool,
    /// A write scope: when not empty, /workspace is read-only except these
    /// paths (relative to the workspace root, normalized, directories or
    /// regular files), each bound read-write on top. They are resolved on
    /// the host without following symlinks; a missing one is created as a
    /// directory. Contradicts `read_only`.
    #[serde(default)]
    pub writable_paths: Vec<String>,
    #[serde(default)]
    pub network: NetworkPolicy,
    /// A network namespace the host made (with its egress proxy listening
    /// inside), joined by the sandbox instead of a fresh loopback-only one.
    /// Required exactly when `network` has egress: the host owns it, so the
    /// sandbox cannot change its routes or filter rules.
    #[serde(default)]
    pub netns: Option<PathBuf>,
    /// Variables every command gets besides the proxy's: the placeholders
    /// of the sandbox's secrets (never a value) and the CA bundle's paths.
    #[serde(default)]
    pub egress_env: Vec<(String, String)>,
    /// The names and hosts of those secrets, for the enforcement report
    /// (never a value: the jail never holds one).
    #[serde(default)]
    pub secrets: Vec<paddock_proto::SecretNotice>,
    /// The sandbox's own CA (PEM), whose leaves the egress proxy shows for
    /// its secrets' hosts: the jail writes it with the system's roots as
    /// the bundle at [`CA_BUNDLE_PATH`].
    #[serde(default)]
    pub egress_ca: Option<String>,
    #[serde(default)]
    pub limits: SandboxLimits,
    /// How sandbox uids map to host uids. None: the jail picks (a block of
    /// `id_pool` when the caller is host root, its own uid otherwise).
    #[serde(default)]
    pub id_mapping: Option<IdMapping>,
    /// Where host root takes each sandbox's own block of 65536 ids from
    /// (locked for the sandbox's life under /run/paddock/ids). None: the
    /// default pool ([`IdPool::default`]).
    #[serde(default)]
    pub id_pool: Option<IdPool>,
    /// The workspace is a temporary directory made for this sandbox alone
    /// (empty at start): a workspace quota is then enforced by a tmpfs at
    /// /workspace, and the monitor removes the directory once the sandbox
    /// has ended, so it goes even when the host process that made it was
    /// killed.
    #[serde(default)]
    pub temporary_workspace: bool,
    /// A root filesystem directory (built from images/) used instead of the
    /// host's read-only system directories.
    #[serde(default)]
    pub rootfs: Option<PathBuf>,
    /// Layers the operator allows to be missing. Anything else that cannot be
    /// applied fails the sandbox.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Parent cgroup name under each hierarchy.
    #[serde(default = "default_cgroup_parent")]
    pub cgroup_parent: String,
}

fn default_cgroup_parent() -> String {
    "paddock".to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdMapping {
    /// First host uid/gid that sandbox id 0 maps to.
    pub host_base: u32,
    /// How many ids are mapped.
    pub count: u32,
}

/// Host ids handed out in blocks of 65536, one block per sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdPool {
    /// First host id of the first block.
    pub base: u32,
    /// How many blocks; at most this many sandboxes run at once.
    pub blocks: u32,
}

impl Default for IdPool {
    /// 1024 blocks from host uid 100000 (up to 67,208,863).
    fn default() -> Self {
        Self {
            base: 100_000,
            blocks: 1024,
        }
    }
}

/// Largest spec frame a guest reads.
pub const MAX_SPEC_FRAME: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SpecFrameError {
    #[error("encoding the jail spec")]
    Encode(#[source] serde_json::Error),
    #[error("the jail spec is {len} bytes, more than the {MAX_SPEC_FRAME} allowed")]
    TooLarge { len: usize },
    #[error("reading the jail spec from fd 0")]
    Read(#[source] std::io::Error),
    #[error("the connection ended after {got} of the spec frame's {want} bytes")]
    Truncated { got: usize, want: usize },
    #[error("invalid spec")]
    Decode(#[source] serde_json::Error),
}

impl JailSpec {
    /// The frame the host writes first on the guest's connection.
    pub fn to_frame(&self) -> Result<Vec<u8>, SpecFrameError> {
        encode_frame(self)
    }

    /// Reads one spec frame from `fd`, exactly: not a byte of what follows
    /// (the guest protocol) is consumed.
    pub fn read_frame(fd: impl AsFd) -> Result<Self, SpecFrameError> {
        decode_frame(fd)
    }
}

/// `value` as one spec frame: u32 little-endian length, then the JSON.
pub(crate) fn encode_frame(value: &impl Serialize) -> Result<Vec<u8>, SpecFrameError> {
    let json = serde_json::to_vec(value).map_err(SpecFrameError::Encode)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|_| json.len() <= MAX_SPEC_FRAME)
        .ok_or(SpecFrameError::TooLarge { len: json.len() })?;
    let mut frame = len.to_le_bytes().to_vec();
    frame.extend(json);
    Ok(frame)
}

/// One spec frame read from `fd` with plain read(2) calls, so no byte past
/// it is taken from the connection.
pub(crate) fn decode_frame<T: serde::de::DeserializeOwned>(
    fd: impl AsFd,
) -> Result<T, SpecFrameError> {
    let fd = fd.as_fd();
    let mut len = [0u8; 4];
    read_exact(fd, &mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_SPEC_FRAME {
        return Err(SpecFrameError::TooLarge { len });
    }
    let mut json = vec![0u8; len];
    read_exact(fd, &mut json)?;
    serde_json::from_slice(&json).map_err(SpecFrameError::Decode)
}

fn read_exact(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> Result<(), SpecFrameError> {
    let mut got = 0;
    while got < buf.len() {
        match nix::unistd::read(fd, &mut buf[got..]) {
            Ok(0) => {
                return Err(SpecFrameError::Truncated {
                    got,
                    want: buf.len(),
                });
            }
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(SpecFrameError::Read(e.into())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn spec() -> JailSpec {
        JailSpec {
            sandbox_id: "sb-frame".to_owned(),
            workspace: PathBuf::from("/host/secret/ws"),
            temporary_workspace: true,
            read_only: true,
            writable_paths: vec!["src".to_owned()],
            network: NetworkPolicy::None,
            netns: None,
            egress_env: Vec::new(),
            secrets: Vec::new(),
            egress_ca: None,
            limits: SandboxLimits::default(),
            id_mapping: None,
            id_pool: None,
            rootfs: None,
            allow_downgrade: BTreeSet::new(),
            cgroup_parent: "tenant-parent".to_owned(),
        }
    }

    #[test]
    fn a_frame_reads_back_and_leaves_what_follows() {
        let (reader, writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut writer = writer;
        writer.write_all(&spec().to_frame().unwrap()).unwrap();
        writer.write_all(b"protocol bytes").unwrap();
        drop(writer);
        assert_eq!(JailSpec::read_frame(&reader).unwrap(), spec());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut &reader, &mut rest).unwrap();
        assert_eq!(rest, "protocol bytes");
    }

    #[test]
    fn short_oversized_and_invalid_frames_are_clear_errors() {
        let read = |bytes: &[u8]| {
            let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
            writer.write_all(bytes).unwrap();
            drop(writer);
            JailSpec::read_frame(&reader).unwrap_err()
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
