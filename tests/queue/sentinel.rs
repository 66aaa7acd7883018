//! A queue behind Redis Sentinel, on real processes
//! (`tests/support/redis_sentinel.rs`): a master with a password, its
//! replica, and one sentinel (with a password of its own) watching them.
//! The queue finds the master by its name in Sentinel and, when the
//! master is SIGKILLed or frozen, follows the failover to the promoted
//! replica without losing a job.

use alloc::collections::BTreeMap;
use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Acked, Queue, QueueError, Scheduled};

use crate::redis_sentinel::{wait_until, Watched, MASTER, PASSWORD};

const MS: Duration = Duration::from_millis(1);

/// How the master fails.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// SIGKILL: it is gone.
    Kill,
    /// SIGSTOP past Sentinel's down-after time, then SIGCONT: it comes
    /// back believing it is the master until Sentinel demotes it, and a
    /// connection to it then answers `READONLY`.
    Freeze,
}

#[test]
fn a_queue_finds_its_master_by_name_and_follows_a_failover() {
    follows_a_failover(Fault::Kill, false);
}

#[test]
fn a_queue_leaves_a_frozen_master_that_comes_back_as_a_replica() {
    follows_a_failover(Fault::Freeze, false);
}

/// TLS to the sentinel, the master and the promoted replica, with a
/// private CA: the same failover.
#[test]
fn tls_to_the_sentinel_and_the_masters_through_a_failover() {
    follows_a_failover(Fault::Kill, true);
}

fn follows_a_failover(fault: Fault, tls: bool) {
    let Some(mut watched) = Watched::start_with(tls) else {
        return;
    };
    // Schedules confirmed by the replica survive the master's death.
    let confirmed = watched
        .builder()
        .replicas(1, Duration::from_millis(500))
        .connect()
        .unwrap();
    let queue = watched
        .builder()
        .retry(Duration::from_secs(30), Duration::from_secs(2))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    let mut scheduled = BTreeMap::new();
    for i in 0..50 {
        let id = format!("before-{i}");
        let answer = confirmed.schedule_in(&id, 3_000 * MS, b"old").unwrap();
        assert!(matches!(answer, Scheduled::Created { .. }), "{answer:?}");
        scheduled.insert(id, 0);
    }
    // The master's database 2 holds them (on the replica too).
    assert_eq!(
        watched
            .replica
            .command(&["EXISTS", "tw:{orders}:jobs"])
            .trim_end(),
        ":0",
        "not in database 0"
    );
    assert_eq!(watched.master_port(), watched.first_master_port());

    let failed = Instant::now();
    if fault == Fault::Kill {
        watched.master.kill9();
    } else {
        // Frozen while the queue is idle, so it still holds a connection
        // to the old master when that one comes back a replica.
        watched.master.stop_signal();
        let new_master = watched.replica_port();
        wait_until("Sentinel promotes the replica", || {
            watched.master_port() == new_master
        });
        watched.master.cont_signal();
        wait_until("Sentinel demotes the old master", || {
            watched.master.command(&["ROLE"]).contains("slave")
        });
    }
    // Calls made during the failover wait for the new master; after it,
    // a write on the old master's connection meets READONLY and moves on.
    for i in 0..50 {
        let id = format!("after-{i}");
        let answer = queue.schedule_in(&id, 200 * MS, b"new").unwrap();
        assert!(matches!(answer, Scheduled::Created { .. }), "{answer:?}");
        scheduled.insert(id, 0);
    }
    assert_eq!(watched.master_port(), watched.replica_port(), "no failover");
    assert!(watched.replica.command(&["ROLE"]).contains("master"));
    eprintln!(
        "{fault:?} (TLS {tls}): failover followed after {:?}",
        failed.elapsed()
    );

    let deadline = Instant::now() + Duration::from_secs(20);
    while scheduled.values().any(|&n| n == 0) && Instant::now() < deadline {
        for job in consumer.fetch(100, Duration::from_millis(500)).unwrap() {
            assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
            *scheduled.get_mut(&job.id).expect("a job nobody scheduled") += 1;
        }
    }
    let missing: Vec<&String> = scheduled
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(id, _)| id)
        .collect();
    assert!(missing.is_empty(), "lost in the failover: {missing:?}");
    assert!(scheduled.values().all(|&n| n == 1), "{scheduled:?}");
    assert_eq!(queue.len().unwrap(), (0, 0));
}

