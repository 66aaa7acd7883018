//! The precision reference: what the JDK's `ScheduledThreadPoolExecutor`
//! does, in Rust. A `Mutex<BinaryHeap>` of deadlines and a `Condvar`; one
//! driver thread parks until the **exact** earliest deadline.
//!
//! Ground rules:
//!
//! - **One lock.** The heap, the sequence counter and the shutdown flag live
//!   in [`State`] under [`Shared::state`]. Schedulers and the driver take it
//!   for a push or a pop and nothing else.
//! - **Order.** Entries are ordered by `(deadline, seq)`: `seq` comes from
//!   one counter, so timers due at the same instant fire first in, first
//!   out (the JDK's `sequenceNumber`).
//! - **Wait.** The driver waits on the condvar with
//!   `wait_timeout(earliest − now)`: no rounding to a tick, no spinning.
//!   With nothing pending it waits without a timeout. Every return from a
//!   wait, timed out, notified or spurious, counts as one wake-up.
//! - **Fire.** The driver pops every entry with `deadline <= Instant::now()`
//!   into a batch under the lock, drops the lock, and runs the callback for
//!   each, on the driver thread. User code never runs under the lock.
//! - **Notify.** A scheduler notifies the condvar only when its timer is the
//!   new earliest (the driver's timeout is then too long), and does so after
//!   releasing the lock, so the driver does not wake into a held mutex. A
//!   notification sent while the driver is running a batch is not needed:
//!   it re-reads the heap before it waits again.
//!
//! Schedule is O(log n) under the lock; each fire is O(log n) under the lock
//! plus the callback outside it. There is no cancel: the precision bench
//! does not cancel.

use alloc::collections::BinaryHeap;
use alloc::sync::Arc;
use core::cmp::{Ordering as CmpOrdering, Reverse};
use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

/// A pending timer. Ordered by `(deadline, seq)` only.
struct Entry<T> {
    deadline: Instant,
    seq: u64,
    value: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// Everything under the lock.
struct State<T> {
    /// Min-heap by `(deadline, seq)`.
    heap: BinaryHeap<Reverse<Entry<T>>>,
    /// The next entry's `seq`.
    seq: u64,
    /// Set once by `Drop`; the driver exits at its next look.
    shutdown: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled on a new earliest deadline and on shutdown.
    wake: Condvar,
    /// Returns from `wait` / `wait_timeout`, counted by the driver.
    wakeups: AtomicU64,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No user code runs under the lock, so it is never poisoned.
        self.state.lock().expect("precise heap lock poisoned")
    }
}

/// A `Mutex<BinaryHeap>` timer with one driver thread that parks until the
/// exact earliest deadline and runs `fire(deadline, value)` for each timer
/// due.
pub(crate) struct PreciseHeap<T: Send + 'static> {
    shared: Arc<Shared<T>>,
    driver: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> PreciseHeap<T> {
    /// Starts the driver thread. `fire` runs on it, outside the lock, with
    /// each timer's requested deadline and value.
    pub(crate) fn new(fire: impl FnMut(Instant, T) + Send + 'static) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                seq: 0,
                shutdown: false,
            }),
            wake: Condvar::new(),
            wakeups: AtomicU64::new(0),
        });
        let driver = std::thread::Builder::new()
            .name("precise-heap".to_owned())
            .spawn({
                let shared = Arc::clone(&shared);
                move || drive(&shared, fire)
            })
            .expect("spawn the precise heap driver");
        PreciseHeap {
            shared,
            driver: Some(driver),
        }
    }

    /// Schedules `value` to fire at `deadline` (or as soon as possible if
    /// that has passed).
    pub(crate) fn schedule_at(&self, deadline: Instant, value: T) {
        let mut state = self.shared.lock();
        let earliest = match state.heap.peek() {
            None => true,
            Some(Reverse(top)) => deadline < top.deadline,
        };
        let seq = state.seq;
        state.seq += 1;
        state.heap.push(Reverse(Entry {
            deadline,
            seq,
            value,
        }));
        drop(state);
        if earliest {
            self.shared.wake.notify_one();
        }
    }

    /// The driver's returns from a condvar wait so far.
    pub(crate) fn wakeups(&self) -> u64 {
        self.shared.wakeups.load(Ordering::Relaxed)
    }
}

impl<T: Send + 'static> Drop for PreciseHeap<T> {
    /// Stops the driver (pending timers are dropped) and joins it.
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.wake.notify_one();
        if let Some(driver) = self.driver.take() {
            let joined = driver.join();
            if !std::thread::panicking() {
                joined.expect("the precise heap driver panicked");
            }
        }
    }
}

/// The driver thread: fire what is due, then wait for the earliest deadline.
fn drive<T>(shared: &Shared<T>, mut fire: impl FnMut(Instant, T)) {
    let mut batch: Vec<(Instant, T)> = Vec::new();
    let mut state = shared.lock();
    loop {
        if state.shutdown {
            return;
        }
        let now = Instant::now();
        while let Some(Reverse(top)) = state.heap.peek() {
            if top.deadline > now {
                break;
            }
            let Some(Reverse(entry)) = state.heap.pop() else {
                unreachable!("peeked an entry");
            };
            batch.push((entry.deadline, entry.value));
        }
        if !batch.is_empty() {
            drop(state);
            for (deadline, value) in batch.drain(..) {
                fire(deadline, value);
            }
            state = shared.lock();
            continue;
        }
        state = match state.heap.peek() {
            None => shared.wake.wait(state).expect("precise heap lock poisoned"),
            Some(Reverse(top)) => {
                let timeout = top.deadline.duration_since(now);
                shared
                    .wake
                    .wait_timeout(state, timeout)
                    .expect("precise heap lock poisoned")
                    .0
            }
        };
        shared.wakeups.fetch_add(1, Ordering::Relaxed);
    }
}
