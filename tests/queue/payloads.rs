//! Payloads and ids on the Redis queue: JSON payloads, and ids and
//! payloads that look like the record's own format, or nothing like text,
//! round-trip exactly.

use core::time::Duration;
use std::collections::HashMap;

use tickwheel::redis::{Cancelled, Queue, QueueError, Scheduled};

use crate::queues::{builder, take, MS};
use crate::redis_server::RedisServer;

/// JSON payloads (feature `serde`): a value goes in and comes back; a
/// payload of another shape is an error, not a panic.
#[test]
fn json_payloads_round_trip_and_bad_ones_are_errors() {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Close {
        order: u64,
        reason: String,
    }
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let close = Close {
        order: 17,
        reason: "unpaid".into(),
    };
    queue.schedule_json("order-17", MS, &close).unwrap();
    queue.schedule_in("garbage", MS, b"\xff not json").unwrap();
    let consumer = queue.consumer().unwrap();
    let mut jobs = take(&consumer, 2, Duration::from_secs(5));
    jobs.sort_by(|a, b| a.id.cmp(&b.id));
    assert!(matches!(
        jobs[0].json::<Close>().unwrap_err(),
        QueueError::Json(_)
    ));
    assert_eq!(jobs[1].json::<Close>().unwrap(), close);
}

/// Ids and payloads that look like the record's own format, or nothing
/// like text, round-trip exactly through schedule, claim, cancel and ack.
#[test]
fn hostile_ids_and_payloads_round_trip_exactly() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let big: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 % 251) as u8).collect();
    let cases: Vec<(String, Vec<u8>)> = vec![
        ("w|0|0|1|2|3|4|".to_string(), b"l|9|9|".to_vec()),
        ("{orders}".to_string(), Vec::new()),
        ("line\nbreak and space".to_string(), all_bytes.clone()),
        ("nul\0inside".to_string(), b"\0\0\0".to_vec()),
        ("ünïcødé ✓".to_string(), "payload ✓".as_bytes().to_vec()),
        ("x".repeat(512), big.clone()),
    ];
    for (id, payload) in &cases {
        let Scheduled::Created { .. } = queue.schedule_in(id, MS, payload).unwrap() else {
            panic!("{id:?} not created");
        };
    }
    let consumer = queue.consumer().unwrap();
    let mut got: HashMap<String, Vec<u8>> = HashMap::new();
    for job in take(&consumer, cases.len(), Duration::from_secs(10)) {
        assert_eq!(job.attempt, 1);
        got.insert(job.id, job.payload);
    }
    for (id, payload) in &cases {
        assert_eq!(got.get(id), Some(payload), "{id:?}");
    }
    assert_eq!(queue.len().unwrap(), (0, 0));
    // Cancel hands the same bytes back (on another queue, same ids).
    let other = Queue::connect(&server.url(), "other").unwrap();
    for (id, payload) in &cases {
        other
            .schedule_in(id, Duration::from_secs(60), payload)
            .unwrap();
        assert_eq!(
            other.cancel(id).unwrap(),
            Cancelled::Cancelled(payload.clone()),
            "{id:?}"
        );
    }
}
