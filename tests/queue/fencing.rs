//! Fencing without holes, careless inputs, retention and shutdown, each on
//! its own real `redis-server`: a late ack after another delivery, a
//! delivery from before a requeue, a delivery from another queue; inputs
//! at and past every limit; ended ids forgotten on time; a waiting fetch
//! interrupted by `close`.

use alloc::sync::Arc;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::Ordering::Relaxed;
use core::time::Duration;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Acked, Cancelled, Nacked, Queue, QueueError, Scheduled, MAX_LEASE};

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

#[test]
fn a_late_ack_after_another_delivery_was_acked_changes_nothing() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).lease(300 * MS).connect().unwrap();
    queue.schedule_in("f", MS, b"").unwrap();
    let (frozen, fresh) = (queue.consumer().unwrap(), queue.consumer().unwrap());
    let first = frozen.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    // The frozen consumer's lease runs out; the other gets the job again.
    let second = fresh.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((first.attempt, second.attempt), (1, 2));
    assert!(second.fence() > first.fence());
    // Held past any stall of a loaded machine before its ack.
    assert!(fresh.extend(&second, Duration::from_secs(60)).unwrap());
    assert_eq!(fresh.ack(&second).unwrap(), Acked::Acked);
    assert_eq!(frozen.ack(&first).unwrap(), Acked::LeaseLost);
    assert_eq!(frozen.nack(&first, MS).unwrap(), Nacked::LeaseLost);
    assert!(!frozen.extend(&first, Duration::from_secs(1)).unwrap());
    let m = queue.metrics();
    assert_eq!((m.acked, m.lease_lost), (1, 3), "{m:?}");
    assert_eq!(queue.cancel("f").unwrap(), Cancelled::Delivered);
}

#[test]
fn a_delivery_from_before_a_requeue_cannot_touch_the_new_one() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(1).connect().unwrap();
    queue.schedule_in("r", MS, b"").unwrap();
    let consumer = queue.consumer().unwrap();
    let old = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(consumer.nack(&old, MS).unwrap(), Nacked::DeadLettered);
    assert!(queue.requeue("r").unwrap());
    let new = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    // Attempts start again; the fence does not.
    assert_eq!((old.attempt, new.attempt), (1, 1));
    assert!(new.fence() > old.fence());
    assert_eq!(consumer.ack(&old).unwrap(), Acked::LeaseLost);
    assert_eq!(consumer.nack(&old, MS).unwrap(), Nacked::LeaseLost);
    assert_eq!(
        queue.cancel("r").unwrap(),
        Cancelled::InFlight,
        "the old delivery moved the new one"
    );
    assert!(queue.dead_letters(10).unwrap().is_empty());
    assert_eq!(consumer.ack(&new).unwrap(), Acked::Acked);
}

#[test]
fn a_delivery_acts_only_on_its_own_queue() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let a = Queue::connect(&server.url(), "a").unwrap();
    let b = Queue::connect(&server.url(), "b").unwrap();
    a.schedule_in("same-id", MS, b"").unwrap();
    b.schedule_in("same-id", MS, b"").unwrap();
    let (from_a, of_b) = (a.consumer().unwrap(), b.consumer().unwrap());
    let job = from_a.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert!(matches!(of_b.ack(&job), Err(QueueError::WrongQueue)));
    assert!(matches!(of_b.nack(&job, MS), Err(QueueError::WrongQueue)));
    assert!(matches!(of_b.extend(&job, MS), Err(QueueError::WrongQueue)));
    assert!(matches!(
        of_b.ack_all(core::slice::from_ref(&job)),
        Err(QueueError::WrongQueue)
    ));
    // b's job is untouched, and still waiting for b's consumer.
    let theirs = of_b.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!((theirs.len(), theirs[0].attempt), (1, 1));
    assert_eq!(from_a.ack(&job).unwrap(), Acked::Acked);
}

#[test]
fn a_repeated_ack_answers_the_same_and_counts_once() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    queue.schedule_in("twice", MS, b"").unwrap();
    let consumer = queue.consumer().unwrap();
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
    assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
    assert_eq!(
        consumer.ack_all(&[job.clone(), job]).unwrap(),
        [Acked::Acked, Acked::Acked]
    );
    assert_eq!(queue.metrics().acked, 1);
}

