//! What [`DurableTimer::open`](super::DurableTimer::open) reports
//! ([`Recovery`]), and the handle of a durable job ([`DurableHandle`]).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use std::time::SystemTime;

use super::decode::Damage;
use super::outcome::Jobs;
use super::{Outcome, PendingJob};
use crate::timer::TimerHandle;

/// What [`DurableTimer::open`](super::DurableTimer::open) found and did.
///
/// ```
/// fn log(recovery: &tickwheel::persist::Recovery<u64>) {
///     println!(
///         "restored {} jobs, {} damaged stretches skipped",
///         recovery.outcomes.len(),
///         recovery.damage.len()
///     );
/// }
/// # let _ = log;
/// ```
///
/// Its `Debug` counts the dead letters rather than printing them, so
/// `open(..).unwrap()` needs no `T: Debug`.
#[non_exhaustive]
pub struct Recovery<T> {
    /// Per restored job: its id and what the misfire policy did with it.
    pub outcomes: Vec<(u64, Outcome)>,
    /// Missed jobs the policy dead-lettered, handed back (and written off
    /// in the journal).
    pub dead_letters: Vec<PendingJob<T>>,
    /// Stretches of the file that did not decode and were skipped.
    pub damage: Vec<Damage>,
    /// Jobs whose stored payload did not decode, as `(id, bytes)`; written
    /// off in the journal.
    pub undecodable: Vec<(u64, Vec<u8>)>,
    /// What was at the path: nothing, an empty file, or a journal.
    pub found: Found,
    /// Restored keyed jobs, as `(key, id)`
    /// ([`DurableTimer::schedule_keyed`](super::DurableTimer::schedule_keyed)):
    /// the keys that [`cancel_key`](super::DurableTimer::cancel_key) finds.
    pub keys: Vec<(String, u64)>,
    /// Restored job schedulers
    /// ([`DurableTimer::upsert_schedule`](super::DurableTimer::upsert_schedule)),
    /// as `(key, first run)`: the instant each runs first, after the
    /// timetable's [`Missed`](crate::schedule::Missed) policy has dealt
    /// with the instants missed while the journal was closed.
    pub schedules: Vec<(String, SystemTime)>,
}

impl<T> fmt::Debug for Recovery<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recovery")
            .field("outcomes", &self.outcomes)
            .field("dead_letters", &Jobs(self.dead_letters.len()))
            .field("damage", &self.damage)
            .field("undecodable", &Jobs(self.undecodable.len()))
            .field("found", &self.found)
            .field("keys", &self.keys)
            .field("schedules", &self.schedules)
            .finish()
    }
}

/// What [`DurableTimer::open`](super::DurableTimer::open) found at the
/// journal's path ([`Recovery::found`]). An empty file starts a new
/// journal like a missing one, but is told apart: a journal that should
/// hold jobs and is empty is worth a look.
///
/// ```
/// use tickwheel::persist::Found;
///
/// fn describe(found: Found) -> &'static str {
///     match found {
///         Found::Nothing => "a new journal",
///         Found::EmptyFile => "an empty file, taken as a new journal",
///         Found::Journal => "a journal, replayed",
///         _ => "something newer",
///     }
/// }
/// assert_eq!(describe(Found::Nothing), "a new journal");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Found {
    /// No file: a new journal was created.
    Nothing,
    /// An empty file, as a crash right after creating a journal leaves:
    /// taken as a new journal.
    EmptyFile,
    /// A journal, replayed.
    Journal,
}

/// A handle to a durable job: for [`DurableTimer::cancel`](super::DurableTimer::cancel) and
/// [`DurableTimer::reset`](super::DurableTimer::reset). `id` is the job's id in the journal, stable
/// across restarts.
///
/// ```
/// # fn f(h: tickwheel::persist::DurableHandle) -> u64 {
/// h.id()
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DurableHandle {
    pub(super) handle: TimerHandle,
    pub(super) id: u64,
}

impl DurableHandle {
    /// The job's id in the journal.
    ///
    /// ```
    /// # fn f(h: tickwheel::persist::DurableHandle) -> u64 { h.id() }
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }
}
