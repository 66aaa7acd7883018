//! Async timers on a [`Timer`]'s driver (feature `async`): [`Sleep`],
//! [`Timeout`], for any executor. No runtime crate is involved: a sleep is
//! a timer whose job is to wake a task.
//!
//! # The wake protocol (no lost wake-up, no early wake-up)
//!
//! A sleep owns one [`Wake`]: a state word and a waker slot, allocated
//! once and reused across resets. The state word is `generation << 1 |
//! fired`. Each time the sleep files a timer it moves to a new generation,
//! and the timer carries it.
//!
//! - Driver: takes the timer out of its wheel (under the shard lock), then,
//!   outside every lock, sets `fired` only if the state is still that
//!   timer's generation, takes the waker and wakes it.
//! - `poll`: stores the task's waker in the slot, then reads the state:
//!   ready if it is fired at the sleep's generation.
//!
//! A fire that sets the flag before `poll` reads the state is seen; one
//! that comes after the waker is stored takes it and wakes the task. A
//! reset whose timer has already been taken out moves to a new generation
//! before filing again, so a fire of the old timer still in flight cannot
//! complete the sleep early. The waker slot is a per-sleep lock, never a
//! shard lock, and no waker method runs under it except `will_wake`.
//!
//! # When the timer stops
//!
//! A sleep whose timer is shut down (or whose last handle is dropped)
//! completes at once: stopping the timer fires every pending sleep, and a
//! sleep made after that is complete when made. So a task awaiting a sleep
//! or a [`Timeout`] never hangs on a timer that is gone; a timeout then
//! reports [`Elapsed`].

use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use super::executor::Executor;
use super::job::Job;
use super::shard::Shared;
use super::wake::Wake;
use super::{Timer, TimerHandle};
use crate::Tick;

/// What a sleep needs of its timer, whatever the timer's value and
/// executor types.
pub(super) trait Sleeps: Send + Sync {
    fn now(&self) -> Instant;
    /// The slack of `class`, in ticks.
    fn slack(&self, class: u16) -> Tick;
    fn tick_at(&self, deadline: Instant) -> Tick;
    fn instant_of(&self, tick: Tick) -> Instant;
    /// Files a timer that fires `wake` at `generation`; `None` if the
    /// timer has stopped.
    fn arm(
        &self,
        deadline: Tick,
        class: u16,
        wake: &Arc<Wake>,
        generation: u64,
    ) -> Option<TimerHandle>;
    /// Moves the pending timer `handle`; `false` if it is gone.
    fn rearm(&self, handle: TimerHandle, deadline: Tick) -> bool;
    /// Removes the pending timer `handle`, if it is still there.
    fn disarm(&self, handle: TimerHandle);
}

impl<T: Send + 'static, E: Executor<T>> Sleeps for Shared<T, E> {
    fn now(&self) -> Instant {
        self.time.now()
    }

    fn slack(&self, class: u16) -> Tick {
        self.classes.get(class).slack
    }

    fn tick_at(&self, deadline: Instant) -> Tick {
        self.time.tick_at(deadline)
    }

    fn instant_of(&self, tick: Tick) -> Instant {
        self.time.instant_of(tick)
    }

    fn arm(
        &self,
        deadline: Tick,
        class: u16,
        wake: &Arc<Wake>,
        generation: u64,
    ) -> Option<TimerHandle> {
        let job = Job::Wake(Arc::clone(wake), generation);
        self.insert_unreserved(deadline, class, job).ok()
    }

    fn rearm(&self, handle: TimerHandle, deadline: Tick) -> bool {
        self.reset_to(handle, deadline)
    }

    fn disarm(&self, handle: TimerHandle) {
        self.cancel_job(handle);
    }
}

/// A future that completes at a deadline: [`Timer::sleep`],
/// [`Timer::sleep_until`]. It works under any executor; the timer's
/// driver thread wakes its task.
///
/// One allocation per sleep, reused by [`reset`](Self::reset). Dropping a
/// pending sleep cancels its timer in O(1). A sleep carries the slack of
/// the handle that made it ([`Timer::with_slack`]).
///
/// **When the timer stops** ([`Timer::shutdown`], or its last handle
/// dropped), every pending sleep completes at once, and a sleep made
/// afterwards is complete when made: a task never hangs on a timer that
/// is gone, and a [`Timeout`] on it reports [`Elapsed`]. A sleep holds the
/// timer's shared state, not its driver, so it does not keep the timer
/// running. Sleeps do not count against
/// [`max_pending`](super::Builder::max_pending): they are futures their
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
    pub(super) timer: Arc<dyn Sleeps>,
    wake: Arc<Wake>,
    /// The pending timer, while there is one.
    handle: Option<TimerHandle>,
    generation: u64,
    pub(super) deadline: Tick,
    pub(super) class: u16,
}

