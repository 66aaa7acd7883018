//! Entry storage: a slab of timer entries with stable indices, reused
//! last-freed-first, whose entries the wheel can prefetch by index.
//!
//! This is the `slab` crate's structure (a `Vec` of vacant-or-occupied
//! nodes, the vacant ones threaded into a free list) owned here for one
//! reason: the wheel walks index-linked lists, each step a dependent load,
//! and only hides that latency by prefetching entries further down the list
//! ([`Arena::prefetch`]). That needs an entry's address without reading it,
//! which `slab::Slab` does not offer: its entry type is private and every
//! lookup reads the entry's vacant-or-occupied tag. Prefetching cut the cost
//! of expiring a timer at 10⁶ timers about threefold (see
//! `docs/benchmarks.md`).
//!
//! The arena owns the node layout (`node.rs`), links included: the lists
//! (`list.rs`) thread through the nodes' [`Link`]s, but the arena knows
//! nothing of lists.

use super::aligned_vec::{AlignedVec, Drain, LINE};
use super::entry::{Entry, RESET_SEQ};
use super::node::{Link, Node, NodeState};
use super::prefetch::prefetch_read;

/// What [`Arena::iter`] returns.
pub(crate) type Entries<'a, T> = core::iter::FilterMap<
    core::iter::Enumerate<core::slice::Iter<'a, Node<T>>>,
    fn((usize, &'a Node<T>)) -> Option<(u32, &'a Entry<T>)>,
>;

/// What [`Arena::drain`] returns.
pub(crate) type DrainEntries<'a, T> =
    core::iter::FilterMap<Drain<'a, Node<T>>, fn(Node<T>) -> Option<Entry<T>>>;

/// End of the free list.
const NO_NODE: u32 = u32::MAX;

/// The slab of entries.
#[derive(Debug)]
pub(crate) struct Arena<T> {
    /// Aligned to a cache line, so a 32-byte node never spans two.
    nodes: AlignedVec<Node<T>>,
    /// Most recently freed node, or `NO_NODE`.
    free: u32,
    len: usize,
}

impl<T> Arena<T> {
    /// An empty arena with room for `capacity` nodes, written once (see
    /// [`touch_spare`](Self::touch_spare)).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let mut arena = Arena {
            nodes: AlignedVec::with_capacity(capacity),
            free: NO_NODE,
            len: 0,
        };
        arena.touch_spare();
        arena
    }

    /// Writes every node of the spare capacity once, so that the pages
    /// behind it are mapped now and not by the inserts that fill them: a
    /// first write to a fresh page faults, and at 10⁶ timers those faults
    /// were about half of an insert's time (`docs/benchmarks.md`). The
    /// vector's length is unchanged; the nodes written are vacant and
    /// unlinked, and a later insert overwrites them. The pattern is not all
    /// zeros, so the compiler cannot turn allocate-then-zero into a
    /// `calloc`, which would map nothing.
    fn touch_spare(&mut self) {
        for node in self.nodes.spare_capacity_mut() {
            node.write(Node {
                link: Link {
                    prev: NO_NODE,
                    next: NO_NODE,
                },
                state: NodeState::Vacant { next_free: NO_NODE },
            });
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// Where the nodes start (tests: the storage did not move).
    #[cfg(test)]
    pub(crate) fn as_ptr(&self) -> *const Node<T> {
        self.nodes.as_ptr()
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        // Vacant nodes are reused before the vector grows: free ones at once,
        // ones held by `take_reserved` once released (`Wheel::try_insert`
        // releases them before it would grow the vector).
        let vacant = self.nodes.len() - self.len;
        let before = self.nodes.capacity();
        self.nodes.reserve(additional.saturating_sub(vacant));
        // Only a new allocation has spare room that was never written.
        if self.nodes.capacity() != before {
            self.touch_spare();
        }
    }

    /// The index the next insert will use.
    #[inline]
    pub(crate) fn next_index(&self) -> usize {
        if self.free == NO_NODE {
            self.nodes.len()
        } else {
            self.free as usize
        }
    }

    /// Stores `entry` and returns its index; its link is for the caller to
    /// set. The caller keeps indices below `SENTINEL_BASE` (see
    /// `Wheel::try_insert`).
    #[inline]
    pub(crate) fn insert(&mut self, entry: Entry<T>) -> u32 {
        self.len += 1;
        if self.free == NO_NODE {
            self.nodes.push(Node {
                link: Link { prev: 0, next: 0 },
                state: NodeState::Occupied(entry),
            });
            return (self.nodes.len() - 1) as u32;
        }
        let index = self.free;
        let state = &mut self.nodes[index as usize].state;
        match *state {
            NodeState::Vacant { next_free } => self.free = next_free,
            NodeState::Occupied(_) => unreachable!("the free list names an occupied node"),
        }
        *state = NodeState::Occupied(entry);
        index
    }

    /// Frees the node and returns its entry, or `None` if it was vacant.
    #[inline]
    pub(crate) fn remove(&mut self, index: u32) -> Option<Entry<T>> {
        let state = &mut self.nodes.get_mut(index as usize)?.state;
        if let NodeState::Vacant { .. } = state {
            return None;
        }
        let old = core::mem::replace(
            state,
            NodeState::Vacant {
                next_free: self.free,
            },
        );
        self.free = index;
        self.len -= 1;
        match old {
            NodeState::Occupied(entry) => Some(entry),
            NodeState::Vacant { .. } => None,
        }
    }

    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&Entry<T>> {
        match self.nodes.get(index as usize).map(|node| &node.state) {
            Some(NodeState::Occupied(entry)) => Some(entry),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, index: u32) -> Option<&mut Entry<T>> {
        match self
            .nodes
            .get_mut(index as usize)
            .map(|node| &mut node.state)
        {
            Some(NodeState::Occupied(entry)) => Some(entry),
            _ => None,
        }
    }

    /// The entry at `index`, which the caller knows is occupied (it is linked
    /// into a list).
    #[inline]
    #[track_caller]
    pub(crate) fn entry(&self, index: u32) -> &Entry<T> {
        match self.get(index) {
            Some(entry) => entry,
            None => unreachable!("a linked entry is vacant"),
        }
    }

    /// The links and the entry of `index`, which the caller knows is
    /// occupied (it is linked into a list), from one lookup: a walk down a
    /// list reads both for every timer.
    #[inline]
    #[track_caller]
    pub(crate) fn linked(&self, index: u32) -> (Link, &Entry<T>) {
        match &self.nodes[index as usize] {
            Node {
                link,
                state: NodeState::Occupied(entry),
            } => (*link, entry),
            _ => unreachable!("a linked entry is vacant"),
        }
    }

    /// The links of entry `index` (meaningless if it is vacant).
    #[inline]
    #[track_caller]
    pub(crate) fn link(&self, index: u32) -> Link {
        self.nodes[index as usize].link
    }

    #[inline]
    #[track_caller]
    pub(crate) fn link_mut(&mut self, index: u32) -> &mut Link {
        &mut self.nodes[index as usize].link
    }

    /// Points the hint of entry `index` at `ahead` and returns the entry's
    /// next link; `None` (and nothing changed) if the node is vacant or out
    /// of range. One lookup for both, as list appends do it every time.
    #[inline]
    pub(crate) fn leave_hint(&mut self, index: u32, ahead: u32) -> Option<u32> {
        match self.nodes.get_mut(index as usize) {
            Some(Node {
                link,
                state: NodeState::Occupied(entry),
            }) => {
                // A reset timer's `ahead` holds its sequence number.
                if entry.ahead & RESET_SEQ == 0 {
                    entry.ahead = ahead;
                }
                Some(link.next)
            }
            _ => None,
        }
    }

    /// Starts loading the node at `index` (both cache lines, if it spans
    /// two) into the cache, if it exists. Purely a hint: it reads nothing
    /// and changes nothing.
    #[inline]
    pub(crate) fn prefetch(&self, index: u32) {
        if (index as usize) < self.nodes.len() {
            let node = self.nodes.as_ptr().wrapping_add(index as usize);
            prefetch_read(node);
            // The buffer starts on a line, so a node whose size divides the
            // line never spans two.
            if LINE % core::mem::size_of::<Node<T>>() != 0 {
                prefetch_read(
                    node.cast::<u8>()
                        .wrapping_add(core::mem::size_of::<Node<T>>() - 1),
                );
            }
        }
    }

    /// Takes the entry out of an occupied node but keeps the node off the
    /// free list: its links stay valid until [`release`](Self::release).
    /// (A cancelled timer whose unlink is batched: see `Wheel::cancel`.)
    #[inline]
    #[track_caller]
    pub(crate) fn take_reserved(&mut self, index: u32) -> Entry<T> {
        let state = &mut self.nodes[index as usize].state;
        match core::mem::replace(state, NodeState::Vacant { next_free: NO_NODE }) {
            NodeState::Occupied(entry) => {
                self.len -= 1;
                entry
            }
            NodeState::Vacant { .. } => unreachable!("a pending entry is vacant"),
        }
    }

    /// Puts a node emptied by [`take_reserved`](Self::take_reserved) on the
    /// free list.
    #[inline]
    pub(crate) fn release(&mut self, index: u32) {
        self.nodes[index as usize].state = NodeState::Vacant {
            next_free: self.free,
        };
        self.free = index;
    }

    /// Removes the entry at `index`, which the caller knows is occupied.
    #[inline]
    #[track_caller]
    pub(crate) fn take(&mut self, index: u32) -> Entry<T> {
        match self.remove(index) {
            Some(entry) => entry,
            None => unreachable!("a linked entry is vacant"),
        }
    }

    /// Starts loading the links of entry `index` (the start of its node),
    /// if it exists.
    #[inline]
    pub(crate) fn prefetch_link(&self, index: u32) {
        if (index as usize) < self.nodes.len() {
            prefetch_read(self.nodes.as_ptr().wrapping_add(index as usize));
        }
    }

    /// Every occupied node's entry, with its index.
    pub(crate) fn iter(&self) -> Entries<'_, T> {
        fn occupied<T>((index, node): (usize, &Node<T>)) -> Option<(u32, &Entry<T>)> {
            match &node.state {
                NodeState::Occupied(entry) => Some((index as u32, entry)),
                NodeState::Vacant { .. } => None,
            }
        }
        self.nodes.iter().enumerate().filter_map(occupied)
    }

    /// Empties the arena, keeping its memory. The bookkeeping is reset before
    /// any value is dropped, so a panicking `Drop` cannot leave it
    /// inconsistent; the returned iterator owns the entries, and dropping it
    /// drops the ones not yet taken (even if one of those drops panics).
    pub(crate) fn drain(&mut self) -> DrainEntries<'_, T> {
        fn occupied<T>(node: Node<T>) -> Option<Entry<T>> {
            match node.state {
                NodeState::Occupied(entry) => Some(entry),
                NodeState::Vacant { .. } => None,
            }
        }
        self.free = NO_NODE;
        self.len = 0;
        self.nodes.drain().filter_map(occupied)
    }

    /// Gives back the memory of vacant nodes at the end. Nodes in the middle
    /// stay: moving an entry would invalidate its key.
    pub(crate) fn shrink_to_fit(&mut self) {
        while let Some(NodeState::Vacant { .. }) = self.nodes.last().map(|node| &node.state) {
            self.nodes.pop();
        }
        // Rebuild the free list without the nodes just removed, lowest index
        // first to be reused last (the order does not matter for keys).
        self.free = NO_NODE;
        for (index, node) in self.nodes.iter_mut().enumerate() {
            if let NodeState::Vacant { next_free } = &mut node.state {
                *next_free = self.free;
                self.free = index as u32;
            }
        }
        self.nodes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wheel::entry::NO_HINT;
    use alloc::vec::Vec;
    use core::num::NonZeroU32;

    fn entry(value: u64) -> Entry<u64> {
        Entry {
            deadline: value,
            stamp: NonZeroU32::MIN,
            ahead: 0,
            value,
        }
    }

    #[test]
    fn indices_are_stable_and_reused_last_freed_first() {
        let mut arena = Arena::with_capacity(0);
        let a = arena.insert(entry(1));
        let b = arena.insert(entry(2));
        let c = arena.insert(entry(3));
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(arena.remove(b).map(|e| e.value), Some(2));
        assert_eq!(arena.remove(b).map(|e| e.value), None);
        assert_eq!(arena.remove(a).map(|e| e.value), Some(1));
        assert_eq!(arena.len(), 1);
        assert_eq!(arena.next_index(), a as usize);
        assert_eq!(arena.insert(entry(4)), a);
        assert_eq!(arena.insert(entry(5)), b);
        assert_eq!(arena.insert(entry(6)), 3);
        assert_eq!(arena.get(c).map(|e| e.value), Some(3));
        assert!(arena.get(99).is_none());
        let mut all: Vec<_> = arena.iter().map(|(i, e)| (i, e.value)).collect();
        all.sort();
        assert_eq!(all, [(0, 4), (1, 5), (2, 3), (3, 6)]);
    }

    #[test]
    fn reserved_nodes_are_filled_in_place() {
        // The spare room written by `with_capacity` and `reserve` is the
        // room inserts use: no reallocation, the same memory.
        let mut arena = Arena::with_capacity(64);
        let (capacity, start) = (arena.capacity(), arena.nodes.as_ptr());
        assert!(capacity >= 64);
        for v in 0..64 {
            arena.insert(entry(v));
        }
        assert_eq!((arena.capacity(), arena.nodes.as_ptr()), (capacity, start));
        arena.reserve(100);
        let (capacity, start) = (arena.capacity(), arena.nodes.as_ptr());
        for v in 0..100 {
            arena.insert(entry(v));
        }
        assert_eq!((arena.capacity(), arena.nodes.as_ptr()), (capacity, start));
        assert_eq!(arena.len(), 164);
        assert_eq!(arena.iter().count(), 164);
    }

    #[test]
    fn shrink_keeps_keys_and_the_free_list_whole() {
        let mut arena = Arena::with_capacity(16);
        let ids: Vec<u32> = (0..8).map(|v| arena.insert(entry(v))).collect();
        for &id in &ids[2..] {
            arena.remove(id);
        }
        arena.remove(ids[0]);
        arena.shrink_to_fit();
        assert_eq!(arena.get(ids[1]).map(|e| e.value), Some(1));
        // Node 0 is reused, then the vector grows again.
        assert_eq!(arena.insert(entry(10)), 0);
        assert_eq!(arena.insert(entry(11)), 2);
        assert_eq!(arena.len(), 3);
    }

    #[test]
    fn drain_resets_before_dropping() {
        let mut arena = Arena::with_capacity(0);
        for v in 0..5 {
            arena.insert(entry(v));
        }
        arena.remove(2);
        let mut values: Vec<u64> = arena.drain().map(|e| e.value).collect();
        values.sort();
        assert_eq!(values, [0, 1, 3, 4]);
        assert_eq!((arena.len(), arena.next_index()), (0, 0));
        // Out-of-range and vacant prefetches are harmless no-ops.
        arena.prefetch(0);
        arena.prefetch(u32::MAX);
        arena.prefetch(NO_HINT);
    }
}
