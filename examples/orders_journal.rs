//! Unpaid orders that close themselves, surviving a crash, and payments
//! that cancel them by order id, before or after a restart.
//!
//! Each order gets a durable timeout ([`DurableTimer::schedule_keyed`],
//! journaled with fsync on every operation, under the key `order <id>`):
//! unless it is paid first, it closes. About 70% of orders are paid before
//! their timeout; a payment cancels the timeout by its key
//! ([`DurableTimer::cancel_key`]) and counts as paid only if the cancel
//! won (the value came back, so the close will never run). A payment that
//! comes after the close is refused. Every outcome goes to a ledger file
//! beside the journal, the way a real service would write to its database.
//!
//! ```text
//! rm -f /tmp/orders.journal*
//! cargo run --release --example orders_journal -- --journal /tmp/orders.journal --crash-after 2
//! cargo run --release --example orders_journal -- --journal /tmp/orders.journal
//! ```
//!
//! The first run kills itself with SIGKILL after 2 s, mid-stream. The
//! second replays the journal and restores the pending timeouts (those that
//! fell due while it was down close at once); customers of the restored
//! orders pay too, and their payments cancel the restored timeouts by key.
//! It then creates the remaining orders, and when all are settled prints
//! the ledger: every order created is paid or closed, none lost, none both
//! paid and closed, and how many closed twice (a close whose run was cut
//! by the kill before its `done` record reached the journal runs again:
//! delivery is at least once).
//!
//! A payment is written to the ledger as `paying` before its cancel and as
//! `paid` after it won, so a kill between the two is finished by the next
//! run: a `paying` order whose timeout is no longer in the journal was
//! cancelled, so it is paid; one still in the journal is paid again by key.

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::thread;
use std::time::Instant;

use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
use tickwheel::Timer;

