//! The std layer: schedule+cancel pairs per second from 1 and 2 threads,
//! `Timer` against a single `Mutex<Wheel>` and a `Mutex<BinaryHeap>`, side
//! by side in one criterion run.
//!
//! The workload is the per-connection timeout: each contender is first
//! filled with 100 000 live timeouts spread over the next 1 to 600 s
//! (untimed; about 170 of them fire per second in the background); then
//! each thread repeatedly schedules a timeout 30 s ahead and cancels it (the
//! connection closed). Every contender computes deadlines the same way
//! (`Instant::now()` + delay, rounded up to 1 ms ticks).
//!
//! The spread matters for `Timer`: a new timeout earlier than every pending
//! one must wake the driver (it sleeps until the earliest). With live
//! timeouts spread over minutes, a 30 s one never is, as on a real server.
//!
//! ```text
//! cargo bench --bench timer
//! python3 benches/report.py --group timer
//! ```
//!
//! Lateness and idle wake-ups are measured by `benches/lateness.rs`.

extern crate alloc;

#[allow(dead_code)]
#[path = "peers/mod.rs"]
mod peers;

use core::time::Duration;
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use criterion::{Criterion, Throughput};
use tickwheel::timer::{Executor, Expired, Rejected};
use tickwheel::{Timer, Wheel};

use peers::binary_heap::HeapTimers;

const LIVE: usize = 100_000;
const TIMEOUT: Duration = Duration::from_secs(30);
const TICK_NANOS: u128 = 1_000_000;

/// Discards fired values (only the pre-filled timeouts can fire, after
/// their deadlines, during long runs).
struct Discard;

impl Executor<u64> for Discard {
    fn execute(&self, _fired: Expired<u64>) -> Result<(), Rejected<u64>> {
        Ok(())
    }
}

/// What each thread does per iteration: one schedule and one cancel.
trait Contender: Sync {
    fn pair(&self, value: u64);
}

impl Contender for Timer<u64, Discard> {
    #[inline]
    fn pair(&self, value: u64) {
        let handle = self.schedule(TIMEOUT, value).expect("schedule");
        assert_eq!(self.cancel(handle), Some(value));
    }
}

/// The baselines keep their own origin and convert like `Timer` does.
struct Locked<T> {
    origin: Instant,
    inner: Mutex<T>,
}

impl<T> Locked<T> {
    #[inline]
    fn tick_after(&self, delay: Duration) -> u64 {
        let nanos = (Instant::now() + delay)
            .duration_since(self.origin)
            .as_nanos();
        nanos.div_ceil(TICK_NANOS) as u64
    }
}

impl Contender for Locked<Wheel<u64>> {
    #[inline]
    fn pair(&self, value: u64) {
        let deadline = self.tick_after(TIMEOUT);
        let key = self.inner.lock().unwrap().insert(deadline, value);
        assert_eq!(self.inner.lock().unwrap().cancel(key), Some(value));
    }
}

impl Contender for Locked<HeapTimers<u64>> {
    #[inline]
    fn pair(&self, value: u64) {
        let deadline = self.tick_after(TIMEOUT);
        let key = self.inner.lock().unwrap().insert(deadline, value);
        assert_eq!(self.inner.lock().unwrap().cancel(key), Some(value));
    }
}

/// Delays of the pre-filled timeouts: uniform over 1 to 600 s.
fn prefill_delays() -> Vec<Duration> {
    let mut rng = peers::Rng::new(0x71AE);
    (0..LIVE)
        .map(|_| Duration::from_secs(1) + Duration::from_micros(rng.below(599_000_000)))
        .collect()
}

fn timer() -> Timer<u64, Discard> {
    let timer = Timer::builder().executor(Discard).build().expect("timer");
    for (i, delay) in prefill_delays().into_iter().enumerate() {
        timer.schedule(delay, i as u64).expect("prefill");
    }
    timer
}

fn mutex_wheel() -> Locked<Wheel<u64>> {
    let locked = Locked {
        origin: Instant::now(),
        inner: Mutex::new(Wheel::new()),
    };
    for (i, delay) in prefill_delays().into_iter().enumerate() {
        let deadline = locked.tick_after(delay);
        locked.inner.lock().unwrap().insert(deadline, i as u64);
    }
    locked
}

fn mutex_heap() -> Locked<HeapTimers<u64>> {
    let locked = Locked {
        origin: Instant::now(),
        inner: Mutex::new(HeapTimers::new()),
    };
    for (i, delay) in prefill_delays().into_iter().enumerate() {
        let deadline = locked.tick_after(delay);
        locked.inner.lock().unwrap().insert(deadline, i as u64);
    }
    locked
}

/// `iters` pairs on each of `threads` threads, started together; returns
/// the wall time from the start signal to the last thread's end.
fn run(contender: &impl Contender, threads: usize, iters: u64) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    for i in 0..iters {
                        contender.pair(i * threads as u64 + t as u64);
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for worker in workers {
            worker.join().expect("worker");
        }
        start.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let timer = timer();
    let wheel = mutex_wheel();
    let heap = mutex_heap();
    for threads in [1usize, 2] {
        let mut group = c.benchmark_group(format!("timer_schedule_cancel/{threads}_threads"));
        // One element per pair: criterion reports pairs per second in all.
        group.throughput(Throughput::Elements(threads as u64));
        group.sample_size(20);
        group.measurement_time(Duration::from_secs(3));
        group.bench_function("tickwheel_timer", |b| {
            b.iter_custom(|iters| run(&timer, threads, iters))
        });
        group.bench_function("mutex_wheel", |b| {
            b.iter_custom(|iters| run(&wheel, threads, iters))
        });
        group.bench_function("mutex_binary_heap", |b| {
            b.iter_custom(|iters| run(&heap, threads, iters))
        });
        group.finish();
    }
    let stats = timer.stats();
    println!(
        "tickwheel timer after the run: {} pending, {} driver wake-ups, {} fired",
        stats.pending, stats.wakeups, stats.fired
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
