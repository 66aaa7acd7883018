//! A guided tour of the `Wheel` core: insert, cancel, reset and expiry, with
//! the wheel's own view printed at each step.
//!
//! ```text
//! cargo run --release --example wheel_tour
//! ```
//!
//! Ticks are milliseconds here, but the wheel does not care: it has no clock.

use tickwheel::{Tick, TimerKey, Wheel};

#[derive(Debug)]
enum Job {
    IdleTimeout { connection: u32 },
    CloseUnpaidOrder { order: u32 },
    ConfirmDelivery { order: u32 },
    Heartbeat { peer: &'static str },
}

impl Job {
    fn describe(&self) -> String {
        match self {
            Job::IdleTimeout { connection } => format!("close idle connection {connection}"),
            Job::CloseUnpaidOrder { order } => format!("close unpaid order {order}"),
            Job::ConfirmDelivery { order } => format!("auto-confirm delivery of order {order}"),
            Job::Heartbeat { peer } => format!("heartbeat to {peer}"),
        }
    }
}

fn main() {
    let mut wheel: Wheel<Job> = Wheel::new();
    println!("tickwheel tour: one wheel, {:?}\n", wheel.geometry());

    // --- insert ----------------------------------------------------------
    let idle: Vec<TimerKey> = (0..3)
        .map(|connection| wheel.insert(30_000, Job::IdleTimeout { connection }))
        .collect();
    let unpaid = wheel.insert(15 * 60_000, Job::CloseUnpaidOrder { order: 1017 });
    let paid = wheel.insert(15 * 60_000, Job::CloseUnpaidOrder { order: 1018 });
    wheel.insert(1_000, Job::Heartbeat { peer: "db-1" });
    wheel.insert(7 * 24 * 3_600_000, Job::ConfirmDelivery { order: 990 });
    show(
        &wheel,
        "inserted 3 idle timeouts, 2 order timeouts, a heartbeat, a 7-day job",
    );
    println!("  (960, not 1000: the heartbeat sits in a 64-tick level-1 slot; at 960 it");
    println!("   cascades to level 0, and the next answer is exactly 1000)\n");

    // --- cancel ----------------------------------------------------------
    let returned = wheel.cancel(paid).map(|job| job.describe());
    println!("order 1018 was paid: cancel -> {returned:?}");
    println!(
        "cancel again (stale key) -> {:?}",
        wheel.cancel(paid).map(|j| j.describe())
    );
    show(&wheel, "after the cancel");

    // --- expiry, and reset on activity -----------------------------------
    let mut now: Tick = 0;
    for _ in 0..5 {
        now += 10_000;
        // `poll` rather than `advance`: the handler re-arms the heartbeat,
        // which needs the wheel.
        let mut heartbeats = 0;
        while let Some(expired) = wheel.poll(now) {
            match expired.value {
                Job::Heartbeat { peer } => {
                    // Periodic work re-arms from its own deadline: no drift.
                    // A deadline already past is due at once, so a slow
                    // caller catches up run by run.
                    heartbeats += 1;
                    wheel.insert(expired.deadline + 1_000, Job::Heartbeat { peer });
                }
                job => println!(
                    "  t={now:>7} fired: {} (deadline {}, {} ms late)",
                    job.describe(),
                    expired.deadline,
                    now - expired.deadline
                ),
            }
        }
        println!("  t={now:>7} {heartbeats} heartbeats ran");
        // Connection 0 sees a packet every 10 s: its idle timeout never fires.
        assert!(wheel.reset(idle[0], now + 30_000));
        println!(
            "t={now:>7} packet on connection 0: idle timeout reset to {}",
            now + 30_000
        );
    }
    show(&wheel, "after 50 s");

    // --- how long may a tickless driver sleep? ---------------------------
    if let Some(next) = wheel.next_expiration() {
        println!(
            "next_expiration: {next} (sleep {} ms)",
            next.saturating_sub(now)
        );
    }

    // --- a jump far ahead costs only the timers it touches -----------------
    now = 16 * 60_000;
    let burst: Vec<String> = wheel
        .advance(now)
        .filter(|e| !matches!(e.value, Job::Heartbeat { .. }))
        .map(|e| format!("{} @{}", e.value.describe(), e.deadline))
        .collect();
    println!(
        "\njumped to t={now}: {} non-heartbeat timers fired: {burst:?}",
        burst.len()
    );
    println!("order 1017 still pending? {}", wheel.contains(unpaid));

    // --- shutdown: hand back whatever is left ----------------------------
    let left: Vec<_> = wheel
        .drain()
        .map(|(at, job)| format!("{} @{at}", job.describe()))
        .collect();
    println!(
        "\nshutdown hands back {} pending timer(s): {left:?}",
        left.len()
    );
    assert!(wheel.is_empty());
}

fn show(wheel: &Wheel<Job>, what: &str) {
    println!(
        "[{what}] now={} pending={} next_expiration={:?}",
        wheel.now(),
        wheel.len(),
        wheel.next_expiration()
    );
}
