//! The sandbox's mount layout as data. The monitor plans it on the host side
//! before the clone (looking at which host entries exist); the sandbox init
//! applies it in its new mount namespace after pivoting into a fresh tmpfs
//! root (init/mount_ops.rs). Paths are sandbox paths; [`Source::Host`] paths are
//! read through the old root.

use std::path::{Path, PathBuf};

use crate::init::etc;

/// mount_setattr restrictions to add to a mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Attrs {
    pub rdonly: bool,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
}

impl Attrs {
    /// System directories: read-only, no setuid, no devices.
    pub(crate) const SYSTEM: Self = Self {
        rdonly: true,
        nosuid: true,
        nodev: true,
        noexec: false,
    };
    /// Writable data (workspace, /tmp, /dev/shm).
    pub(crate) const DATA: Self = Self {
        rdonly: false,
        nosuid: true,
        nodev: true,
        noexec: false,
    };
    pub(crate) const READ_ONLY: Self = Self {
        rdonly: true,
        nosuid: false,
        nodev: false,
        noexec: false,
    };

    pub(crate) fn mount_attr_bits(self) -> u64 {
        use crate::sys::{
            MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
        };
        [
            (self.rdonly, MOUNT_ATTR_RDONLY),
            (self.nosuid, MOUNT_ATTR_NOSUID),
            (self.nodev, MOUNT_ATTR_NODEV),
            (self.noexec, MOUNT_ATTR_NOEXEC),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |bits, (_, bit)| bits | bit)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A host path (absolute), reached through the old root.
    Host(PathBuf),
    /// A path already inside the new root.
    Sandbox(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MountOp {
    Dir {
        path: PathBuf,
        mode: u32,
    },
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
    WriteFile {
        path: PathBuf,
        contents: Vec<u8>,
    },
    Tmpfs {
        path: PathBuf,
        options: String,
        attrs: Attrs,
    },
    /// Recursive bind; the mount point (a directory, or an empty file when
    /// `file`) is created first if missing.
    Bind {
        source: Source,
        path: PathBuf,
        file: bool,
    },
    /// Adds restrictions to the mount at `path` (and below when recursive).
    Restrict {
        path: PathBuf,
        attrs: Attrs,
        recursive: bool,
    },
    Proc {
        path: PathBuf,
    },
    Devpts {
        path: PathBuf,
    },
    /// Moves the idmapped workspace tree the monitor made onto `path`.
    MoveWorkspaceTree {
        path: PathBuf,
    },
    /// Binds one path of the write scope read-write onto its place below
    /// the (read-only) /workspace: the idmapped tree the monitor made, or,
    /// when the workspace is not idmapped, `<host_workspace>/<rel>` reached
    /// through the old root. Either way it is checked to be the object the
    /// monitor resolved (writable.rs).
    WritableBind {
        rel: String,
        host_workspace: Option<PathBuf>,
    },
    /// Mounts a named volume at its path: the detached tree the monitor
    /// made of its host directory (nosuid, nodev, read-only when asked), or
    /// without one the directory bound through the old root and restricted
    /// so. The mount point is made with its parents and must be reached
    /// without a symlink.
    VolumeBind(VolumeBind),
    /// Hides a /proc entry if it exists: /dev/null over a file, an empty
    /// read-only tmpfs over a directory.
    Mask {
        path: PathBuf,
        dir: bool,
    },
    /// Lazily unmounts and removes the old root.
    DetachOldRoot,
}

/// What a host path is, as far as planning cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    Missing,
    Dir,
    File,
    Symlink(PathBuf),
}

/// The host file system as planning sees it (a map in tests).
pub(crate) trait HostFs {
    fn entry(&self, path: &Path) -> Entry;
    /// The contents of a regular, world-readable file of at most `max`
    /// bytes; None otherwise.
    fn read_small(&self, path: &Path, max: u64) -> Option<Vec<u8>>;
}

/// /etc files up to this size are copied into the sandbox's /etc instead of
/// bind-mounted: cheaper to set up and to tear down than a mount each.
pub(crate) const ETC_COPY_MAX: u64 = 64 << 10;

/// Looks at the real host file system (lstat + readlink).
#[derive(Debug)]
pub(crate) struct RealHost;

impl HostFs for RealHost {
    fn entry(&self, path: &Path) -> Entry {
        match std::fs::symlink_metadata(path) {
            Err(_) => Entry::Missing,
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => Entry::Symlink(target),
                Err(_) => Entry::Missing,
            },
            Ok(m) if m.is_dir() => Entry::Dir,
            Ok(_) => Entry::File,
        }
    }

    fn read_small(&self, path: &Path, max: u64) -> Option<Vec<u8>> {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let meta = file.metadata().ok()?;
        // The monitor may be host root: copy only what any user could read.
        if !meta.is_file() || meta.mode() & 0o004 == 0 || meta.len() > max {
            return None;
        }
        let mut contents = Vec::with_capacity(meta.len() as usize);
        file.take(max + 1).read_to_end(&mut contents).ok()?;
        (contents.len() as u64 <= max).then_some(contents)
    }
}

/// System directories taken from the host (or the rootfs), read-only.
pub(crate) const SYSTEM_DIRS: &[&str] = &["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"];
/// Host device nodes bound into the sandbox's /dev.
pub(crate) const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// /proc files hidden behind /dev/null when they exist: kernel memory and
/// the magic SysRq trigger (host-root-only already: defence in depth), and
/// world-readable dumps of host timers and scheduling.
pub(crate) const PROC_MASKED_FILES: &[&str] =
    &["kcore", "sysrq-trigger", "timer_list", "sched_debug"];
/// /proc directories hidden behind an empty tmpfs (hardware interfaces).
pub(crate) const PROC_MASKED_DIRS: &[&str] = &["acpi", "scsi"];

#[derive(Debug, Clone)]
pub(crate) struct LayoutInput<'a> {
    /// "/" or the image root filesystem.
    pub system_root: &'a Path,
    /// Canonical host path of the workspace.
    pub workspace: &'a Path,
    /// The monitor made an idmapped tree of the workspace.
    pub workspace_idmapped: bool,
    pub read_only: bool,
    /// The validated write scope: /workspace is read-only except these.
    pub writable_paths: &'a [String],
    /// The sandbox has egress: /etc/resolv.conf names the egress DNS.
    pub egress_dns: bool,
    /// The CA bundle of a sandbox with secrets, written at
    /// [`crate::spec::CA_BUNDLE_PATH`].
    pub ca_bundle: Option<&'a str>,
    pub tmp_bytes: u64,
    pub hostname: &'a str,
    /// Mount a tmpfs of (bytes, inodes) at /workspace instead of the host
    /// directory (a temporary workspace with a quota).
    pub workspace_tmpfs: Option<(u64, u64)>,
    /// The named volumes, bound after the workspace and /tmp (a volume may
    /// sit inside either).
    pub volumes: &'a [VolumeBind],
}

