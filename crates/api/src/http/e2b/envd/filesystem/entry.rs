//! An entry as envd describes it (`EntryInfo`), from the guest's stat.
//!
//! envd reports a symlink by its target: `type` and `mode` are the
//! target's, `symlink_target` the resolved path, and `is_symlink` marks
//! the link. Here a link is resolved lexically inside the workspace
//! ([`link_destination`]); one that leads out of it, dangles or chains too
//! far is reported as `FILE_TYPE_SYMLINK` with its target as stored, so the
//! SDK still lists it (envd would say "unspecified" for a dangling link and
//! the SDK would leave it out). Owner and group are `root`: commands in a
//! Paddock sandbox run as its user namespace's root, and the guest's stat
//! carries no owner.

use paddock_proto::{FileKind, FileStat, FsPath, WORKSPACE_MOUNT};

use super::super::filesystem_pb::{
    EntryInfo, FILE_TYPE_DIRECTORY, FILE_TYPE_FILE, FILE_TYPE_SYMLINK, FILE_TYPE_UNSPECIFIED,
};
use super::super::paths::e2b_path;

/// Who owns every file, as commands in the sandbox see it.
const OWNER: &str = "root";

/// Where a symlink resolved to, when it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    /// Workspace-relative.
    pub path: FsPath,
    /// Not a symlink.
    pub stat: FileStat,
}

