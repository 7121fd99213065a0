//! The shape of a tree a restore would build, kept in memory: the checks a
//! restore makes through the file system (see `unpack::tree`), made on
//! names alone for readings that create nothing.

use std::collections::HashMap;

use crate::error::{Refusal, lossy};
use crate::unpack::paths::components;
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
    nodes: HashMap<Vec<u8>, Node>,
    /// Counted against `max_files` as a restore counts: every entry created,
    /// parents the archive left implied included.
    created: u64,
    max_files: u64,
}

impl Shape {
    pub(super) fn new(max_files: u64) -> Self {
        Self {
            nodes: HashMap::new(),
            created: 0,
            max_files,
        }
    }

    /// Adds the entry at `path` (checked components) of `kind`, refusing it
    /// where a restore would: a second entry of one name (a directory may be
    /// listed again), a path through a symlink or a file, a hardlink to
    /// anything but a file listed earlier, one entry over `max_files`.
    pub(super) fn add(&mut self, path: &[&[u8]], kind: Kind, link: &[u8]) -> Result<(), TreeError> {
        let joined = path.join(&b'/');
        let node = match kind {
            Kind::Dir if self.nodes.get(&joined) == Some(&Node::Dir) => return Ok(()),
            Kind::Dir => Node::Dir,
            Kind::File => Node::File,
            Kind::Symlink => Node::Symlink,
            Kind::Hardlink => {
                let target = components(link)?.join(&b'/');
                if self.nodes.get(&target) != Some(&Node::File) {
                    return Err(Refusal::HardlinkTarget {
                        target: lossy(&target),
                    }
                    .into());
                }
                Node::File
            }
        };
        let Some((_, parents)) = path.split_last() else {
            return Err(Refusal::EmptyPath.into());
        };
        let prefixes: Vec<Vec<u8>> = (1..=parents.len())
            .map(|n| parents[..n].join(&b'/'))
            .collect();
        if let Some(link) = prefixes
            .iter()
            .find(|prefix| self.nodes.get(*prefix) == Some(&Node::Symlink))
        {
            return Err(Refusal::ThroughSymlink { link: lossy(link) }.into());
        }
        // In a restore's order: the entry is counted before its parents
        // are made, each implied parent as it is made.
        self.check_room()?;
        for prefix in prefixes {
            match self.nodes.get(&prefix) {
                Some(Node::Dir) => {}
                Some(_) => return Err(Refusal::ThroughNonDirectory.into()),
                None => {
                    self.check_room()?;
                    self.nodes.insert(prefix, Node::Dir);
                    self.created += 1;
                }
            }
        }
        if self.nodes.contains_key(&joined) {
            return Err(Refusal::Duplicate.into());
        }
        self.nodes.insert(joined, node);
        self.created += 1;
        Ok(())
    }

    fn check_room(&self) -> Result<(), TreeError> {
        if self.created >= self.max_files {
            return Err(TreeError::OverFiles(self.max_files));
        }
        Ok(())
    }
}