#[test]
fn options_out_of_range_are_refused_at_connect() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let url = server.url();
    let cases: [(&str, tickwheel::redis::QueueBuilder); 9] = [
        (
            "poll",
            Queue::builder(&url, "q").poll_interval(Duration::MAX),
        ),
        (
            "poll",
            Queue::builder(&url, "q").poll_interval(Duration::ZERO),
        ),
        ("lease", Queue::builder(&url, "q").lease(Duration::MAX)),
        ("lease", Queue::builder(&url, "q").lease(MAX_LEASE + MS)),
        (
            "batch",
            Queue::builder(&url, "q").batch(100_000_000_000_000_000),
        ),
        ("batch", Queue::builder(&url, "q").batch(0)),
        (
            "retention",
            Queue::builder(&url, "q").retention(Duration::MAX),
        ),
        ("retry", Queue::builder(&url, "q").retry(Duration::MAX, MS)),
        ("attempts", Queue::builder(&url, "q").max_attempts(0)),
    ];
    for (what, builder) in cases {
        match builder.connect() {
            Err(QueueError::Config(why)) => assert!(why.contains(what), "{what}: {why}"),
            other => panic!("{what}: {other:?}"),
        }
    }
}

#[test]
fn careless_arguments_get_clear_answers_and_never_panic() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    queue.schedule_in("j", MS, b"").unwrap();
    std::thread::sleep(5 * MS);
    // fetch(0) takes nothing, at once.
    let started = Instant::now();
    assert!(consumer
        .fetch(0, Duration::from_secs(5))
        .unwrap()
        .is_empty());
    assert!(started.elapsed() < Duration::from_secs(1));
    // A timeout too long to represent waits for good, without a panic.
    let job = consumer.fetch(1, Duration::MAX).unwrap().remove(0);
    assert_eq!(job.attempt, 1, "fetch(0) leased the job");
    assert!(matches!(
        consumer.nack(&job, Duration::MAX),
        Err(QueueError::Argument(_))
    ));
    assert!(matches!(
        consumer.extend(&job, Duration::MAX),
        Err(QueueError::Argument(_))
    ));
    assert!(matches!(
        consumer.extend(&job, MAX_LEASE + MS),
        Err(QueueError::Argument(_))
    ));
    assert!(matches!(
        consumer.extend(&job, Duration::ZERO),
        Err(QueueError::Argument(_))
    ));
    assert!(consumer.extend(&job, MAX_LEASE).unwrap());
    assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
    assert!(queue.dead_letters(usize::MAX).unwrap().is_empty());
    assert!(queue.dead_letters(0).unwrap().is_empty());
    assert!(matches!(
        queue.schedule_in("x", Duration::MAX, b""),
        Err(QueueError::DueOutOfRange)
    ));
    assert!(matches!(
        queue.schedule("x", SystemTime::UNIX_EPOCH - MS, b""),
        Err(QueueError::DueOutOfRange)
    ));
}

#[test]
fn due_times_round_up_to_the_microsecond() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let at = SystemTime::UNIX_EPOCH + Duration::new(4_000_000_000, 123_456_001);
    let Scheduled::Created { due } = queue.schedule("rounded", at, b"").unwrap() else {
        panic!("not created");
    };
    assert_eq!(
        due,
        SystemTime::UNIX_EPOCH + Duration::new(4_000_000_000, 123_457_000)
    );
    let exact = SystemTime::UNIX_EPOCH + Duration::new(4_000_000_000, 123_457_000);
    let Scheduled::Created { due } = queue.schedule("exact", exact, b"").unwrap() else {
        panic!("not created");
    };
    assert_eq!(due, exact);
}

