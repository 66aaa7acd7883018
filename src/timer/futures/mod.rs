//! The async layer over a [`Timer`](super::Timer) (feature `async`):
//! [`Sleep`], [`Timeout`] and [`Interval`], futures any executor can
//! poll. A sleep is a timer whose job is to wake a task; the protocol is
//! at the top of `sleep.rs`, what a sleep shares with its timer in
//! `filed.rs`, and the batched cancelling of dropped sleeps in
//! `dropped.rs`. An interval's schedule is at the top of
//! `interval_grid.rs`.

mod dropped;
mod filed;
mod interval;
mod interval_grid;
mod next_tick;
mod sleep;
mod timeout;

pub(super) use dropped::{drop_wakers, Dropped, DroppedWakers, DROP_BATCH};
pub use interval::Interval;
pub use sleep::Sleep;
pub use timeout::{Elapsed, Timeout};
