//! The queue on a real Redis Cluster (3 masters, 3 replicas, made by
//! `redis-cli --cluster create`): jobs flow through the cluster client,
//! and a SIGKILL of the master that holds the queue, followed by its
//! replica's promotion, is carried through by the same producer and
//! consumer with no restart; a queue of 8 partitions spreads over the
//! masters. Every job is counted.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Queue, QueueBuilder, Scheduled};

use crate::redis_cluster;
use redis_cluster::RedisCluster;

const MS: Duration = Duration::from_millis(1);

fn builder(cluster: &RedisCluster) -> QueueBuilder {
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    Queue::cluster_builder(&seeds, "orders")
}

/// What a run saw: ids whose schedule answered `Created`, and each id's
/// deliveries (local clock) with its due time.
#[derive(Default)]
struct Tally {
    answered: Vec<(String, SystemTime)>,
    /// Schedules that failed (Redis unavailable past the retry window).
    failed: usize,
    delivered: HashMap<String, Vec<SystemTime>>,
}

/// Schedules `n` jobs due over `spread` from one producer while one
/// consumer fetches and acks them; `disrupt` runs once `at` into the run.
/// Waits until every answered job came (or 30 s), then stops.
fn run(queue: &Queue, n: usize, spread: Duration, at: Duration, disrupt: impl FnOnce()) -> Tally {
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (consumer, tally, stop) = (
            queue.consumer().unwrap(),
            Arc::clone(&tally),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok(jobs) = consumer.fetch(50, 200 * MS) else {
                    continue;
                };
                let now = SystemTime::now();
                let mut t = tally.lock().unwrap();
                for job in &jobs {
                    t.delivered.entry(job.id.clone()).or_default().push(now);
                }
                drop(t);
                for job in jobs {
                    // A lost ack is a redelivery, counted as such.
                    let _ = consumer.ack(&job);
                }
            }
        })
    };
    let producer = {
        let (queue, tally) = (queue.clone(), Arc::clone(&tally));
        std::thread::spawn(move || {
            let start = SystemTime::now() + 300 * MS;
            let give_up = Instant::now() + spread + Duration::from_secs(20);
            for i in 0..n {
                if Instant::now() > give_up {
                    break;
                }
                let due = start + spread.mul_f64(i as f64 / n as f64);
                let id = format!("j{i}");
                match queue.schedule(&id, due, b"x") {
                    Ok(Scheduled::Created { .. }) => tally.lock().unwrap().answered.push((id, due)),
                    Ok(other) => panic!("{id}: {other:?}"),
                    Err(e) => {
                        eprintln!("{id}: {e}");
                        tally.lock().unwrap().failed += 1;
                    }
                }
                // About the pace of the due times.
                std::thread::sleep(spread / n as u32 / 2);
            }
        })
    };
    std::thread::sleep(at);
    disrupt();
    producer.join().unwrap();
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        {
            let t = tally.lock().unwrap();
            if t.answered
                .iter()
                .all(|(id, _)| t.delivered.contains_key(id))
            {
                break;
            }
        }
        if Instant::now() > give_up {
            break;
        }
        std::thread::sleep(50 * MS);
    }
    stop.store(true, Ordering::Relaxed);
    consumer.join().unwrap();
    Arc::try_unwrap(tally).ok().unwrap().into_inner().unwrap()
}

/// (lost, early, delivered more than once) of a run.
fn count(t: &Tally) -> (Vec<String>, usize, usize) {
    let lost: Vec<String> = t
        .answered
        .iter()
        .filter(|(id, _)| !t.delivered.contains_key(id))
        .map(|(id, _)| id.clone())
        .collect();
    let due: HashMap<&str, SystemTime> =
        t.answered.iter().map(|(id, d)| (id.as_str(), *d)).collect();
    let early = t
        .delivered
        .iter()
        .filter(|(id, at)| {
            due.get(id.as_str())
                .is_some_and(|d| at.iter().any(|a| a < d))
        })
        .count();
    let again = t.delivered.values().filter(|at| at.len() > 1).count();
    (lost, early, again)
}

/// Jobs flow through a six-node cluster: each delivered once, none early.
#[test]
fn jobs_flow_through_a_cluster() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let queue = builder(&cluster).connect().unwrap();
    let t = run(&queue, 500, Duration::from_secs(1), 100 * MS, || {});
    let (lost, early, again) = count(&t);
    assert_eq!(t.answered.len(), 500);
    assert!(lost.is_empty(), "lost {lost:?}");
    assert_eq!((early, again), (0, 0));
}

