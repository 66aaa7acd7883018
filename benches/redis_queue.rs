//! The Redis queue (`tickwheel::redis`) against BullMQ and the seeds'
//! polled ZSET, side by side on one `redis-server` in one run:
//!
//! - lateness: 100 000 jobs due uniformly over 10 s: p50, p99, max, early,
//!   lost and duplicated deliveries;
//! - schedule rate (one call at a time from many threads, and batches) and
//!   delivery rate when 100 000 jobs fall due within one second;
//! - idle cost: Redis commands a second with nothing pending;
//! - cancel: the cost of one cancel with 100 000 pending.
//!
//! ```text
//! cargo bench --bench redis_queue            # BullMQ needs node; `npm ci` runs if needed
//! cargo bench --bench redis_queue -- --quick # 10x smaller, for a smoke run
//! ```
//!
//! The server is started here (`tests/support/redis_server.rs`) with AOF on
//! and `appendfsync everysec`, Redis's defaults otherwise (`hz 10`), and
//! flushed between contenders. Delivery times are read on this machine's
//! clock, which is the server's. Prints markdown tables for
//! `docs/benchmarks.md`.

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use std::collections::HashMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tickwheel::redis::{Queue, Scheduled};

#[path = "../tests/support/redis_server.rs"]
mod redis_server;
#[path = "peers/zset_poller.rs"]
mod zset_poller;

use redis_server::{Config, Fsync, RedisServer};

const CONSUMER_THREADS: usize = 4;
const SCHEDULE_THREADS: usize = 16;

struct Sizes {
    jobs: usize,
    window: Duration,
    cancels: usize,
    idle: Duration,
}

/// What a lateness or burst run saw.
#[derive(Default)]
struct Deliveries {
    /// Lateness of each first delivery, in µs (negative: early).
    late_us: Vec<i64>,
    duplicated: usize,
    last: Option<SystemTime>,
}

impl Deliveries {
    fn record(
        &mut self,
        seen: &mut HashMap<String, ()>,
        id: String,
        due: SystemTime,
        at: SystemTime,
    ) {
        if seen.insert(id, ()).is_some() {
            self.duplicated += 1;
            return;
        }
        let late = match at.duration_since(due) {
            Ok(late) => late.as_micros() as i64,
            Err(early) => -(early.duration().as_micros() as i64),
        };
        self.late_us.push(late);
        self.last = Some(self.last.map_or(at, |last| last.max(at)));
    }

    fn quantile(&self, q: f64) -> f64 {
        let mut sorted = self.late_us.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1] as f64 / 1000.0
    }
}

