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

use bullmq::{num, BullMq};
use common::{Run, CONSUMERS, IN_FLIGHT};
use redis_server::{Config, Fsync, RedisServer};
use serde_json::Value;
use stats::Usage;

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

/// One peer's lateness run, from Rust or from BullMQ's JSON.
struct Late {
    name: String,
    jobs: usize,
    p50: f64,
    p99: f64,
    max: f64,
    early: f64,
    lost: f64,
    duplicated: f64,
    scheduled_in: f64,
    lead: f64,
    usage: Usage,
    calls: BTreeMap<String, u64>,
    note: Option<String>,
}

impl Late {
    fn of_run(name: &str, run: &Run) -> Late {
        let s = &run.summary;
        Late {
            name: name.to_string(),
            jobs: s.jobs,
            p50: s.quantile_ms(0.5),
            p99: s.quantile_ms(0.99),
            max: s.quantile_ms(1.0),
            early: s.early as f64,
            lost: s.lost as f64,
            duplicated: s.duplicated as f64,
            scheduled_in: run.scheduled_in,
            lead: run.lead,
            usage: run.usage,
            calls: run.calls.clone(),
            note: run.note.clone(),
        }
    }

    fn of_json(j: &Value) -> Late {
        Late {
            name: bullmq_name(j),
            jobs: j["jobs"].as_u64().unwrap_or(0) as usize,
            p50: num(&j["p50_ms"]),
            p99: num(&j["p99_ms"]),
            max: num(&j["max_ms"]),
            early: num(&j["early"]),
            lost: num(&j["lost"]),
            duplicated: num(&j["duplicated"]),
            scheduled_in: num(&j["scheduling_ms"]) / 1000.0,
            lead: num(&j["lead_ms"]) / 1000.0,
            usage: Usage {
                elapsed: num(&j["measured_s"]),
                process: num(&j["process_cpu_s"]),
                redis: num(&j["redis_cpu_s"]),
            },
            calls: calls_of(&j["command_calls"]),
            note: None,
        }
    }

    fn commands(&self) -> f64 {
        self.calls.values().sum::<u64>() as f64 / self.jobs as f64
    }
}

fn bullmq_name(j: &Value) -> String {
    format!("BullMQ {}", j["version"].as_str().unwrap_or("?"))
}