/// A named volume's host directory and where it goes in the sandbox;
/// `index` is its place in the policy's list (and in the trees the monitor
/// made of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VolumeBind {
    pub index: usize,
    pub host: PathBuf,
    pub path: PathBuf,
    pub read_only: bool,
}

fn under(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

/// The whole layout, in the order it is applied.
pub(crate) fn plan(input: &LayoutInput<'_>, host: &dyn HostFs) -> Vec<MountOp> {
    let mut ops = Vec::with_capacity(64);
    system_dirs(input, host, &mut ops);
    etc_dir(input, host, &mut ops);
    workspace(input, &mut ops);
    tmp(input, &mut ops);
    volumes(input, &mut ops);
    dev(input, host, &mut ops);
    proc(&mut ops);
    ops.push(MountOp::DetachOldRoot);
    ops.push(MountOp::Restrict {
        path: "/".into(),
        attrs: Attrs::READ_ONLY,
        recursive: false,
    });
    ops
}

fn system_dirs(input: &LayoutInput<'_>, host: &dyn HostFs, ops: &mut Vec<MountOp>) {
    for name in SYSTEM_DIRS {
        let source = under(input.system_root, name);
        let path = under(Path::new("/"), name);
        match host.entry(&source) {
            Entry::Dir => {
                ops.push(MountOp::Bind {
                    source: Source::Host(source),
                    path: path.clone(),
                    file: false,
                });
                ops.push(MountOp::Restrict {
                    path,
                    attrs: Attrs::SYSTEM,
                    recursive: true,
                });
            }
            // merged /usr: /bin -> usr/bin and friends, recreated as they are.
            Entry::Symlink(target) => ops.push(MountOp::Symlink { path, target }),
            Entry::File | Entry::Missing => {}
        }
    }
}

fn etc_dir(input: &LayoutInput<'_>, host: &dyn HostFs, ops: &mut Vec<MountOp>) {
    let etc = PathBuf::from("/etc");
    ops.push(MountOp::Dir {
        path: etc.clone(),
        mode: 0o755,
    });
    ops.push(MountOp::Tmpfs {
        path: etc.clone(),
        options: "mode=0755,size=8m,nr_inodes=1024".into(),
        attrs: Attrs::default(),
    });
    for (name, contents) in etc::generated(input.hostname) {
        ops.push(MountOp::WriteFile {
            path: etc.join(name),
            contents: contents.into_bytes(),
        });
    }
    if input.egress_dns {
        ops.push(MountOp::WriteFile {
            path: etc.join("resolv.conf"),
            contents: etc::EGRESS_RESOLV_CONF.as_bytes().to_vec(),
        });
    }
    if let Some(bundle) = input.ca_bundle {
        ops.push(MountOp::WriteFile {
            path: PathBuf::from(crate::spec::CA_BUNDLE_PATH),
            contents: bundle.as_bytes().to_vec(),
        });
    }
    for (name, target) in etc::SYMLINKS {
        ops.push(MountOp::Symlink {
            path: etc.join(name),
            target: target.into(),
        });
    }
    let host_etc = under(input.system_root, "etc");
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    for e in etc::ALLOWLIST {
        let source = host_etc.join(e.name);
        let entry = host.entry(&source);
        if entry == Entry::Missing {
            continue;
        }
        let path = etc.join(e.name);
        // Nested entries (ssl/certs) need their parent directory first.
        if let Some(parent) = path.parent().filter(|p| *p != etc)
            && !made_dirs.iter().any(|d| d == parent)
        {
            made_dirs.push(parent.to_path_buf());
            ops.push(MountOp::Dir {
                path: parent.to_path_buf(),
                mode: 0o755,
            });
        }
        ops.push(match entry {
            Entry::Symlink(target) => MountOp::Symlink { path, target },
            Entry::Dir => MountOp::Bind {
                source: Source::Host(source),
                path,
                file: false,
            },
            _ => match host.read_small(&source, ETC_COPY_MAX) {
                Some(contents) => MountOp::WriteFile { path, contents },
                None => MountOp::Bind {
                    source: Source::Host(source),
                    path,
                    file: true,
                },
            },
        });
    }
    ops.push(MountOp::Restrict {
        path: etc,
        attrs: Attrs::SYSTEM,
        recursive: true,
    });
}

fn workspace(input: &LayoutInput<'_>, ops: &mut Vec<MountOp>) {
    let path = PathBuf::from("/workspace");
    ops.push(MountOp::Dir {
        path: path.clone(),
        mode: 0o755,
    });
    if let Some((bytes, inodes)) = input.workspace_tmpfs {
        // Mounted by sandbox root, so it owns it; none of it is on the host.
        ops.push(MountOp::Tmpfs {
            path,
            options: format!("mode=0755,size={bytes},nr_inodes={inodes}"),
            attrs: Attrs::DATA,
        });
        return;
    }
    if input.workspace_idmapped {
        // The monitor already set nosuid, nodev (and rdonly) on the tree.
        ops.push(MountOp::MoveWorkspaceTree { path });
    } else {
        ops.push(MountOp::Bind {
            source: Source::Host(input.workspace.to_path_buf()),
            path: path.clone(),
            file: false,
        });
        ops.push(MountOp::Restrict {
            path,
            attrs: Attrs {
                rdonly: input.read_only || !input.writable_paths.is_empty(),
                ..Attrs::DATA
            },
            recursive: true,
        });
    }
    // After the read-only restriction, which must not reach these.
    for rel in input.writable_paths {
        ops.push(MountOp::WritableBind {
            rel: rel.clone(),
            host_workspace: (!input.workspace_idmapped).then(|| input.workspace.to_path_buf()),
        });
    }
}

/// Each volume bound at its path, nosuid and nodev as all writable data,
/// and read-only when asked.
fn volumes(input: &LayoutInput<'_>, ops: &mut Vec<MountOp>) {
    ops.extend(input.volumes.iter().cloned().map(MountOp::VolumeBind));
}

fn tmp(input: &LayoutInput<'_>, ops: &mut Vec<MountOp>) {
    ops.push(MountOp::Dir {
        path: "/tmp".into(),
        mode: 0o1777,
    });
    ops.push(MountOp::Tmpfs {
        path: "/tmp".into(),
        options: tmpfs_options(0o1777, input.tmp_bytes),
        attrs: Attrs::DATA,
    });
}

/// Size-limited tmpfs options; inodes are capped too (one per 4 KiB of size,
/// at least 1024), so tiny files cannot exhaust kernel memory.
pub(crate) fn tmpfs_options(mode: u32, bytes: u64) -> String {
    let inodes = (bytes / 4096).max(1024);
    format!("mode={mode:04o},size={bytes},nr_inodes={inodes}")
}

fn dev(input: &LayoutInput<'_>, host: &dyn HostFs, ops: &mut Vec<MountOp>) {
    let dev = PathBuf::from("/dev");
    ops.push(MountOp::Dir {
        path: dev.clone(),
        mode: 0o755,
    });
    ops.push(MountOp::Tmpfs {
        path: dev.clone(),
        options: "mode=0755,size=64k,nr_inodes=64".into(),
        attrs: Attrs {
            nosuid: true,
            noexec: true,
            ..Attrs::default()
        },
    });
    for name in DEVICES {
        let source = Path::new("/dev").join(name);
        if host.entry(&source) == Entry::File {
            ops.push(MountOp::Bind {
                source: Source::Host(source),
                path: dev.join(name),
                file: true,
            });
        }
    }
    ops.push(MountOp::Dir {
        path: dev.join("pts"),
        mode: 0o755,
    });
    ops.push(MountOp::Devpts {
        path: dev.join("pts"),
    });
    ops.push(MountOp::Symlink {
        path: dev.join("ptmx"),
        target: "pts/ptmx".into(),
    });
    ops.push(MountOp::Dir {
        path: dev.join("shm"),
        mode: 0o1777,
    });
    ops.push(MountOp::Tmpfs {
        path: dev.join("shm"),
        options: tmpfs_options(0o1777, input.tmp_bytes),
        attrs: Attrs::DATA,
    });
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        ops.push(MountOp::Symlink {
            path: dev.join(name),
            target: target.into(),
        });
    }
    // Nothing new can be created in /dev itself (pts and shm are own mounts).
    ops.push(MountOp::Restrict {
        path: dev,
        attrs: Attrs::READ_ONLY,
        recursive: false,
    });
}

