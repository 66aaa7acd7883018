//! Lateness: N sleeps due uniformly over a spread, each awaited by a task
//! of its own on a current-thread tokio runtime, each recording how late
//! it resumed.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use super::cpu::process_cpu;
use super::peers::{runtime, Peer};
use super::record::{Record, UNFIRED};

/// How long after the last deadline a run may take before it fails.
const GRACE: Duration = Duration::from_secs(10);

/// From the first spawn to the first possible deadline: long enough for
/// every task to have made and first polled its sleep before any is due
/// (the `setup` column says whether it was).
pub(crate) fn lead(n: usize) -> Duration {
    Duration::from_millis(50) + Duration::from_micros(2) * n as u32
}

/// One lateness run, in ns.
pub(crate) struct Lateness {
    pub(crate) p50: i64,
    pub(crate) p99: i64,
    pub(crate) max: i64,
    /// Sleeps that completed before their deadline.
    pub(crate) early: usize,
    pub(crate) lead: Duration,
    /// From the first spawn until the last task first polled its sleep.
    pub(crate) setup: Duration,
    /// CPU time of every thread of the process per sleep, from the first
    /// spawn until the last sleep completed.
    pub(crate) cpu: f64,
}

/// What the tasks share.
struct Shared {
    record: Record,
    n: usize,
    /// Tasks that have made it to their first poll of their sleep.
    ready: AtomicUsize,
    /// ns from the first spawn until `ready` reached `n`.
    setup: AtomicU64,
    /// Told by the task whose sleep completes last.
    done: tokio::sync::Notify,
}

/// Sleep `id` is made with `Peer::sleep_until(start + offsets[id])`, in
/// the loop that spawns its task (so tickwheel and futures-timer, which
/// register when a sleep is made, register there; tokio and async-io
/// register on the task's first poll). The task awaits it and records
/// `Instant::now()` − that deadline.
pub(crate) fn lateness<P: Peer>(peer: &P, offsets: &[Duration], spread: Duration) -> Lateness {
    let n = offsets.len();
    let lead = lead(n);
    let shared = Arc::new(Shared {
        record: Record::new(n),
        n,
        ready: AtomicUsize::new(0),
        setup: AtomicU64::new(0),
        done: tokio::sync::Notify::new(),
    });
    let watchdog = {
        let shared = Arc::clone(&shared);
        let limit = lead + spread + GRACE;
        std::thread::spawn(move || {
            if shared.record.wait(limit).is_none() {
                let fired = shared.record.fired.load(Ordering::Acquire);
                eprintln!("lateness: only {fired} of {n} sleeps completed within {limit:?}");
                std::process::exit(1);
            }
        })
    };
    let runtime = runtime();
    let cpu = process_cpu();
    let begin = Instant::now();
    runtime.block_on(async {
        let start = begin + lead;
        for (id, offset) in offsets.iter().enumerate() {
            let deadline = start + *offset;
            let sleep = peer.sleep_until(deadline);
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                if shared.ready.fetch_add(1, Ordering::Relaxed) + 1 == shared.n {
                    let setup = begin.elapsed().as_nanos() as u64;
                    shared.setup.store(setup, Ordering::Relaxed);
                }
                sleep.await;
                shared.record.fire(deadline, id as u32);
                if shared.record.fired.load(Ordering::Acquire) == shared.n {
                    shared.done.notify_one();
                }
            });
        }
        shared.done.notified().await;
    });
    let cpu = process_cpu() - cpu;
    drop(runtime);
    watchdog.join().expect("the watchdog");

    let twice = shared.record.twice.load(Ordering::Relaxed);
    assert_eq!(twice, 0, "{twice} sleeps completed twice");
    let mut late: Vec<i64> = shared
        .record
        .late
        .iter()
        .map(|late| late.load(Ordering::Relaxed))
        .collect();
    assert!(!late.contains(&UNFIRED), "a sleep never completed");
    late.sort_unstable();
    let rank = |q: f64| late[((n as f64 * q).ceil() as usize).max(1) - 1];
    Lateness {
        p50: rank(0.50),
        p99: rank(0.99),
        max: late[n - 1],
        early: late.iter().filter(|&&late| late < 0).count(),
        lead,
        setup: Duration::from_nanos(shared.setup.load(Ordering::Relaxed)),
        cpu: cpu.as_nanos() as f64 / n as f64,
    }
}