#[test]
fn unknown_names_and_wrong_passwords_are_clear_errors() {
    let Some(watched) = Watched::start() else {
        return;
    };
    let sentinels = [watched.sentinel_url()];
    let sentinels: Vec<&str> = sentinels.iter().map(String::as_str).collect();
    let started = Instant::now();
    let err = Queue::sentinel_builder(&sentinels, "redis://:s3cret@no-such-master/0", "orders")
        .retry(Duration::from_secs(2), Duration::from_secs(1))
        .connect()
        .unwrap_err();
    assert!(
        matches!(&err, QueueError::Connect(m) | QueueError::Unavailable(m) if m.contains("not found")),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A wrong password for the master is refused at once.
    let started = Instant::now();
    let err = Queue::sentinel_builder(&sentinels, &format!("redis://:wrong@{MASTER}/0"), "orders")
        .retry(Duration::from_secs(5), Duration::from_secs(1))
        .connect()
        .unwrap_err();
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // So is a wrong password for the sentinels, and it never shows.
    let started = Instant::now();
    let wrong = format!("redis://:hunter2@127.0.0.1:{}", watched.sentinel.port());
    let err = Queue::sentinel_builder(
        &[&wrong],
        &format!("redis://:{PASSWORD}@{MASTER}/0"),
        "orders",
    )
    .retry(Duration::from_secs(5), Duration::from_secs(1))
    .connect()
    .unwrap_err();
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// The admin tool reaches the same queue through the sentinels.
#[test]
fn the_admin_tool_finds_the_queue_through_sentinel() {
    let Some(watched) = Watched::start() else {
        return;
    };
    let (sentinel, master_url) = (watched.sentinel_url(), watched.master_url());
    let queue = watched.builder().connect().unwrap();
    for i in 0..3 {
        queue
            .schedule_in(&format!("s{i}"), Duration::from_secs(60), b"x")
            .unwrap();
    }
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tickwheel-admin"))
        .args(["--sentinel", &sentinel, "--url", &master_url])
        .args(["--queue", "orders", "--json", "stats"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("\"live\":3"), "{stdout}");
}

/// The master Sentinel promotes is checked as the first one was: its
/// replica may evict keys (`allkeys-lru`), so after a failover a queue
/// that does not allow eviction refuses to write there
/// (`EvictingServer`), and one that allows it follows and counts the dial.
/// Only the first master's policy was read: both wrote to the evicting
/// one, and `Metrics::dials` stayed where it was.
#[test]
fn a_promoted_master_that_may_evict_is_checked_as_the_first_was() {
    let Some(mut watched) = Watched::start() else {
        return;
    };
    let set = watched
        .replica
        .command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    assert_eq!(set.trim_end(), "+OK");
    let strict = watched
        .builder()
        .retry(Duration::from_secs(20), Duration::from_secs(1))
        .connect()
        .unwrap();
    assert_eq!(strict.eviction_policy(), Some("noeviction"));
    let allowed = watched
        .builder()
        .allow_eviction(true)
        .retry(Duration::from_secs(30), Duration::from_secs(2))
        .connect()
        .unwrap();
    strict.schedule_in("before", 3_600_000 * MS, b"").unwrap();
    let dials = allowed.metrics().dials;

    watched.master.kill9();
    let answer = allowed.schedule_in("allowed", 3_600_000 * MS, b"");
    assert!(
        matches!(answer, Ok(Scheduled::Created { .. })),
        "{answer:?}"
    );
    assert_eq!(watched.master_port(), watched.replica_port(), "no failover");
    assert!(allowed.metrics().dials > dials, "the new master's dial");

    let refused = strict.schedule_in("strict", 3_600_000 * MS, b"");
    assert!(
        matches!(&refused, Err(QueueError::EvictingServer(p)) if p == "allkeys-lru"),
        "{refused:?}"
    );
    assert_eq!(allowed.job("strict").unwrap(), None, "written anyway");
    assert!(allowed.job("before").unwrap().is_some());
}
