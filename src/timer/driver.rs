//! The driver thread: sleeps until the next deadline, takes what is due
//! out of every shard, and hands it to the executor outside the locks.
//!
//! # Waking the driver (no lost wake-ups)
//!
//! `next_wake` is the tick the driver has promised to wake by.
//!
//! - Driver: `scanning = true`, `next_wake = MAX`, then scan every shard
//!   under its lock (taking what is due and reading each
//!   `next_expiration`), then `scanning = false`, then
//!   `fetch_min(next_wake, next)` and sleep until the result.
//! - Scheduler (a schedule, a reset, a fixed-delay re-arm): file the timer
//!   under the shard lock, unlock; if its deadline is below `next_wake`,
//!   `fetch_min` it and, if that lowered it and the driver is not
//!   `scanning`, unpark the driver.
//!
//! Why no wake-up is lost: if the driver's scan of the shard comes before
//! the insert, its `next_wake = MAX` happens before the scheduler's read
//! (through the shard's unlock and lock), so the scheduler lowers
//! `next_wake`; otherwise the scan sees the new timer. A scheduler that then
//! sees `scanning` has its `fetch_min` ordered before the driver's final
//! `fetch_min` (everything here is `SeqCst`, and the driver clears the flag
//! first), so the driver's wake tick already includes the new deadline and
//! no unpark is needed. One that sees the flag clear unparks; an unpark
//! before the driver parks leaves the park token set, so the sleep returns
//! at once. Skipping the unpark during scans matters: without it, a stream
//! of schedules arriving during each scan (when `next_wake` is `MAX`) woke
//! the driver for another scan, and another (3 M passes in one benchmark).
//!
//! The park token is shared with any code that runs on this thread, and
//! inline tasks do (a channel `recv` parks). An unpark sent while a task
//! runs can be eaten by it, so every signal is also a value the driver
//! reads after the tasks of a pass and before it sleeps: `next_wake` for
//! schedules (read by the final `fetch_min`), the lifecycle state for a
//! stop (`shutdown_returns_when_a_task_parked_the_driver_thread`).
//!
//! With no timers the driver sleeps with no deadline: zero wake-ups a
//! second. `models.rs` checks this protocol under loom.
//!
//! Since the wheel's `next_expiration` is a tick at which polling fires a
//! timer or moves time, sleeping until it always makes progress.

use alloc::vec::Vec;
use std::time::Instant;

use super::executor::Executor;
use super::hand_off::{deliver, keep_back, stopping, Fire, TakenRun, Work};
use super::job::Job;
use super::latency::WakeLatency;
use super::priority::{self, Ranks};
use super::shard::{Shard, Shared, FINISHING, RUNNING, STOPPING};
use super::slack::{BySlack, Class};
use super::sync::{thread, Ordering};
use super::TimerHandle;
use crate::metrics::metric;
use crate::Tick;

/// Most timers taken out of one shard per lock hold, so a burst of expiries
/// never keeps a shard locked for long.
const BATCH: usize = 256;

/// Most timers with slack handed over in one round of a pass, after each
/// of which the driver checks whether a timer with less slack has come
/// due: at about 0.1–0.2 µs a hand-off, 25–50 µs.
const LOOSE_ROUND: usize = 256;

