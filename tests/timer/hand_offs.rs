//! User code the driver meets on its way: a value whose `Drop` panics, an
//! executor whose `flush` panics, tasks that schedule at the `max_pending`
//! limit. The driver survives, every value is accounted for, and the limit
//! counts only what is pending.

use alloc::sync::Arc;
use core::time::Duration;
use std::sync::Mutex;
use std::time::Instant;

use tickwheel::timer::Why;
use tickwheel::timer::{
    BuildError, Clock, Executor, Expired, Inline, ManualClock, Rejected, ThreadPool, Undelivered,
};
use tickwheel::Timer;

use crate::timers::{advance, wait_for, Bomb};

const MS: Duration = Duration::from_millis(1);

/// Today's bug: a refused value with no hook was dropped on the driver
/// thread, outside any `catch_unwind`; a panicking `Drop` killed the
/// driver, and later timers were accepted but never fired.
#[test]
fn a_value_whose_drop_panics_does_not_kill_the_driver() {
    let (tx, rx) = crossbeam_channel::unbounded::<Bomb>();
    drop(rx); // every hand-off is refused, and nobody takes the value
    let timer = Timer::builder()
        .executor(tx)
        .slack(Duration::ZERO)
        .build()
        .unwrap();
    timer.schedule(MS, Bomb(1)).unwrap();
    wait_for("the first value was never dropped", || {
        timer.stats().panicked == 1
    });
    timer.schedule(MS, Bomb(2)).unwrap();
    wait_for("the driver died with the first value", || {
        timer.stats().panicked == 2
    });
    let stats = timer.stats();
    assert_eq!((stats.rejected, stats.dropped, stats.pending), (2, 2, 0));
    let left = timer.shutdown();
    assert!(left.is_empty());
}

/// An executor whose `flush` panics.
struct BadFlush;

impl Executor<u32> for BadFlush {
    fn execute(&self, _fired: Expired<u32>) -> Result<(), Rejected<u32>> {
        Ok(())
    }

    fn flush(&self) {
        panic!("flush");
    }
}

/// Today's bug: a panic in `flush` during `shutdown_graceful` skipped the
/// drain; every pending value vanished, uncounted, even at drop.
#[test]
fn a_panicking_flush_loses_no_pending_value() {
    let handed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&handed);
    let timer = Timer::builder()
        .executor(BadFlush)
        .on_undelivered(move |u: Undelivered<u32>| sink.lock().unwrap().push(u.fired.value))
        .build()
        .unwrap();
    for value in 0..3 {
        timer.schedule(Duration::from_secs(60), value).unwrap();
    }
    let mut left: Vec<u32> = timer
        .shutdown_graceful()
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    left.sort_unstable();
    assert_eq!(left, [0, 1, 2]);
    assert_eq!(timer.stats().panicked, 1);
    assert_eq!(timer.pending(), 0);
    drop(timer);
    assert!(handed.lock().unwrap().is_empty());
}

/// Today's bug: the reservations of fired one-shots were released after
/// the whole batch had been handed over, so a task scheduling its
/// successor at the limit was refused with nothing pending: 256 of 300.
#[test]
fn tasks_can_schedule_their_successors_at_the_limit() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .max_pending(300)
        .executor(Inline)
        .build()
        .unwrap();
    let refused = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..300 {
        let (me, log) = (timer.clone(), Arc::clone(&refused));
        timer
            .run_after(MS, move || {
                if let Err(err) = me.run_after(Duration::from_secs(10), || {}) {
                    log.lock().unwrap().push((me.pending(), err.kind()));
                }
            })
            .unwrap();
    }
    advance(&clock, &timer, 2 * MS);
    let refused = refused.lock().unwrap();
    assert!(
        refused.is_empty(),
        "{} refused, first {:?}",
        refused.len(),
        refused.first()
    );
    assert_eq!(timer.pending(), 300);
    // The limit still holds.
    assert!(timer.run_after(MS, || {}).is_err());
    drop(refused);
    timer.shutdown();
}

