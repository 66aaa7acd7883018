//! The `tickwheel-admin` binary where a queue is not what the operator
//! expects: no such queue, several partitions, and dead letters that keep
//! failing while it requeues them. Each test on its own `redis-server`.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use crate::admin_tool::{at, ok, queue_args, run, strs, BASE, BIN};
use crate::queues::{builder, id_in, partition_of};
use crate::redis_server::{Config, RedisServer};

/// Read-only commands on a queue that does not exist write nothing and
/// say so: `stats` once stored a partition count of 1 for `orders` (so a
/// later builder asking for 4 partitions was refused) and reported an
/// empty queue with exit 0.
#[test]
fn a_queue_that_does_not_exist_is_reported_and_not_created() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let target = queue_args(&server);
    let target = strs(&target);
    for args in [
        &["stats"][..],
        &["ls", "dead"],
        &["show", "order-1"],
        &["watch", "--once"],
        &["schedules"],
        &["requeue", "--all"],
    ] {
        let done = run(&target, args);
        assert_eq!(done.code, 1, "{args:?}: {:?}", done.lines);
        assert!(
            done.stderr.contains("no queue `orders`"),
            "{args:?}: {}",
            done.stderr
        );
        assert_eq!(server.command(&["DBSIZE"]), ":0\r\n", "{args:?} wrote");
    }
    let q = builder(&server).partitions(4).connect().unwrap();
    q.schedule_in("order-1", Duration::from_secs(60), b"")
        .unwrap();
    assert_eq!(ok(&target, &["stats"]).one("stats")["live"], 1);
}

/// Nor does the tool forget a queue's ended jobs by its own (default,
/// 24 h) retention: a queue that keeps them 30 days once lost, to a
/// `watch`, a job that ended two days before.
#[test]
fn the_tool_leaves_retention_to_the_queues_processes() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server)
        .retention(Duration::from_secs(30 * 86_400))
        .connect()
        .unwrap();
    q.schedule_in("ended", Duration::from_secs(60), b"")
        .unwrap();
    q.cancel("ended").unwrap();
    // It ended two days ago, as `ends` (time, id pairs) says.
    let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 86_400);
    let micros = two_days_ago.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    let micros = micros.as_micros().to_string();
    let set = server.command(&["LSET", "tw:{orders}:ends", "0", &micros]);
    assert_eq!(set, "+OK\r\n");
    let target = queue_args(&server);
    let watched = ok(
        &strs(&target),
        &["watch", "--every", "100ms", "--count", "3"],
    );
    assert_eq!(watched.of("watch").len(), 3);
    assert!(q.job("ended").unwrap().is_some(), "the tool forgot it");
}

/// `stats` and `watch` give the earliest due time of all partitions: they
/// once gave the first of a listing that goes partition by partition (a
/// job due in an hour in partition 0 before one due in a minute).
#[test]
fn the_next_due_time_is_the_earliest_of_every_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server).partitions(4).connect().unwrap();
    q.schedule(&id_in("hour", 0, 4), at(BASE + 3_600_000_000), b"")
        .unwrap();
    q.schedule(&id_in("minute", 2, 4), at(BASE + 60_000_000), b"")
        .unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    let minute = "2096-10-02T07:07:40.000000Z";
    assert_eq!(ok(&target, &["stats"]).one("stats")["next_due"], minute);
    assert_eq!(
        ok(&target, &["watch", "--once"]).one("watch")["next_due"],
        minute
    );
    // Overdue jobs: `watch` took the first of its sample.
    let now = SystemTime::now();
    let (late1, late10) = (id_in("late1s", 0, 4), id_in("late10s", 3, 4));
    q.schedule(&late1, now - Duration::from_secs(1), b"")
        .unwrap();
    q.schedule(&late10, now - Duration::from_secs(10), b"")
        .unwrap();
    let earliest = ok(&target, &["show", &late10]).one("job")["due"].clone();
    let frame = ok(&target, &["watch", "--once"]);
    assert_eq!(frame.one("watch")["due_waiting"], 2);
    assert_eq!(frame.one("watch")["next_due"], earliest);
    assert_eq!(ok(&target, &["stats"]).one("stats")["next_due"], earliest);
}

/// `watch`'s most overdue job is the most overdue of every partition. Its
/// sample of 100 due jobs is the head of the listing, which goes partition
/// after partition: with 120 jobs a second overdue in partition 0, `max`
/// once said about a second while a job of partition 3 was an hour
/// overdue.
#[test]
fn watch_shows_the_most_overdue_job_of_every_partition() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let q = builder(&server).partitions(4).connect().unwrap();
    let now = SystemTime::now();
    let ids: Vec<String> = (0..)
        .map(|i| format!("late1s-{i}"))
        .filter(|id| partition_of(id, 4) == 0)
        .take(120)
        .collect();
    let second_ago = now - Duration::from_secs(1);
    let jobs: Vec<(&str, SystemTime, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), second_ago, &b""[..]))
        .collect();
    q.schedule_many_at(&jobs).unwrap();
    let hour = id_in("late1h", 3, 4);
    q.schedule(&hour, now - Duration::from_secs(3_600), b"")
        .unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    let frame = ok(&target, &["watch", "--once"]);
    let watch = frame.one("watch");
    assert_eq!(watch["due_waiting"], 100, "{watch}");
    assert_eq!(watch["due_waiting_more"], true, "{watch}");
    let max = watch["overdue_max_ms"].as_f64().unwrap();
    assert!(max >= 3_600_000.0, "overdue max {max} ms: {watch}");
    // The p50 and p99 stay the sample's.
    let p99 = watch["overdue_p99_ms"].as_f64().unwrap();
    assert!(p99 < 3_600_000.0, "{watch}");
}

