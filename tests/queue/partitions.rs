//! A queue of several partitions (`QueueBuilder::partitions`), each test on
//! its own real `redis-server`: jobs spread over the partitions' keys,
//! every job delivered once and never early, calls by id find their job's
//! partition, listings and dead letters cover every partition, a hint wakes
//! a consumer for the right partition, and a queue's partition count
//! cannot change. (`tests/queue/cluster.rs` spreads partitions over a
//! cluster's masters.)

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Acked, Cancelled, Cursor, Nacked, Queue, QueueError, Scheduled};

use crate::queues;
use crate::redis_server;
use queues::{builder, partition_of, take, MS};
use redis_server::RedisServer;

fn partitioned(server: &RedisServer, n: u16) -> Queue {
    builder(server).partitions(n).connect().unwrap()
}

/// The keys of every partition of "orders" that end in `suffix` and exist
/// (`KEYS tw:{orders:*}:<suffix>`: a partition's tag is `orders:k`, or
/// `orders:k.s` where a salt spreads it over the slots).
fn partition_keys(server: &RedisServer, suffix: &str) -> Vec<String> {
    let reply = server.command(&["KEYS", &format!("tw:{{orders:*}}:{suffix}")]);
    reply
        .lines()
        .filter(|line| line.starts_with("tw:"))
        .map(String::from)
        .collect()
}

/// An integer reply (`:n`), raw RESP.
fn zcard(server: &RedisServer, key: &str) -> u64 {
    let reply = server.command(&["ZCARD", key]);
    reply.trim().trim_start_matches(':').parse().unwrap()
}

/// 2,000 jobs due over 1.5 s on 8 partitions, two consumers: the jobs
/// spread over every partition's keys (none in the one-partition layout),
/// and every job comes once, none before its due time.
#[test]
fn eight_partitions_deliver_every_job_once_and_never_early() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = partitioned(&server, 8);
    let ids: Vec<String> = (0..2_000).map(|i| format!("order-{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                id.as_str(),
                MS * (200 + (i as u32 * 7) % 1_500),
                id.as_bytes(),
            )
        })
        .collect();
    let answers = q.schedule_many(&jobs).unwrap();
    let dues: HashMap<String, SystemTime> = ids
        .iter()
        .zip(&answers)
        .map(|(id, answer)| match answer {
            Scheduled::Created { due } => (id.clone(), *due),
            other => panic!("{id}: {other:?}"),
        })
        .collect();
    let keys = partition_keys(&server, "due");
    assert_eq!(keys.len(), 8, "{keys:?}");
    let per_part: Vec<u64> = keys.iter().map(|key| zcard(&server, key)).collect();
    assert_eq!(per_part.iter().sum::<u64>(), 2_000, "{per_part:?}");
    assert!(
        per_part.iter().all(|&n| (150..=350).contains(&n)),
        "{per_part:?}"
    );
    assert_eq!(zcard(&server, "tw:{orders}:due"), 0);
    assert_eq!(q.len().unwrap(), (2_000, 0));

    let got = Arc::new(Mutex::new(Vec::new()));
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (consumer, got) = (q.consumer().unwrap(), Arc::clone(&got));
            std::thread::spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(20);
                while got.lock().unwrap().len() < 2_000 && Instant::now() < give_up {
                    for job in consumer.fetch(100, MS * 200).unwrap() {
                        let seen = SystemTime::now();
                        assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
                        got.lock().unwrap().push((job.id.clone(), job.due, seen));
                    }
                }
            })
        })
        .collect();
    for consumer in consumers {
        consumer.join().unwrap();
    }
    let got = got.lock().unwrap();
    let unique: HashSet<&str> = got.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!((got.len(), unique.len()), (2_000, 2_000));
    for (id, due, seen) in got.iter() {
        assert_eq!(*due, dues[id], "{id}: the due time it was scheduled with");
        assert!(
            seen >= due,
            "{id} came {:?} early",
            due.duration_since(*seen)
        );
    }
    assert_eq!(q.len().unwrap(), (0, 0));
}

/// A queue of four partitions whose jobs get one attempt each.
fn four_partitions_one_attempt(server: &RedisServer) -> tickwheel::redis::Queue {
    builder(server)
        .partitions(4)
        .max_attempts(1)
        .connect()
        .unwrap()
}

