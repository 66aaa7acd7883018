//! Create + drop, and reset: N sleeps held in place, polled once with a
//! no-op waker, timed on the calling thread, with the whole process's CPU
//! time beside it.

use alloc::sync::Arc;
use alloc::task::Wake;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Waker};
use core::time::Duration;
use std::time::Instant;

use super::cpu::process_cpu;
use super::peers::Peer;

/// How much later than its first deadline a reset moves a sleep, on top
/// of its delay.
const LATER: Duration = Duration::from_secs(5);

/// N futures that stay where they were pushed until they are dropped: a
/// `Vec` that never grows past the capacity it was made with, so that each
/// can be polled pinned in place, with no `Box` per sleep (tokio's `Sleep`
/// is `!Unpin`; the others are `Unpin` and are held the same way).
pub(crate) struct Slots<F> {
    items: Vec<F>,
}

impl<F: Future> Slots<F> {
    /// Room for `n` futures, its pages already touched: a run's page
    /// faults are its timer's own, not those of the buffer the bench holds
    /// its futures in (tens of ns per sleep at 10^6 otherwise, more for
    /// larger futures).
    pub(crate) fn with_capacity(n: usize) -> Self {
        let mut items = Vec::with_capacity(n);
        items
            .spare_capacity_mut()
            .fill_with(core::mem::MaybeUninit::zeroed);
        Slots { items }
    }

    #[inline]
    pub(crate) fn push(&mut self, future: F) {
        assert!(
            self.items.len() < self.items.capacity(),
            "a push past the capacity would move the futures"
        );
        self.items.push(future);
    }

    /// Calls `f` on each future, pinned, with its index.
    #[inline]
    pub(crate) fn for_each_pinned(&mut self, mut f: impl FnMut(usize, Pin<&mut F>)) {
        for (index, item) in self.items.iter_mut().enumerate() {
            // SAFETY: the items never move: `push` never goes past the
            // capacity (so the buffer is never reallocated), nothing else
            // reaches them mutably, and `clear` or dropping `Slots` drops
            // them where they are.
            f(index, unsafe { Pin::new_unchecked(item) });
        }
    }

    /// The future at `index`, pinned.
    #[inline]
    pub(crate) fn pinned(&mut self, index: usize) -> Pin<&mut F> {
        // SAFETY: as in `for_each_pinned`: the item never moves, and one
        // replaced through `Pin::set` is dropped in place first.
        unsafe { Pin::new_unchecked(&mut self.items[index]) }
    }

    /// Polls each future once; returns how many are pending.
    pub(crate) fn poll_each(&mut self, cx: &mut Context<'_>) -> usize {
        let mut pending = 0;
        self.for_each_pinned(|_, future| pending += usize::from(future.poll(cx).is_pending()));
        pending
    }

    /// Drops every future, in place.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
    }
}

/// A waker that does nothing (`Waker::noop` is newer than the crate's
/// MSRV). Cloning it is one uncontended reference-count increment, the
/// same for every peer.
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

pub(crate) fn noop_waker() -> Waker {
    Waker::from(Arc::new(Noop))
}

/// Waits until the process is quiet: until a 2 ms nap sees less than
/// 200 µs of CPU time spent by all its threads (at most 2 s). So a run does
/// not start while the previous one's deferred work (futures-timer's
/// helper thread, async-io's reactor, tickwheel's driver) still runs, and
/// a run's CPU time includes its own deferred work.
pub(crate) fn settle() {
    let limit = Instant::now() + Duration::from_secs(2);
    let mut before = process_cpu();
    while Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(2));
        let now = process_cpu();
        if now - before < Duration::from_micros(200) {
            return;
        }
        before = now;
    }
}

/// ns per sleep of one run of create + drop.
#[derive(Clone, Copy)]
pub(crate) struct CreateDrop {
    pub(crate) create: f64,
    pub(crate) poll: f64,
    pub(crate) drop: f64,
    /// The three together.
    pub(crate) total: f64,
    /// CPU time of every thread of the process, from the first create to
    /// when it is quiet again after the last drop.
    pub(crate) cpu: f64,
}

fn per(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_nanos() as f64 / n as f64
}

