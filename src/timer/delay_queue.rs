//! [`DelayQueue`]: a timer whose fired values go down a channel, made by
//! `Timer::with_channel` or [`delay_queue`].

use super::error::BuildError;
use super::Timer;

impl<T: Send + 'static> Timer<T, crossbeam_channel::Sender<T>> {
    /// A delay queue: values come out of the returned [`Receiver`] once
    /// their deadline has passed (the JDK `DelayQueue` / Redisson
    /// `RDelayedQueue` use), each within [`DEFAULT_SLACK`](super::DEFAULT_SLACK) of it, in the
    /// order they fire: deadline order, except that values due less than
    /// the slack apart may swap (the slack lets the driver serve them with
    /// one wake-up). A wake-up that finds values of several shards due
    /// (several threads scheduled them; the driver was late) merges them
    /// in deadline order. Build with `.slack(Duration::ZERO)` and
    /// [`Builder::executor`](super::Builder::executor) with a channel for strict deadline order. The
    /// value type is inferred from what you schedule or receive.
    ///
    /// The sender is the timer's executor, so the receiver disconnects,
    /// and a `for value in ready` loop ends, when the last handle to the
    /// queue is dropped. [`shutdown`](Timer::shutdown) stops the driver
    /// and hands back what had not fired, but the handles still hold the
    /// sender: drop them too.
    ///
    /// # Errors
    ///
    /// [`BuildError::Spawn`] if the driver thread cannot be spawned.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (queue, ready) = tickwheel::Timer::with_channel()?;
    /// queue.schedule(Duration::from_millis(20), "second")?;
    /// queue.schedule(Duration::from_millis(10), "first")?;
    /// assert_eq!(ready.recv()?, "first");
    /// assert_eq!(ready.recv()?, "second");
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// [`Receiver`]: super::Receiver
    pub fn with_channel() -> Result<(DelayQueue<T>, super::Receiver<T>), BuildError> {
        let (sender, receiver) = crossbeam_channel::unbounded();
        let timer = Timer::builder().executor(sender).build()?;
        Ok((timer, receiver))
    }
}

/// [`Timer::with_channel`] with the value type named up front, for when
/// nothing later in the code fixes it: `delay_queue::<Order>()` (the type
/// parameter belongs to this function, so it takes a turbofish, which
/// `Timer::with_channel` cannot).
///
/// # Errors
///
/// [`BuildError::Spawn`] if the driver thread cannot be spawned.
///
/// ```
/// let (queue, ready) = tickwheel::timer::delay_queue::<u64>()?;
/// assert!(ready.is_empty());
/// # drop(queue);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub fn delay_queue<T: Send + 'static>() -> Result<(DelayQueue<T>, super::Receiver<T>), BuildError> {
    Timer::with_channel()
}

/// A timer whose fired values go down a channel: what
/// [`Timer::with_channel`] and [`delay_queue`] make.
///
/// ```
/// use tickwheel::timer::DelayQueue;
///
/// struct Orders {
///     timeouts: DelayQueue<u64>,
/// }
/// # let _ = |o: Orders| o.timeouts;
/// ```
pub type DelayQueue<T> = Timer<T, crossbeam_channel::Sender<T>>;
