//! [`Upserted`]: what an upsert of a job scheduler did.

/// What an upsert of a job scheduler did
/// ([`DurableTimer::upsert_schedule`](crate::persist::DurableTimer::upsert_schedule),
/// and the Redis queue's `Queue::upsert_schedule`).
///
/// ```
/// use tickwheel::schedule::Upserted;
/// assert_ne!(Upserted::Created, Upserted::Unchanged);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upserted {
    /// A new scheduler; its first run is scheduled.
    Created,
    /// The timetable or payload changed: the old runs still waiting are
    /// cancelled, the new timetable's first run scheduled.
    Updated,
    /// The same timetable and payload were there already: nothing changed.
    Unchanged,
}