/// The entry at workspace-relative `path`; `link` is where it leads when
/// it is a symlink that resolved.
pub fn entry_info(path: &FsPath, stat: &FileStat, link: Option<&LinkEnd>) -> EntryInfo {
    let shown = e2b_path(&path.display());
    let is_symlink = stat.kind == FileKind::Symlink;
    let (r#type, mode, symlink_target) = match (is_symlink, link) {
        (false, _) => (file_type(stat.kind), stat.mode, None),
        (true, Some(end)) => (
            file_type(end.stat.kind),
            end.stat.mode,
            Some(e2b_path(&end.path.display())),
        ),
        (true, None) => (
            FILE_TYPE_SYMLINK,
            stat.mode,
            stat.link_target.as_ref().map(FsPath::display),
        ),
    };
    EntryInfo {
        name: shown.rsplit('/').next().unwrap_or_default().to_owned(),
        r#type,
        size: i64::try_from(stat.size).unwrap_or(i64::MAX),
        mode: mode & 0o777,
        permissions: permissions(stat.kind, stat.mode),
        owner: OWNER.to_owned(),
        group: OWNER.to_owned(),
        modified_time: Some(prost_types::Timestamp {
            seconds: stat.mtime_ms.div_euclid(1000),
            nanos: i32::try_from(stat.mtime_ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
        }),
        symlink_target,
        is_symlink,
        path: shown,
        metadata: Default::default(),
    }
}

fn file_type(kind: FileKind) -> i32 {
    match kind {
        FileKind::File => FILE_TYPE_FILE,
        FileKind::Dir => FILE_TYPE_DIRECTORY,
        FileKind::Symlink => FILE_TYPE_SYMLINK,
        FileKind::Other => FILE_TYPE_UNSPECIFIED,
    }
}

/// Go's `FileMode.String()`, which envd sends: the type and special bits
/// as letters (`d` directory, `L` symlink, `u` setuid, `g` setgid, `t`
/// sticky, `?` anything else; `-` when none), then `rwx` three times.
pub fn permissions(kind: FileKind, mode: u32) -> String {
    let mut out = String::with_capacity(12);
    let letters = [
        (kind == FileKind::Dir, 'd'),
        (kind == FileKind::Symlink, 'L'),
        (mode & 0o4000 != 0, 'u'),
        (mode & 0o2000 != 0, 'g'),
        (mode & 0o1000 != 0, 't'),
        (kind == FileKind::Other, '?'),
    ];
    out.extend(letters.iter().filter(|(set, _)| *set).map(|(_, c)| *c));
    if out.is_empty() {
        out.push('-');
    }
    for shift in [6, 3, 0] {
        let bits = mode >> shift;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    out
}

/// Where a symlink at workspace-relative `link` whose target is `target`
/// leads, workspace-relative, or None when it leaves the workspace. An
/// absolute target counts only under the sandbox's workspace mount; `..`
/// is taken lexically (a symlinked directory on the way is not followed).
pub fn link_destination(link: &FsPath, target: &FsPath) -> Option<FsPath> {
    let target = target.as_bytes();
    let (mut parts, rest): (Vec<&[u8]>, &[u8]) = match target.strip_prefix(b"/") {
        Some(_) => {
            let rest = target.strip_prefix(WORKSPACE_MOUNT.as_bytes())?;
            if !rest.is_empty() && !rest.starts_with(b"/") {
                return None;
            }
            (Vec::new(), rest)
        }
        None => {
            let mut parts = Vec::new();
            push_components(&mut parts, link.as_bytes())?;
            parts.pop();
            (parts, target)
        }
    };
    push_components(&mut parts, rest)?;
    Some(if parts.is_empty() {
        FsPath::from(".")
    } else {
        FsPath::from_bytes(parts.join(&b'/'))
    })
}

/// Appends `path`'s components to `parts`, `..` removing one; None when
/// `..` climbs above the root.
fn push_components<'a>(parts: &mut Vec<&'a [u8]>, path: &'a [u8]) -> Option<()> {
    for part in path.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(kind: FileKind, mode: u32) -> FileStat {
        FileStat {
            kind,
            size: 12,
            mode,
            mtime_ms: 1_700_000_000_250,
            link_target: None,
        }
    }

    #[test]
    fn permissions_are_written_as_go_writes_file_modes() {
        assert_eq!(permissions(FileKind::File, 0o644), "-rw-r--r--");
        assert_eq!(permissions(FileKind::Dir, 0o755), "drwxr-xr-x");
        assert_eq!(permissions(FileKind::Symlink, 0o777), "Lrwxrwxrwx");
        assert_eq!(permissions(FileKind::File, 0o4755), "urwxr-xr-x");
        assert_eq!(permissions(FileKind::Dir, 0o1777), "dtrwxrwxrwx");
        assert_eq!(permissions(FileKind::Other, 0o600), "?rw-------");
        assert_eq!(permissions(FileKind::File, 0), "----------");
    }

    #[test]
    fn link_targets_resolve_inside_the_workspace_only() {
        let at = |link: &str, target: &str| {
            link_destination(&FsPath::from(link), &FsPath::from(target)).map(|p| p.display())
        };
        assert_eq!(at("a/l", "b").as_deref(), Some("a/b"));
        assert_eq!(at("a/l", "../b/./c").as_deref(), Some("b/c"));
        assert_eq!(at("l", "d/").as_deref(), Some("d"));
        assert_eq!(at("a/l", "..").as_deref(), Some("."));
        assert_eq!(at("a/l", "/workspace/x").as_deref(), Some("x"));
        assert_eq!(at("l", "/workspace").as_deref(), Some("."));
        assert_eq!(at("l", "../x"), None);
        assert_eq!(at("l", "/etc/passwd"), None);
        assert_eq!(at("l", "/workspaces/x"), None);
    }

    #[test]
    fn an_entry_carries_the_e2b_path_and_envds_fields() {
        let entry = entry_info(&FsPath::from("d/a.txt"), &stat(FileKind::File, 0o644), None);
        assert_eq!(entry.name, "a.txt");
        assert_eq!(entry.path, e2b_path("d/a.txt"));
        assert_eq!(
            (entry.r#type, entry.size, entry.mode),
            (FILE_TYPE_FILE, 12, 0o644)
        );
        assert_eq!(entry.permissions, "-rw-r--r--");
        assert_eq!(
            (entry.owner.as_str(), entry.group.as_str()),
            ("root", "root")
        );
        assert_eq!(
            entry.modified_time,
            Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 250_000_000
            })
        );
        assert!(!entry.is_symlink && entry.symlink_target.is_none());
        let root = entry_info(&FsPath::from("."), &stat(FileKind::Dir, 0o755), None);
        assert_eq!(root.path, e2b_path("."));
        assert_eq!(Some(root.name.as_str()), e2b_path(".").rsplit('/').next());
    }

    #[test]
    fn a_symlink_is_described_by_its_target_when_it_resolves() {
        let link = FileStat {
            link_target: Some(FsPath::from("d")),
            ..stat(FileKind::Symlink, 0o777)
        };
        let end = LinkEnd {
            path: FsPath::from("d"),
            stat: stat(FileKind::Dir, 0o750),
        };
        let entry = entry_info(&FsPath::from("l"), &link, Some(&end));
        assert_eq!((entry.r#type, entry.mode), (FILE_TYPE_DIRECTORY, 0o750));
        assert_eq!(entry.symlink_target, Some(e2b_path("d")));
        assert!(entry.is_symlink);
        assert_eq!(entry.permissions, "Lrwxrwxrwx");

        let outside = FileStat {
            link_target: Some(FsPath::from("/usr/bin/python3")),
            ..link
        };
        let entry = entry_info(&FsPath::from("l"), &outside, None);
        assert_eq!((entry.r#type, entry.mode), (FILE_TYPE_SYMLINK, 0o777));
        assert_eq!(entry.symlink_target.as_deref(), Some("/usr/bin/python3"));
        assert!(entry.is_symlink);
    }
}