/// Cancel, reschedule, show, nack to the dead letters, requeue and purge,
/// each for ids that fall in different partitions.
#[test]
fn calls_by_id_find_their_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = four_partitions_one_attempt(&server);
    let ids: Vec<String> = (0..40).map(|i| format!("job-{i}")).collect();
    for id in &ids {
        q.schedule_in(id, Duration::from_secs(3_600), id.as_bytes())
            .unwrap();
    }
    let parts = partition_keys(&server, "due");
    assert_eq!(parts.len(), 4, "40 ids fell in fewer than 4 partitions");
    // By id: each call reaches the job wherever it lives.
    for id in &ids[..10] {
        assert_eq!(
            q.cancel(id).unwrap(),
            Cancelled::Cancelled(id.clone().into_bytes())
        );
        assert_eq!(q.cancel(id).unwrap(), Cancelled::Ended);
    }
    for id in &ids[10..20] {
        assert!(q.reschedule_in(id, MS * 50).unwrap(), "{id}");
        assert!(q.job(id).unwrap().is_some(), "{id}");
    }
    assert_eq!(q.len().unwrap(), (30, 0));
    // The ten rescheduled come, and a nack with one attempt dead-letters
    // each.
    let consumer = q.consumer().unwrap();
    let give_up = Instant::now() + Duration::from_secs(10);
    let mut nacked = 0;
    while nacked < 10 && Instant::now() < give_up {
        for job in consumer.fetch(10, MS * 500).unwrap() {
            assert_eq!(consumer.nack(&job, MS).unwrap(), Nacked::DeadLettered);
            nacked += 1;
        }
    }
    assert_eq!(q.len().unwrap(), (20, 10));
    let dead = q.dead_letters(100).unwrap();
    let dead_ids: HashSet<&str> = dead.iter().map(|d| d.id.as_str()).collect();
    let expected: HashSet<&str> = ids[10..20].iter().map(String::as_str).collect();
    assert_eq!(dead_ids, expected);
    assert!(
        dead.windows(2).all(|w| w[0].at <= w[1].at),
        "not oldest first"
    );
    assert_eq!(q.dead_letters(3).unwrap().len(), 3);
    // Requeue one; purge the other nine, across partitions.
    assert!(q.requeue(&ids[10]).unwrap());
    assert_eq!(q.purge_dead(100).unwrap(), 9);
    assert_eq!(q.len().unwrap(), (21, 0));
    let back = take(&consumer, 1, Duration::from_secs(5));
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].id, ids[10]);
}

/// `purge_dead` removes the oldest dead letters first across partitions
/// (sync and async alike): it once went partition by partition, so with
/// `old-0` (partition 3) dead before `young-2` (partition 0), a purge of
/// one removed `young-2`.
#[test]
fn purge_dead_removes_the_oldest_first_across_partitions() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = four_partitions_one_attempt(&server);
    let consumer = q.consumer().unwrap();
    // Dead in this order, in partitions 3, 0, 2 and 1.
    let ids: Vec<String> = [(3, "old"), (0, "young"), (2, "younger"), (1, "youngest")]
        .iter()
        .map(|&(part, prefix)| queues::id_in(prefix, part, 4))
        .collect();
    for id in &ids {
        q.schedule_in(id, Duration::ZERO, b"").unwrap();
        let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
        assert_eq!(consumer.nack(&job, MS).unwrap(), Nacked::DeadLettered);
        std::thread::sleep(MS * 2);
    }
    let dead = |q: &Queue| -> Vec<String> {
        q.dead_letters(10)
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect()
    };
    assert_eq!(dead(&q), ids);
    assert_eq!(q.purge_dead(1).unwrap(), 1);
    assert_eq!(dead(&q), ids[1..], "the oldest went first");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let purged = runtime.block_on(q.to_async().purge_dead(2)).unwrap();
    assert_eq!(purged, 2);
    assert_eq!(dead(&q), ids[3..], "the oldest went first (async)");
}

