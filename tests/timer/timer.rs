//! The std layer's behaviour, mostly on a `ManualClock`, so that it is
//! deterministic and fast: `clock.advance(..)` then `timer.sync()` waits for
//! the driver to finish a pass at the new time.

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use tickwheel::timer::{Clock, Expired, ManualClock, MissedTicks};
use tickwheel::Timer;

#[allow(dead_code)]
use crate::timers;
use timers::{advance, channel_timer, manual_inline, manual_pool, sharded_channel};

const MS: Duration = Duration::from_millis(1);

/// A timer on a manual clock that records each fired value with its
/// deadline.
#[allow(clippy::type_complexity)]
fn recording_timer<T: Send + 'static>() -> (
    ManualClock,
    Timer<T, impl tickwheel::timer::Executor<T>>,
    Receiver<(Instant, T)>,
) {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .tick(MS)
        .slack(Duration::ZERO)
        .executor(move |fired: Expired<T>| tx.send((fired.deadline, fired.value)).unwrap())
        .build()
        .unwrap();
    (clock, timer, rx)
}

#[test]
fn fires_in_deadline_order_fifo_on_ties() {
    let (clock, timer, rx) = channel_timer();
    for (delay, name) in [(30, "c"), (10, "a"), (20, "b1"), (20, "b2"), (40, "d")] {
        timer.schedule(delay * MS, name).unwrap();
    }
    advance(&clock, &timer, 100 * MS);
    let fired: Vec<_> = rx.try_iter().collect();
    assert_eq!(fired, ["a", "b1", "b2", "c", "d"]);
}

#[test]
fn never_fires_before_its_deadline() {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .tick(MS)
        .slack(Duration::ZERO)
        .executor(tx)
        .build()
        .unwrap();
    // Not on a tick boundary: the deadline (5.5 ms) rounds up to tick 6.
    clock.advance(MS / 2);
    timer.schedule(5 * MS, "x").unwrap();
    advance(&clock, &timer, 5 * MS - Duration::from_nanos(1));
    assert!(rx.try_recv().is_err(), "fired before 5.5 ms");
    advance(&clock, &timer, Duration::from_nanos(1)); // 5.5 ms: still inside tick 5
    assert!(rx.try_recv().is_err(), "fired before its tick");
    advance(&clock, &timer, MS / 2); // 6 ms
    assert_eq!(rx.try_recv().unwrap(), "x");
}

#[test]
fn deadlines_are_reported_rounded_up_to_the_tick() {
    let (clock, timer, rx) = recording_timer();
    let t0 = clock_now(&clock);
    clock.advance(MS / 3);
    timer.schedule(2 * MS, ()).unwrap();
    advance(&clock, &timer, 10 * MS);
    let (deadline, ()) = rx.try_recv().unwrap();
    assert_eq!(deadline - t0, 3 * MS); // 2.33 ms rounds up to 3 ms
}

fn clock_now(clock: &ManualClock) -> Instant {
    tickwheel::timer::Clock::now(clock)
}

#[test]
fn cancel_and_reset_and_stale_handles() {
    let (clock, timer, rx) = channel_timer();
    let a = timer.schedule(10 * MS, "a").unwrap();
    let b = timer.schedule(10 * MS, "b").unwrap();
    assert_eq!(timer.cancel(a), Some("a"));
    assert_eq!(timer.cancel(a), None);
    assert!(!timer.reset(a, MS));
    assert!(timer.reset(b, 50 * MS));
    advance(&clock, &timer, 20 * MS);
    assert!(rx.try_recv().is_err());
    advance(&clock, &timer, 40 * MS);
    assert_eq!(rx.try_recv().unwrap(), "b");
    // Fired: stale.
    assert_eq!(timer.cancel(b), None);
    assert!(!timer.reset(b, MS));
    assert_eq!(timer.pending(), 0);
}

#[test]
fn an_earlier_timer_wakes_a_sleeping_driver() {
    // Real clock: the driver sleeps until the far timer; a near one must
    // wake it (no lost wake-up).
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder().executor(tx).build().unwrap();
    timer.schedule(Duration::from_secs(3600), "far").unwrap();
    std::thread::sleep(5 * MS); // let the driver go to sleep
    let start = Instant::now();
    timer.schedule(10 * MS, "near").unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "near");
    assert!(start.elapsed() >= 10 * MS, "fired early");
}

#[test]
fn idle_driver_does_not_wake() {
    let (clock, timer, _rx) = channel_timer::<()>();
    timer.sync();
    let before = timer.stats().wakeups;
    std::thread::sleep(50 * MS);
    assert_eq!(timer.stats().wakeups, before);
    let _ = clock;
    // Real clock too: no timers, no deadline, no wake-ups.
    let timer = Timer::new().unwrap();
    timer.sync(); // its first pass done, however late the thread started
    let before = timer.stats().wakeups;
    std::thread::sleep(100 * MS);
    assert_eq!(timer.stats().wakeups, before);
}

