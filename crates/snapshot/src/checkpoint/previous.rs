//! The previous manifest of a capture, read along with its walk.

use std::collections::{BTreeMap, btree_map};
use std::iter::Peekable;
use std::ops::Bound;

use paddock_proto::FsPath;

use super::manifest::{Entry, Manifest};

/// The previous manifest, read along with the walk: the walk visits paths
/// in the manifest's order except around names that sort before `/` (`a`,
/// `a/x`, `a.txt`), so each lookup first compares with the entry after
/// the last one found, and only out of step seeks in the map (and goes on
/// from there).
pub(super) struct Previous<'a> {
    entries: &'a BTreeMap<FsPath, Entry>,
    pub(super) captured_at_ns: i64,
    next: Peekable<btree_map::Range<'a, FsPath, Entry>>,
}

impl<'a> Previous<'a> {
    pub(super) fn new(manifest: &'a Manifest) -> Self {
        Self {
            entries: &manifest.entries,
            captured_at_ns: manifest.captured_at_ns,
            next: manifest.entries.range::<[u8], _>(..).peekable(),
        }
    }

    /// The entry of `path`, if the previous manifest has one.
    pub(super) fn find(&mut self, path: &[u8]) -> Option<&'a Entry> {
        if let Some((at, entry)) = self.next.peek()
            && at.as_bytes() == path
        {
            let entry = *entry;
            self.next.next();
            return Some(entry);
        }
        self.next = self
            .entries
            .range::<[u8], _>((Bound::Included(path), Bound::Unbounded))
            .peekable();
        match self.next.peek() {
            Some((at, entry)) if at.as_bytes() == path => {
                let entry = *entry;
                self.next.next();
                Some(entry)
            }
            _ => None,
        }
    }
}
