//! Errors of the std layer. Each one that refuses a value hands it back.

use alloc::string::String;
use core::fmt;
use core::time::Duration;
use std::io;
use std::sync::Mutex;

/// Why [`Timer::schedule`](super::Timer::schedule) and friends refused a
/// value. The value always comes back: [`into_inner`](Self::into_inner).
///
/// It fits `?` in functions returning `anyhow::Result`, `Box<dyn Error +
/// Send + Sync>` and the like for any `Send` value, even one that is not
/// `Sync` (such as a boxed closure): the error never lends out `&T`, so it
/// is `Sync` regardless.
///
/// ```
/// use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
///
/// let err = ScheduleError::new(ScheduleErrorKind::Full, "job");
/// assert_eq!(err.to_string(), "timer is full");
/// assert_eq!(format!("{err:?}"), "ScheduleError(Full, ..)");
/// assert!(err.is_full());
/// assert_eq!(err.into_inner(), "job");
///
/// fn needs_send_sync<E: std::error::Error + Send + Sync + 'static>(_: E) {}
/// let task: tickwheel::timer::Task = Box::new(|| ());
/// needs_send_sync(ScheduleError::new(ScheduleErrorKind::Shutdown, task));
/// ```
pub struct ScheduleError<T> {
    kind: ScheduleErrorKind,
    /// Held in a mutex only to make the error `Sync` for any `Send` value;
    /// nothing ever locks it (the value leaves by `into_inner`).
    value: Mutex<T>,
}

/// The reason in a [`ScheduleError`].
///
/// ```
/// use tickwheel::timer::ScheduleErrorKind;
///
/// assert_eq!(ScheduleErrorKind::Shutdown.to_string(), "timer is shut down");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScheduleErrorKind {
    /// The timer already holds `max_pending` timers (or, without a limit,
    /// as many as a shard can address).
    Full,
    /// The timer has been shut down, or its last handle dropped.
    Shutdown,
    /// A repeating timer was given a zero period or delay: it would run in
    /// a busy loop.
    ZeroPeriod,
    /// A durable timer could not write the job to its journal
    /// ([`DurableTimer`](crate::persist::DurableTimer)).
    Journal,
    /// The value is too large for a journal record: its encoding is longer
    /// than [`MAX_PAYLOAD`](crate::persist::MAX_PAYLOAD) (less the key and
    /// two bytes, for a keyed job), or the key is longer than
    /// [`MAX_KEY`](crate::persist::MAX_KEY).
    TooLarge,
    /// The delay puts the due time past what the wall clock can represent
    /// (a durable timer stores due times as wall-clock time).
    OutOfRange,
    /// A pending job already has this key
    /// ([`DurableTimer::schedule_keyed`](crate::persist::DurableTimer::schedule_keyed)).
    KeyExists,
}

impl<T> ScheduleError<T> {
    /// An error of `kind` holding `value`, for executors and wrappers that
    /// report refusals the same way.
    ///
    /// ```
    /// # use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
    /// let err = ScheduleError::new(ScheduleErrorKind::ZeroPeriod, 5);
    /// assert_eq!(err.kind(), ScheduleErrorKind::ZeroPeriod);
    /// ```
    pub fn new(kind: ScheduleErrorKind, value: T) -> Self {
        ScheduleError {
            kind,
            value: Mutex::new(value),
        }
    }

    /// Why the value was refused.
    ///
    /// ```
    /// # use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
    /// let err = ScheduleError::new(ScheduleErrorKind::Full, ());
    /// assert_eq!(err.kind(), ScheduleErrorKind::Full);
    /// ```
    pub fn kind(&self) -> ScheduleErrorKind {
        self.kind
    }

    /// Takes back the value that was not scheduled.
    ///
    /// ```
    /// # use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
    /// assert_eq!(ScheduleError::new(ScheduleErrorKind::Shutdown, 7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        // Never locked, so never poisoned; take the value either way.
        self.value
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `true` if the timer was full.
    ///
    /// ```
    /// # use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
    /// assert!(ScheduleError::new(ScheduleErrorKind::Full, ()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.kind == ScheduleErrorKind::Full
    }

    /// `true` if the timer was shut down.
    ///
    /// ```
    /// # use tickwheel::timer::{ScheduleError, ScheduleErrorKind};
    /// assert!(ScheduleError::new(ScheduleErrorKind::Shutdown, ()).is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        self.kind == ScheduleErrorKind::Shutdown
    }

    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> ScheduleError<U> {
        let kind = self.kind;
        ScheduleError::new(kind, f(self.into_inner()))
    }
}

impl<T> fmt::Debug for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScheduleError({:?}, ..)", self.kind)
    }
}

impl<T> fmt::Display for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl<T> core::error::Error for ScheduleError<T> {}

impl fmt::Display for ScheduleErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleErrorKind::Full => "timer is full",
            ScheduleErrorKind::Shutdown => "timer is shut down",
            ScheduleErrorKind::ZeroPeriod => "period of a repeating timer must not be zero",
            ScheduleErrorKind::Journal => "journal could not be written",
            ScheduleErrorKind::TooLarge => "value is too large for a journal record",
            ScheduleErrorKind::OutOfRange => "delay overflows the wall clock",
            ScheduleErrorKind::KeyExists => "a pending job already has this key",
        })
    }
}

impl core::error::Error for ScheduleErrorKind {}

/// Why [`Builder::build`](super::Builder::build) failed.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::Timer;
///
/// let err = Timer::builder().tick(Duration::from_nanos(10)).build().unwrap_err();
/// assert_eq!(err.to_string(), "tick must be between 1µs and 3600s, got 10ns");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The tick is shorter than a microsecond or longer than an hour.
    Tick(Duration),
    /// The number of shards is 0 or more than 1024.
    Shards(usize),
    /// A thread (the driver or an executor's worker) could not be spawned.
    Spawn(io::Error),
    /// The driver thread's name ([`Builder::thread_name`](super::Builder::thread_name))
    /// holds a NUL byte, which no thread name can; the name is handed back.
    ThreadName(String),
    /// An [`on_undelivered`](super::Builder::on_undelivered) hook was set
    /// before an [`executor`](super::Builder::executor) that changed the
    /// value type, so it could not take the timer's values: set it after.
    UndeliveredHook,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Tick(tick) => write!(
                f,
                "tick must be between {:?} and {:?}, got {tick:?}",
                super::time::TimeSource::MIN_TICK,
                super::time::TimeSource::MAX_TICK
            ),
            BuildError::Shards(n) => write!(f, "shards must be between 1 and 1024, got {n}"),
            BuildError::Spawn(err) => write!(f, "could not spawn a timer thread: {err}"),
            BuildError::ThreadName(name) => {
                write!(f, "a thread name must not hold a NUL byte, got {name:?}")
            }
            BuildError::UndeliveredHook => f.write_str(
                "on_undelivered was set for another value type than the executor's: \
                 set it after executor()",
            ),
        }
    }
}

impl core::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            BuildError::Spawn(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for BuildError {
    fn from(err: io::Error) -> Self {
        BuildError::Spawn(err)
    }
}
