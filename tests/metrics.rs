//! What a `Timer` and a `DurableTimer` publish through the `metrics`
//! facade (feature `metrics`), read back from a `DebuggingRecorder`. Each
//! test installs its own recorder locally (`metrics::with_local_recorder`)
//! while it builds or opens: the handles are registered then, and the
//! driver thread updates them from there on. The Redis queue's are in
//! `metrics_redis.rs`, with a global recorder of its own.

extern crate alloc;

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use metrics_util::debugging::DebuggingRecorder;
use tickwheel::persist::{DurableTimer, MisfirePolicy, OnMissed, SyncPolicy};
use tickwheel::timer::{Inline, ManualClock};
use tickwheel::Timer;

#[path = "support/recorded.rs"]
mod recorded;
use recorded::Recorded;
#[path = "support/scratch.rs"]
mod scratch;
use scratch::Scratch;

const MS: Duration = Duration::from_millis(1);

/// On a manual clock every count and every lateness is exact: two runs
/// 2 ms late (one inside its 3 ms slack, one with none), one on time, a
/// cancel; and the counters equal the timer's own `Stats`.
#[test]
fn a_timer_counts_its_runs_and_their_lateness() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = metrics::with_local_recorder(&recorder, || {
        Timer::builder()
            .clock(clock.clone())
            .slack(Duration::ZERO)
            .thread_name("metered")
            .executor(tx)
            .build()
    })
    .unwrap();
    // Another timer, named apart: its counts are its own.
    let other = metrics::with_local_recorder(&recorder, || {
        Timer::builder()
            .thread_name("other")
            .executor(Inline)
            .build()
    })
    .unwrap();
    other.run_after(Duration::from_secs(3600), || ()).unwrap();

    timer.schedule(5 * MS, "precise").unwrap();
    timer.with_slack(3 * MS).schedule(5 * MS, "loose").unwrap();
    timer.schedule(10 * MS, "on time").unwrap();
    let paid = timer.schedule(60 * MS, "cancelled").unwrap();
    assert_eq!(timer.cancel(paid), Some("cancelled"));
    clock.advance(7 * MS);
    timer.sync();
    clock.advance(3 * MS);
    timer.sync();
    let mut fired: Vec<&str> = rx.try_iter().collect();
    fired.sort_unstable();
    assert_eq!(fired, ["loose", "on time", "precise"]);

    let stats = timer.stats();
    let m = Recorded::take(&snapshotter);
    let me = [("timer", "metered")];
    let count = |name: &str| m.counter(name, &me).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(count("tickwheel_timer_scheduled_total"), 4);
    assert_eq!(count("tickwheel_timer_cancelled_total"), 1);
    assert_eq!(count("tickwheel_timer_fired_total"), 3);
    assert_eq!(
        count("tickwheel_timer_in_window_total"),
        2,
        "loose and on time"
    );
    assert_eq!(
        count("tickwheel_timer_overshoot_total"),
        1,
        "precise, 2 ms late"
    );
    assert_eq!(count("tickwheel_timer_early_total"), 0);
    assert_eq!(count("tickwheel_timer_rejected_total"), 0);
    assert_eq!(count("tickwheel_timer_dropped_total"), 0);
    assert_eq!(count("tickwheel_timer_panicked_total"), 0);
    assert_eq!(
        (
            stats.scheduled,
            stats.cancelled,
            stats.fired,
            stats.in_window
        ),
        (4, 1, 3, 2)
    );
    assert_eq!(stats.overshoot.count(), 1);
    let wakeups = count("tickwheel_timer_wakeups_total");
    assert!(wakeups >= 2, "each sync made a pass: {wakeups}");
    assert!(wakeups <= timer.stats().wakeups, "{wakeups} > {stats:?}");

    let mut lateness = m
        .histogram("tickwheel_timer_lateness_seconds", &me)
        .unwrap();
    lateness.sort_by(f64::total_cmp);
    assert_eq!(lateness.len(), 3, "{lateness:?}");
    let expected = [0.0, 0.002, 0.002];
    for (got, want) in lateness.iter().zip(expected) {
        assert!((got - want).abs() < 1e-6, "{lateness:?}");
    }

    let them = [("timer", "other")];
    assert_eq!(m.counter("tickwheel_timer_scheduled_total", &them), Some(1));
    assert_eq!(m.counter("tickwheel_timer_fired_total", &them), Some(0));
    let names = m.names_with(("timer", "metered"));
    assert_eq!(names.len(), 11, "the documented timer metrics: {names:?}");
}

