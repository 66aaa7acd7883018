//! The `tickwheel-admin` binary, run as a process against a real
//! `redis-server` (each test its own): its `--json` lines are parsed and
//! checked exactly, and its plain output says the same. On journal files:
//! `admin_journal.rs`.

use core::time::Duration;
use std::collections::HashSet;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tickwheel::redis::Queue;

use crate::admin_tool::{at, ok, plain, queue_args, run, strs, walk, BASE};
use crate::queues;
use crate::redis_server;
use queues::builder;
use redis_server::{Config, RedisServer};

#[test]
fn pages_follow_their_cursors_to_the_end_showing_every_job_once() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let ids: Vec<String> = (0..250).map(|i| format!("order-{i}")).collect();
    // Due in reverse order of the ids, a second apart.
    let jobs: Vec<(&str, SystemTime, &[u8])> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                id.as_str(),
                at(BASE + (250 - i as u64) * 1_000_000),
                &b"close\n\xff"[..],
            )
        })
        .collect();
    queue.schedule_many_at(&jobs).unwrap();
    let target = queue_args(&server);
    let (listed, _) = walk(&strs(&target), "pending", 40);
    let got: Vec<&str> = listed.iter().map(|j| j["id"].as_str().unwrap()).collect();
    let want: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(got, want);
    assert_eq!(
        listed[0],
        serde_json::json!({
            "type": "job",
            "id": "order-249",
            "due": "2096-10-02T07:06:41.000000Z",
            "at": "2096-10-02T07:06:41.000000Z",
            "attempts": 0,
            "size": 7,
            "preview": "close\\n\\xff",
        })
    );
    // Not yet due by this clock, so `due` is empty; nothing held or dead.
    // (Waiting and held jobs share one sorted set: the in-flight listing
    // reads past the waiting ones a page at a time, showing none.)
    for what in ["due", "inflight", "dead"] {
        let (jobs, _) = walk(&strs(&target), what, 100);
        assert!(jobs.is_empty(), "{what}");
    }
    let stats = ok(&strs(&target), &["stats"]);
    assert_eq!(
        stats.one("stats"),
        &serde_json::json!({
            "type": "stats", "live": 250, "dead": 0,
            "next_due": "2096-10-02T07:06:41.000000Z",
        })
    );
}

#[test]
fn show_and_cancel_say_what_a_job_is_and_was() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    queue
        .schedule("order-17", at(BASE), b"close \"17\"")
        .unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    let shown = ok(&target, &["show", "order-17"]);
    assert_eq!(
        shown.one("job"),
        &serde_json::json!({
            "type": "job", "id": "order-17", "state": "waiting",
            "due": "2096-10-02T07:06:40.000000Z", "at": "2096-10-02T07:06:40.000000Z",
            "attempts": 0, "fence": 0, "size": 10, "payload": "close \\\"17\\\"",
        })
    );
    let cancelled = ok(&target, &["cancel", "order-17"]);
    assert_eq!(
        cancelled.one("cancel"),
        &serde_json::json!({
            "type": "cancel", "id": "order-17", "outcome": "cancelled",
            "payload": "close \\\"17\\\"",
        })
    );
    let again = ok(&target, &["cancel", "order-17"]);
    assert_eq!(again.one("cancel")["outcome"], "ended");
    let ended = ok(&target, &["show", "order-17"]);
    assert_eq!(ended.one("job")["state"], "cancelled");
    assert_eq!(ended.one("job")["at"], Value::Null);
    assert_eq!(ended.one("job")["payload"], "");
    assert!(ok(&target, &["ls", "pending"]).of("job").is_empty());

    let unknown = run(&target, &["show", "order-18"]);
    assert_eq!(unknown.code, 1);
    assert!(unknown.lines.is_empty());
    assert_eq!(unknown.stderr.lines().count(), 1, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no job \"order-18\""),
        "{}",
        unknown.stderr
    );
}