/// Today's bug: on a one-worker pool, a task that shut its timer down
/// gracefully waited for the tasks queued behind it, which only its own
/// worker could run: neither ever finished.
#[test]
fn a_graceful_shutdown_from_a_one_worker_pool_runs_what_is_queued() {
    // A manual clock: nothing runs until all five are scheduled, however
    // slowly this thread gets to schedule them.
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .clock(clock.clone())
        .executor(ThreadPool::new(1))
        .slack(Duration::ZERO)
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (own, done) = (timer.clone(), tx.clone());
    // One instant for all four: one hand-off, the stopping task first.
    let at = clock.now() + 5 * MS;
    timer
        .run_at(at, move || {
            let left = own.shutdown_graceful().len();
            done.send(format!("stopped, {left} left")).unwrap();
        })
        .unwrap();
    for i in 0..3 {
        let done = tx.clone();
        timer
            .run_at(at, move || done.send(format!("ran {i}")).unwrap())
            .unwrap();
    }
    timer.run_after(Duration::from_secs(60), || ()).unwrap();
    clock.advance(5 * MS);
    let mut got: Vec<String> = (0..4)
        .map(|_| rx.recv_timeout(Duration::from_secs(5)).expect("a deadlock"))
        .collect();
    got.sort();
    assert_eq!(got, ["ran 0", "ran 1", "ran 2", "stopped, 1 left"]);
}

/// Today's bug: a pool name with a NUL byte built a timer whose every task
/// panicked in std's thread spawn and was lost, counted as fired.
#[test]
fn a_pool_name_with_a_nul_byte_is_a_build_error() {
    match Timer::builder()
        .executor(ThreadPool::new(2).name("bad\0name"))
        .build()
    {
        Err(BuildError::Spawn(err)) => assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("built a pool whose workers cannot be named"),
    }
}

/// Today's bug: a repeating timer's run was made and handed over after
/// the driver let go of the lock, so a cancel meanwhile answered `Some`
/// and a run started after it. Now a run taken but not yet being handed
/// over never starts once a cancel has answered; the run the executor
/// already has finishes.
#[test]
fn a_cancelled_repeating_timer_starts_no_run_after_the_cancel() {
    let clock = ManualClock::new();
    let (gate_tx, gate_rx) = crossbeam_channel::bounded::<()>(0);
    let gate = Mutex::new(Some(gate_rx));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&ran);
    let timer = Timer::builder()
        .clock(clock.clone())
        .shards(1)
        .slack(Duration::ZERO)
        .executor(move |fired: Expired<u32>| {
            log.lock().unwrap().push(fired.value);
            // The first run holds the hand-off until the test lets go.
            if let Some(gate) = gate.lock().unwrap().take() {
                gate.recv().unwrap();
            }
        })
        .build()
        .unwrap();
    // Dropped before the timer, so a failing assert cannot leave the
    // driver blocked in the gate while the drop joins it.
    let gate_tx = gate_tx;
    let period = Duration::from_secs(1);
    let first = timer
        .schedule_repeating(10 * MS, period, tickwheel::timer::MissedTicks::Skip, || 0)
        .unwrap();
    let second = timer
        .schedule_repeating(10 * MS, period, tickwheel::timer::MissedTicks::Skip, || 1)
        .unwrap();
    clock.advance(10 * MS);
    wait_for("the first run never started", || {
        ran.lock().unwrap().len() == 1
    });
    // Both runs are taken; the second waits behind the first's hand-off.
    assert_eq!(timer.cancel(second), Some(1));
    assert_eq!(timer.cancel(first), Some(0));
    gate_tx.send(()).unwrap();
    advance(&clock, &timer, 3 * period);
    assert_eq!(*ran.lock().unwrap(), [0]);
    assert_eq!(timer.pending(), 0);
}

/// A closure executor, boxed so that its timer's type can be named.
type Recorder = Box<dyn Fn(Expired<u32>) + Send + Sync>;

/// A timer on a manual clock whose closure executor records each run's
/// value and holds the first run until `release` is called, so that the
/// driver has taken a backlog and not handed it over.
struct Held {
    clock: ManualClock,
    timer: Timer<u32, Recorder>,
    ran: Arc<Mutex<Vec<u32>>>,
    gate: crossbeam_channel::Sender<()>,
}

