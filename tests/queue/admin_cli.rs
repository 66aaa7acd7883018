//! The `tickwheel-admin` binary, run as a process against a real
//! `redis-server` (each test its own) or a journal file: its `--json`
//! lines are parsed and checked exactly. `watch` on a journal reads it
//! while its owner runs, and writes nothing.

use core::time::Duration;
use std::collections::HashSet;
use std::process::Command;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tickwheel::persist::{DurableTimer, SyncPolicy};
use tickwheel::redis::Queue;

use crate::queues;
use crate::redis_server;
use crate::scratch;
use queues::builder;
use redis_server::{Config, RedisServer};
use scratch::Scratch;

const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-admin");

/// What a run of the tool gave: its exit code, its JSON lines, stderr.
struct Run {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

impl Run {
    /// The lines of one type.
    fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }

    /// The one line of `kind`.
    fn one(&self, kind: &str) -> &Value {
        let found = self.of(kind);
        assert_eq!(found.len(), 1, "{kind} lines: {:?}", self.lines);
        found[0]
    }
}

fn run(target: &[&str], args: &[&str]) -> Run {
    let output = Command::new(BIN)
        .args(target)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        lines: stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
            .collect(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A successful run.
fn ok(target: &[&str], args: &[&str]) -> Run {
    let done = run(target, args);
    assert_eq!(done.code, 0, "{args:?}: {}", done.stderr);
    done
}

fn queue_args(server: &RedisServer) -> Vec<String> {
    vec![
        "--url".into(),
        server.url(),
        "--queue".into(),
        "orders".into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn at(micros: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(micros)
}

/// 2096-10-02T07:06:40Z, in microseconds: later than any clock these tests run under.
const BASE: u64 = 4_000_000_000_000_000;

/// Every page of `ls what`, following the cursors: the job lines, and each
/// page's time in Redis.
fn walk(target: &[&str], what: &str, limit: usize) -> (Vec<Value>, Vec<f64>) {
    let (mut jobs, mut times) = (Vec::new(), Vec::new());
    let mut after: Option<String> = None;
    loop {
        let limit = limit.to_string();
        let mut args = vec!["ls", what, "--limit", &limit];
        if let Some(after) = &after {
            args.extend(["--after", after]);
        }
        let page = ok(target, &args);
        jobs.extend(page.of("job").into_iter().cloned());
        let summary = page.one("page");
        times.push(summary["elapsed_ms"].as_f64().unwrap());
        match summary["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return (jobs, times),
        }
    }
}

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

/// A journal a process holds is refused with the library's lock error,
/// naming the path and the owner, and left as it was; once the owner has
/// gone, the tool lists every pending job (keyed or not, in id order) and
/// shows and cancels by key.
#[test]
fn a_held_journal_is_refused_and_a_free_one_is_served() {
    let dir = Scratch::new("admin");
    let path = dir.path("orders.journal");
    let (held, _) =
        DurableTimer::<Vec<u8>>::open(&path, SyncPolicy::Always, &Default::default(), |_| {})
            .unwrap();
    for i in 0..3 {
        held.schedule_keyed(
            &format!("order {i}"),
            Duration::from_secs(900 + i),
            b"close\x01".to_vec(),
        )
        .unwrap();
    }
    // A job without a key lists too (it cannot be shown or cancelled by
    // the tool: those go by key).
    held.schedule(Duration::from_secs(950), b"remind".to_vec())
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let target = ["--journal", path.to_str().unwrap()];
    let refused = run(&target, &["ls", "pending"]);
    assert_eq!(refused.code, 1);
    assert!(refused.lines.is_empty());
    let message = refused.stderr.trim_end();
    assert_eq!(message.lines().count(), 1);
    let owner = format!("(process {})", std::process::id());
    assert!(
        message.contains(path.to_str().unwrap()) && message.contains(&owner),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(held);

    let (listed, _) = walk(&target, "pending", 2);
    let keys: Vec<Option<&str>> = listed.iter().map(|j| j["key"].as_str()).collect();
    assert_eq!(
        keys,
        [Some("order 0"), Some("order 1"), Some("order 2"), None]
    );
    let ids: Vec<u64> = listed.iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(
        run(&target, &["ls", "pending", "--after", "order 0"]).code,
        1
    );
    let shown = ok(&target, &["show", "order 0"]);
    assert_eq!(shown.one("job")["id"], listed[0]["id"]);
    // `ls` reads the due time the journal recorded, `show` the timer's
    // deadline for it: the same instant, each rounded to the microsecond.
    let (shown_at, listed_at) = (
        seconds_of_day(shown.one("job")["due"].as_str().unwrap()),
        seconds_of_day(listed[0]["due"].as_str().unwrap()),
    );
    assert!(
        (shown_at - listed_at).abs() < 0.001,
        "{shown_at} against {listed_at}"
    );
    assert_eq!(shown.one("job")["state"], "pending");
    let cancelled = ok(&target, &["cancel", "order 1"]);
    assert_eq!(
        cancelled.one("cancel"),
        &serde_json::json!({"type": "cancel", "key": "order 1", "outcome": "cancelled", "payload": "close\\x01"})
    );
    assert_eq!(ok(&target, &["stats"]).one("stats")["pending"], 3);
    let (left, _) = walk(&target, "pending", 10);
    let keys: Vec<Option<&str>> = left.iter().map(|j| j["key"].as_str()).collect();
    assert_eq!(keys, [Some("order 0"), Some("order 2"), None]);
    assert_eq!(run(&target, &["show", "order 1"]).code, 1);
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

/// The tool run without `--json`: its stdout, after a successful exit.
fn plain(target: &[&str], args: &[&str]) -> String {
    let output = Command::new(BIN).args(target).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
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

/// Seconds since midnight of an RFC 3339 time the tool printed
/// (`2026-11-26T13:34:05.661878Z`).
fn seconds_of_day(rfc3339: &str) -> f64 {
    let time = &rfc3339[rfc3339.find('T').expect("a date and a time") + 1..];
    let mut parts = time.trim_end_matches('Z').split(':');
    let mut field = || parts.next().expect("h:m:s").parse::<f64>().unwrap();
    let (h, m, s) = (field(), field(), field());
    h * 3600.0 + m * 60.0 + s
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

// ---- `watch` on a journal: read without its lock ----------------------

/// The tool's `watch` frames on `path`, `count` of them.
fn watch_journal(path: &std::path::Path, count: u32) -> Vec<Value> {
    let output = Command::new(BIN)
        .args(["--journal", path.to_str().unwrap(), "--json", "watch"])
        .args(["--every", "50ms", "--count", &count.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn watch_reads_a_journal_its_owner_holds_and_writes_nothing() {
    let dir = Scratch::new("admin-watch");
    let path = dir.path("orders.journal");
    let (owner, _) =
        DurableTimer::<u64>::open(&path, SyncPolicy::Always, &Default::default(), |_| {}).unwrap();
    let hour = Duration::from_secs(3600);
    owner.schedule_keyed("order 1017", hour, 1017).unwrap();
    owner.schedule(hour, 1018).unwrap();
    owner
        .upsert_schedule("sweep", &tickwheel::schedule::Schedule::every(hour), 1)
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let frames = watch_journal(&path, 2);
    assert_eq!(frames.len(), 2, "{frames:?}");
    for frame in &frames {
        assert_eq!(frame["type"], "watch");
        assert_eq!(frame["pending"], 3, "{frame}");
        assert_eq!(frame["keyed"], 1, "{frame}");
        assert_eq!(frame["schedulers"], 1, "{frame}");
        assert_eq!(frame["due"], 0, "{frame}");
        assert_eq!(frame["damaged"], 0, "{frame}");
        assert!(frame["next_due"].is_string(), "{frame}");
        assert!(frame["overdue_max_ms"].is_null(), "{frame}");
        assert_eq!(frame["journal_bytes"], before.len() as u64, "{frame}");
    }
    assert_eq!(frames[1]["pending_per_s"], 0.0);
    assert_eq!(std::fs::read(&path).unwrap(), before, "the tool wrote");
    // The owner still owns it, and goes on.
    owner.schedule(hour, 1019).unwrap();
    assert_eq!(watch_journal(&path, 1)[0]["pending"], 4);
}

/// A journal closed with a job 50 minutes overdue: `due` counts it and
/// `overdue_max_ms` says how late it is.
#[test]
fn watch_shows_jobs_missed_while_the_owner_is_down() {
    let dir = Scratch::new("admin-watch-missed");
    let path = dir.path("j");
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let (owner, _) = DurableTimer::<u64>::open_with_clock(
        &path,
        SyncPolicy::Always,
        &Default::default(),
        tickwheel::timer::ManualClock::with_wall_time(hour_ago),
        |_| {},
    )
    .unwrap();
    owner.schedule(Duration::from_secs(600), 1).unwrap();
    owner.schedule(Duration::from_secs(7200), 2).unwrap();
    drop(owner);
    let frame = &watch_journal(&path, 1)[0];
    assert_eq!(frame["pending"], 2, "{frame}");
    assert_eq!(frame["due"], 1, "{frame}");
    let late_ms = frame["overdue_max_ms"].as_f64().unwrap();
    assert!((2_990_000.0..3_100_000.0).contains(&late_ms), "{late_ms}");
    let summary = tickwheel::persist::JournalSummary::read(&path, SystemTime::now()).unwrap();
    assert_eq!(
        summary.oldest_due,
        Some(hour_ago + Duration::from_secs(600))
    );
    assert_eq!(summary.next_due, Some(hour_ago + Duration::from_secs(7200)));
    assert!(tickwheel::persist::JournalSummary::read(dir.path("none"), SystemTime::now()).is_err());
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
