//! The journal's cost: schedule+cancel pairs on a `DurableTimer` with each
//! fsync policy, beside the same pairs on a plain `Timer`, in one criterion
//! run. Each contender holds 10 000 live jobs 10 minutes ahead (untimed);
//! each measured pair schedules a job 30 s ahead and cancels it, so it
//! writes two records (schedule, cancel) to the journal. A second group
//! runs the same pairs from 4 threads at once on one `DurableTimer` with
//! `SyncPolicy::Always`, where one fsync covers every record written
//! before it began (group commit).
//!
//! ```text
//! cargo bench --bench journal
//! ```
//!
//! The journal lives in the system's temporary directory; its file system
//! decides what an fsync costs (`docs/benchmarks.md` names it).

extern crate alloc;

use core::time::Duration;
use std::path::PathBuf;
use std::time::Instant;

use criterion::{Criterion, Throughput};
use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
use tickwheel::timer::{Executor, Expired, Rejected};
use tickwheel::Timer;

const LIVE: u64 = 10_000;
const TIMEOUT: Duration = Duration::from_secs(30);
const THREADS: u64 = 4;

struct Discard;

impl Executor<u64> for Discard {
    fn execute(&self, _fired: Expired<u64>) -> Result<(), Rejected<u64>> {
        Ok(())
    }
}

/// This run's directory, removed at the end (journals and their locks).
fn bench_dir() -> PathBuf {
    std::env::temp_dir().join(format!("tickwheel-bench-{}", std::process::id()))
}

fn journal_path(name: &str) -> PathBuf {
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("journal/schedule_cancel");
    group.throughput(Throughput::Elements(1));

    let plain = Timer::builder().executor(Discard).build().unwrap();
    for value in 0..LIVE {
        plain.schedule(Duration::from_secs(600), value).unwrap();
    }
    group.bench_function("timer (no journal)", |b| {
        let mut value = 0;
        b.iter(|| {
            value += 1;
            let handle = plain.schedule(TIMEOUT, value).unwrap();
            plain.cancel(handle).unwrap();
        })
    });
    drop(plain);

    for (name, sync) in [
        ("durable, sync never", SyncPolicy::Never),
        (
            "durable, sync every 10 ms",
            SyncPolicy::Every(Duration::from_millis(10)),
        ),
        ("durable, sync always", SyncPolicy::Always),
    ] {
        let path = journal_path(&name.replace([' ', ','], "_"));
        let (durable, _) =
            DurableTimer::<u64>::open(&path, sync, &MisfirePolicy::default(), |_| {}).unwrap();
        for value in 0..LIVE {
            durable.schedule(Duration::from_secs(600), value).unwrap();
        }
        group.bench_function(name, |b| {
            let mut value = 0;
            b.iter(|| {
                value += 1;
                let handle = durable.schedule(TIMEOUT, value).unwrap();
                durable.cancel(handle).unwrap();
            })
        });
        drop(durable);
        let _ = std::fs::remove_file(&path);
    }
    group.finish();

    let mut group = criterion.benchmark_group("journal/schedule_cancel_4_threads");
    group.throughput(Throughput::Elements(1));
    for (name, sync) in [
        ("durable, sync never", SyncPolicy::Never),
        ("durable, sync always", SyncPolicy::Always),
    ] {
        let path = journal_path(&format!("threads_{}", name.replace([' ', ','], "_")));
        let (durable, _) =
            DurableTimer::<u64>::open(&path, sync, &MisfirePolicy::default(), |_| {}).unwrap();
        for value in 0..LIVE {
            durable.schedule(Duration::from_secs(600), value).unwrap();
        }
        group.bench_function(name, |b| {
            b.iter_custom(|pairs| {
                let per_thread = pairs.div_ceil(THREADS);
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for thread in 0..THREADS {
                        let durable = &durable;
                        scope.spawn(move || {
                            for i in 0..per_thread {
                                let value = (thread << 40) | i;
                                let handle = durable.schedule(TIMEOUT, value).unwrap();
                                durable.cancel(handle).unwrap();
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
        drop(durable);
        let _ = std::fs::remove_file(&path);
    }
    group.finish();
    criterion.final_summary();
    let _ = std::fs::remove_dir_all(bench_dir());
}