fn proc(ops: &mut Vec<MountOp>) {
    let proc = PathBuf::from("/proc");
    ops.push(MountOp::Dir {
        path: proc.clone(),
        mode: 0o555,
    });
    ops.push(MountOp::Proc { path: proc.clone() });
    ops.push(MountOp::Bind {
        source: Source::Sandbox(proc.join("sys")),
        path: proc.join("sys"),
        file: false,
    });
    ops.push(MountOp::Restrict {
        path: proc.join("sys"),
        attrs: Attrs {
            noexec: true,
            ..Attrs::SYSTEM
        },
        recursive: true,
    });
    for name in PROC_MASKED_FILES {
        ops.push(MountOp::Mask {
            path: proc.join(name),
            dir: false,
        });
    }
    for name in PROC_MASKED_DIRS {
        ops.push(MountOp::Mask {
            path: proc.join(name),
            dir: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A Debian host with merged /usr.
    struct FakeHost(HashMap<PathBuf, Entry>);

    impl FakeHost {
        fn debian() -> Self {
            let mut m = HashMap::new();
            let mut put = |p: &str, e: Entry| {
                m.insert(PathBuf::from(p), e);
            };
            put("/usr", Entry::Dir);
            put("/bin", Entry::Symlink("usr/bin".into()));
            put("/sbin", Entry::Symlink("usr/sbin".into()));
            put("/lib", Entry::Symlink("usr/lib".into()));
            put("/lib64", Entry::Symlink("usr/lib64".into()));
            put("/etc/ld.so.cache", Entry::File);
            put("/etc/mime.types", Entry::File);
            put("/etc/ld.so.conf.d", Entry::Dir);
            put("/etc/ssl/certs", Entry::Dir);
            put("/etc/ssl/openssl.cnf", Entry::File);
            put(
                "/etc/os-release",
                Entry::Symlink("../usr/lib/os-release".into()),
            );
            put("/etc/shadow", Entry::File);
            put("/etc/machine-id", Entry::File);
            put(
                "/etc/resolv.conf",
                Entry::Symlink("/run/systemd/resolve/stub-resolv.conf".into()),
            );
            put("/run/systemd/resolve/stub-resolv.conf", Entry::File);
            for d in DEVICES {
                put(&format!("/dev/{d}"), Entry::File);
            }
            Self(m)
        }
    }

    impl HostFs for FakeHost {
        fn entry(&self, path: &Path) -> Entry {
            self.0.get(path).cloned().unwrap_or(Entry::Missing)
        }

        /// Every file is small except mime.types, which stands for a
        /// file over the copy limit.
        fn read_small(&self, path: &Path, _max: u64) -> Option<Vec<u8>> {
            let small = self.entry(path) == Entry::File && !path.ends_with("mime.types");
            small.then(|| path.to_string_lossy().as_bytes().to_vec())
        }
    }

    fn input(read_only: bool, egress_dns: bool, idmapped: bool) -> LayoutInput<'static> {
        LayoutInput {
            system_root: Path::new("/"),
            workspace: Path::new("/srv/ws"),
            workspace_idmapped: idmapped,
            read_only,
            writable_paths: &[],
            egress_dns,
            ca_bundle: None,
            tmp_bytes: 1 << 20,
            workspace_tmpfs: None,
            hostname: "paddock-x",
            volumes: &[],
        }
    }

    fn host_sources(ops: &[MountOp]) -> Vec<PathBuf> {
        ops.iter()
            .filter_map(|op| match op {
                MountOp::Bind {
                    source: Source::Host(p),
                    ..
                } => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn only_allowlisted_host_paths_are_bound() {
        let ops = plan(&input(false, false, false), &FakeHost::debian());
        let mut sources = host_sources(&ops);
        sources.sort();
        let expected: Vec<PathBuf> = [
            "/dev/full",
            "/dev/null",
            "/dev/random",
            "/dev/tty",
            "/dev/urandom",
            "/dev/zero",
            "/etc/ld.so.conf.d",
            "/etc/mime.types",
            "/etc/ssl/certs",
            "/srv/ws",
            "/usr",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(sources, expected);
    }

    #[test]
    fn small_etc_files_are_copied_and_secrets_never_read() {
        let ops = plan(&input(false, false, false), &FakeHost::debian());
        let written: Vec<&Path> = ops
            .iter()
            .filter_map(|op| match op {
                MountOp::WriteFile { path, .. } => Some(path.as_path()),
                _ => None,
            })
            .collect();
        for path in ["/etc/passwd", "/etc/ld.so.cache", "/etc/ssl/openssl.cnf"] {
            assert!(written.contains(&Path::new(path)), "{path} not written");
        }
        assert!(
            !written
                .iter()
                .any(|p| p.ends_with("shadow") || p.ends_with("machine-id"))
        );
        assert!(ops.contains(&MountOp::Dir {
            path: "/etc/ssl".into(),
            mode: 0o755
        }));
    }

    #[test]
    fn merged_usr_links_are_recreated_and_usr_is_read_only() {
        let ops = plan(&input(false, false, false), &FakeHost::debian());
        assert!(ops.contains(&MountOp::Symlink {
            path: "/bin".into(),
            target: "usr/bin".into()
        }));
        assert!(ops.contains(&MountOp::Restrict {
            path: "/usr".into(),
            attrs: Attrs::SYSTEM,
            recursive: true
        }));
        assert!(ops.contains(&MountOp::Symlink {
            path: "/etc/os-release".into(),
            target: "../usr/lib/os-release".into()
        }));
    }

    #[test]
    fn workspace_is_read_only_in_read_only_mode() {
        let rw = plan(&input(false, false, false), &FakeHost::debian());
        let ro = plan(&input(true, false, false), &FakeHost::debian());
        let ws_attrs = |ops: &[MountOp]| {
            ops.iter()
                .find_map(|op| match op {
                    MountOp::Restrict { path, attrs, .. } if path == Path::new("/workspace") => {
                        Some(*attrs)
                    }
                    _ => None,
                })
                .unwrap()
        };
        assert!(!ws_attrs(&rw).rdonly);
        assert_eq!(
            ws_attrs(&ro),
            Attrs {
                rdonly: true,
                nosuid: true,
                nodev: true,
                noexec: false
            }
        );
    }

    const SCOPE: &[String] = &[];

    fn scoped(idmapped: bool, scope: &'static [String]) -> Vec<MountOp> {
        plan(
            &LayoutInput {
                writable_paths: scope,
                ..input(false, false, idmapped)
            },
            &FakeHost::debian(),
        )
    }

    fn workspace_ops(ops: &[MountOp]) -> Vec<MountOp> {
        ops.iter()
            .filter(|op| match op {
                MountOp::Bind { path, .. }
                | MountOp::Restrict { path, .. }
                | MountOp::MoveWorkspaceTree { path } => path.starts_with("/workspace"),
                MountOp::WritableBind { .. } => true,
                _ => false,
            })
            .cloned()
            .collect()
    }

    #[test]
    fn a_write_scope_binds_its_paths_over_a_read_only_workspace() {
        static PATHS: std::sync::LazyLock<Vec<String>> =
            std::sync::LazyLock::new(|| vec!["docs/a.md".to_owned(), "src".to_owned()]);
        let plain = workspace_ops(&scoped(false, &PATHS));
        assert_eq!(
            plain,
            [
                MountOp::Bind {
                    source: Source::Host("/srv/ws".into()),
                    path: "/workspace".into(),
                    file: false
                },
                MountOp::Restrict {
                    path: "/workspace".into(),
                    attrs: Attrs {
                        rdonly: true,
                        ..Attrs::DATA
                    },
                    recursive: true
                },
                MountOp::WritableBind {
                    rel: "docs/a.md".into(),
                    host_workspace: Some("/srv/ws".into())
                },
                MountOp::WritableBind {
                    rel: "src".into(),
                    host_workspace: Some("/srv/ws".into())
                },
            ]
        );
        let idmapped = workspace_ops(&scoped(true, &PATHS));
        assert_eq!(
            idmapped,
            [
                MountOp::MoveWorkspaceTree {
                    path: "/workspace".into()
                },
                MountOp::WritableBind {
                    rel: "docs/a.md".into(),
                    host_workspace: None
                },
                MountOp::WritableBind {
                    rel: "src".into(),
                    host_workspace: None
                },
            ]
        );
        // Without a scope nothing changes.
        assert!(
            !scoped(false, SCOPE)
                .iter()
                .any(|op| matches!(op, MountOp::WritableBind { .. }))
        );
    }

    #[test]
    fn idmapped_workspace_is_moved_not_bound() {
        let ops = plan(&input(false, false, true), &FakeHost::debian());
        assert!(ops.contains(&MountOp::MoveWorkspaceTree {
            path: "/workspace".into()
        }));
        assert!(!host_sources(&ops).contains(&PathBuf::from("/srv/ws")));
    }

    #[test]
    fn volumes_are_mounted_after_the_workspace_and_tmp_before_the_root_goes_read_only() {
        let volumes = [VolumeBind {
            index: 0,
            host: "/pool/t/cache".into(),
            path: "/tmp/cache".into(),
            read_only: true,
        }];
        let ops = plan(
            &LayoutInput {
                volumes: &volumes,
                ..input(false, false, true)
            },
            &FakeHost::debian(),
        );
        let at = |wanted: &dyn Fn(&MountOp) -> bool| ops.iter().position(wanted).unwrap();
        let volume = at(&|op| matches!(op, MountOp::VolumeBind(v) if v == &volumes[0]));
        let tmp = at(&|op| matches!(op, MountOp::Tmpfs { path, .. } if path == Path::new("/tmp")));
        let workspace = at(&|op| matches!(op, MountOp::MoveWorkspaceTree { .. }));
        let detach = at(&|op| matches!(op, MountOp::DetachOldRoot));
        assert!(
            workspace < volume && tmp < volume && volume < detach,
            "{ops:?}"
        );
    }

    #[test]
    fn resolv_conf_names_the_egress_dns_and_never_the_hosts() {
        let is_resolv = |op: &MountOp| match op {
            MountOp::Bind { path, .. } | MountOp::WriteFile { path, .. } => {
                path == Path::new("/etc/resolv.conf")
            }
            _ => false,
        };
        let none = plan(&input(false, false, false), &FakeHost::debian());
        assert!(!none.iter().any(is_resolv));
        let egress = plan(&input(false, true, false), &FakeHost::debian());
        let resolv: Vec<&MountOp> = egress.iter().filter(|op| is_resolv(op)).collect();
        assert_eq!(
            resolv,
            [&MountOp::WriteFile {
                path: "/etc/resolv.conf".into(),
                contents: etc::EGRESS_RESOLV_CONF.as_bytes().to_vec(),
            }]
        );
    }

    #[test]
    fn rootfs_replaces_the_host_system_dirs() {
        let mut host = FakeHost::debian();
        host.0.insert("/img/usr".into(), Entry::Dir);
        host.0.insert("/img/lib".into(), Entry::Dir);
        host.0.insert("/img/etc/ld.so.conf.d".into(), Entry::Dir);
        let ops = plan(
            &LayoutInput {
                system_root: Path::new("/img"),
                ..input(false, false, false)
            },
            &host,
        );
        let sources = host_sources(&ops);
        assert!(sources.contains(&PathBuf::from("/img/usr")));
        assert!(sources.contains(&PathBuf::from("/img/lib")));
        assert!(sources.contains(&PathBuf::from("/img/etc/ld.so.conf.d")));
        assert!(!sources.contains(&PathBuf::from("/usr")));
        assert!(!sources.contains(&PathBuf::from("/etc/ld.so.conf.d")));
    }

    #[test]
    fn the_plan_ends_with_a_read_only_root_without_the_old_one() {
        let ops = plan(&input(false, false, false), &FakeHost::debian());
        assert_eq!(
            ops[ops.len() - 2..],
            [
                MountOp::DetachOldRoot,
                MountOp::Restrict {
                    path: "/".into(),
                    attrs: Attrs::READ_ONLY,
                    recursive: false
                }
            ]
        );
    }

    #[test]
    fn tmp_and_shm_are_size_limited() {
        let ops = plan(&input(false, false, false), &FakeHost::debian());
        let tmpfs: Vec<(&Path, &str)> = ops
            .iter()
            .filter_map(|op| match op {
                MountOp::Tmpfs { path, options, .. } => Some((path.as_path(), options.as_str())),
                _ => None,
            })
            .collect();
        assert!(tmpfs.contains(&(Path::new("/tmp"), "mode=1777,size=1048576,nr_inodes=1024")));
        assert!(
            tmpfs
                .iter()
                .any(|(p, o)| *p == Path::new("/dev/shm") && o.contains("size=1048576"))
        );
        assert_eq!(
            tmpfs_options(0o1777, 256 << 20),
            "mode=1777,size=268435456,nr_inodes=65536"
        );
    }

    #[test]
    fn attrs_translate_to_mount_attr_bits() {
        assert_eq!(Attrs::SYSTEM.mount_attr_bits(), 0x1 | 0x2 | 0x4);
        assert_eq!(Attrs::default().mount_attr_bits(), 0);
    }
}
