//! Job scheduler calls whose reply was lost: a TCP proxy in front of a
//! real `redis-server` lets the script through and loses its reply, and
//! the automatic retry must answer what the first attempt did, and do the
//! rest of the call (cancel the old runs, make the first new ones).

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Queue, Schedule, Upserted};

use crate::redis_proxy::LossyProxy;
use crate::redis_server::RedisServer;

/// The ids and payloads of the waiting jobs whose id starts with `prefix`.
fn runs(queue: &Queue, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let page = queue.pending(.., 1000, None).unwrap();
    page.jobs
        .into_iter()
        .filter(|job| job.id.starts_with(prefix))
        .map(|job| (job.id, job.payload))
        .collect()
}

/// A queue through a fresh lossy proxy, its scheduler scripts loaded (a
/// scheduler made and removed), so that the lost reply is the script's.
fn through_proxy(server: &RedisServer) -> (LossyProxy, Queue) {
    let proxy = LossyProxy::start(server.addr());
    let queue = Queue::builder(&proxy.url(), "orders").connect().unwrap();
    let hourly = Schedule::every(Duration::from_secs(3600));
    assert_eq!(
        queue.upsert_schedule("warm-up", &hourly, b"w").unwrap(),
        Upserted::Created
    );
    assert!(queue.remove_schedule("warm-up").unwrap());
    (proxy, queue)
}

/// The bug: the retry saw its own first attempt's record and answered
/// `Unchanged`, so the old version's run was never cancelled and the job
/// ran twice at its instant, once with the old payload.
#[test]
fn an_update_whose_reply_was_lost_says_updated_and_cancels_the_old_runs() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server);
    let hourly = Schedule::every(Duration::from_secs(3600));
    queue.upsert_schedule("hourly", &hourly, b"old").unwrap();
    assert_eq!(runs(&queue, "schedule/hourly/").len(), 1);
    proxy.lose_reply_to(b"new");
    let answer = queue.upsert_schedule("hourly", &hourly, b"new").unwrap();
    assert_eq!(proxy.lost(), 1, "the proxy lost no reply");
    assert_eq!(answer, Upserted::Updated);
    let waiting = runs(&queue, "schedule/hourly/");
    assert_eq!(waiting.len(), 1, "runs waiting: {waiting:?}");
    assert_eq!(waiting[0].1, b"new");
}

/// The bug: the retry found nothing to remove and answered `false`, and
/// the removed scheduler's run still waited to run.
#[test]
fn a_removal_whose_reply_was_lost_says_removed_and_cancels_the_runs() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server);
    let hourly = Schedule::every(Duration::from_secs(3600));
    queue.upsert_schedule("hourly", &hourly, b"close").unwrap();
    assert_eq!(runs(&queue, "schedule/hourly/").len(), 1);
    proxy.lose_reply_to(b"schedule-versions");
    let removed = queue.remove_schedule("hourly").unwrap();
    assert_eq!(proxy.lost(), 1, "the proxy lost no reply");
    assert!(removed, "a removal that happened answered false");
    assert!(queue.schedules().unwrap().is_empty());
    assert_eq!(runs(&queue, "schedule/hourly/"), []);
    // Nothing is left for a second removal.
    assert!(!queue.remove_schedule("hourly").unwrap());
}

/// The bug: the retry answered `Unchanged` and skipped making the first
/// runs; the consumers' task, asleep for up to a minute, made none, so an
/// every-second scheduler ran nothing for seconds.
#[test]
fn a_new_scheduler_whose_reply_was_lost_runs_on_time() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (proxy, queue) = through_proxy(&server);
    let consumer = queue.consumer().unwrap();
    let every = Schedule::every(Duration::from_secs(1));
    proxy.lose_reply_to(b"tick-payload");
    let answer = queue
        .upsert_schedule("tick", &every, b"tick-payload")
        .unwrap();
    assert_eq!(proxy.lost(), 1, "the proxy lost no reply");
    assert_eq!(answer, Upserted::Created);
    // Its first runs were made by the call itself.
    assert!(!runs(&queue, "schedule/tick/").is_empty());
    let started = Instant::now();
    let mut ran = 0;
    while started.elapsed() < Duration::from_secs(3) {
        for job in consumer.fetch(10, Duration::from_millis(200)).unwrap() {
            ran += 1;
            consumer.ack(&job).unwrap();
        }
    }
    assert!(ran >= 2, "an every-second scheduler ran {ran} times in 3 s");
}

/// An upsert that finds its scheduler stored but its first runs never
/// made (an earlier call stored it, then failed) makes them, however it
/// answers.
#[test]
fn an_unchanged_upsert_makes_runs_an_earlier_call_did_not() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (_proxy, queue) = through_proxy(&server);
    let hourly = Schedule::every(Duration::from_secs(3600));
    // A scheduler's record as an upsert stores it, copied to a key whose
    // call stopped there: stored, horizon now, no run made.
    queue.upsert_schedule("model", &hourly, b"p").unwrap();
    let (mut redis, model) = beside(&server, "model");
    let [records, payloads] = [hash("schedules"), hash("schedule-payloads")];
    let timetable = model.splitn(3, '\n').nth(2).unwrap();
    let now: (String, String) = redis::cmd("TIME").query(&mut redis).unwrap();
    let stored = format!("1\n{}{:0>6}\n{timetable}", now.0, now.1);
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(&records)
        .arg("hourly")
        .arg(stored)
        .cmd("HSET")
        .arg(&payloads)
        .arg("hourly")
        .arg("p")
        .query(&mut redis)
        .unwrap();
    assert_eq!(runs(&queue, "schedule/hourly/"), []);
    assert_eq!(
        queue.upsert_schedule("hourly", &hourly, b"p").unwrap(),
        Upserted::Unchanged
    );
    let made = runs(&queue, "schedule/hourly/");
    assert_eq!(made.len(), 1, "no run was made: {made:?}");
}

