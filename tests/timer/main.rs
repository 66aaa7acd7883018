//! The std layer's tests: `Timer` and its handles, lifecycles and
//! priorities, periodic jobs, slack windows, and the async sleeps under
//! tokio and smol. One binary, so the suite builds and links once.

extern crate alloc;

mod async_promises;
mod futures_audit;
mod hand_offs;
mod interval;
mod late_driver;
mod periodic;
mod slack;
mod sleep;
mod sleep_runtimes;
mod stops_and_grids;
mod timer;
mod timer_audit;
mod timer_audit2;
mod timer_lifecycle;
mod timer_priority;
#[path = "../support/timers.rs"]
mod timers;
mod usage;
