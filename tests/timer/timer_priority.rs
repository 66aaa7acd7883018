//! `Timer::with_priority`: among timers due at the same tick, higher
//! priority is handed to the executor first, first in, first out within
//! one priority; a priority never passes an earlier deadline and never
//! fires early. Driven by a `ManualClock`, so the ticks are exact.

use core::time::Duration;

use crossbeam_channel::Receiver;
use tickwheel::timer::{Clock, ManualClock, MissedTicks};
use tickwheel::Timer;

const MS: Duration = Duration::from_millis(1);

fn timer<T: Send + 'static>(
    slack: Duration,
) -> (
    ManualClock,
    Timer<T, crossbeam_channel::Sender<T>>,
    Receiver<T>,
) {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(slack)
        .executor(tx)
        .build()
        .unwrap();
    (clock, timer, rx)
}

/// 10,000 timers due at one tick, priorities 0 to 4 interleaved: handed
/// over by priority, highest first, and in scheduling order within each,
/// with no slack (the merged class) and with the default 1 ms (batches of
/// 32, which must not end inside the tick).
#[test]
fn ten_thousand_timers_due_at_one_tick_go_by_priority_then_first_in() {
    for slack in [Duration::ZERO, MS] {
        let (clock, timer, rx) = timer::<(u8, u32)>(slack);
        for i in 0..10_000u32 {
            let priority = (i.wrapping_mul(7_919) % 5) as u8;
            timer
                .with_priority(priority)
                .schedule(5 * MS, (priority, i))
                .unwrap();
        }
        clock.advance(10 * MS);
        let got: Vec<(u8, u32)> = (0..10_000)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        let mut want = got.clone();
        want.sort_by_key(|&(priority, i)| (core::cmp::Reverse(priority), i));
        assert_eq!(got, want, "slack {slack:?}");
        assert_eq!(timer.stats().early, 0);
    }
}

/// A priority orders ties only: a low-priority timer due a tick earlier
/// goes first, and a high-priority one does not fire before its deadline.
#[test]
fn a_priority_never_passes_an_earlier_deadline_nor_fires_early() {
    let (clock, timer, rx) = timer::<&str>(Duration::ZERO);
    timer.schedule(5 * MS, "low, due first").unwrap();
    timer
        .with_priority(255)
        .schedule(6 * MS, "high, due next")
        .unwrap();
    clock.advance(5 * MS);
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)),
        Ok("low, due first")
    );
    assert!(rx.recv_timeout(50 * MS).is_err(), "fired early");
    clock.advance(5 * MS);
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)),
        Ok("high, due next")
    );

    // Both overdue at once: still by deadline.
    timer.schedule(5 * MS, "low, due first").unwrap();
    timer
        .with_priority(255)
        .schedule(6 * MS, "high, due next")
        .unwrap();
    clock.advance(20 * MS);
    let order: Vec<&str> = rx.iter().take(2).collect();
    assert_eq!(order, ["low, due first", "high, due next"]);
}

/// A repeating timer's runs carry its handle's priority: each period, its
/// run goes before a plain one-shot due at the same tick.
#[test]
fn repeating_timers_keep_their_priority() {
    let (clock, timer, rx) = timer::<&str>(Duration::ZERO);
    timer
        .with_priority(1)
        .schedule_repeating(10 * MS, 10 * MS, MissedTicks::Skip, || "heartbeat")
        .unwrap();
    for round in 1..=3u32 {
        timer.schedule(10 * MS, "one-shot").unwrap();
        clock.advance(10 * MS);
        let order: Vec<&str> = rx.iter().take(2).collect();
        assert_eq!(order, ["heartbeat", "one-shot"], "round {round}");
    }
}

/// A timer with a priority hands its value back like any other: on
/// cancel, and on shutdown.
#[test]
fn ranked_values_come_back_on_cancel_and_shutdown() {
    let (_clock, timer, _rx) = timer::<String>(MS);
    let ranked = timer.with_priority(3);
    assert_eq!(ranked.priority(), 3);
    assert_eq!(ranked.with_slack(Duration::ZERO).priority(), 3);
    let handle = ranked
        .schedule(Duration::from_secs(60), "cancelled".into())
        .unwrap();
    assert_eq!(timer.cancel(handle).as_deref(), Some("cancelled"));
    ranked
        .schedule(Duration::from_secs(60), "kept".into())
        .unwrap();
    let back = timer.shutdown();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].1, "kept");
    let err = ranked.schedule(MS, "late".into()).unwrap_err();
    assert_eq!(err.into_inner(), "late");
}

/// Timers of one tick scheduled from eight threads (so eight shards), each
/// with its own priority: handed over by priority with slack too. With
/// slack they once came shard by shard (`[70, 40, 0, 50, …]`), since only
/// the zero-slack class was merged across shards.
#[test]
fn priorities_from_many_threads_hold_with_slack() {
    for slack in [Duration::ZERO, MS, 20 * MS] {
        let (clock, timer, rx) = crate::timers::sharded_channel(slack, Some(8));
        let at = clock.now() + 30 * MS;
        std::thread::scope(|s| {
            for i in 0..8u8 {
                let ranked = timer.with_priority(i * 10);
                s.spawn(move || ranked.schedule_at(at, i * 10).unwrap());
            }
        });
        clock.advance(60 * MS);
        timer.sync();
        let got: Vec<u8> = rx.try_iter().collect();
        assert_eq!(got, [70, 60, 50, 40, 30, 20, 10, 0], "slack {slack:?}");
    }
}
