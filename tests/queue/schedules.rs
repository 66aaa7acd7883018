//! Job schedulers on a real `redis-server`: every instant runs once
//! across consumers and none early; an upsert is idempotent and a change
//! replaces the runs; removing stops them; runs missed while no consumer
//! ran follow the scheduler's policy; and, as separate processes, three
//! consumers of a cron scheduler run each second at least once and at most
//! twice (only around a consumer's SIGKILL), none early.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwheel::redis::{Consumer, Missed, Queue, Schedule, Upserted};

use crate::children;
use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// Each run a consumer got: its scheduler's instant → when it came (µs),
/// every time it came.
type Runs = Arc<Mutex<BTreeMap<u64, Vec<u64>>>>;

/// Fetches and acks until `stop`, recording each run.
fn consume(consumer: Consumer, runs: Runs, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok(jobs) = consumer.fetch(50, 100 * MS) else {
                continue;
            };
            let now = micros(SystemTime::now());
            for job in jobs {
                let (_, instant) = job.schedule().expect("only runs in this queue");
                assert_eq!(job.payload, b"sweep");
                runs.lock()
                    .unwrap()
                    .entry(micros(instant))
                    .or_default()
                    .push(now);
                consumer.ack(&job).unwrap();
            }
        }
    })
}

/// A 200 ms scheduler for three seconds, three consumers each with a
/// connection (and a run-making task) of its own: every instant from the
/// first to the last ran exactly once, none before its instant.
#[test]
fn every_instant_runs_once_across_consumers_none_early() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let runs: Runs = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let q = builder(&server).connect().unwrap();
            consume(q.consumer().unwrap(), Arc::clone(&runs), Arc::clone(&stop))
        })
        .collect();
    let every = Schedule::every(200 * MS);
    assert_eq!(
        queue.upsert_schedule("sweep", &every, b"sweep").unwrap(),
        Upserted::Created
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(queue.remove_schedule("sweep").unwrap());
    std::thread::sleep(500 * MS);
    stop.store(true, Ordering::Relaxed);
    for c in consumers {
        c.join().unwrap();
    }
    let runs = runs.lock().unwrap();
    let instants: Vec<u64> = runs.keys().copied().collect();
    assert!(instants.len() >= 13, "{} runs in 3 s", instants.len());
    for pair in instants.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            200_000,
            "a missing instant: {instants:?}"
        );
    }
    for (instant, came) in runs.iter() {
        assert_eq!(came.len(), 1, "instant {instant} ran {} times", came.len());
        assert!(came[0] >= *instant, "instant {instant} ran early");
    }
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// The ids of the runs waiting, in due order.
pub(crate) fn waiting(queue: &Queue) -> Vec<String> {
    let page = queue.pending(.., 1_000, None).unwrap();
    page.jobs.into_iter().map(|job| job.id).collect()
}

