//! An operator's audit of the queue's surface: connecting to a Redis
//! Cluster, partitions, and the calls that inspect and repair a queue.

use core::time::Duration;

use tickwheel::redis::{Queue, QueueError};

use crate::redis_cluster::RedisCluster;

fn seeds(cluster: &RedisCluster) -> Vec<String> {
    cluster.urls()
}

/// Readies `cluster` to lose one master: it serves what it can without
/// full coverage, and a queue of 8 partitions is named so that its own
/// keys (its partition count) live on another master than its partition
/// 0, whose master alone is made to serve `dead` partitions. Answers the
/// queue's name, that master's index and those partitions.
fn one_shard_to_lose(cluster: &RedisCluster) -> (String, usize, Vec<u16>) {
    for node in &cluster.nodes {
        node.command(&["CONFIG", "SET", "cluster-require-full-coverage", "no"]);
    }
    let name = (0..)
        .map(|i| format!("orders{i}"))
        .find(|name| {
            let home = cluster.slot_of(&format!("tw:{{{name}}}:partitions"));
            cluster.master_of(home) != cluster.master_of(cluster.partition_slot(name, 0, 8))
        })
        .unwrap();
    let (victim, dead) = cluster.pin_master_of_partition_0(&name, 8);
    (name, victim, dead)
}

/// A cluster one master of which may evict keys is refused, whichever
/// node the client happens to ask: the queue's partitions may live on
/// that master. The policy was read from one node at random, so most
/// connects went through.
#[test]
fn a_cluster_with_one_evicting_node_is_refused_every_time() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    // A master other than the one that holds the queue's own keys
    // (`orders` is in slot 105).
    let home = cluster.master_of(105).expect("a master for slot 105");
    let other = [0, 5_000, 10_000, 16_383]
        .into_iter()
        .filter_map(|slot| cluster.master_of(slot))
        .find(|&m| m != home)
        .expect("another master");
    let evicting = &cluster.nodes[other];
    evicting.command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let urls = seeds(&cluster);
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    for attempt in 0..12 {
        let err = Queue::cluster_builder(&seeds, "orders")
            .connect()
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(&err, QueueError::EvictingServer(policy) if policy == "allkeys-lru"),
            "attempt {attempt}: {err:?}"
        );
    }
    let queue = Queue::cluster_builder(&seeds, "orders")
        .allow_eviction(true)
        .connect()
        .unwrap();
    assert_eq!(queue.eviction_policy(), Some("allkeys-lru"));
}

/// Seeds of one cluster given partly as `redis://` and partly as
/// `rediss://` are a clear error at once, as Sentinel's are: the cluster
/// client has one TLS mode, and the queue used TLS for every node if any
/// seed asked for it, so a plain cluster answered a TLS handshake and the
/// connect retried for the whole window before giving up as unavailable.
#[test]
fn cluster_seeds_mixing_tls_and_plain_are_refused_at_once() {
    let err = Queue::cluster_builder(&["redis://127.0.0.1:1", "rediss://127.0.0.1:2"], "q")
        .retry(Duration::from_millis(300), Duration::from_millis(100))
        .connect()
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&err, QueueError::Connect(why) if why.contains("rediss://")),
        "{err:?}"
    );
}

/// `watch` whose reader goes away (`watch --json | head -1`, a `jq` that
/// quits) ends: the tool ignored the closed pipe's write errors and went
/// on polling Redis every refresh, for ever, with no one reading.
#[test]
fn watch_ends_when_its_reader_goes_away() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let Some(server) = crate::redis_server::RedisServer::start_or_skip() else {
        return;
    };
    let queue = crate::queues::builder(&server).connect().unwrap();
    queue.schedule_in("w", Duration::ZERO, b"x").unwrap();
    let target = crate::admin_tool::queue_args(&server);
    let mut child = Command::new(crate::admin_tool::BIN)
        .args(&target)
        .args(["--json", "watch", "--every", "20ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    reader.read_line(&mut first).unwrap();
    assert!(first.contains("\"watch\""), "{first}");
    drop(reader);
    // It runs until it writes its next frames into the closed pipe.
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > give_up {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("watch still ran 20 s after its reader went away");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

/// `Queue::builder` pointed at one node of a Redis Cluster that does not
/// hold the queue's slot (a careless URL: `cluster_builder` was meant) is
/// a clear error at once: the node's `MOVED` answers were retried as if
/// the server were down, for the whole retry window, and then reported as
/// "redis unavailable".
#[test]
fn a_cluster_node_reached_as_a_single_server_is_a_clear_error() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let home = cluster.master_of(105).expect("a master for slot 105");
    let other = [0, 5_000, 10_000, 16_383]
        .into_iter()
        .filter_map(|slot| cluster.master_of(slot))
        .find(|&m| m != home)
        .expect("another master");
    let err = Queue::builder(&cluster.nodes[other].url(), "orders")
        .retry(Duration::from_secs(2), Duration::from_secs(1))
        .connect()
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&err, QueueError::Connect(why) if why.contains("cluster_builder")),
        "{err:?}"
    );
}

