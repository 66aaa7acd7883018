//! An arena node ([`Node`]): an entry's list links ([`Link`]), then its
//! state ([`NodeState`]).
//!
//! # Layout
//!
//! One vector of nodes; a node is an entry's list links followed by its
//! state:
//!
//! | part    | type                                                     | bytes (`T = u64`) |
//! |---------|----------------------------------------------------------|-------------------|
//! | `link`  | `Link { prev: u32, next: u32 }`                          | 8                 |
//! | `state` | `enum { Vacant { next_free: u32 }, Occupied(Entry<T>) }` | 24                |
//!
//! The entry's `stamp` is a `NonZeroU32`, whose zero value marks a vacant
//! node (the niche), so a node's state is exactly as large as an entry:
//! `16 + size_of::<T>()` rounded up to 8. The links sit outside the enum so
//! that relinking a neighbour is a plain store: through the enum it would first
//! have to load the neighbour's tag, and on a random cancel that load is a
//! cache miss. They sit in the same node (not a parallel vector) so that a
//! cancel's key check brings the links in with the stamp, one cache miss
//! instead of two, and a cascade step reads one record, not two.

use super::entry::Entry;

/// A node's list links: the indices of its neighbours in whichever list
/// holds it. What the values name (entries or list sentinels) is the lists'
/// business: see `list.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

/// One element of the arena: an entry's list links, then its state (why,
/// in the module docs).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Node<T> {
    /// The list neighbours; meaningless while the node is vacant.
    pub(super) link: Link,
    pub(super) state: NodeState<T>,
}

/// Whether a node holds an entry. A vacant node is on the free list, except
/// between [`Arena::take_reserved`](super::arena::Arena::take_reserved) and
/// [`Arena::release`](super::arena::Arena::release).
#[derive(Debug)]
pub(crate) enum NodeState<T> {
    Vacant { next_free: u32 },
    Occupied(Entry<T>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_state_costs_no_more_than_its_entry() {
        // The stamp's niche marks vacant nodes: no tag. Plus 8 bytes of links.
        assert_eq!(core::mem::size_of::<Link>(), 8);
        assert_eq!(core::mem::size_of::<Node<u64>>(), 32);
        assert_eq!(core::mem::size_of::<Node<()>>(), 24);
        assert_eq!(core::mem::size_of::<NodeState<u64>>(), 24);
        assert_eq!(core::mem::size_of::<NodeState<()>>(), 16);
        assert_eq!(core::mem::size_of::<NodeState<u32>>(), 24);
        assert_eq!(core::mem::size_of::<NodeState<[u8; 16]>>(), 32);
    }
}