pub(super) fn drive<T: Send + 'static, E: Executor<T>>(shared: &Shared<T, E>, executor: &E) {
    precise_sleeps();
    *shared.driver.lock() = Some(thread::current());
    let mut batch = Vec::with_capacity(BATCH);
    // Taken and due, kept by a pass cut short for the next (`fire_class`).
    let mut carry = Vec::new();
    let mut by_slack = BySlack::new();
    // How late the OS wakes this thread, and the lead last published.
    let mut latency = WakeLatency::new();
    let mut lead = 0;
    // The executor's own panic count, as last published (`publish_pass`).
    #[cfg(feature = "metrics")]
    let mut pool_panics = 0;
    loop {
        // Announce a scan: deadlines lowered into `next_wake` from here on
        // are picked up by this pass's final `fetch_min`.
        shared.scanning.store(true, Ordering::SeqCst);
        shared.next_wake.store(Tick::MAX, Ordering::SeqCst);
        let state = shared.state.load(Ordering::SeqCst);
        if state == STOPPING {
            carry.drain(..).for_each(|fire| keep_back(shared, fire));
            let (late, why) = shared.in_hand.too_late();
            for unfired in late {
                shared.undelivered(unfired.into_expired(), why);
            }
            return;
        }
        let pass = shared.passes.start();
        metric!(publish_pass(shared, executor, &mut pool_panics));
        let last = state == FINISHING;
        let taking = Taking {
            executor,
            batch: &mut batch,
            carry: &mut carry,
        };
        let next = match fire_due(shared, &mut by_slack, taking, last) {
            Ok(next) => {
                shared.passes.complete(pass);
                next
            }
            // Cut short: what was due is not all handed over, so this pass
            // does not count for `Timer::sync`; the next one starts now.
            Err(now) => now,
        };
        if last {
            // The last pass takes in all that was kept: nothing is left
            // here, but if it were, the drain would return it.
            carry.drain(..).for_each(|fire| keep_back(shared, fire));
            return;
        }
        // Clear the flag before the final `fetch_min`: a scheduler that
        // still sees it set has lowered `next_wake` before this read.
        shared.scanning.store(false, Ordering::SeqCst);
        let wake = next.min(shared.next_wake.fetch_min(next, Ordering::SeqCst));
        // Read the state again: a task run inline in this pass may have
        // parked this thread and so eaten the unpark a stop sent.
        // And whether a `sync` waits: the same task may have eaten its
        // unpark.
        if wake <= shared.time.now_tick().0
            || shared.state.load(Ordering::SeqCst) != RUNNING
            || shared.passes.wanted()
        {
            continue;
        }
        if wake == Tick::MAX {
            shared.time.clock.sleep_until(None);
            continue;
        }
        // In the future: `wake` is past the tick now is in.
        let aim = shared.time.instant_of(wake);
        shared.time.clock.sleep_until(Some(aim));
        learn(shared, &mut latency, &mut lead, aim);
    }
}

/// At the start of a pass (no lock held): counts the wake-up, and adds the
/// panics the executor counted since the last pass (a thread pool's
/// tasks panic on its own threads, where the timer cannot see them) to
/// the panics metric.
#[cfg(feature = "metrics")]
fn publish_pass<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    executor: &E,
    published: &mut u64,
) {
    let m = &shared.counters.metrics;
    m.wakeups.increment(1);
    let panics = executor.panics();
    if panics > *published {
        m.panicked.increment(panics - *published);
        *published = panics;
    }
}

/// After a timed sleep aimed at `aim`: if it ran to its end, records how
/// late it returned, and publishes the lead that gives when it moves
/// (`slack.rs`, the rule). A sleep cut short (an unpark, a spurious
/// wake-up) says nothing of the OS's lateness.
fn learn<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    latency: &mut WakeLatency,
    published: &mut u64,
    aim: Instant,
) {
    let Some(late) = shared.time.now().checked_duration_since(aim) else {
        return;
    };
    latency.record(late);
    let lead = shared.time.ticks_in(latency.lead());
    if lead != *published {
        *published = lead;
        shared.classes.learn_lead(lead);
    }
}

/// Asks the OS to end this (driver) thread's timed sleeps as close to
/// their deadline as it can. Linux adds a per-thread *timer slack* (50 µs
/// by default) to every timed sleep so that it can merge wake-ups; the
/// driver already merges its own, by each timer's slack, so the kernel's
/// would only add lateness, and push timers out of narrow windows.
/// Measured with `park_timeout` on the benchmark VM: 62 µs late at the
/// median and 0.80 ms at p99 with the default, 12 µs and 0.06 ms without
/// (`docs/design.md`).
#[cfg(all(target_os = "linux", not(miri), not(all(loom, test))))]
fn precise_sleeps() {
    // SAFETY: `PR_SET_TIMERSLACK` takes its value as an integer, reads and
    // writes no memory, and changes only the calling thread's timer slack.
    // On failure (a kernel without it) the default slack stays: less
    // precise, nothing worse.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Elsewhere the OS's sleeps are used as they are.
#[cfg(not(all(target_os = "linux", not(miri), not(all(loom, test)))))]
fn precise_sleeps() {}

/// One pass over the wheels: fires what was due when it began, class by
/// class (least slack first), and returns when to wake next: the earliest
/// window end (`slack.rs`); `Err` with a tick already come if it was cut
/// short (below).
///
/// Each class is collected from every shard and handed over merged, in
/// deadline order, then priority (`fire_class`): a pass that finds timers
/// of several shards due (a late wake-up, a burst) keeps
/// `Timer::with_channel`'s order and the priorities of timers due at one
/// tick, as a single wheel would.
///
/// While it hands over timers with slack, in rounds of at most
/// [`LOOSE_ROUND`], it watches the clock: once a class with less slack
/// needs its wake-up (the pass has already read when), it ends early and
/// says "now" (`Err`), so the next pass starts with the least slack; what
/// it took and did not hand over waits for that pass in `carry`. A precise
/// timer thus waits behind at most one round of loose ones, not behind
/// every loose timer a late wake-up found due. The `last` pass, a graceful
/// stop's, is never cut short: no pass comes after it to fire the rest.
fn fire_due<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    by_slack: &mut BySlack,
    mut taking: Taking<'_, T, E>,
    last: bool,
) -> Result<Tick, Tick> {
    let (now, now_up) = shared.time.now_tick();
    let shards = shared.shards.len();
    let mut next = Tick::MAX;
    for &index in by_slack.update(&shared.classes) {
        let class = shared.classes.get(index);
        let (per_shard, urgent) = if class.slack == 0 {
            (BATCH, Tick::MAX)
        } else if last {
            ((LOOSE_ROUND / shards).max(1), Tick::MAX)
        } else {
            // `next` is when a class with less slack needs the driver.
            ((LOOSE_ROUND / shards).max(1), next)
        };
        let round = Round {
            class,
            now,
            now_up,
            per_shard,
            urgent,
        };
        match fire_class(shared, &round, &mut taking) {
            _ if stopping(shared) => return Ok(Tick::MAX),
            Ok(class_next) => next = next.min(class_next),
            Err(urgent) => return Err(urgent),
        }
    }
    Ok(next)
}

