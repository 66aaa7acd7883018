//! Handing what the driver took out of the wheels to the executor, outside
//! every lock, and the three things that can come between the taking and
//! the handing:
//!
//! - **A stop.** `shutdown` stops the driver between two hand-offs: what is
//!   left goes back for the drain (`in_hand.rs`), a repeating timer's runs
//!   are given back to its cadence, so the drain dates it from the first
//!   run not handed over.
//! - **A cancel or a reset of a repeating timer.** Its runs are taken
//!   under the shard lock with the timer's `epoch`; each is checked, under
//!   the lock again, just before its value is made. A cancel or reset in
//!   between answered as if the run had not been taken, so the run never
//!   starts (a fixed-delay timer parked for it is filed again).
//! - **User code that panics**, in a factory, an executor, a waker or the
//!   `Drop` of a value or factory: caught and counted, the driver goes on.

use super::unwind::catch_unwind;
use alloc::vec::Vec;
use core::panic::AssertUnwindSafe;

use super::executor::{Executor, Rejected, Why};
use super::job::{Job, Make, Unfired};
use super::shard::{Shared, FINISHING, STOPPING};
use super::sync::Ordering;
use super::{Expired, TimerHandle};
use crate::Tick;

/// A due timer taken out of its wheel, waiting (outside the lock) to be
/// handed over.
pub(super) struct Fire<T> {
    pub(super) handle: TimerHandle,
    pub(super) deadline: Tick,
    /// The timer's slack, in ticks.
    pub(super) slack: u64,
    /// Its priority among timers due at the same tick (`priority.rs`).
    pub(super) priority: u8,
    pub(super) work: Work<T>,
}

pub(super) enum Work<T> {
    Value(T),
    /// A repeating timer's run, and how it was taken.
    Make(Make<T>, TakenRun),
    /// A sleep's task to wake (`futures/sleep.rs`).
    #[cfg(feature = "async")]
    Wake(core::task::Waker),
}

/// How a repeating timer's run was taken: whether it was one of the runs
/// owed at once (see `Cadence::Rate`), and the timer's epoch then.
#[derive(Clone, Copy)]
pub(super) struct TakenRun {
    pub(super) owed: bool,
    pub(super) epoch: u32,
}

/// A stop has come: the driver hands nothing more over.
#[inline]
pub(super) fn stopping<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>) -> bool {
    shared.state.load(Ordering::Relaxed) == STOPPING
}

/// Hands a batch to the executor, outside every lock.
pub(super) fn deliver<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    executor: &E,
    batch: &mut Vec<Fire<T>>,
) {
    if batch.is_empty() {
        return;
    }
    // Out of the wheels, the one-shots no longer count against
    // `max_pending`: a task may schedule its successor at the limit.
    if shared.max_pending.is_some() {
        let one_shots = batch
            .iter()
            .filter(|fire| matches!(fire.work, Work::Value(_)))
            .count();
        shared.release_reservation(one_shots);
    }
    let mut fires = batch.drain(..);
    while let Some(fire) = fires.next() {
        if stopping(shared) {
            keep_back(shared, fire);
            fires.for_each(|fire| keep_back(shared, fire));
            return;
        }
        let value = match fire.work {
            Work::Value(value) => {
                // Past the last stop check: it goes to the executor.
                handed(shared);
                value
            }
            Work::Make(make, taken) => {
                if !run_goes_ahead(shared, fire.handle, taken) {
                    drop_quietly(shared, make);
                    continue;
                }
                let made = catch_unwind(AssertUnwindSafe(|| make(Some(fire.handle))));
                drop_quietly(shared, make);
                let Ok(value) = made else {
                    shared.counters.panicked();
                    continue;
                };
                // The factory may have stopped the timer (it runs here,
                // on the driver): then nothing more is handed over.
                if stopping(shared) {
                    if give_back(shared, fire.handle, fire.deadline, taken) {
                        drop_quietly(shared, value);
                    } else {
                        keep_run(shared, fire.handle, fire.deadline, value);
                    }
                    fires.for_each(|fire| keep_back(shared, fire));
                    return;
                }
                value
            }
            #[cfg(feature = "async")]
            Work::Wake(waker) => {
                handed(shared);
                record_fire(shared, fire.deadline, fire.slack);
                wake(shared, waker);
                continue;
            }
        };
        let deadline = record_fire(shared, fire.deadline, fire.slack);
        let fired = Expired {
            key: fire.handle,
            deadline,
            value,
        };
        match catch_unwind(AssertUnwindSafe(|| executor.execute(fired))) {
            Ok(Ok(())) => {}
            Ok(Err(Rejected(fired))) => {
                shared.counters.rejected();
                shared.undelivered(fired, Why::Rejected);
            }
            Err(_) => {
                shared.counters.panicked();
            }
        }
    }
}

