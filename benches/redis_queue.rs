//! The Redis queue (`tickwheel::redis`) against the seeds' polled ZSET and
//! BullMQ, side by side on one `redis-server` in one run:
//!
//! - schedule rate: jobs due in 1 h, one job per call, 200 calls in flight;
//! - cancel, with those jobs pending: one at a time, and 200 in flight;
//! - lateness: jobs due uniformly over a window (10 000 a second, and
//!   1 000 a second): p50, p99, max, early, lost, duplicated;
//! - Redis's cost per job over the 10 000 a second run, end to end
//!   (schedule, delivery, ack): commands (`INFO commandstats`, commands
//!   inside Lua scripts included) and server CPU (`INFO cpu`);
//! - burst: jobs all due within one second;
//! - idle: Redis commands a second with nothing pending.
//!
//! ```text
//! cargo bench --bench redis_queue            # BullMQ needs node; `npm ci` runs if needed
//! cargo bench --bench redis_queue -- --quick # 10x smaller, for a smoke run
//! cargo bench --bench redis_queue -- --no-bullmq # tickwheel and the poller only, for A/B runs
//! cargo bench --bench redis_queue -- --io-thread # tickwheel's I/O on a thread of its own, not the runtime
//! cargo bench --bench redis_queue -- --only-schedule-cancel 5 # 5 rounds of schedule + cancel, both taking turns
//! cargo bench --bench redis_queue -- --only-slow 3 # 3 rounds of the 1 000/s lateness run, both taking turns
//! cargo bench --bench redis_queue -- --only-priority 3 # 3 rounds of schedules without and with priorities
//! cargo bench --bench redis_queue -- --only-round-trips 3 # 3 rounds of cheap calls one at a time through each client
//! cargo bench --bench redis_queue -- --only-cluster 2 # 2 rounds on a six-node cluster, 1 and 12 partitions taking turns
//! ```
//!
//! `--only-cluster` starts a Redis Cluster of its own (3 masters, 3
//! replicas) and runs one queue on it with 1 partition and with 12:
//! schedule rate, burst delivery, each master's share of the commands and
//! its CPU (`redis_queue/cluster.rs`).
//!
//! **Peers.** Every producer issues one job per call with 200 calls in
//! flight; every consumer side runs in one process.
//!
//! - tickwheel: `redis::AsyncQueue` with default options, under a tokio
//!   multi-thread runtime (200 tasks calling `schedule`), the queue's I/O
//!   a task on that runtime (`QueueBuilder::runtime`, as a tokio service
//!   would run it; `--io-thread`: a thread of its own); one
//!   `AsyncConsumer` shared by 4 tasks, each `fetch(100, 200 ms)` then
//!   `ack_all`.
//! - The seeds' design (`peers/zset_poller.rs`) on redis-rs: one
//!   `MultiplexedConnection` with 200 pipelined HSET + ZADD calls in
//!   flight; a Lua mover every 100 ms; 4 consumer tasks, each `BRPOP` on a
//!   connection of its own, then HGET + HDEL on the shared one.
//! - BullMQ (`peers/bullmq/bench.mjs`, run by node): 200 `queue.add` in
//!   flight; one `Worker` at concurrency 100.
//!
//! The server is started here (`tests/support/redis_server.rs`) with AOF on
//! and `appendfsync everysec`, Redis's defaults otherwise (`hz 10`), and
//! flushed between contenders. Delivery times are read on this machine's
//! clock, which is the server's. A run's first job is due 2 s after its
//! scheduling starts, or later if the schedule section's rate says
//! scheduling takes longer. CPU is user + system: the client process's
//! (`getrusage`; node's `process.cpuUsage()`) and redis-server's. Prints
//! markdown tables for `docs/benchmarks.md`.

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;

#[path = "redis_queue/bullmq.rs"]
mod bullmq;
#[path = "redis_queue/cluster.rs"]
mod cluster;
#[path = "redis_queue/common.rs"]
mod common;
#[path = "workloads/cpu.rs"]
mod cpu;
#[path = "redis_queue/full.rs"]
mod full;
#[path = "redis_queue/late.rs"]
mod late;
#[path = "redis_queue/poller.rs"]
mod poller;
#[allow(dead_code, reason = "the tests' failover helpers are not used here")]
#[path = "../tests/support/redis_cluster.rs"]
mod redis_cluster;
#[path = "../tests/support/redis_server.rs"]
mod redis_server;
#[path = "redis_queue/stats.rs"]
mod stats;
#[path = "redis_queue/tickwheel.rs"]
mod tickwheel;
#[path = "peers/zset_poller.rs"]
mod zset_poller;