/// The same upsert changes nothing; a new timetable or payload cancels the
/// old runs still waiting and makes the new one's; removing cancels them.
#[test]
fn an_upsert_is_idempotent_and_a_change_replaces_the_runs() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let hourly = Schedule::every(Duration::from_secs(3_600));
    assert_eq!(
        queue.upsert_schedule("report", &hourly, b"v1").unwrap(),
        Upserted::Created
    );
    let first = waiting(&queue);
    assert_eq!(first.len(), 1, "the next hour's run: {first:?}");
    assert_eq!(
        queue.upsert_schedule("report", &hourly, b"v1").unwrap(),
        Upserted::Unchanged
    );
    assert_eq!(waiting(&queue), first);
    // Another payload: the same instant's run, made again with it (a new
    // version, so a new id: the cancelled one's is kept as ended).
    assert_eq!(
        queue.upsert_schedule("report", &hourly, b"v2").unwrap(),
        Upserted::Updated
    );
    let page = queue.pending(.., 10, None).unwrap();
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].payload, b"v2");
    assert_ne!(page.jobs[0].id, first[0]);
    // Another timetable: the old instant's run is cancelled.
    let half_hourly = Schedule::every(Duration::from_secs(1_800));
    assert_eq!(
        queue
            .upsert_schedule("report", &half_hourly, b"v2")
            .unwrap(),
        Upserted::Updated
    );
    let now = waiting(&queue);
    assert_eq!(now.len(), 1);
    // schedule/report/<version>/<instant>
    let instant: u64 = now[0].rsplit('/').next().unwrap().parse().unwrap();
    assert_eq!(instant % 1_800_000_000, 0);
    assert!(now[0].starts_with("schedule/report/3/"), "{}", now[0]);
    let list = queue.schedules().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].key.as_str(), list[0].version), ("report", 3));
    assert!(queue.remove_schedule("report").unwrap());
    assert!(!queue.remove_schedule("report").unwrap());
    assert!(waiting(&queue).is_empty());
    assert!(queue.schedules().unwrap().is_empty());
    // Bad input is refused before anything is sent.
    assert!(queue.upsert_schedule("", &hourly, b"").is_err());
    assert!(queue
        .upsert_schedule("x", &Schedule::every(MS), b"")
        .is_err());
}

/// A scheduler whose runs were last made five minutes ago (what an outage
/// of every consumer leaves): the next consumer makes the missed instants'
/// runs as the policy says: none, one (the latest), or all 300.
#[test]
fn runs_missed_while_nothing_ran_follow_the_policy() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    for (policy, name) in [
        (Missed::Skip, "skip"),
        (Missed::RunOnce, "once"),
        (Missed::RunAll, "all"),
    ] {
        let queue = queues::builder(&server).connect().unwrap();
        let key = format!("beat-{name}");
        let every = Schedule::every(Duration::from_secs(1)).missed(policy);
        queue.upsert_schedule(&key, &every, b"sweep").unwrap();
        // Five minutes down: the runs made are gone and the record says
        // it made runs up to five minutes ago.
        for id in waiting(&queue) {
            queue.cancel(&id).unwrap();
        }
        let now = micros(SystemTime::now());
        let then = (now - 300_000_000) / 1_000_000 * 1_000_000;
        let reply = server.command(&["HGET", "tw:{orders}:schedules", &key]);
        // A bulk reply: `$len\r\n`, the record, `\r\n`.
        let record = &reply[reply.find("\r\n").unwrap() + 2..reply.len() - 2];
        let record: Vec<&str> = record.split('\n').collect();
        let moved = format!("{}\n{then}\n{}", record[0], record[2..].join("\n"));
        server.command(&["HSET", "tw:{orders}:schedules", &key, &moved]);
        // A consumer starts: its task makes the runs.
        let consumer = builder(&server).connect().unwrap().consumer().unwrap();
        let started = micros(SystemTime::now());
        let mut missed = 0;
        let give_up = Instant::now() + Duration::from_secs(5);
        let mut caught_up = false;
        while Instant::now() < give_up && !caught_up {
            for job in consumer.fetch(500, 200 * MS).unwrap() {
                let (k, at) = job.schedule().unwrap();
                assert_eq!(k, key);
                if micros(at) + 1_000_000 < started {
                    missed += 1;
                } else {
                    caught_up = true;
                }
                consumer.ack(&job).unwrap();
            }
        }
        assert!(caught_up, "{name}: no run on time");
        let want = match policy {
            Missed::Skip => 0..=0,
            Missed::RunOnce => 1..=1,
            Missed::RunAll => 298..=301,
        };
        assert!(want.contains(&missed), "{name}: {missed} missed runs ran");
        queue.remove_schedule(&key).unwrap();
    }
}