/// A queue of 8 partitions on the cluster: every master holds at least two
/// of them (the hash tags are spread evenly over the slots), and jobs flow
/// through all of them: each delivered once, none early.
#[test]
fn eight_partitions_spread_over_the_masters() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let queue = builder(&cluster).partitions(8).connect().unwrap();
    for i in 0..200 {
        queue
            .schedule_in(&format!("spread-{i}"), Duration::from_secs(600), b"")
            .unwrap();
    }
    // Each master holds some partitions: their tags are spaced evenly
    // over the slots, and the masters own a third of them each.
    for master in 0..cluster.nodes.len() {
        let node = &cluster.nodes[master];
        if !node.command(&["ROLE"]).contains("master") {
            continue;
        }
        let keys = node.command(&["KEYS", "tw:{orders:*}:due"]);
        let held = keys.lines().filter(|l| l.starts_with("tw:")).count();
        assert!(held >= 2, "master {master} holds {held} partitions");
    }
    for i in 0..200 {
        queue.cancel(&format!("spread-{i}")).unwrap();
    }
    let queue = builder(&cluster).partitions(8).connect().unwrap();
    let t = run(&queue, 500, Duration::from_secs(1), 100 * MS, || {});
    let (lost, early, again) = count(&t);
    assert_eq!(t.answered.len(), 500);
    assert!(lost.is_empty(), "lost {lost:?}");
    assert_eq!((early, again), (0, 0));
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// The master holding the queue is SIGKILLed mid-stream; the cluster
/// promotes its replica; the same producer and consumer carry on (the
/// cluster client follows the new master). Nothing early; what is lost is
/// what the replica had not received when its master died.
#[test]
fn a_queue_carries_on_through_its_masters_death() {
    failover(0, 1);
}

/// As above with `replicas(1)`: no schedule that answered is lost.
#[test]
fn with_replicas_a_failover_loses_no_answered_job() {
    failover(1, 1);
}

/// As above on a queue of 8 partitions: the master of partition 0 dies,
/// the partitions on other masters carry on, and with `replicas(1)` no
/// schedule that answered is lost.
#[test]
fn with_replicas_a_partitioned_queue_loses_nothing_through_a_failover() {
    failover(1, 8);
}