#[test]
fn periodic_fixed_rate_does_not_drift_over_10_000_periods() {
    let (clock, timer, rx) = recording_timer();
    let t0 = clock_now(&clock);
    let period = 3 * MS;
    timer
        .schedule_repeating(7 * MS, period, MissedTicks::Burst, || ())
        .unwrap();
    // Advance in uneven steps that never line up with the period.
    let steps = [MS, 2 * MS, MS / 2, 5 * MS / 2, 4 * MS];
    let mut fired = Vec::new();
    let mut i = 0;
    while fired.len() < 10_000 {
        advance(&clock, &timer, steps[i % steps.len()]);
        fired.extend(rx.try_iter().map(|(deadline, ())| deadline));
        i += 1;
    }
    for (n, deadline) in fired.iter().enumerate().take(10_000) {
        assert_eq!(*deadline - t0, 7 * MS + period * n as u32, "run {n}");
    }
}

/// Fires a repeating timer (period 10 ms, first at 10 ms) through a gap of
/// 35 ms and reports the deadlines of the runs, then of the next run.
fn runs_through_a_gap(missed: MissedTicks) -> Vec<Duration> {
    let (clock, timer, rx) = recording_timer();
    let t0 = clock_now(&clock);
    timer
        .schedule_repeating(10 * MS, 10 * MS, missed, || ())
        .unwrap();
    advance(&clock, &timer, 10 * MS); // run 0 on time
    advance(&clock, &timer, 35 * MS); // now 45 ms: runs at 20, 30, 40 missed
    let mut deadlines: Vec<_> = rx.try_iter().map(|(d, ())| d - t0).collect();
    // Then step to the next run.
    for _ in 0..30 {
        advance(&clock, &timer, MS);
        let next: Vec<_> = rx.try_iter().map(|(d, ())| d - t0).collect();
        if !next.is_empty() {
            deadlines.extend(next);
            break;
        }
    }
    deadlines
}

#[test]
fn missed_ticks_burst_runs_every_missed_run() {
    assert_eq!(
        runs_through_a_gap(MissedTicks::Burst),
        [10, 20, 30, 40, 50].map(|m| m * MS)
    );
}

#[test]
fn missed_ticks_skip_stays_on_the_grid() {
    assert_eq!(
        runs_through_a_gap(MissedTicks::Skip),
        [10, 20, 50].map(|m| m * MS)
    );
}

#[test]
fn missed_ticks_delay_restarts_from_now() {
    // Run 1 (due 20) runs at 45; the next is 45 + 10.
    assert_eq!(
        runs_through_a_gap(MissedTicks::Delay),
        [10, 20, 55].map(|m| m * MS)
    );
}

#[test]
fn cancelling_a_repeating_timer_stops_future_runs() {
    let (clock, timer, rx) = recording_timer();
    let beat = timer
        .schedule_repeating(MS, MS, MissedTicks::Burst, || "beat")
        .unwrap();
    advance(&clock, &timer, 3 * MS);
    assert_eq!(rx.try_iter().count(), 3);
    assert_eq!(timer.cancel(beat), Some("beat"));
    assert_eq!(timer.cancel(beat), None);
    advance(&clock, &timer, 10 * MS);
    assert_eq!(rx.try_iter().count(), 0);
    assert_eq!(timer.pending(), 0);
}

#[test]
fn fixed_delay_measures_from_the_end_of_each_run() {
    let (clock, timer) = manual_inline();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (t0, log, run_clock) = (clock_now(&clock), Arc::clone(&runs), clock.clone());
    let handle = timer
        .with_fixed_delay(2 * MS, 5 * MS, move || {
            log.lock().unwrap().push(clock_now(&run_clock) - t0);
            // Each run takes 3 ms of (manual) time.
            run_clock.advance(3 * MS);
        })
        .unwrap();
    for _ in 0..40 {
        advance(&clock, &timer, MS);
    }
    let runs = runs.lock().unwrap().clone();
    // Starts at 2; each run ends 3 later and the next starts 5 after that.
    assert!(runs.len() >= 3, "{runs:?}");
    for (n, start) in runs.iter().enumerate().take(3) {
        assert_eq!(*start, (2 + 8 * n as u32) * MS, "{runs:?}");
    }
    assert!(timer.cancel(handle).is_some());
}