/// The child side of the fleet test: a consumer that prints each run it
/// gets (`RUN instant at`) and acks it, until it is killed.
#[test]
#[ignore = "started by `a_cron_scheduler_runs_each_second_once_through_a_consumer_kill`"]
fn schedule_consumer_child() {
    let Ok(url) = std::env::var("TICKWHEEL_REDIS_URL") else {
        return;
    };
    let queue = Queue::builder(&url, "orders")
        .lease(Duration::from_secs(1))
        .connect()
        .unwrap();
    let consumer = queue.consumer().unwrap();
    println!();
    loop {
        let Ok(jobs) = consumer.fetch(10, Duration::from_secs(1)) else {
            continue;
        };
        for job in jobs {
            let (_, at) = job.schedule().unwrap();
            println!("RUN {} {}", micros(at), micros(SystemTime::now()));
            let _ = consumer.ack(&job);
        }
    }
}

/// Three consumer processes of a cron scheduler that runs every second
/// (UTC), one SIGKILLed a third of the way in: each second from the first
/// run to the last ran at least once, none early, and twice only within
/// the kill's lease (1 s) of it.
#[test]
fn a_cron_scheduler_runs_each_second_once_through_a_consumer_kill() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    // 60 s as the issue asks; a debug build (the quick test run) 20 s.
    let span = if cfg!(debug_assertions) { 20 } else { 60 };
    let log: Arc<Mutex<Vec<(usize, u64, u64)>>> = Arc::default();
    let mut children = Vec::new();
    let mut readers = Vec::new();
    for c in 0..3 {
        let mut child = children::spawn(
            module_path!(),
            "schedule_consumer_child",
            &[("TICKWHEEL_REDIS_URL", server.url())],
        );
        let out = BufReader::new(child.stdout.take().unwrap());
        let log = Arc::clone(&log);
        readers.push(std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let f: Vec<&str> = line.split(' ').collect();
                if let ["RUN", at, came] = f[..] {
                    log.lock()
                        .unwrap()
                        .push((c, at.parse().unwrap(), came.parse().unwrap()));
                }
            }
        }));
        children.push(child);
    }
    let queue = builder(&server).connect().unwrap();
    let every_second = Schedule::cron("* * * * * *", "UTC").unwrap();
    queue
        .upsert_schedule("tick", &every_second, b"tick")
        .unwrap();
    std::thread::sleep(Duration::from_secs(span / 3));
    let killed_at = micros(SystemTime::now());
    children[0].kill().unwrap();
    children[0].wait().unwrap();
    std::thread::sleep(Duration::from_secs(span - span / 3));
    queue.remove_schedule("tick").unwrap();
    std::thread::sleep(Duration::from_secs(2));
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
    for reader in readers {
        reader.join().unwrap();
    }
    let log = log.lock().unwrap();
    let mut by_instant: BTreeMap<u64, Vec<(usize, u64)>> = BTreeMap::new();
    for &(c, at, came) in log.iter() {
        by_instant.entry(at).or_default().push((c, came));
    }
    let instants: Vec<u64> = by_instant.keys().copied().collect();
    assert!(
        instants.len() as u64 >= span - 2,
        "{} seconds ran in {span} s",
        instants.len()
    );
    for pair in instants.windows(2) {
        assert_eq!(pair[1] - pair[0], 1_000_000, "a second did not run");
    }
    let mut twice = 0;
    let per_consumer: HashMap<usize, usize> = log.iter().fold(HashMap::new(), |mut m, e| {
        *m.entry(e.0).or_default() += 1;
        m
    });
    for (at, came) in &by_instant {
        assert!(came.iter().all(|(_, t)| t >= at), "{at} ran early");
        assert!(came.len() <= 2, "{at} ran {} times", came.len());
        if came.len() == 2 {
            twice += 1;
            assert!(
                at.abs_diff(killed_at) <= 2_000_000,
                "{at} ran twice, {} µs from the kill",
                at.abs_diff(killed_at)
            );
        }
    }
    eprintln!(
        "cron fleet: {} seconds ran, {twice} twice; runs per consumer {per_consumer:?}",
        instants.len()
    );
}
