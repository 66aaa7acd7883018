//! Heap bytes per pending timer, at 10^6 timers, for `Wheel<u64>` and its
//! peers, and for the std layer's `Timer` (its last row).
//!
//! A counting `#[global_allocator]` records the bytes live on the heap. For
//! each structure: note the count, insert 10^6 `u64` timers one by one into
//! an empty structure (delays uniform in `1..=65,536` ticks from tick 0, the
//! W1 inputs of `compare.rs`), note the count again, and divide. Keys are
//! dropped, not stored, so only the structure itself is counted. The numbers
//! include the slack of amortised growth (a `Vec` that doubled to 2^20
//! holds 1,048,576 entries); the "shrunk" row shows the wheel after
//! `shrink_to_fit`.
//!
//! Run with `cargo bench --bench memory` (without `--bench`, as under
//! `cargo test --benches`, it measures 10^4 timers as a smoke test).

extern crate alloc;

#[allow(
    dead_code,
    reason = "the peers carry what compare.rs needs; this binary only inserts"
)]
mod peers;

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::alloc::System;

use tickwheel::Wheel;
use tokio_util::time::DelayQueue;

use peers::binary_heap::HeapTimers;
use peers::btree_map::BTreeTimers;
use peers::hhwt::HhwtPeer;
use peers::lean_heap::LeanHeap;
use peers::tokio_delay_queue::{paused_runtime, DelayQueuePeer};
use peers::Peer;

