//! The std layer's lifecycle: shutdown (plain and graceful), the last
//! handle dropped (also from inside a task), and what happens to values
//! that cannot be delivered (a panicking task, a refused hand-off). Mostly
//! on a `ManualClock`, as in `timer.rs`.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::sync::Mutex;

use tickwheel::timer::{
    Expired, Inline, ManualClock, MissedTicks, Task, ThreadPool, Undelivered, Why,
};
use tickwheel::Timer;

#[allow(dead_code)]
use crate::timers;
use timers::{advance, channel_timer, manual_pool};

const MS: Duration = Duration::from_millis(1);

#[test]
fn shutdown_returns_every_unfired_timer_and_refuses_new_ones() {
    let (clock, timer, rx) = channel_timer();
    let t0 = tickwheel::timer::Clock::now(&clock);
    for i in 0..100u32 {
        timer.schedule((i % 10 + 1) * 10 * MS, i).unwrap();
    }
    timer
        .schedule_repeating(15 * MS, 100 * MS, MissedTicks::Burst, || 1_000)
        .unwrap();
    advance(&clock, &timer, 25 * MS); // fires i % 10 in {0, 1} and the repeat
    let fired: Vec<u32> = rx.try_iter().collect();
    let unfired = timer.shutdown();
    let mut all: Vec<u32> = fired
        .iter()
        .copied()
        .chain(unfired.iter().map(|(_, v)| *v))
        .collect();
    all.sort();
    let mut want: Vec<u32> = (0..100).chain([1_000, 1_000]).collect();
    want.sort();
    assert_eq!(all, want, "each value fired or returned, exactly once");
    // Deadlines come back too: the repeat's next run is at 115 ms.
    assert!(unfired
        .iter()
        .any(|&(d, v)| v == 1_000 && d - t0 == 115 * MS));
    let err = timer.schedule(MS, 7).unwrap_err();
    assert!(err.is_shutdown());
    assert_eq!(err.into_inner(), 7);
    assert!(timer.shutdown().is_empty());
}

/// A task run on the driver thread may park it (a channel `recv` does):
/// the unpark that `shutdown` sends can then wake the task instead of the
/// driver, and a driver that trusted the unpark slept for ever.
#[test]
fn shutdown_returns_when_a_task_parked_the_driver_thread() {
    let (started_tx, started) = crossbeam_channel::bounded(1);
    let timer = Timer::builder()
        .executor(move |_: Expired<()>| {
            started_tx.send(()).unwrap();
            std::thread::park(); // returns on the next unpark of this thread
        })
        .build()
        .unwrap();
    timer.schedule(MS, ()).unwrap();
    started.recv_timeout(Duration::from_secs(10)).unwrap();
    let (done_tx, done) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || done_tx.send(timer.shutdown().len()).unwrap());
    assert_eq!(
        done.recv_timeout(Duration::from_secs(10)),
        Ok(0),
        "shutdown hung"
    );
}

#[test]
fn graceful_shutdown_fires_what_is_due_and_drains_the_pool() {
    let (clock, timer) = manual_pool();
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..50 {
        let done = Arc::clone(&done);
        timer
            .schedule(
                MS,
                Box::new(move || {
                    std::thread::sleep(MS);
                    done.fetch_add(1, Ordering::SeqCst);
                }),
            )
            .unwrap();
    }
    timer
        .schedule(Duration::from_secs(60), Box::new(|| ()))
        .unwrap();
    clock.advance(2 * MS);
    let future = timer.shutdown_graceful();
    assert_eq!(done.load(Ordering::SeqCst), 50, "the pool was not drained");
    assert_eq!(future.len(), 1);
}

