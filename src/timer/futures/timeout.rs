//! [`Timeout`]: a future run until a deadline, on a [`Sleep`] (feature
//! `async`).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::time::Instant;

use super::sleep::Sleep;
use crate::timer::executor::Executor;
use crate::timer::Timer;

/// A future that runs `F` until a deadline: [`Timer::timeout`]. It
/// completes with `Ok(output)` if `F` completes first, else with
/// `Err(Elapsed)`, and then drops `F` at once, with whatever it holds (a
/// lock guard, a connection); polled again, it says `Err(Elapsed)` again.
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
    /// `None` once the deadline came first: dropped then, with whatever
    /// it held (a lock guard, a connection).
    future: Option<F>,
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

    /// The future it runs, back, unfinished; `None` once the deadline
    /// came first (the future was dropped then).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let read = timer.timeout(Duration::from_secs(30), std::future::ready(3));
    /// let ready = read.into_inner();
    /// assert!(ready.is_some());
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn into_inner(self) -> Option<F> {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning of `future`: `Timeout` never moves it
        // out while pinned (`into_inner` takes an unpinned `self`; the only
        // change in place is `Pin::set(None)`, which drops it where it
        // is), has no `Drop` of its own, and is `Unpin` only if `F` is;
        // `sleep` is `Unpin` and is not pinned.
        let (mut future, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.sleep)
        };
        let Some(running) = future.as_mut().as_pin_mut() else {
            // Polled again after the deadline: the future is gone.
            return Poll::Ready(Err(Elapsed));
        };
        if let Poll::Ready(output) = running.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match Pin::new(sleep).poll(cx) {
            Poll::Ready(()) => {
                // Dropped in place, as pinning allows.
                future.set(None);
                Poll::Ready(Err(Elapsed))
            }
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
            future: Some(future),
            sleep: self.sleep(duration),
        }
    }

    /// Runs `future` until `deadline`, an instant of this timer's clock:
    /// `Ok(output)`, or `Err(Elapsed)` once the deadline passes first.
    /// Feature `async`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = tickwheel::Timer::new()?;
    /// let by_noon = timer.timeout_at(Instant::now() + Duration::from_secs(5), std::future::ready(1));
    /// # drop(by_noon);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn timeout_at<F: Future>(&self, deadline: Instant, future: F) -> Timeout<F> {
        Timeout {
            future: Some(future),
            sleep: self.sleep_until(deadline),
        }
    }
}