/// `requeue --all` requeues the dead letters there when it starts, once
/// each, and ends while they keep failing: it once read the dead set a page
/// at a time while requeuing, met each job again at the end after it died
/// again, and never ended.
#[test]
fn requeue_all_ends_while_the_requeued_keep_failing() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    // More than a page (1,000), so the listing goes on past the first.
    const N: usize = 1_500;
    let q = builder(&server).max_attempts(1).connect().unwrap();
    let jobs: Vec<(String, Duration, &[u8])> = (0..N)
        .map(|i| (format!("fail-{i}"), Duration::ZERO, &b""[..]))
        .collect();
    let jobs: Vec<(&str, Duration, &[u8])> = jobs
        .iter()
        .map(|(id, d, p)| (id.as_str(), *d, *p))
        .collect();
    q.schedule_many(&jobs).unwrap();
    // A consumer that nacks everything, counting deliveries per id.
    let delivered = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let nacker = {
        let (delivered, stop) = (Arc::clone(&delivered), Arc::clone(&stop));
        let consumer = q.consumer().unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for job in consumer.fetch(100, Duration::from_millis(100)).unwrap() {
                    consumer.nack(&job, Duration::ZERO).unwrap();
                    *delivered.lock().unwrap().entry(job.id).or_default() += 1;
                }
            }
        })
    };
    let all_dead = |within: Duration| {
        let give_up = Instant::now() + within;
        while q.len().unwrap() != (0, N as u64) {
            assert!(Instant::now() < give_up, "not all dead: {:?}", q.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    all_dead(Duration::from_secs(30));
    let mut child = Command::new(BIN)
        .args(queue_args(&server))
        .args(["--json", "requeue", "--all"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > give_up {
            child.kill().unwrap();
            let _ = child.wait();
            stop.store(true, Ordering::Relaxed);
            panic!("requeue --all still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(line["requeued"], N);
    all_dead(Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    nacker.join().unwrap();
    let delivered = delivered.lock().unwrap();
    assert_eq!(delivered.len(), N);
    let twice = delivered.values().filter(|&&n| n == 2).count();
    assert_eq!(twice, N, "each delivered once, and again once requeued");
}

/// `requeue --all` that fails part-way (here its user loses the right to
/// run scripts after the first requeue) still says how many it requeued,
/// and that count is what the server holds: the tool once printed only the
/// error, so an operator could not tell what had changed.
#[test]
fn a_requeue_all_that_fails_part_way_says_how_many_it_requeued() {
    const N: u64 = 2_000;
    let config = Config::new().config("user", "tool on >tool-pass ~* &* +@all");
    let Some(server) = RedisServer::start_with_or_skip(config) else {
        return;
    };
    let q = builder(&server).max_attempts(1).connect().unwrap();
    let ids: Vec<String> = (0..N).map(|i| format!("dead-{i}")).collect();
    let jobs: Vec<(&str, Duration, &[u8])> = ids
        .iter()
        .map(|id| (id.as_str(), Duration::ZERO, &b""[..]))
        .collect();
    q.schedule_many(&jobs).unwrap();
    let consumer = q.consumer().unwrap();
    let give_up = Instant::now() + Duration::from_secs(60);
    while q.len().unwrap() != (0, N) {
        assert!(Instant::now() < give_up, "not all dead: {:?}", q.len());
        for job in consumer.fetch(500, Duration::from_millis(100)).unwrap() {
            consumer.nack(&job, Duration::ZERO).unwrap();
        }
    }
    consumer.close();
    let dead = || -> u64 {
        let reply = server.command(&["ZCARD", "tw:{orders}:dead"]);
        reply.trim_start_matches(':').trim().parse().unwrap()
    };
    let url = format!("redis://tool:tool-pass@127.0.0.1:{}/", server.port());
    let child = Command::new(BIN)
        .args([
            "--url", &url, "--queue", "orders", "--json", "requeue", "--all",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(30);
    while dead() == N {
        assert!(Instant::now() < give_up, "no requeue in 30 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    let revoked = server.command(&["ACL", "SETUSER", "tool", "-@scripting"]);
    assert_eq!(revoked, "+OK\r\n");
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let line: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&output.stdout)));
    let requeued = line["requeued"].as_u64().unwrap();
    assert_eq!(requeued, N - dead(), "{line}");
    assert!(requeued > 0 && requeued < N, "{line}");
    assert_eq!(q.len().unwrap(), (requeued, N - requeued));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("stopped after {requeued} requeued")),
        "{stderr}"
    );
    let why = line["stopped"].as_str().unwrap().to_lowercase();
    assert!(why.contains("noperm"), "{line}");
}
