//! [`Interval::tick`]'s future.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Instant;

use super::interval::Interval;

/// [`Interval::tick`]'s future: dropped after a `Pending` poll and
/// before its tick, it ends the task's wait.
pub(super) struct NextTick<'a> {
    interval: &'a mut Interval,
    /// Its last poll was `Pending`.
    waiting: bool,
}

impl<'a> NextTick<'a> {
    pub(super) fn new(interval: &'a mut Interval) -> NextTick<'a> {
        NextTick {
            interval,
            waiting: false,
        }
    }
}

impl Future for NextTick<'_> {
    type Output = Option<Instant>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        let this = self.get_mut();
        let tick = this.interval.poll_tick(cx);
        this.waiting = tick.is_pending();
        tick
    }
}

impl Drop for NextTick<'_> {
    fn drop(&mut self) {
        if self.waiting {
            self.interval.end_wait();
        }
    }
}
