//! Index-linked, circular, doubly linked lists: every slot, the overflow list
//! and the due lists share one node space.
//!
//! # Node space
//!
//! | link value                      | refers to                          |
//! |---------------------------------|------------------------------------|
//! | `0 .. SENTINEL_BASE`            | the timer entry at that arena index |
//! | `SENTINEL_BASE + list`          | the sentinel (head) of list `list` |
//!
//! Each list is a ring through its sentinel: the sentinel's `next` is the
//! first entry and its `prev` the last; an empty list's sentinel points at
//! itself. Because every ring has a sentinel, unlinking an entry never needs
//! to know which list holds it, and a list became empty exactly when the
//! unlinked entry's two neighbours are the same node (its sentinel).
//!
//! # Lookahead hints
//!
//! Walking a list is a chain of dependent loads; with 10⁶ timers most of
//! them miss the cache. So each list keeps a *trail*: an entry about
//! [`LOOKAHEAD`] places behind its tail. Appending entry `e` records `e` in
//! the trail's `ahead` field and moves the trail one step on. A walk then
//! prefetches `ahead` of the entry it is at, and the entries it reaches
//! [`LOOKAHEAD`] steps later are already in the cache. Hints are never
//! trusted: a cancel can leave one naming an entry in another list, a vacant
//! node, or nothing, which only wastes a prefetch. A list's trail starts
//! over whenever the list is refilled from empty.

use super::arena::Arena;
use super::node::Link;
use crate::Tick;

/// First link value that names a sentinel; entries live below it.
pub(crate) const SENTINEL_BASE: u32 = 0xFFFF_FC00;

/// Index of a list (its sentinel), not of a node.
pub(crate) type ListId = u32;

/// How far ahead walks prefetch. A step of a walk (a cascade re-filing one
/// timer, or a pop) takes a few dozen cycles, so 16 steps cover a miss to
/// memory; measured best among 4, 8, 16, 32 and 48 on W1.
pub(crate) const LOOKAHEAD: u32 = 16;

/// A list's trail: the entry whose `ahead` hint an append fills in once
/// `LOOKAHEAD - 1` entries follow it, and how many do.
#[derive(Debug, Clone, Copy)]
struct Trail {
    node: u32,
    behind: u32,
}

impl Trail {
    const NONE: Trail = Trail {
        node: u32::MAX,
        behind: 0,
    };
}

/// A list's sentinel and trail.
#[derive(Debug, Clone, Copy)]
struct Head {
    sentinel: Link,
    trail: Trail,
}

impl Head {
    fn empty(list: ListId) -> Head {
        Head {
            sentinel: Link {
                prev: sentinel(list),
                next: sentinel(list),
            },
            trail: Trail::NONE,
        }
    }
}

/// A run of entries detached from a list, first to last.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chain {
    pub(crate) first: u32,
    pub(crate) last: u32,
}

/// The timer entries and the list sentinels.
#[derive(Debug)]
pub(crate) struct Nodes<T> {
    pub(crate) entries: Arena<T>,
    /// Per list: its sentinel and its trail, in one record because an
    /// append updates both.
    heads: alloc::boxed::Box<[Head]>,
}

#[inline]
const fn sentinel(list: ListId) -> u32 {
    SENTINEL_BASE + list
}

impl<T> Nodes<T> {
    pub(crate) fn new(lists: u32, capacity: usize) -> Self {
        Nodes {
            entries: Arena::with_capacity(capacity),
            heads: (0..lists).map(Head::empty).collect(),
        }
    }

    #[inline]
    fn link(&self, node: u32) -> Link {
        match node.checked_sub(SENTINEL_BASE) {
            Some(list) => self.heads[list as usize].sentinel,
            None => self.entries.link(node),
        }
    }

