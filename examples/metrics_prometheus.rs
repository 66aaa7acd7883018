//! The `metrics` feature with a Prometheus exporter: installs the
//! recorder first, runs a `Timer` (order timeouts, some cancelled) and a
//! `DurableTimer` (a journal in a temporary directory), then prints the
//! exposition text a scrape would get. No HTTP server: an exporter's
//! listener would serve the same text. Ends by itself in about a second,
//! and exits non-zero if a count it knows is missing from the text.
//!
//! ```text
//! cargo run --example metrics_prometheus --features metrics
//! ```

extern crate alloc;

use alloc::sync::Arc;
use core::error::Error;
use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;
use std::time::Instant;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tickwheel::persist::{DurableTimer, MisfirePolicy, SyncPolicy};
use tickwheel::Timer;

fn main() -> Result<(), Box<dyn Error>> {
    // Before any timer: each registers its metrics with the recorder in
    // force when it is built. Lateness as a histogram with buckets from
    // 50 µs to 1 s (the exporter's default is a summary).
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Suffix("_lateness_seconds".into()),
            &[
                0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.05, 0.25, 1.0,
            ],
        )?
        .install_recorder()?;

    // 50 order timeouts over 50 ms; 10 orders are paid in time.
    let timer = Timer::builder().thread_name("order-timeouts").build()?;
    let closed = Arc::new(AtomicU64::new(0));
    let mut orders = Vec::new();
    for order in 0..50u64 {
        let closed = Arc::clone(&closed);
        let close = move || {
            closed.fetch_add(1, Ordering::Relaxed);
        };
        orders.push(timer.run_after(Duration::from_millis(order + 1), close)?);
    }
    for paid in orders.iter().step_by(5) {
        timer.cancel(*paid);
    }
    wait_for(|| closed.load(Ordering::Relaxed) == 40)?;

    // Durable reminders in a journal: 5 scheduled, 1 cancelled, 4 run.
    let dir = std::env::temp_dir().join(format!("tickwheel-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let journal = dir.join("reminders.journal");
    let sent = Arc::new(AtomicU64::new(0));
    let (reminders, _) =
        DurableTimer::open(&journal, SyncPolicy::Always, &MisfirePolicy::default(), {
            let sent = Arc::clone(&sent);
            move |_customer: u64| {
                sent.fetch_add(1, Ordering::Relaxed);
            }
        })?;
    let mut handles = Vec::new();
    for customer in 0..5u64 {
        handles.push(reminders.schedule(Duration::from_millis(5 * (customer + 1)), customer)?);
    }
    reminders.cancel(handles[4]);
    wait_for(|| sent.load(Ordering::Relaxed) == 4)?;
    drop(reminders);
    std::fs::remove_dir_all(&dir)?;

    prometheus.run_upkeep();
    let text = prometheus.render();
    println!("{text}");

    // What this run must show (labels: the timer's thread name, the
    // journal's path).
    let journal = journal.display();
    for line in [
        "tickwheel_timer_scheduled_total{timer=\"order-timeouts\"} 50".to_string(),
        "tickwheel_timer_cancelled_total{timer=\"order-timeouts\"} 10".to_string(),
        "tickwheel_timer_fired_total{timer=\"order-timeouts\"} 40".to_string(),
        "tickwheel_timer_lateness_seconds_count{timer=\"order-timeouts\"} 40".to_string(),
        format!("tickwheel_journal_scheduled_total{{journal=\"{journal}\"}} 5"),
        format!("tickwheel_journal_cancelled_total{{journal=\"{journal}\"}} 1"),
        format!("tickwheel_journal_fired_total{{journal=\"{journal}\"}} 4"),
        format!("tickwheel_journal_lateness_seconds_count{{journal=\"{journal}\"}} 4"),
    ] {
        if !text.lines().any(|l| l == line) {
            return Err(format!("missing from the exposition: {line}").into());
        }
    }
    Ok(())
}

/// Waits up to 10 s for `done`.
fn wait_for(done: impl Fn() -> bool) -> Result<(), Box<dyn Error>> {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > give_up {
            return Err("timed out".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}
