//! Promises that must hold while the driver is late: held in a pass that
//! began before the time the test moves the clock to (a gate in its
//! executor stands for a late wake-up or a long hand-off). Each test
//! failed before its fix.

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Waker};
use core::time::Duration;
use std::sync::{mpsc, Mutex};

use tickwheel::timer::{Expired, ManualClock};
use tickwheel::Timer;

const MS: Duration = Duration::from_millis(1);

/// The value whose hand-off holds the driver until the test opens the gate.
const GATE: u32 = u32::MAX;

/// The executor of [`gated`] timers.
type Gate = Box<dyn Fn(Expired<u32>) + Send + Sync>;

/// A zero-slack, one-shard timer of `u32`s on a manual clock whose
/// executor sends each value to the returned receiver. [`GATE`] holds the
/// driver: the returned `entered` says it is held, `open` lets it go on.
/// Once, on the first value below `move_at`, the executor moves the clock
/// on by `moves` (time passing during a hand-off).
/// The `stall`-th value below `move_at` waits up to half a second for the
/// test to send on `checked`.
struct Gated {
    clock: ManualClock,
    timer: Timer<u32, Gate>,
    fired: mpsc::Receiver<u32>,
    entered: mpsc::Receiver<()>,
    open: mpsc::Sender<()>,
    checked: mpsc::Sender<()>,
}

fn gated(move_at: u32, moves: Duration, stall: usize) -> Gated {
    let clock = ManualClock::new();
    let (fired_tx, fired) = mpsc::channel();
    let (entered_tx, entered) = mpsc::channel();
    let (open, open_rx) = mpsc::channel();
    let (checked, checked_rx) = mpsc::channel();
    let gate = Mutex::new((fired_tx, entered_tx, open_rx, checked_rx, 0));
    let moved = AtomicBool::new(false);
    let on_driver = clock.clone();
    let executor: Gate = Box::new(move |fired| {
        let mut gate = gate.lock().unwrap();
        if fired.value == GATE {
            gate.1.send(()).unwrap();
            gate.2.recv().unwrap();
        } else if fired.value < move_at {
            if !moved.swap(true, Ordering::SeqCst) {
                on_driver.advance(moves);
            }
            gate.4 += 1;
            if gate.4 == stall {
                let _ = gate.3.recv_timeout(Duration::from_millis(500));
            }
        }
        gate.0.send(fired.value).unwrap();
    });
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .shards(1)
        .executor(executor)
        .build()
        .unwrap();
    Gated {
        clock,
        timer,
        fired,
        entered,
        open,
        checked,
    }
}

impl Gated {
    /// Files `loose` values 2 ms ahead with 1 ms of slack and a precise
    /// one at 3 ms, then holds the driver in the pass at 1 ms.
    fn hold_with_backlog(&self, loose: u32) {
        let loose_class = self.timer.with_slack(MS);
        for i in 0..loose {
            loose_class.schedule(2 * MS, i).unwrap();
        }
        self.timer.schedule(3 * MS, GATE - 1).unwrap();
        self.hold_driver(MS);
    }

    /// Schedules the gate at `at` from now, moves the clock there and
    /// waits until the driver is held in that pass.
    fn hold_driver(&self, at: Duration) {
        self.timer.schedule(at, GATE).unwrap();
        self.timer.sync();
        self.clock.advance(at);
        self.entered.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}

/// `shutdown_graceful` "first fires everything already due". Its last
/// pass handed a loose class over in rounds and, once a timer with less
/// slack came due meanwhile, ended the round early to serve it in the next
/// pass (`driver.rs`, `fire_due`). A graceful stop has no next pass: the
/// rest of the due backlog came back in the list of timers "still in the
/// future", unfired (here 344 of 600).
#[test]
fn a_graceful_shutdown_fires_a_whole_loose_backlog_when_a_precise_timer_comes_due() {
    const LOOSE: u32 = 600;
    // The first loose hand-off takes the clock to the precise deadline.
    let gated = gated(LOOSE, MS, 0);
    let timer = &gated.timer;
    gated.hold_with_backlog(LOOSE);
    // The backlog is due before the last pass begins.
    gated.clock.advance(MS);
    let stopping = timer.clone();
    let stop = std::thread::spawn(move || stopping.shutdown_graceful());
    // Returns once the stop has begun: no pass completes while the gate
    // holds the driver.
    timer.sync();
    gated.open.send(()).unwrap();
    let unfired = stop.join().unwrap();
    let fired = gated.fired.try_iter().filter(|&v| v < LOOSE).count();
    let back = unfired.iter().filter(|&&(_, v)| v < LOOSE).count();
    assert_eq!(
        (fired, back),
        (LOOSE as usize, 0),
        "due timers came back unfired from shutdown_graceful"
    );
}

/// A sleep polled once its deadline has passed completes at once, without
/// waiting for a late driver (`futures/sleep.rs`), and takes its timer out
/// of the wheel. That was counted as a cancel: [`Stats::cancelled`] is
/// "async sleeps dropped before their deadline", and this one completed
/// at it; [`Stats::fired`] ("async sleeps woken") missed it.
///
/// [`Stats::cancelled`]: tickwheel::timer::Stats::cancelled
/// [`Stats::fired`]: tickwheel::timer::Stats::fired
#[test]
fn a_sleep_that_completes_before_a_late_driver_fires_it_is_not_counted_as_cancelled() {
    let gated = gated(0, Duration::ZERO, 0);
    let timer = &gated.timer;
    let mut sleep = timer.sleep(2 * MS);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
    gated.hold_driver(MS);
    gated.clock.advance(MS);
    assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready());
    gated.open.send(()).unwrap();
    timer.sync();
    let stats = timer.stats();
    assert_eq!(
        (stats.scheduled, stats.fired, stats.cancelled, stats.pending),
        (2, 2, 0, 0),
        "scheduled, fired, cancelled, pending: the gate and the sleep"
    );
    assert_eq!(stats.lateness.count(), 2);
}