struct Options {
    journal: PathBuf,
    orders: u64,
    timeout: Duration,
    crash_after: Option<Duration>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        journal: PathBuf::new(),
        orders: 20_000,
        timeout: Duration::from_secs(2),
        crash_after: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--journal" => options.journal = PathBuf::from(value()?),
            "--orders" => {
                options.orders = value()?.parse().map_err(|e| format!("--orders: {e}"))?
            }
            "--timeout-ms" => {
                let ms: u64 = value()?.parse().map_err(|e| format!("--timeout-ms: {e}"))?;
                options.timeout = Duration::from_millis(ms);
            }
            "--crash-after" => {
                let text = value()?;
                let secs: f64 = text.parse().map_err(|e| format!("--crash-after: {e}"))?;
                let after = Duration::try_from_secs_f64(secs)
                    .map_err(|e| format!("--crash-after {text}: {e}"))?;
                options.crash_after = Some(after);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.journal.as_os_str().is_empty() {
        return Err("--journal PATH is required".into());
    }
    Ok(options)
}

/// The service's record of what happened to each order: one line per
/// event, appended (the process may be killed at any moment; the kernel
/// keeps what was written).
struct Ledger {
    file: Mutex<File>,
}

#[derive(Default)]
struct Tally {
    runs: u64,
    created: u64,
    paid: HashMap<u64, u32>,
    closed: HashMap<u64, u32>,
    created_ids: HashSet<u64>,
    /// Payments begun (a cancel by key was about to be called).
    paying: HashSet<u64>,
    /// Payments refused: the order had closed.
    refused: u64,
}

impl Ledger {
    fn open(path: &PathBuf) -> std::io::Result<(Ledger, Tally)> {
        let mut tally = Tally::default();
        if let Ok(file) = File::open(path) {
            for line in BufReader::new(file).lines() {
                let line = line?;
                let mut parts = line.split(' ');
                let (Some(kind), Some(Ok(id))) = (parts.next(), parts.next().map(str::parse))
                else {
                    continue; // a line cut by the kill
                };
                match kind {
                    "run" => tally.runs += 1,
                    "created" => {
                        tally.created += 1;
                        tally.created_ids.insert(id);
                    }
                    "paid" => *tally.paid.entry(id).or_default() += 1,
                    "closed" => *tally.closed.entry(id).or_default() += 1,
                    "paying" => {
                        tally.paying.insert(id);
                    }
                    "refused" => tally.refused += 1,
                    _ => {}
                }
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok((
            Ledger {
                file: Mutex::new(file),
            },
            tally,
        ))
    }

    fn write(&self, kind: &str, id: u64) {
        let mut file = self.file.lock().unwrap();
        writeln!(file, "{kind} {id}").expect("ledger write");
    }
}

fn key(order: u64) -> String {
    format!("order {order}")
}

fn main() -> Result<(), Box<dyn core::error::Error>> {
    let options = options()?;
    let mut ledger_path = options.journal.clone().into_os_string();
    ledger_path.push(".ledger");
    let (ledger, before) = Ledger::open(&PathBuf::from(ledger_path))?;
    let ledger = Arc::new(ledger);
    // Order ids carry the run number, so a run never reuses an id that an
    // earlier run may have journaled just before it was killed.
    let run = before.runs + 1;
    ledger.write("run", run);
    let closer = Arc::clone(&ledger);
    let started = Instant::now();
    // The close handler checks nothing: a paid order's timeout was
    // cancelled, so it never runs.
    let (orders, recovery) = DurableTimer::open(
        &options.journal,
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        move |order: u64| closer.write("closed", order),
    )?;
    println!(
        "journal {}: {} orders already created, {} timeouts restored ({} by key), {} damaged stretches skipped",
        options.journal.display(),
        before.created,
        recovery.outcomes.len(),
        recovery.keys.len(),
        recovery.damage.len()
    );
    // Payments cut by the last kill between `paying` and `paid`: a
    // timeout no longer in the journal was cancelled by that payment.
    let restored: HashSet<u64> = recovery
        .keys
        .iter()
        .filter_map(|(key, _)| key.strip_prefix("order ")?.parse().ok())
        .collect();
    let mut unfinished = Vec::new();
    for &order in &before.paying {
        if before.paid.contains_key(&order) || before.closed.contains_key(&order) {
            continue;
        }
        if restored.contains(&order) {
            unfinished.push(order); // paid again below, by key
        } else {
            ledger.write("paid", order);
        }
    }
    if let Some(after) = options.crash_after {
        thread::spawn(move || {
            thread::sleep(after);
            println!("crashing now (SIGKILL), {:.1} s in", after.as_secs_f64());
            let _ = Command::new("kill")
                .args(["-KILL", &std::process::id().to_string()])
                .status();
        });
    }

    // Payments arrive on an ordinary (not durable) timer: a customer pays
    // within the timeout, or never.
    let (payments, paid) = Timer::with_channel()?;
    let orders = Arc::new(orders);
    let by_key_after_restart = Arc::new(AtomicU64::new(0));
    let payer_thread = {
        let ledger = Arc::clone(&ledger);
        let orders = Arc::clone(&orders);
        let after_restart = Arc::clone(&by_key_after_restart);
        thread::spawn(move || {
            for order in paid {
                ledger.write("paying", order);
                if orders.cancel_key(&key(order)).is_some() {
                    if order >> 32 < run {
                        // Scheduled by an earlier process.
                        after_restart.fetch_add(1, Ordering::Relaxed);
                    }
                    ledger.write("paid", order);
                } else {
                    // Closed first (or closing): the payment is refused.
                    ledger.write("refused", order);
                }
            }
        })
    };
    let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ run;
    let mut maybe_pay = |order: u64, within: Duration| -> Result<(), Box<dyn core::error::Error>> {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if rng % 10 < 7 {
            let pay_in = within.mul_f64((rng >> 11) as f64 / (1u64 << 53) as f64 * 0.9);
            payments.schedule(pay_in, order)?;
        }
        Ok(())
    };
    // Customers of the orders restored from the journal pay too: their
    // payments find the timeouts by key, in a process that never had the
    // handles.
    for order in unfinished {
        payments.schedule(Duration::ZERO, order)?;
    }
    // (Soon: the restored timeouts have less than a timeout left.)
    for &order in &restored {
        maybe_pay(order, options.timeout / 10)?;
    }

    // Create the orders not created yet, spread over about 3 s.
    let remaining = options.orders.saturating_sub(before.created);
    let pace = Duration::from_secs(3).as_nanos() as u64 / options.orders.max(1);
    for n in 0..remaining {
        let order = (run << 32) | n;
        orders.schedule_keyed(&key(order), options.timeout, order)?;
        ledger.write("created", order);
        maybe_pay(order, options.timeout)?;
        let due = started + Duration::from_nanos(pace * n);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
    // Wait until every timeout has closed or been paid.
    while orders.pending() > 0 || payments.pending() > 0 {
        thread::sleep(Duration::from_millis(20));
    }
    drop(payments);
    payer_thread.join().expect("payer panicked");
    drop(orders);

    // The ledger, read back: every created order must be paid or closed.
    let mut ledger_path = options.journal.clone().into_os_string();
    ledger_path.push(".ledger");
    let (_, tally) = Ledger::open(&PathBuf::from(ledger_path))?;
    let lost = tally
        .created_ids
        .iter()
        .filter(|id| !tally.paid.contains_key(id) && !tally.closed.contains_key(id))
        .count();
    // Journaled by a run killed before it could write "created".
    let unledgered = tally
        .closed
        .keys()
        .filter(|id| !tally.created_ids.contains(id))
        .count();
    let closed_twice = tally.closed.values().filter(|&&n| n > 1).count();
    let paid_and_closed = tally
        .paid
        .keys()
        .filter(|id| tally.closed.contains_key(id))
        .count();
    println!(
        "orders created {} in {} runs, paid {}, closed {}, payments refused (closed first) {}, \
         closed twice {closed_twice}, paid and closed {paid_and_closed}, \
         closed before the ledger knew them {unledgered}, lost {lost}",
        tally.created,
        tally.runs,
        tally.paid.len(),
        tally.closed.len(),
        tally.refused,
    );
    println!(
        "({:.1} s in this run; {} timeouts of an earlier run cancelled by key)",
        started.elapsed().as_secs_f64(),
        by_key_after_restart.load(Ordering::Relaxed)
    );
    if lost > 0 || paid_and_closed > 0 {
        return Err(format!("{lost} orders lost, {paid_and_closed} paid and closed").into());
    }
    Ok(())
}
