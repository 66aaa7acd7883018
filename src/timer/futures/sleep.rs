//! Async timers on a [`Timer`]'s driver (feature `async`): [`Sleep`],
//! [`Timeout`](super::Timeout), for any executor. No runtime crate is involved: a sleep is
//! a timer whose job is to wake a task.
//!
//! # The protocol (no lost wake-up, no early completion)
//!
//! A sleep is filed on its first poll, as a timer whose job is the task's
//! waker, in the wheel of its slack class in the polling thread's shard.
//! A poll that finds the deadline already past (a sleep created so, reset
//! into the past, or not fired yet by a late driver) completes at once and
//! removes the entry, so `is_elapsed`, which says the same, never turns
//! from true back to false without a reset. It reached its deadline: it
//! counts as fired in the stats, as if the driver had woken it, not as
//! cancelled.
//! It shares no memory with the driver but that wheel entry, and every
//! access to the entry is under the shard's lock:
//!
//! - Driver: takes the due entry out of its wheel (under the lock), then,
//!   outside every lock, wakes its waker.
//! - `poll`: under the lock, finds the entry still filed (pending: it
//!   replaces the waker if the task's is another), or gone (fired).
//!
//! A fire and a poll are thus ordered by the lock: a poll before the fire
//! leaves its waker for the fire to wake; one after it sees the entry gone.
//! Waker clones and drops, the runtime's code, run outside the lock.
//!
//! **Reset.** A later deadline is stored in the sleep alone, with no lock:
//! the entry stays filed at its old deadline. When that fires, the task is
//! woken once early, and its poll files the entry again at the new
//! deadline (the sleep knows its deadline is past the entry's). An idle
//! timeout pushed back on every packet thus costs a store per packet and
//! one extra wake-up per timeout period, not a lock per packet. An earlier
//! deadline moves the entry at once, under the lock, as the task may not
//! poll again before it. A completed sleep that is reset is filed again on
//! its next poll.
//!
//! A sleep owns no allocation: its entry lives in the wheel's slab.
//!
//! # When the timer stops
//!
//! A sleep whose timer is shut down (or whose last handle is dropped)
//! completes at once: stopping the timer wakes every filed sleep, and a
//! poll that finds the timer stopped completes. So a task awaiting a sleep
//! or a [`Timeout`](super::Timeout) never hangs on a timer that is gone; a timeout then
//! reports [`Elapsed`](super::Elapsed).

use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::time::Instant;

use super::filed::Sleeps;
use crate::timer::executor::Executor;
use crate::timer::{Timer, TimerHandle};
use crate::Tick;

/// A future that completes at a deadline: [`Timer::sleep`],
/// [`Timer::sleep_until`]. It works under any executor; the timer's
/// driver thread wakes its task.
///
/// A sleep is filed with its timer on its first poll, and owns no
/// allocation: its timer lives in the wheel's slab. Dropping a pending
/// sleep cancels its timer in O(1). A sleep carries the slack of the handle
/// that made it ([`Timer::with_slack`]).
///
/// **When the timer stops** ([`Timer::shutdown`], or its last handle
/// dropped), every pending sleep completes at once, and a sleep made
/// afterwards is complete when made: a task never hangs on a timer that
/// is gone, and a [`Timeout`](super::Timeout) on it reports [`Elapsed`](super::Elapsed). A sleep holds the
/// timer's shared state, not its driver nor its executor, so it does not
/// keep the timer running. Sleeps do not count against
/// [`max_pending`](crate::timer::Builder::max_pending): they are futures their
/// callers hold.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     use std::task::{Context, Poll, Wake, Waker};
/// #     struct Unpark(std::thread::Thread);
/// #     impl Wake for Unpark { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) { return v; }
/// #         std::thread::park();
/// #     }
/// # }
/// let timer = Timer::new()?;
/// let started = std::time::Instant::now();
/// block_on(timer.sleep(Duration::from_millis(2)));
/// assert!(started.elapsed() >= Duration::from_millis(2));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct Sleep {
    pub(in crate::timer) timer: Arc<dyn Sleeps>,
    /// The filed timer and its deadline (at most the sleep's), while it
    /// may be pending.
    filed: Option<(TimerHandle, Tick)>,
    pub(in crate::timer) deadline: Tick,
    pub(in crate::timer) class: u16,
    /// Completed at `deadline` (or its timer stopped).
    done: bool,
}

impl Sleep {
    fn new(timer: Arc<dyn Sleeps>, deadline: Tick, class: u16) -> Self {
        Sleep {
            timer,
            filed: None,
            deadline,
            class,
            done: false,
        }
    }

