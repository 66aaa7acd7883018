//! What a wheel entry of the std layer holds: a one-shot value, or a
//! repeating timer's value factory and cadence, with the cadence's state
//! machine. Pure data under the shard lock: nothing here runs user code or
//! touches shared state.
//!
//! # A fixed-delay timer's states
//!
//! Transitions happen under the timer's shard lock (the run protocol that
//! drives them is in `periodic.rs`):
//!
//! | state | event | next state | wheel entry |
//! |-------|-------|------------|-------------|
//! | waiting at `d` | the driver takes the run at `d` (`Cadence::fire`) | running | parked at `PARKED` (never due) |
//! | waiting at `d` | `reset(d')` (`Cadence::reset`) | waiting at `d'` | moved to `d'` |
//! | running | `reset(d')` | running, next run at `d'` | stays parked |
//! | running | the run's guard drops at time `f` (`Cadence::finish_run`) | waiting at `d'` if a reset asked for it, else at `f + delay` | moved there |
//! | any | `cancel` | gone | removed |
//! | any | shutdown | gone | drained; a running one reported at `Cadence::next_run` |

use alloc::boxed::Box;
use alloc::sync::Arc as StdArc;

use super::TimerHandle;
use crate::Tick;

/// What a repeating timer does when runs were missed (the driver was busy
/// or the machine asleep and one or more deadlines passed before it could
/// run).
///
/// All three keep a fixed rate while nothing is missed: run `n` is due at
/// `first + n × period`, with no drift.
///
/// An `Interval`'s tick (feature `async`) counts as missed when it is
/// polled more than the timer's slack after it was due while the task was
/// not waiting for it (tokio uses a fixed 5 ms). After one, `Skip` goes on
/// at the first point of the grid after now, and `Delay` a period from now.
///
/// ```
/// use tickwheel::timer::MissedTicks;
///
/// assert_eq!(MissedTicks::default(), MissedTicks::Burst);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MissedTicks {
    /// Run every missed run, back to back, until caught up; the schedule
    /// stays `first + n × period`.
    #[default]
    Burst,
    /// Run once now, then continue `period` after this run: the schedule
    /// shifts later by the delay.
    Delay,
    /// Run once now, then skip to the next `first + n × period` still in the
    /// future: the schedule stays on its grid, missed runs are dropped.
    Skip,
}

/// A repeating timer's value factory, handed back by a refused
/// [`Timer::schedule_repeating`](super::Timer::schedule_repeating).
///
/// ```
/// use std::time::Duration;
/// use tickwheel::timer::{Factory, MissedTicks};
/// use tickwheel::Timer;
///
/// let (timer, _rx) = Timer::with_channel()?;
/// timer.shutdown();
/// let err = timer
///     .schedule_repeating(Duration::ZERO, Duration::from_secs(1), MissedTicks::Skip, || "ping")
///     .unwrap_err();
/// let make: Factory<&str> = err.into_inner(); // the factory comes back
/// assert_eq!(make(), "ping");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Factory<T> = Box<dyn Fn() -> T + Send + Sync>;

/// One timer's payload inside a wheel: what it does when it fires.
pub(super) enum Job<T> {
    Once(T),
    Repeat(Box<Repeat<T>>),
    /// A sleep's timer: wakes the sleep's task (`futures/sleep.rs`) instead of
    /// handing a value to the executor.
    #[cfg(feature = "async")]
    Wake(core::task::Waker),
}

/// Makes a run's value. Given the timer's handle when the run fires (a
/// fixed-delay run needs it to re-arm), `None` when the value is handed
/// back instead (cancel, shutdown, a refused schedule).
pub(super) type Make<T> = StdArc<dyn Fn(Option<TimerHandle>) -> T + Send + Sync>;

/// A repeating timer: how to make each run's value, and when the next run
/// is due.
pub(super) struct Repeat<T> {
    pub(super) make: Make<T>,
    pub(super) cadence: Cadence,
    /// Moves on with every reset: a run the driver took before it must
    /// not start after it (`hand_off.rs`).
    pub(super) epoch: u32,
}

/// Where a fixed-delay timer waits while its run is in progress: never due.
const PARKED: Tick = Tick::MAX;

