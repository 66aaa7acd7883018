//! Found by a hostile audit: `ack_and_fetch(done, 0, _)`, which fetches
//! nothing, still claims a due job (a claim asks for at least one) and
//! hands it back, so the job's fence and the delivery counters move for a
//! delivery nobody received.
//!
//! `Delivery::fence`: "how many deliveries the job has had, this one
//! included"; `Metrics::delivered`: "Deliveries, first ones and
//! redeliveries"; `Metrics::released`: "Jobs claimed for a fetch that had
//! gone". After `ack_and_fetch(&[a], 0, _)` on a consumer whose loop has
//! not claimed yet (or while jobs are due), the next real delivery of a
//! due job says fence 2 on its first attempt, `delivered` counts it twice,
//! and `released` counts a fetch that never went.

use core::time::Duration;

use tickwheel::redis::{Acked, JobState};

use crate::queues;
use crate::redis_server;
use queues::{builder, MS};
use redis_server::RedisServer;

#[test]
fn acks_with_nothing_to_fetch_claim_no_job() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    let first = queue.consumer().unwrap();
    queue.schedule_in("a", MS, b"").unwrap();
    let a = first.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    queue.schedule_in("b", MS, b"").unwrap();
    std::thread::sleep(20 * MS);
    // A consumer that acks `a` and takes nothing.
    let acker = queue.consumer().unwrap();
    let (acked, jobs) = acker
        .ack_and_fetch(core::slice::from_ref(&a), 0, Duration::from_secs(5))
        .unwrap();
    assert_eq!(acked, [Acked::Acked]);
    assert!(jobs.is_empty());
    let b = queue.job("b").unwrap().unwrap();
    assert_eq!(b.state, JobState::Waiting);
    assert_eq!(b.fence, 0, "a fetch of nothing leased `b`: {b:?}");
    let m = queue.metrics();
    assert_eq!((m.delivered, m.released), (1, 0), "{m:?}");
    // Its first delivery is its first.
    let b = first.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!((b.attempt, b.fence()), (1, 1));
}
