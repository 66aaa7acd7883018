//! Unpaid orders that close themselves, shared by several processes on one
//! Redis: producers create orders and pay most of them, consumers close the
//! rest when their payment timeout falls due, and one consumer is killed
//! with SIGKILL mid-stream.
//!
//! ```text
//! cargo run --release --example orders_durable
//! cargo run --release --example orders_durable -- --redis redis://127.0.0.1:6380 --orders 20000
//! ```
//!
//! Without `--redis` it starts its own `redis-server` (Debian's package:
//! `sudo apt-get install redis-server`) on a free loopback port with a
//! fresh data directory, AOF on with `appendfsync always`, and removes it
//! at the end. It then runs 2 producer and 3 consumer processes (this same
//! binary, with `--role`). Each producer schedules its orders with a 1–3 s
//! payment timeout and pays about 70% of them before it (a payment is a
//! `cancel` that wins). Each consumer takes due timeouts, closes the order
//! (a line on its output, the way a real service writes its database), and
//! acks it. After 2.5 s one consumer is SIGKILLed while it holds jobs; each
//! of them is delivered again once its 2 s lease runs out.
//!
//! The summary checks every order: paid or closed, never both, none lost,
//! and counts orders closed twice (at-least-once delivery: a consumer
//! killed after closing an order but before its ack). It exits non-zero if
//! an order is lost or a paid order was closed.

extern crate alloc;

use alloc::sync::Arc;
use core::time::Duration;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::Instant;

use tickwheel::redis::{Cancelled, Queue, QueueError};

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