    #[inline]
    fn link_mut(&mut self, node: u32) -> &mut Link {
        match node.checked_sub(SENTINEL_BASE) {
            Some(list) => &mut self.heads[list as usize].sentinel,
            None => self.entries.link_mut(node),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self, list: ListId) -> bool {
        self.heads[list as usize].sentinel.next == sentinel(list)
    }

    #[inline]
    pub(crate) fn first(&self, list: ListId) -> Option<u32> {
        let first = self.heads[list as usize].sentinel.next;
        (first < SENTINEL_BASE).then_some(first)
    }

    /// The entry after `node` in its list, if it is not the last.
    #[inline]
    pub(crate) fn after(&self, node: u32) -> Option<u32> {
        let next = self.next_of(node);
        (next < SENTINEL_BASE).then_some(next)
    }

    /// `true` if `list` holds an occupied node, not only nodes cancelled
    /// and awaiting their batched unlink (`Wheel::cancel`).
    pub(crate) fn holds_live(&self, list: ListId) -> bool {
        let mut next = self.first(list);
        while let Some(node) = next {
            if self.entries.get(node).is_some() {
                return true;
            }
            next = self.after(node);
        }
        false
    }

    /// Links entry `node` (not in any list) at the back of `list`.
    #[inline]
    pub(crate) fn push_back(&mut self, list: ListId, node: u32) {
        let sentinel = sentinel(list);
        let head = &mut self.heads[list as usize];
        let last = head.sentinel.prev;
        head.sentinel.prev = node;
        let trail = head.trail;
        *self.entries.link_mut(node) = Link {
            prev: last,
            next: sentinel,
        };
        if last == sentinel {
            self.heads[list as usize].sentinel.next = node;
            self.heads[list as usize].trail = Trail { node, behind: 0 };
        } else {
            self.entries.link_mut(last).next = node;
            self.heads[list as usize].trail = self.leave_hint(trail, node);
        }
    }

    /// Records `node` as the entry `LOOKAHEAD` places after the trail of a
    /// non-empty list, and returns the trail's next position.
    #[inline]
    fn leave_hint(&mut self, trail: Trail, node: u32) -> Trail {
        if trail.behind + 1 < LOOKAHEAD {
            return Trail {
                node: trail.node,
                behind: trail.behind + 1,
            };
        }
        // The trail may be stale after cancels; then hints just degrade
        // until the list next empties.
        match self.entries.leave_hint(trail.node, node) {
            Some(next) if next < SENTINEL_BASE => Trail {
                node: next,
                behind: LOOKAHEAD - 1,
            },
            Some(_) => Trail {
                node,
                behind: LOOKAHEAD - 1,
            },
            None => Trail { node, behind: 0 },
        }
    }

    /// Prefetches the links of entry `node`'s two neighbours (entries only:
    /// sentinels are few and hot).
    #[inline]
    pub(crate) fn prefetch_neighbours(&self, node: u32) {
        let Link { prev, next } = self.entries.link(node);
        if prev < SENTINEL_BASE {
            self.entries.prefetch_link(prev);
        }
        if next < SENTINEL_BASE {
            self.entries.prefetch_link(next);
        }
    }

    /// One step of a walk down a list: the node after entry `node` (an
    /// entry or the list's sentinel) and `node`'s deadline, from one
    /// lookup; starts loading the entry `node`'s hint names.
    #[inline]
    pub(crate) fn walk_step(&self, node: u32) -> (u32, Tick) {
        let (link, entry) = self.entries.linked(node);
        self.entries.prefetch(entry.ahead);
        (link.next, entry.deadline)
    }

    /// Prefetches the entry `node`'s hint names (see the module docs).
    #[inline]
    pub(crate) fn prefetch_ahead_of(&self, node: u32) {
        self.entries.prefetch(self.entries.entry(node).ahead);
    }

    /// Unlinks entry `node` from whichever list holds it. Returns that list
    /// if it is now empty.
    #[inline]
    pub(crate) fn unlink(&mut self, node: u32) -> Option<ListId> {
        let Link { prev, next } = self.entries.link(node);
        self.link_mut(prev).next = next;
        self.link_mut(next).prev = prev;
        (prev == next).then(|| prev - SENTINEL_BASE)
    }

    /// Unlinks and returns the first entry of `list`.
    #[cfg(test)]
    pub(crate) fn pop_front(&mut self, list: ListId) -> Option<u32> {
        let first = self.first(list)?;
        self.unlink(first);
        Some(first)
    }

    /// Detaches every entry of `list`, leaving it empty. The chain's entries
    /// keep stale links at its two ends; relinking each one overwrites them.
    #[inline]
    pub(crate) fn take(&mut self, list: ListId) -> Option<Chain> {
        let head = &mut self.heads[list as usize].sentinel;
        let chain = Chain {
            first: head.next,
            last: head.prev,
        };
        if chain.first == sentinel(list) {
            return None;
        }
        *head = Link {
            prev: sentinel(list),
            next: sentinel(list),
        };
        Some(chain)
    }

    /// Moves every entry of `from` to the back of `to`, in order, in O(1).
    #[inline]
    pub(crate) fn append(&mut self, to: ListId, from: ListId) {
        let Some(Chain { first, last }) = self.take(from) else {
            return;
        };
        let tail = self.heads[to as usize].sentinel.prev;
        self.link_mut(tail).next = first;
        self.entries.link_mut(first).prev = tail;
        self.entries.link_mut(last).next = sentinel(to);
        self.heads[to as usize].sentinel.prev = last;
    }

    /// The entry after `node` in its list, if any.
    #[inline]
    pub(crate) fn next_of(&self, node: u32) -> u32 {
        self.link(node).next
    }

    /// Empties every list without touching the entries.
    pub(crate) fn reset_lists(&mut self) {
        for (list, head) in self.heads.iter_mut().enumerate() {
            *head = Head::empty(list as ListId);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wheel::entry::Entry;
    use alloc::vec::Vec;

    fn nodes(lists: u32) -> Nodes<u32> {
        Nodes::new(lists, 0)
    }

    fn add(nodes: &mut Nodes<u32>, value: u32) -> u32 {
        nodes.entries.insert(Entry {
            deadline: 0,
            stamp: core::num::NonZeroU32::MIN,
            ahead: crate::wheel::entry::NO_HINT,
            value,
        })
    }

    fn values(nodes: &Nodes<u32>, list: ListId) -> Vec<u32> {
        let mut out = Vec::new();
        let mut node = nodes.heads[list as usize].sentinel.next;
        while node < SENTINEL_BASE {
            out.push(nodes.entries.entry(node).value);
            node = nodes.next_of(node);
        }
        // Walk backwards too: the ring must be consistent both ways.
        let mut back = Vec::new();
        let mut node = nodes.heads[list as usize].sentinel.prev;
        while node < SENTINEL_BASE {
            back.push(nodes.entries.entry(node).value);
            node = nodes.link(node).prev;
        }
        back.reverse();
        assert_eq!(out, back);
        out
    }

    #[test]
    fn push_unlink_pop_keep_order_and_report_emptying() {
        let mut n = nodes(2);
        let ids: Vec<u32> = (0..5).map(|v| add(&mut n, v)).collect();
        for &id in &ids {
            n.push_back(0, id);
        }
        assert_eq!(values(&n, 0), [0, 1, 2, 3, 4]);
        assert_eq!(n.unlink(ids[2]), None);
        assert_eq!(n.unlink(ids[0]), None);
        assert_eq!(n.unlink(ids[4]), None);
        assert_eq!(values(&n, 0), [1, 3]);
        assert_eq!(n.pop_front(0), Some(ids[1]));
        assert_eq!(n.unlink(ids[3]), Some(0));
        assert!(n.is_empty(0));
        assert_eq!(n.pop_front(0), None);
    }

    #[test]
    fn append_moves_a_whole_list_in_order() {
        let mut n = nodes(3);
        for v in 0..3 {
            let id = add(&mut n, v);
            n.push_back(0, id);
        }
        for v in 10..12 {
            let id = add(&mut n, v);
            n.push_back(1, id);
        }
        n.append(0, 1);
        n.append(0, 2); // empty: no-op
        assert_eq!(values(&n, 0), [0, 1, 2, 10, 11]);
        assert!(n.is_empty(1));
        n.append(2, 0);
        assert_eq!(values(&n, 2), [0, 1, 2, 10, 11]);
        assert!(n.is_empty(0));
    }

    #[test]
    fn appends_leave_hints_lookahead_places_back() {
        let mut n = nodes(1);
        let ids: Vec<u32> = (0..3 * LOOKAHEAD).map(|v| add(&mut n, v)).collect();
        for &id in &ids {
            n.push_back(0, id);
        }
        for (i, &id) in ids.iter().enumerate() {
            let ahead = n.entries.entry(id).ahead;
            match ids.get(i + LOOKAHEAD as usize) {
                Some(&want) => assert_eq!(ahead, want, "entry {i}"),
                None => assert_eq!(ahead, crate::wheel::entry::NO_HINT, "entry {i}"),
            }
        }
        // A stale trail (its entry gone) only restarts the hints.
        for &id in &ids {
            n.unlink(id);
            n.entries.remove(id);
        }
        let more: Vec<u32> = (0..4).map(|v| add(&mut n, v)).collect();
        n.push_back(0, more[0]);
        for &id in &more[1..] {
            n.push_back(0, id);
        }
        assert_eq!(values(&n, 0), [0, 1, 2, 3]);
    }

    #[test]
    fn take_detaches_a_chain() {
        let mut n = nodes(1);
        let ids: Vec<u32> = (0..3).map(|v| add(&mut n, v)).collect();
        for &id in &ids {
            n.push_back(0, id);
        }
        let chain = n.take(0).unwrap();
        assert!(n.is_empty(0));
        assert_eq!((chain.first, chain.last), (ids[0], ids[2]));
        assert_eq!(n.next_of(ids[0]), ids[1]);
        assert!(n.take(0).is_none());
    }
}