#[test]
fn close_interrupts_a_waiting_fetch_and_every_later_one() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = Arc::new(queue.consumer().unwrap());
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let consumer = Arc::clone(&consumer);
            std::thread::spawn(move || consumer.fetch(1, Duration::from_secs(60)))
        })
        .collect();
    std::thread::sleep(200 * MS);
    let closed = Instant::now();
    consumer.close();
    for waiter in waiters {
        assert!(matches!(waiter.join().unwrap(), Err(QueueError::Closed)));
    }
    // Far below the fetches' 60 s, with room for a loaded machine.
    assert!(
        closed.elapsed() < Duration::from_secs(5),
        "took {:?}",
        closed.elapsed()
    );
    assert!(matches!(
        consumer.fetch(1, Duration::from_secs(1)),
        Err(QueueError::Closed)
    ));
    // Even a fetch that would take nothing says so (it once answered an
    // empty list, so a loop of them never learned).
    assert!(matches!(consumer.fetch(0, MS), Err(QueueError::Closed)));
    assert!(matches!(
        consumer.ack_and_fetch(&[], 0, MS),
        Err(QueueError::Closed)
    ));
    // The queue itself carries on.
    queue.schedule_in("after", MS, b"").unwrap();
    assert_eq!(queue.len().unwrap(), (1, 0));
}