use common::IN_FLIGHT;
use late::Late;
use redis_server::{Config, Fsync, RedisServer};

const TW: &str = "tickwheel `AsyncQueue`";
const TW_THREAD: &str = "tickwheel `AsyncQueue`, I/O thread";
const SEED: &str = "seeds' ZSET + 100 ms poller";

struct Sizes {
    jobs: usize,
    window: Duration,
    cancels: usize,
    /// The second lateness run, at about 1 000 jobs a second.
    slow_jobs: usize,
    slow_window: Duration,
    idle: Duration,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes = if quick {
        Sizes {
            jobs: 10_000,
            window: Duration::from_secs(2),
            cancels: 1_000,
            slow_jobs: 2_000,
            slow_window: Duration::from_secs(2),
            idle: Duration::from_secs(5),
        }
    } else {
        Sizes {
            jobs: 100_000,
            window: Duration::from_secs(10),
            cancels: 10_000,
            slow_jobs: 10_000,
            slow_window: Duration::from_secs(10),
            idle: Duration::from_secs(10),
        }
    };
    let server = RedisServer::start_with(Config::new().appendfsync(Fsync::EverySec));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("machine: {}", stats::machine_line());
    println!("{}", stats::redis_line(&server));
    if let Some(rounds) = flag_value("--only-schedule-cancel") {
        schedule_cancel_rounds(&server, &rt, &sizes, rounds);
        return;
    }
    if let Some(rounds) = flag_value("--only-slow") {
        slow_rounds(&server, &rt, &sizes, rounds);
        return;
    }
    if let Some(rounds) = flag_value("--only-round-trips") {
        round_trip_rounds(&server, &rt, rounds);
        return;
    }
    if let Some(rounds) = flag_value("--only-priority") {
        priority_rounds(&server, &rt, &sizes, rounds);
        return;
    }
    if let Some(rounds) = flag_value("--only-cluster") {
        drop(server);
        cluster::rounds(&rt, sizes.jobs / 2, rounds);
        return;
    }
    full::run(&server, &rt, &sizes);
    drop(rt);
}

/// The number after `flag` on the command line, if given.
fn flag_value(flag: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == flag)?;
    Some(args.get(at + 1).and_then(|v| v.parse().ok()).unwrap_or(3))
}

/// Schedule and cancel only, tickwheel and the poller taking turns for
/// `rounds` rounds: each cell a ratio to the poller in the same round, and
/// the CPU (Redis's, the client's) behind each rate.
fn schedule_cancel_rounds(
    server: &RedisServer,
    rt: &tokio::runtime::Runtime,
    sizes: &Sizes,
    rounds: usize,
) {
    let (n, c) = (sizes.jobs, sizes.cancels);
    println!("\n### Schedule ({n} jobs) and cancel ({c} one at a time, {c} with {IN_FLIGHT} in flight), {rounds} rounds\n");
    println!("| round | contender | schedule jobs/s | Redis / client CPU per job | one cancel | … its Redis / client CPU | cancels/s in flight | Redis / client CPU per cancel |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for round in 1..=rounds {
        flush(server);
        let tw = rt.block_on(tickwheel::schedule_and_cancel(
            server,
            n,
            c,
            tickwheel::Io::Runtime,
        ));
        flush(server);
        let seed = rt.block_on(poller::schedule_and_cancel(server, n, c));
        flush(server);
        let thread = rt.block_on(tickwheel::schedule_and_cancel(
            server,
            n,
            c,
            tickwheel::Io::Thread,
        ));
        for (name, r) in [(TW, &tw), (SEED, &seed), (TW_THREAD, &thread)] {
            println!(
                "| {round} | {name} | {:.0} | {:.1} / {:.1} µs | {:.1} µs | {:.1} / {:.1} µs | {:.0} | {:.1} / {:.1} µs |",
                n as f64 / r.0.elapsed,
                r.0.redis * 1e6 / n as f64,
                r.0.process * 1e6 / n as f64,
                r.1,
                r.4.redis * 1e6 / c as f64,
                r.4.process * 1e6 / c as f64,
                r.2,
                r.3.redis * 1e6 / c as f64,
                r.3.process * 1e6 / c as f64
            );
        }
        for (name, tw) in [("ratio", &tw), ("ratio, I/O thread", &thread)] {
            println!(
                "| {round} | {name} | {:.2} | {:.2} / {:.2} | {:.2} | {:.2} / {:.2} | {:.2} | {:.2} / {:.2} |",
                seed.0.elapsed / tw.0.elapsed,
                tw.0.redis / seed.0.redis,
                tw.0.process / seed.0.process,
                tw.1 / seed.1,
                tw.4.redis / seed.4.redis,
                tw.4.process / seed.4.process,
                tw.2 / seed.2,
                tw.3.redis / seed.3.redis,
                tw.3.process / seed.3.process
            );
        }
    }
}