fn held() -> Held {
    let clock = ManualClock::new();
    let (gate, gate_rx) = crossbeam_channel::bounded::<()>(0);
    let first = Mutex::new(Some(gate_rx));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&ran);
    let executor: Recorder = Box::new(move |fired| {
        log.lock().unwrap().push(fired.value);
        if let Some(gate) = first.lock().unwrap().take() {
            let _ = gate.recv();
        }
    });
    let timer = Timer::builder()
        .clock(clock.clone())
        .shards(1)
        .slack(Duration::ZERO)
        .executor(executor)
        .build()
        .unwrap();
    Held {
        clock,
        timer,
        ran,
        gate,
    }
}

impl Held {
    /// A `Burst` job every 1 ms from 1 ms, its clock moved to 10.5 ms: the
    /// driver takes runs 1 to 10 and holds in the first.
    fn backlog(
        &self,
        make: impl Fn() -> u32 + Send + Sync + 'static,
    ) -> tickwheel::timer::TimerHandle {
        let handle = self
            .timer
            .schedule_repeating(MS, MS, tickwheel::timer::MissedTicks::Burst, make)
            .unwrap();
        self.clock.advance(10 * MS + MS / 2);
        wait_for("the first run never started", || {
            self.ran.lock().unwrap().len() == 1
        });
        handle
    }
}

/// Today's bug: a shutdown while the driver handed over a repeating
/// timer's backlog lost the runs it had taken: the timer came back at the
/// grid point after all of them (11 ms), runs 2 to 10 in no count.
#[test]
fn a_shutdown_mid_backlog_returns_the_timer_from_its_first_run_not_handed_over() {
    let held = held();
    held.backlog(|| 7);
    let timer = held.timer.clone();
    let origin = held.clock.now() - 10 * MS - MS / 2;
    let stop = std::thread::spawn(move || timer.shutdown());
    // The stop waits on the held run. Until it has begun, a probe an
    // hour out is taken (and handed back by the stop).
    let (mut probes, began) = (0, Instant::now());
    loop {
        match held.timer.schedule(Duration::from_secs(3600), 0) {
            Ok(_) => probes += 1,
            Err(err) if err.is_shutdown() => break,
            Err(err) => panic!("{err}"),
        }
        assert!(began.elapsed() < Duration::from_secs(10), "no stop");
        std::thread::sleep(MS);
    }
    held.gate.send(()).unwrap();
    let mut left = stop.join().unwrap();
    let handed_back = left.len();
    left.retain(|&(_, value)| value != 0);
    assert_eq!(handed_back - left.len(), probes, "a probe was lost");
    assert_eq!(left, [(origin + 2 * MS, 7)]);
    assert_eq!(*held.ran.lock().unwrap(), [7]);
}

/// A reset while the driver holds a backlog: the runs it took before the
/// reset never start (it answered `true`: the schedule restarts there).
#[test]
fn runs_taken_before_a_reset_never_start() {
    let held = held();
    let handle = held.backlog(|| 7);
    assert!(held.timer.reset(handle, Duration::from_secs(3600)));
    held.gate.send(()).unwrap();
    advance(&held.clock, &held.timer, Duration::from_secs(1));
    assert_eq!(*held.ran.lock().unwrap(), [7]);
    assert_eq!(held.timer.pending(), 1);
}

/// A factory's captured state whose `Drop` panics, dropped on the driver
/// when the runs it took were skipped by a cancel: counted, and the driver
/// goes on.
#[test]
fn a_factory_dropped_on_the_driver_may_panic() {
    let held = held();
    let handle = held.backlog({
        let bomb = Bomb(0);
        move || {
            let _ = &bomb;
            7
        }
    });
    assert_eq!(held.timer.cancel(handle), Some(7));
    held.gate.send(()).unwrap();
    held.timer.schedule(MS, 8).unwrap();
    held.clock.advance(2 * MS);
    wait_for("the driver died with the factory", || {
        held.ran.lock().unwrap().len() == 2
    });
    assert_eq!(*held.ran.lock().unwrap(), [7, 8]);
    assert_eq!(held.timer.stats().panicked, 1);
}