/// The system allocator, counting the bytes it has handed out and not yet
/// taken back, and the peak of that count.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    fn grew(by: usize) {
        let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    fn shrank(by: usize) {
        LIVE.fetch_sub(by, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the same arguments, so it
// upholds `GlobalAlloc`'s contract exactly as `System` does; the counters
// are plain atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size),
        // which is `System::alloc`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            Counting::grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            Counting::grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (that is,
        // `System`) handed out, with the layout it was allocated with.
        unsafe { System.dealloc(ptr, layout) };
        Counting::shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract: `ptr` came from
        // `System` with `layout`, and `new_size` is valid for its alignment.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            Counting::shrank(layout.size());
            Counting::grew(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One row of the table.
struct Row {
    name: &'static str,
    /// Heap bytes held by the filled structure.
    live: usize,
    /// The most heap bytes held at once while filling it.
    peak: usize,
}

/// Counts the heap bytes held by what `build` returns (and the peak while
/// building it), then drops it.
fn count<T>(name: &'static str, build: impl FnOnce() -> T) -> Row {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let built = build();
    let live = LIVE.load(Ordering::Relaxed) - before;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    drop(built);
    Row { name, live, peak }
}

/// A fresh structure from `make` with one timer per delay (value = index),
/// then `finish`ed (e.g. `shrink_to_fit`). Keys are dropped.
fn fill<P: Peer>(delays: &[u64], make: impl FnOnce() -> P, finish: impl FnOnce(&mut P)) -> P {
    let mut peer = make();
    for (value, &delay) in delays.iter().enumerate() {
        peer.insert(delay, value as u64);
    }
    finish(&mut peer);
    peer
}

/// [`fill`], then every timer reset `rounds` times to a later deadline
/// (time does not move): what idle timeouts do. Heaps with lazy deletion
/// keep a stale entry per reset until they compact; the wheel moves
/// nothing.
fn fill_then_reset<P: Peer>(delays: &[u64], make: impl FnOnce() -> P, rounds: u64) -> P {
    let mut peer = make();
    let keys: Vec<P::Key> = delays
        .iter()
        .enumerate()
        .map(|(value, &delay)| peer.insert(delay, value as u64))
        .collect();
    for round in 1..=rounds {
        for (&key, &delay) in keys.iter().zip(delays) {
            assert!(peer.reset(key, delay + round * peers::MAX_DELAY));
        }
    }
    drop(keys);
    peer
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let n: usize = if full { 1_000_000 } else { 10_000 };
    let delays = peers::delays(0x5EED_0001, n);

    let mut rows = vec![
        count("tickwheel `Wheel::new()`", || {
            fill(&delays, Wheel::<u64>::new, |_| {})
        }),
        count("tickwheel, then `shrink_to_fit()`", || {
            fill(&delays, Wheel::<u64>::new, Wheel::shrink_to_fit)
        }),
        count("tickwheel `Wheel::with_capacity(n)`", || {
            fill(&delays, || Wheel::<u64>::with_capacity(n), |_| {})
        }),
        count("binary_heap", || {
            fill(&delays, HeapTimers::<u64>::new, |_| {})
        }),
        count("lean_heap", || fill(&delays, LeanHeap::new, |_| {})),
        count("lean_heap `with_capacity(n)`", || {
            fill(&delays, || LeanHeap::with_capacity(n), |_| {})
        }),
        count("btree_map", || {
            fill(&delays, BTreeTimers::<u64>::new, |_| {})
        }),
        count(
            "tickwheel `with_capacity(n)`, then every timer reset 3 times",
            || fill_then_reset(&delays, || Wheel::<u64>::with_capacity(n), 3),
        ),
        count(
            "lean_heap `with_capacity(n)`, then every timer reset 3 times",
            || fill_then_reset(&delays, || LeanHeap::with_capacity(n), 3),
        ),
    ];
    {
        // The runtime's own allocations are made before any count starts.
        let runtime = paused_runtime();
        let _context = runtime.enter();
        rows.push(count(
            "tokio_delay_queue (as benchmarked: value + id)",
            || fill(&delays, || DelayQueuePeer::new(&runtime), |_| {}),
        ));
        rows.push(count("tokio_delay_queue (bare `DelayQueue<u64>`)", || {
            let mut queue = DelayQueue::new();
            let origin = tokio::time::Instant::now();
            for (value, &delay) in delays.iter().enumerate() {
                queue.insert_at(value as u64, origin + Duration::from_millis(delay));
            }
            queue
        }));
    }
    rows.push(count("hhwt", || fill(&delays, HhwtPeer::new, |_| {})));
    // The std layer: a delay queue's timers (a `Timer` with its driver
    // thread), all scheduled from this thread, so into one shard, an hour
    // and more ahead so that none fires while counted.
    rows.push(count("tickwheel `Timer` (`delay_queue::<u64>()`)", || {
        let (timer, ready) = tickwheel::timer::delay_queue::<u64>().expect("build a timer");
        for (value, &delay) in delays.iter().enumerate() {
            let after = Duration::from_secs(3_600) + Duration::from_millis(delay);
            timer.schedule(after, value as u64).expect("schedule");
        }
        (timer, ready)
    }));

    let payload = core::mem::size_of::<u64>();
    println!("heap bytes per pending timer, {n} timers of `u64` (size_of::<u64>() = {payload})");
    println!();
    println!("| structure | bytes/timer | beyond the {payload}-byte payload | peak bytes/timer while filling¹ |");
    println!("|---|---:|---:|---:|");
    for row in &rows {
        let per = row.live as f64 / n as f64;
        println!(
            "| {} | {per:.1} | {:.1} | {:.1} |",
            row.name,
            per - payload as f64,
            row.peak as f64 / n as f64
        );
    }
    println!();
    println!(
        "¹ a `realloc` is counted as if in place, so the peak omits a moved block's old copy."
    );
    println!(
        "key sizes: tickwheel {} B, binary_heap {} B, lean_heap {} B, btree_map {} B, tokio_delay_queue {} B (slab index + id), hhwt {} B (id + value)",
        core::mem::size_of::<tickwheel::TimerKey>(),
        core::mem::size_of::<<HeapTimers<u64> as Peer>::Key>(),
        core::mem::size_of::<<LeanHeap as Peer>::Key>(),
        core::mem::size_of::<<BTreeTimers<u64> as Peer>::Key>(),
        core::mem::size_of::<<DelayQueuePeer<'static> as Peer>::Key>(),
        core::mem::size_of::<<HhwtPeer as Peer>::Key>(),
    );
}
