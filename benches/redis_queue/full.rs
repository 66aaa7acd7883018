//! The full run: every section once, tickwheel, the seeds' poller and
//! BullMQ side by side on one server, then issue 22's targets as this run
//! met them. Each section prints its markdown table as it ends.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;

use tokio::runtime::Runtime;

use crate::bullmq::{num, BullMq};
use crate::common::{CONSUMERS, IN_FLIGHT};
use crate::late::{bullmq_name, calls_of, Late};
use crate::redis_server::RedisServer;
use crate::{by_command, cpu, flush, poller, tickwheel, Sizes, SEED, TW};

/// A lateness run: its jobs, its window, and a row a peer.
type LatenessRun = (usize, Duration, Vec<Late>);

/// What the schedule and cancel section measured, for the later sections'
/// leads and for the targets.
struct Rates {
    /// Jobs scheduled a second: tickwheel, the poller, BullMQ (1,000 if it
    /// did not run).
    schedule: [f64; 3],
    /// One cancel at a time, µs a cancel: tickwheel, the poller.
    cancel_us: (f64, f64),
    /// Cancels a second with `IN_FLIGHT` at once: tickwheel, the poller.
    cancel_rates: (f64, f64),
}

impl Rates {
    /// How far ahead of its first due time peer `peer` starts scheduling
    /// `jobs`: once scheduling at the rate just measured is surely done.
    fn lead(&self, jobs: usize, peer: usize) -> Duration {
        let rate = match self.schedule[peer] {
            rate if rate.is_finite() && rate > 0.0 => rate,
            _ => 1000.0,
        };
        Duration::from_secs_f64((1.5 * jobs as f64 / rate + 0.5).max(2.0))
    }
}

/// Runs every section and prints its tables, then the targets.
pub(crate) fn run(server: &RedisServer, rt: &Runtime, sizes: &Sizes) {
    let bullmq = BullMq::prepare();
    let rates = schedule_and_cancel(server, rt, sizes, &bullmq);
    let costs = lateness(server, rt, sizes, &bullmq, &rates);
    redis_cost(&costs);
    let bursts = burst(server, rt, sizes.jobs, &bullmq, &rates);
    let idle = idle_commands(server, rt, sizes.idle, &bullmq);
    targets(&rates, &costs, bursts, idle);
}

