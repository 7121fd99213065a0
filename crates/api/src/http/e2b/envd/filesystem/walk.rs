//! ListDir's walk: the entries of a directory down to `depth` levels (1:
//! the directory's own), in the order envd's `filepath.WalkDir` gives them
//! (depth first, each directory right before its entries, names sorted),
//! never into a symlink. A subdirectory removed while walking is passed
//! over; the walk stops with `resource_exhausted` past `max_entries`.

use std::future::Future;

use paddock_proto::{DirEntry, FileKind, FileStat, FsPath};

use super::super::connect::{Code, ConnectError};
use super::super::paths::e2b_path;

/// One entry met on the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walked {
    /// Workspace-relative.
    pub path: FsPath,
    pub stat: FileStat,
}

/// Walks `root` with `list`, which answers a directory's entries.
pub async fn walk<L, Fut>(
    root: &FsPath,
    depth: u32,
    max_entries: usize,
    mut list: L,
) -> Result<Vec<Walked>, ConnectError>
where
    L: FnMut(FsPath) -> Fut,
    Fut: Future<Output = Result<Vec<DirEntry>, ConnectError>>,
{
    let mut found = Vec::new();
    let first = list(root.clone()).await?;
    let mut open = vec![(root.clone(), 1, first.into_iter())];
    while let Some((dir, level, entries)) = open.last_mut() {
        let Some(entry) = entries.next() else {
            open.pop();
            continue;
        };
        if found.len() >= max_entries {
            return Err(ConnectError::new(
                Code::ResourceExhausted,
                format!(
                    "{} holds more than {max_entries} entries down to depth {depth}: list a smaller depth or a subdirectory",
                    e2b_path(&root.display())
                ),
            ));
        }
        let path = child(dir, entry.name.as_bytes());
        let level = *level;
        let descend = entry.stat.kind == FileKind::Dir && level < depth;
        found.push(Walked {
            path: path.clone(),
            stat: entry.stat,
        });
        if descend {
            match list(path.clone()).await {
                Ok(entries) => open.push((path, level + 1, entries.into_iter())),
                Err(e) if e.code == Code::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(found)
}

/// `dir/name`, with the workspace root written `.` left out.
pub fn child(dir: &FsPath, name: &[u8]) -> FsPath {
    if dir.as_bytes() == b"." {
        FsPath::from_bytes(name)
    } else {
        dir.join(name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn stat(kind: FileKind) -> FileStat {
        FileStat {
            kind,
            size: 0,
            mode: 0o755,
            mtime_ms: 0,
            link_target: None,
        }
    }

    /// A tree of `path -> [(name, kind)]`; `gone` is listed by its parent
    /// but removed before it is read.
    fn tree() -> HashMap<&'static str, Vec<(&'static str, FileKind)>> {
        HashMap::from([
            (
                ".",
                vec![
                    ("a", FileKind::Dir),
                    ("gone", FileKind::Dir),
                    ("l", FileKind::Symlink),
                    ("z.txt", FileKind::File),
                ],
            ),
            ("a", vec![("b", FileKind::Dir), ("f", FileKind::File)]),
            ("a/b", vec![("c", FileKind::File)]),
            ("l", vec![("never", FileKind::File)]),
        ])
    }

    async fn run(depth: u32, max: usize) -> Result<Vec<String>, ConnectError> {
        let tree = tree();
        let listed = walk(&FsPath::from("."), depth, max, |dir| {
            let entries = tree.get(dir.display().as_str()).map(|names| {
                names
                    .iter()
                    .map(|(name, kind)| DirEntry {
                        name: FsPath::from(*name),
                        stat: stat(*kind),
                    })
                    .collect()
            });
            async move { entries.ok_or_else(|| ConnectError::new(Code::NotFound, "gone")) }
        })
        .await?;
        Ok(listed.into_iter().map(|w| w.path.display()).collect())
    }

    #[tokio::test]
    async fn depth_one_is_the_directorys_own_entries() {
        assert_eq!(run(1, 100).await.unwrap(), ["a", "gone", "l", "z.txt"]);
    }

    #[tokio::test]
    async fn deeper_walks_go_depth_first_and_never_into_symlinks() {
        assert_eq!(
            run(2, 100).await.unwrap(),
            ["a", "a/b", "a/f", "gone", "l", "z.txt"]
        );
        assert_eq!(
            run(9, 100).await.unwrap(),
            ["a", "a/b", "a/b/c", "a/f", "gone", "l", "z.txt"]
        );
    }

    #[tokio::test]
    async fn too_many_entries_stop_the_walk() {
        let err = run(9, 3).await.unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
        assert_eq!(run(9, 7).await.unwrap().len(), 7);
    }

    #[tokio::test]
    async fn a_missing_root_is_not_found() {
        let err = walk(&FsPath::from("nope"), 1, 10, |_| async {
            Err::<Vec<DirEntry>, _>(ConnectError::new(Code::NotFound, "nope"))
        })
        .await
        .unwrap_err();
        assert_eq!(err.code, Code::NotFound);
    }
}
