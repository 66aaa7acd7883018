//! Unpaid orders that close themselves, surviving a crash.
//!
//! Each order gets a durable timeout ([`DurableTimer`], journaled with
//! fsync on every operation): unless it is paid first, it closes. About 70%
//! of orders are paid before their timeout (a payment is recorded, then
//! cancels the timeout; the close handler skips paid orders). Every outcome
//! goes to a ledger file beside the journal, the way a real service would
//! write to its database.
//!
//! ```text
//! rm -f /tmp/orders.journal*
//! cargo run --release --example orders_journal -- --journal /tmp/orders.journal --crash-after 2
//! cargo run --release --example orders_journal -- --journal /tmp/orders.journal
//! ```
//!
//! The first run kills itself with SIGKILL after 2 s, mid-stream. The
//! second replays the journal, restores the pending timeouts (those that
//! fell due while it was down close at once), creates the remaining
//! orders, and when all are settled prints the ledger: every order created
//! is paid or closed, none lost, and how many closed twice (a close whose
//! run was cut by the kill before its `done` record reached the journal
//! runs again: delivery is at least once).

extern crate alloc;

use alloc::sync::Arc;
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
                let secs: f64 = value()?
                    .parse()
                    .map_err(|e| format!("--crash-after: {e}"))?;
                options.crash_after = Some(Duration::from_secs_f64(secs));
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
    // What a real service reads from its database: the close handler
    // skips orders already paid (a payment recorded just before a kill may
    // not have reached the timer).
    let paid_orders: Arc<Mutex<HashSet<u64>>> =
        Arc::new(Mutex::new(before.paid.keys().copied().collect()));
    let closer = Arc::clone(&ledger);
    let is_paid = Arc::clone(&paid_orders);
    let started = Instant::now();
    let (orders, recovery) = DurableTimer::open(
        &options.journal,
        SyncPolicy::Always,
        &MisfirePolicy::default(),
        move |order: u64| {
            if !is_paid.lock().unwrap().contains(&order) {
                closer.write("closed", order);
            }
        },
    )?;
    println!(
        "journal {}: {} orders already created, {} timeouts restored, {} damaged stretches skipped",
        options.journal.display(),
        before.created,
        recovery.outcomes.len(),
        recovery.damage.len()
    );
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
    let payer = {
        let ledger = Arc::clone(&ledger);
        let orders = Arc::new(orders);
        let payer_orders = Arc::clone(&orders);
        let handle = thread::spawn(move || {
            for (order, handle) in paid {
                // The payment is recorded first, then the timeout cancelled:
                // a kill between the two leaves a paid order whose timeout
                // still fires, and the close handler skips it.
                paid_orders.lock().unwrap().insert(order);
                ledger.write("paid", order);
                let _ = payer_orders.cancel(handle);
            }
        });
        (orders, handle)
    };
    let (orders, payer_thread) = payer;

    // Create the orders not created yet, spread over about 3 s.
    let remaining = options.orders.saturating_sub(before.created);
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let pace = Duration::from_secs(3).as_nanos() as u64 / options.orders.max(1);
    for n in 0..remaining {
        let order = (run << 32) | n;
        let handle = orders.schedule(options.timeout, order)?;
        ledger.write("created", order);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if rng % 10 < 7 {
            let pay_in = options
                .timeout
                .mul_f64((rng >> 11) as f64 / (1u64 << 53) as f64 * 0.9);
            payments.schedule(pay_in, (order, handle))?;
        }
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
        "orders created {} in {} runs, paid {}, closed {}, closed twice {closed_twice}, \
         paid and closed {paid_and_closed}, closed before the ledger knew them {unledgered}, lost {lost}",
        tally.created,
        tally.runs,
        tally.paid.len(),
        tally.closed.len(),
    );
    println!("({:.1} s in this run)", started.elapsed().as_secs_f64());
    if lost > 0 {
        return Err(format!("{lost} orders lost").into());
    }
    Ok(())
}