/// Jobs out of attempts (`max_attempts(1)`, nacked) are listed as dead,
/// requeued one at a time and all at once, and purged.
#[test]
fn dead_letters_are_listed_requeued_and_purged() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).max_attempts(1).connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    let kill_all = |n: usize| {
        let mut dead = 0;
        while dead < n {
            for job in consumer.fetch(n, Duration::from_secs(5)).unwrap() {
                consumer.nack(&job, Duration::ZERO).unwrap();
                dead += 1;
            }
        }
    };
    for i in 0..5 {
        queue
            .schedule_in(&format!("d{i}"), Duration::ZERO, b"x")
            .unwrap();
    }
    // Due, not yet taken: listed as due.
    std::thread::sleep(Duration::from_millis(20));
    let due = ok(&target, &["ls", "due"]);
    assert_eq!(due.of("job").len(), 5);
    kill_all(5);
    let (dead, _) = walk(&target, "dead", 2);
    let ids: Vec<&str> = dead.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["d0", "d1", "d2", "d3", "d4"]);
    assert!(dead.iter().all(|j| j["attempts"] == 1));

    let one = ok(&target, &["requeue", "d2"]);
    assert_eq!(
        one.one("requeue"),
        &serde_json::json!({"type": "requeue", "id": "d2", "requeued": true})
    );
    assert_eq!(ok(&target, &["show", "d2"]).one("job")["state"], "waiting");
    assert_eq!(
        ok(&target, &["requeue", "d2"]).one("requeue")["requeued"],
        false
    );
    let all = ok(&target, &["requeue", "--all"]);
    assert_eq!(all.one("requeue")["requeued"], 4);
    assert_eq!(ok(&target, &["stats"]).one("stats")["dead"], 0);

    kill_all(5);
    assert_eq!(ok(&target, &["stats"]).one("stats")["dead"], 5);
    let purged = ok(&target, &["purge", "dead"]);
    assert_eq!(
        purged.one("purge"),
        &serde_json::json!({"type": "purge", "purged": 5})
    );
    let stats = ok(&target, &["stats"]);
    assert_eq!(
        (&stats.one("stats")["live"], &stats.one("stats")["dead"]),
        (&0.into(), &0.into())
    );
    assert_eq!(
        ok(&target, &["show", "d0"]).one("job")["state"],
        "cancelled"
    );
}

#[test]
fn watch_refreshes_the_requested_number_of_times() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    for i in 0..3 {
        queue
            .schedule_in(&format!("w{i}"), Duration::ZERO, b"x")
            .unwrap();
    }
    queue.schedule("later", at(BASE + 1_000_000), b"x").unwrap();
    let target = queue_args(&server);
    let watched = ok(
        &strs(&target),
        &["watch", "--every", "100ms", "--count", "2"],
    );
    let frames = watched.of("watch");
    assert_eq!(frames.len(), 2, "{:?}", watched.lines);
    for (i, frame) in frames.iter().enumerate() {
        assert_eq!((&frame["live"], &frame["dead"]), (&4.into(), &0.into()));
        assert_eq!(frame["due_waiting"], 3);
        assert!(frame["overdue_p99_ms"].as_f64().unwrap() >= 0.0);
        assert_eq!(frame["sparkline"].as_str().unwrap().chars().count(), i + 1);
    }
    assert_eq!(frames[0]["live_per_s"], Value::Null);
    assert_eq!(frames[1]["live_per_s"], 0.0);
    let once = ok(&strs(&target), &["watch", "--once"]);
    assert_eq!(once.of("watch").len(), 1);
}

#[test]
fn bad_arguments_are_usage_errors_and_failures_exit_one() {
    let usage = run(&[], &["stats"]);
    assert_eq!(usage.code, 2);
    let usage = run(&["--journal", "/nonexistent"], &["ls", "sideways"]);
    assert_eq!(usage.code, 2);
    let missing = run(&["--journal", "/nonexistent/j"], &["stats"]);
    assert_eq!(missing.code, 1);
    assert_eq!(missing.stderr.lines().count(), 1);
    let unreachable = run(&["--url", "redis://", "--queue", "q"], &["stats"]);
    assert_eq!(unreachable.code, 1, "{}", unreachable.stderr);
}

