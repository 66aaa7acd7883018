//! One master of a real six-node Redis Cluster frozen by SIGSTOP for
//! longer than the consumer's retry window, then resumed: the claims that
//! waited in its sockets run late and lease jobs to nobody. Those jobs must
//! be handed back once the shard answers (`release.rs`), not wait out a
//! 60 s lease and spend the only attempt: every job comes once, at attempt
//! 1, within a few seconds of the resume, and none is dead-lettered.

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tickwheel::redis::Queue;

use crate::queues::{partition_of, spread, FetchLoop};
use crate::redis_cluster;
use redis_cluster::RedisCluster;

const MS: Duration = Duration::from_millis(1);
const PARTITIONS: u16 = 6;
const JOBS: usize = 72;
/// The stall: well over the retry window (1 s), well under the cluster's
/// node timeout (raised to 30 s), so no replica takes over.
const STALL: Duration = Duration::from_secs(4);

/// What the consumer saw of one job: when, at which attempt.
type Seen = HashMap<String, Vec<(SystemTime, u32)>>;

#[test]
fn a_stalled_master_leases_nothing_to_nobody() {
    let Some(cluster) = RedisCluster::start_or_skip() else {
        return;
    };
    for node in &cluster.nodes {
        node.command(&["CONFIG", "SET", "cluster-node-timeout", "30000"]);
    }
    let (victim, stalled) = cluster.pin_master_of_partition_0("stall", PARTITIONS);
    let slot = |k| cluster.partition_slot("stall", k, PARTITIONS);

    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let queue = Queue::cluster_builder(&seeds, "stall")
        .partitions(PARTITIONS)
        .lease(Duration::from_secs(60))
        .max_attempts(1)
        .retry(Duration::from_secs(1), 250 * MS)
        .connect()
        .unwrap();
    // Due 2 to 5 s from now; the master stops 1.5 s from now, for 4 s.
    let start = SystemTime::now() + Duration::from_secs(2);
    let due = spread(&queue, "stall", JOBS, start, Duration::from_secs(3));
    let seen = Arc::new(Mutex::new(Seen::new()));
    let consumer = FetchLoop::start(&queue, {
        let seen = Arc::clone(&seen);
        move |now, job| {
            let mut seen = seen.lock().unwrap();
            seen.entry(job.id.clone())
                .or_default()
                .push((now, job.attempt));
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    let stopped = SystemTime::now();
    cluster.nodes[victim].stop_signal();
    std::thread::sleep(STALL);
    cluster.nodes[victim].cont_signal();
    let resumed = SystemTime::now();
    let resumed_at = Instant::now();

    // Every job, or 20 s after the resume.
    while seen.lock().unwrap().len() < JOBS && resumed_at.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(50 * MS);
    }
    std::thread::sleep(500 * MS); // a second delivery, if any
    let fetch_errors = consumer.fetch_errors();
    consumer.stop();

    let seen = seen.lock().unwrap();
    let dead = queue.dead_letters(1000).unwrap();
    // Lateness past the later of its due time and the resume.
    let mut report = Vec::new();
    let (mut twice, mut retried, mut late, mut stalled_jobs) = (0, 0, 0, 0);
    let mut worst = Duration::ZERO;
    for (id, &at) in &due {
        let on_stalled = stalled.contains(&(partition_of(id, u64::from(PARTITIONS)) as u16));
        stalled_jobs += usize::from(on_stalled);
        let Some(deliveries) = seen.get(id) else {
            report.push(format!("{id} (stalled shard: {on_stalled}) never came"));
            continue;
        };
        twice += usize::from(deliveries.len() > 1);
        let (when, attempt) = deliveries[0];
        retried += usize::from(attempt > 1);
        let from = if on_stalled && at < resumed {
            resumed
        } else {
            at
        };
        let lateness = when.duration_since(from).unwrap_or_default();
        worst = worst.max(lateness);
        if lateness > Duration::from_secs(3) || attempt > 1 {
            late += usize::from(lateness > Duration::from_secs(3));
            report.push(format!(
                "{id} (stalled shard: {on_stalled}) came {lateness:?} late at attempt {attempt}"
            ));
        }
    }
    let m = queue.metrics();
    eprintln!(
        "cluster stall: {JOBS} jobs ({stalled_jobs} on the stalled master's partitions {stalled:?}), \
         stopped {:?} after start-2s, {} delivered, {twice} more than once, {retried} at attempt > 1, \
         {late} later than 3 s, worst {worst:?}; {} dead letters; {} fetch errors; \
         released {}, failures {}, claims {}; failed over: {}; len {:?}",
        stopped.duration_since(start - Duration::from_secs(2)).unwrap_or_default(),
        seen.len(),
        dead.len(),
        fetch_errors,
        m.released,
        m.failures,
        m.claims,
        cluster.master_of(slot(stalled[0])) != Some(victim),
        queue.len().unwrap(),
    );
    for line in &report {
        eprintln!("  {line}");
    }
    assert_eq!(
        cluster.master_of(slot(stalled[0])),
        Some(victim),
        "a replica took over: not the scenario"
    );
    assert!(report.is_empty() && twice == 0, "{report:#?}");
    // Claims that waited in the frozen master's sockets ran when it
    // resumed, and leased jobs that were then handed back.
    assert!(m.released > 0, "no claim ran late: not the scenario");
    assert!(dead.is_empty(), "{} dead letters", dead.len());
}
