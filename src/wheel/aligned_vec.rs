//! [`AlignedVec`]: the arena's vector of nodes, a `Vec` whose buffer
//! starts on a cache line.
//!
//! A `Vec<Node<T>>` is aligned to 8 bytes, and the allocator puts a large
//! one 16 bytes past a page boundary. A 32-byte node (a `u64` payload) then
//! sits at 16 or 48 bytes into a 64-byte line: every other node spans two
//! lines, so walking a list or unlinking a random timer fetches one and a
//! half lines per node instead of one. Starting the buffer on a line keeps
//! every 32-byte node in one line, with no padding: the element stride is
//! the node's own size, so memory per timer is unchanged for every `T`.
//! Expiring timers took 13 to 16 % less time
//! (`docs/benchmarks.md`, run J).
//!
//! Only what the arena uses is here. The `unsafe` is the usual `Vec`
//! bookkeeping: `len` elements are initialised, `cap` are allocated with
//! one layout (`Buffer::layout`), and nothing else is ever read or freed.

use alloc::alloc::{alloc, dealloc, handle_alloc_error, realloc};
use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::{self, MaybeUninit};
use core::ptr::{self, NonNull};
use core::slice;

/// A cache line on the machines this is tuned for (x86_64, most ARM).
pub(super) const LINE: usize = 64;

/// An owned allocation of `cap` elements' room, aligned to a line; freed
/// on drop, even when dropping an element panicked first.
struct Buffer<E> {
    /// Dangling (and never read) while `cap` is 0.
    ptr: NonNull<E>,
    cap: usize,
}

impl<E> Buffer<E> {
    const ALIGN: usize = if mem::align_of::<E>() > LINE {
        mem::align_of::<E>()
    } else {
        LINE
    };

    /// The layout of `cap` elements' room, or the same panic as `Vec`'s.
    fn layout(cap: usize) -> Layout {
        mem::size_of::<E>()
            .checked_mul(cap)
            .and_then(|size| Layout::from_size_align(size, Self::ALIGN).ok())
            .expect("capacity overflow")
    }

    const fn empty() -> Self {
        const { assert!(mem::size_of::<E>() > 0, "no zero-sized elements") };
        Buffer {
            ptr: NonNull::dangling(),
            cap: 0,
        }
    }

    /// Moves to room for exactly `cap` elements (none: freed), keeping the
    /// first `min(cap, old cap)` elements' bytes.
    fn resize(&mut self, cap: usize) {
        if cap == self.cap {
            return;
        }
        if cap == 0 {
            // SAFETY: `cap` > 0, so `ptr` came from `alloc`/`realloc` with
            // this layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), Self::layout(self.cap)) };
            // Fields, not `*self = …`: that would drop the old value, which
            // frees again.
            (self.ptr, self.cap) = (NonNull::dangling(), 0);
            return;
        }
        let layout = Self::layout(cap);
        let raw = if self.cap == 0 {
            // SAFETY: `layout` has a non-zero size: `cap` > 0 and elements
            // are not zero-sized.
            unsafe { alloc(layout) }
        } else {
            // SAFETY: `ptr` came from `alloc`/`realloc` with the layout of
            // `self.cap`, and the new size is non-zero and fits `isize`
            // once aligned (`layout` checked it). `realloc` keeps the
            // alignment of the old layout, the same `ALIGN`.
            unsafe {
                realloc(
                    self.ptr.as_ptr().cast(),
                    Self::layout(self.cap),
                    layout.size(),
                )
            }
        };
        match NonNull::new(raw.cast::<E>()) {
            Some(ptr) => (self.ptr, self.cap) = (ptr, cap),
            None => handle_alloc_error(layout),
        }
    }
}

impl<E> Drop for Buffer<E> {
    fn drop(&mut self) {
        self.resize(0);
    }
}

/// A vector of `E` whose buffer is aligned to a cache line (see the module
/// docs). Grows as `Vec` does.
pub(crate) struct AlignedVec<E> {
    buf: Buffer<E>,
    /// Elements `0..len` are initialised.
    len: usize,
    _owns: PhantomData<E>,
}

// SAFETY: an `AlignedVec<E>` owns its elements as a `Vec<E>` does; the raw
// pointer is never shared outside the borrows of `self` handed out below.
unsafe impl<E: Send> Send for AlignedVec<E> {}
// SAFETY: as for `Send`: `&AlignedVec<E>` gives only `&E`s.
unsafe impl<E: Sync> Sync for AlignedVec<E> {}

impl<E> AlignedVec<E> {
    pub(crate) fn with_capacity(cap: usize) -> Self {
        let mut buf = Buffer::empty();
        buf.resize(cap);
        AlignedVec {
            buf,
            len: 0,
            _owns: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.cap
    }

    /// The room after the last element, uninitialised as far as the type
    /// knows.
    pub(crate) fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<E>] {
        // SAFETY: `len <= cap`, so `len..cap` lies inside the allocation
        // (an empty range at the dangling pointer when `cap` is 0), and
        // `MaybeUninit` makes no claim on its contents.
        unsafe {
            slice::from_raw_parts_mut(
                self.buf.ptr.as_ptr().add(self.len).cast::<MaybeUninit<E>>(),
                self.buf.cap - self.len,
            )
        }
    }

    /// Room for at least `additional` more elements: at least double the
    /// capacity when it grows, as `Vec` does, so pushes are O(1) amortized.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let need = self.len.checked_add(additional).expect("capacity overflow");
        if need > self.buf.cap {
            self.buf
                .resize(need.max(self.buf.cap.saturating_mul(2)).max(4));
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, element: E) {
        if self.len == self.buf.cap {
            self.reserve(1);
        }
        // SAFETY: `len < cap` now, so the slot is inside the allocation and
        // holds no element.
        unsafe { self.buf.ptr.as_ptr().add(self.len).write(element) };
        self.len += 1;
    }