/// Ended ids are forgotten on a schedule of their own, with no claim at
/// all: 3,000 cancelled ids under a 500 ms retention are gone 3 s later.
#[test]
fn retention_holds_without_any_claim() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).retention(500 * MS).connect().unwrap();
    let ids: Vec<String> = (0..3000).map(|i| format!("o{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), Duration::from_secs(600), &b"order"[..]))
        .collect();
    queue.schedule_many(&jobs).unwrap();
    for id in &ids {
        assert!(matches!(queue.cancel(id).unwrap(), Cancelled::Cancelled(_)));
    }
    assert_eq!(queue.metrics().cancelled, 3000);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(server.command(&["LLEN", "tw:{orders}:ends"]), ":0\r\n");
    assert_eq!(server.command(&["HLEN", "tw:{orders}:jobs"]), ":0\r\n");
    assert_eq!(queue.metrics().trimmed, 3000);
    // Forgotten: the id may be used again.
    assert!(matches!(
        queue.schedule_in("o1", MS, b"").unwrap(),
        Scheduled::Created { .. }
    ));
}

/// Idle, a consumer sends one command per poll interval however many
/// threads fetch and whatever their timeouts.
#[test]
fn idle_cost_does_not_grow_with_threads_or_short_timeouts() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let consumer = Arc::new(queue.consumer().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = [5000, 5000, 300, 50]
        .into_iter()
        .map(|timeout_ms| {
            let (consumer, stop) = (Arc::clone(&consumer), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    assert!(consumer.fetch(1, timeout_ms * MS).unwrap().is_empty());
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let before = server.commands_processed();
    std::thread::sleep(Duration::from_secs(6));
    let per_second = (server.commands_processed() - before - 1) as f64 / 6.0;
    stop.store(true, Relaxed);
    consumer.close();
    for t in threads {
        let _ = t.join();
    }
    // One poll a second at most (each gap is 1 to 1.25 s), plus the
    // trimmer's rare sweep: at most 1.2 a second.
    assert!(per_second <= 1.2, "{per_second} commands/s idle");
}

/// `ack_and_fetch` acks in the same script call as the next claim: every
/// job acked once, in fewer round trips than fetch and ack apart; when
/// nothing is due the acks go at once, alone; a foreign delivery is
/// refused before anything is sent.
#[test]
fn ack_and_fetch_acks_with_the_next_claim() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    for i in 0..40 {
        queue
            .schedule_in(&format!("a{i}"), MS * (5 + i), b"")
            .unwrap();
    }
    let consumer = queue.consumer().unwrap();
    let mut jobs = consumer.fetch(5, Duration::from_secs(5)).unwrap();
    let mut got = jobs.len();
    let before = queue.metrics().round_trips;
    while got < 40 {
        let (acked, next) = consumer
            .ack_and_fetch(&jobs, 5, Duration::from_secs(5))
            .unwrap();
        assert_eq!(acked.len(), jobs.len());
        assert!(acked.iter().all(|a| *a == Acked::Acked), "{acked:?}");
        got += next.len();
        jobs = next;
    }
    let trips = queue.metrics().round_trips - before;
    // The last batch: nothing is due any more, so its acks go alone while
    // the fetch waits (3 s: a loaded machine may start the thread late).
    let started = Instant::now();
    let waiter = std::thread::spawn({
        let last = jobs.clone();
        move || {
            consumer
                .ack_and_fetch(&last, 5, Duration::from_secs(3))
                .unwrap()
        }
    });
    let mut settled = false;
    while started.elapsed() < Duration::from_millis(2500) {
        if queue.len().unwrap() == (0, 0) {
            settled = true;
            break;
        }
        std::thread::sleep(5 * MS);
    }
    let (acked, next) = waiter.join().unwrap();
    assert!(settled, "the last acks waited for a claim");
    assert!(acked.iter().all(|a| *a == Acked::Acked));
    assert!(next.is_empty());
    let m = queue.metrics();
    assert_eq!((m.acked, m.delivered), (40, 40), "{m:?}");
    // Fetching and acking apart costs a claim and an ack per batch: here
    // the acks rode in the claims.
    assert!(
        trips <= m.claims,
        "{trips} round trips for {} claims",
        m.claims
    );
    let other = Queue::connect(&server.url(), "other").unwrap();
    other.schedule_in("x", MS, b"").unwrap();
    let theirs = other
        .consumer()
        .unwrap()
        .fetch(1, Duration::from_secs(5))
        .unwrap();
    let mine = queue.consumer().unwrap();
    assert!(matches!(
        mine.ack_and_fetch(&theirs, 1, MS),
        Err(QueueError::WrongQueue)
    ));
}

/// An ack that rides in a claim which also finds that job's lease run out
/// acks it and does not deliver it again; the same delivery acked twice
/// in one call answers `Acked` twice and counts once; and a stale
/// delivery's ack in that call changes nothing.
#[test]
fn an_ack_in_a_claim_wins_over_its_own_expired_lease() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    // A lease of a second: a loaded machine's stalls do not end one early
    // by accident; the sleeps outlast it on purpose.
    let lease = 1000 * MS;
    let queue = builder(&server).lease(lease).connect().unwrap();
    queue.schedule_in("late", MS, b"body").unwrap();
    queue.schedule_in("twice", MS, b"").unwrap();
    let consumer = queue.consumer().unwrap();
    // The two fall due a moment apart: one fetch may find only the first.
    let mut jobs = Vec::new();
    while jobs.len() < 2 {
        let got = consumer.fetch(2, Duration::from_secs(5)).unwrap();
        assert!(!got.is_empty(), "a due job was not delivered");
        jobs.extend(got);
    }
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(jobs.len(), 2);
    // Both leases run out: both jobs are due again.
    std::thread::sleep(lease + 200 * MS);
    let (acked, next) = consumer
        .ack_and_fetch(
            &[jobs[0].clone(), jobs[1].clone(), jobs[1].clone()],
            5,
            300 * MS,
        )
        .unwrap();
    assert_eq!(acked, [Acked::Acked, Acked::Acked, Acked::Acked]);
    assert!(next.is_empty(), "an acked job came again: {next:?}");
    assert_eq!(queue.len().unwrap(), (0, 0));
    let m = queue.metrics();
    assert_eq!((m.acked, m.delivered), (2, 2), "{m:?}");
    assert_eq!(queue.cancel("late").unwrap(), Cancelled::Delivered);
    // Acked again: the same answer, counted once.
    assert_eq!(consumer.ack(&jobs[0]).unwrap(), Acked::Acked);
    assert_eq!(queue.metrics().acked, 2);
    // A stale delivery's ack riding in a claim changes nothing.
    queue.schedule_in("next", MS, b"").unwrap();
    let held = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    std::thread::sleep(lease + 200 * MS);
    let other = queue.consumer().unwrap();
    let again = other.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((again.id.as_str(), again.attempt), ("next", 2));
    queue.schedule_in("more", MS, b"").unwrap();
    std::thread::sleep(20 * MS);
    let (stale, more) = consumer
        .ack_and_fetch(&[held], 5, Duration::from_secs(5))
        .unwrap();
    assert_eq!(stale, [Acked::LeaseLost]);
    assert_eq!(more.len(), 1);
    assert_eq!(more[0].id, "more");
    assert_eq!(other.ack(&again).unwrap(), Acked::Acked);
}