/// `--node` reaches a queue on a Redis Cluster (a single-node one here),
/// and `--node` with `--url` is a usage error.
#[test]
fn a_cluster_queue_is_reached_through_its_nodes() {
    let Some(server) = crate::redis_cluster::single_node() else {
        return;
    };
    let queue = Queue::cluster_builder(&[&server.url()], "orders")
        .connect()
        .unwrap();
    queue
        .schedule_in("c1", Duration::from_secs(60), b"x")
        .unwrap();
    let target = ["--node", &server.url(), "--queue", "orders"];
    assert_eq!(ok(&target, &["stats"]).one("stats")["live"], 1);
    let both = run(
        &[
            "--node",
            &server.url(),
            "--url",
            &server.url(),
            "--queue",
            "orders",
        ],
        &["stats"],
    );
    assert_eq!(both.code, 2, "{}", both.stderr);
}

/// 10^6 waiting jobs: a page of 100 at the start, the middle (from a
/// cursor) and the end each take under 50 ms in Redis, as the tool
/// measures the call.
#[test]
fn pages_of_a_million_jobs_stay_fast_everywhere() {
    let Some(server) = RedisServer::start_with_or_skip(Config::new().appendonly(false)) else {
        return;
    };
    let queue: Queue = builder(&server).connect().unwrap();
    const N: u64 = 1_000_000;
    const BATCH: u64 = 10_000;
    let started = Instant::now();
    let ids: Vec<String> = (0..N).map(|i| format!("job-{i:07}")).collect();
    for chunk in ids.chunks(BATCH as usize).enumerate() {
        let (c, chunk) = chunk;
        let jobs: Vec<(&str, SystemTime, &[u8])> = chunk
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let n = c as u64 * BATCH + i as u64;
                (id.as_str(), at(BASE + n * 10), &b"p"[..])
            })
            .collect();
        queue.schedule_many_at(&jobs).unwrap();
    }
    let setup = started.elapsed();
    eprintln!("scheduled {N} jobs in {setup:?}");
    assert_eq!(queue.len().unwrap(), (N, 0));

    let target = queue_args(&server);
    let target = strs(&target);
    let page = |after: Option<String>| {
        let mut args = vec!["ls", "pending", "--limit", "100"];
        if let Some(after) = &after {
            args.extend(["--after", after.as_str()]);
        }
        let page = ok(&target, &args);
        let ids: Vec<String> = page
            .of("job")
            .iter()
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect();
        let summary = page.one("page").clone();
        (ids, summary)
    };
    // A cursor at job `n`, from the library: the place after it.
    let cursor_at = |n: u64| {
        let here = queue.pending(at(BASE + n * 10).., 1, None).unwrap();
        here.next.unwrap().to_string()
    };
    let want = |from: u64, to: u64| {
        (from..to)
            .map(|n| format!("job-{n:07}"))
            .collect::<Vec<_>>()
    };

    let (start, summary) = page(None);
    assert_eq!(start, want(0, 100));
    let mut times = vec![("start", summary["elapsed_ms"].as_f64().unwrap())];
    let (middle, summary) = page(Some(cursor_at(N / 2)));
    assert_eq!(middle, want(N / 2 + 1, N / 2 + 101));
    times.push(("middle", summary["elapsed_ms"].as_f64().unwrap()));
    let (end, summary) = page(Some(cursor_at(N - 51)));
    assert_eq!(end, want(N - 50, N));
    assert_eq!(summary["next"], Value::Null);
    times.push(("end", summary["elapsed_ms"].as_f64().unwrap()));
    eprintln!("page times in Redis (ms): {times:?}");
    for (place, ms) in times {
        assert!(ms < 50.0, "the page at the {place} took {ms} ms");
    }
    let seen: HashSet<String> = start.into_iter().chain(middle).chain(end).collect();
    assert_eq!(seen.len(), 250);
}