fn calls_of(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
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
    let bullmq = BullMq::prepare();
    let n = sizes.jobs;

    // ---- schedule rate and cancel ---------------------------------------
    flush(&server);
    let tw = rt.block_on(tickwheel::schedule_and_cancel(
        &server,
        n,
        sizes.cancels,
        tickwheel::Io::chosen(),
    ));
    flush(&server);
    let seed = rt.block_on(poller::schedule_and_cancel(&server, n, sizes.cancels));
    flush(&server);
    let b_sched = bullmq.run(
        &server,
        "schedule",
        &[("--jobs", n), ("--in-flight", IN_FLIGHT)],
    );
    flush(&server);
    let b_cancel = bullmq.run(
        &server,
        "cancel",
        &[
            ("--jobs", n),
            ("--cancel", sizes.cancels),
            ("--in-flight", IN_FLIGHT),
        ],
    );
    if let Some(j) = b_sched.as_ref() {
        println!(
            "BullMQ {} (ioredis {}, node {})",
            j["version"].as_str().unwrap_or("?"),
            j["ioredis_version"].as_str().unwrap_or("?"),
            j["node_version"].as_str().unwrap_or("?")
        );
    }
    println!(
        "\n### Schedule rate: {n} jobs due in 1 h, one job per call, {IN_FLIGHT} calls in flight\n"
    );
    println!("| contender | jobs/s | client CPU | redis-server CPU |\n|---|---:|---:|---:|");
    for (name, usage) in [(TW, &tw.0), (SEED, &seed.0)] {
        println!(
            "| {name} | {:.0} | {} | {} |",
            n as f64 / usage.elapsed,
            cpu(usage.process, n),
            cpu(usage.redis, n)
        );
    }
    match &b_sched {
        Some(j) => println!(
            "| {} `queue.add` | {:.0} | {} | {} |",
            bullmq_name(j),
            num(&j["add_per_sec"]),
            cpu(num(&j["process_cpu_s"]), n),
            cpu(num(&j["redis_cpu_s"]), n)
        ),
        None => println!("| BullMQ | not run: {} | | |", bullmq.why()),
    }
    let c = sizes.cancels;
    println!("\n### Cancel: {c} cancels with {n} pending (then {c} others)\n");
    println!("| contender | one at a time: µs per cancel | … Redis / client CPU per cancel | {IN_FLIGHT} in flight: cancels/s |\n|---|---:|---:|---:|");
    for (name, r) in [(TW, &tw), (SEED, &seed)] {
        println!(
            "| {name} | {:.1} | {:.1} / {:.1} µs | {:.0} |",
            r.1,
            r.4.redis * 1e6 / c as f64,
            r.4.process * 1e6 / c as f64,
            r.2
        );
    }
    match &b_cancel {
        Some(j) => println!(
            "| {} `queue.remove` | {:.1} | | {:.0} |",
            bullmq_name(j),
            num(&j["us_per_cancel"]),
            num(&j["parallel_per_sec"])
        ),
        None => println!("| BullMQ | not run: {} | |", bullmq.why()),
    }

    let cancel_us = (tw.1, seed.1);
    let cancel_rates = (tw.2, seed.2);

    // Leads: the first job is due once scheduling (at the rate just
    // measured) is surely done.
    let rates = [
        n as f64 / tw.0.elapsed,
        n as f64 / seed.0.elapsed,
        b_sched.as_ref().map_or(1000.0, |j| num(&j["add_per_sec"])),
    ];
    let lead = |jobs: usize, peer: usize| {
        let rate = if rates[peer].is_finite() && rates[peer] > 0.0 {
            rates[peer]
        } else {
            1000.0
        };
        Duration::from_secs_f64((1.5 * jobs as f64 / rate + 0.5).max(2.0))
    };

    // ---- lateness --------------------------------------------------------
    let mut costs = Vec::new();
    for (jobs, window) in [
        (sizes.jobs, sizes.window),
        (sizes.slow_jobs, sizes.slow_window),
    ] {
        flush(&server);
        let tw = rt.block_on(tickwheel::deliveries(&server, jobs, window, lead(jobs, 0)));
        flush(&server);
        let seed = rt.block_on(poller::deliveries(&server, jobs, window, lead(jobs, 1)));
        flush(&server);
        let lead_ms = lead(jobs, 2).as_millis() as usize;
        let args = [
            ("--jobs", jobs),
            ("--window-ms", window.as_millis() as usize),
            ("--in-flight", IN_FLIGHT),
            ("--lead-ms", lead_ms),
        ];
        let mut rows = vec![Late::of_run(TW, &tw), Late::of_run(SEED, &seed)];
        rows.extend(
            bullmq
                .run(&server, "lateness", &args)
                .as_ref()
                .map(Late::of_json),
        );
        println!(
            "\n### Lateness: {jobs} jobs due uniformly over {window:?} ({:.0}/s), {CONSUMERS} consumer tasks\n",
            jobs as f64 / window.as_secs_f64()
        );
        println!("| contender | p50 | p99 | max | early | lost | duplicated | scheduled in (lead) | client CPU | redis-server CPU |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &rows {
            println!(
                "| {} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} | {} | {:.2} s ({:.2} s) | {:.2} s | {:.2} s |",
                r.name, r.p50, r.p99, r.max, r.early, r.lost, r.duplicated,
                r.scheduled_in, r.lead, r.usage.process, r.usage.redis
            );
        }
        if rows.len() < 3 {
            println!("| BullMQ | not run: {} | | | | | | | | |", bullmq.why());
        }
        for r in rows.iter().filter(|r| r.scheduled_in > r.lead) {
            println!("\n(!) {}: scheduling outlasted the lead: early jobs were due before they were scheduled.", r.name);
        }
        costs.push((jobs, window, rows));
    }

    // ---- Redis cost per job ----------------------------------------------
    println!("\n### Redis cost per job, end to end (schedule + delivery + ack), over the lateness runs\n");
    let mut header = String::from("| contender |");
    let mut rule = String::from("|---|");
    for (jobs, window, _) in &costs {
        let rate = *jobs as f64 / window.as_secs_f64();
        header += &format!(" commands/job ({rate:.0}/s) | redis-server CPU/job ({rate:.0}/s) | client CPU/job ({rate:.0}/s) |");
        rule += "---:|---:|---:|";
    }
    println!("{header}\n{rule}");
    for (peer, r) in costs[0].2.iter().enumerate() {
        let mut line = format!("| {} |", r.name);
        for (_, _, rows) in &costs {
            match rows.get(peer) {
                Some(r) => {
                    let per = |s: f64| s * 1e6 / r.jobs as f64;
                    line += &format!(
                        " {:.2} | {:.1} µs | {:.1} µs |",
                        r.commands(),
                        per(r.usage.redis),
                        per(r.usage.process)
                    );
                }
                None => line += " | | |",
            }
        }
        println!("{line}");
    }
    for (jobs, _, rows) in &costs {
        for r in rows {
            if let Some(note) = &r.note {
                println!("\n{} ({jobs} jobs): {note}", r.name);
            }
        }
    }
    let rows = &costs[0].2;
    println!(
        "\n### Redis commands per job by command, {} jobs over {:?} (`INFO commandstats`)\n",
        rows[0].jobs, costs[0].1
    );
    let mut header = String::from("| command |");
    let mut rule = String::from("|---|");
    for r in rows {
        header += &format!(" {} |", r.name);
        rule += "---:|";
    }
    println!("{header}\n{rule}");
    let per_job =
        |r: &Late, cmd: &str| r.calls.get(cmd).copied().unwrap_or(0) as f64 / r.jobs as f64;
    // Every command of the two Rust peers; BullMQ's ten busiest.
    let top = |c: &str, rows: &[Late]| rows.iter().map(|r| per_job(r, c)).fold(0.0, f64::max);
    let mut names: Vec<&String> = rows.iter().take(2).flat_map(|r| r.calls.keys()).collect();
    if let Some(b) = rows.get(2) {
        let mut theirs: Vec<&String> = b.calls.keys().collect();
        theirs.sort_by(|x, y| per_job(b, y).total_cmp(&per_job(b, x)));
        names.extend(theirs.into_iter().take(10));
    }
    names.sort();
    names.dedup();
    names.sort_by(|a, b| top(b, rows).total_cmp(&top(a, rows)));
    // Not the connections' few (`ping`, `subscribe`, ...), under 1 in 2 000 jobs.
    for name in names.iter().filter(|c| top(c, rows) >= 0.0005) {
        let mut line = format!("| {name} |");
        for r in rows {
            line += &format!(" {:.3} |", per_job(r, name));
        }
        println!("{line}");
    }
    let mut line = String::from("| **all** |");
    for r in rows {
        line += &format!(" **{:.3}** |", r.commands());
    }
    println!("{line}");

    // ---- burst -----------------------------------------------------------
    let second = Duration::from_secs(1);
    flush(&server);
    let tw = rt.block_on(tickwheel::deliveries(&server, n, second, lead(n, 0)));
    flush(&server);
    let seed = rt.block_on(poller::deliveries(&server, n, second, lead(n, 1)));
    flush(&server);
    let args = [
        ("--jobs", n),
        ("--in-flight", IN_FLIGHT),
        ("--lead-ms", lead(n, 2).as_millis() as usize),
    ];
    let b_burst = bullmq.run(&server, "burst", &args);
    println!("\n### Burst: {n} jobs due within one second\n");
    println!("| contender | delivered/s | last delivery after the second ended | early | lost | duplicated |\n|---|---:|---:|---:|---:|---:|");
    for (name, run) in [(TW, &tw), (SEED, &seed)] {
        let s = &run.summary;
        println!(
            "| {name} | {:.0} | {:.0} ms | {} | {} | {} |",
            run.burst.0, run.burst.1, s.early, s.lost, s.duplicated
        );
    }
    match &b_burst {
        Some(j) => println!(
            "| {} | {:.0} | {:.0} ms | {} | {} | {} |",
            bullmq_name(j),
            num(&j["delivered_per_sec"]),
            num(&j["last_after_due_ms"]),
            j["early"],
            j["lost"],
            j["duplicated"]
        ),
        None => println!("| BullMQ | not run: {} | | | | |", bullmq.why()),
    }
    let bursts = (tw.burst.0, seed.burst.0);

    // ---- idle ------------------------------------------------------------
    let span = sizes.idle;
    flush(&server);
    let tw = rt.block_on(tickwheel::idle(&server, span));
    flush(&server);
    let seed = rt.block_on(poller::idle(&server, span));
    flush(&server);
    let b_idle = bullmq.run(&server, "idle", &[("--idle-secs", span.as_secs() as usize)]);
    println!("\n### Idle: Redis commands a second over {span:?}, nothing pending, one consumer process\n");
    println!("| contender | commands/s | by command (per second) |\n|---|---:|---|");
    let secs = span.as_secs_f64();
    let idle = tw.values().sum::<u64>() as f64 / secs;
    println!(
        "| {TW}: one consumer, {CONSUMERS} tasks in `fetch(100, 5 s)` | {:.2} | {} |",
        tw.values().sum::<u64>() as f64 / secs,
        by_command(&tw, secs)
    );
    println!(
        "| {SEED}: mover + {CONSUMERS} `BRPOP` consumers | {:.2} | {} |",
        seed.values().sum::<u64>() as f64 / secs,
        by_command(&seed, secs)
    );
    match &b_idle {
        Some(j) => println!(
            "| {}: one `Worker` | {:.2} | {} |",
            bullmq_name(j),
            num(&j["commands_per_sec"]),
            by_command(&calls_of(&j["command_calls"]), num(&j["measured_secs"]))
        ),
        None => println!("| BullMQ | not run: {} | |", bullmq.why()),
    }

    // ---- targets ---------------------------------------------------------
    println!("\n### Against the issue's targets (tickwheel, this run)\n");
    println!("| target | tickwheel | reference | met |\n|---|---:|---:|---|");
    let target = |what: &str, ours: String, theirs: String, met: bool| {
        let met = if met { "yes" } else { "no" };
        println!("| {what} | {ours} | {theirs} | {met} |");
    };
    target(
        "schedule rate ≥ the poller's",
        format!("{:.0} jobs/s", rates[0]),
        format!("{:.0} jobs/s", rates[1]),
        rates[0] >= rates[1],
    );
    target(
        &format!("cancel, {IN_FLIGHT} in flight: cancels/s ≥ the poller's"),
        format!("{:.0}/s", cancel_rates.0),
        format!("{:.0}/s", cancel_rates.1),
        cancel_rates.0 >= cancel_rates.1,
    );
    target(
        "cancel, one at a time: µs per cancel ≤ the poller's",
        format!("{:.1} µs", cancel_us.0),
        format!("{:.1} µs", cancel_us.1),
        cancel_us.0 <= cancel_us.1,
    );
    let slow = &costs[1].2[0];
    target(
        &format!(
            "lateness at {} jobs over {:?}: p99 ≤ 5 ms, max ≤ 50 ms",
            slow.jobs, costs[1].1
        ),
        format!("p99 {:.2} ms, max {:.2} ms", slow.p99, slow.max),
        "5 ms, 50 ms".to_string(),
        slow.p99 <= 5.0 && slow.max <= 50.0,
    );
    target(
        "burst: delivered/s ≥ 2× the poller's",
        format!("{:.0}/s", bursts.0),
        format!("2 × {:.0}/s", bursts.1),
        bursts.0 >= 2.0 * bursts.1,
    );
    let per = |r: &Late| r.usage.redis * 1e6 / r.jobs as f64;
    for (_, window, rows) in &costs {
        let (ours, theirs) = (&rows[0], &rows[1]);
        target(
            &format!(
                "redis-server CPU per job ≤ the poller's ({} jobs over {window:?})",
                ours.jobs
            ),
            format!("{:.1} µs", per(ours)),
            format!("{:.1} µs", per(theirs)),
            per(ours) <= per(theirs),
        );
    }
    let ours = &costs[0].2[0];
    target(
        "Redis commands per job ≤ 7",
        format!("{:.2}", ours.commands()),
        "7".to_string(),
        ours.commands() <= 7.0,
    );
    target(
        "idle: ≤ 1 Redis command a second",
        format!("{idle:.2}/s"),
        "1/s".to_string(),
        idle <= 1.0,
    );
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
