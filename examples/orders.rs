//! The job tickwheel exists for: close every unpaid order when its payment
//! timeout runs out, and never lose one.
//!
//! ```text
//! cargo run --release --example orders
//! cargo run --release --example orders -- --orders 200000 --spread 2 --paid 50
//! ```
//!
//! 1. Two producer threads create the orders, each with a payment timeout
//!    spread uniformly over `--spread` seconds (default 3), scheduled on a
//!    `Timer` used as a delay queue.
//! 2. A random `--paid` percent of them (default 70) are paid at a random
//!    moment before their timeout. Payments are themselves scheduled on a
//!    second timer, a delay queue that a payer thread reads; paying cancels
//!    the order's timeout. A payment that lands in the same tick as its
//!    timeout can lose the race; then the order stays closed: cancel says
//!    who won.
//! 3. A closer thread takes expired orders off the queue and closes them,
//!    measuring how late each one was (close time − requested deadline).
//!
//! It prints progress while it runs and a summary at the end, and checks
//! that every order ended exactly one way: paid, auto-closed, or handed
//! back at shutdown.

extern crate alloc;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::process::ExitCode;
use std::thread;
use std::time::Instant;

use tickwheel::timer::TimerHandle;
use tickwheel::Timer;

/// An order waiting for payment: the timer's value.
struct Order {
    id: u32,
    /// The payment deadline as requested (before rounding to the tick).
    deadline: Instant,
}

struct Options {
    orders: u32,
    spread: Duration,
    paid_percent: u32,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        orders: 1_000_000,
        spread: Duration::from_secs(3),
        paid_percent: 70,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--orders" => {
                options.orders = value()?.parse().map_err(|e| format!("--orders: {e}"))?
            }
            "--spread" => {
                let secs: f64 = value()?.parse().map_err(|e| format!("--spread: {e}"))?;
                if !(0.001..=3600.0).contains(&secs) {
                    return Err("--spread must be between 0.001 and 3600 seconds".into());
                }
                options.spread = Duration::from_secs_f64(secs);
            }
            "--paid" => {
                options.paid_percent = value()?.parse().map_err(|e| format!("--paid: {e}"))?;
                if options.paid_percent > 100 {
                    return Err("--paid is a percentage (0 to 100)".into());
                }
            }
            "-h" | "--help" => {
                return Err("usage: orders [--orders N] [--spread SECONDS] [--paid PERCENT]".into())
            }
            other => return Err(format!("unknown flag {other} (try --help)")),
        }
    }
    Ok(options)
}

/// splitmix64: a fast, seedable generator for the simulation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One auto-close, as the closer saw it.
struct Close {
    id: u32,
    deadline: Instant,
    late: Duration,
}