/// Keeps a timer taken for hand-off for the stop's drain (`in_hand.rs`):
/// a one-shot's value. A repeating timer's run is given back to its
/// cadence (the timer is still in its wheel, and the drain returns it). A
/// sleep was due: it fires (its task is woken, no user code runs here).
pub(super) fn keep_back<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>, fire: Fire<T>) {
    match fire.work {
        Work::Value(value) => {
            handed(shared);
            shared.in_hand.keep(Unfired {
                deadline: shared.time.instant_of(fire.deadline),
                every: None,
                value,
            });
        }
        Work::Make(make, taken) => {
            // The stop drained the timer first (it came from the driver's
            // own thread): the run is kept on its own.
            if !give_back(shared, fire.handle, fire.deadline, taken)
                && shared.in_hand.drained(fire.handle)
            {
                match catch_unwind(AssertUnwindSafe(|| make(None))) {
                    Ok(value) => keep_run(shared, fire.handle, fire.deadline, value),
                    Err(_) => shared.counters.panicked(),
                }
            }
            drop_quietly(shared, make);
        }
        #[cfg(feature = "async")]
        Work::Wake(waker) => {
            record_fire(shared, fire.deadline, fire.slack);
            handed(shared);
            wake(shared, waker);
        }
    }
}

/// A one-shot or sleep taken out of the wheels leaves the driver's hands
/// (`Shared::handing`): nothing can stop it now from reaching the
/// executor (or the waker, or the stop's drain).
#[inline]
fn handed<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>) {
    let held = shared.handing.load(Ordering::Relaxed);
    shared.handing.store(held - 1, Ordering::Release);
}

/// Whether a repeating timer's taken run may start: the timer is still
/// filed, neither cancelled nor reset since (its epoch). A fixed-delay
/// timer reset meanwhile was parked for this run: it is filed again at
/// the reset's deadline. A timer a graceful stop from the driver's own
/// thread drained has its taken runs go ahead, as its docs promise.
fn run_goes_ahead<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    handle: TimerHandle,
    taken: TakenRun,
) -> bool {
    let drained =
        || shared.state.load(Ordering::Relaxed) == FINISHING && shared.in_hand.drained(handle);
    let mut current = false;
    let filed = on_repeat(shared, handle, |repeat| {
        current = repeat.epoch == taken.epoch;
        if current {
            None
        } else {
            repeat.cadence.skip_run()
        }
    });
    match filed {
        None => drained(),
        Some(moved) => {
            if let Some(at) = moved {
                shared.wake_if_earlier(at, handle.class);
            }
            current
        }
    }
}

/// Gives a repeating timer's run that was taken at `deadline` but not
/// handed over back to its cadence, if the timer is still the one that
/// was taken. `false` if the timer is gone; `true` if it is filed (a reset
/// since has superseded the run: nothing to give back).
fn give_back<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    handle: TimerHandle,
    deadline: Tick,
    taken: TakenRun,
) -> bool {
    on_repeat(shared, handle, |repeat| {
        if repeat.epoch == taken.epoch {
            repeat.cadence.give_back(deadline, taken.owed)
        } else {
            None
        }
    })
    .is_some()
}

/// Runs `f` on the repeating timer `handle` under its shard's lock and
/// files the timer where `f` says, if anywhere. `None` if the timer is
/// gone; else where it moved.
fn on_repeat<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    handle: TimerHandle,
    f: impl FnOnce(&mut super::job::Repeat<T>) -> Option<Tick>,
) -> Option<Option<Tick>> {
    let (_, mut wheels) = shared.lock(handle)?;
    let wheel = wheels.get_mut(handle.class)?;
    let Some(Job::Repeat(repeat)) = wheel.get_mut(handle.key) else {
        return None;
    };
    let moved = f(repeat);
    if let Some(at) = moved {
        wheel.reset(handle.key, at);
    }
    Some(moved)
}

/// A repeating timer's run whose timer a stop from the driver's thread
/// drained before the run came back: kept on its own, for the hook.
fn keep_run<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    handle: TimerHandle,
    deadline: Tick,
    value: T,
) {
    if shared.in_hand.drained(handle) {
        shared.in_hand.keep(Unfired {
            deadline: shared.time.instant_of(deadline),
            every: None,
            value,
        });
    } else {
        // Cancelled before the stop: its cancel answered for it.
        drop_quietly(shared, value);
    }
}

/// Counts a run fired with its lateness; returns its deadline.
pub(super) fn record_fire<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    deadline: Tick,
    slack: Tick,
) -> std::time::Instant {
    let deadline = shared.time.instant_of(deadline);
    match shared.time.now().checked_duration_since(deadline) {
        Some(late) => shared
            .counters
            .lateness(late, shared.time.duration_of(slack)),
        None => shared.counters.early(),
    }
    shared.counters.fired();
    deadline
}

/// Wakes a sleep's task: runtime code, outside every lock; a panicking
/// waker is the runtime's bug, counted like ours.
#[cfg(feature = "async")]
fn wake<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>, waker: core::task::Waker) {
    if catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
        shared.counters.panicked();
    }
}

/// Drops what user code owns (a value, a factory and what it captured) on
/// the driver: a panicking `Drop` is counted, not fatal.
fn drop_quietly<T: Send + 'static, E: Executor<T>, X>(shared: &Shared<T, E>, owned: X) {
    if catch_unwind(AssertUnwindSafe(move || drop(owned))).is_err() {
        shared.counters.panicked();
    }
}
