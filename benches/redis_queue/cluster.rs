//! The cluster section (issue 23): one tickwheel queue on a real Redis
//! Cluster of six nodes (3 masters, 3 replicas, `tests/support/
//! redis_cluster.rs`), with 1 partition (one master does all the work)
//! and with 12 (spread over the three masters by their hash tags):
//!
//! - schedule rate: `n` jobs due in 1 h, 200 calls in flight;
//! - burst: `n` jobs due within 250 ms, the consumer of the other
//!   sections (4 tasks, `ack_and_fetch` of 100);
//! - each master's share of the Redis commands over both (`INFO
//!   commandstats`, script internals included) and each master's CPU;
//! - this process's CPU.
//!
//! Everything shares this machine's cores, so the rates say what the
//! client and three servers do together here; the shares and CPU per
//! master say what each shard would carry on a machine of its own.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Queue, Scheduled};

use crate::common::{lanes, until_delivered, Plan, Tally, IN_FLIGHT, PAYLOAD};
use crate::cpu::process_cpu;
use crate::redis_cluster::RedisCluster;
use crate::stats::{command_counts, info, redis_cpu, reset_counts};
use crate::tickwheel::{consume, schedule_plan};

/// The burst's jobs are all due within this window: more than the
/// consumer can take, so the rate is its capacity.
const BURST: Duration = Duration::from_millis(250);

/// One run of the section on one partition count.
pub(crate) struct ClusterRun {
    pub(crate) partitions: u16,
    pub(crate) scheduled_per_s: f64,
    pub(crate) burst_per_s: f64,
    pub(crate) early: usize,
    pub(crate) lost: usize,
    /// Per master, in node order: commands, and CPU seconds.
    pub(crate) masters: Vec<(u64, f64)>,
    pub(crate) client_cpu: f64,
}

fn masters(cluster: &RedisCluster) -> Vec<usize> {
    (0..cluster.nodes.len())
        .filter(|&i| {
            info(&cluster.nodes[i], &["replication"])
                .get("role")
                .map(String::as_str)
                == Some("master")
        })
        .collect()
}

/// Schedules `n` jobs due in 1 h, then `n` due within 1 s, on a queue of
/// `partitions` partitions named for the count and the round (so each run
/// starts empty).
pub(crate) async fn run(
    cluster: &RedisCluster,
    partitions: u16,
    round: usize,
    n: usize,
) -> ClusterRun {
    let masters = masters(cluster);
    let cpu_before: Vec<f64> = masters
        .iter()
        .map(|&m| {
            reset_counts(&cluster.nodes[m]);
            redis_cpu(&info(&cluster.nodes[m], &["cpu"]))
        })
        .collect();
    let client_before = process_cpu();
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let queue = Queue::cluster_builder(&seeds, &format!("cluster{partitions}r{round}"))
        .partitions(partitions)
        .connect_async()
        .await
        .expect("connect to the cluster");

    let started = Instant::now();
    let q = queue.clone();
    lanes(n, IN_FLIGHT, move |i| {
        let q = q.clone();
        async move {
            let s = q
                .schedule_in(&format!("later-{i}"), Duration::from_secs(3600), PAYLOAD)
                .await;
            assert!(matches!(s.expect("schedule"), Scheduled::Created { .. }));
        }
    })
    .await;
    let scheduled_per_s = n as f64 / started.elapsed().as_secs_f64();

    let consumer = Arc::new(queue.consumer().expect("consumer"));
    let tally = Arc::new(Tally::new(n));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = consume(&consumer, &tally, &stop);
    // The burst's first job is due once scheduling (at the rate above)
    // is about done.
    let lead = Duration::from_secs_f64(n as f64 / scheduled_per_s + 1.0);
    let plan = Arc::new(Plan::new(n, BURST, lead));
    schedule_plan(&queue, &plan).await;
    until_delivered(&tally, &plan).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = tasks.join_next().await {
        done.expect("a consumer task panicked");
    }
    let summary = tally.summary(&plan);
    let (burst_per_s, _) = summary.burst(&plan);
    let masters = masters
        .iter()
        .zip(cpu_before)
        .map(|(&m, before)| {
            let node = &cluster.nodes[m];
            let commands = command_counts(node).values().sum::<u64>();
            (commands, redis_cpu(&info(node, &["cpu"])) - before)
        })
        .collect();
    ClusterRun {
        partitions,
        scheduled_per_s,
        burst_per_s,
        early: summary.early,
        lost: summary.lost,
        masters,
        client_cpu: (process_cpu() - client_before).as_secs_f64(),
    }
}

/// The section's table, one row per run.
pub(crate) fn print(runs: &[ClusterRun], n: usize) {
    println!(
        "\n### Cluster: one queue on 3 masters + 3 replicas, {n} jobs due in 1 h, then {n} due within 250 ms\n"
    );
    println!("| partitions | schedule, 200 in flight: jobs/s | burst: delivered/s | early, lost | commands per master (share) | CPU per master (s) | client CPU (s) |");
    println!("|---:|---:|---:|---:|---|---|---:|");
    for r in runs {
        let total: u64 = r.masters.iter().map(|(c, _)| c).sum();
        let shares: Vec<String> = r
            .masters
            .iter()
            .map(|(c, _)| format!("{c} ({:.0} %)", 100.0 * *c as f64 / total.max(1) as f64))
            .collect();
        let cpus: Vec<String> = r.masters.iter().map(|(_, s)| format!("{s:.2}")).collect();
        println!(
            "| {} | {:.0} | {:.0} | {}, {} | {} | {} | {:.2} |",
            r.partitions,
            r.scheduled_per_s,
            r.burst_per_s,
            r.early,
            r.lost,
            shares.join(" / "),
            cpus.join(" / "),
            r.client_cpu
        );
    }
}

/// `rounds` rounds on one six-node cluster, 1 and 12 partitions taking
/// turns (the first mover alternating).
pub(crate) fn rounds(rt: &tokio::runtime::Runtime, n: usize, rounds: usize) {
    let cluster = RedisCluster::start_or_skip().expect("a redis-server");
    println!(
        "cluster: {} nodes, ports {:?}",
        cluster.nodes.len(),
        cluster
            .nodes
            .iter()
            .map(crate::redis_server::RedisServer::port)
            .collect::<Vec<_>>()
    );
    let mut runs = Vec::new();
    for round in 0..rounds {
        let order: [u16; 2] = if round % 2 == 0 { [1, 12] } else { [12, 1] };
        for partitions in order {
            runs.push(rt.block_on(run(&cluster, partitions, round, n)));
        }
    }
    print(&runs, n);
}