/// Where one call's time goes: the same cheap calls one at a time through
/// each client, taking turns for `rounds` rounds (µs per call).
fn round_trip_rounds(server: &RedisServer, rt: &tokio::runtime::Runtime, rounds: usize) {
    const CALLS: usize = 10_000;
    println!("\n### One call at a time, {CALLS} calls each, {rounds} rounds (µs per call)\n");
    println!("| round | poller `PING` | poller 2 × `ZCARD` | tickwheel `len()` (2 × `ZCARD`): I/O on the runtime / thread | poller cancel, unknown id | tickwheel cancel, unknown id: runtime / thread |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for round in 1..=rounds {
        flush(server);
        let (ping, zcards, p_cancel) = rt.block_on(poller::round_trips(server, CALLS));
        flush(server);
        let (len, t_cancel) = rt.block_on(tickwheel::round_trips(
            server,
            CALLS,
            tickwheel::Io::Runtime,
        ));
        flush(server);
        let (len_t, t_cancel_t) =
            rt.block_on(tickwheel::round_trips(server, CALLS, tickwheel::Io::Thread));
        println!(
            "| {round} | {ping:.1} | {zcards:.1} | {len:.1} / {len_t:.1} | {p_cancel:.1} | {t_cancel:.1} / {t_cancel_t:.1} |"
        );
    }
}

/// What a priority costs a schedule: `sizes.jobs` jobs due at one instant,
/// without and with priorities, taking turns for `rounds` rounds.
fn priority_rounds(
    server: &RedisServer,
    rt: &tokio::runtime::Runtime,
    sizes: &Sizes,
    rounds: usize,
) {
    let n = sizes.jobs;
    println!("\n### Schedule with and without priorities: {n} jobs due at one instant, {IN_FLIGHT} in flight, {rounds} rounds\n");
    println!("| round | jobs | jobs/s | Redis / client CPU per job |");
    println!("|---:|---|---:|---:|");
    for round in 1..=rounds {
        for ranked in [false, true] {
            flush(server);
            let u = rt.block_on(tickwheel::schedule_ranked(server, n, ranked));
            println!(
                "| {round} | {} | {:.0} | {:.2} / {:.2} µs |",
                if ranked {
                    "priorities 0-9"
                } else {
                    "no priority"
                },
                n as f64 / u.elapsed,
                u.redis * 1e6 / n as f64,
                u.process * 1e6 / n as f64
            );
        }
    }
}

/// The lateness run at about 1 000 jobs a second only, tickwheel and the
/// poller taking turns for `rounds` rounds, with Redis's cost per job
/// (commandstats go to stderr).
fn slow_rounds(server: &RedisServer, rt: &tokio::runtime::Runtime, sizes: &Sizes, rounds: usize) {
    let (n, window) = (sizes.slow_jobs, sizes.slow_window);
    let lead = Duration::from_secs(2);
    println!("\n### Lateness only: {n} jobs due over {window:?}, {rounds} rounds\n");
    println!("| round | contender | p50 / p99 / max | Redis CPU per job | commands per job | client CPU per job | elapsed |");
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for round in 1..=rounds {
        flush(server);
        let tw = rt.block_on(tickwheel::deliveries(server, n, window, lead));
        flush(server);
        let seed = rt.block_on(poller::deliveries(server, n, window, lead));
        for (name, run) in [(TW, &tw), (SEED, &seed)] {
            let late = Late::of_run(name, run);
            println!(
                "| {round} | {name} | {:.2} / {:.2} / {:.2} ms | {:.1} µs | {:.2} | {:.1} µs | {:.1} s |",
                late.p50,
                late.p99,
                late.max,
                run.usage.redis * 1e6 / n as f64,
                late.commands(),
                run.usage.process * 1e6 / n as f64,
                run.usage.elapsed
            );
        }
        if let Some(note) = &tw.note {
            println!("\n{note}\n");
        }
    }
}

fn flush(server: &RedisServer) {
    server.command(&["FLUSHALL"]);
}

/// CPU seconds, and per job.
fn cpu(seconds: f64, jobs: usize) -> String {
    format!("{seconds:.2} s ({:.1} µs/job)", seconds * 1e6 / jobs as f64)
}

/// `name rate` for each command, busiest first.
fn by_command(calls: &BTreeMap<String, u64>, secs: f64) -> String {
    let mut v: Vec<(&String, &u64)> = calls.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1));
    let parts: Vec<String> = v
        .iter()
        .map(|(k, n)| format!("{k} {:.2}", **n as f64 / secs))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}
