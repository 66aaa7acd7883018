//! Job schedulers on a queue whose misfire policy does not fire late jobs:
//! the runs a scheduler's `Missed` policy makes for instants missed while
//! no consumer ran reach a consumer; the queue's policy does not discard
//! or dead-letter them.

use core::time::Duration;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwheel::persist::{MisfirePolicy, OnMissed};
use tickwheel::redis::{Missed, Queue, Schedule};

use crate::queues::MS;
use crate::redis_server::RedisServer;

fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// A minute's scheduler whose instants fall 30 s before the test starts,
/// and whose record says it made runs up to five minutes ago (what an
/// outage of every consumer leaves): five instants missed, the latest
/// 30 s ago. On a queue that discards or dead-letters jobs found more
/// than 5 s late, the next consumer still gets the runs the scheduler's
/// policy makes of them: one (`RunOnce`) or all five (`RunAll`). They
/// were due at their instants, so the claim found them 30 s and more
/// late and the queue's misfire policy discarded or dead-lettered each.
#[test]
fn missed_runs_follow_the_schedulers_policy_not_the_queues() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    for (on_missed, how) in [
        (OnMissed::Discard, "discard"),
        (OnMissed::DeadLetter, "dead"),
    ] {
        for (policy, name, want) in [(Missed::RunOnce, "once", 1), (Missed::RunAll, "all", 5)] {
            let queue_name = format!("beats-{how}-{name}");
            let start = SystemTime::now() - Duration::from_secs(30);
            let start = UNIX_EPOCH + Duration::from_secs(micros(start) / 1_000_000);
            let misfire = MisfirePolicy::<()>::default()
                .threshold(Duration::from_secs(5))
                .on_missed(on_missed.clone());
            let builder = || {
                Queue::builder(&server.url(), &queue_name)
                    .misfire(&misfire)
                    .unwrap()
            };
            let queue = builder().connect().unwrap();
            // On the grid of `start`, from ten minutes before it.
            let origin = start - Duration::from_secs(600);
            let every = Schedule::every_from(Duration::from_secs(60), origin).missed(policy);
            queue.upsert_schedule("beat", &every, b"sweep").unwrap();
            // Five minutes down: the run made is gone, and the record says
            // runs were made up to five minutes ago.
            for job in queue.pending(.., 1_000, None).unwrap().jobs {
                queue.cancel(&job.id).unwrap();
            }
            let hash = format!("tw:{{{queue_name}}}:schedules");
            let reply = server.command(&["HGET", &hash, "beat"]);
            // A bulk reply: `$len\r\n`, the record, `\r\n`.
            let record = &reply[reply.find("\r\n").unwrap() + 2..reply.len() - 2];
            let record: Vec<&str> = record.split('\n').collect();
            let then = micros(start) - 270_000_000;
            let moved = format!("{}\n{then}\n{}", record[0], record[2..].join("\n"));
            server.command(&["HSET", &hash, "beat", &moved]);
            // A consumer starts: its task makes the missed runs.
            let consumers = builder().connect().unwrap();
            let consumer = consumers.consumer().unwrap();
            let mut ran = Vec::new();
            let give_up = Instant::now() + Duration::from_secs(10);
            while ran.len() < want && Instant::now() < give_up {
                for job in consumer.fetch(10, 200 * MS).unwrap() {
                    let (_, at) = job.schedule().unwrap();
                    assert!(job.due >= at, "{how}/{name}: a run due before its instant");
                    ran.push(micros(at));
                    consumer.ack(&job).unwrap();
                }
            }
            let (discarded, dead) = (
                consumers.metrics().discarded,
                consumers.metrics().dead_lettered,
            );
            assert_eq!(
                ran.len(),
                want,
                "{how}/{name}: {} of {want} missed runs ran ({discarded} discarded, {dead} dead-lettered)",
                ran.len()
            );
            // The latest missed instant for `RunOnce`, each in order for
            // `RunAll`.
            let last = micros(start);
            let expected: Vec<u64> = (0..want as u64)
                .rev()
                .map(|k| last - k * 60_000_000)
                .collect();
            assert_eq!(ran, expected, "{how}/{name}");
            assert_eq!((discarded, dead), (0, 0), "{how}/{name}");
            assert_eq!(consumers.len().unwrap().1, 0, "{how}/{name}: dead letters");
        }
    }
}