const QUEUE: &str = "orders";
const PRODUCERS: u32 = 2;
const CONSUMERS: u32 = 3;
const LEASE: Duration = Duration::from_secs(2);

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut role, mut redis, mut orders, mut index) = (None, None, 10_000u32, 0u32);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_default();
        match arg.as_str() {
            "--role" => role = Some(value),
            "--redis" => redis = Some(value),
            "--orders" => {
                orders = value
                    .parse()
                    .unwrap_or_else(|_| usage("--orders needs a count"))
            }
            "--index" => {
                index = value
                    .parse()
                    .unwrap_or_else(|_| usage("--index needs a number"))
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    match role.as_deref() {
        Some("producer") => produce(&redis_url(redis), index, orders / PRODUCERS),
        Some("consumer") => consume(&redis_url(redis)),
        _ => {
            let own = redis.is_none().then(|| {
                redis_server::RedisServer::try_start_with(
                    redis_server::Config::new().appendfsync(redis_server::Fsync::Always),
                )
                .unwrap_or_else(|why| {
                    // The harness's report ends with the server's log: the
                    // first line says what went wrong.
                    let why = why.lines().next().unwrap_or_default();
                    fail(&format!(
                        "cannot start a redis-server: {why}; install one \
                         (`sudo apt-get install redis-server`), set TICKWHEEL_REDIS_SERVER \
                         to its path, or pass --redis URL to use a running server"
                    ))
                })
            });
            let url = redis.unwrap_or_else(|| own.as_ref().map(|s| s.url()).unwrap_or_default());
            let ok = run(&url, orders);
            drop(own);
            match ok {
                Ok(ok) => std::process::exit(if ok { 0 } else { 1 }),
                Err(why) => fail(&why),
            }
        }
    }
}

/// A bad command line: says what is wrong and exits with status 2.
fn usage(what: &str) -> ! {
    eprintln!("orders_durable: {what}");
    std::process::exit(2);
}

/// Something outside the program failed (no server, none reachable): says
/// what and how to fix it, and exits with status 1 rather than panicking
/// (the caller stops its own server first).
fn fail(what: &str) -> ! {
    eprintln!("orders_durable: {what}");
    std::process::exit(1);
}

/// The `--redis` URL a child process must be given.
fn redis_url(redis: Option<String>) -> String {
    redis.unwrap_or_else(|| usage("--role needs --redis URL"))
}

/// A producer: schedules its orders, pays most of them before their
/// timeout. Prints `S id` when an order exists, `P id` when a payment won,
/// `L id` when it came too late (the order is being closed).
fn produce(url: &str, index: u32, orders: u32) {
    let queue = Queue::connect(url, QUEUE)
        .unwrap_or_else(|e| fail(&format!("producer: cannot connect to Redis at {url}: {e}")));
    let mut rng = (u64::from(index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let start = Instant::now();
    // (pay at, id): payments come at random moments while orders keep arriving.
    let mut payments: Vec<(Instant, String)> = Vec::new();
    let mut out = std::io::stdout().lock();
    for i in 0..orders {
        let id = format!("order-{index}-{i}");
        let timeout = Duration::from_millis(1000 + next() % 2000);
        queue
            .schedule_in(&id, timeout, id.as_bytes())
            .expect("schedule");
        writeln!(out, "S {id}").unwrap();
        if next() % 10 < 7 {
            // Paid somewhere between 0 and 110% of the timeout: most in time.
            let at = Instant::now() + timeout.mul_f64((next() % 1100) as f64 / 1000.0);
            payments.push((at, id));
        }
        // Spread the orders over about three seconds.
        let due = start + Duration::from_micros(3_000_000 * u64::from(i) / u64::from(orders));
        pay_due(&queue, &mut payments, &mut out);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
    while !payments.is_empty() {
        pay_due(&queue, &mut payments, &mut out);
        thread::sleep(Duration::from_millis(1));
    }
    out.flush().unwrap();
}

fn pay_due(queue: &Queue, payments: &mut Vec<(Instant, String)>, out: &mut impl Write) {
    let now = Instant::now();
    payments.retain(|(at, id)| {
        if *at > now {
            return true;
        }
        match queue.cancel(id).expect("cancel") {
            Cancelled::Cancelled(_) => writeln!(out, "P {id}").unwrap(),
            _ => writeln!(out, "L {id}").unwrap(),
        }
        false
    });
}

/// A consumer: closes each order whose timeout fell due (`C id attempt`),
/// then acks it. Runs until killed.
fn consume(url: &str) {
    let queue = Queue::builder(url, QUEUE)
        .lease(LEASE)
        .connect()
        .unwrap_or_else(|e| fail(&format!("consumer: cannot connect to Redis at {url}: {e}")));
    let consumer = queue.consumer().expect("consumer");
    let mut out = std::io::stdout().lock();
    loop {
        for job in consumer.fetch(10, Duration::from_secs(1)).expect("fetch") {
            // Close the order (the line is the database write), tell the
            // customer (a moment's work), then ack: a kill in between closes
            // it twice, once here and once on redelivery.
            writeln!(out, "C {} {}", job.id, job.attempt).unwrap();
            out.flush().unwrap();
            thread::sleep(Duration::from_millis(1));
            consumer.ack(&job).expect("ack");
        }
    }
}

#[derive(Default)]
struct Ledger {
    scheduled: HashSet<String>,
    paid: HashSet<String>,
    late_payments: usize,
    closes: HashMap<String, u32>,
    redelivered: usize,
    closes_by: HashMap<u32, usize>,
}

/// Starts a child; returns it, the thread reading its output into the
/// ledger, and a signal per order it closes.
fn spawn(
    role: &str,
    url: &str,
    orders: u32,
    index: u32,
    ledger: &Arc<Mutex<Ledger>>,
) -> (Child, thread::JoinHandle<()>, std::sync::mpsc::Receiver<()>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--role",
            role,
            "--redis",
            url,
            "--orders",
            &orders.to_string(),
            "--index",
            &index.to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().unwrap();
    let pid = child.id();
    let ledger = Arc::clone(ledger);
    let (closing, closes) = std::sync::mpsc::channel();
    let reader = thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let mut parts = line.split(' ');
            let (Some(kind), Some(id)) = (parts.next(), parts.next()) else {
                continue;
            };
            let mut ledger = ledger.lock().unwrap();
            match kind {
                "S" => {
                    ledger.scheduled.insert(id.to_string());
                }
                "P" => {
                    ledger.paid.insert(id.to_string());
                }
                "L" => ledger.late_payments += 1,
                "C" => {
                    *ledger.closes.entry(id.to_string()).or_default() += 1;
                    *ledger.closes_by.entry(pid).or_default() += 1;
                    let _ = closing.send(());
                    if parts.next().is_some_and(|attempt| attempt != "1") {
                        ledger.redelivered += 1;
                    }
                }
                _ => {}
            }
        }
    });
    (child, reader, closes)
}

/// The demo; `Err` says why it could not start.
fn run(url: &str, orders: u32) -> Result<bool, String> {
    let queue = Queue::connect(url, QUEUE).map_err(|e| {
        let fix = match e {
            QueueError::Unavailable(_) => "is a server running there?",
            _ => "check the URL;",
        };
        format!(
            "cannot connect to Redis at {url}: {e} ({fix} or leave out --redis \
             to start a server of our own)"
        )
    })?;
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let started = Instant::now();
    let mut consumers: Vec<_> = (0..CONSUMERS)
        .map(|i| spawn("consumer", url, orders, i, &ledger))
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|i| spawn("producer", url, orders, i, &ledger))
        .collect();
    thread::sleep(Duration::from_millis(2500));
    let (victim, victim_reader, victim_closes) = &mut consumers[0];
    // Kill it mid-job: right after it reports closing an order, before its
    // ack (and with the rest of its batch in hand).
    while victim_closes.try_recv().is_ok() {}
    let _ = victim_closes.recv_timeout(Duration::from_secs(10));
    victim.kill().expect("SIGKILL a consumer");
    victim.wait().unwrap();
    let victim_pid = victim.id();
    let _ = victim_reader;
    // Its output may still be in the pipe: give the reader a moment.
    thread::sleep(Duration::from_millis(100));
    let closed_by_victim = ledger
        .lock()
        .unwrap()
        .closes_by
        .get(&victim_pid)
        .copied()
        .unwrap_or(0);
    println!(
        "{:>6.2}s  SIGKILLed consumer {victim_pid} mid-stream (it had closed {closed_by_victim} orders)",
        started.elapsed().as_secs_f64(),
    );
    for (mut child, reader, _) in producers {
        assert!(child.wait().unwrap().success(), "a producer failed");
        reader.join().unwrap();
    }
    println!("{:>6.2}s  producers done", started.elapsed().as_secs_f64());
    // Wait until every order is settled in Redis (paid, or closed and acked).
    let give_up = Instant::now() + Duration::from_secs(60);
    while queue.len().expect("len") != (0, 0) && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(50));
    }
    println!("{:>6.2}s  queue empty", started.elapsed().as_secs_f64());
    for (child, reader, _) in consumers.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader;
    }
    for (_, reader, _) in consumers {
        reader.join().unwrap();
    }
    let ledger = ledger.lock().unwrap();
    let closed: HashSet<&String> = ledger.closes.keys().collect();
    let lost: Vec<&String> = ledger
        .scheduled
        .iter()
        .filter(|id| !ledger.paid.contains(*id) && !closed.contains(id))
        .collect();
    let paid_and_closed = ledger.paid.iter().filter(|id| closed.contains(id)).count();
    let twice = ledger.closes.values().filter(|&&n| n > 1).count();
    println!(
        "orders {}: paid {}, closed {} ({} paid too late, closed instead); lost {}, paid and closed {}, \
         redelivered after the kill {}, closed twice {}",
        ledger.scheduled.len(),
        ledger.paid.len(),
        closed.len(),
        ledger.late_payments,
        lost.len(),
        paid_and_closed,
        ledger.redelivered,
        twice,
    );
    if !lost.is_empty() {
        eprintln!("LOST: {:?}", lost.iter().take(10).collect::<Vec<_>>());
    }
    Ok(lost.is_empty()
        && paid_and_closed == 0
        && ledger.scheduled.len() == orders as usize / PRODUCERS as usize * PRODUCERS as usize)
}