/// The admin tool opens a queue on a server whose eviction policy may
/// lose its keys: that is when an operator most needs to look in and drain
/// it. It refused with "allow it explicitly", and it has no way to allow
/// it. It now says so on stderr and goes on.
#[test]
fn the_admin_tool_opens_a_queue_on_an_evicting_server_and_warns() {
    use crate::redis_server::{Config, RedisServer};
    let Some(server) =
        RedisServer::start_with_or_skip(Config::new().config("maxmemory-policy", "allkeys-lru"))
    else {
        return;
    };
    let queue = crate::queues::builder(&server)
        .allow_eviction(true)
        .connect()
        .unwrap();
    queue
        .schedule_in("w", Duration::from_secs(60), b"x")
        .unwrap();
    let target = crate::admin_tool::queue_args(&server);
    let stats = crate::admin_tool::run(&crate::admin_tool::strs(&target), &["stats"]);
    assert_eq!(stats.code, 0, "{}", stats.stderr);
    assert_eq!(stats.one("stats")["live"], 1);
    assert!(stats.stderr.contains("allkeys-lru"), "{}", stats.stderr);
}

/// While one shard of a cluster is down with no replica to take over, a
/// new handle of a partitioned queue (a consumer restarted, or one more
/// started) connects and serves the healthy partitions, as the handles
/// already open do. Connect checked every partition's tag for a clashing
/// queue, one call per partition, so the dead shard's partitions failed
/// it for the retry window and the process could not start at all.
#[test]
fn a_new_handle_connects_while_one_shard_is_down() {
    use crate::queues::{id_in, partition_of};
    let Some(mut cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let (name, victim, dead) = one_shard_to_lose(&cluster);
    let urls = seeds(&cluster);
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let builder = || {
        Queue::cluster_builder(&seeds, &name)
            .retry(Duration::from_secs(1), Duration::from_millis(500))
    };
    drop(builder().partitions(8).connect().unwrap());
    cluster.nodes[victim].kill9();
    let queue = builder().connect().expect("connect while a shard is down");
    let healthy = (0..8u64).find(|k| !dead.contains(&(*k as u16))).unwrap();
    let id = id_in("ok", healthy, 8);
    assert_eq!(partition_of(&id, 8), healthy);
    queue.schedule_in(&id, Duration::ZERO, b"x").unwrap();
    let consumer = queue.consumer().unwrap();
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.is_empty() && std::time::Instant::now() < give_up {
        got = consumer
            .fetch(1, Duration::from_secs(2))
            .unwrap_or_default();
    }
    assert_eq!(got.len(), 1, "the healthy partition's job never came");
    assert_eq!(got[0].id, id);
}

/// Partitioning a queue whose partition a queue of that name already uses
/// stays refused however often it is tried: the check runs before the
/// count is stored, so a refused connect leaves none behind to pass the
/// next one.
#[test]
fn a_refused_partitioning_stays_refused() {
    let Some(server) = crate::redis_server::RedisServer::start_or_skip() else {
        return;
    };
    // Partition 3's tag, from the keys of `orders` in database 0.
    let orders = Queue::builder(&server.url(), "orders")
        .partitions(8)
        .connect()
        .unwrap();
    let id = crate::queues::id_in("j", 3, 8);
    orders
        .schedule_in(&id, Duration::from_secs(60), b"")
        .unwrap();
    let keys = server.command(&["KEYS", "tw:{orders:*}:jobs"]);
    let tag = keys
        .lines()
        .find_map(|l| l.strip_prefix("tw:{")?.strip_suffix("}:jobs"))
        .expect("partition 3's jobs key")
        .to_owned();
    // In database 1 a queue of that name comes first.
    let db1 = format!("{}/1", server.url().trim_end_matches('/'));
    drop(Queue::connect(&db1, &tag).unwrap());
    for attempt in 0..2 {
        match Queue::builder(&db1, "orders").partitions(8).connect() {
            Err(QueueError::Connect(why)) => assert!(why.contains(&tag), "{attempt}: {why}"),
            other => panic!("attempt {attempt}: {:?}", other.map(|_| ())),
        }
    }
}

/// Dead letters purged through a handle are forgotten after the
/// retention, as every ended job is: the purge ends them (as a cancel
/// would) but did not wake the handle's retention trimmer, which slept
/// on, with nothing ended before, for its longest gap (5 min), so a
/// purged id stayed known ("exists") for minutes past a 200 ms retention.
#[test]
fn purged_dead_letters_are_forgotten_after_the_retention() {
    let Some(server) = crate::redis_server::RedisServer::start_or_skip() else {
        return;
    };
    let q = crate::queues::builder(&server)
        .max_attempts(1)
        .retention(Duration::from_millis(200))
        .connect()
        .unwrap();
    q.schedule_in("dies", Duration::ZERO, b"x").unwrap();
    let consumer = q.consumer().unwrap();
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    consumer.nack(&job, Duration::ZERO).unwrap();
    assert_eq!(q.purge_dead(10).unwrap(), 1);
    wait_until_forgotten(&q, "dies", "a purged id");
}

/// Waits until `q` no longer knows `id` (`what`), for at most 20 s: a
/// hundred times the tests' 200 ms retention.
fn wait_until_forgotten(q: &Queue, id: &str, what: &str) {
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    while q.job(id).unwrap().is_some() {
        assert!(
            std::time::Instant::now() < give_up,
            "{what} outlived its 200 ms retention by 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A missed job the misfire policy discards ends, and its id is forgotten
/// after the retention like any ended job's: the claim that discarded it
/// did not wake the retention trimmer, which slept, nothing ended before,
/// for its longest gap (5 min).
#[test]
fn discarded_jobs_are_forgotten_after_the_retention() {
    use tickwheel::persist::{MisfirePolicy, OnMissed};
    let Some(server) = crate::redis_server::RedisServer::start_or_skip() else {
        return;
    };
    let policy = MisfirePolicy::<()>::default()
        .threshold(Duration::from_millis(1))
        .on_missed(OnMissed::Discard);
    let q = crate::queues::builder(&server)
        .misfire(&policy)
        .unwrap()
        .retention(Duration::from_millis(200))
        .connect()
        .unwrap();
    let past = std::time::SystemTime::now() - Duration::from_secs(60);
    q.schedule("missed", past, b"x").unwrap();
    let consumer = q.consumer().unwrap();
    assert!(consumer
        .fetch(1, Duration::from_millis(300))
        .unwrap()
        .is_empty());
    assert_eq!(q.metrics().discarded, 1);
    wait_until_forgotten(&q, "missed", "a discarded id");
}

/// A consumer started while one shard is down gets the wake-up hints of
/// the healthy partitions: its sharded subscription failed as a whole
/// when one shard's channel could not be subscribed, so it had none, and
/// each job of a healthy partition waited for a poll (here 60 s apart;
/// they came about 30 s late).
#[test]
fn a_consumer_started_during_an_outage_is_woken_by_hints() {
    use crate::queues::id_in;
    let Some(mut cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    let (name, victim, dead) = one_shard_to_lose(&cluster);
    let urls = seeds(&cluster);
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let q = Queue::cluster_builder(&seeds, &name)
        .partitions(8)
        .retry(Duration::from_secs(1), Duration::from_millis(500))
        .poll_interval(Duration::from_secs(60))
        .connect()
        .unwrap();
    let slot = cluster.partition_slot(&name, 0, 8);
    cluster.nodes[victim].kill9();
    // Once the cluster marks the shard failed, a new process starts.
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    while cluster.master_of(slot).is_some() {
        assert!(std::time::Instant::now() < give_up, "never marked failed");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(q);
    let q = Queue::cluster_builder(&seeds, &name)
        .retry(Duration::from_secs(1), Duration::from_millis(500))
        .poll_interval(Duration::from_secs(60))
        .connect()
        .unwrap();
    let consumer = q.consumer().unwrap();
    let healthy = (0..8u64).find(|k| !dead.contains(&(*k as u16))).unwrap();
    // The first fetch's round waits out the dead shard's partitions once.
    assert!(consumer
        .fetch(1, Duration::from_secs(3))
        .unwrap()
        .is_empty());
    for i in 0..3 {
        let id = id_in(&format!("h{i}"), healthy, 8);
        q.schedule_in(&id, Duration::from_millis(100), b"x")
            .unwrap();
        let got = consumer.fetch(1, Duration::from_secs(10)).unwrap();
        assert_eq!(got.len(), 1, "job {i} waited 10 s for a poll 60 s apart");
        consumer.ack(&got[0]).unwrap();
    }
}