/// What a pass hands over with: the executor, the batch being handed
/// over, and what a pass cut short kept for the next (`fire_class`).
struct Taking<'a, T, E> {
    executor: &'a E,
    batch: &'a mut Vec<Fire<T>>,
    carry: &'a mut Vec<Fire<T>>,
}

/// What a class's part of a pass works with.
struct Round {
    class: Class,
    now: Tick,
    now_up: Tick,
    /// Most timers taken from one shard per round.
    per_shard: usize,
    /// When a class with less slack needs the driver (`Tick::MAX`: never
    /// cut short).
    urgent: Tick,
}

/// One class's part of a pass: every shard's due timers, up to
/// `per_shard` a shard a round, merged into one batch in deadline order
/// (then priority, stable: `priority.rs`) and handed over; again while a
/// shard had more. A round hands over only what is due no later than the
/// last timer taken from a shard that may have more, and keeps the rest
/// for the next round, so the merge is exact however many rounds a backlog
/// takes. `Ok`: when the class next needs the driver. `Err(urgent)`: the
/// round ended because `urgent` came; the rest waits in `carry` for the
/// next pass, which starts at once and merges it first.
fn fire_class<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    round: &Round,
    taking: &mut Taking<'_, T, E>,
) -> Result<Tick, Tick> {
    let Taking {
        executor,
        batch,
        carry,
    } = taking;
    let mut next = Tick::MAX;
    // This class's timers a pass cut short kept: merged with what is due.
    let mut kept = 0;
    while kept < carry.len() {
        if carry[kept].handle.class == round.class.index {
            batch.push(carry.swap_remove(kept));
        } else {
            kept += 1;
        }
    }
    // Shards that filled their part of the last round: only they may have
    // more due. The first round visits every shard (and allocates nothing
    // unless one fills).
    let (mut first, mut filled, mut still) = (true, Vec::new(), Vec::new());
    loop {
        let mut cut = Tick::MAX;
        still.clear();
        let every = (0..shared.shards.len() as u16).filter(|_| first);
        let again = filled.iter().copied().filter(|_| !first);
        for shard in every.chain(again) {
            let place = Place {
                shard,
                class: round.class,
            };
            let limit = batch.len() + round.per_shard;
            let Some(taken) = take_due(shared, place, round, limit, batch) else {
                continue;
            };
            next = next.min(taken.next);
            if taken.filled {
                // This shard's later timers come next round: nothing due
                // after its last one may go before them.
                still.push(shard);
                cut = cut.min(batch.last().map_or(Tick::MAX, |fire| fire.deadline));
            }
        }
        let more = !still.is_empty();
        first = false;
        core::mem::swap(&mut filled, &mut still);
        priority::order(batch, |fire| (fire.deadline, fire.priority));
        let rest: Vec<Fire<T>> = batch
            .drain(batch.partition_point(|fire| fire.deadline <= cut)..)
            .collect();
        deliver(shared, executor, batch);
        if stopping(shared) {
            rest.into_iter().for_each(|fire| keep_back(shared, fire));
            return Ok(Tick::MAX);
        }
        batch.extend(rest);
        if !more {
            return Ok(next);
        }
        if round.urgent != Tick::MAX && shared.time.now_tick().0 >= round.urgent {
            // Not handed over now: the filled shards may still hold timers
            // due before them, which come out in the next pass.
            carry.append(batch);
            return Err(round.urgent);
        }
    }
}