#[derive(Debug, Clone, Copy)]
pub(super) enum Cadence {
    /// Run `runs` is due at `base + runs × period` (ticks), after `owed`
    /// runs made up at once: runs of a grid that started before this
    /// timer's tick 0 (a restored job, or `schedule_repeating_at` in the
    /// past), which the wheel's `u64` ticks cannot express.
    Rate {
        base: Tick,
        runs: u64,
        period: u64,
        missed: MissedTicks,
        owed: u64,
    },
    /// The next run is due `delay` after the previous one finished.
    Delay { delay_ticks: u64, run: DelayRun },
}

/// A fixed-delay timer's state (the table in the module docs).
#[derive(Debug, Clone, Copy)]
pub(super) enum DelayRun {
    Waiting,
    /// A run is in progress since tick `fired`; a reset meanwhile asked for
    /// the next run at `reset_to`.
    Running {
        fired: Tick,
        reset_to: Option<Tick>,
    },
}

impl Cadence {
    /// The driver takes the run due at `deadline`, at a time between ticks
    /// `now` (rounded down) and `now_up` (rounded up): when the next run
    /// is due (before coalescing). A run counts as missed only once its
    /// whole window has passed, so the `slack` of one run never makes the
    /// next one look missed.
    pub(super) fn fire(&mut self, deadline: Tick, now: Tick, now_up: Tick, slack: u64) -> Tick {
        let missed_before = now.saturating_sub(slack);
        match self {
            Cadence::Rate {
                owed: owed @ 1..,
                base,
                runs,
                period,
                missed,
            } => {
                *owed -= 1;
                if *owed > 0 {
                    return now;
                }
                // The last owed run: back on the grid, or (Delay) a period
                // after this run.
                if *missed == MissedTicks::Delay {
                    *base = now_up.saturating_add(*period);
                    *runs = 0;
                }
                base.saturating_add(runs.saturating_mul(*period))
            }
            Cadence::Rate {
                base,
                runs,
                period,
                missed,
                ..
            } => match missed {
                MissedTicks::Burst => {
                    *runs += 1;
                    base.saturating_add(runs.saturating_mul(*period))
                }
                MissedTicks::Skip => {
                    // The first run of the grid whose window has not
                    // passed, and never one that has already run.
                    let first_open =
                        (missed_before.saturating_sub(*base) / *period).saturating_add(1);
                    *runs = first_open.max(*runs + 1);
                    base.saturating_add(runs.saturating_mul(*period))
                }
                MissedTicks::Delay => {
                    // On time (within its window): stay on the grid. Late:
                    // restart it a period after this run (rounded up:
                    // never early).
                    let on_grid = base.saturating_add((*runs + 1).saturating_mul(*period));
                    if on_grid > missed_before {
                        *runs += 1;
                        on_grid
                    } else {
                        *base = now_up.saturating_add(*period);
                        *runs = 0;
                        *base
                    }
                }
            },
            Cadence::Delay { run, .. } => {
                let _ = deadline;
                *run = DelayRun::Running {
                    fired: now,
                    reset_to: None,
                };
                PARKED
            }
        }
    }

    /// A reset asks for the next run at `deadline`: where the entry goes
    /// now, or `None` if it stays parked until the run in progress ends.
    pub(super) fn reset(&mut self, deadline: Tick) -> Option<Tick> {
        match self {
            Cadence::Rate {
                base, runs, owed, ..
            } => {
                *base = deadline;
                *runs = 0;
                *owed = 0;
                Some(deadline)
            }
            Cadence::Delay {
                run: DelayRun::Running { reset_to, .. },
                ..
            } => {
                *reset_to = Some(deadline);
                None
            }
            Cadence::Delay { .. } => Some(deadline),
        }
    }

    /// A run taken at `deadline` (one of the runs owed at once: `owed`)
    /// was not handed over, since a stop came: the cadence goes back to
    /// before it, so a copy of the timer dates it from that run. Where the
    /// entry goes, if it moves.
    pub(super) fn give_back(&mut self, deadline: Tick, owed: bool) -> Option<Tick> {
        match self {
            Cadence::Rate { owed: left, .. } if owed => {
                *left = left.saturating_add(1);
                None
            }
            Cadence::Rate {
                base, runs, period, ..
            } => {
                // The earliest run given back restarts the grid there,
                // which is on the grid (or, for `Delay`, where it was).
                if deadline < base.saturating_add(runs.saturating_mul(*period)) {
                    *base = deadline;
                    *runs = 0;
                }
                Some(*base)
            }
            Cadence::Delay { run, .. } => {
                *run = DelayRun::Waiting;
                Some(deadline)
            }
        }
    }

