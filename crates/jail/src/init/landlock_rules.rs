//! The landlock policy: a table of (path, access, reason). Every access right
//! the kernel's ABI knows is handled, so anything not granted here is denied,
//! whatever the mounts say. With ABI 6+ the sandbox is also scoped: no
//! signals to, and no abstract unix socket connections to, processes outside.

use std::borrow::Cow;
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use paddock_proto::{LayerState, VolumeMount};

use crate::JailError;

/// The newest landlock ABI the landlock crate knows; a newer kernel is used
/// at this level.
pub(crate) const NEWEST_KNOWN_ABI: u32 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// List directory entries.
    List,
    /// Read files, list directories.
    Read,
    /// Read, list and execute.
    ReadExec,
    /// Read and write an existing device node.
    Device,
    /// A device that also takes ioctls (terminals).
    Terminal,
    /// Everything: create, write, remove, rename, execute.
    ReadWrite,
}

impl Grant {
    pub(crate) fn access(self, abi: ABI) -> BitFlags<AccessFs> {
        let all = AccessFs::from_all(abi);
        let bits = match self {
            Grant::List => AccessFs::ReadDir.into(),
            Grant::Read => AccessFs::ReadFile | AccessFs::ReadDir,
            Grant::ReadExec => AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute,
            Grant::Device => AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
            Grant::Terminal => {
                AccessFs::ReadFile
                    | AccessFs::ReadDir
                    | AccessFs::WriteFile
                    | AccessFs::Truncate
                    | AccessFs::IoctlDev
            }
            Grant::ReadWrite => all,
        };
        bits & all
    }