/// Where the wheel being collected sits: its shard and slack class.
#[derive(Clone, Copy)]
struct Place {
    shard: u16,
    class: Class,
}

/// What [`take_due`] took from one shard.
struct Taken {
    /// The batch reached its limit: the shard may have more due.
    filled: bool,
    /// When the class next needs the driver for this shard (`Tick::MAX`
    /// if filled, or if nothing is left).
    next: Tick,
}

/// One shard's part of a pass for `place.class`, under the shard's lock:
/// cancels the timers of dropped sleeps (before time moves,
/// `futures/filed.rs`), then collects due timers until `batch` holds
/// `limit`, counting the one-shots it takes out in `Shared::handing`
/// before the shard's length drops. `None` if the shard has no wheel of
/// that class.
fn take_due<T: Send + 'static, E: Executor<T>>(
    shared: &Shared<T, E>,
    place: Place,
    round: &Round,
    limit: usize,
    batch: &mut Vec<Fire<T>>,
) -> Option<Taken> {
    let cell = &shared.shards[usize::from(place.shard)];
    let mut wheels = cell.lock.lock();
    wheels.get(place.class.index)?;
    // Dropped sleeps' wakers: dropped (runtime code) after the lock.
    #[cfg(feature = "async")]
    let dropped = wheels.flush_dropped();
    #[cfg(feature = "async")]
    let drop_wakers = |wheels| {
        drop(wheels);
        super::futures::drop_wakers(dropped, &shared.counters);
    };
    #[cfg(not(feature = "async"))]
    let drop_wakers = drop;
    let Some((wheel, ranks)) = wheels.wheel_and_ranks(place.class.index) else {
        drop_wakers(wheels);
        return None;
    };
    let taken_out = collect(wheel, ranks, place, round, limit, batch);
    if taken_out > 0 {
        let held = shared.handing.load(Ordering::Relaxed);
        shared.handing.store(held + taken_out, Ordering::Relaxed);
    }
    let filled = batch.len() >= limit;
    let next = match wheel.next_expiration() {
        Some(due) if !filled => due.saturating_add(place.class.wake_after),
        _ => Tick::MAX,
    };
    cell.publish_len(&wheels);
    drop_wakers(wheels);
    Some(Taken { filled, next })
}

/// Takes due timers out of `wheel` (one-shots) or re-arms them in place
/// (repeating), until `batch` holds `limit`, and then, if the shard has
/// `ranks`, on to the end of the last timer's tick (`priority.rs`). Runs
/// under the shard lock: no user code here. Returns how many one-shots
/// (values and sleeps) it took out.
fn collect<T>(
    wheel: &mut Shard<T>,
    mut ranks: Option<&mut Ranks>,
    place: Place,
    round: &Round,
    limit: usize,
    batch: &mut Vec<Fire<T>>,
) -> usize {
    let (now, now_up) = (round.now, round.now_up);
    let mut taken_out = 0;
    let whole_ticks = ranks.is_some();
    let class = place.class.index;
    wheel.set_now(now);
    let slack = place.class.slack;
    loop {
        let Some((key, deadline)) = wheel.peek() else {
            return taken_out;
        };
        if batch.len() >= limit
            && !(whole_ticks && batch.last().is_some_and(|last| last.deadline == deadline))
        {
            return taken_out;
        }
        let handle = TimerHandle {
            key,
            shard: place.shard,
            class: place.class.index,
        };
        let (priority, work) = match wheel.get_mut(key) {
            Some(Job::Repeat(repeat)) => {
                let taken = TakenRun {
                    owed: repeat.cadence.owed().is_some(),
                    epoch: repeat.epoch,
                };
                let next = repeat.cadence.fire(deadline, now, now_up, slack);
                let make = alloc::sync::Arc::clone(&repeat.make);
                wheel.reset(key, next);
                let priority = ranks.as_ref().map_or(0, |r| r.get(class, key));
                (priority, Work::Make(make, taken))
            }
            Some(Job::Once(_)) => match wheel.cancel(key) {
                Some(Job::Once(value)) => {
                    let priority = ranks.as_mut().map_or(0, |r| r.take(class, key));
                    (priority, Work::Value(value))
                }
                _ => unreachable!("the peeked one-shot is gone"),
            },
            #[cfg(feature = "async")]
            Some(Job::Wake(..)) => match wheel.cancel(key) {
                Some(Job::Wake(waker)) => (0, Work::Wake(waker)),
                _ => unreachable!("the peeked sleep is gone"),
            },
            None => unreachable!("a peeked key is stale"),
        };
        taken_out += usize::from(!matches!(work, Work::Make(..)));
        batch.push(Fire {
            handle,
            deadline,
            slack,
            priority,
            work,
        });
    }
}