#[test]
fn max_pending_hands_the_value_back() {
    let clock = ManualClock::new();
    let (tx, _rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .max_pending(2)
        .executor(tx)
        .build()
        .unwrap();
    let a = timer.schedule(MS, 1).unwrap();
    timer.schedule(MS, 2).unwrap();
    let err = timer.schedule(MS, 3).unwrap_err();
    assert!(err.is_full());
    assert_eq!(err.into_inner(), 3);
    timer.cancel(a);
    timer.schedule(MS, 4).unwrap();
    // Firing frees room too.
    advance(&clock, &timer, 2 * MS);
    timer.schedule(MS, 5).unwrap();
    timer.schedule(MS, 6).unwrap();
    assert!(timer.schedule(MS, 7).unwrap_err().is_full());
}

#[test]
fn cancel_and_fire_never_both_win_under_contention() {
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer: Timer<u32, Sender<u32>> = Timer::builder()
        .tick(Duration::from_micros(100))
        .executor(tx)
        .build()
        .unwrap();
    let handles: Vec<_> = (0..20_000u32)
        .map(|i| {
            timer
                .schedule(Duration::from_micros(u64::from(i % 50) * 20), i)
                .unwrap()
        })
        .collect();
    let cancelled: Vec<u32> = std::thread::scope(|s| {
        let halves = handles.chunks(handles.len() / 2);
        let joins: Vec<_> = halves
            .map(|chunk| {
                let timer = &timer;
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|&h| timer.cancel(h))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        joins.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    let _ = timer.shutdown_graceful();
    let fired: Vec<u32> = rx.try_iter().collect();
    let mut seen = HashSet::new();
    for v in fired.iter().chain(&cancelled) {
        assert!(seen.insert(*v), "{v} both fired and was cancelled");
    }
    assert_eq!(seen.len(), 20_000, "a value was lost");
}

#[test]
fn stats_count_what_happened() {
    let (clock, timer, rx) = channel_timer();
    let a = timer.schedule(MS, 1).unwrap();
    timer.schedule(MS, 2).unwrap();
    timer.schedule(10 * MS, 3).unwrap();
    timer.cancel(a);
    advance(&clock, &timer, 3 * MS);
    assert_eq!(rx.try_iter().count(), 1);
    let stats = timer.stats();
    assert_eq!(
        (stats.pending, stats.scheduled, stats.fired, stats.cancelled),
        (1, 3, 1, 1)
    );
    assert_eq!(stats.lateness.count(), 1);
    // Fired 2 ms after its tick.
    assert_eq!(stats.lateness.max(), 2 * MS);
}

#[test]
fn a_slow_task_on_the_pool_does_not_delay_other_timers() {
    let (clock, timer) = manual_pool();
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let (done_tx, done_rx) = crossbeam_channel::unbounded();
    let slow_done = done_tx.clone();
    // The slow task blocks one worker until the test releases it.
    timer
        .schedule(
            MS,
            Box::new(move || {
                release_rx.recv().unwrap();
                slow_done.send("slow").unwrap();
            }),
        )
        .unwrap();
    for i in 0..10 {
        let done = done_tx.clone();
        timer
            .schedule((2 + i) * MS, Box::new(move || done.send("fast").unwrap()))
            .unwrap();
    }
    for _ in 0..12 {
        advance(&clock, &timer, MS);
    }
    // All ten fast timers ran while the slow one still holds its worker.
    for _ in 0..10 {
        assert_eq!(
            done_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            "fast"
        );
    }
    release_tx.send(()).unwrap();
    assert_eq!(
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "slow"
    );
}

/// Today's bug: a late pass delivered shard by shard, so sixteen zero-slack
/// timers of sixteen threads, all found due by one wake-up, came out as
/// `[8, 16, 7, 15, …]`. A channel timer delivers them in deadline order,
/// with zero slack and (a later fix) with slack too, where they once came
/// shard by shard, values up to 14 ms apart swapped.
#[test]
fn a_late_pass_delivers_every_shard_in_deadline_order() {
    for round in 0..30u64 {
        let slack = [Duration::ZERO, MS, 10 * MS][round as usize % 3];
        let (clock, timer, rx) = sharded_channel(slack, Some(16));
        let start = clock.now();
        std::thread::scope(|s| {
            for k in 1..=16u64 {
                let timer = &timer;
                // Deadlines interleave across threads (so across shards).
                let at = start + Duration::from_micros(((k * 7 + round) % 16 + 1) * 100);
                s.spawn(move || timer.schedule_at(at, at).unwrap());
            }
        });
        // The driver was late: everything is due at once.
        advance(&clock, &timer, 50 * MS);
        let got: Vec<Instant> = rx.try_iter().collect();
        assert_eq!(got.len(), 16, "round {round}");
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(
            got, sorted,
            "round {round}, slack {slack:?}: not in deadline order"
        );
    }
}

/// A late pass with a backlog that takes many rounds (64 timers a shard a
/// round here): each round hands over only what no shard's later timers
/// can precede, so four threads' timers, dense on one and sparse on
/// another, come out in deadline order, ties first in, first out.
#[test]
fn a_late_backlog_of_many_rounds_stays_in_deadline_order() {
    let (clock, timer, rx) = sharded_channel(MS, Some(4));
    let start = clock.now();
    std::thread::scope(|s| {
        for k in 0..4u64 {
            let timer = &timer;
            s.spawn(move || {
                for i in 0..500u64 {
                    let at = start + Duration::from_micros(10 + i * (k + 1) * 10);
                    timer.schedule_at(at, (at, k, i)).unwrap();
                }
            });
        }
    });
    advance(&clock, &timer, 50 * MS);
    let got: Vec<(Instant, u64, u64)> = rx.try_iter().collect();
    assert_eq!(got.len(), 2_000);
    assert!(
        got.windows(2).all(|w| w[0].0 <= w[1].0),
        "not in deadline order"
    );
    // Within a thread (a shard), first in, first out.
    for k in 0..4 {
        let mine: Vec<u64> = got.iter().filter(|g| g.1 == k).map(|g| g.2).collect();
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {k}");
    }
}