    #[cfg(test)]
    pub(crate) fn writes(self) -> bool {
        !matches!(self, Grant::List | Grant::Read | Grant::ReadExec)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FsRule {
    pub path: Cow<'static, str>,
    pub grant: Grant,
    pub reason: &'static str,
}

fn rule(path: &'static str, grant: Grant, reason: &'static str) -> FsRule {
    FsRule {
        path: Cow::Borrowed(path),
        grant,
        reason,
    }
}

/// The table. Paths missing in the sandbox are skipped. With a write scope
/// (`writable`, the validated paths relative to /workspace) the workspace
/// is read-only and each scope path gets every right. Each named volume
/// (checked by [`paddock_proto::check_volume_mounts`]) gets every right,
/// or read and execute when mounted read-only.
pub(crate) fn rules(read_only: bool, writable: &[String], volumes: &[VolumeMount]) -> Vec<FsRule> {
    let system = "system programs and libraries (read-only mounts)";
    let mut table = vec![
        rule(
            "/",
            Grant::List,
            "`ls /`; everything below is the sandbox's own layout",
        ),
        rule("/usr", Grant::ReadExec, system),
        rule("/bin", Grant::ReadExec, system),
        rule("/sbin", Grant::ReadExec, system),
        rule("/lib", Grant::ReadExec, system),
        rule("/lib32", Grant::ReadExec, system),
        rule("/lib64", Grant::ReadExec, system),
        rule("/libx32", Grant::ReadExec, system),
        rule("/etc", Grant::Read, "sanitized configuration"),
        rule(
            "/proc",
            Grant::Read,
            "process information (ps, runtimes); no writes: /proc/<pid>/mem would give \
             ptrace-like access to other sandbox processes",
        ),
        rule("/dev/null", Grant::Device, "discarding output"),
        rule("/dev/zero", Grant::Device, "zero pages"),
        rule("/dev/full", Grant::Device, "ENOSPC testing"),
        rule("/dev/random", Grant::Device, "randomness"),
        rule("/dev/urandom", Grant::Device, "randomness"),
        rule(
            "/dev/tty",
            Grant::Terminal,
            "the controlling terminal, if any",
        ),
        rule(
            "/dev/pts",
            Grant::Terminal,
            "pseudo-terminals of interactive programs",
        ),
        rule(
            "/dev/shm",
            Grant::ReadWrite,
            "POSIX shared memory and semaphores",
        ),
        if read_only {
            rule(
                "/workspace",
                Grant::ReadExec,
                "the workspace, read-only mode",
            )
        } else if !writable.is_empty() {
            rule(
                "/workspace",
                Grant::ReadExec,
                "the workspace, read-only outside its write scope",
            )
        } else {
            rule("/workspace", Grant::ReadWrite, "the workspace")
        },
        rule(
            "/tmp",
            Grant::ReadWrite,
            "scratch space (size-limited tmpfs)",
        ),
    ];
    table.extend(writable.iter().map(|rel| {
        FsRule {
            path: Cow::Owned(
                crate::host::writable::sandbox_path(rel)
                    .to_string_lossy()
                    .into_owned(),
            ),
            grant: Grant::ReadWrite,
            reason: "a path of the write scope (its own read-write mount); a file gets only \
                 the file rights, so it can be rewritten but not replaced or removed",
        }
    }));
    table.extend(volumes.iter().map(|volume| {
        if volume.read_only {
            FsRule {
                path: Cow::Owned(volume.path.clone()),
                grant: Grant::ReadExec,
                reason: "a named volume mounted read-only (its mount is read-only too)",
            }
        } else {
            FsRule {
                path: Cow::Owned(volume.path.clone()),
                grant: Grant::ReadWrite,
                reason: "a named volume mounted read-write (its own mount, under its quota)",
            }
        }
    }));
    table
}

/// Applies the table at the kernel's ABI. `Ok((abi, Enforced))` only when
/// the kernel enforces all of it; when landlock is missing, partial or fails,
/// the result is an error, or a downgrade when `allow_missing`.
pub(crate) fn enforce(
    read_only: bool,
    writable: &[String],
    volumes: &[VolumeMount],
    kernel_abi: Option<u32>,
    allow_missing: bool,
) -> Result<(Option<u32>, LayerState), JailError> {
    let outcome = match kernel_abi {
        None => Err(JailError::LandlockNotEnforced {
            reason: "the kernel offers no landlock".to_owned(),
        }),
        Some(kernel_abi) => {
            let level = kernel_abi.min(NEWEST_KNOWN_ABI);
            apply_at(read_only, writable, volumes, level).and_then(|status| {
                if status == RulesetStatus::FullyEnforced {
                    Ok(level)
                } else {
                    Err(JailError::LandlockNotEnforced {
                        reason: format!("ruleset status {status:?} at ABI {level}"),
                    })
                }
            })
        }
    };
    match outcome {
        Ok(level) => Ok((Some(level), LayerState::Enforced)),
        Err(e) if allow_missing => Ok((
            None,
            LayerState::Downgraded {
                reason: paddock_proto::error_chain(&e),
            },
        )),
        Err(e) => Err(e),
    }
}

fn apply_at(
    read_only: bool,
    writable: &[String],
    volumes: &[VolumeMount],
    level: u32,
) -> Result<RulesetStatus, JailError> {
    let abi = ABI::from(level as i32);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(JailError::Landlock)?;
    let scopes = Scope::from_all(abi);
    if !scopes.is_empty() {
        ruleset = ruleset.scope(scopes).map_err(JailError::Landlock)?;
    }
    let mut created = ruleset.create().map_err(JailError::Landlock)?;
    for r in rules(read_only, writable, volumes) {
        let path = Path::new(r.path.as_ref());
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let fd = PathFd::new(path).map_err(|source| JailError::LandlockPath {
            path: path.to_path_buf(),
            source,
        })?;
        let mut access = r.grant.access(abi);
        if !meta.is_dir() {
            access &= AccessFs::from_file(abi);
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(JailError::Landlock)?;
    }
    let status = created.restrict_self().map_err(JailError::Landlock)?;
    Ok(status.ruleset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant_of(read_only: bool, path: &str) -> Grant {
        grant_in(&rules(read_only, &[], &[]), path)
    }

    fn grant_in(table: &[FsRule], path: &str) -> Grant {
        table
            .iter()
            .find(|r| r.path == path)
            .map(|r| r.grant)
            .unwrap()
    }

    fn writable_paths(table: &[FsRule]) -> Vec<&str> {
        table
            .iter()
            .filter(|r| r.grant.writes())
            .map(|r| r.path.as_ref())
            .collect()
    }

    #[test]
    fn only_workspace_tmp_shm_and_devices_are_writable() {
        let table = rules(false, &[], &[]);
        let writable = writable_paths(&table);
        assert_eq!(
            writable,
            [
                "/dev/null",
                "/dev/zero",
                "/dev/full",
                "/dev/random",
                "/dev/urandom",
                "/dev/tty",
                "/dev/pts",
                "/dev/shm",
                "/workspace",
                "/tmp"
            ]
        );
    }

    #[test]
    fn a_read_write_volume_is_writable_and_a_read_only_one_is_not() {
        let volumes = [
            VolumeMount {
                name: "cache".to_owned(),
                path: "/cache".to_owned(),
                read_only: false,
            },
            VolumeMount {
                name: "seed".to_owned(),
                path: "/srv/seed".to_owned(),
                read_only: true,
            },
        ];
        let table = rules(false, &[], &volumes);
        assert_eq!(grant_in(&table, "/cache"), Grant::ReadWrite);
        assert_eq!(grant_in(&table, "/srv/seed"), Grant::ReadExec);
        assert!(table.iter().all(|r| !r.reason.is_empty()));
        // nothing else changes
        let without: Vec<_> = rules(false, &[], &[]);
        assert_eq!(table[..without.len()], without[..]);
    }

    #[test]
    fn read_only_mode_makes_the_workspace_read_only_and_nothing_else_changes() {
        assert_eq!(grant_of(false, "/workspace"), Grant::ReadWrite);
        assert_eq!(grant_of(true, "/workspace"), Grant::ReadExec);
        assert_eq!(grant_of(true, "/tmp"), Grant::ReadWrite);
        let others = |ro| -> Vec<FsRule> {
            rules(ro, &[], &[])
                .into_iter()
                .filter(|r| r.path != "/workspace")
                .collect()
        };
        assert_eq!(others(true), others(false));
    }

    #[test]
    fn system_config_and_proc_are_never_writable_and_all_rules_say_why() {
        for path in ["/usr", "/bin", "/lib", "/etc", "/proc", "/"] {
            assert!(!grant_of(false, path).writes(), "{path} writable");
        }
        let scope = ["src".to_owned()];
        for read_only in [false, true] {
            assert!(
                rules(read_only, &[], &[])
                    .iter()
                    .all(|r| !r.reason.is_empty())
            );
        }
        assert!(
            rules(false, &scope, &[])
                .iter()
                .all(|r| !r.reason.is_empty())
        );
    }

    #[test]
    fn a_write_scope_makes_the_workspace_read_only_except_its_paths() {
        let scope = ["docs/notes.md".to_owned(), "src".to_owned()];
        let table = rules(false, &scope, &[]);
        assert_eq!(grant_in(&table, "/workspace"), Grant::ReadExec);
        assert_eq!(grant_in(&table, "/workspace/src"), Grant::ReadWrite);
        assert_eq!(
            grant_in(&table, "/workspace/docs/notes.md"),
            Grant::ReadWrite
        );
        assert_eq!(
            writable_paths(&table),
            [
                "/dev/null",
                "/dev/zero",
                "/dev/full",
                "/dev/random",
                "/dev/urandom",
                "/dev/tty",
                "/dev/pts",
                "/dev/shm",
                "/tmp",
                "/workspace/docs/notes.md",
                "/workspace/src"
            ]
        );
        // Everything but the workspace rows is the same as without a scope.
        let system = |table: Vec<FsRule>| -> Vec<FsRule> {
            table
                .into_iter()
                .filter(|r| !r.path.starts_with("/workspace"))
                .collect()
        };
        assert_eq!(
            system(rules(false, &scope, &[])),
            system(rules(false, &[], &[]))
        );
    }

    #[test]
    fn grants_map_to_landlock_rights_at_each_abi() {
        let v1 = ABI::V1;
        assert_eq!(
            Grant::ReadExec.access(v1),
            AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
        );
        // Truncate and IoctlDev do not exist at ABI 1 and are left out.
        assert_eq!(
            Grant::Terminal.access(v1),
            AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::WriteFile
        );
        assert!(Grant::Terminal.access(ABI::V5).contains(AccessFs::IoctlDev));
        assert_eq!(
            Grant::ReadWrite.access(ABI::V6),
            AccessFs::from_all(ABI::V6)
        );
        assert!(!Grant::Read.access(ABI::V6).contains(AccessFs::WriteFile));
    }

    #[test]
    fn newest_known_abi_is_the_crates_newest() {
        assert_eq!(
            ABI::from(NEWEST_KNOWN_ABI as i32),
            ABI::from(i32::MAX),
            "bump NEWEST_KNOWN_ABI with the landlock crate"
        );
        assert_ne!(ABI::from(NEWEST_KNOWN_ABI as i32 - 1), ABI::from(i32::MAX));
    }
}