#[derive(Default)]
struct Counters {
    created: AtomicU64,
    paid: AtomicU64,
    paid_too_late: AtomicU64,
    closed: AtomicU64,
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<bool, Box<dyn core::error::Error>> {
    println!(
        "orders: {} orders, payment timeouts spread over {:?}, {}% paid; 1 ms tick",
        options.orders, options.spread, options.paid_percent
    );
    let (timer, expired) = Timer::<Order, _>::with_channel()?;
    let counters = Arc::new(Counters::default());

    // The closer: takes expired orders off the queue, closes them, and
    // records how late each was.
    let closer = {
        let counters = Arc::clone(&counters);
        thread::spawn(move || {
            let mut closes = Vec::new();
            let mut early = 0u64;
            for order in expired.iter() {
                let now = Instant::now();
                early += u64::from(now < order.deadline);
                closes.push(Close {
                    id: order.id,
                    deadline: order.deadline,
                    late: now.saturating_duration_since(order.deadline),
                });
                counters.closed.fetch_add(1, Ordering::Relaxed);
            }
            (closes, early)
        })
    };

    // Payments arrive through a second delay queue, at their moment.
    let (payments, due_payments) = Timer::<TimerHandle, _>::with_channel()?;
    let payer = {
        let (timer, counters) = (timer.clone(), Arc::clone(&counters));
        thread::spawn(move || {
            for handle in due_payments.iter() {
                match timer.cancel(handle) {
                    Some(_order) => counters.paid.fetch_add(1, Ordering::Relaxed),
                    None => counters.paid_too_late.fetch_add(1, Ordering::Relaxed),
                };
            }
        })
    };

    // The producers: create the orders, and schedule the payments.
    let start = Instant::now();
    let producers: Vec<_> = (0..2u32)
        .map(|producer| {
            let (timer, payments, counters) =
                (timer.clone(), payments.clone(), Arc::clone(&counters));
            let (orders, spread, paid) = (options.orders, options.spread, options.paid_percent);
            thread::spawn(move || -> Result<(), String> {
                let mut rng = Rng(0x0DE5 + u64::from(producer));
                for id in (producer..orders).step_by(2) {
                    let now = Instant::now();
                    let deadline = now + spread.mul_f64(rng.unit());
                    let handle = timer
                        .schedule_at(deadline, Order { id, deadline })
                        .map_err(|e| format!("order {id}: {e}"))?;
                    counters.created.fetch_add(1, Ordering::Relaxed);
                    if rng.next() % 100 < u64::from(paid) {
                        let pay_at = now + (deadline - now).mul_f64(rng.unit());
                        payments
                            .schedule_at(pay_at, handle)
                            .map_err(|e| format!("payment {id}: {e}"))?;
                    }
                }
                Ok(())
            })
        })
        .collect();
    for producer in producers {
        producer.join().expect("producer panicked")?;
    }
    let created_in = start.elapsed();
    let created = counters.created.load(Ordering::Relaxed);
    println!(
        "created {created} orders in {:.0} ms ({:.1} M orders/s)",
        created_in.as_secs_f64() * 1e3,
        created as f64 / created_in.as_secs_f64() / 1e6
    );

    // Progress, until every timeout has been paid or has fired.
    let mut last = Instant::now();
    while timer.pending() > 0 || payments.pending() > 0 {
        thread::sleep(Duration::from_millis(50));
        if last.elapsed() >= Duration::from_millis(500) {
            last = Instant::now();
            let stats = timer.stats();
            println!(
                "  t={:>5.1}s pending {:>8}  paid {:>8}  auto-closed {:>8}  driver lateness p99 <= {:?} (histogram bound)",
                start.elapsed().as_secs_f64(),
                stats.pending,
                counters.paid.load(Ordering::Relaxed),
                counters.closed.load(Ordering::Relaxed),
                stats.lateness.quantile(0.99),
            );
        }
    }
    drop(payments); // the payment queue closes once the payer has drained it
    payer.join().expect("payer panicked");
    let handed_back = timer.shutdown_graceful();
    let stats = timer.stats();
    drop(timer); // closes the queue: the closer finishes
    let (closes, early) = closer.join().expect("closer panicked");

    // Every order ended exactly one way.
    let paid = counters.paid.load(Ordering::Relaxed);
    let closed = counters.closed.load(Ordering::Relaxed);
    let accounted = paid + closed + handed_back.len() as u64;
    let mut seen = vec![false; options.orders as usize];
    let mut duplicates = 0;
    for close in &closes {
        duplicates += u64::from(core::mem::replace(&mut seen[close.id as usize], true));
    }

    let elapsed = start.elapsed();
    println!("\nsummary after {:.2} s", elapsed.as_secs_f64());
    println!("  orders created       {created}");
    println!("  paid in time         {paid}");
    println!(
        "  paid too late        {} (the timeout fired first: the order stays closed)",
        counters.paid_too_late.load(Ordering::Relaxed)
    );
    println!("  auto-closed          {closed}");
    println!("  handed back          {}", handed_back.len());
    println!(
        "  lost                 {}",
        created.saturating_sub(accounted)
    );
    println!("  closed twice         {duplicates}");
    println!("  closed early         {early}");
    println!(
        "  throughput           {:.1} M orders + {:.1} M payments scheduled/s from 2 threads",
        created as f64 / created_in.as_secs_f64() / 1e6,
        (paid + counters.paid_too_late.load(Ordering::Relaxed)) as f64
            / created_in.as_secs_f64()
            / 1e6
    );
    // Lateness: close time − requested deadline, on the closer thread (it
    // includes rounding up to the 1 ms tick and the channel hop). Orders
    // due while the producers were still saturating both cores are shown
    // apart from the rest.
    let burst_end = start + created_in;
    let (mut during, mut after): (Vec<_>, Vec<_>) = (Vec::new(), Vec::new());
    for close in &closes {
        if close.deadline <= burst_end {
            during.push(close.late);
        } else {
            after.push(close.late);
        }
    }
    for (label, mut lateness) in [
        ("due after creation", after),
        ("due during creation", during),
    ] {
        lateness.sort_unstable();
        if let Some(max) = lateness.last() {
            let at =
                |q: f64| lateness[((lateness.len() as f64 * q) as usize).min(lateness.len() - 1)];
            println!(
                "  lateness, {label:<19} p50 {:>9.3?}  p99 {:>9.3?}  max {:>9.3?}  ({} orders)",
                at(0.50),
                at(0.99),
                max,
                lateness.len()
            );
        }
    }
    println!("  driver wake-ups      {}", stats.wakeups);

    let ok = accounted == created && duplicates == 0 && early == 0 && stats.panicked == 0;
    println!(
        "\n{}",
        if ok {
            "OK: every order was paid, auto-closed or handed back, exactly once."
        } else {
            "FAILED: the counts do not add up."
        }
    );
    Ok(ok)
}