/// A pool task that shuts its own timer down gracefully waits for the
/// other tasks, not for itself: the call once never returned (the flush
/// counted the calling task), leaking the worker and the unfired timers.
#[test]
fn a_pool_task_can_shut_its_timer_down_gracefully() {
    let timer = Timer::new().unwrap();
    // Scheduled first: a stalled test thread must not find its timer
    // already shut down.
    timer.run_after(Duration::from_secs(60), || ()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let other = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&other);
    timer
        .run_after(MS, move || {
            std::thread::sleep(50 * MS);
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let own = timer.clone();
    timer
        .run_after(5 * MS, move || {
            let _ = tx.send(own.shutdown_graceful().len());
        })
        .unwrap();
    let unfired = rx.recv_timeout(Duration::from_secs(5));
    assert_eq!(unfired, Ok(1), "the graceful shutdown never returned");
    assert_eq!(
        other.load(Ordering::SeqCst),
        1,
        "it did not wait for the other task"
    );
}

#[test]
fn a_panicking_task_is_counted_and_nothing_else_is_affected() {
    for pool in [false, true] {
        let clock = ManualClock::new();
        let builder = Timer::builder().clock(clock.clone());
        let ran = Arc::new(AtomicUsize::new(0));
        let tasks = |timer: &dyn Fn(Task)| {
            for i in 0..10 {
                let ran = Arc::clone(&ran);
                timer(Box::new(move || {
                    assert!(i % 3 != 0, "task {i} panics");
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
        };
        let stats = if pool {
            let timer = builder.executor(ThreadPool::new(1)).build().unwrap();
            tasks(&|t| {
                timer.schedule(MS, t).unwrap();
            });
            advance(&clock, &timer, 2 * MS);
            let _ = timer.shutdown_graceful();
            timer.stats()
        } else {
            let timer = builder.executor(Inline).build().unwrap();
            tasks(&|t| {
                timer.schedule(MS, t).unwrap();
            });
            advance(&clock, &timer, 2 * MS);
            // The driver survived: it still fires.
            let later = Arc::clone(&ran);
            timer
                .schedule(
                    MS,
                    Box::new(move || {
                        later.fetch_add(100, Ordering::SeqCst);
                    }),
                )
                .unwrap();
            advance(&clock, &timer, 2 * MS);
            timer.stats()
        };
        assert_eq!(stats.panicked, 4, "pool: {pool}");
        assert_eq!(ran.load(Ordering::SeqCst) % 100, 6, "pool: {pool}");
        assert_eq!(stats.fired, if pool { 10 } else { 11 });
    }
}

#[test]
fn the_channel_executor_is_a_delay_queue() {
    let (clock, queue, ready) = channel_timer();
    for (delay, job) in [
        (300, "refund #3"),
        (100, "close order #1"),
        (200, "confirm #2"),
    ] {
        queue.schedule(delay * MS, job).unwrap();
    }
    advance(&clock, &queue, 150 * MS);
    assert_eq!(ready.try_recv().unwrap(), "close order #1");
    assert!(ready.try_recv().is_err());
    advance(&clock, &queue, 200 * MS);
    assert_eq!(
        ready.try_iter().collect::<Vec<_>>(),
        ["confirm #2", "refund #3"]
    );
}

#[test]
fn a_rejected_hand_off_reaches_the_hook() {
    let clock = ManualClock::new();
    let (tx, rx) = crossbeam_channel::unbounded();
    drop(rx); // nobody listens: every send is rejected
    let lost = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lost);
    let timer = Timer::builder()
        .clock(clock.clone())
        .executor(tx)
        .on_undelivered(move |u: Undelivered<u32>| {
            sink.lock().unwrap().push((u.why, u.fired.value))
        })
        .build()
        .unwrap();
    timer.schedule(MS, 1).unwrap();
    advance(&clock, &timer, 2 * MS);
    assert_eq!(*lost.lock().unwrap(), [(Why::Rejected, 1)]);
    assert_eq!(timer.stats().rejected, 1);
}

#[test]
fn dropping_the_last_handle_joins_the_thread_and_hands_back_pending_values() {
    let name = "tickwheel-drop-test";
    let lost = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lost);
    let timer = Timer::builder()
        .thread_name(name)
        .on_undelivered(move |u: Undelivered<Task>| sink.lock().unwrap().push(u.why))
        .build()
        .unwrap();
    let clone = timer.clone();
    timer
        .schedule(Duration::from_secs(60), Box::new(|| ()))
        .unwrap();
    timer.sync(); // the driver has started (and named itself)
    assert_eq!(driver_threads(name, 1), 1, "the driver is running");
    drop(timer);
    assert_eq!(driver_threads(name, 1), 1, "a clone still holds it");
    drop(clone);
    // Joined; the kernel lists an exiting thread a moment after its join.
    assert_eq!(
        settled(|| driver_threads(name, 0), 0),
        0,
        "the driver thread outlived the last handle"
    );
    assert_eq!(*lost.lock().unwrap(), [Why::Dropped]);
}

/// Threads of this process with the given name, where the platform lists
/// them (Linux's `/proc`); elsewhere `expected`, so the test checks only
/// the values handed back.
fn driver_threads(name: &str, expected: usize) -> usize {
    if !cfg!(target_os = "linux") {
        return expected;
    }
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.trim_end() == &name[..name.len().min(15)])
                .count()
        })
        .expect("/proc/self/task lists this process's threads")
}

/// `count()` once it equals `want`, or after 5 s: `/proc` lists a thread
/// by its name only once it runs, and an exited one a moment after its
/// join.
fn settled(count: impl Fn() -> usize, want: usize) -> usize {
    let give_up = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = count();
        if now == want || std::time::Instant::now() >= give_up {
            return now;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The last handle is dropped inside a task: on the driver thread
/// (`Inline`) or on a pool worker. Neither may try to join itself.
fn drop_last_handle_in_a_task<E: tickwheel::timer::Executor<Task>>(timer: Timer<Task, E>) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let cell: Arc<Mutex<Option<Timer<Task, E>>>> = Arc::default();
    *cell.lock().unwrap() = Some(timer.clone());
    let inner = Arc::clone(&cell);
    let task: Task = Box::new(move || {
        drop(inner.lock().unwrap().take());
        tx.send(()).unwrap();
    });
    timer.schedule(MS, task).unwrap();
    drop(timer);
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the task never finished");
}

#[test]
fn a_task_can_drop_the_last_handle_without_deadlock() {
    drop_last_handle_in_a_task(Timer::builder().executor(Inline).build().unwrap());
    drop_last_handle_in_a_task(
        Timer::builder()
            .executor(ThreadPool::new(1))
            .build()
            .unwrap(),
    );
}

/// Today's bug: a thread name with a NUL byte panicked inside `build`
/// (std's thread spawn).
#[test]
fn a_thread_name_with_a_nul_byte_is_a_build_error() {
    match Timer::builder().thread_name("order\0timeouts").build() {
        Err(tickwheel::timer::BuildError::ThreadName(name)) => assert_eq!(name, "order\0timeouts"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("built a timer with a NUL in its thread name"),
    }
}

/// Threads of this process whose name starts with `prefix` (Linux).
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with(prefix))
        .count()
}

/// Today's cost: `Timer::new()` started its pool's workers at once, so a
/// timer used only for futures kept idle threads. They start with the
/// first task.
#[cfg(target_os = "linux")]
#[test]
fn the_pool_starts_its_workers_with_the_first_task() {
    use tickwheel::timer::ThreadPool;
    let timer = Timer::builder()
        .executor(ThreadPool::new(2).name("lazypool"))
        .build()
        .unwrap();
    // Started workers name themselves once they run: give them time to.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(threads_named("lazypool-"), 0, "workers before any task");
    let (tx, rx) = std::sync::mpsc::channel();
    timer
        .schedule(
            Duration::from_millis(1),
            Box::new(move || tx.send(7).unwrap()),
        )
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
    // A new thread names itself once it runs: wait for the second.
    assert_eq!(settled(|| threads_named("lazypool-"), 2), 2);
    drop(timer);
    // Joined; the kernel lists an exiting thread a moment after its join.
    assert_eq!(
        settled(|| threads_named("lazypool-"), 0),
        0,
        "joined at drop"
    );
}

/// `sync` from a task the driver runs inline returns at once: it once
/// waited for the pass it was part of, and the driver, and with it the
/// whole timer, stopped for good.
#[test]
fn sync_from_an_inline_task_does_not_stop_the_driver() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .executor(Inline)
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (own, first) = (timer.clone(), tx.clone());
    timer
        .run_after(MS, move || {
            own.sync();
            let _ = first.send("first");
        })
        .unwrap();
    timer
        .run_after(3 * MS, move || {
            let _ = tx.send("second");
        })
        .unwrap();
    clock.advance(2 * MS);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("first"));
    clock.advance(2 * MS);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("second"));
    assert!(timer.shutdown().is_empty());
}

