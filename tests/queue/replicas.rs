//! Schedules that wait for replicas (`QueueBuilder::replicas`), on a real
//! master and a real replica (`replicaof`, through a TCP proxy that can cut
//! the replication stream), each test with its own pair: a schedule that
//! answered is on the replica; one whose replica is frozen (SIGSTOP) fails
//! with `NotReplicated` and the job stays on the master; and with the
//! replica cut off, the master SIGKILLed and the replica promoted, no job
//! whose schedule answered is lost (and without `replicas`, some are).

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::sync::Mutex;
use std::time::Instant;

use tickwheel::redis::{QueueError, Scheduled};

use crate::queues;
use crate::redis_proxy;
use crate::redis_server;
use queues::{builder, MS};
use redis_proxy::LossyProxy;
use redis_server::{Config, RedisServer};

/// A master, a proxy in front of it, and a replica of it through the proxy
/// that has finished its first sync; `None` where there is no
/// `redis-server`.
fn master_and_replica() -> Option<(RedisServer, LossyProxy, RedisServer)> {
    let master = RedisServer::start_or_skip()?;
    let proxy = LossyProxy::start(master.addr());
    let port = proxy
        .url()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let replica =
        RedisServer::start_with(Config::new().config("replicaof", &format!("127.0.0.1 {port}")));
    let give_up = Instant::now() + Duration::from_secs(20);
    while !master
        .command(&["INFO", "replication"])
        .contains("state=online")
    {
        assert!(Instant::now() < give_up, "the replica never came online");
        std::thread::sleep(20 * MS);
    }
    Some((master, proxy, replica))
}

fn has_job(server: &RedisServer, id: &str) -> bool {
    server.command(&["HEXISTS", "tw:{orders}:jobs", id]) == ":1\r\n"
}

/// A schedule that answered is on the replica at that moment: `WAIT` held
/// the answer until the replica had the write.
#[test]
fn an_answered_schedule_is_already_on_the_replica() {
    let Some((master, _proxy, replica)) = master_and_replica() else {
        return;
    };
    let queue = builder(&master)
        .replicas(1, Duration::from_secs(3))
        .retry(Duration::from_secs(10), Duration::from_secs(5))
        .connect()
        .unwrap();
    for i in 0..200 {
        let id = format!("r{i}");
        let s = queue
            .schedule_in(&id, Duration::from_secs(3600), b"x")
            .unwrap();
        assert!(matches!(s, Scheduled::Created { .. }));
        assert!(
            has_job(&replica, &id),
            "{id} answered before the replica had it"
        );
    }
}

/// With its replica frozen, a schedule fails after the timeout with
/// `NotReplicated`; the job is on the master, and the same id scheduled
/// again once the replica is back answers `Exists`. Claims and cancels do
/// not wait: a cancel answers at once while the replica is frozen.
#[test]
fn a_schedule_the_replica_did_not_confirm_says_so() {
    let Some((master, _proxy, replica)) = master_and_replica() else {
        return;
    };
    // The first write waits as long as a busy machine may need: only the
    // frozen replica's timeout is under test.
    let patient = builder(&master)
        .replicas(1, Duration::from_secs(3))
        .retry(Duration::from_secs(10), Duration::from_secs(5))
        .connect()
        .unwrap();
    patient
        .schedule_in("before", Duration::from_secs(3600), b"x")
        .unwrap();
    // A replica wait of 1.5 s (under the 2 s I/O timeout): far above a
    // cancel's round trip even when a loaded machine stalls it.
    let wait = 1500 * MS;
    let queue = builder(&master).replicas(1, wait).connect().unwrap();
    replica.stop_signal();
    let started = Instant::now();
    let err = queue
        .schedule_in("frozen", Duration::from_secs(3600), b"x")
        .unwrap_err();
    assert!(
        matches!(
            err,
            QueueError::NotReplicated {
                confirmed: 0,
                wanted: 1
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() >= wait, "it did not wait for the replica");
    assert!(has_job(&master, "frozen"), "the job is on the master");
    let cancelled = Instant::now();
    queue.cancel("before").unwrap();
    assert!(
        cancelled.elapsed() < wait / 2,
        "a cancel waited for the replica"
    );
    replica.cont_signal();
    let again = queue.schedule_in("frozen", Duration::from_secs(3600), b"x");
    assert_eq!(again.unwrap(), Scheduled::Exists);
}

/// Two producers schedule while the replica is cut off (its replication
/// stream thrown away) and the master is SIGKILLed; then the replica is
/// promoted. Returns how many
/// schedules answered `Created`, and how many of those the new master lacks.
fn failover(replicas: u32) -> Option<(usize, usize)> {
    let (mut master, proxy, replica) = master_and_replica()?;
    let mut b = builder(&master).retry(200 * MS, Duration::from_secs(3));
    if replicas > 0 {
        // Long enough that a busy machine's replica confirms in time.
        b = b.replicas(replicas, Duration::from_secs(1));
    }
    let queue = b.connect().unwrap();
    let answered = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let (queue, answered, stop) = (queue.clone(), Arc::clone(&answered), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("p{p}-{i}");
                    i += 1;
                    match queue.schedule_in(&id, Duration::from_secs(3600), b"x") {
                        Ok(Scheduled::Created { .. }) => answered.lock().unwrap().push(id),
                        Ok(other) => panic!("{id}: {other:?}"),
                        // Not confirmed: not an answer the caller may rely on.
                        Err(QueueError::NotReplicated { .. }) => {}
                        // The master is gone: nothing more answers.
                        Err(_) => break,
                    }
                }
            })
        })
        .collect();
    // Cut the stream once schedules are answering, however busy the
    // machine is.
    let give_up = Instant::now() + Duration::from_secs(20);
    while answered.lock().unwrap().len() <= 20 && Instant::now() < give_up {
        std::thread::sleep(20 * MS);
    }
    std::thread::sleep(100 * MS);
    proxy.cut_replies();
    std::thread::sleep(300 * MS);
    master.kill9();
    stop.store(true, Ordering::Relaxed);
    for producer in producers {
        producer.join().unwrap();
    }
    replica.command(&["REPLICAOF", "NO", "ONE"]);
    let answered = answered.lock().unwrap();
    assert!(
        answered.len() > 20,
        "only {} schedules answered",
        answered.len()
    );
    let lost = answered.iter().filter(|id| !has_job(&replica, id)).count();
    Some((answered.len(), lost))
}

/// With `replicas(1)`, a failover loses no schedule that answered.
#[test]
fn no_answered_schedule_is_lost_when_the_master_dies() {
    let Some((answered, lost)) = failover(1) else {
        return;
    };
    assert_eq!(lost, 0, "{lost} of {answered} answered schedules lost");
}

/// Without it, the same failover loses the schedules the replica had not
/// received: the window `replicas` closes (here, the 300 ms it was cut off).
#[test]
fn without_replicas_a_failover_loses_what_the_replica_lacked() {
    let Some((answered, lost)) = failover(0) else {
        return;
    };
    assert!(
        lost > 0,
        "none of {answered} lost: the failover did not test the window"
    );
    eprintln!("without replicas: {lost} of {answered} answered schedules lost");
}