impl Sleep {
    fn new(timer: Arc<dyn Sleeps>, deadline: Tick, class: u16) -> Self {
        let mut sleep = Sleep {
            timer,
            wake: Arc::new(Wake::default()),
            handle: None,
            generation: 0,
            deadline,
            class,
        };
        sleep.arm();
        sleep
    }

    /// Files a timer for the current deadline at a new generation.
    fn arm(&mut self) {
        self.generation = self.wake.next_generation();
        self.handle = self
            .timer
            .arm(self.deadline, self.class, &self.wake, self.generation);
        if self.handle.is_none() {
            // The timer has stopped: complete at once.
            self.wake.fire_now();
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

    /// `true` once the sleep has completed (or its timer stopped).
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
        self.wake.is_fired(self.generation)
    }

    /// Moves the sleep to complete at `deadline` instead, whether or not it
    /// has completed: O(1), and no allocation. A later deadline on a
    /// pending sleep is stored lazily (the timer's wheel moves it when its
    /// old slot comes due). Call [`poll`](Future::poll) (await it) again
    /// afterwards.
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
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = self.timer.tick_at(deadline);
        if let Some(handle) = self.handle {
            if self.timer.rearm(handle, self.deadline) {
                return;
            }
        }
        // Fired (or firing): file a new timer, at a new generation so that
        // a fire still in flight cannot complete it.
        self.arm();
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.wake.register(cx.waker()) && this.is_elapsed() {
            // Fired: the timer is gone from its wheel.
            this.handle = None;
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            if !self.is_elapsed() {
                self.timer.disarm(handle);
            }
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

/// A future that runs `F` until a deadline: [`Timer::timeout`]. It
/// completes with `Ok(output)` if `F` completes first, else with
/// `Err(Elapsed)` (and drops `F`).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::Elapsed;
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
/// let never = std::future::pending::<()>();
/// assert_eq!(block_on(timer.timeout(Duration::from_millis(1), never)), Err(Elapsed));
/// assert_eq!(block_on(timer.timeout(Duration::from_secs(5), async { 7 })), Ok(7));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    /// The deadline's sleep, to [`reset`](Sleep::reset) it: an idle
    /// timeout pushed back on activity.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let mut read = timer.timeout(Duration::from_secs(30), std::future::pending::<()>());
    /// read.sleep_mut().reset(Instant::now() + Duration::from_secs(60));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn sleep_mut(&mut self) -> &mut Sleep {
        &mut self.sleep
    }

    /// The future it runs, back, unfinished.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let read = timer.timeout(Duration::from_secs(30), std::future::ready(3));
    /// let ready = read.into_inner();
    /// # let _ = ready;
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `future`: `Timeout` never moves it
        // out while pinned (`into_inner` takes an unpinned `self`), has no
        // `Drop` of its own, and is `Unpin` only if `F` is; `sleep` is
        // `Unpin` and is not pinned.
        let (future, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.sleep)
        };
        if let Poll::Ready(output) = future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The error of a [`Timeout`] whose deadline came first.
///
/// ```
/// let err = tickwheel::timer::Elapsed;
/// assert_eq!(err.to_string(), "deadline has elapsed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl core::error::Error for Elapsed {}

impl<T: Send + 'static, E: Executor<T>> Timer<T, E> {
    /// A future that completes `duration` from now, with this handle's
    /// slack ([`with_slack`](Self::with_slack)). Feature `async`.
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

    /// Runs `future` for at most `duration`: `Ok(output)`, or
    /// `Err(Elapsed)` once the deadline passes first. Feature `async`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let read = timer.timeout(Duration::from_secs(30), std::future::pending::<Vec<u8>>());
    /// # drop(read);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn timeout<F: Future>(&self, duration: Duration, future: F) -> Timeout<F> {
        Timeout {
            future,
            sleep: self.sleep(duration),
        }
    }

    fn sleeps(&self) -> Arc<dyn Sleeps> {
        let shared: Arc<Shared<T, E>> = Arc::clone(&self.owner.shared);
        shared
    }
}