/// Refused hand-offs, the values dropped with them, and panics, both on
/// the driver thread and on a thread pool's.
#[test]
fn a_timer_counts_rejections_drops_and_panics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded::<u32>();
    drop(rx); // every hand-off is refused; no hook, so the value is dropped
    let refusing = metrics::with_local_recorder(&recorder, || {
        Timer::builder()
            .clock(clock.clone())
            .thread_name("refusing")
            .executor(tx)
            .build()
    })
    .unwrap();
    let inline = metrics::with_local_recorder(&recorder, || {
        Timer::builder()
            .clock(clock.clone())
            .thread_name("inline")
            .executor(Inline)
            .build()
    })
    .unwrap();
    let pooled = metrics::with_local_recorder(&recorder, || {
        Timer::builder()
            .clock(clock.clone())
            .thread_name("pooled")
            .build()
    })
    .unwrap();
    refusing.schedule(MS, 7).unwrap();
    refusing.schedule(MS, 8).unwrap();
    inline.run_after(MS, || panic!("a task panics")).unwrap();
    pooled
        .run_after(MS, || panic!("a pooled task panics"))
        .unwrap();
    clock.advance(2 * MS);
    refusing.sync();
    inline.sync();
    pooled.sync();
    // The pool's worker counts its panic; the driver publishes it at its
    // next pass.
    let give_up = Instant::now() + Duration::from_secs(10);
    while pooled.stats().panicked == 0 {
        assert!(Instant::now() < give_up, "the pooled task never ran");
        std::thread::sleep(MS);
    }
    pooled.sync();

    let m = Recorded::take(&snapshotter);
    let refused = [("timer", "refusing")];
    assert_eq!(
        m.counter("tickwheel_timer_rejected_total", &refused),
        Some(2)
    );
    assert_eq!(
        m.counter("tickwheel_timer_dropped_total", &refused),
        Some(2)
    );
    assert_eq!(m.counter("tickwheel_timer_fired_total", &refused), Some(2));
    let s = refusing.stats();
    assert_eq!((s.rejected, s.dropped), (2, 2));
    let inline_panics = m.counter("tickwheel_timer_panicked_total", &[("timer", "inline")]);
    assert_eq!(inline_panics, Some(1));
    assert_eq!(inline.stats().panicked, 1);
    let pooled_panics = m.counter("tickwheel_timer_panicked_total", &[("timer", "pooled")]);
    assert_eq!(pooled_panics, Some(1));
    assert_eq!(pooled.stats().panicked, 1);
}

/// On the system clock: forty timers over 40 ms, each run counted once
/// with a lateness that is neither negative nor absurd, split between
/// inside and past its window.
#[test]
fn a_timer_on_the_system_clock_records_each_run_once() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (tx, rx) = crossbeam_channel::unbounded();
    let timer = metrics::with_local_recorder(&recorder, || {
        Timer::builder().thread_name("wall").executor(tx).build()
    })
    .unwrap();
    for i in 0..40u32 {
        timer
            .schedule(Duration::from_millis(u64::from(i)), i)
            .unwrap();
    }
    for _ in 0..40 {
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    let m = Recorded::take(&snapshotter);
    let me = [("timer", "wall")];
    assert_eq!(m.counter("tickwheel_timer_fired_total", &me), Some(40));
    let inside = m.counter("tickwheel_timer_in_window_total", &me).unwrap();
    let over = m.counter("tickwheel_timer_overshoot_total", &me).unwrap();
    assert_eq!(inside + over, 40);
    assert_eq!(m.counter("tickwheel_timer_early_total", &me), Some(0));
    let lateness = m
        .histogram("tickwheel_timer_lateness_seconds", &me)
        .unwrap();
    assert_eq!(lateness.len(), 40);
    assert!(
        lateness.iter().all(|&s| (0.0..5.0).contains(&s)),
        "{lateness:?}"
    );
    assert_eq!(timer.stats().lateness.count(), 40);
}