/// 300 jobs over 4 partitions, listed in pages of 37: each once; the
/// pages go partition after partition, in due order within each, and
/// cursors of later partitions print with their partition and parse back.
#[test]
fn a_listing_walks_every_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = partitioned(&server, 4);
    let ids: Vec<String> = (0..300).map(|i| format!("listed-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        q.schedule_in(id, Duration::from_secs(600 + i as u64), b"")
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursors = Vec::new();
    let mut page = q.pending(.., 37, None).unwrap();
    loop {
        assert!(page.jobs.len() <= 37);
        seen.extend(page.jobs.iter().map(|job| (job.id.clone(), job.due)));
        let Some(next) = page.next else { break };
        let text = next.to_string();
        assert_eq!(text.parse::<Cursor>().unwrap(), next);
        cursors.push(text);
        page = q.pending(.., 37, Some(&next)).unwrap();
    }
    let unique: HashSet<&str> = seen.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!((seen.len(), unique.len()), (300, 300));
    assert!(cursors.iter().any(|c| c.starts_with("3:")), "{cursors:?}");
    // Due order within a partition: the due times fall back only where a
    // partition ends, three times at most.
    let falls = seen.windows(2).filter(|w| w[1].1 < w[0].1).count();
    assert!(falls <= 3, "{falls} falls");
}

/// A consumer that polls only every 30 s learns of a job scheduled while
/// it waits through the hint of that job's partition, and takes it on
/// time.
#[test]
fn a_hint_wakes_a_consumer_for_its_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server)
        .partitions(8)
        .poll_interval(Duration::from_secs(30))
        .connect()
        .unwrap();
    let consumer = q.consumer().unwrap();
    // The first fetch learns every partition is empty.
    assert!(consumer.fetch(1, MS * 100).unwrap().is_empty());
    let waiter = std::thread::spawn(move || {
        let jobs = consumer.fetch(1, Duration::from_secs(10)).unwrap();
        (jobs, SystemTime::now())
    });
    std::thread::sleep(MS * 200);
    let Scheduled::Created { due } = q.schedule_in("late-7", MS * 300, b"x").unwrap() else {
        panic!("late-7 existed");
    };
    let (jobs, seen) = waiter.join().unwrap();
    assert_eq!(jobs.len(), 1, "the hint did not wake the consumer");
    assert!(seen >= due);
    let late = seen.duration_since(due).unwrap();
    assert!(late < Duration::from_secs(2), "came {late:?} late");
}

/// The first connect stores the count; another count is refused, a
/// builder that names none takes it, and a partitioned builder is refused
/// on a queue that already holds jobs in the one-partition layout.
#[test]
fn a_queue_keeps_its_partition_count() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let four = partitioned(&server, 4);
    four.schedule_in("a", Duration::from_secs(60), b"").unwrap();
    assert_eq!(
        server.command(&["GET", "tw:{orders}:partitions"]),
        "$1\r\n4\r\n"
    );
    let refused = builder(&server).partitions(2).connect().unwrap_err();
    assert!(
        matches!(&refused, QueueError::Connect(why) if why.contains("4 partition")),
        "{refused}"
    );
    assert!(builder(&server).partitions(1).connect().is_err());
    assert!(builder(&server).partitions(4).connect().is_ok());
    // A builder that does not say takes the queue's count: it finds "a".
    let any = builder(&server).connect().unwrap();
    assert_eq!(any.len().unwrap(), (1, 0));
    assert_eq!(any.cancel("a").unwrap(), Cancelled::Cancelled(Vec::new()));

    // A queue made before counts were stored: jobs, no count.
    let old = Queue::builder(&server.url(), "legacy").connect().unwrap();
    old.schedule_in("b", Duration::from_secs(60), b"").unwrap();
    server.command(&["DEL", "tw:{legacy}:partitions"]);
    let refused = Queue::builder(&server.url(), "legacy")
        .partitions(3)
        .connect()
        .unwrap_err();
    assert!(matches!(refused, QueueError::Connect(_)), "{refused}");
    assert!(Queue::builder(&server.url(), "legacy").connect().is_ok());
    assert!(builder(&server).partitions(0).connect().is_err());
    assert!(builder(&server).partitions(1025).connect().is_err());
}