    /// A run taken before a reset is skipped: a fixed-delay timer parked
    /// for it is filed again where the reset asked. Where the entry goes,
    /// if it moves (a fixed-rate timer's reset filed it already).
    pub(super) fn skip_run(&mut self) -> Option<Tick> {
        match self {
            Cadence::Delay {
                delay_ticks,
                run: run @ DelayRun::Running { .. },
            } => {
                let DelayRun::Running { fired, reset_to } = *run else {
                    return None;
                };
                *run = DelayRun::Waiting;
                Some(reset_to.unwrap_or(fired.saturating_add(*delay_ticks)))
            }
            _ => None,
        }
    }

    /// A fixed-delay run ended; `after_delay` is `delay` after its end.
    /// Where the entry goes, or `None` if no run was in progress (the
    /// guard is not this timer's).
    pub(super) fn finish_run(&mut self, after_delay: Tick) -> Option<Tick> {
        match self {
            Cadence::Delay { run, .. } => match *run {
                DelayRun::Running { reset_to, .. } => {
                    *run = DelayRun::Waiting;
                    Some(reset_to.unwrap_or(after_delay))
                }
                DelayRun::Waiting => None,
            },
            Cadence::Rate { .. } => None,
        }
    }

    /// A fixed-rate timer's period (ticks) and policy; `None` for fixed
    /// delay.
    pub(super) fn rate(&self) -> Option<(u64, MissedTicks)> {
        match *self {
            Cadence::Rate { period, missed, .. } => Some((period, missed)),
            Cadence::Delay { .. } => None,
        }
    }

    /// Runs owed at once (see `Rate`): the grid point after them, how many
    /// and the period in ticks. A copy of the timer dates the job from the
    /// first of them, so that it keeps them and its grid.
    pub(super) fn owed(&self) -> Option<(Tick, u64, u64)> {
        match *self {
            Cadence::Rate {
                base,
                runs,
                period,
                owed: owed @ 1..,
                ..
            } => Some((
                base.saturating_add(runs.saturating_mul(period)),
                owed,
                period,
            )),
            _ => None,
        }
    }

    /// When the next run is due, given the entry's place in the wheel
    /// (for a running fixed-delay timer: the earliest it can be).
    pub(super) fn next_run(&self, wheel_deadline: Tick) -> Tick {
        match *self {
            Cadence::Delay {
                delay_ticks,
                run: DelayRun::Running { fired, reset_to },
            } => reset_to.unwrap_or(fired.saturating_add(delay_ticks)),
            _ => wheel_deadline,
        }
    }
}

impl<T> Job<T> {
    pub(super) fn into_once(self) -> T {
        match self {
            Job::Once(value) => value,
            _ => unreachable!("a one-shot schedule made another job"),
        }
    }

    pub(super) fn into_factory(self) -> Factory<T>
    where
        T: 'static,
    {
        match self {
            Job::Repeat(repeat) => {
                let make = repeat.make;
                Box::new(move || make(None))
            }
            _ => unreachable!("a repeating schedule made another job"),
        }
    }
}

/// A timer taken out unfired (shutdown, or copied out for a snapshot): its
/// next deadline, its fixed-rate period and policy if it repeats at a
/// fixed rate, and its value (for a repeating timer, one from its factory).
pub(crate) struct Unfired<T> {
    pub(crate) deadline: std::time::Instant,
    pub(crate) every: Option<(core::time::Duration, MissedTicks)>,
    pub(crate) value: T,
}

impl<T> Unfired<T> {
    /// As reported to the undelivered hook, which has no timer to name.
    pub(super) fn into_expired(self) -> super::Expired<T> {
        super::Expired {
            key: super::owner::DROPPED,
            deadline: self.deadline,
            value: self.value,
        }
    }
}
