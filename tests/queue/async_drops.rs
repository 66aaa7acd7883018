//! Async futures dropped at awkward moments, on a real `redis-server`: a
//! `fetch` dropped after its answer came but before it was read hands its
//! jobs on instead of leaving them leased to nobody.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use tickwheel::redis::Scheduled;

use crate::queues::builder;
use crate::redis_server::RedisServer;

/// Today's bug: the jobs a fetch was answered with counted as handed over
/// once the answer was sent; dropped unread (a lost `select!` branch), they
/// waited out their lease, and with `max_attempts(1)` went to the dead
/// letters without ever reaching user code.
#[test]
fn a_fetch_dropped_unread_hands_its_jobs_to_the_next_fetch() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server)
        .lease(Duration::from_secs(30))
        .max_attempts(1)
        .connect()
        .unwrap();
    let Scheduled::Created { .. } = queue.schedule_in("j1", Duration::ZERO, b"x").unwrap() else {
        panic!("not created");
    };
    let consumer = queue.to_async().consumer().unwrap();
    {
        let mut fetch = pin!(consumer.fetch(1, Duration::from_secs(5)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fetch.as_mut().poll(&mut cx).is_pending());
        // The claim goes out and its answer comes back, unread.
        std::thread::sleep(Duration::from_millis(500));
    }
    let started = std::time::Instant::now();
    let got = pollster_block_on(consumer.fetch(1, Duration::from_secs(10))).unwrap();
    assert_eq!(got.len(), 1, "the job stayed leased to a dropped future");
    assert_eq!((got[0].id.as_str(), got[0].attempt), ("j1", 1));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(queue.dead_letters(10).unwrap().len(), 0);
}

/// A minimal `block_on`: the queue's futures need no runtime.
fn pollster_block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