/// Each partition has its own retention trimmer: 1,000 cancelled ids over
/// 4 partitions under a 300 ms retention are gone from every partition
/// 3 s later, with no claim running.
#[test]
fn retention_holds_in_every_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server)
        .partitions(4)
        .retention(MS * 300)
        .connect()
        .unwrap();
    let ids: Vec<String> = (0..1_000).map(|i| format!("o{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), Duration::from_secs(600), &b"order"[..]))
        .collect();
    q.schedule_many(&jobs).unwrap();
    for id in &ids {
        assert!(matches!(q.cancel(id).unwrap(), Cancelled::Cancelled(_)));
    }
    std::thread::sleep(Duration::from_secs(3));
    // Every partition's records went (a hash with none is no key).
    assert_eq!(partition_keys(&server, "jobs"), Vec::<String>::new());
    assert_eq!(q.metrics().trimmed, 1_000);
}

/// Without hints, a job in a quiet partition is found by that
/// partition's poll, even while a backlog in another partition keeps every
/// claim busy: a round takes in the partitions due a poll, so the quiet
/// job comes long before the backlog is gone.
#[test]
fn a_busy_partition_does_not_put_off_a_quiet_ones_poll() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server)
        .partitions(2)
        .hints(false)
        .poll_interval(MS * 100)
        .connect()
        .unwrap();
    // A backlog: 4,000 jobs of partition 0, all due at once.
    let busy: Vec<String> = (0..)
        .map(|i| format!("busy-{i}"))
        .filter(|id| partition_of(id, 2) == 0)
        .take(4_000)
        .collect();
    let quiet = (0..)
        .map(|i| format!("quiet-{i}"))
        .find(|id| partition_of(id, 2) == 1)
        .unwrap();
    let jobs: Vec<(&str, Duration, &[u8])> = busy
        .iter()
        .map(|id| (id.as_str(), MS * 100, &b""[..]))
        .collect();
    q.schedule_many(&jobs).unwrap();
    let consumer = q.consumer().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let taker = {
        let order = Arc::clone(&order);
        std::thread::spawn(move || {
            let give_up = Instant::now() + Duration::from_secs(60);
            while order.lock().unwrap().len() < 4_001 && Instant::now() < give_up {
                // Two at a time: the backlog lasts.
                let jobs = consumer.fetch(2, MS * 50).unwrap();
                order
                    .lock()
                    .unwrap()
                    .extend(jobs.iter().map(|job| job.id.clone()));
                consumer.ack_all(&jobs).unwrap();
            }
        })
    };
    // Once the backlog is being taken, the quiet job.
    while order.lock().unwrap().len() < 100 {
        std::thread::sleep(MS);
    }
    q.schedule_in(&quiet, MS * 20, b"").unwrap();
    taker.join().unwrap();
    let order = order.lock().unwrap();
    assert_eq!(order.len(), 4_001);
    let at = order.iter().position(|id| *id == quiet).unwrap();
    assert!(
        at < 3_000,
        "the quiet job came {at}th of 4,001: after the backlog"
    );
}

/// An idle consumer of 8 partitions polls each partition once per poll
/// interval (1 s plus up to a quarter), whatever its threads' timeouts:
/// about 8 / 1.125 commands a second, never more than 8.
#[test]
fn idle_cost_is_one_poll_per_partition_per_interval() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = partitioned(&server, 8);
    let consumer = Arc::new(q.consumer().unwrap());
    let stop = Arc::new(core::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = [5_000, 300, 50]
        .into_iter()
        .map(|timeout_ms| {
            let (consumer, stop) = (Arc::clone(&consumer), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(core::sync::atomic::Ordering::Relaxed) {
                    assert!(consumer.fetch(1, MS * timeout_ms).unwrap().is_empty());
                }
            })
        })
        .collect();
    std::thread::sleep(MS * 1_500);
    let before = server.commands_processed();
    std::thread::sleep(Duration::from_secs(6));
    let per_second = (server.commands_processed() - before - 1) as f64 / 6.0;
    stop.store(true, core::sync::atomic::Ordering::Relaxed);
    consumer.close();
    for thread in threads {
        let _ = thread.join();
    }
    eprintln!("idle, 8 partitions: {per_second:.2} commands/s");
    assert!(
        (5.0..=8.0).contains(&per_second),
        "{per_second} commands/s idle"
    );
}

/// A partition's tag is also a queue name: a queue named like partition 4
/// of a partitioned `orders` shared its keys (it listed and cancelled
/// `orders`' jobs). `connect` refuses such a name when the partitioned
/// queue exists, and refuses partitioning a queue whose partition a queue
/// of that name already uses (here in database 1).
#[test]
fn a_queue_named_like_another_queues_partition_is_refused() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let orders = partitioned(&server, 8);
    for i in 0..64 {
        orders
            .schedule_in(&format!("j{i}"), Duration::from_secs(60), b"secret")
            .unwrap();
    }
    let tags: Vec<String> = partition_keys(&server, "jobs")
        .iter()
        .map(|key| key["tw:{".len()..key.len() - "}:jobs".len()].to_string())
        .collect();
    assert_eq!(tags.len(), 8, "{tags:?}");
    for tag in &tags {
        match Queue::connect(&server.url(), tag) {
            Err(QueueError::Connect(why)) => assert!(why.contains("partition"), "{why}"),
            other => panic!("{tag}: {:?}", other.map(|_| ())),
        }
    }
    assert_eq!(orders.len().unwrap(), (64, 0));
    let db1 = format!("{}/1", server.url().trim_end_matches('/'));
    let alone = Queue::connect(&db1, &tags[3]).unwrap();
    alone
        .schedule_in("mine", Duration::from_secs(60), b"")
        .unwrap();
    match Queue::builder(&db1, "orders").partitions(8).connect() {
        Err(QueueError::Connect(why)) => assert!(why.contains(&tags[3]), "{why}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A name of that shape that is nobody's partition is fine.
    Queue::connect(&server.url(), "orders:99").unwrap();
}