type Stop = Box<dyn Fn() -> usize + Send + Sync>;

/// A timer on a manual clock whose executor records values and whose
/// hook records what it is given; `stop` is called (once) by the executor
/// on value 100 and by factories that ask for it.
struct Stopping {
    clock: ManualClock,
    timer: Timer<u32, Recorder>,
    ran: Arc<Mutex<Vec<u32>>>,
    hooked: Arc<Mutex<Vec<(Why, u32)>>>,
    stop: Arc<Mutex<Option<Stop>>>,
}

fn stopping() -> Stopping {
    let clock = ManualClock::new();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let hooked = Arc::new(Mutex::new(Vec::new()));
    let stop: Arc<Mutex<Option<Stop>>> = Arc::default();
    let (log, me) = (Arc::clone(&ran), Arc::clone(&stop));
    let executor: Recorder = Box::new(move |fired| {
        log.lock().unwrap().push(fired.value);
        if fired.value == 100 {
            let stop = me.lock().unwrap().take();
            stop.map(|stop| stop());
        }
    });
    let sink = Arc::clone(&hooked);
    let timer = Timer::builder()
        .clock(clock.clone())
        .shards(1)
        .slack(Duration::ZERO)
        .executor(executor)
        .on_undelivered(move |u: Undelivered<u32>| {
            sink.lock().unwrap().push((u.why, u.fired.value))
        })
        .build()
        .unwrap();
    let inner = timer.clone();
    *stop.lock().unwrap() = Some(Box::new(move || inner.shutdown().len()));
    Stopping {
        clock,
        timer,
        ran,
        hooked,
        stop,
    }
}

/// Today's bug: a task the driver ran inline stopped the timer; the
/// repeating runs left in that hand-off were neither handed over, nor
/// given to the hook, nor covered by the returned timer's deadline.
#[test]
fn an_inline_stop_gives_the_repeating_runs_it_left_to_the_hook() {
    let s = stopping();
    s.timer.schedule(MS / 2, 100).unwrap();
    s.timer
        .schedule_repeating(MS, MS, tickwheel::timer::MissedTicks::Burst, || 7)
        .unwrap();
    s.clock.advance(3 * MS + MS / 2);
    wait_for("the stop's hand-off never reached the hook", || {
        s.hooked.lock().unwrap().len() == 3
    });
    assert_eq!(*s.ran.lock().unwrap(), [100]);
    assert_eq!(*s.hooked.lock().unwrap(), [(Why::Stopped, 7); 3]);
}

/// Today's bug: a factory that stopped its timer lost its own run and the
/// rest of the backlog; now every one of them reaches the hook.
#[test]
fn a_factory_that_stops_its_timer_gives_its_runs_to_the_hook() {
    let s = stopping();
    let stop = Arc::clone(&s.stop);
    s.timer
        .schedule_repeating(MS, MS, tickwheel::timer::MissedTicks::Burst, move || {
            let once = stop.lock().unwrap().take();
            once.map(|stop| stop());
            7
        })
        .unwrap();
    s.clock.advance(10 * MS + MS / 2);
    wait_for("the runs never reached the hook", || {
        s.hooked.lock().unwrap().len() == 10
    });
    assert!(s.ran.lock().unwrap().is_empty());
    assert_eq!(*s.hooked.lock().unwrap(), [(Why::Stopped, 7); 10]);
}

/// Today's bug: at a stop, a factory whose captured state panics on drop
/// unwound out of `shutdown`, which then returned nothing at all.
#[test]
fn a_factory_that_panics_when_dropped_at_a_stop_costs_no_other_value() {
    let s = stopping();
    let bomb = Bomb(0);
    s.timer
        .schedule_repeating(
            Duration::from_secs(60),
            MS,
            tickwheel::timer::MissedTicks::Skip,
            move || {
                let _ = &bomb;
                7
            },
        )
        .unwrap();
    s.timer.schedule(Duration::from_secs(61), 2).unwrap();
    let stop = s.stop.lock().unwrap().take().unwrap();
    assert_eq!(stop(), 2);
    assert_eq!(s.timer.stats().panicked, 1);
}