/// A journal counts what its calls did, the runs of its jobs and their
/// lateness, its compactions and size; at a reopen, the jobs restored,
/// the misfires by outcome, and the damage skipped.
#[test]
fn a_durable_timer_counts_its_journal() {
    let dir = Scratch::new("metrics");
    let path = dir.path("orders.journal");
    let name = path.display().to_string();
    let me = [("journal", name.as_str())];
    let ran = Arc::new(Mutex::new(Vec::new()));
    let open = |recorder: &DebuggingRecorder, policy: &MisfirePolicy<u64>| {
        let sink = Arc::clone(&ran);
        metrics::with_local_recorder(recorder, || {
            DurableTimer::open(&path, SyncPolicy::Always, policy, move |order: u64| {
                sink.lock().unwrap().push(order)
            })
        })
        .unwrap()
    };

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (orders, recovery) = open(&recorder, &MisfirePolicy::default());
    assert!(recovery.outcomes.is_empty());
    orders.schedule(10 * MS, 1).unwrap();
    orders.schedule_keyed("order 2", 20 * MS, 2).unwrap();
    let paid = orders.schedule(Duration::from_secs(3600), 3).unwrap();
    let later = orders.schedule(Duration::from_secs(3600), 4).unwrap();
    assert_eq!(orders.cancel(paid), Some(3));
    assert_eq!(orders.cancel(paid), None, "a second cancel does not count");
    assert!(orders.reset(later, Duration::from_secs(7200)));
    let give_up = Instant::now() + Duration::from_secs(10);
    while ran.lock().unwrap().len() < 2 {
        assert!(Instant::now() < give_up, "jobs 1 and 2 never ran");
        std::thread::sleep(MS);
    }
    orders.compact().unwrap();
    // Job 5 is missed while the timer is down: the reopen below stands an
    // hour later. (Due in 300 ms on the real clock, it once ran here when
    // the drop's fsync was slow.)
    orders.schedule(Duration::from_secs(60), 5).unwrap();
    drop(orders);

    // One snapshot: the recorder's counters and gauges restart from zero
    // at each (and histograms drop their samples).
    let m = Recorded::take(&snapshotter);
    let count = |m: &Recorded, name: &str| m.counter(name, &me).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(count(&m, "tickwheel_journal_scheduled_total"), 5);
    assert_eq!(count(&m, "tickwheel_journal_cancelled_total"), 1);
    assert_eq!(count(&m, "tickwheel_journal_rescheduled_total"), 1);
    assert_eq!(count(&m, "tickwheel_journal_fired_total"), 2);
    assert_eq!(
        count(&m, "tickwheel_journal_compactions_total"),
        2,
        "open, compact"
    );
    assert_eq!(count(&m, "tickwheel_journal_compaction_failures_total"), 0);
    assert_eq!(count(&m, "tickwheel_journal_write_errors_total"), 0);
    assert_eq!(count(&m, "tickwheel_journal_restored_total"), 0);
    assert_eq!(count(&m, "tickwheel_journal_damaged_total"), 0);
    let lateness = m
        .histogram("tickwheel_journal_lateness_seconds", &me)
        .unwrap();
    assert_eq!(lateness.len(), 2, "{lateness:?}");
    assert!(
        lateness.iter().all(|&s| (0.0..5.0).contains(&s)),
        "{lateness:?}"
    );
    // Dropped, the timer has written its last record: the gauge has the
    // file's size.
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(
        m.gauge("tickwheel_journal_size_bytes", &me),
        Some(size as f64)
    );
    // The journal's timer publishes no timer family of its own.
    assert!(m.names_with(("timer", "tickwheel-driver")).is_empty());

    let discard = MisfirePolicy::default()
        .threshold(Duration::ZERO)
        .on_missed(OnMissed::Discard);
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let an_hour_later = ManualClock::with_wall_time(SystemTime::now() + Duration::from_secs(3600));
    let (orders, recovery) = metrics::with_local_recorder(&recorder, || {
        DurableTimer::<u64>::open_with_clock(
            &path,
            SyncPolicy::Always,
            &discard,
            an_hour_later,
            |_| {},
        )
    })
    .unwrap();
    assert_eq!(recovery.outcomes.len(), 2, "jobs 4 and 5");
    let m = Recorded::take(&snapshotter);
    assert_eq!(count(&m, "tickwheel_journal_restored_total"), 1, "job 4");
    let discarded = [("journal", name.as_str()), ("outcome", "discarded")];
    assert_eq!(
        m.counter("tickwheel_journal_misfires_total", &discarded),
        Some(1)
    );
    let fired_now = [("journal", name.as_str()), ("outcome", "fired_now")];
    assert_eq!(
        m.counter("tickwheel_journal_misfires_total", &fired_now),
        None
    );
    drop(orders);

    // A flipped byte: the damage skipped at the next open is counted.
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (orders, recovery) = open(&recorder, &MisfirePolicy::default());
    assert!(
        !recovery.damage.is_empty(),
        "the flipped byte damaged a record"
    );
    let m = Recorded::take(&snapshotter);
    let damaged = recovery.damage.len() as u64;
    let damaged_bytes: u64 = recovery.damage.iter().map(|d| d.len).sum();
    assert_eq!(count(&m, "tickwheel_journal_damaged_total"), damaged);
    assert_eq!(
        count(&m, "tickwheel_journal_damaged_bytes_total"),
        damaged_bytes
    );
    drop(orders);
}