    pub(crate) fn pop(&mut self) -> Option<E> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: element `len` was initialised, and is no longer counted,
        // so it is read exactly once.
        Some(unsafe { self.buf.ptr.as_ptr().add(self.len).read() })
    }

    /// Frees the room beyond the last element.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.buf.resize(self.len);
    }

    /// Takes every element out, first to last, keeping the allocation. The
    /// vector is empty at once: what the iterator does not yield it drops
    /// when dropped (or leaks, if it is leaked).
    pub(crate) fn drain(&mut self) -> Drain<'_, E> {
        let end = self.len;
        self.len = 0;
        Drain {
            ptr: self.buf.ptr,
            next: 0,
            end,
            _vec: PhantomData,
        }
    }
}

impl<E> core::ops::Deref for AlignedVec<E> {
    type Target = [E];

    #[inline]
    fn deref(&self) -> &[E] {
        // SAFETY: `ptr` is aligned and non-null (dangling only when `len`
        // is 0), and elements `0..len` are initialised and owned by `self`.
        unsafe { slice::from_raw_parts(self.buf.ptr.as_ptr(), self.len) }
    }
}

impl<E> core::ops::DerefMut for AlignedVec<E> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [E] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { slice::from_raw_parts_mut(self.buf.ptr.as_ptr(), self.len) }
    }
}

impl<E> Drop for AlignedVec<E> {
    fn drop(&mut self) {
        // SAFETY: the initialised elements, dropped once; `buf` frees the
        // room afterwards, even if one of these drops panics.
        unsafe { ptr::drop_in_place(&mut **self) }
    }
}

impl<E: core::fmt::Debug> core::fmt::Debug for AlignedVec<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// What [`AlignedVec::drain`] returns.
pub(crate) struct Drain<'a, E> {
    ptr: NonNull<E>,
    /// Elements `next..end` are initialised and not yet yielded.
    next: usize,
    end: usize,
    _vec: PhantomData<&'a mut AlignedVec<E>>,
}

// SAFETY: a `Drain` owns the elements it has not yet yielded, as
// `vec::Drain` does, and touches nothing else of the vector.
unsafe impl<E: Send> Send for Drain<'_, E> {}
// SAFETY: as for `Send`: `&Drain` gives access to no element.
unsafe impl<E: Sync> Sync for Drain<'_, E> {}

impl<E> Iterator for Drain<'_, E> {
    type Item = E;

    fn next(&mut self) -> Option<E> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        // SAFETY: element `next - 1` is initialised and, counted as yielded
        // now, is read exactly once; the vector no longer counts it.
        Some(unsafe { self.ptr.as_ptr().add(self.next - 1).read() })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

impl<E> Drop for Drain<'_, E> {
    fn drop(&mut self) {
        let rest = ptr::slice_from_raw_parts_mut(
            self.ptr.as_ptr().wrapping_add(self.next),
            self.end - self.next,
        );
        self.next = self.end;
        // SAFETY: the elements not yet yielded, initialised and owned by
        // nobody else (the vector's `len` is 0); dropped once, the rest
        // still dropped if one of them panics.
        unsafe { ptr::drop_in_place(rest) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::rc::Rc;
    use alloc::vec::Vec;
    use core::cell::Cell;

    #[test]
    fn the_buffer_starts_on_a_line_and_stays_there_as_it_grows_and_shrinks() {
        let mut v: AlignedVec<[u64; 4]> = AlignedVec::with_capacity(3);
        for i in 0..1000u64 {
            v.push([i; 4]);
            assert_eq!(v.as_ptr() as usize % LINE, 0);
        }
        assert!(v.capacity() >= 1000);
        assert_eq!(v[999], [999; 4]);
        v.pop();
        v.shrink_to_fit();
        assert_eq!((v.len(), v.capacity()), (999, 999));
        assert_eq!(v.as_ptr() as usize % LINE, 0);
        assert_eq!(v.iter().map(|e| e[0]).sum::<u64>(), 998 * 999 / 2);
    }

    #[test]
    fn spare_room_is_after_the_elements() {
        let mut v: AlignedVec<u32> = AlignedVec::with_capacity(8);
        v.push(1);
        assert_eq!(v.spare_capacity_mut().len(), 7);
        for slot in v.spare_capacity_mut() {
            slot.write(7);
        }
        assert_eq!(&v[..], &[1]);
        let mut empty: AlignedVec<u32> = AlignedVec::with_capacity(0);
        assert!(empty.spare_capacity_mut().is_empty());
        empty.shrink_to_fit();
        assert_eq!(empty.pop(), None);
    }

    /// Counts its drops.
    struct Counted(Rc<Cell<u32>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn every_element_is_dropped_once_whatever_path_it_leaves_by() {
        let drops = Rc::new(Cell::new(0));
        let make = |n| {
            let mut v = AlignedVec::with_capacity(0);
            for _ in 0..n {
                v.push(Counted(Rc::clone(&drops)));
            }
            v
        };
        drop(make(10));
        assert_eq!(drops.get(), 10);

        let mut v = make(10);
        let taken: Vec<Counted> = v.drain().take(4).collect();
        assert_eq!((drops.get(), v.len()), (16, 0));
        drop(taken);
        assert_eq!(drops.get(), 20);

        v.push(Counted(Rc::clone(&drops)));
        drop(v.pop());
        assert_eq!(drops.get(), 21);
        drop(v);
        assert_eq!(drops.get(), 21);
    }
}