fn failover(replicas: u32, partitions: u16) {
    let Some(mut cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    // Partition 0 of several lies in the first slots (its tag is spread
    // to them), which the first master owns.
    let slot = if partitions > 1 {
        0
    } else {
        cluster.slot_of("tw:{orders}:due")
    };
    let master = cluster.master_of(slot).expect("a master serves the queue");
    let mut b = builder(&cluster).partitions(partitions);
    if replicas > 0 {
        b = b.replicas(replicas, 500 * MS);
    }
    let queue = b.connect().unwrap();
    let t = {
        let cluster = &mut cluster;
        run(
            &queue,
            2_000,
            Duration::from_secs(4),
            Duration::from_secs(1),
            move || {
                cluster.nodes[master].kill9();
                if replicas > 0 {
                    // The promoted replica has no replica of its own, so no
                    // schedule can be confirmed until the old master comes
                    // back, as its replica.
                    let give_up = Instant::now() + Duration::from_secs(30);
                    while cluster.master_of(slot).map_or(true, |m| m == master) {
                        assert!(Instant::now() < give_up, "no replica took over");
                        std::thread::sleep(50 * MS);
                    }
                    cluster.nodes[master].restart();
                    cluster.wait_synced(Duration::from_secs(30));
                }
            },
        )
    };
    let now = cluster.master_of(slot);
    assert!(
        now.is_some_and(|m| m != master),
        "a replica took over: {now:?}"
    );
    let (lost, early, again) = count(&t);
    eprintln!(
        "failover: {} answered, {} failed, {} lost, {early} early, {again} delivered again",
        t.answered.len(),
        t.failed,
        lost.len()
    );
    assert_eq!(early, 0);
    assert!(
        t.answered.len() > 1_000,
        "only {} schedules answered",
        t.answered.len()
    );
    if replicas > 0 {
        assert!(lost.is_empty(), "{} lost: {lost:?}", lost.len());
    } else {
        assert!(lost.len() < 50, "{} lost: {lost:?}", lost.len());
    }
}

/// The master holding the queue is SIGKILLed while a producer and a
/// consumer are busy, and its replica may not take over
/// (`cluster-replica-no-failover`): no node serves the queue's slot.
/// Their calls fail with `Unavailable` once the retry window closes; none
/// hangs.
#[test]
fn calls_fail_not_hang_when_no_node_serves_the_queue() {
    let Some(mut cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let slot = cluster.slot_of("tw:{orders}:due");
    let master = cluster.master_of(slot).expect("a master serves the queue");
    let queue = builder(&cluster)
        .retry(Duration::from_secs(1), 500 * MS)
        .connect()
        .unwrap();
    let busy = |f: Box<dyn Fn(usize) -> bool + Send>| {
        std::thread::spawn(move || {
            // Until three calls in a row have failed.
            let (mut i, mut failed) = (0, 0);
            while failed < 3 {
                failed = if f(i) { 0 } else { failed + 1 };
                i += 1;
            }
        })
    };
    let q = queue.clone();
    let producer = busy(Box::new(move |i| {
        q.schedule_in(&format!("j{i}"), 50 * MS, b"").is_ok()
    }));
    let consumer = queue.consumer().unwrap();
    let fetcher = busy(Box::new(move |_| consumer.fetch(10, 100 * MS).is_ok()));
    std::thread::sleep(500 * MS);
    let replica = cluster.replica_of(master);
    cluster.nodes[replica].command(&["CONFIG", "SET", "cluster-replica-no-failover", "yes"]);
    cluster.nodes[master].kill9();
    let give_up = Instant::now() + Duration::from_secs(60);
    while !(producer.is_finished() && fetcher.is_finished()) {
        assert!(Instant::now() < give_up, "a call hangs");
        std::thread::sleep(50 * MS);
    }
    let err = queue
        .schedule_in("after", Duration::from_secs(60), b"")
        .unwrap_err();
    assert!(
        matches!(err, tickwheel::redis::QueueError::Unavailable(_)),
        "{err:?}"
    );
}

/// Every channel name each master serves as a shard channel
/// (`PUBSUB SHARDCHANNELS`), and as a plain one (`PUBSUB CHANNELS`).
fn channels(cluster: &RedisCluster) -> (Vec<Vec<String>>, usize) {
    let names = |reply: String| -> Vec<String> {
        reply
            .lines()
            .filter(|l| l.starts_with("tw:"))
            .map(str::to_owned)
            .collect()
    };
    let mut shard = Vec::new();
    let mut plain = 0;
    for node in cluster.nodes.iter().filter(|n| n.has_process()) {
        shard.push(names(node.command(&["PUBSUB", "SHARDCHANNELS"])));
        plain += names(node.command(&["PUBSUB", "CHANNELS"])).len();
    }
    (shard, plain)
}

/// Schedules 80 jobs due 300 ms ahead (all 8 partitions, but for a chance
/// of 2·10⁻⁴) while `consumer` waits, and answers how long the last took
/// to arrive: hints, not the 30 s poll, must bring them.
fn hinted(queue: &Queue, round: usize) -> Duration {
    let consumer = queue.consumer().unwrap();
    assert!(consumer.fetch(1, 100 * MS).unwrap().is_empty());
    let waiter = std::thread::spawn(move || {
        let mut got = 0;
        let give_up = Instant::now() + Duration::from_secs(10);
        while got < 80 && Instant::now() < give_up {
            for job in consumer.fetch(80, Duration::from_secs(1)).unwrap() {
                consumer.ack(&job).unwrap();
                got += 1;
            }
        }
        (got, Instant::now())
    });
    std::thread::sleep(200 * MS);
    let start = Instant::now();
    for i in 0..80 {
        queue
            .schedule_in(&format!("hint-{round}-{i}"), 300 * MS, b"")
            .unwrap();
    }
    let (got, last) = waiter.join().unwrap();
    assert_eq!(got, 80, "round {round}");
    last - start
}

/// On a Redis 7 cluster a queue's wake-ups are shard channels: the
/// masters hold the 8 partitions' channels between them (each where its
/// partition's slot is) and no plain channel; jobs due soon in every
/// partition reach a consumer whose poll is 30 s away. A slot migration
/// moves a partition: its old master drops the subscription
/// (`sunsubscribe`), the consumer subscribes where the slot went, and
/// hints keep coming.
#[test]
fn hints_travel_on_shard_channels_and_follow_a_migration() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let queue = builder(&cluster)
        .partitions(8)
        .poll_interval(Duration::from_secs(30))
        .connect()
        .unwrap();
    let took = hinted(&queue, 0);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let (shard, plain) = channels(&cluster);
    assert_eq!(plain, 0, "no plain channel");
    assert_eq!(shard.iter().map(Vec::len).sum::<usize>(), 8, "{shard:?}");

    // Partition 0 moves to partition 7's master.
    let moved = cluster.partition_slot("orders", 0, 8);
    let from = cluster.master_of(moved).unwrap();
    let to = cluster
        .master_of(cluster.partition_slot("orders", 7, 8))
        .unwrap();
    let on = |node: usize| {
        let reply = cluster.nodes[node].command(&["PUBSUB", "SHARDCHANNELS"]);
        reply.lines().filter(|l| l.starts_with("tw:")).count()
    };
    let (from_had, to_had) = (on(from), on(to));
    cluster.move_slot(moved, from, to);
    let give_up = Instant::now() + Duration::from_secs(10);
    while (on(from), on(to)) != (from_had - 1, to_had + 1) {
        assert!(
            Instant::now() < give_up,
            "the subscription did not follow the slot: {:?}",
            channels(&cluster).0
        );
        std::thread::sleep(50 * MS);
    }
    let took = hinted(&queue, 1);
    assert!(took < Duration::from_secs(3), "took {took:?}");
}
