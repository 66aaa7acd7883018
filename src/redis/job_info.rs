//! [`JobInfo`] and [`JobState`]: one job as its record says, for tools
//! ([`Queue::job`](super::Queue::job)).

use alloc::string::String;
use alloc::vec::Vec;
use std::time::SystemTime;

/// Where a job is in its life, as its record says.
///
/// ```
/// use tickwheel::redis::JobState;
///
/// assert!(JobState::Cancelled.is_ended());
/// assert!(!JobState::Dead.is_ended());
/// assert_eq!(JobState::InFlight.to_string(), "in flight");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JobState {
    /// Waiting to fall due (or due, and not yet claimed).
    Waiting,
    /// Delivered to a consumer, not yet acked.
    InFlight,
    /// Dead-lettered: out of attempts.
    Dead,
    /// Ended: acked.
    Acked,
    /// Ended: cancelled (or purged from the dead letters).
    Cancelled,
    /// Ended: discarded by the misfire policy.
    Discarded,
}

impl JobState {
    /// Whether the job has ended (acked, cancelled or discarded): its
    /// record is kept only for the retention.
    ///
    /// ```
    /// assert!(tickwheel::redis::JobState::Acked.is_ended());
    /// ```
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            JobState::Acked | JobState::Cancelled | JobState::Discarded
        )
    }

    /// The state byte of a record (`scripts/common.lua`).
    pub(super) fn of_byte(state: u8) -> Option<JobState> {
        Some(match state {
            b'w' => JobState::Waiting,
            b'l' => JobState::InFlight,
            b'x' => JobState::Dead,
            b'a' => JobState::Acked,
            b'c' => JobState::Cancelled,
            b'g' => JobState::Discarded,
            _ => return None,
        })
    }
}

impl core::fmt::Display for JobState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            JobState::Waiting => "waiting",
            JobState::InFlight => "in flight",
            JobState::Dead => "dead",
            JobState::Acked => "acked",
            JobState::Cancelled => "cancelled",
            JobState::Discarded => "discarded",
        })
    }
}

/// One job, from [`Queue::job`](super::Queue::job).
///
/// ```
/// fn show(job: &tickwheel::redis::JobInfo) -> String {
///     format!("{} is {}, due {:?}, {} deliveries", job.id, job.state, job.due, job.attempts)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobInfo {
    /// The job's id.
    pub id: String,
    /// Where it is in its life.
    pub state: JobState,
    /// When it is (or was) due (server clock).
    pub due: SystemTime,
    /// Deliveries since it was scheduled or requeued.
    pub attempts: u32,
    /// Deliveries it ever had (its fencing token; requeues keep it).
    pub fence: u64,
    /// Its place in its set: the due time while it waits, the lease's end
    /// while in flight, when it was dead-lettered once dead; `None` once it
    /// ended.
    pub at: Option<SystemTime>,
    /// Its payload; empty once it ended (an ended job keeps no payload).
    pub payload: Vec<u8>,
}