fn micros(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `cargo bench` passes `--bench`; nothing else is understood.
    let sizes = if quick {
        Sizes {
            jobs: 10_000,
            window: Duration::from_secs(2),
            cancels: 1_000,
            idle: Duration::from_secs(5),
        }
    } else {
        Sizes {
            jobs: 100_000,
            window: Duration::from_secs(10),
            cancels: 10_000,
            idle: Duration::from_secs(10),
        }
    };
    let server = RedisServer::start_with(Config::new().appendfsync(Fsync::EverySec));
    eprintln!("redis-server on {} ({})", server.addr(), version(&server));
    let bullmq = BullMq::prepare();

    // ---- lateness -----------------------------------------------------
    println!(
        "\n### Lateness: {} jobs due uniformly over {:?}\n",
        sizes.jobs, sizes.window
    );
    println!("| contender | p50 | p99 | max | early | lost | duplicated |\n|---|---:|---:|---:|---:|---:|---:|");
    flush(&server);
    let d = tickwheel_deliveries(&server, &sizes, sizes.window, Duration::from_secs(5));
    print_lateness("tickwheel `redis::Queue`", &d, sizes.jobs);
    flush(&server);
    let d = seed_deliveries(&server, &sizes, sizes.window, Duration::from_secs(5));
    print_lateness("seeds' ZSET + 100 ms poller", &d, sizes.jobs);
    flush(&server);
    match bullmq.run(
        &server,
        "lateness",
        &[
            ("--jobs", sizes.jobs),
            ("--window-ms", sizes.window.as_millis() as usize),
        ],
    ) {
        Some(j) => println!(
            "| BullMQ {} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {} | {} |",
            j["version"].as_str().unwrap_or("?"),
            f(&j["p50_ms"]),
            f(&j["p99_ms"]),
            f(&j["max_ms"]),
            j["early"],
            j["lost"],
            j["duplicated"]
        ),
        None => println!("| BullMQ | not run: {} | | | | | |", bullmq.why()),
    }

    // ---- schedule rate ------------------------------------------------
    println!("\n### Schedule rate: {} jobs due in 1 h\n", sizes.jobs);
    println!("| contender | one call at a time, many in flight | batches of 1 000, one in flight | batches, 4 in flight |\n|---|---:|---:|---:|");
    flush(&server);
    let (single, batch, batch4) = tickwheel_schedule_rates(&server, sizes.jobs);
    println!(
        "| tickwheel | {single:.0}/s ({SCHEDULE_THREADS} threads) | {batch:.0}/s | {batch4:.0}/s |"
    );
    flush(&server);
    let (batch, batch4) = seed_schedule_rates(&server, sizes.jobs);
    println!(
        "| seeds' ZSET | (same as batches: two plain commands) | {batch:.0}/s | {batch4:.0}/s |"
    );
    flush(&server);
    match bullmq.run(&server, "schedule", &[("--jobs", sizes.jobs)]) {
        Some(j) => println!(
            "| BullMQ | {:.0}/s (64 in flight) | {:.0}/s | {:.0}/s |",
            f(&j["add_per_sec"]),
            f(&j["add_bulk_per_sec"]),
            f(&j["add_bulk_pipelined_per_sec"])
        ),
        None => println!("| BullMQ | not run: {} | | |", bullmq.why()),
    }

    // ---- burst --------------------------------------------------------
    println!("\n### Burst: {} jobs due within one second\n", sizes.jobs);
    println!("| contender | delivered/s | last delivery after the second ends | lost | duplicated |\n|---|---:|---:|---:|---:|");
    flush(&server);
    let d = tickwheel_deliveries(
        &server,
        &sizes,
        Duration::from_secs(1),
        Duration::from_secs(5),
    );
    print_burst("tickwheel", &d, sizes.jobs);
    flush(&server);
    let d = seed_deliveries(
        &server,
        &sizes,
        Duration::from_secs(1),
        Duration::from_secs(5),
    );
    print_burst("seeds' ZSET", &d, sizes.jobs);
    flush(&server);
    match bullmq.run(&server, "burst", &[("--jobs", sizes.jobs)]) {
        Some(j) => println!(
            "| BullMQ | {:.0} | {:.0} ms | {} | {} |",
            f(&j["delivered_per_sec"]),
            f(&j["last_after_due_ms"]),
            j["lost"],
            j["duplicated"]
        ),
        None => println!("| BullMQ | not run: {} | | | |", bullmq.why()),
    }

    // ---- idle ---------------------------------------------------------
    println!("\n### Idle cost: Redis commands a second, nothing pending, one consumer node\n");
    println!("| contender | commands/s |\n|---|---:|");
    flush(&server);
    println!(
        "| tickwheel (1 consumer) | {:.2} |",
        tickwheel_idle(&server, sizes.idle)
    );
    flush(&server);
    println!(
        "| seeds' ZSET (mover + {CONSUMER_THREADS} consumers) | {:.2} |",
        seed_idle(&server, sizes.idle)
    );
    flush(&server);
    match bullmq.run(
        &server,
        "idle",
        &[("--idle-secs", sizes.idle.as_secs() as usize)],
    ) {
        Some(j) => println!("| BullMQ (1 worker) | {:.2} |", f(&j["commands_per_sec"])),
        None => println!("| BullMQ | not run: {} |", bullmq.why()),
    }

    // ---- cancel -------------------------------------------------------
    println!(
        "\n### Cancel: {} cancels, one at a time, with {} pending\n",
        sizes.cancels, sizes.jobs
    );
    println!("| contender | µs per cancel |\n|---|---:|");
    flush(&server);
    println!("| tickwheel | {:.1} |", tickwheel_cancel(&server, &sizes));
    flush(&server);
    println!("| seeds' ZSET | {:.1} |", seed_cancel(&server, &sizes));
    flush(&server);
    match bullmq.run(
        &server,
        "cancel",
        &[("--jobs", sizes.jobs), ("--cancel", sizes.cancels)],
    ) {
        Some(j) => println!("| BullMQ | {:.1} |", f(&j["us_per_cancel"])),
        None => println!("| BullMQ | not run: {} |", bullmq.why()),
    }
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn version(server: &RedisServer) -> String {
    let info = server.command(&["INFO", "server"]);
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string()
}

fn flush(server: &RedisServer) {
    server.command(&["FLUSHALL"]);
}

fn commands(server: &RedisServer) -> u64 {
    let info = server.command(&["INFO", "stats"]);
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

fn print_lateness(name: &str, d: &Deliveries, jobs: usize) {
    let early = d.late_us.iter().filter(|&&l| l < 0).count();
    println!(
        "| {name} | {:.2} ms | {:.2} ms | {:.2} ms | {early} | {} | {} |",
        d.quantile(0.5),
        d.quantile(0.99),
        d.quantile(1.0),
        jobs - d.late_us.len(),
        d.duplicated
    );
}

fn print_burst(name: &str, d: &Deliveries, jobs: usize) {
    // Due within [start, start + 1 s): the run's start is the earliest due.
    let (rate, after) = burst_figures(d);
    println!(
        "| {name} | {rate:.0} | {after:.0} ms | {} | {} |",
        jobs - d.late_us.len(),
        d.duplicated
    );
}

fn burst_figures(d: &Deliveries) -> (f64, f64) {
    let Some(&(start, _)) = BURST_START.lock().unwrap().as_ref() else {
        return (f64::NAN, f64::NAN);
    };
    let last = d.last.unwrap_or(start);
    let span = last.duration_since(start).unwrap_or_default().as_secs_f64();
    let end = start + Duration::from_secs(1);
    let after = last
        .duration_since(end)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    (d.late_us.len() as f64 / span, after)
}

static BURST_START: Mutex<Option<(SystemTime, ())>> = Mutex::new(None);

/// Due times: job i at start + window * i / n, start = now + lead.
fn due_times(n: usize, window: Duration, lead: Duration) -> Vec<SystemTime> {
    let start = SystemTime::now() + lead;
    *BURST_START.lock().unwrap() = Some((start, ()));
    (0..n)
        .map(|i| start + window.mul_f64(i as f64 / n as f64))
        .collect()
}

fn tickwheel_deliveries(
    server: &RedisServer,
    sizes: &Sizes,
    window: Duration,
    lead: Duration,
) -> Deliveries {
    let queue = Queue::builder(&server.url(), "bench")
        .batch(100)
        .connect()
        .unwrap();
    let ids: Vec<String> = (0..sizes.jobs).map(|i| format!("j{i}")).collect();
    let due = due_times(sizes.jobs, window, lead);
    let started = Instant::now();
    for (ids, due) in ids.chunks(1000).zip(due.chunks(1000)) {
        let jobs: Vec<(&str, SystemTime, &[u8])> = ids
            .iter()
            .zip(due)
            .map(|(id, &at)| (id.as_str(), at, &b"order"[..]))
            .collect();
        for s in queue.schedule_many_at(&jobs).unwrap() {
            assert!(matches!(s, Scheduled::Created { .. }));
        }
    }
    eprintln!(
        "tickwheel: scheduled {} in {:?} (lead {lead:?})",
        sizes.jobs,
        started.elapsed()
    );
    let due_of: Arc<HashMap<String, SystemTime>> = Arc::new(ids.into_iter().zip(due).collect());
    let delivered = Arc::new(AtomicUsize::new(0));
    let give_up = Instant::now() + lead + window + Duration::from_secs(30);
    let results: Vec<(Deliveries, HashMap<String, ()>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..CONSUMER_THREADS)
            .map(|_| {
                let consumer = queue.consumer().unwrap();
                let (due_of, delivered) = (Arc::clone(&due_of), Arc::clone(&delivered));
                let jobs = sizes.jobs;
                scope.spawn(move || {
                    let mut d = Deliveries::default();
                    let mut seen = HashMap::new();
                    while delivered.load(Ordering::Relaxed) < jobs && Instant::now() < give_up {
                        let batch = consumer.fetch(100, Duration::from_millis(200)).unwrap();
                        let at = SystemTime::now();
                        for job in &batch {
                            d.record(&mut seen, job.id.clone(), due_of[&job.id], at);
                        }
                        delivered.fetch_add(batch.len(), Ordering::Relaxed);
                        consumer.ack_all(&batch).unwrap();
                    }
                    (d, seen)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    merge(results)
}

fn merge(results: Vec<(Deliveries, HashMap<String, ()>)>) -> Deliveries {
    let mut all = Deliveries::default();
    let mut seen: HashMap<String, ()> = HashMap::new();
    for (d, ids) in results {
        all.duplicated += d.duplicated;
        all.late_us.extend(d.late_us);
        all.last = match (all.last, d.last) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for id in ids.into_keys() {
            if seen.insert(id, ()).is_some() {
                all.duplicated += 1;
            }
        }
    }
    all
}

fn seed_deliveries(
    server: &RedisServer,
    sizes: &Sizes,
    window: Duration,
    lead: Duration,
) -> Deliveries {
    let due = due_times(sizes.jobs, window, lead);
    let jobs: Vec<(String, u64, Vec<u8>)> = due
        .iter()
        .enumerate()
        .map(|(i, &at)| (format!("j{i}"), micros(at), b"order".to_vec()))
        .collect();
    let mut conn = zset_poller::connect(&server.url());
    for chunk in jobs.chunks(1000) {
        zset_poller::schedule(&mut conn, chunk);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mover = zset_poller::spawn_mover(server.url(), Arc::clone(&stop));
    let delivered = Arc::new(AtomicUsize::new(0));
    let give_up = Instant::now() + lead + window + Duration::from_secs(30);
    let results = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..CONSUMER_THREADS)
            .map(|_| {
                let delivered = Arc::clone(&delivered);
                let n = sizes.jobs;
                let url = server.url();
                scope.spawn(move || {
                    let mut conn = zset_poller::connect(&url);
                    let mut d = Deliveries::default();
                    let mut seen = HashMap::new();
                    while delivered.load(Ordering::Relaxed) < n && Instant::now() < give_up {
                        if let Some((id, due)) = zset_poller::take(&mut conn) {
                            let at = SystemTime::now();
                            d.record(
                                &mut seen,
                                id,
                                SystemTime::UNIX_EPOCH + Duration::from_micros(due),
                                at,
                            );
                            delivered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    (d, seen)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    stop.store(true, Ordering::Relaxed);
    mover.join().unwrap();
    merge(results)
}

fn tickwheel_schedule_rates(server: &RedisServer, n: usize) -> (f64, f64, f64) {
    let queue = Queue::builder(&server.url(), "bench").connect().unwrap();
    let hour = Duration::from_secs(3600);
    let ids: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for part in ids.chunks(n.div_ceil(SCHEDULE_THREADS)) {
            let queue = queue.clone();
            scope.spawn(move || {
                for id in part {
                    queue.schedule_in(id, hour, b"order").unwrap();
                }
            });
        }
    });
    let single = n as f64 / started.elapsed().as_secs_f64();
    flush(server);
    let started = Instant::now();
    for part in ids.chunks(1000) {
        let jobs: Vec<(&str, Duration, &[u8])> = part
            .iter()
            .map(|id| (id.as_str(), hour, &b"order"[..]))
            .collect();
        queue.schedule_many(&jobs).unwrap();
    }
    let batch = n as f64 / started.elapsed().as_secs_f64();
    flush(server);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for part in ids.chunks(n.div_ceil(4)) {
            let queue = queue.clone();
            scope.spawn(move || {
                for chunk in part.chunks(1000) {
                    let jobs: Vec<(&str, Duration, &[u8])> = chunk
                        .iter()
                        .map(|id| (id.as_str(), hour, &b"order"[..]))
                        .collect();
                    queue.schedule_many(&jobs).unwrap();
                }
            });
        }
    });
    let batch4 = n as f64 / started.elapsed().as_secs_f64();
    (single, batch, batch4)
}

fn seed_schedule_rates(server: &RedisServer, n: usize) -> (f64, f64) {
    let due = micros(SystemTime::now() + Duration::from_secs(3600));
    let jobs: Vec<(String, u64, Vec<u8>)> = (0..n)
        .map(|i| (format!("s{i}"), due, b"order".to_vec()))
        .collect();
    let mut conn = zset_poller::connect(&server.url());
    let started = Instant::now();
    for chunk in jobs.chunks(1000) {
        zset_poller::schedule(&mut conn, chunk);
    }
    let batch = n as f64 / started.elapsed().as_secs_f64();
    flush(server);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for part in jobs.chunks(n.div_ceil(4)) {
            let url = server.url();
            scope.spawn(move || {
                let mut conn = zset_poller::connect(&url);
                for chunk in part.chunks(1000) {
                    zset_poller::schedule(&mut conn, chunk);
                }
            });
        }
    });
    (batch, n as f64 / started.elapsed().as_secs_f64())
}

fn tickwheel_idle(server: &RedisServer, idle: Duration) -> f64 {
    let queue = Queue::builder(&server.url(), "bench").connect().unwrap();
    let consumer = queue.consumer().unwrap();
    let waiter =
        std::thread::spawn(move || consumer.fetch(1, idle + Duration::from_secs(4)).unwrap());
    std::thread::sleep(Duration::from_secs(2));
    let before = commands(server);
    std::thread::sleep(idle);
    let after = commands(server);
    assert!(waiter.join().unwrap().is_empty());
    (after - before - 1) as f64 / idle.as_secs_f64()
}

fn seed_idle(server: &RedisServer, idle: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let mover = zset_poller::spawn_mover(server.url(), Arc::clone(&stop));
    let consumers: Vec<_> = (0..CONSUMER_THREADS)
        .map(|_| {
            let (url, stop) = (server.url(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut conn = zset_poller::connect(&url);
                while !stop.load(Ordering::Relaxed) {
                    zset_poller::take(&mut conn);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let before = commands(server);
    std::thread::sleep(idle);
    let after = commands(server);
    stop.store(true, Ordering::Relaxed);
    mover.join().unwrap();
    for c in consumers {
        c.join().unwrap();
    }
    (after - before - 1) as f64 / idle.as_secs_f64()
}

/// The victims: every tenth job, in a scrambled order.
fn victims(sizes: &Sizes) -> Vec<usize> {
    let step = sizes.jobs / sizes.cancels;
    let mut v: Vec<usize> = (0..sizes.cancels).map(|k| k * step).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn tickwheel_cancel(server: &RedisServer, sizes: &Sizes) -> f64 {
    let queue = Queue::builder(&server.url(), "bench").connect().unwrap();
    let ids: Vec<String> = (0..sizes.jobs).map(|i| format!("c{i}")).collect();
    for part in ids.chunks(1000) {
        let jobs: Vec<(&str, Duration, &[u8])> = part
            .iter()
            .map(|id| (id.as_str(), Duration::from_secs(3600), &b"order"[..]))
            .collect();
        queue.schedule_many(&jobs).unwrap();
    }
    let victims = victims(sizes);
    let started = Instant::now();
    for &i in &victims {
        assert!(matches!(
            queue.cancel(&ids[i]).unwrap(),
            tickwheel::redis::Cancelled::Cancelled(_)
        ));
    }
    started.elapsed().as_secs_f64() * 1e6 / victims.len() as f64
}

fn seed_cancel(server: &RedisServer, sizes: &Sizes) -> f64 {
    let due = micros(SystemTime::now() + Duration::from_secs(3600));
    let jobs: Vec<(String, u64, Vec<u8>)> = (0..sizes.jobs)
        .map(|i| (format!("c{i}"), due, b"order".to_vec()))
        .collect();
    let mut conn = zset_poller::connect(&server.url());
    for chunk in jobs.chunks(1000) {
        zset_poller::schedule(&mut conn, chunk);
    }
    let victims = victims(sizes);
    let started = Instant::now();
    for &i in &victims {
        assert!(zset_poller::cancel(&mut conn, &jobs[i].0));
    }
    started.elapsed().as_secs_f64() * 1e6 / victims.len() as f64
}

/// The BullMQ peer (`benches/peers/bullmq`), run by node.
struct BullMq {
    ready: Result<(), String>,
}

impl BullMq {
    fn prepare() -> BullMq {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peers/bullmq");
        let ready = (|| {
            let node = Command::new("node")
                .arg("--version")
                .output()
                .map_err(|e| format!("node: {e}"))?;
            if !node.status.success() {
                return Err("node --version failed".to_string());
            }
            if !std::path::Path::new(dir)
                .join("node_modules/bullmq")
                .exists()
            {
                eprintln!("installing BullMQ: npm ci in {dir}");
                let status = Command::new("npm")
                    .arg("ci")
                    .current_dir(dir)
                    .status()
                    .map_err(|e| format!("npm: {e}"))?;
                if !status.success() {
                    return Err("npm ci failed".to_string());
                }
            }
            Ok(())
        })();
        BullMq { ready }
    }

    fn why(&self) -> String {
        self.ready.clone().err().unwrap_or_default()
    }

    fn run(
        &self,
        server: &RedisServer,
        workload: &str,
        args: &[(&str, usize)],
    ) -> Option<serde_json::Value> {
        if self.ready.is_err() {
            return None;
        }
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/peers/bullmq/bench.mjs"
        );
        let mut cmd = Command::new("node");
        cmd.args([
            script,
            "--port",
            &server.port().to_string(),
            "--workload",
            workload,
        ]);
        for (flag, value) in args {
            cmd.args([flag.to_string(), value.to_string()]);
        }
        let out = cmd.output().expect("node");
        if !out.status.success() {
            eprintln!(
                "BullMQ {workload} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.trim()).ok()
    }
}