    /// When the sleep completes (rounded up to the timer's tick).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let sleep = timer.sleep_until(at);
    /// assert!(sleep.deadline() >= at);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn deadline(&self) -> Instant {
        self.timer.instant_of(self.deadline)
    }

    /// `true` once the sleep has completed: its deadline has passed and
    /// its timer fired it (or, not yet filed, the deadline has passed), or
    /// its timer stopped.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let sleep = timer.sleep(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn is_elapsed(&self) -> bool {
        if self.done || self.timer.is_stopped() {
            return true;
        }
        match self.filed {
            // Fired at its deadline.
            Some((handle, at)) if at >= self.deadline && !self.timer.is_filed(handle) => true,
            // Otherwise: has the deadline passed? (A poll now completes.)
            _ => self.overdue(),
        }
    }

    /// Moves the sleep to complete at `deadline` instead, whether or not it
    /// has completed: O(1), and no allocation. A later deadline is stored
    /// in the sleep alone, without a lock: its timer still fires at the old
    /// deadline, wakes the task once, and is filed again when the sleep is
    /// polled. An earlier one moves the timer at once. Poll the sleep
    /// (await it) again afterwards.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut idle = timer.sleep(Duration::from_secs(30));
    /// idle.reset(Instant::now() + Duration::from_secs(30)); // a packet arrived
    /// assert!(!idle.is_elapsed());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    #[inline]
    pub fn reset(&mut self, deadline: Instant) {
        self.reset_tick(self.timer.tick_at(deadline));
    }

    /// [`reset`](Self::reset) to a tick of the timer.
    #[inline]
    pub(in crate::timer) fn reset_tick(&mut self, deadline: Tick) {
        self.deadline = deadline;
        self.done = false;
        if let Some((handle, at)) = self.filed {
            if self.deadline < at {
                self.move_earlier(handle);
            }
        }
    }

    /// Moves the filed timer to the (earlier) deadline, or forgets it if it
    /// has fired: the next poll files it again.
    fn move_earlier(&mut self, handle: TimerHandle) {
        self.filed = self
            .timer
            .rearm(handle, self.deadline)
            .then_some((handle, self.deadline));
    }

    /// Whether the deadline has come (never early). At its very instant
    /// too: rounding now up to a tick once said no there, so a sleep, or
    /// an interval's next point, due exactly now waited for the driver.
    fn overdue(&self) -> bool {
        self.timer.instant_of(self.deadline) <= self.timer.now()
    }

    /// Files the sleep's timer; `Ready` if the timer has stopped.
    fn file(&mut self, waker: &Waker) -> Poll<()> {
        match self.timer.file(self.deadline, self.class, waker.clone()) {
            Some(handle) => {
                self.filed = Some((handle, self.deadline));
                Poll::Pending
            }
            None => self.complete(),
        }
    }

    fn complete(&mut self) -> Poll<()> {
        self.filed = None;
        self.done = true;
        Poll::Ready(())
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(());
        }
        // Already past (created so, reset into the past, or the driver not
        // round yet): complete now, as `is_elapsed` already says, rather
        // than after a round trip through the driver.
        if this.overdue() {
            if let Some((handle, _)) = this.filed.take() {
                this.timer.finish(handle, this.deadline);
            }
            return this.complete();
        }
        // Stopped: the stop's drain, which takes the entry and wakes it,
        // comes only once the driver has exited. Complete now, as
        // `is_elapsed` already says; the drain still takes the entry.
        if this.timer.is_stopped() {
            return this.complete();
        }
        match this.filed {
            None => this.file(cx.waker()),
            Some((handle, _)) if this.timer.refresh(handle, cx.waker()) => Poll::Pending,
            // Fired at a deadline a reset has since pushed back: file again.
            Some((_, at)) if at < this.deadline => this.file(cx.waker()),
            Some(_) => this.complete(),
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some((handle, at)) = self.filed.take() {
            self.timer.disarm(handle, at);
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("elapsed", &self.is_elapsed())
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A future that completes `duration` from now, with this handle's
    /// slack ([`with_slack`](Self::with_slack)). Feature `async`.
    ///
    /// Keep a handle to the timer while its sleeps are pending: dropping
    /// the last handle stops the timer, and every sleep then completes at
    /// once. Hold the `Timer` for as long as its futures are used (in the
    /// struct that owns them, in an `Arc`, or for the program's life).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let nap = timer.with_slack(Duration::ZERO).sleep(Duration::from_millis(1));
    /// # drop(nap);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        let shared = &self.owner.shared;
        let deadline = shared.time.deadline_after(duration);
        Sleep::new(self.sleeps(), deadline, self.class)
    }

    /// A future that completes at `deadline`, an instant of this timer's
    /// clock. Feature `async`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let at_noon = timer.sleep_until(Instant::now() + Duration::from_secs(3_600));
    /// # drop(at_noon);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let deadline = self.owner.shared.time.tick_at(deadline);
        Sleep::new(self.sleeps(), deadline, self.class)
    }
}