/// Schedule rate, then cancels one at a time and in flight.
fn schedule_and_cancel(
    server: &RedisServer,
    rt: &Runtime,
    sizes: &Sizes,
    bullmq: &BullMq,
) -> Rates {
    let n = sizes.jobs;
    flush(server);
    let tw = rt.block_on(tickwheel::schedule_and_cancel(
        server,
        n,
        sizes.cancels,
        tickwheel::Io::chosen(),
    ));
    flush(server);
    let seed = rt.block_on(poller::schedule_and_cancel(server, n, sizes.cancels));
    flush(server);
    let b_sched = bullmq.run(
        server,
        "schedule",
        &[("--jobs", n), ("--in-flight", IN_FLIGHT)],
    );
    flush(server);
    let b_cancel = bullmq.run(
        server,
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

    let rates = [
        n as f64 / tw.0.elapsed,
        n as f64 / seed.0.elapsed,
        b_sched.as_ref().map_or(1000.0, |j| num(&j["add_per_sec"])),
    ];
    Rates {
        schedule: rates,
        cancel_us,
        cancel_rates,
    }
}

/// Lateness at 10,000 and at 1,000 jobs a second.
fn lateness(
    server: &RedisServer,
    rt: &Runtime,
    sizes: &Sizes,
    bullmq: &BullMq,
    rates: &Rates,
) -> Vec<LatenessRun> {
    let mut costs = Vec::new();
    for (jobs, window) in [
        (sizes.jobs, sizes.window),
        (sizes.slow_jobs, sizes.slow_window),
    ] {
        let lead = |peer| rates.lead(jobs, peer);
        flush(server);
        let tw = rt.block_on(tickwheel::deliveries(server, jobs, window, lead(0)));
        flush(server);
        let seed = rt.block_on(poller::deliveries(server, jobs, window, lead(1)));
        flush(server);
        let lead_ms = lead(2).as_millis() as usize;
        let args = [
            ("--jobs", jobs),
            ("--window-ms", window.as_millis() as usize),
            ("--in-flight", IN_FLIGHT),
            ("--lead-ms", lead_ms),
        ];
        let mut rows = vec![Late::of_run(TW, &tw), Late::of_run(SEED, &seed)];
        rows.extend(
            bullmq
                .run(server, "lateness", &args)
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
    costs
}

/// Redis's commands and CPU per job over the lateness runs.
fn redis_cost(costs: &[LatenessRun]) {
    println!("\n### Redis cost per job, end to end (schedule + delivery + ack), over the lateness runs\n");
    let mut header = String::from("| contender |");
    let mut rule = String::from("|---|");
    for (jobs, window, _) in costs {
        let rate = *jobs as f64 / window.as_secs_f64();
        header += &format!(" commands/job ({rate:.0}/s) | redis-server CPU/job ({rate:.0}/s) | client CPU/job ({rate:.0}/s) |");
        rule += "---:|---:|---:|";
    }
    println!("{header}\n{rule}");
    for (peer, r) in costs[0].2.iter().enumerate() {
        let mut line = format!("| {} |", r.name);
        for (_, _, rows) in costs {
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
    for (jobs, _, rows) in costs {
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
}

/// `n` jobs due within one second: delivered a second, tickwheel's and
/// the poller's.
fn burst(
    server: &RedisServer,
    rt: &Runtime,
    n: usize,
    bullmq: &BullMq,
    rates: &Rates,
) -> (f64, f64) {
    let second = Duration::from_secs(1);
    flush(server);
    let tw = rt.block_on(tickwheel::deliveries(server, n, second, rates.lead(n, 0)));
    flush(server);
    let seed = rt.block_on(poller::deliveries(server, n, second, rates.lead(n, 1)));
    flush(server);
    let args = [
        ("--jobs", n),
        ("--in-flight", IN_FLIGHT),
        ("--lead-ms", rates.lead(n, 2).as_millis() as usize),
    ];
    let b_burst = bullmq.run(server, "burst", &args);
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
    (tw.burst.0, seed.burst.0)
}

/// Commands a second with nothing pending: tickwheel's.
fn idle_commands(server: &RedisServer, rt: &Runtime, span: Duration, bullmq: &BullMq) -> f64 {
    flush(server);
    let tw = rt.block_on(tickwheel::idle(server, span));
    flush(server);
    let seed = rt.block_on(poller::idle(server, span));
    flush(server);
    let b_idle = bullmq.run(server, "idle", &[("--idle-secs", span.as_secs() as usize)]);
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
    idle
}

/// Issue 22's targets, as this run met them.
fn targets(rates: &Rates, costs: &[LatenessRun], bursts: (f64, f64), idle: f64) {
    println!("\n### Against the issue's targets (tickwheel, this run)\n");
    println!("| target | tickwheel | reference | met |\n|---|---:|---:|---|");
    let target = |what: &str, ours: String, theirs: String, met: bool| {
        let met = if met { "yes" } else { "no" };
        println!("| {what} | {ours} | {theirs} | {met} |");
    };
    target(
        "schedule rate ≥ the poller's",
        format!("{:.0} jobs/s", rates.schedule[0]),
        format!("{:.0} jobs/s", rates.schedule[1]),
        rates.schedule[0] >= rates.schedule[1],
    );
    target(
        &format!("cancel, {IN_FLIGHT} in flight: cancels/s ≥ the poller's"),
        format!("{:.0}/s", rates.cancel_rates.0),
        format!("{:.0}/s", rates.cancel_rates.1),
        rates.cancel_rates.0 >= rates.cancel_rates.1,
    );
    target(
        "cancel, one at a time: µs per cancel ≤ the poller's",
        format!("{:.1} µs", rates.cancel_us.0),
        format!("{:.1} µs", rates.cancel_us.1),
        rates.cancel_us.0 <= rates.cancel_us.1,
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
    for (_, window, rows) in costs {
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
}
