//! Entry paths interned as a tree of components, so the state a reading
//! keeps grows with the tree (one name per node), not with the sum of the
//! entries' path lengths: an archive of many entries under long directory
//! names costs each name once. A path is a [`NodeId`].

use std::collections::HashMap;

/// A node of a [`Names`] tree; [`Names::ROOT`] is the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeId(usize);

#[derive(Debug)]
struct Node<T> {
    value: T,
    /// Children by name; `None` until the first child. Boxed: most nodes
    /// are files, and a pointer is 8 bytes where an empty map is 48.
    #[allow(clippy::box_collection)]
    children: Option<Box<HashMap<Box<[u8]>, NodeId>>>,
}

/// A tree of names with a `T` on every node.
#[derive(Debug)]
pub(crate) struct Names<T> {
    nodes: Vec<Node<T>>,
}

impl<T> Names<T> {
    pub(crate) const ROOT: NodeId = NodeId(0);

    pub(crate) fn new(root: T) -> Self {
        Self {
            nodes: vec![Node {
                value: root,
                children: None,
            }],
        }
    }

    pub(crate) fn child(&self, parent: NodeId, name: &[u8]) -> Option<NodeId> {
        self.nodes[parent.0].children.as_ref()?.get(name).copied()
    }

    /// The node at `path` below the root, if every component exists.
    pub(crate) fn find(&self, path: &[&[u8]]) -> Option<NodeId> {
        path.iter()
            .try_fold(Self::ROOT, |node, name| self.child(node, name))
    }

    /// Adds `name` under `parent`; the caller checked it is not there.
    pub(crate) fn insert(&mut self, parent: NodeId, name: &[u8], value: T) -> NodeId {
        let id = NodeId(self.nodes.len());
        self.nodes.push(Node {
            value,
            children: None,
        });
        self.nodes[parent.0]
            .children
            .get_or_insert_with(Box::default)
            .insert(name.into(), id);
        id
    }

    pub(crate) fn get(&self, id: NodeId) -> &T {
        &self.nodes[id.0].value
    }

    pub(crate) fn get_mut(&mut self, id: NodeId) -> &mut T {
        &mut self.nodes[id.0].value
    }

    /// The children of `parent` with their names, in no particular order.
    pub(crate) fn children(&self, parent: NodeId) -> impl Iterator<Item = (&[u8], NodeId)> {
        self.nodes[parent.0]
            .children
            .iter()
            .flat_map(|children| children.iter().map(|(name, id)| (&**name, *id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_share_their_prefixes() {
        let mut names = Names::new('r');
        let a = names.insert(Names::<char>::ROOT, b"a", 'a');
        let b = names.insert(a, b"b", 'b');
        let c = names.insert(a, b"c", 'c');
        assert_eq!(names.find(&[b"a", b"b"]), Some(b));
        assert_eq!(names.find(&[b"a", b"c"]), Some(c));
        assert_eq!(names.find(&[b"a", b"d"]), None);
        assert_eq!(names.find(&[b"b"]), None);
        assert_eq!(names.find(&[]), Some(Names::<char>::ROOT));
        *names.get_mut(b) = 'B';
        assert_eq!(*names.get(b), 'B');
        let mut children: Vec<_> = names.children(a).collect();
        children.sort_by_key(|(name, _)| name.to_vec());
        assert_eq!(children, vec![(&b"b"[..], b), (&b"c"[..], c)]);
        assert_eq!(names.children(b).count(), 0);
    }
}
