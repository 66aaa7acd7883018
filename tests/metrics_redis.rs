//! What a Redis queue and its consumer publish through the `metrics`
//! facade (feature `metrics`), on a real `redis-server` of the test's own.
//! A global `DebuggingRecorder`, this file's alone (a test binary of its
//! own): the queue registers its metrics at connect, and its I/O thread
//! updates them.

use core::time::Duration;
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use metrics_util::debugging::{DebuggingRecorder, Snapshotter};
use tickwheel::redis::{Acked, Cancelled, Delivery, Nacked, Queue, Scheduled};

#[path = "support/recorded.rs"]
mod recorded;
use recorded::Recorded;
#[path = "support/redis_server.rs"]
mod redis_server;
use redis_server::RedisServer;

const MS: Duration = Duration::from_millis(1);

fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().unwrap();
        snapshotter
    })
}

/// The tests take turns: taking a snapshot resets every metric, the other
/// test's too.
static TURN: Mutex<()> = Mutex::new(());

/// Schedules (one a duplicate), a cancel, a reschedule, deliveries with
/// their lateness, acks, a nack that retries, a redelivery, a dead
/// letter, and `len()`'s gauges: each counted exactly, under the queue's
/// name, and equal to `Queue::metrics`.
#[test]
fn a_queue_counts_what_it_did() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let snapshotter = snapshotter();
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = Queue::builder(&server.url(), "metered")
        .max_attempts(2)
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let now = SystemTime::now();
    let created = |s: Scheduled| assert!(matches!(s, Scheduled::Created { .. }), "{s:?}");
    created(
        queue
            .schedule("late", now - Duration::from_secs(1), b"")
            .unwrap(),
    );
    created(queue.schedule_in("soon", 50 * MS, b"").unwrap());
    created(
        queue
            .schedule_in("paid", Duration::from_secs(3600), b"")
            .unwrap(),
    );
    created(
        queue
            .schedule_in("moved", Duration::from_secs(3600), b"")
            .unwrap(),
    );
    created(
        queue
            .schedule_in("failing", Duration::from_secs(3600), b"")
            .unwrap(),
    );
    assert_eq!(
        queue.schedule_in("late", 50 * MS, b"").unwrap(),
        Scheduled::Exists
    );
    assert!(matches!(
        queue.cancel("paid").unwrap(),
        Cancelled::Cancelled(_)
    ));
    assert!(queue
        .reschedule_in("moved", Duration::from_secs(7200))
        .unwrap());
    assert!(queue.reschedule_in("failing", Duration::ZERO).unwrap());

    // "late", "soon" and "failing" are delivered; two are acked.
    let mut got = Vec::new();
    while got.len() < 3 {
        got.extend(
            consumer
                .fetch(3 - got.len(), Duration::from_secs(5))
                .unwrap(),
        );
    }
    for job in &got {
        if job.id == "failing" {
            assert_eq!(consumer.nack(job, MS).unwrap(), Nacked::Retrying);
        } else {
            assert_eq!(consumer.ack(job).unwrap(), Acked::Acked);
        }
    }
    // Its second delivery, out of attempts on the next nack.
    let again = consumer.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!((again[0].id.as_str(), again[0].attempt), ("failing", 2));
    assert_eq!(consumer.nack(&again[0], MS).unwrap(), Nacked::DeadLettered);
    assert_eq!(
        queue.len().unwrap(),
        (1, 1),
        "\"moved\" waits, \"failing\" is dead"
    );

    // The queue's own counts first: the I/O thread goes on (polls,
    // hints), so the metrics, read after, may be ahead, never behind.
    let q = queue.metrics();
    // One snapshot: the recorder's counters and gauges restart from zero
    // at each.
    let m = Recorded::take(snapshotter);
    let me = [("queue", "metered")];
    let count = |name: &str| m.counter(name, &me).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(count("tickwheel_queue_scheduled_total"), 5);
    assert_eq!(count("tickwheel_queue_duplicates_total"), 1);
    assert_eq!(count("tickwheel_queue_cancelled_total"), 1);
    assert_eq!(count("tickwheel_queue_rescheduled_total"), 2);
    assert_eq!(count("tickwheel_queue_delivered_total"), 4);
    assert_eq!(count("tickwheel_queue_redelivered_total"), 1);
    assert_eq!(count("tickwheel_queue_acked_total"), 2);
    assert_eq!(count("tickwheel_queue_retried_total"), 1);
    assert_eq!(count("tickwheel_queue_dead_lettered_total"), 1);
    assert_eq!(count("tickwheel_queue_lease_lost_total"), 0);
    assert_eq!(m.gauge("tickwheel_queue_live_jobs", &me), Some(1.0));
    assert_eq!(m.gauge("tickwheel_queue_dead_jobs", &me), Some(1.0));
    assert_eq!(m.gauge("tickwheel_queue_held_jobs", &me), Some(0.0));

    // Every counter is the queue's own count.
    let pairs = [
        ("scheduled", q.scheduled),
        ("duplicates", q.duplicates),
        ("cancelled", q.cancelled),
        ("rescheduled", q.rescheduled),
        ("delivered", q.delivered),
        ("redelivered", q.redelivered),
        ("acked", q.acked),
        ("retried", q.retried),
        ("dead_lettered", q.dead_lettered),
        ("misfire_discarded", q.discarded),
        ("misfire_spread", q.spread),
        ("lease_lost", q.lease_lost),
        ("released", q.released),
        ("trimmed", q.trimmed),
        ("round_trips", q.round_trips),
        ("failures", q.failures),
        ("dials", q.dials),
        ("claims", q.claims),
        ("polls", q.polls),
        ("hints", q.hints),
    ];
    for (name, snapshot) in pairs {
        let metric = count(&format!("tickwheel_queue_{name}_total"));
        assert!(metric >= snapshot, "{name}: metric {metric} < {snapshot}");
    }
    assert!(count("tickwheel_queue_round_trips_total") > 0);
    assert!(count("tickwheel_queue_claims_total") > 0);

    // One lateness per delivery: "late" by about a second, the rest by
    // a little.
    let mut lateness = m
        .histogram("tickwheel_queue_lateness_seconds", &me)
        .unwrap();
    lateness.sort_by(f64::total_cmp);
    assert_eq!(lateness.len(), 4, "{lateness:?}");
    assert!(
        lateness.iter().all(|&s| (0.0..30.0).contains(&s)),
        "{lateness:?}"
    );
    assert!(
        lateness[3] >= 1.0,
        "\"late\" was due a second early: {lateness:?}"
    );
    assert!(lateness[0] < 1.0, "{lateness:?}");
    assert_eq!(q.lateness.count(), 4);

    // 20 counters, the histogram and three gauges; the consumer's timer
    // publishes no timer metrics.
    assert_eq!(m.names_with(("queue", "metered")).len(), 24);
    assert!(m.names_with(("timer", "tickwheel-redis-wake")).is_empty());
}