/// The plain text a person reads says the same as the JSON: ids, due
/// times in RFC 3339, escaped payloads, the cursor to the next page.
#[test]
fn plain_output_names_what_the_json_says() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    queue
        .schedule_many_at(&[
            ("order-1", at(BASE), &b"close\n\xff"[..]),
            ("order-2", at(BASE + 1_000_000), &b"refund"[..]),
            ("order-3", at(BASE + 2_000_000), &b""[..]),
        ])
        .unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    assert_eq!(
        plain(&target, &["stats"]),
        "live=3  dead=0  next_due=2096-10-02T07:06:40.000000Z\n"
    );
    let page = plain(&target, &["ls", "pending", "--limit", "2"]);
    let lines: Vec<&str> = page.lines().collect();
    assert_eq!(lines.len(), 3, "{page}");
    assert_eq!(
        lines[0],
        "id=order-1  due=2096-10-02T07:06:40.000000Z  at=2096-10-02T07:06:40.000000Z  \
         attempts=0  size=7  preview=close\\n\\xff"
    );
    assert!(
        lines[1].starts_with("id=order-2  due=2096-10-02T07:06:41.000000Z  "),
        "{page}"
    );
    let next = lines[2]
        .split("  ")
        .find_map(|field| field.strip_prefix("next="))
        .unwrap_or_else(|| panic!("no cursor: {page}"));
    assert!(lines[2].starts_with("count=2  "), "{page}");
    // The cursor printed for a person takes the reader to the last job.
    let rest = plain(&target, &["ls", "pending", "--limit", "2", "--after", next]);
    assert!(
        rest.starts_with("id=order-3  due=2096-10-02T07:06:42.000000Z  "),
        "{rest}"
    );
    assert!(!rest.contains("next="), "{rest}");
    assert_eq!(
        plain(&target, &["show", "order-1"]),
        "id=order-1  state=waiting  due=2096-10-02T07:06:40.000000Z  \
         at=2096-10-02T07:06:40.000000Z  attempts=0  fence=0  size=7  payload=close\\n\\xff\n"
    );
}

/// `schedules` lists the queue's job schedulers; `unschedule` removes one
/// and its waiting runs, and says whether there was one.
#[test]
fn schedulers_are_listed_and_removed() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let hourly = tickwheel::redis::Schedule::every(Duration::from_secs(3_600));
    queue.upsert_schedule("report", &hourly, b"r").unwrap();
    let nightly = tickwheel::redis::Schedule::cron("0 30 2 * * *", "Europe/Paris").unwrap();
    queue.upsert_schedule("nightly", &nightly, b"n").unwrap();
    let target = queue_args(&server);
    let target = strs(&target);
    let listed = ok(&target, &["schedules"]);
    let all = listed.of("schedule");
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["key"], "nightly");
    assert_eq!(all[0]["timetable"], "cron \"0 30 2 * * *\" Europe/Paris");
    assert_eq!(all[1]["key"], "report");
    assert_eq!(all[1]["timetable"], "every 3600s");
    assert_eq!(all[1]["version"], 1);
    assert_eq!(ok(&target, &["ls", "pending"]).of("job").len(), 2);
    let removed = ok(&target, &["unschedule", "report"]);
    assert_eq!(removed.one("unschedule")["removed"], true);
    assert_eq!(
        ok(&target, &["unschedule", "report"]).one("unschedule")["removed"],
        false
    );
    assert_eq!(ok(&target, &["schedules"]).of("schedule").len(), 1);
    assert_eq!(ok(&target, &["ls", "pending"]).of("job").len(), 1);
}

/// `stats` finds the next due time past many jobs in flight: with 500 held
/// ahead of the one waiting job, it once read four pages of 100, gave up
/// and printed no next due time at all, as if nothing waited.
#[test]
fn stats_finds_the_next_due_past_many_jobs_in_flight() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    for i in 0..500 {
        queue
            .schedule_in(&format!("held{i}"), Duration::ZERO, b"")
            .unwrap();
    }
    let consumer = queue.consumer().unwrap();
    let mut held = 0;
    while held < 500 {
        held += consumer.fetch(500, Duration::from_secs(5)).unwrap().len();
    }
    queue
        .schedule_in("later", Duration::from_secs(3600), b"")
        .unwrap();
    let stats = ok(&strs(&queue_args(&server)), &["stats"]);
    let line = stats.one("stats");
    assert_eq!(line["live"], 501);
    assert!(line["next_due"].is_string(), "{line}");
}
