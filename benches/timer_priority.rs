//! What `Timer::with_priority` costs, side by side in one criterion run:
//! timers without a priority on a timer that never held one, against
//! timers with one.
//!
//! - `schedule_cancel`: the per-connection timeout (schedule 30 s ahead,
//!   cancel) on a timer holding 100,000 live timeouts, from one thread.
//!   A priority adds a map insert and remove per timer.
//! - `fire_one_tick`: 10,000 timers due at one tick (a `ManualClock`
//!   moved past it), scheduled, fired and handed to an executor that
//!   counts them. With priorities (0 to 4, interleaved) the shard's batch
//!   runs to the end of the tick and is sorted.
//!
//! ```text
//! cargo bench --bench timer_priority
//! ```

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use criterion::{Criterion, Throughput};
use tickwheel::timer::{Executor, Expired, ManualClock, Rejected};
use tickwheel::Timer;

const LIVE: u64 = 100_000;
const BURST: u64 = 10_000;

/// Counts the values handed over.
#[derive(Clone)]
struct Count(Arc<AtomicUsize>);

impl Executor<u64> for Count {
    fn execute(&self, _fired: Expired<u64>) -> Result<(), Rejected<u64>> {
        self.0.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

fn counting_timer(clock: Option<ManualClock>) -> (Timer<u64, Count>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let mut builder = Timer::builder().executor(Count(Arc::clone(&count)));
    if let Some(clock) = clock {
        builder = builder.clock(clock);
    }
    (builder.build().expect("timer"), count)
}

/// `iters` schedule+cancel pairs through `handle`.
fn pairs(handle: &Timer<u64, Count>, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let timer = handle
            .schedule(Duration::from_secs(30), i)
            .expect("schedule");
        handle.cancel(timer);
    }
    start.elapsed()
}

/// `iters` rounds of `BURST` timers due at one tick, fired; `ranked` gives
/// them priorities 0 to 4.
fn bursts(
    clock: &ManualClock,
    timer: &Timer<u64, Count>,
    count: &AtomicUsize,
    ranked: bool,
    iters: u64,
) -> Duration {
    let handles: Vec<Timer<u64, Count>> = (0..5u8)
        .map(|p| timer.with_priority(if ranked { p } else { 0 }))
        .collect();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let before = count.load(Ordering::Acquire);
        let start = Instant::now();
        for i in 0..BURST {
            handles[(i % 5) as usize]
                .schedule(Duration::from_millis(5), i)
                .expect("schedule");
        }
        clock.advance(Duration::from_millis(10));
        while count.load(Ordering::Acquire) < before + BURST as usize {
            core::hint::spin_loop();
        }
        total += start.elapsed();
    }
    total
}

fn bench(c: &mut Criterion) {
    let live = |ranked: bool| {
        let (timer, _) = counting_timer(None);
        let handle = timer.with_priority(u8::from(ranked) * 5);
        for i in 0..LIVE {
            handle
                .schedule(Duration::from_secs(60 + i % 540), i)
                .expect("prefill");
        }
        handle
    };
    let (plain, ranked) = (live(false), live(true));
    let mut group = c.benchmark_group("timer_priority/schedule_cancel");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("no_priority", |b| {
        b.iter_custom(|iters| pairs(&plain, iters))
    });
    group.bench_function("priority", |b| b.iter_custom(|iters| pairs(&ranked, iters)));
    group.finish();

    let mut group = c.benchmark_group("timer_priority/fire_one_tick_10k");
    group.throughput(Throughput::Elements(BURST));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for (name, ranked) in [("no_priority", false), ("priority", true)] {
        let clock = ManualClock::new();
        let (timer, count) = counting_timer(Some(clock.clone()));
        group.bench_function(name, |b| {
            b.iter_custom(|iters| bursts(&clock, &timer, &count, ranked, iters))
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
