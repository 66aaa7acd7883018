//! An adversarial pass over `Wheel`'s public API: what a wheel still
//! holds after a burst, measured by a counting allocator.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;
use std::alloc::System;

use tickwheel::Wheel;

std::thread_local! {
    /// Heap bytes allocated minus freed by this thread: each test measures
    /// what it holds, whatever the other tests' threads do.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// `System`, counting each thread's live bytes in [`LIVE`].
struct Counting;

fn count(bytes: usize, grew: bool) {
    let bytes = bytes as isize;
    // `try_with`: a thread being torn down frees after its locals are gone.
    let _ = LIVE.try_with(|live| live.set(live.get() + if grew { bytes } else { -bytes }));
}

// SAFETY: every call is passed on to `System` unchanged, with the caller's
// layout; counting reads and writes a thread-local `Cell` and allocates
// nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size(), true);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from `System`, with
        // `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(layout.size(), false);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller upholds `realloc`'s
        // contract on `new_size`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(layout.size(), false);
            count(new_size, true);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

/// After a burst of timers due at one tick, an emptied wheel gives back
/// all it held on `shrink_to_fit`, as a fresh wheel holds. Before, once a
/// reset had been lazy, the walk of a slot of n due timers grew a scratch
/// buffer of n indices that no call released: 4 bytes per timer of the
/// largest burst, held for the wheel's life (400 kB here).
#[test]
fn shrink_to_fit_after_a_burst_holds_no_more_than_a_fresh_wheel() {
    let n: u64 = if cfg!(miri) { 500 } else { 100_000 };
    let start = live();
    let mut fresh: Wheel<u64> = Wheel::new();
    fresh.shrink_to_fit();
    let fresh_holds = live() - start;

    let start = live();
    let mut wheel = Wheel::new();
    // Due at 64: one level up, so the slot is walked when it comes due,
    // and a lazy reset (to the same deadline) makes the walk sort its due
    // timers through the scratch buffer.
    let keys: Vec<_> = (0..n).map(|i| wheel.insert(64, i)).collect();
    assert!(wheel.reset(keys[0], 64));
    drop(keys);
    let fired: Vec<u64> = wheel.advance(64).map(|e| e.value).collect();
    assert_eq!(fired.len() as u64, n);
    assert_eq!(fired[n as usize - 1], 0, "the reset timer goes last");
    drop(fired);
    wheel.shrink_to_fit();
    let holds = live() - start;
    assert!(
        holds <= fresh_holds,
        "an empty wheel holds {holds} bytes after shrink_to_fit, a fresh one {fresh_holds}"
    );
    drop((wheel, fresh));
}

/// `next_expiration` is the earliest deadline itself when the earliest
/// timers are in level 0, or alone in a higher slot, as its docs say, even
/// right after the earliest timer was cancelled. Before, a cancelled timer
/// awaiting its batched unlink still marked its slot, and the answer was
/// the cancelled timer's tick (5 below, and 128, the end of the cancelled
/// level-1 timer's slot): a tickless driver woke there for nothing.
#[test]
fn next_expiration_passes_over_cancelled_timers() {
    let mut wheel = Wheel::new();
    let early = wheel.insert(5, "cancelled");
    wheel.insert(10, "level 0");
    assert_eq!(wheel.next_expiration(), Some(5));
    assert_eq!(wheel.cancel(early), Some("cancelled"));
    assert_eq!(wheel.next_expiration(), Some(10));

    let mut wheel = Wheel::new();
    let early = wheel.insert(100, "cancelled"); // level 1
    wheel.insert(5_000, "level 2");
    wheel.cancel(early);
    assert_eq!(wheel.next_expiration(), Some(5_000));
    // A tickless driver's loop reaches it in one wake-up.
    let next = wheel.next_expiration().unwrap();
    let fired: Vec<_> = wheel.advance(next).map(|e| e.value).collect();
    assert_eq!(fired, ["level 2"]);
    assert_eq!(wheel.next_expiration(), None);

    // Many cancels, some of them sharing slots with live timers.
    let mut wheel = Wheel::new();
    let keys: Vec<_> = (0..20u64).map(|i| wheel.insert(3 + i * 7, i)).collect();
    for key in keys.iter().step_by(2) {
        wheel.cancel(*key);
    }
    assert_eq!(wheel.next_expiration(), Some(3 + 7));
}