/// Today's bug: `shutdown` waited while the driver handed over its whole
/// backlog (2,000 tasks at 2 ms each: 4 s), and returned nothing. It now
/// stops between two hand-offs and returns the rest.
#[test]
fn shutdown_stops_a_backlog_between_two_hand_offs() {
    let clock = ManualClock::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&ran);
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(move |_: Expired<u32>| {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(2 * MS);
        })
        .build()
        .unwrap();
    for value in 0..2000 {
        timer.schedule(MS, value).unwrap();
    }
    clock.advance(2 * MS);
    while ran.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(MS);
    }
    let left = timer.shutdown();
    let ran_by_then = ran.load(Ordering::SeqCst);
    // The bug ran all 2,000 (4 s); a loaded machine that stalls this
    // thread for a while still stops well before half.
    assert!(ran_by_then < 1000, "{ran_by_then} ran before the stop took");
    assert_eq!(left.len() + ran_by_then, 2000);
    let mut values: Vec<u32> = left.iter().map(|&(_, v)| v).collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), left.len());
    std::thread::sleep(20 * MS);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        ran_by_then,
        "ran after shutdown"
    );
}

/// A task the driver runs inline stops the timer: nothing runs after the
/// stop returns; the rest of its hand-off goes to the hook as `Stopped`.
#[test]
fn an_inline_shutdown_runs_nothing_after_it_returns() {
    type Stop = Box<dyn Fn() -> usize + Send + Sync>;
    let stop: Arc<Mutex<Option<Stop>>> = Arc::default();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let stopped = Arc::new(Mutex::new(Vec::new()));
    let (me, log, sink) = (Arc::clone(&stop), Arc::clone(&ran), Arc::clone(&stopped));
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .executor(move |fired: Expired<u32>| {
            log.lock().unwrap().push(fired.value);
            if fired.value == 3 {
                let returned = (me.lock().unwrap().take().unwrap())();
                log.lock().unwrap().push(100 + returned as u32);
            }
        })
        .on_undelivered(move |u: Undelivered<u32>| {
            sink.lock().unwrap().push((u.why, u.fired.value))
        })
        .build()
        .unwrap();
    for value in 0..10 {
        timer.schedule(MS, value).unwrap();
    }
    timer.schedule(Duration::from_secs(60), 99).unwrap();
    let inner = timer.clone();
    *stop.lock().unwrap() = Some(Box::new(move || inner.shutdown().len()));
    clock.advance(2 * MS);
    let start = std::time::Instant::now();
    while stopped.lock().unwrap().len() < 6 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            stopped.lock().unwrap()
        );
        std::thread::sleep(MS);
    }
    // The stop returned the one timer still in a wheel (99).
    assert_eq!(*ran.lock().unwrap(), [0, 1, 2, 3, 101]);
    let stopped = stopped.lock().unwrap().clone();
    assert_eq!(
        stopped,
        (4..10).map(|v| (Why::Stopped, v)).collect::<Vec<_>>()
    );
    drop(timer);
}