/// `Timer::sync` "waits until the driver has made a full pass that began
/// after this call: everything due at the clock's current time has been
/// handed to the executor". A pass that a precise timer's deadline cut
/// short (`driver.rs`, `fire_due`) counted as full: `sync` returned with
/// most of a due loose backlog not handed over (here 256 of 600).
#[test]
fn sync_waits_for_a_due_backlog_that_a_precise_timer_cut_short() {
    const LOOSE: u32 = 600;
    // The first loose hand-off takes the clock to the precise deadline;
    // the first of the next pass waits for the check below.
    let gated = gated(LOOSE, MS, 257);
    let timer = &gated.timer;
    gated.hold_with_backlog(LOOSE);
    gated.clock.advance(MS);
    // The pass `sync` waits for starts once the gate opens, after `sync`
    // has begun (a late opening only makes the check weaker).
    let open = gated.open.clone();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        open.send(()).unwrap();
    });
    timer.sync();
    let fired = gated.fired.try_iter().filter(|&v| v < LOOSE).count();
    let _ = gated.checked.send(());
    opener.join().unwrap();
    assert_eq!(
        fired, LOOSE as usize,
        "sync returned before the due backlog was handed over"
    );
}

/// A delay queue hands over "in deadline order, except that values due
/// less than the slack apart may swap", and a pass that finds several
/// shards' timers due merges them (`Timer::with_channel`). When a precise
/// timer's deadline cut a loose round short, the round's merged rest (a
/// later timer of another shard) went out at once, before the earlier due
/// timers still in the shard that had filled its part of the round: here
/// a timer due at 1.9 ms before those due from 1.128 ms, 772 µs apart with
/// 100 µs of slack.
#[test]
fn a_pass_cut_short_keeps_the_merged_order_of_a_loose_backlog() {
    const US: Duration = Duration::from_micros(1);
    const LATER: u32 = 1_000;
    let clock = ManualClock::new();
    let start = tickwheel::timer::Clock::now(&clock);
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let moved = AtomicBool::new(false);
    let on_driver = clock.clone();
    let timer = Timer::builder()
        .clock(clock.clone())
        .slack(Duration::ZERO)
        .shards(2)
        .executor(move |fired: Expired<u32>| {
            if fired.value <= LATER && !moved.swap(true, Ordering::SeqCst) {
                // The precise timer's deadline comes during the first round.
                on_driver.advance(100 * US);
            }
            let at = fired.deadline - start;
            tx.lock().unwrap().send((fired.value, at)).unwrap();
        })
        .build()
        .unwrap();
    let loose = timer.with_slack(100 * US);
    // Threads take shards in turn; a handle's `Debug` names its shard.
    let shard_of = |handle: tickwheel::timer::TimerHandle| {
        let text = format!("{handle:?}");
        let at = text.find("shard: ").unwrap() + "shard: ".len();
        text[at..].split(',').next().unwrap().trim().to_owned()
    };
    let earlier = loose.clone();
    let first_shard = std::thread::spawn(move || {
        // 200 due timers: more than one round's 128 from this shard.
        let mut last = None;
        for i in 0..200u32 {
            last = Some(earlier.schedule(US * (1_000 + i), i).unwrap());
        }
        last.map(shard_of).unwrap()
    })
    .join()
    .unwrap();
    loop {
        let later = loose.clone();
        let handle = std::thread::spawn(move || later.schedule(1_900 * US, LATER).unwrap())
            .join()
            .unwrap();
        if shard_of(handle) != first_shard {
            break;
        }
        timer.cancel(handle).unwrap();
    }
    timer.schedule(2_100 * US, LATER + 1).unwrap();
    clock.advance(2_000 * US);
    timer.sync();
    let loose_order: Vec<Duration> = rx
        .try_iter()
        .filter(|&(value, _)| value <= LATER)
        .map(|(_, at)| at)
        .collect();
    assert_eq!(loose_order.len(), 201);
    let mut latest = Duration::ZERO;
    let mut swapped = Duration::ZERO;
    for &at in &loose_order {
        swapped = swapped.max(latest.saturating_sub(at));
        latest = latest.max(at);
    }
    assert!(
        swapped <= 100 * US,
        "values due {swapped:?} apart swapped, with 100 µs of slack"
    );
}