/// The held gauge: jobs delivered to this process and not yet settled. It
/// rises with deliveries, falls with each ack and nack, keeps an extended
/// lease, and lets a delivery dropped without an ack go when its lease
/// ends.
#[test]
fn held_jobs_follow_deliveries_settles_and_leases() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let snapshotter = snapshotter();
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = Queue::builder(&server.url(), "holding")
        .lease(Duration::from_millis(400))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let got = five_held(&queue, &consumer);
    let me = [("queue", "holding")];
    let held = held_reader(snapshotter, &me);
    let held = || {
        queue.len().unwrap();
        held()
    };
    assert_eq!(held(), 5.0);
    assert_eq!(consumer.ack(&got[0]).unwrap(), Acked::Acked);
    assert_eq!(
        consumer.nack(&got[1], Duration::from_secs(3600)).unwrap(),
        Nacked::Retrying
    );
    assert!(consumer.extend(&got[2], Duration::from_secs(30)).unwrap());
    // Two dropped without a word, one extended.
    assert_eq!(held(), 3.0);
    // Past the 400 ms lease (and the 100 ms pruning): the dropped two
    // have gone; the extended one is still held.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(held(), 1.0);
    assert_eq!(consumer.ack(&got[2]).unwrap(), Acked::Acked);
    assert_eq!(held(), 0.0);
}

/// Five jobs scheduled by `producer`, each fetched by `consumer` and held.
fn five_held(producer: &Queue, consumer: &tickwheel::redis::Consumer) -> Vec<Delivery> {
    for i in 0..5 {
        producer.schedule_in(&format!("job {i}"), MS, b"").unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 5 {
        got.extend(
            consumer
                .fetch(5 - got.len(), Duration::from_secs(5))
                .unwrap(),
        );
    }
    got
}

/// Reads the held gauge of `labels`: the gauge's changes are added up
/// here, since each snapshot of the test recorder resets it to zero.
fn held_reader<'a>(
    snapshotter: &'a Snapshotter,
    labels: &'a [(&'a str, &'a str)],
) -> impl Fn() -> f64 + 'a {
    let total = core::cell::Cell::new(0.0);
    move || {
        let change = Recorded::take(snapshotter).gauge("tickwheel_queue_held_jobs", labels);
        total.set(total.get() + change.unwrap_or(0.0));
        total.get()
    }
}

/// The bug: every handle of a queue set the one gauge to its own count,
/// so a producer's handle (holding nothing) made it read 0 while the
/// process's consumer held five jobs. Each handle now adds its part, and
/// takes it away when it goes.
#[test]
fn two_handles_of_a_queue_add_up_in_the_held_gauge() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let snapshotter = snapshotter();
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let consuming = Queue::connect(&server.url(), "two-handles").unwrap();
    let consumer = consuming.consumer().unwrap();
    let producing = Queue::connect(&server.url(), "two-handles").unwrap();
    let got = five_held(&producing, &consumer);
    let me = [("queue", "two-handles")];
    let held = held_reader(snapshotter, &me);
    // Both handles show their count, the producer's last.
    consuming.len().unwrap();
    producing.len().unwrap();
    assert_eq!(held(), 5.0, "the producer's handle overwrote the count");
    drop(producing);
    assert_eq!(held(), 5.0);
    // The consumer's handle goes, and its five with it.
    drop(got);
    drop(consumer);
    drop(consuming);
    assert_eq!(held(), 0.0);
}
