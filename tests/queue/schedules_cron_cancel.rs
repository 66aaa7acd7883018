//! Job schedulers whose cron timetable runs a day or more apart, each test
//! on its own real `redis-server`: removing or changing one cancels its
//! next run, made ahead by the upsert.

use tickwheel::redis::{Schedule, Upserted};

use crate::queues::builder;
use crate::redis_server::RedisServer;
use crate::schedules::waiting;

/// `Queue::remove_schedule`: "Removes the job scheduler `key` and cancels
/// its runs still waiting", and `Queue::upsert_schedule`: "with another
/// [timetable or payload], the old runs still waiting are cancelled". A
/// daily, weekly or yearly cron scheduler's next run (made by the upsert,
/// "at least the next one, however far") was left waiting: the cancel
/// looked back only a day from the instant after the horizon, which for
/// such a timetable holds no run made, and the run was delivered after
/// its scheduler was gone.
#[test]
fn removing_or_changing_a_daily_cron_scheduler_cancels_its_next_run() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    for (key, expression) in [
        ("daily", "0 30 2 * * *"),
        ("weekly", "0 0 4 * * Sun"),
        ("yearly", "0 0 0 1 1 *"),
    ] {
        let timetable = Schedule::cron(expression, "Europe/Paris").unwrap();
        assert_eq!(
            queue.upsert_schedule(key, &timetable, b"a").unwrap(),
            Upserted::Created
        );
        let made = waiting(&queue);
        assert_eq!(made.len(), 1, "{key}: {made:?}");
        assert!(queue.remove_schedule(key).unwrap());
        let left = waiting(&queue);
        assert!(
            left.is_empty(),
            "{key}: runs left after the removal: {left:?}"
        );

        // Added again, then changed: only the new version's run waits.
        queue.upsert_schedule(key, &timetable, b"a").unwrap();
        assert_eq!(
            queue.upsert_schedule(key, &timetable, b"b").unwrap(),
            Upserted::Updated
        );
        let page = queue.pending(.., 1_000, None).unwrap();
        let payloads: Vec<&[u8]> = page.jobs.iter().map(|j| j.payload.as_slice()).collect();
        assert_eq!(payloads, [b"b".as_slice()], "{key}: {:?}", waiting(&queue));
        assert!(queue.remove_schedule(key).unwrap());
        assert!(waiting(&queue).is_empty(), "{key}: {:?}", waiting(&queue));
    }
}