/// The queue `orders`' hash `name`.
fn hash(name: &str) -> String {
    format!("tw:{{orders}}:{name}")
}

/// A connection to `server` beside the queue's, and scheduler `key`'s
/// record as stored.
fn beside(server: &RedisServer, key: &str) -> (redis::Connection, String) {
    let mut redis = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let record: String = redis::cmd("HGET")
        .arg(hash("schedules"))
        .arg(key)
        .query(&mut redis)
        .unwrap();
    (redis, record)
}

/// As an update whose script ran but whose cancels did not (Redis went
/// right after): the old record is left among the superseded (with when
/// it was superseded), its run
/// still waiting. The next upsert, though unchanged, cancels it.
#[test]
fn an_update_that_stopped_before_its_cancels_is_finished_by_the_next_call() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (_proxy, queue) = through_proxy(&server);
    let hourly = Schedule::every(Duration::from_secs(3600));
    queue.upsert_schedule("hourly", &hourly, b"old").unwrap();
    let (mut redis, old) = beside(&server, "hourly");
    let (version, rest) = old.split_once('\n').unwrap();
    let timetable = rest.split_once('\n').unwrap().1;
    let now: (String, String) = redis::cmd("TIME").query(&mut redis).unwrap();
    let new = format!("2\n{}{:0>6}\n{timetable}", now.0, now.1);
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(hash("schedules"))
        .arg("hourly")
        .arg(new)
        .cmd("HSET")
        .arg(hash("schedule-payloads"))
        .arg("hourly")
        .arg("new")
        .cmd("HSET")
        .arg(hash("schedule-superseded"))
        .arg(format!("hourly\n{version}"))
        .arg(format!("{}{:0>6}\n{old}", now.0, now.1))
        .query(&mut redis)
        .unwrap();
    assert_eq!(
        queue.upsert_schedule("hourly", &hourly, b"new").unwrap(),
        Upserted::Unchanged
    );
    let waiting = runs(&queue, "schedule/hourly/");
    let payloads: Vec<&[u8]> = waiting.iter().map(|(_, p)| &p[..]).collect();
    assert_eq!(payloads, [b"new"], "runs waiting: {waiting:?}");
    let left: Vec<String> = redis::cmd("HKEYS")
        .arg(hash("schedule-superseded"))
        .query(&mut redis)
        .unwrap();
    assert!(left.is_empty(), "still superseded: {left:?}");
}

/// As a removal whose script ran but whose cancels did not: the next
/// removal of the key, though it finds nothing to remove, cancels the
/// runs left.
#[test]
fn a_removal_that_stopped_before_its_cancels_is_finished_by_the_next_call() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let (_proxy, queue) = through_proxy(&server);
    let hourly = Schedule::every(Duration::from_secs(3600));
    queue.upsert_schedule("hourly", &hourly, b"p").unwrap();
    let (mut redis, old) = beside(&server, "hourly");
    let now: (String, String) = redis::cmd("TIME").query(&mut redis).unwrap();
    let _: () = redis::pipe()
        .cmd("HDEL")
        .arg(hash("schedules"))
        .arg("hourly")
        .cmd("HDEL")
        .arg(hash("schedule-payloads"))
        .arg("hourly")
        .cmd("HSET")
        .arg(hash("schedule-superseded"))
        .arg("hourly\n1")
        .arg(format!("{}{:0>6}\n{old}", now.0, now.1))
        .query(&mut redis)
        .unwrap();
    assert_eq!(runs(&queue, "schedule/hourly/").len(), 1);
    assert!(!queue.remove_schedule("hourly").unwrap());
    assert_eq!(runs(&queue, "schedule/hourly/"), []);
}

/// An upsert that made its first run and then lost Redis before it moved
/// the scheduler's horizon (here: the run's reply lost, with no retry
/// window): the run lay past the horizon, where a removal or a change did
/// not cancel it, and ran after the scheduler was gone, or twice.
#[test]
fn a_run_made_past_the_horizon_is_cancelled_with_its_scheduler() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let hourly = Schedule::every(Duration::from_secs(3600));
    for change in ["remove", "update"] {
        let proxy = LossyProxy::start(server.addr());
        let lossy = Queue::builder(&proxy.url(), "orders")
            .retry(Duration::ZERO, Duration::from_secs(2))
            .connect()
            .unwrap();
        lossy.upsert_schedule("warm-up", &hourly, b"w").unwrap();
        assert!(lossy.remove_schedule("warm-up").unwrap());
        proxy.lose_reply_to(b"schedule/hourly/");
        assert!(lossy.upsert_schedule("hourly", &hourly, b"old").is_err());
        assert_eq!(proxy.lost(), 1, "the proxy lost no reply");
        let queue = Queue::connect(&server.url(), "orders").unwrap();
        assert_eq!(runs(&queue, "schedule/hourly/").len(), 1);
        if change == "remove" {
            assert!(queue.remove_schedule("hourly").unwrap());
            assert_eq!(runs(&queue, "schedule/hourly/"), []);
        } else {
            let answer = queue.upsert_schedule("hourly", &hourly, b"new").unwrap();
            assert_eq!(answer, Upserted::Updated);
            let waiting = runs(&queue, "schedule/hourly/");
            let payloads: Vec<&[u8]> = waiting.iter().map(|(_, p)| &p[..]).collect();
            assert_eq!(payloads, [b"new"], "runs waiting: {waiting:?}");
            assert!(queue.remove_schedule("hourly").unwrap());
        }
    }
}