/// Makes one sleep per delay with `Peer::sleep`, polls each once (each
/// pending), then drops them all; each phase timed on this thread.
pub(crate) fn create_drop<P: Peer>(peer: &P, delays: &[Duration]) -> CreateDrop {
    let n = delays.len();
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut slots = Slots::with_capacity(n);
    settle();
    peer.enter(|| {
        let cpu = process_cpu();
        let start = Instant::now();
        for &delay in delays {
            slots.push(peer.sleep(delay));
        }
        let created = Instant::now();
        let pending = slots.poll_each(&mut cx);
        let polled = Instant::now();
        slots.clear();
        let dropped = Instant::now();
        settle();
        let cpu = process_cpu() - cpu;
        assert_eq!(pending, n, "a sleep due 10 s out completed at once");
        CreateDrop {
            create: per(created - start, n),
            poll: per(polled - created, n),
            drop: per(dropped - polled, n),
            total: per(dropped - start, n),
            cpu: per(cpu, n),
        }
    })
}

/// ns per operation of one run of reset or churn.
#[derive(Clone, Copy)]
pub(crate) struct PerOp {
    pub(crate) ns: f64,
    /// As in `CreateDrop::cpu`, over the operations.
    pub(crate) cpu: f64,
}

impl PerOp {
    /// The best of both, column by column.
    pub(crate) fn min(self, other: PerOp) -> PerOp {
        PerOp {
            ns: self.ns.min(other.ns),
            cpu: self.cpu.min(other.cpu),
        }
    }
}

/// Makes one sleep per delay and polls each once (untimed), lets the
/// process go quiet, then times `op` on them (it returns how many
/// operations it did), and hands them to `check` before dropping them.
fn time_on_pending<P: Peer>(
    peer: &P,
    delays: &[Duration],
    op: impl FnOnce(&mut Slots<P::Sleep>, &mut Context<'_>) -> usize,
    check: impl FnOnce(&mut Slots<P::Sleep>, &mut Context<'_>),
) -> PerOp {
    let n = delays.len();
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut slots = Slots::with_capacity(n);
    peer.enter(|| {
        for &delay in delays {
            slots.push(peer.sleep(delay));
        }
        assert_eq!(slots.poll_each(&mut cx), n, "a sleep completed at once");
        settle();
        let cpu = process_cpu();
        let start = Instant::now();
        let ops = op(&mut slots, &mut cx);
        let elapsed = start.elapsed();
        settle();
        let cpu = process_cpu() - cpu;
        check(&mut slots, &mut cx);
        slots.clear();
        PerOp {
            ns: per(elapsed, ops),
            cpu: per(cpu, ops),
        }
    })
}

/// Makes one sleep per delay and polls each once (untimed), then resets
/// each once, to `LATER` + its delay from the start of the resets: later
/// than its first deadline. Only the resets are timed.
pub(crate) fn reset<P: Peer>(peer: &P, delays: &[Duration]) -> PerOp {
    let later: Vec<Duration> = delays.iter().map(|&delay| delay + LATER).collect();
    time_on_pending(
        peer,
        delays,
        |slots, _| {
            let start = Instant::now();
            slots.for_each_pinned(|index, sleep| peer.reset(sleep, start, later[index]));
            later.len()
        },
        // Still pending: no reset made a sleep due.
        |slots, cx| assert_eq!(slots.poll_each(cx), later.len(), "a reset sleep completed"),
    )
}

/// Makes one sleep per delay and polls each once (untimed), then takes
/// N steps: each replaces the sleep at index `picks[step]` (dropping it in
/// place) with a new one of `delays[step]`, and polls that once. A server
/// whose connections come and go in no particular order. Only the steps
/// are timed.
pub(crate) fn churn<P: Peer>(peer: &P, delays: &[Duration], picks: &[usize]) -> PerOp {
    time_on_pending(
        peer,
        delays,
        |slots, cx| {
            let mut pending = 0;
            for (&index, &delay) in picks.iter().zip(delays) {
                let mut slot = slots.pinned(index);
                slot.set(peer.sleep(delay));
                pending += usize::from(slot.as_mut().poll(cx).is_pending());
            }
            assert_eq!(pending, picks.len(), "a new sleep completed at once");
            picks.len()
        },
        |_, _| {},
    )
}
