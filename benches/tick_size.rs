//! What a finer tick costs the core: the same 10⁶ timers counted in 1 ms
//! ticks and in 1 µs ticks, for issue 14 (precise timers), which must
//! choose between a finer tick and a sub-tick offset.
//!
//! ```text
//! cargo bench --bench tick_size
//! ```
//!
//! - **Timers**: 10⁶ deadlines uniform in (0, 65.536 s], from a fixed
//!   seed, in µs. The ms wheel gets each deadline rounded up to the
//!   millisecond (as `Timer` rounds today); the µs wheel gets it exactly.
//! - **Insert**: all of them into `Wheel::with_capacity(10⁶)`.
//! - **Expire**: the way a tickless driver does it, event by event:
//!   `advance(next_expiration())` until the wheel is empty. Each call is
//!   one "advance", which a driver would pay as one wake-up unless it
//!   coalesces. A µs deadline 65 s out starts four levels up (2²⁶ µs)
//!   where a ms one starts two up, so it cascades more.
//! - **Rounds**: the two wheels take turns, [`ROUNDS`] rounds each; every
//!   round is printed.
//!
//! Without `--bench` (as `cargo test --benches` runs it), a smoke test at
//! 10⁴ timers that checks every timer fires once, never early.

use std::time::Instant;

use tickwheel::Wheel;

#[allow(
    dead_code,
    reason = "this bench needs only the machine line and the load average"
)]
#[path = "workloads/machine.rs"]
mod machine;

#[path = "peers/rng.rs"]
mod rng;

use rng::Rng;

const ROUNDS: usize = 3;

/// `n` deadlines in µs, uniform in `1..=65_536_000`, from a fixed seed.
fn deadlines_us(n: usize) -> Vec<u64> {
    let mut rng = Rng::new(0x5EED_7105);
    (0..n).map(|_| 1 + rng.below(65_536_000)).collect()
}

/// One run: ns per timer to insert, ns per timer to expire, advances.
fn run(deadlines: &[u64], us_per_tick: u64) -> (f64, f64, u64) {
    let n = deadlines.len();
    let mut wheel = Wheel::with_capacity(n);
    let start = Instant::now();
    for (value, &us) in deadlines.iter().enumerate() {
        wheel.insert(us.div_ceil(us_per_tick), value);
    }
    let insert = start.elapsed();
    let start = Instant::now();
    let (mut fired, mut advances) = (0, 0);
    while let Some(next) = wheel.next_expiration() {
        advances += 1;
        for expired in wheel.advance(next) {
            assert!(
                expired.deadline <= next,
                "timer {} fired early",
                expired.value
            );
            fired += 1;
        }
    }
    let expire = start.elapsed();
    assert_eq!(fired, n, "every timer fires once");
    let per = |time: core::time::Duration| time.as_nanos() as f64 / n as f64;
    (per(insert), per(expire), advances)
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let n = if full { 1_000_000 } else { 10_000 };
    println!("machine: {}", machine::machine_line());
    println!("load average at start: {}", machine::load_average());
    let deadlines = deadlines_us(n);
    println!("\n{n} timers due over 65.536 s; insert and expire in ns per timer\n");
    println!("| round | tick | insert | expire | advances |");
    println!("|---:|---|---:|---:|---:|");
    for round in 1..=if full { ROUNDS } else { 1 } {
        let order: [(&str, u64); 2] = if round % 2 == 1 {
            [("1 ms", 1_000), ("1 µs", 1)]
        } else {
            [("1 µs", 1), ("1 ms", 1_000)]
        };
        for (name, us_per_tick) in order {
            let (insert, expire, advances) = run(&deadlines, us_per_tick);
            println!("| {round} | {name} | {insert:.1} | {expire:.1} | {advances} |");
        }
    }
    println!("\nload average at end: {}", machine::load_average());
}
