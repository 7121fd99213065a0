//! The shape of a tree a restore would build, kept in memory: the checks a
//! restore makes through the file system (see `unpack::tree`), made on
//! names alone for readings that create nothing.

use crate::error::{Refusal, lossy};
use crate::unpack::names::{Names, NodeId};
use crate::unpack::paths::{check_symlink_target, components};
use crate::unpack::reader::Kind;
use crate::unpack::tree::TreeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Dir,
    /// A regular file or a hardlink to one.
    File,
    Symlink,
}

/// What a restore of the entries seen so far would have created.
#[derive(Debug)]
pub(super) struct Shape {
    nodes: Names<Node>,
    /// Counted against `max_files` as a restore counts: every entry created,
    /// parents the archive left implied included.
    created: u64,
    max_files: u64,
}

impl Shape {
    pub(super) fn new(max_files: u64) -> Self {
        Self {
            nodes: Names::new(Node::Dir),
            created: 0,
            max_files,
        }
    }

    /// Adds the entry at `path` (checked components) of `kind`, refusing it
    /// where a restore would: a second entry of one name (a directory may be
    /// listed again), a path through a symlink or a file, a hardlink to
    /// anything but a file listed earlier, a symlink with an empty target,
    /// one entry over `max_files`.
    pub(super) fn add(&mut self, path: &[&[u8]], kind: Kind, link: &[u8]) -> Result<(), TreeError> {
        let existing = self.nodes.find(path).map(|id| *self.nodes.get(id));
        let node = match kind {
            Kind::Dir if existing == Some(Node::Dir) => return Ok(()),
            Kind::Dir => Node::Dir,
            Kind::File => Node::File,
            Kind::Symlink => {
                check_symlink_target(link)?;
                Node::Symlink
            }
            Kind::Hardlink => {
                let target = components(link)?;
                let found = self.nodes.find(&target).map(|id| *self.nodes.get(id));
                if found != Some(Node::File) {
                    return Err(Refusal::HardlinkTarget {
                        target: lossy(&target.join(&b'/')),
                    }
                    .into());
                }
                Node::File
            }
        };
        let Some((name, parents)) = path.split_last() else {
            return Err(Refusal::EmptyPath.into());
        };
        self.refuse_through_symlink(parents)?;
        // In a restore's order: the entry is counted before its parents
        // are made, each implied parent as it is made.
        self.check_room()?;
        let mut parent = Names::<Node>::ROOT;
        for component in parents {
            parent = match self.nodes.child(parent, component) {
                Some(id) if *self.nodes.get(id) == Node::Dir => id,
                Some(_) => return Err(Refusal::ThroughNonDirectory.into()),
                None => {
                    self.check_room()?;
                    self.created += 1;
                    self.nodes.insert(parent, component, Node::Dir)
                }
            };
        }
        if existing.is_some() {
            return Err(Refusal::Duplicate.into());
        }
        self.nodes.insert(parent, name, node);
        self.created += 1;
        Ok(())
    }

    /// Refuses a path whose existing parents include a symlink.
    fn refuse_through_symlink(&self, parents: &[&[u8]]) -> Result<(), TreeError> {
        let mut node: NodeId = Names::<Node>::ROOT;
        for (depth, component) in parents.iter().enumerate() {
            let Some(id) = self.nodes.child(node, component) else {
                return Ok(());
            };
            if *self.nodes.get(id) == Node::Symlink {
                return Err(Refusal::ThroughSymlink {
                    link: lossy(&parents[..=depth].join(&b'/')),
                }
                .into());
            }
            node = id;
        }
        Ok(())
    }

    fn check_room(&self) -> Result<(), TreeError> {
        if self.created >= self.max_files {
            return Err(TreeError::OverFiles(self.max_files));
        }
        Ok(())
    }
}
